"""The knowledge-graph domain model, compatible with the Signet memory store.

A :class:`KnowledgeGraph` holds one table per Signet table it models, as pandas frames whose column names
are Signet's (``entities``, ``entity_aspects``, ``entity_attributes``, ``entity_dependencies``,
``memories``, ``memory_entity_mentions``, ``memories_cold``) plus signet_rl's own additions
(dependency ``confidence`` and ``reason``; ``communities`` and ``community_members``). Tables are columnar
so that a 43k-entity graph is cheap to build, store and turn into arrays (:mod:`signet_rl.graph.arrays`);
typed records (:class:`Entity`, :class:`Attribute`, ...) are the way to read or build a few rows by hand.

    >>> g = KnowledgeGraph.from_records(
    ...     entities=[Entity(id="e1", name="signet"), Entity(id="e2", name="sqlite", entity_type="tool")],
    ...     dependencies=[Dependency(id="d1", source_entity_id="e1", target_entity_id="e2",
    ...                              dependency_type="uses")],
    ... )
    >>> g.num_entities, g.dependency(\"d1\").reason
    (2, 'single-memory')

Every frame is normalised to its declared dtypes when the graph is built, and :meth:`KnowledgeGraph.validate`
checks references, enums and ranges with errors that name the table, the row id and the bad value.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from signet_rl.graph.confidence import DEFAULT_REASON, LADDER

__all__ = [
    "TABLES",
    "Aspect",
    "Attribute",
    "AttributeKind",
    "AttributeStatus",
    "ColdMemory",
    "Column",
    "Community",
    "CommunityMember",
    "Dependency",
    "DependencyType",
    "Entity",
    "EntityType",
    "GraphValidationError",
    "KnowledgeGraph",
    "Memory",
    "Mention",
    "to_timestamp",
]


class EntityType:
    """Signet's entity types as named constants. ``entity_type`` itself is an open string."""

    PERSON = "person"
    PROJECT = "project"
    SYSTEM = "system"
    TOOL = "tool"
    CONCEPT = "concept"
    SKILL = "skill"
    TASK = "task"
    UNKNOWN = "unknown"
    EXTRACTED = "extracted"  # seen in real stores
    PRINCIPLE = "principle"  # signet_rl's addition

    SIGNET: ClassVar[tuple[str, ...]] = (
        "person",
        "project",
        "system",
        "tool",
        "concept",
        "skill",
        "task",
        "unknown",
    )


class DependencyType:
    """Signet's dependency types. ``dependency_type`` is open: KG relations load as types too."""

    USES = "uses"
    REQUIRES = "requires"
    OWNED_BY = "owned_by"
    BLOCKS = "blocks"
    INFORMS = "informs"

    SIGNET: ClassVar[tuple[str, ...]] = ("uses", "requires", "owned_by", "blocks", "informs")


class AttributeKind(StrEnum):
    ATTRIBUTE = "attribute"
    CONSTRAINT = "constraint"


class AttributeStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DELETED = "deleted"


class GraphValidationError(ValueError):
    """A graph table holds a value it must not: the message names table, row and value."""


# ----------------------------------------------------------------------------------------------------
# Table schemas

ColumnKind = Literal["str", "str?", "float", "float?", "int", "bool", "time", "time?"]


@dataclass(frozen=True)
class Column:
    """One column of a table: its Signet name, its kind (``?`` = nullable) and its default."""

    name: str
    kind: ColumnKind
    default: Any = None

    @property
    def nullable(self) -> bool:
        return self.kind.endswith("?")


EPOCH = pd.Timestamp("1970-01-01", tz="UTC")

#: Table name -> columns, in Signet's names. The first column is the primary key (``memory_entity_mentions``
#: and ``community_members`` are keyed by their first two).
TABLES: dict[str, tuple[Column, ...]] = {
    "memories": (
        Column("id", "str"),
        Column("type", "str", "fact"),
        Column("content", "str"),
        Column("importance", "float", 0.5),
        Column("who", "str?"),
        Column("project", "str?"),
        Column("source_id", "str?"),
        Column("source_type", "str?"),
        Column("tags", "str?"),
        Column("created_at", "time", EPOCH),
        Column("updated_at", "time?"),
        Column("last_accessed", "time?"),
        Column("access_count", "int", 0),
        Column("pinned", "bool", False),
        Column("is_deleted", "bool", False),
        Column("deleted_at", "time?"),
    ),
    "entities": (
        Column("id", "str"),
        Column("name", "str"),
        Column("entity_type", "str", EntityType.UNKNOWN),
        Column("description", "str?"),
        Column("canonical_name", "str?"),
        Column("mentions", "int", 0),
        Column("pinned", "bool", False),
        Column("created_at", "time", EPOCH),
        Column("updated_at", "time?"),
    ),
    "entity_aspects": (
        Column("id", "str"),
        Column("entity_id", "str"),
        Column("name", "str"),
        Column("canonical_name", "str?"),
        Column("weight", "float", 0.5),
        Column("created_at", "time", EPOCH),
        Column("updated_at", "time?"),
    ),
    "entity_attributes": (
        Column("id", "str"),
        Column("aspect_id", "str?"),
        Column("memory_id", "str?"),
        Column("kind", "str", AttributeKind.ATTRIBUTE.value),
        Column("content", "str"),
        Column("normalized_content", "str?"),
        Column("confidence", "float", 0.0),
        Column("importance", "float", 0.5),
        Column("status", "str", AttributeStatus.ACTIVE.value),
        Column("superseded_by", "str?"),
        Column("created_at", "time", EPOCH),
        Column("updated_at", "time?"),
    ),
    "entity_dependencies": (
        Column("id", "str"),
        Column("source_entity_id", "str"),
        Column("target_entity_id", "str"),
        Column("aspect_id", "str?"),
        Column("dependency_type", "str"),
        Column("strength", "float", 0.5),
        Column("confidence", "float", DEFAULT_REASON.prior),
        Column("reason", "str", DEFAULT_REASON.value),
        Column("created_at", "time", EPOCH),
        Column("updated_at", "time?"),
    ),
    "memory_entity_mentions": (
        Column("memory_id", "str"),
        Column("entity_id", "str"),
        Column("mention_text", "str?"),
        Column("confidence", "float?"),
        Column("created_at", "time?"),
    ),
    "memories_cold": (
        Column("archive_id", "str"),
        Column("memory_id", "str"),
        Column("type", "str", "fact"),
        Column("content", "str"),
        Column("importance", "float", 0.5),
        Column("original_created_at", "time", EPOCH),
        Column("archived_at", "time", EPOCH),
        Column("archived_reason", "str?"),
        Column("original_row_json", "str?"),
    ),
    "communities": (
        Column("id", "str"),
        Column("label", "str?"),
        Column("cohesion", "float?"),
        Column("size", "int", 0),
        Column("level", "int", 0),
    ),
    "community_members": (
        Column("community_id", "str"),
        Column("entity_id", "str"),
    ),
}

_KEYS: dict[str, tuple[str, ...]] = {
    name: (
        ("memory_id", "entity_id")
        if name == "memory_entity_mentions"
        else ("community_id", "entity_id")
        if name == "community_members"
        else (cols[0].name,)
    )
    for name, cols in TABLES.items()
}

#: Short attribute names on :class:`KnowledgeGraph` for each table.
_ATTR: dict[str, str] = {
    "memories": "memories",
    "entities": "entities",
    "entity_aspects": "aspects",
    "entity_attributes": "attributes",
    "entity_dependencies": "dependencies",
    "memory_entity_mentions": "mentions",
    "memories_cold": "memories_cold",
    "communities": "communities",
    "community_members": "community_members",
}


def to_timestamp(values: Any) -> pd.Series:
    """Parse timestamps in any of the formats Signet writes (ISO-8601 with or without ``Z``, or SQLite's
    ``datetime('now')``), to UTC at millisecond precision."""
    s = pd.Series(values) if not isinstance(values, pd.Series) else values
    if pd.api.types.is_datetime64_any_dtype(s):
        out = s.dt.tz_localize("UTC") if s.dt.tz is None else s.dt.tz_convert("UTC")
    elif len(s) and pd.api.types.is_numeric_dtype(s):
        out = pd.to_datetime(s, unit="s", utc=True)
    else:
        out = pd.to_datetime(s, utc=True, format="mixed")
    return out.dt.floor("ms").astype("datetime64[ms, UTC]")


def _normalise_column(table: str, col: Column, values: pd.Series) -> pd.Series:
    kind = col.kind.rstrip("?")
    try:
        if kind == "str":
            out = values.astype(object).where(values.notna(), None)
            if not col.nullable and out.isna().any():
                bad = out.index[out.isna()][0]
                raise GraphValidationError(f"{table}: column {col.name!r} is empty in row {bad}")
            if pd.api.types.infer_dtype(out, skipna=True) in ("string", "empty"):
                return out
            # Built as an object array: pandas 3's .map would infer a str dtype and turn None into NaN.
            cells = [v if v is None or isinstance(v, str) else str(v) for v in out.tolist()]
            return pd.Series(np.asarray(cells, dtype=object), index=values.index, dtype=object)
        if kind == "float":
            return pd.to_numeric(values, errors="raise").astype(np.float64)
        if kind == "int":
            return pd.to_numeric(values, errors="raise").fillna(0).astype(np.int64)
        if kind == "bool":
            return values.fillna(False).astype(bool)
        if kind == "time":
            out = to_timestamp(values.reset_index(drop=True))
            out.index = values.index
            return out
    except GraphValidationError:
        raise
    except (ValueError, TypeError) as exc:
        raise GraphValidationError(f"{table}: column {col.name!r} holds a bad value: {exc}") from exc
    raise AssertionError(kind)


def _normalise(table: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    """Give ``frame`` exactly the table's columns, in order, with their dtypes and defaults."""
    cols = TABLES[table]
    n = 0 if frame is None else len(frame)
    frame = pd.DataFrame(index=pd.RangeIndex(n)) if frame is None else frame.reset_index(drop=True)
    unknown = set(frame.columns) - {c.name for c in cols}
    if unknown:
        raise GraphValidationError(f"{table}: unknown columns {sorted(unknown)}")
    out = {}
    for col in cols:
        if col.name in frame.columns:
            values = frame[col.name]
            # An empty cell takes the column default, except in numeric columns: a NaN confidence or
            # weight is bad input that validate() must report, not a value to paper over.
            if col.default is not None and col.kind not in ("float", "int") and n:
                values = values.where(values.notna(), col.default)
        elif col.default is not None or col.nullable or n == 0:
            values = pd.Series([col.default] * n, dtype=object)
        else:
            raise GraphValidationError(f"{table}: required column {col.name!r} is missing")
        out[col.name] = _normalise_column(table, col, values)
    return pd.DataFrame(out, index=pd.RangeIndex(n))


# ----------------------------------------------------------------------------------------------------
# Records


def _now() -> pd.Timestamp:
    return EPOCH


@dataclass(frozen=True)
class Memory:
    """A raw text unit (Signet ``memories``)."""

    TABLE: ClassVar[str] = "memories"
    id: str
    content: str
    type: str = "fact"
    importance: float = 0.5
    who: str | None = None
    project: str | None = None
    source_id: str | None = None
    source_type: str | None = None
    tags: str | None = None
    created_at: pd.Timestamp = field(default_factory=_now)
    updated_at: pd.Timestamp | None = None
    last_accessed: pd.Timestamp | None = None
    access_count: int = 0
    pinned: bool = False
    is_deleted: bool = False
    deleted_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Entity:
    """A thing the memories are about (Signet ``entities``); ``entity_type`` is an open string."""

    TABLE: ClassVar[str] = "entities"
    id: str
    name: str
    entity_type: str = EntityType.UNKNOWN
    description: str | None = None
    canonical_name: str | None = None
    mentions: int = 0
    pinned: bool = False
    created_at: pd.Timestamp = field(default_factory=_now)
    updated_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Aspect:
    """A facet of one entity (Signet ``entity_aspects``), ``weight`` in [0, 1]."""

    TABLE: ClassVar[str] = "entity_aspects"
    id: str
    entity_id: str
    name: str
    canonical_name: str | None = None
    weight: float = 0.5
    created_at: pd.Timestamp = field(default_factory=_now)
    updated_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Attribute:
    """A fact under an aspect (Signet ``entity_attributes``). ``aspect_id`` may be None (unclassified)."""

    TABLE: ClassVar[str] = "entity_attributes"
    id: str
    content: str
    aspect_id: str | None = None
    memory_id: str | None = None
    kind: str = AttributeKind.ATTRIBUTE.value
    normalized_content: str | None = None
    confidence: float = 0.0
    importance: float = 0.5
    status: str = AttributeStatus.ACTIVE.value
    superseded_by: str | None = None
    created_at: pd.Timestamp = field(default_factory=_now)
    updated_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Dependency:
    """A typed edge between entities (Signet ``entity_dependencies`` plus ``confidence`` and ``reason``)."""

    TABLE: ClassVar[str] = "entity_dependencies"
    id: str
    source_entity_id: str
    target_entity_id: str
    dependency_type: str
    aspect_id: str | None = None
    strength: float = 0.5
    confidence: float = DEFAULT_REASON.prior
    reason: str = DEFAULT_REASON.value
    created_at: pd.Timestamp = field(default_factory=_now)
    updated_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Mention:
    """A memory mentions an entity (Signet ``memory_entity_mentions``)."""

    TABLE: ClassVar[str] = "memory_entity_mentions"
    memory_id: str
    entity_id: str
    mention_text: str | None = None
    confidence: float | None = None
    created_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class ColdMemory:
    """A memory archived to the lossless cold tier (Signet ``memories_cold``)."""

    TABLE: ClassVar[str] = "memories_cold"
    archive_id: str
    memory_id: str
    content: str
    type: str = "fact"
    importance: float = 0.5
    original_created_at: pd.Timestamp = field(default_factory=_now)
    archived_at: pd.Timestamp = field(default_factory=_now)
    archived_reason: str | None = None
    original_row_json: str | None = None


@dataclass(frozen=True)
class Community:
    """A Leiden community (signet_rl's ``communities`` table; communities are never entities)."""

    TABLE: ClassVar[str] = "communities"
    id: str
    label: str | None = None
    cohesion: float | None = None
    size: int = 0
    level: int = 0


@dataclass(frozen=True)
class CommunityMember:
    """An entity's membership of a community (signet_rl's ``community_members`` table)."""

    TABLE: ClassVar[str] = "community_members"
    community_id: str
    entity_id: str


_RECORD_TYPES: dict[str, type] = {
    cls.TABLE: cls
    for cls in (
        Memory,
        Entity,
        Aspect,
        Attribute,
        Dependency,
        Mention,
        ColdMemory,
        Community,
        CommunityMember,
    )
}


def _records_to_frame(table: str, records: Iterable[Any]) -> pd.DataFrame:
    rows = [dataclasses.asdict(r) for r in records]
    return pd.DataFrame(rows, columns=[c.name for c in TABLES[table]])


def _cell(value: Any, col: Column) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    kind = col.kind.rstrip("?")
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    return value


# ----------------------------------------------------------------------------------------------------
# The graph


class KnowledgeGraph:
    """An agent-memory knowledge graph: Signet's tables as normalised pandas frames.

    Build one with :meth:`from_frames` (columnar; loaders and generators) or :meth:`from_records`
    (typed records; tests and hand-built graphs). Frames are treated as immutable once built: derive a
    new graph with :meth:`replace` instead of editing one in place.

    Attributes:
        memories, entities, aspects, attributes, dependencies, mentions, memories_cold, communities,
        community_members: one frame per table (see :data:`TABLES` for columns).
        meta: free-form provenance (dataset name, generator config hash, modularity, ...), JSON-able.
    """

    memories: pd.DataFrame
    entities: pd.DataFrame
    aspects: pd.DataFrame
    attributes: pd.DataFrame
    dependencies: pd.DataFrame
    mentions: pd.DataFrame
    memories_cold: pd.DataFrame
    communities: pd.DataFrame
    community_members: pd.DataFrame

    def __init__(
        self,
        tables: Mapping[str, pd.DataFrame | None] | None = None,
        meta: Mapping[str, Any] | None = None,
        validate: bool = True,
    ) -> None:
        tables = dict(tables or {})
        unknown = set(tables) - set(TABLES)
        if unknown:
            raise GraphValidationError(f"unknown tables {sorted(unknown)}; known: {sorted(TABLES)}")
        for name in TABLES:
            setattr(self, _ATTR[name], _normalise(name, tables.get(name)))
        self.meta: dict[str, Any] = dict(meta or {})
        self._index: dict[str, pd.Index] = {}
        if validate:
            self.validate()

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def from_frames(
        cls, *, meta: Mapping[str, Any] | None = None, validate: bool = True, **frames: pd.DataFrame | None
    ) -> KnowledgeGraph:
        """Build from frames keyed by short name (``entities=``, ``aspects=``, ``attributes=``, ...) or by
        Signet table name. Missing optional columns take their defaults."""
        by_attr = {v: k for k, v in _ATTR.items()}
        tables = {by_attr.get(k, k): v for k, v in frames.items()}
        return cls(tables, meta=meta, validate=validate)

    @classmethod
    def from_records(
        cls, *, meta: Mapping[str, Any] | None = None, validate: bool = True, **records: Iterable[Any]
    ) -> KnowledgeGraph:
        """Build from typed records keyed by short table name, e.g. ``entities=[Entity(...)]``."""
        by_attr = {v: k for k, v in _ATTR.items()}
        frames = {}
        for key, recs in records.items():
            table = by_attr.get(key, key)
            if table not in TABLES:
                raise GraphValidationError(f"unknown table {key!r}")
            frames[table] = _records_to_frame(table, recs)
        return cls(frames, meta=meta, validate=validate)

    def replace(self, **frames: pd.DataFrame) -> KnowledgeGraph:
        """A new graph with some tables replaced (short or Signet names); the rest are shared."""
        tables = {name: getattr(self, _ATTR[name]) for name in TABLES}
        by_attr = {v: k for k, v in _ATTR.items()}
        tables.update({by_attr.get(k, k): v for k, v in frames.items()})
        return KnowledgeGraph(tables, meta=self.meta)

    # -- access -------------------------------------------------------------------------------------

    def table(self, name: str) -> pd.DataFrame:
        """A table by Signet name (``entity_attributes``) or short name (``attributes``)."""
        if name in _ATTR:
            return getattr(self, _ATTR[name])
        if name in _ATTR.values():
            return getattr(self, name)
        raise KeyError(f"unknown table {name!r}; known: {sorted(TABLES)}")

    def tables(self) -> dict[str, pd.DataFrame]:
        """All tables by Signet name."""
        return {name: getattr(self, _ATTR[name]) for name in TABLES}

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_memories(self) -> int:
        return len(self.memories)

    def _row(self, table: str, key: str) -> Any:
        if table not in self._index:
            self._index[table] = pd.Index(self.table(table)[TABLES[table][0].name])
        idx = self._index[table]
        try:
            pos = idx.get_loc(key)
        except KeyError:
            raise KeyError(f"{table}: no row with id {key!r}") from None
        frame = self.table(table)
        row = frame.iloc[pos]
        cls = _RECORD_TYPES[table]
        return cls(**{c.name: _cell(row[c.name], c) for c in TABLES[table]})

    def memory(self, id: str) -> Memory:
        return self._row("memories", id)

    def entity(self, id: str) -> Entity:
        return self._row("entities", id)

    def aspect(self, id: str) -> Aspect:
        return self._row("entity_aspects", id)

    def attribute(self, id: str) -> Attribute:
        return self._row("entity_attributes", id)

    def dependency(self, id: str) -> Dependency:
        return self._row("entity_dependencies", id)

    def records(self, table: str) -> Iterator[Any]:
        """Iterate a table as typed records (slow for big tables: for inspection, not hot paths)."""
        name = table if table in TABLES else {v: k for k, v in _ATTR.items()}[table]
        cls = _RECORD_TYPES[name]
        cols = TABLES[name]
        for row in self.table(name).itertuples(index=False):
            yield cls(**{c.name: _cell(v, c) for c, v in zip(cols, row, strict=True)})

    def attribute_entity_ids(self) -> pd.Series:
        """The entity each attribute belongs to (through its aspect), None for unclassified ones."""
        owner = self.aspects.set_index("id")["entity_id"]
        return (
            self.attributes["aspect_id"]
            .map(owner)
            .astype(object)
            .where(self.attributes["aspect_id"].notna(), None)
        )

    # -- checks -------------------------------------------------------------------------------------

    def validate(self) -> None:
        """Check keys, references, enums and ranges.

        Raises:
            GraphValidationError: naming the table, the row id and the bad value.
        """
        for table, keys in _KEYS.items():
            frame = self.table(table)
            dup = frame.duplicated(list(keys))
            if dup.any():
                row = frame.loc[dup.idxmax(), list(keys)].tolist()
                raise GraphValidationError(f"{table}: duplicate key {row}")
        ids = {
            t: set(self.table(t)["id"])
            for t in ("memories", "entities", "entity_aspects", "entity_attributes", "communities")
        }
        self._check_refs("entity_aspects", "entity_id", ids["entities"], "entities")
        self._check_refs("entity_attributes", "aspect_id", ids["entity_aspects"], "entity_aspects")
        self._check_refs("entity_attributes", "memory_id", ids["memories"], "memories")
        self._check_refs("entity_attributes", "superseded_by", ids["entity_attributes"], "entity_attributes")
        self._check_refs("entity_dependencies", "source_entity_id", ids["entities"], "entities")
        self._check_refs("entity_dependencies", "target_entity_id", ids["entities"], "entities")
        self._check_refs("entity_dependencies", "aspect_id", ids["entity_aspects"], "entity_aspects")
        self._check_refs("memory_entity_mentions", "memory_id", ids["memories"], "memories")
        self._check_refs("memory_entity_mentions", "entity_id", ids["entities"], "entities")
        self._check_refs("community_members", "community_id", ids["communities"], "communities")
        self._check_refs("community_members", "entity_id", ids["entities"], "entities")
        self._check_enum("entity_attributes", "kind", {k.value for k in AttributeKind})
        self._check_enum("entity_attributes", "status", {s.value for s in AttributeStatus})
        self._check_enum("entity_dependencies", "reason", {r.value for r in LADDER})
        for table, column in (
            ("entity_dependencies", "confidence"),
            ("entity_dependencies", "strength"),
            ("entity_aspects", "weight"),
            ("entity_attributes", "importance"),
            ("entity_attributes", "confidence"),
            ("memories", "importance"),
        ):
            self._check_unit(table, column)

    def _key_of(self, table: str, pos: int) -> str:
        frame = self.table(table)
        return "/".join(str(frame[k].iat[pos]) for k in _KEYS[table])

    def _check_refs(self, table: str, column: str, valid: set[str], target: str) -> None:
        values = self.table(table)[column]
        present = values.notna()
        bad = present & ~values.isin(valid)
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise GraphValidationError(
                f"{table} row {self._key_of(table, pos)!r}: {column} {values.iat[pos]!r} does not exist "
                f"in {target} ({int(bad.sum())} such rows)"
            )

    def _check_enum(self, table: str, column: str, allowed: set[str]) -> None:
        values = self.table(table)[column]
        bad = ~values.isin(allowed)
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise GraphValidationError(
                f"{table} row {self._key_of(table, pos)!r}: unknown {column} {values.iat[pos]!r}; "
                f"expected one of: {', '.join(sorted(allowed))}"
            )

    def _check_unit(self, table: str, column: str) -> None:
        values = self.table(table)[column].to_numpy(dtype=np.float64)
        bad = np.isnan(values) | (values < 0.0) | (values > 1.0)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise GraphValidationError(
                f"{table} row {self._key_of(table, pos)!r}: {column} {float(values[pos])!r} is not a number "
                f"in [0, 1]"
            )

    # -- comparison ---------------------------------------------------------------------------------

    def diff(self, other: KnowledgeGraph) -> list[str]:
        """Human-readable differences between two graphs, table by table (empty when equal).
        Row order does not matter; rows are compared by key."""
        out = []
        for table, keys in _KEYS.items():
            a = self.table(table).sort_values(list(keys)).reset_index(drop=True)
            b = other.table(table).sort_values(list(keys)).reset_index(drop=True)
            if len(a) != len(b):
                out.append(f"{table}: {len(a)} rows != {len(b)} rows")
                continue
            try:
                pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-6)
            except AssertionError as exc:
                out.append(f"{table}: {str(exc).splitlines()[0]} {' '.join(str(exc).split())[:300]}")
        return out

    def equals(self, other: object) -> bool:
        return isinstance(other, KnowledgeGraph) and not self.diff(other)

    def __eq__(self, other: object) -> bool:
        return self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = ", ".join(f"{_ATTR[t]}={len(self.table(t))}" for t in TABLES if len(self.table(t)))
        return f"KnowledgeGraph({parts})"
