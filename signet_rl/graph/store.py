"""The SQLite store: a :class:`~signet_rl.graph.model.KnowledgeGraph` in Signet's own tables.

A store file holds Signet's tables with Signet's column names, types, defaults and NOT NULLs
(``memories``, ``entities``, ``entity_aspects``, ``entity_attributes``, ``entity_dependencies``,
``memory_entity_mentions``, ``memories_cold``, and the FTS5 index ``memories_fts`` kept up to date by
Signet's three triggers), so Signet's own queries (``bm25(memories_fts)``, ...) run on it unchanged.
signet_rl's additions are :data:`MIGRATIONS` applied on top and recorded in ``signet_rl_migrations``;
they add tables and columns, never rename Signet's. :func:`apply_migrations` upgrades a copy of a real
Signet store in place the same way.

    >>> from signet_rl.graph.model import Entity, KnowledgeGraph
    >>> g = KnowledgeGraph.from_records(entities=[Entity(id="e1", name="signet")])
    >>> read_graph(write_graph(g, tmp / "g.db")) == g  # doctest: +SKIP
    True

Writing is all or nothing (a temp file beside the target, one transaction, then :func:`os.replace`);
reading opens the file read-only and never changes it, nor creates a ``-wal`` or ``-journal`` beside it.
Timestamps are written as Signet's JavaScript writes them (``2024-05-01T12:00:00.000Z``); reading also
accepts SQLite's ``datetime('now')`` format. Booleans are 0/1.

Columns that are optional in the model but NOT NULL in Signet (``updated_at``, an aspect's
``canonical_name``, an attribute's ``normalized_content``) are written with the value Signet would have
put there (``created_at``; the lower-cased name or content) and the ids of the rows that had none are
listed in ``signet_rl_nulls``, so a round trip gives ``None`` back exactly.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.graph.confidence import LADDER
from signet_rl.graph.model import (
    TABLES,
    GraphValidationError,
    KnowledgeGraph,
    to_timestamp,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SIGNET_TABLES",
    "Migration",
    "StoreError",
    "apply_migrations",
    "check_timeout",
    "open_read_only",
    "read_connection",
    "read_graph",
    "store_versions",
    "write_graph",
]


class StoreError(ValueError):
    """A store cannot be read or written: the message names the file, the table and the row or value."""


# --------------------------------------------------------------------------------------------------
# Signet's schema (v30), for the tables signet_rl models, copied from Signet's migrations: column
# order, types, defaults and NOT NULLs are Signet's.

SIGNET_TABLES: dict[str, str] = {
    "memories": """
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            type TEXT NOT NULL DEFAULT 'fact',
            category TEXT,
            content TEXT NOT NULL,
            confidence REAL DEFAULT 1.0,
            importance REAL DEFAULT 0.5,
            source_id TEXT,
            source_type TEXT,
            tags TEXT,
            who TEXT,
            why TEXT,
            project TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            updated_by TEXT NOT NULL DEFAULT 'system',
            last_accessed TEXT,
            access_count INTEGER DEFAULT 0,
            vector_clock TEXT NOT NULL DEFAULT '{}',
            version INTEGER DEFAULT 1,
            manual_override INTEGER DEFAULT 0,
            pinned INTEGER DEFAULT 0,
            content_hash TEXT,
            normalized_content TEXT,
            is_deleted INTEGER DEFAULT 0,
            deleted_at TEXT,
            extraction_status TEXT DEFAULT 'none',
            embedding_model TEXT,
            extraction_model TEXT,
            update_count INTEGER DEFAULT 0,
            idempotency_key TEXT,
            runtime_path TEXT,
            source_path TEXT,
            source_section TEXT
        )""",
    "entities": """
        CREATE TABLE entities (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            entity_type TEXT NOT NULL,
            description TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            canonical_name TEXT,
            mentions INTEGER DEFAULT 0,
            embedding BLOB,
            agent_id TEXT NOT NULL DEFAULT 'default',
            pinned INTEGER NOT NULL DEFAULT 0,
            pinned_at TEXT
        )""",
    "entity_aspects": """
        CREATE TABLE entity_aspects (
            id             TEXT PRIMARY KEY,
            entity_id      TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            agent_id       TEXT NOT NULL DEFAULT 'default',
            name           TEXT NOT NULL,
            canonical_name TEXT NOT NULL,
            weight         REAL NOT NULL DEFAULT 0.5,
            created_at     TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at     TEXT NOT NULL DEFAULT (datetime('now')),
            UNIQUE(entity_id, canonical_name)
        )""",
    "entity_attributes": """
        CREATE TABLE entity_attributes (
            id                 TEXT PRIMARY KEY,
            aspect_id          TEXT REFERENCES entity_aspects(id) ON DELETE SET NULL,
            agent_id           TEXT NOT NULL DEFAULT 'default',
            memory_id          TEXT REFERENCES memories(id) ON DELETE SET NULL,
            kind               TEXT NOT NULL,
            content            TEXT NOT NULL,
            normalized_content TEXT NOT NULL,
            confidence         REAL NOT NULL DEFAULT 0.0,
            importance         REAL NOT NULL DEFAULT 0.5,
            status             TEXT NOT NULL DEFAULT 'active',
            superseded_by      TEXT,
            created_at         TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at         TEXT NOT NULL DEFAULT (datetime('now'))
        )""",
    "entity_dependencies": """
        CREATE TABLE entity_dependencies (
            id                TEXT PRIMARY KEY,
            source_entity_id  TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            target_entity_id  TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            agent_id          TEXT NOT NULL DEFAULT 'default',
            aspect_id         TEXT REFERENCES entity_aspects(id) ON DELETE SET NULL,
            dependency_type   TEXT NOT NULL,
            strength          REAL NOT NULL DEFAULT 0.5,
            created_at        TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at        TEXT NOT NULL DEFAULT (datetime('now'))
        )""",
    "memory_entity_mentions": """
        CREATE TABLE memory_entity_mentions (
            memory_id TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            mention_text TEXT,
            confidence REAL,
            created_at TEXT,
            PRIMARY KEY (memory_id, entity_id),
            FOREIGN KEY (memory_id) REFERENCES memories(id),
            FOREIGN KEY (entity_id) REFERENCES entities(id)
        )""",
    "memories_cold": """
        CREATE TABLE memories_cold (
            archive_id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            type TEXT DEFAULT 'fact',
            category TEXT,
            content TEXT NOT NULL,
            confidence REAL DEFAULT 1.0,
            importance REAL DEFAULT 0.5,
            source_id TEXT,
            source_type TEXT,
            tags TEXT,
            who TEXT,
            why TEXT,
            project TEXT,
            content_hash TEXT,
            normalized_content TEXT,
            extraction_status TEXT,
            embedding_model TEXT,
            extraction_model TEXT,
            update_count INTEGER DEFAULT 0,
            original_created_at TEXT NOT NULL,
            archived_at TEXT NOT NULL,
            archived_reason TEXT,
            cold_source_id TEXT,
            agent_id TEXT NOT NULL DEFAULT 'default',
            original_row_json TEXT
        )""",
    "memories_fts": (
        "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content=memories, "
        "content_rowid=rowid)"
    ),
}

#: Signet's triggers keeping ``memories_fts`` in step with ``memories`` (created after the bulk load,
#: which indexes all rows at once with FTS5's ``rebuild``: five times faster than row by row).
SIGNET_TRIGGERS: tuple[str, ...] = (
    """CREATE TRIGGER memories_ad
        AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES('delete', old.rowid, old.content);
        END""",
    """CREATE TRIGGER memories_ai
        AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content)
            VALUES (new.rowid, new.content);
        END""",
    """CREATE TRIGGER memories_au
        AFTER UPDATE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES('delete', old.rowid, old.content);
            INSERT INTO memories_fts(rowid, content)
            VALUES (new.rowid, new.content);
        END""",
)

#: Signet's indexes on those tables (created after the rows are in: faster than growing them).
SIGNET_INDEXES: tuple[str, ...] = (
    "CREATE INDEX idx_cold_agent ON memories_cold(agent_id)",
    "CREATE INDEX idx_cold_archived_at ON memories_cold(archived_at)",
    "CREATE INDEX idx_cold_memory_id ON memories_cold(memory_id)",
    "CREATE INDEX idx_cold_project ON memories_cold(project)",
    "CREATE INDEX idx_cold_source ON memories_cold(cold_source_id)",
    "CREATE INDEX idx_entities_agent ON entities(agent_id)",
    "CREATE INDEX idx_entities_canonical_name ON entities(canonical_name)",
    "CREATE INDEX idx_entities_pinned ON entities(agent_id, pinned, pinned_at DESC)",
    "CREATE INDEX idx_entity_aspects_agent ON entity_aspects(agent_id)",
    "CREATE INDEX idx_entity_aspects_entity ON entity_aspects(entity_id)",
    "CREATE INDEX idx_entity_aspects_weight ON entity_aspects(weight DESC)",
    "CREATE INDEX idx_entity_attributes_agent ON entity_attributes(agent_id)",
    "CREATE INDEX idx_entity_attributes_aspect ON entity_attributes(aspect_id)",
    "CREATE INDEX idx_entity_attributes_kind ON entity_attributes(kind)",
    "CREATE INDEX idx_entity_attributes_status ON entity_attributes(status)",
    "CREATE INDEX idx_entity_dependencies_agent ON entity_dependencies(agent_id)",
    "CREATE INDEX idx_entity_dependencies_source ON entity_dependencies(source_entity_id)",
    "CREATE INDEX idx_entity_dependencies_target ON entity_dependencies(target_entity_id)",
    "CREATE INDEX idx_memories_category ON memories(category)",
    "CREATE UNIQUE INDEX idx_memories_content_hash_unique ON memories(content_hash) "
    "WHERE content_hash IS NOT NULL AND is_deleted = 0",
    "CREATE INDEX idx_memories_created ON memories(created_at DESC)",
    "CREATE INDEX idx_memories_deleted_at ON memories(deleted_at) WHERE is_deleted = 1",
    "CREATE INDEX idx_memories_extraction_status ON memories(extraction_status)",
    "CREATE UNIQUE INDEX idx_memories_idempotency_key ON memories(idempotency_key) "
    "WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX idx_memories_importance ON memories(importance DESC)",
    "CREATE INDEX idx_memories_is_deleted ON memories(is_deleted)",
    "CREATE INDEX idx_memories_pinned ON memories(pinned)",
    "CREATE INDEX idx_memories_type ON memories(type)",
    "CREATE INDEX idx_memory_entity_mentions_entity ON memory_entity_mentions(entity_id)",
)

#: Signet tables a store must have to be read.
REQUIRED_TABLES: tuple[str, ...] = (
    "memories", "entities", "entity_aspects", "entity_attributes", "entity_dependencies",
    "memory_entity_mentions", "memories_cold",
)


# --------------------------------------------------------------------------------------------------
# signet_rl's migrations on top of Signet's schema. Append new ones; never edit an applied one.


@dataclass(frozen=True)
class Migration:
    """One schema change on top of Signet's tables, applied once and recorded in
    ``signet_rl_migrations``."""

    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "dependency confidence and reason; communities; graph meta", (
        # The defaults are confidence.DEFAULT_REASON and its prior, so existing rows of an upgraded
        # Signet store, and rows Signet writes after the upgrade, read as single-memory edges.
        "ALTER TABLE entity_dependencies ADD COLUMN confidence REAL DEFAULT 0.7",
        "ALTER TABLE entity_dependencies ADD COLUMN reason TEXT DEFAULT 'single-memory'",
        """CREATE TABLE communities (
            id TEXT PRIMARY KEY,
            label TEXT,
            cohesion REAL,
            size INTEGER NOT NULL DEFAULT 0,
            level INTEGER NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE community_members (
            community_id TEXT NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            PRIMARY KEY (community_id, entity_id)
        )""",
        "CREATE INDEX idx_community_members_entity ON community_members(entity_id)",
        "CREATE TABLE signet_rl_meta (key TEXT PRIMARY KEY, value TEXT)",
        # Rows whose model value was None in a column Signet declares NOT NULL (see _FILLS).
        """CREATE TABLE signet_rl_nulls (
            table_name TEXT NOT NULL,
            column_name TEXT NOT NULL,
            row_ids TEXT NOT NULL,
            PRIMARY KEY (table_name, column_name)
        )""",
    )),
    Migration(2, "cold tier for graph rows", (
        # Graph rows moved out of the hot tables by signet_rl.emergence.cold (memories go to Signet's
        # own memories_cold). A row is kept whole: its rowid and every column's SQLite value, typed.
        """CREATE TABLE signet_rl_cold_rows (
            table_name TEXT NOT NULL,
            row_key TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            archived_at TEXT NOT NULL,
            archived_reason TEXT,
            row_json TEXT NOT NULL,
            PRIMARY KEY (table_name, row_key)
        )""",
        "CREATE INDEX idx_signet_rl_cold_rows_entity ON signet_rl_cold_rows(entity_id)",
    )),
)

#: The store schema version this code writes and reads up to (the last migration's version).
SCHEMA_VERSION: int = MIGRATIONS[-1].version

_MIGRATIONS_DDL = """CREATE TABLE IF NOT EXISTS signet_rl_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT,
    applied_at TEXT
)"""

#: Tables that exist only after migration 1.
_MIGRATED_TABLES: frozenset[str] = frozenset({"communities", "community_members"})
#: Columns that exist only after migration 1.
_MIGRATED_COLUMNS: dict[str, frozenset[str]] = {
    "entity_dependencies": frozenset({"confidence", "reason"}),
}


def _canonical(values: pd.Series) -> pd.Series:
    """Signet-style normal form of a name or text: lower case, runs of white space as one space."""
    return pd.Series([" ".join(str(v).lower().split()) for v in values], index=values.index,
                     dtype=object)


#: (table, column) optional in the model but NOT NULL in Signet -> what is written in place of None.
_FILLS: dict[tuple[str, str], Callable[[pd.DataFrame], pd.Series]] = {
    ("memories", "updated_at"): lambda f: f["created_at"],
    ("entities", "updated_at"): lambda f: f["created_at"],
    ("entity_aspects", "canonical_name"): lambda f: _canonical(f["name"]),
    ("entity_aspects", "updated_at"): lambda f: f["created_at"],
    ("entity_attributes", "normalized_content"): lambda f: _canonical(f["content"]),
    ("entity_attributes", "updated_at"): lambda f: f["created_at"],
    ("entity_dependencies", "updated_at"): lambda f: f["created_at"],
}


def _now_iso() -> str:
    return str(_iso(pd.Series([pd.Timestamp.now(tz="UTC")]))[0])


def _table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {r[0] for r in rows}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _migration_version(conn: sqlite3.Connection) -> int:
    if "signet_rl_migrations" not in _table_names(conn):
        return 0
    row = conn.execute("SELECT max(version) FROM signet_rl_migrations").fetchone()
    return int(row[0] or 0)


def apply_migrations(conn: sqlite3.Connection,
                     where: str | os.PathLike[str] = "store") -> list[int]:
    """Bring a store (or a plain Signet v30 database) up to :data:`SCHEMA_VERSION`.

    Idempotent: migrations already recorded in ``signet_rl_migrations`` are skipped. Each migration
    runs inside a savepoint, so it applies completely or not at all (and nests inside a caller's
    transaction). Upgrade a *copy* of a Signet store, not the one its daemon is using.

    Args:
        conn: a writable connection.
        where: how to name the database in errors (its path).

    Returns:
        The versions applied now (empty when the store was already current).

    Raises:
        StoreError: the database lacks Signet's tables, or was written by a newer signet_rl.
    """
    missing = [t for t in ("entities", "entity_dependencies") if t not in _table_names(conn)]
    if missing:
        raise StoreError(f"{where}: not a Signet store: missing tables {', '.join(missing)}")
    current = _migration_version(conn)
    if current > SCHEMA_VERSION:
        raise StoreError(f"{where}: written by a newer signet_rl (store schema version {current}; "
                         f"this version knows up to {SCHEMA_VERSION})")
    applied = []
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        conn.execute("SAVEPOINT signet_rl_migrate")
        try:
            conn.execute(_MIGRATIONS_DDL)
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute("INSERT INTO signet_rl_migrations (version, name, applied_at) "
                         "VALUES (?, ?, ?)", (migration.version, migration.name, _now_iso()))
        except BaseException:
            conn.execute("ROLLBACK TO signet_rl_migrate")
            conn.execute("RELEASE signet_rl_migrate")
            raise
        conn.execute("RELEASE signet_rl_migrate")
        applied.append(migration.version)
    return applied


# --------------------------------------------------------------------------------------------------
# Writing


def _iso(values: pd.Series) -> list[str | None]:
    """Timestamps as ``2024-05-01T12:00:00.000Z`` (JavaScript's ``toISOString``), NaT as None."""
    ts = values if pd.api.types.is_datetime64_any_dtype(values) else to_timestamp(values)
    if getattr(ts.dt, "tz", None) is not None:
        ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
    arr = ts.to_numpy(dtype="datetime64[ms]")
    text = np.char.add(np.datetime_as_string(arr, unit="ms"), "Z").astype(object)
    text[np.isnat(arr)] = None
    return text.tolist()


def _rows(table: str, frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """A table's rows as tuples of SQLite values, in :data:`TABLES` column order."""
    columns: list[list[Any]] = []
    for col in TABLES[table]:
        values = frame[col.name]
        kind = col.kind.rstrip("?")
        if kind == "time":
            columns.append(_iso(values))
        elif kind in ("bool", "int"):
            columns.append(values.to_numpy(dtype=np.int64).tolist())
        elif kind == "float":
            columns.append(values.to_numpy(dtype=np.float64).tolist())  # SQLite stores NaN as NULL
        else:
            columns.append(values.to_numpy(dtype=object).tolist())
    return list(zip(*columns, strict=True))


def _fill_not_null(table: str,
                   frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Fill the model's None in Signet's NOT NULL columns; return the frame and those rows' ids."""
    nulls: dict[str, list[str]] = {}
    for (t, column), fill in _FILLS.items():
        if t != table:
            continue
        missing = frame[column].isna()
        if missing.any():
            if not nulls:
                frame = frame.copy()  # the graph's own frames are never edited
            values = frame[column]
            values = (values.copy() if pd.api.types.is_datetime64_any_dtype(values)
                      else values.astype(object))
            values[missing] = fill(frame[missing])
            frame[column] = values
            nulls[column] = frame.loc[missing, "id"].tolist()
    return frame, nulls


def _check_signet_unique(graph: KnowledgeGraph, aspects: pd.DataFrame, where: Path) -> None:
    """Signet's UNIQUE constraints that the model does not check, with errors naming the rows."""
    for table, frame, keys in (("entities", graph.entities, ["name"]),
                               ("entity_aspects", aspects, ["entity_id", "canonical_name"])):
        dup = frame.duplicated(keys, keep=False)
        if dup.any():
            rows = frame[dup]
            first = rows.iloc[0]
            same = rows[(rows[keys] == first[keys]).all(axis=1)]["id"].tolist()
            value = first[keys].tolist() if len(keys) > 1 else first[keys[0]]
            raise StoreError(f"{where}: {table} rows {same} share {'/'.join(keys)} {value!r}; "
                             f"Signet requires it to be unique")


def _meta_rows(meta: dict[str, Any], where: Path) -> list[tuple[str, str]]:
    rows = []
    for key, value in meta.items():
        try:
            rows.append((str(key), json.dumps(value, allow_nan=False)))
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{where}: graph meta {key!r} is not JSON-able: {exc}") from exc
    return rows


def write_graph(graph: KnowledgeGraph, path: str | os.PathLike[str], *,
                overwrite: bool = False) -> Path:
    """Write ``graph`` to a SQLite store at ``path``, all or nothing.

    The store is built in a temp file next to ``path`` (``.<name>.<pid>.<random>.tmp``) inside one
    transaction and moved into place with :func:`os.replace`; on any failure the old file (if any) is
    untouched and the temp file is removed. A writer killed mid-write (SIGKILL, power loss) cannot remove
    its temp file: the next write to ``path`` removes those whose process is gone. A missing parent folder
    is created.

    Args:
        graph: the graph; it is validated first.
        path: the store file to create.
        overwrite: replace an existing file (refused otherwise).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        StoreError: the graph is invalid, breaks a Signet UNIQUE constraint, has meta that is not
            JSON-able, the folder cannot be created or written in (naming it), or SQLite failed; the
            message names the file and the table.
    """
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"{path} is a directory; write_graph needs a file path")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True to replace it")
    try:
        graph.validate()
    except GraphValidationError as exc:
        raise StoreError(f"{path}: cannot write an invalid graph: {exc}") from exc
    frames: dict[str, pd.DataFrame] = {}
    nulls: dict[tuple[str, str], list[str]] = {}
    for table, frame in graph.tables().items():
        frames[table], table_nulls = _fill_not_null(table, frame)
        nulls.update({(table, column): ids for column, ids in table_nulls.items()})
    _check_signet_unique(graph, frames["entity_aspects"], path)
    meta_rows = _meta_rows(graph.meta, path)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path}: cannot create the folder {path.parent} ({exc.strerror}); "
                         "write_graph needs a folder it can write in") from exc
    _remove_orphans(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError as exc:
        raise StoreError(f"{path}: cannot create a file in {path.parent} ({exc.strerror}); "
                         "write_graph needs a folder it can write in") from exc
    step = "the schema"
    try:
        with closing(sqlite3.connect(tmp, isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode=MEMORY")  # the temp file is the rollback: no -journal
            conn.execute("PRAGMA synchronous=OFF")  # fsync'd once below, before the rename
            conn.execute("PRAGMA cache_size=-262144")  # 256 MiB while loading
            conn.execute("BEGIN")
            for ddl in SIGNET_TABLES.values():
                conn.execute(ddl)
            apply_migrations(conn, path)
            for table, frame in frames.items():
                step = f"table {table}"
                cols = [c.name for c in TABLES[table]]
                sql = (f"INSERT INTO {table} ({', '.join(cols)}) "
                       f"VALUES ({', '.join('?' * len(cols))})")
                conn.executemany(sql, _rows(table, frame))
            step = "table signet_rl_nulls"
            conn.executemany("INSERT INTO signet_rl_nulls VALUES (?, ?, ?)",
                             [(t, c, json.dumps(ids)) for (t, c), ids in nulls.items()])
            step = "table signet_rl_meta"
            conn.executemany("INSERT INTO signet_rl_meta (key, value) VALUES (?, ?)", meta_rows)
            step = "the full-text index and indexes"
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('rebuild')")
            for ddl in (*SIGNET_TRIGGERS, *SIGNET_INDEXES):
                conn.execute(ddl)
            conn.execute("COMMIT")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"{path}: writing {step} failed: {exc}") from exc
        raise
    _fsync_dir(path.parent)
    return path


def _pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (a process we may not signal exists too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_orphans(path: Path) -> None:
    """Remove the temp files earlier writers of ``path`` left behind when they were killed: those named
    ``.<path.name>.<pid>.<random>.tmp`` whose process no longer runs. A live writer's file, this process's,
    and any other file are kept; one that cannot be removed is left for the next write."""
    prefix = f".{path.name}."
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid, _, rest = name[len(prefix) : -len(".tmp")].partition(".")
        if not pid.isdigit() or len(rest) != 8 or int(pid) == os.getpid() or _pid_alive(int(pid)):
            continue
        with suppress(OSError):
            os.unlink(entry.path)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable where the OS allows it (POSIX); harmless elsewhere."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------------
# Reading

_SQLITE_MAGIC = b"SQLite format 3\x00"


#: How long a reader waits for another connection's write lock by default, in seconds (Python's default).
DEFAULT_TIMEOUT = 5.0


def check_timeout(timeout: object) -> float:
    """``timeout`` as seconds (a finite number >= 0).

    Raises:
        ValueError: naming the bad value.
    """
    ok = isinstance(timeout, int | float) and not isinstance(timeout, bool) and 0 <= timeout < float("inf")
    if not ok:
        raise ValueError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
    return float(timeout)  # type: ignore[arg-type]


def open_read_only(path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> sqlite3.Connection:
    """Open a store or a real Signet database so that nothing on disk changes.

    The file is opened with ``mode=ro``. When it has no ``-wal`` or ``-journal`` beside it (no
    writer is active and nothing needs recovering), it is also opened ``immutable=1``: otherwise
    SQLite creates a ``-wal`` and ``-shm`` for a WAL-mode file (as Signet's are) even on a read-only
    connection. When a ``-wal`` exists (Signet's daemon is running), the read-only connection reads
    through it.

    Args:
        path: the database file.
        timeout: seconds to wait while another connection holds a write lock (a rollback-journal store in
            the middle of a write); then the read fails with a :class:`StoreError` that says so.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        StoreError: ``path`` is a directory or not a SQLite database, or is locked past ``timeout``.
        ValueError: a ``timeout`` that is not a number of seconds >= 0.
    """
    timeout = check_timeout(timeout)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Signet store {path} does not exist")
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a SQLite database")
    with open(path, "rb") as fh:
        header = fh.read(len(_SQLITE_MAGIC))
    if header != _SQLITE_MAGIC:
        what = "the file is empty" if not header else f"it starts with {header!r}"
        raise StoreError(f"{path} is not a SQLite database ({what})")
    live = any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal"))
    uri = path.resolve().as_uri() + ("?mode=ro" if live else "?mode=ro&immutable=1")
    conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    try:
        conn.execute("PRAGMA cache_size=-262144")  # reads the schema: fails on a damaged file
    except sqlite3.DatabaseError as exc:
        error = _damaged(path, exc, conn=conn)
        conn.close()
        raise error from exc
    return conn


def _holders(path: Path) -> list[str]:
    """``pid N (name)`` of other processes that have ``path`` (or its journal) open, where ``/proc`` tells
    (Linux); empty elsewhere. Only called on the error path: it reads every process's open files."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    target = str(path.resolve())
    names = {target, f"{target}-journal", f"{target}-wal"}
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
            if any(os.readlink(fd) in names for fd in fds):
                out.append(f"pid {entry.name} ({(entry / 'comm').read_text().strip()})")
        except OSError:  # gone, or not ours to look at
            continue
    return out


def _damaged(where: Path, exc: sqlite3.DatabaseError, table: str | None = None,
             conn: sqlite3.Connection | None = None) -> StoreError:
    """The error for a file SQLite cannot read (or cannot read now: another connection's write lock)."""
    if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or (
        "database is locked" in str(exc)
    ):
        waited = ""
        if conn is not None:
            with suppress(sqlite3.Error):
                ms = conn.execute("PRAGMA busy_timeout").fetchone()[0]
                waited = f" (waited {ms / 1000:g} s)"
        holders = _holders(where)
        held = "; open in " + ", ".join(holders) if holders else ""
        return StoreError(
            f"{where} is locked: another connection is writing to it{waited}{held}. Retry when the write "
            "is done, or wait longer with timeout=<seconds> (import_signet, read_graph), or on the command "
            "line dataset=signet dataset.options.timeout=<seconds>")
    if "not a database" in str(exc):
        return StoreError(f"{where} is not a SQLite database ({exc})")
    reading = f" reading table {table}" if table else ""
    return StoreError(f"{where}: the SQLite database is corrupt or truncated ({exc}){reading}")


def store_versions(conn: sqlite3.Connection) -> dict[str, int | None]:
    """Signet's schema version (``schema_migrations``; None in a store signet_rl wrote) and
    signet_rl's (0 for a plain Signet database)."""
    signet = None
    if "schema_migrations" in _table_names(conn):
        row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        signet = None if row[0] is None else int(row[0])
    return {"signet": signet, "signet_rl": _migration_version(conn)}


def _key(table: str, frame: pd.DataFrame, pos: int) -> str:
    keys = (("memory_id", "entity_id") if table == "memory_entity_mentions"
            else ("community_id", "entity_id") if table == "community_members"
            else (TABLES[table][0].name,))
    return "/".join(str(frame[k].iat[pos]) for k in keys)


def _parse_times(table: str, column: str, frame: pd.DataFrame, where: Path) -> pd.Series:
    """Parse a timestamp column (fast path for ISO-8601, which covers both Signet formats)."""
    values = frame[column]
    try:
        return pd.to_datetime(values, format="ISO8601", utc=True)
    except (ValueError, TypeError, OverflowError):
        pass
    try:
        return to_timestamp(values)
    except (ValueError, TypeError, OverflowError):
        for pos, value in enumerate(values):
            try:
                to_timestamp([value])
            except (ValueError, TypeError, OverflowError):
                raise StoreError(f"{where}: {table} row {_key(table, frame, pos)!r}: {column} "
                                 f"{value!r} is not a timestamp") from None
        raise


def _column_array(values: tuple[Any, ...], kind: str) -> np.ndarray:
    """One fetched column as a numpy array: float64 / int64 where the values allow, else object
    (the model then converts it, or names the bad value)."""
    if kind in ("float", "int", "bool"):
        for dtype in ((np.int64, np.float64) if kind != "float" else (np.float64,)):
            try:
                return np.array(values, dtype=dtype)  # None -> NaN for float64
            except (TypeError, ValueError, OverflowError):
                continue
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _read_table(conn: sqlite3.Connection, table: str, version: int,
                where: Path) -> pd.DataFrame:
    present = set(_columns(conn, table))
    optional = _MIGRATED_COLUMNS.get(table, frozenset()) if version < 1 else frozenset()
    cols = [c for c in TABLES[table] if c.name not in optional]
    missing = [c.name for c in cols if c.name not in present]
    if missing:
        raise StoreError(f"{where}: table {table} lacks columns {', '.join(missing)}")
    sql = f"SELECT {', '.join(c.name for c in cols)} FROM {table} ORDER BY rowid"
    try:
        rows = conn.execute(sql).fetchall()
    except sqlite3.DatabaseError as exc:
        raise _damaged(where, exc, table, conn) from exc
    by_column = list(zip(*rows, strict=True)) if rows else [() for _ in cols]
    # Object columns stay object (pandas would otherwise turn them into slower Arrow strings).
    frame = pd.DataFrame({c.name: pd.Series(_column_array(v, c.kind.rstrip("?")), copy=False,
                                            dtype=None if c.kind[0] in "fib" else object)
                          for c, v in zip(cols, by_column, strict=True)})
    for col in cols:
        kind = col.kind.rstrip("?")
        migrated = col.name in _MIGRATED_COLUMNS.get(table, frozenset())
        if not col.nullable and (col.default is None or migrated):
            nulls = frame[col.name].isna().to_numpy()
            if nulls.any():
                pos = int(np.flatnonzero(nulls)[0])
                hint = ("; expected a number in [0, 1] (NaN is stored as NULL)" if kind == "float"
                        else f"; expected one of: {', '.join(r.value for r in LADDER)}"
                        if col.name == "reason" else "")
                raise StoreError(f"{where}: {table} row {_key(table, frame, pos)!r}: {col.name} "
                                 f"is NULL{hint}")
        elif kind == "float" and col.default is not None and not migrated:
            # Signet's memories.importance allows NULL and defaults to 0.5: NULL reads as the
            # default. (Its NOT NULL REAL columns cannot hold a NULL, nor a NaN, which SQLite
            # stores as NULL.)
            frame[col.name] = frame[col.name].fillna(col.default)
        if kind == "time":
            frame[col.name] = _parse_times(table, col.name, frame, where)
    return frame


def _restore_nulls(conn: sqlite3.Connection, frames: dict[str, pd.DataFrame],
                   where: Path) -> None:
    """Put back the None values that Signet's NOT NULL columns made write_graph fill in."""
    rows = conn.execute("SELECT table_name, column_name, row_ids FROM signet_rl_nulls").fetchall()
    for table, column, ids_json in rows:
        fill = _FILLS.get((table, column))
        if fill is None:
            raise StoreError(f"{where}: signet_rl_nulls names an unknown column {table}.{column}")
        try:
            ids = set(json.loads(ids_json))
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{where}: signet_rl_nulls row {table}.{column} is not a JSON list: "
                             f"{exc}") from exc
        frame = frames[table]
        listed = np.fromiter((i in ids for i in frame["id"].to_numpy(dtype=object)), dtype=bool,
                             count=len(frame))
        # A row Signet has updated since keeps its new value: only an untouched fill reads as None.
        sub = frame[listed]
        untouched = (sub[column] == fill(sub)).to_numpy()
        if untouched.any():
            values = frame[column]
            is_time = pd.api.types.is_datetime64_any_dtype(values)
            values = values.copy() if is_time else values.astype(object)
            values[sub.index[untouched]] = pd.NaT if is_time else None
            frame[column] = values


def _read_meta(conn: sqlite3.Connection, where: Path) -> dict[str, Any]:
    meta = {}
    for key, value in conn.execute("SELECT key, value FROM signet_rl_meta ORDER BY rowid"):
        try:
            meta[key] = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{where}: signet_rl_meta {key!r} is not JSON: {exc}") from exc
    return meta


def read_connection(conn: sqlite3.Connection, where: str | os.PathLike[str]) -> KnowledgeGraph:
    """Read a graph from an open store or Signet database: the one reader behind
    :func:`read_graph` and :func:`~signet_rl.datasets.signet.import_signet`.

    A store with signet_rl's migration has dependency ``confidence`` and ``reason``, communities and
    meta; a plain Signet database has none, and every dependency gets
    :data:`~signet_rl.graph.confidence.DEFAULT_REASON` and its prior.

    Args:
        conn: an open connection (see :func:`open_read_only`).
        where: the file's path, for error messages.

    Raises:
        StoreError: naming the file and the table, row or value at fault.
    """
    where = Path(where)
    try:
        names = _table_names(conn)
    except sqlite3.DatabaseError as exc:
        raise _damaged(where, exc, conn=conn) from exc
    missing = [t for t in REQUIRED_TABLES if t not in names]
    if missing:
        raise StoreError(f"{where}: not a Signet store: missing tables {', '.join(missing)}")
    try:
        version = _migration_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(f"{where}: written by a newer signet_rl (store schema version "
                             f"{version}; this version reads up to {SCHEMA_VERSION})")
        frames = {table: _read_table(conn, table, version, where)
                  for table in TABLES if version >= 1 or table not in _MIGRATED_TABLES}
        meta: dict[str, Any] = {}
        if version >= 1:
            _restore_nulls(conn, frames, where)
            meta = _read_meta(conn, where)
    except sqlite3.DatabaseError as exc:
        raise _damaged(where, exc, conn=conn) from exc
    try:
        return KnowledgeGraph(frames, meta=meta)
    except GraphValidationError as exc:
        raise StoreError(f"{where}: {exc}") from exc


def read_graph(path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> KnowledgeGraph:
    """Read a store written by :func:`write_graph` (or any Signet v30 database), read-only.

    Args:
        path: the store file.
        timeout: seconds to wait for another connection's write lock (:func:`open_read_only`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        StoreError: the file is not a SQLite database, is corrupt, lacks Signet's tables, holds a
            value the model rejects, or stays locked past ``timeout``; the message names the file, the
            table and the row or value.
    """
    with closing(open_read_only(path, timeout)) as conn:
        return read_connection(conn, path)
