"""Constructed memories: a chosen path becomes one dense unit of context, and a slate of them is fitted to a
character budget behind an always-present constraints section.

A path ``entity (dependency entity)* [aspect attribute+]`` is written as one line that joins what it passed —
the entities' names, each linking dependency in words (type, confidence, reason; the arrow always points from
the edge's source to its target, whichever way it was walked), the aspect, and the attributes' contents, with
constraints and stale (superseded or deleted) facts marked::

    signet-api —uses (0.9, multi-memory)→ postgres-db · deployment: runs 3 replicas; no fridays [constraint]

Design decisions:

* **Provenance lives in** ``Unit.items`` **and** ``Unit.meta``, not in the text (unless ``cite_path=True``).
  Signet's recall API returns a memory's id beside its content, never inside it, and feedback is keyed by
  that id; a constructed memory is returned the same way (``meta["path_id"]``), so ids in the text would
  spend budget on characters the reading model cannot use. ``cite_path=True`` appends ``[p-…]`` for setups
  where the agent must quote the id back; those characters are then counted like any other.
* **Items are attribute ids only** (plus, with ``entity_items=True``, the entities a path reaches, for
  entity-answer datasets such as KG path reasoning). Memory ids are *not* items: the harness's
  :class:`~signet_rl.rating.items.ItemResolver` expands a memory id into every fact of that memory,
  which the text does not hold, so listing them would count facts that were never injected. The memories
  the attributes came from are kept in ``meta["memories"]``. A walked edge's source passage is an item
  only when the unit injects it whole (equal text, equal credit; see :mod:`signet_rl.rating.items`,
  which applies the same rule to every retriever's units).
* **Every injected character counts**: ``meta["tokens"]`` is ``ceil(len(text) / 4)``, and markers
  (``[constraint]``, ``[superseded]``, ``[speculative]``, the constraints header) are part of the text.

The constraints section (:meth:`MemoryBuilder.constraints_section`) is Signet's: the active constraints of
every entity in scope, in their own unit (``kind="constraints"``), grouped by entity, deduplicated, most
important first, within its own budget (1,000 characters). :func:`build_slate` puts it first, always, and
fits the constructed memories into what is left.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import CHARS_PER_TOKEN, Unit
from signet_rl.graph.model import AttributeKind, AttributeStatus, KnowledgeGraph
from signet_rl.traversal.path import HopKind, Path

__all__ = [
    "CONSTRAINTS_BUDGET_CHARS",
    "CONSTRAINTS_HEADER",
    "SPECULATIVE_MARKER",
    "MemoryBuilder",
    "build_slate",
    "injected_memories",
    "slate_chars",
    "tokens_of",
]

#: Signet's constraints section: about 1,000 characters, never dropped.
CONSTRAINTS_BUDGET_CHARS = 1000
#: First line of the constraints section.
CONSTRAINTS_HEADER = "Constraints:"
#: Prefix of an explorer path's text.
SPECULATIVE_MARKER = "[speculative] "
_SEP = " · "


def tokens_of(text: str) -> int:
    """Signet's token count of ``text``: ``ceil(chars / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _path_meta(
    path: Path, text: str, memories: tuple[str, ...], source: str, cut_sources: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The provenance every path's unit carries in ``Unit.meta`` (the module docstring says why it is
    there and not in the text): the path, its strategy, whether an explorer chose it, the unit's tokens,
    the memories behind it, the source passages it cut, and which piece of the candidates it came from."""
    return {
        "path_id": path.id,
        "path": path.serialise(),
        "strategy": path.strategy,
        "explorer": path.explorer,
        "speculative": path.explorer,
        "tokens": tokens_of(text),
        "memories": memories,
        "cut_sources": cut_sources,
        "source": source,
    }


def slate_chars(units: Iterable[Unit]) -> int:
    """Characters a slate injects (every unit's text, nothing else)."""
    return sum(u.chars for u in units)


def _num(x: float) -> str:
    """A confidence in two decimals without trailing zeros: 0.9, 0.68, 1."""
    return f"{x:.2f}".rstrip("0").rstrip(".") or "0"


def _epoch(values: pd.Series) -> np.ndarray:
    """Timestamps as float64 epoch seconds (NaN for NaT)."""
    ts = pd.to_datetime(values, utc=True)
    out = ts.dt.tz_convert(None).to_numpy(dtype="datetime64[ms]")
    sec = out.view(np.int64).astype(np.float64) / 1000.0
    sec[np.isnat(out)] = np.nan
    return sec


def _at_epoch(at: Any) -> float | None:
    if at is None:
        return None
    if isinstance(at, int | float) and not isinstance(at, bool):
        return float(at)
    if isinstance(at, pd.Timestamp):  # the common case, without a pandas Series round trip
        return (at.value // 1_000_000) / 1000.0  # .value is UTC nanoseconds (naive read as UTC)
    return float(_epoch(pd.Series([at]))[0])


@dataclass(frozen=True, slots=True)
class _Attr:
    entity: str | None
    aspect: str | None
    content: str
    constraint: bool
    status: str
    importance: float
    memory: str | None
    stale_since: float  # epoch seconds the row became stale; inf when it never did


class MemoryBuilder:
    """Turns paths over one graph into constructed memories (see the module docstring).

    The graph's frames are indexed by id once; constructing a memory is then a few dictionary lookups.

    Args:
        graph: the knowledge graph the paths walk.
        entity_items: also list the entities a path reaches (all but its start) as items, for datasets
            whose truth counts answer entities (``needed_kind="entity"``).
        cite_path: append the path id to the text (``[p-…]``), counted like every other character.
        sources: append each walked dependency's source passage (``graph.meta["dependency_memory"]``,
            as OpenIE graphs like MuSiQue's record it) and list those memories as items. ``None``: when
            the graph records them.
        source_chars: each passage is cut to this many characters (0: whole). A cut passage is *not*
            listed as an item (equal text, equal credit: :mod:`signet_rl.rating.items`); it is named in
            ``meta["cut_sources"]``.

    Example:
        >>> builder = MemoryBuilder(graph)  # doctest: +SKIP
        >>> builder.construct(path, score=0.8).text  # doctest: +SKIP
        'signet-api —uses (0.9, multi-memory)→ postgres-db · deployment: runs 3 replicas in oregon'
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        entity_items: bool = False,
        cite_path: bool = False,
        sources: bool | None = None,
        source_chars: int = 600,
    ) -> None:
        if source_chars < 0:
            raise ValueError(f"source_chars must be >= 0, got {source_chars}")
        self.entity_items = entity_items
        self.cite_path = cite_path
        self.source_chars = source_chars
        # Where dependencies were extracted from passages (OpenIE graphs such as MuSiQue's), a walked edge
        # carries its source passage: graph.meta["dependency_memory"] lists each dependency's memory.
        dep_memory = graph.meta.get("dependency_memory")
        self.sources = dep_memory is not None if sources is None else sources
        self._dep_memory: dict[str, str] = {}
        self._memory_text: dict[str, str] = {}
        if self.sources and dep_memory is not None:
            ids = graph.dependencies["id"].tolist()
            if len(dep_memory) != len(ids):
                raise ValueError(
                    f"graph.meta['dependency_memory'] has {len(dep_memory)} entries for "
                    f"{len(ids)} dependencies"
                )
            self._dep_memory = {
                d: str(m) for d, m in zip(ids, dep_memory, strict=True) if m is not None and not pd.isna(m)
            }
            mem = graph.memories
            self._memory_text = dict(zip(mem["id"].astype(str), mem["content"].astype(str), strict=True))
        mem = graph.memories
        #: Every memory's text, for paths that end in memories (flat hits, session steps, co-mentions).
        self._turn_text: dict[str, str] = dict(
            zip(mem["id"].astype(str), mem["content"].fillna("").astype(str), strict=True)
        )
        ent = graph.entities
        self._entity_name: dict[str, str] = dict(zip(ent["id"].tolist(), ent["name"].tolist(), strict=True))
        asp = graph.aspects
        self._aspect: dict[str, tuple[str, str]] = {
            i: (n, e) for i, n, e in zip(asp["id"], asp["name"], asp["entity_id"], strict=True)
        }
        dep = graph.dependencies
        self._dep: dict[str, tuple[str, str, str, float, str]] = {
            i: (s, t, ty, float(c), r)
            for i, s, t, ty, c, r in zip(
                dep["id"],
                dep["source_entity_id"],
                dep["target_entity_id"],
                dep["dependency_type"],
                dep["confidence"],
                dep["reason"],
                strict=True,
            )
        }
        att = graph.attributes
        ids = att["id"].tolist()
        created = dict(zip(ids, _epoch(att["created_at"]).tolist(), strict=True))
        entity_of = {a: e for a, (_, e) in self._aspect.items()}
        self._attr: dict[str, _Attr] = {}
        for i, aspect, content, kind, status, imp, mem, by in zip(
            ids,
            att["aspect_id"],
            att["content"],
            att["kind"],
            att["status"],
            att["importance"],
            att["memory_id"],
            att["superseded_by"],
            strict=True,
        ):
            aspect = None if pd.isna(aspect) else aspect
            if status == AttributeStatus.ACTIVE:
                since = math.inf
            elif status == AttributeStatus.SUPERSEDED and not pd.isna(by) and by in created:
                since = created[by]  # stale from the moment its successor was written
            else:
                since = -math.inf  # deleted, or superseded by an unknown row: stale at any time
            self._attr[i] = _Attr(
                entity=entity_of.get(aspect) if aspect is not None else None,
                aspect=aspect,
                content=str(content),
                constraint=kind == AttributeKind.CONSTRAINT,
                status=str(status),
                importance=float(imp),
                memory=None if pd.isna(mem) else str(mem),
                stale_since=since,
            )

    # -- lookups -------------------------------------------------------------------------------------

    def _attribute(self, attr_id: str) -> _Attr:
        try:
            return self._attr[attr_id]
        except KeyError:
            raise KeyError(f"no attribute with id {attr_id!r}") from None

    def _name(self, entity_id: str) -> str:
        try:
            return self._entity_name[entity_id]
        except KeyError:
            raise KeyError(f"no entity with id {entity_id!r}") from None

    def _stale(self, a: _Attr, at: float | None) -> str | None:
        """The attribute's stale status at time ``at`` (stored status when ``at`` is None), or None."""
        if a.status == AttributeStatus.ACTIVE:
            return None
        if at is not None and a.stale_since > at:
            return None  # superseded later than ``at``: still current then
        return a.status

    def _fact(self, a: _Attr, at: float | None) -> str:
        marks = (["constraint"] if a.constraint else []) + ([s] if (s := self._stale(a, at)) else [])
        return a.content + (f" [{', '.join(marks)}]" if marks else "")

    def path_keys(self, path: Path) -> frozenset[str]:
        """What a path contributes, for deduplication: its attributes; for a path without attributes its
        dependency edges; for a lone entity the entity."""
        if path.memories:
            return frozenset(injected_memories(path))
        return frozenset(path.attributes or path.dependencies or path.entities)

    def memory_text(self, memory_id: str) -> str:
        """A memory's content, as stored.

        Raises:
            KeyError: no memory with this id (named).
        """
        try:
            return self._turn_text[memory_id]
        except KeyError:
            raise KeyError(f"no memory with id {memory_id!r}") from None

    def _construct_floor_fact(self, path: Path, score: float) -> Unit:
        """A flat hit on a fact (an attribute as its own document): its content alone, as flat injects
        it, so the floor costs what flat's unit costs."""
        aid = path.attributes[0]
        a = self._attribute(aid)
        text = a.content
        meta = _path_meta(path, text, (a.memory,) if a.memory else (), "floor")
        return Unit(text=text, items=(aid,), score=score, kind="attribute", meta=meta)

    def _construct_memories(self, path: Path, score: float) -> Unit:
        """A path that ends in memories: the memories it injects (:func:`injected_memories`), whole, one
        per line; the hops that led there stay in ``meta`` (provenance), not in the text."""
        mems = injected_memories(path)
        text = "\n".join(self.memory_text(m) for m in mems)
        if path.explorer:
            text = SPECULATIVE_MARKER + text
        if self.cite_path:
            text += f" [{path.id}]"
        meta = _path_meta(path, text, mems, path.kind)
        kind = "memory" if path.kind in ("floor", "session") else "constructed"
        return Unit(text=text, items=mems, score=score, kind=kind, meta=meta)

    # -- construction ---------------------------------------------------------------------------------

    def construct(self, path: Path, score: float = 0.0, at: Any = None) -> Unit:
        """One constructed memory for ``path``.

        Args:
            path: the walk (entities, dependencies, aspect, attributes, in the path grammar).
            score: the scorer's score, kept as ``Unit.score``.
            at: query time (epoch seconds or a timestamp): an attribute superseded by a row written after
                ``at`` was still current then and is not marked stale. ``None`` marks by stored status.

        Returns:
            ``Unit(kind="constructed")`` with ``items`` = the attribute ids the text holds and
            ``meta`` = ``path_id``, ``path``, ``strategy``, ``explorer``, ``speculative``, ``tokens``,
            ``memories`` (the source memories of its attributes and, with ``sources``, of its edges),
            ``cut_sources`` (source passages injected cut to ``source_chars``, hence not items).

        Raises:
            KeyError: a hop id that is not in the graph (named).
            ValueError: hops that do not connect (a dependency not joining its neighbours in the stated
                direction, an aspect of another entity, an attribute of another aspect).
        """
        if path.memories:
            return self._construct_memories(path, score)
        if path.strategy == "floor" and len(path.attributes) == 1:
            return self._construct_floor_fact(path, score)
        t = _at_epoch(at)
        hops = path.hops
        parts = [self._name(hops[0].id)]
        aspect_text = ""
        facts: list[str] = []
        i = 1
        while i < len(hops):
            hop = hops[i]
            if hop.kind is HopKind.DEPENDENCY:
                prev, nxt = hops[i - 1].id, hops[i + 1].id
                try:
                    src, tgt, dtype, conf, reason = self._dep[hop.id]
                except KeyError:
                    raise KeyError(f"no dependency with id {hop.id!r}") from None
                want = (prev, nxt) if hop.direction == 1 else (nxt, prev)
                if (src, tgt) != want:
                    raise ValueError(
                        f"path {path.id}: dependency {hop.id!r} joins {src!r} -> {tgt!r}, "
                        f"not {want[0]!r} -> {want[1]!r}"
                    )
                label = f"{dtype} ({_num(conf)}, {reason})"
                arrow = f" —{label}→ " if hop.direction == 1 else f" ←{label}— "
                parts.append(arrow + self._name(nxt))
                i += 2
                continue
            if hop.kind is HopKind.ASPECT:
                try:
                    name, owner = self._aspect[hop.id]
                except KeyError:
                    raise KeyError(f"no aspect with id {hop.id!r}") from None
                if owner != hops[i - 1].id:
                    raise ValueError(
                        f"path {path.id}: aspect {hop.id!r} belongs to {owner!r}, not {hops[i - 1].id!r}"
                    )
                aspect_text = name
            else:  # attribute
                a = self._attribute(hop.id)
                if a.aspect != path.aspects[-1]:
                    raise ValueError(
                        f"path {path.id}: attribute {hop.id!r} is under aspect {a.aspect!r}, "
                        f"not {path.aspects[-1]!r}"
                    )
                facts.append(self._fact(a, t))
            i += 1
        text = "".join(parts)
        if aspect_text:
            text += f"{_SEP}{aspect_text}" + (": " + "; ".join(facts) if facts else "")
        passages = [m for d in dict.fromkeys(path.dependencies) if (m := self._dep_memory.get(d))]
        passages = list(dict.fromkeys(passages))
        whole: list[str] = []  # passages injected whole: the only ones listed as items
        cut: list[str] = []
        for m in passages:
            body = " ".join(self._memory_text.get(m, "").split())
            if self.source_chars and len(body) > self.source_chars:
                body = body[: self.source_chars].rsplit(" ", 1)[0] + " …"
                cut.append(m)
            else:
                whole.append(m)
            text += f"\n  source: {body}"
        if path.explorer:
            text = SPECULATIVE_MARKER + text
        if self.cite_path:
            text += f" [{path.id}]"
        items = list(dict.fromkeys(path.attributes))
        if self.entity_items:
            items += [e for e in dict.fromkeys(path.entities[1:]) if e not in items]
        items += [m for m in whole if m not in items]
        memories = tuple(
            dict.fromkeys([m for a in path.attributes if (m := self._attr[a].memory)] + passages)
        )
        meta = _path_meta(path, text, memories, path.kind, cut_sources=tuple(cut))
        return Unit(text=text, items=tuple(items), score=score, kind="constructed", meta=meta)

    def constraints_section(
        self,
        attribute_ids: Iterable[str],
        budget_chars: int = CONSTRAINTS_BUDGET_CHARS,
        at: Any = None,
        score: float = 0.0,
    ) -> Unit | None:
        """The always-present constraints section for the constraints of the entities in scope.

        The constraints still in force at ``at`` (active, or superseded only later) are grouped by entity
        (one line each, ``name: c1; c2``), deduplicated (same entity and same content once, every id kept
        as an item), and ordered by importance (entities by their most important constraint). It is
        fitted to ``budget_chars`` one whole constraint at a time, most important first, with
        :func:`~signet_rl.core.types.fit_budget`'s rule (one that would overflow is skipped and a
        shorter, less important one may still fit); constraints left out are named in
        ``meta["omitted"]`` and announced by a last line ``+N more``, which also fits the budget.
        Constraints are never cut mid-sentence.

        Args:
            attribute_ids: constraint attribute ids (repeats allowed; stale ones are left out and listed
                in ``meta["inactive"]``).
            budget_chars: the section's own budget (Signet: 1,000 characters).
            at: query time, as in :meth:`construct`.
            score: ``Unit.score`` of the section.

        Returns:
            ``Unit(kind="constraints")``; ``None`` when no constraint is in force, or when the budget is too
            small for the header and even the ``+N more`` line.

        Raises:
            KeyError: an unknown attribute id (named).
            ValueError: an attribute that is not a constraint, or a budget of 0 or below.
        """
        if budget_chars <= 0:
            raise ValueError(f"constraints budget must be positive, got {budget_chars} characters")
        t = _at_epoch(at)
        groups: dict[tuple[str, str], list[str]] = {}  # (entity, content) -> ids
        rank: dict[tuple[str, str], float] = {}
        inactive: list[str] = []
        for aid in dict.fromkeys(attribute_ids):
            a = self._attribute(aid)
            if not a.constraint:
                raise ValueError(f"attribute {aid!r} is a {AttributeKind.ATTRIBUTE.value}, not a constraint")
            if self._stale(a, t) is not None:
                inactive.append(aid)
                continue
            key = (a.entity or "", a.content)
            groups.setdefault(key, []).append(aid)
            rank[key] = max(rank.get(key, -math.inf), a.importance)
        if not groups:
            return None
        order = sorted(groups, key=lambda k: (-rank[k], k[0], k[1]))

        def render(chosen: Sequence[tuple[str, str]], more: int) -> str:
            by_entity: dict[str, list[str]] = {}
            for ent, content in chosen:  # chosen is importance-ordered, so entity order follows it
                by_entity.setdefault(ent, []).append(content)
            lines = [CONSTRAINTS_HEADER]
            lines += [
                f"{self._entity_name.get(e, e) if e else '(unclassified)'}: {'; '.join(cs)}"
                for e, cs in by_entity.items()
            ]
            if more:
                lines.append(f"+{more} more")
            return "\n".join(lines)

        chosen: list[tuple[str, str]] = []
        for key in order:
            trial = [*chosen, key]
            if len(render(trial, len(order) - len(trial))) <= budget_chars:
                chosen = trial
        # The "+N more" line was reserved for the count left at each step; once skips happened it may have
        # grown by a digit, so shed the least important chosen constraint until the whole section fits.
        while chosen and len(render(chosen, len(order) - len(chosen))) > budget_chars:
            chosen.pop()
        text = render(chosen, len(order) - len(chosen))
        if len(text) > budget_chars:
            return None
        items = tuple(aid for key in chosen for aid in groups[key])
        omitted = tuple(aid for key in order if key not in chosen for aid in groups[key])
        meta = {
            "tokens": tokens_of(text),
            "omitted": omitted,
            "inactive": tuple(inactive),
            "entities": tuple(dict.fromkeys(e for e, _ in chosen)),
        }
        return Unit(text=text, items=items, score=score, kind="constraints", meta=meta)


def injected_memories(path: Path) -> tuple[str, ...]:
    """The memories a path's unit injects: a flat hit (one memory) injects itself; a session path
    (memory → memory steps) injects the memories after its anchor (the first one, which is a candidate of
    its own); a walk that ends in memories injects those."""
    mems = path.memories
    if path.hops[0].kind is HopKind.MEMORY and len(mems) > 1:
        mems = mems[1:]
    return tuple(dict.fromkeys(mems))


def build_slate(
    paths_with_scores: Iterable[tuple[Path, float]],
    constraint_ids: Iterable[str],
    budget_chars: int | None,
    builder: MemoryBuilder,
    constraints_budget_chars: int = CONSTRAINTS_BUDGET_CHARS,
    at: Any = None,
) -> list[Unit]:
    """What is injected for one query: the constraints section, then constructed memories, best first.

    * The constraints section comes first and is always present while any constraint is in force. It gets
      ``min(constraints_budget_chars, budget_chars)`` characters and its characters count toward
      ``budget_chars``. When the constraints alone exceed the whole budget the section is cut to it (whole
      constraints, most important first, ``+N more``; see :meth:`MemoryBuilder.constraints_section`) and
      no constructed memory is injected.
    * Paths are taken by score, best first (ties keep input order). A path is dropped when everything it
      holds (:meth:`MemoryBuilder.path_keys`) is already held by units *injected* above it, the
      constraints section included; a repeated path is dropped; a path whose text is identical to an
      injected unit's adds its items to that unit instead (the same words hold both facts).
    * A unit that would overflow the remaining budget is skipped and later, shorter units may still fit
      (the rule of :func:`~signet_rl.core.types.fit_budget`), so the slate never exceeds the budget.
    * Explorer paths keep ``meta["speculative"] = True`` and the ``[speculative]`` prefix.

    Args:
        paths_with_scores: ``(path, score)`` pairs, in any order.
        constraint_ids: constraint attribute ids of the entities in scope.
        budget_chars: the character budget of everything injected (``None``: no budget).
        builder: the :class:`MemoryBuilder` of the graph the paths walk.
        constraints_budget_chars: the constraints section's own budget.
        at: query time, as in :meth:`MemoryBuilder.construct`.

    Returns:
        The units to inject, constraints section first.

    Raises:
        ValueError: a budget of 0 or below.
    """
    if budget_chars is not None and budget_chars <= 0:
        raise ValueError(f"token budget must be positive, got {budget_chars} characters")
    ranked = sorted(paths_with_scores, key=lambda ps: -ps[1])
    top = ranked[0][1] if ranked else 0.0
    section_budget = (
        constraints_budget_chars if budget_chars is None else min(constraints_budget_chars, budget_chars)
    )
    section = builder.constraints_section(constraint_ids, section_budget, at=at, score=top)
    out: list[Unit] = [section] if section is not None else []
    left = math.inf if budget_chars is None else budget_chars - slate_chars(out)
    covered: set[str] = set(section.items) if section is not None else set()
    seen_paths: set[Path] = set()
    by_text: dict[str, int] = {}
    for path, score in ranked:
        if path in seen_paths:
            continue
        seen_paths.add(path)
        keys = builder.path_keys(path)
        if keys <= covered:
            continue
        unit = builder.construct(path, score=score, at=at)
        if unit.text in by_text:
            j = by_text[unit.text]
            kept = out[j]
            merged = tuple(dict.fromkeys((*kept.items, *unit.items)))
            paths = (*kept.meta.get("merged_paths", ()), path.id)
            out[j] = dataclasses.replace(kept, items=merged, meta={**kept.meta, "merged_paths": paths})
            covered |= keys
            continue
        if unit.chars > left:
            continue
        by_text[unit.text] = len(out)
        out.append(unit)
        left -= unit.chars
        covered |= keys
    return out
