"""Bounded traversal: from entry entities, enumerate candidate paths with a strategy chosen by intent.

:class:`Traverser` walks the CSR arrays of :class:`~signet_rl.graph.arrays.GraphArrays` with int indices and
builds :class:`~signet_rl.traversal.path.Path` objects (store ids) only at the end.
Strategies (docs/design.md §1):

* ``what`` — shallow and broad: the entry's aspects by weight with their latest attributes, plus one
  dependency hop to its best neighbours, each ending in that neighbour's top aspect.
* ``relate`` — with two or more entries, a bidirectional breadth-first search between every pair (each
  side to ``ceil(max_depth / 2)`` hops, meeting within ``max_depth``) for connecting dependency paths; each
  edge's stated reason (the attributes under the edge's ``aspect_id``, at the edge's source) as a path; and
  *bridging* attributes: attributes of the two entries that share at least two content words; then the
  entries' own facts (where the reasons of their edges below ``min_confidence`` still live). With one
  entry, ``relate`` explores its neighbourhood to ``max_depth`` like ``what``.
* ``action`` — procedural aspects first (procedures, runbook, deadlines, plans, methods, schedule), then
  the others; outgoing ``blocks``/``requires`` dependencies to ``max_depth``, ending in the target's
  constraints.
* ``changed`` — aspects ordered by the recency of their latest attribute, with the latest versions on the
  path and the superseded versions visible at the query time listed in :attr:`Walk.superseded`.
* ``none`` (or any other intent) — nothing: an empty :class:`Walk`.

Guarantees (property-tested): at most ``max_paths`` paths; no dependency below ``min_confidence``; at most
``max_branching`` distinct dependency hops leave any path prefix; ``expanded <= entries * sum_{d=1..D}
b**d``; every hop is visible at the query time (``created_at <= timestamp``; deleted attributes never;
superseded ones only in :attr:`Walk.superseded`). Each entry's search keeps a visited set, so cycles and
self-loops end; a hub's 10,000 edges are filtered in one vectorised pass and only ``max_branching`` are
followed.

Unknown entry ids are skipped and reported in :attr:`Walk.unknown` (a search hit may name an entity that a
later graph snapshot dropped; that should not fail the query).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.graph.arrays import GraphArrays, TimeLike, _to_epoch
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import Hop, Path

__all__ = ["PROCEDURAL_ASPECTS", "STRATEGIES", "EdgeWeight", "Relevance", "Traverser", "Walk", "csr_hops",
           "current_attributes", "query_time", "successor_created"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]

#: ``edge_weight(arrays, slots) -> weights``: a weight per CSR slot (higher is followed first). The default
#: (None) is the CSR order, confidence x strength.
EdgeWeight = Callable[[GraphArrays, IntArray], FloatArray]
#: Query relevance of attributes, by attribute index (see :meth:`Traverser.walk`).
Relevance = Callable[[IntArray], FloatArray]

STRATEGIES: tuple[str, ...] = ("what", "relate", "action", "changed", "none")
PROCEDURAL_ASPECTS: frozenset[str] = frozenset(
    {"procedures", "procedure", "runbook", "deadlines", "plans", "methods", "schedule", "steps", "process"}
)
_ACTION_TYPES = ("blocks", "requires")
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "but",
        "its",
        "our",
        "your",
        "their",
        "his",
        "her",
        "any",
        "all",
        "can",
        "will",
        "would",
        "should",
        "must",
        "never",
        "always",
        "about",
        "after",
        "before",
        "than",
        "then",
        "when",
    }
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Walk:
    """What one walk found.

    Attributes:
        paths: candidate paths (at most ``max_paths``), each with ``strategy`` set, best first.
        constraints: attribute ids of the current constraints of the entities in scope (entries first;
            others within ``constraint_budget_chars``). They surface unconditionally.
        superseded: *changed* only: attribute ids of superseded versions visible at the query time, flagged
            so construction can show them as history, never as current.
        unknown: entry ids that are not entities of the graph (skipped).
        visited: entities reached (entries included).
        expanded: dependency edges followed (the cost bound counts these).
    """

    paths: list[Path] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    visited: int = 0
    expanded: int = 0

    @property
    def attribute_ids(self) -> set[str]:
        """Every attribute id reached by a path or the constraints."""
        out = set(self.constraints)
        for p in self.paths:
            out.update(p.attributes)
        return out


# A path under construction: entity indices, slot indices (one per dependency hop), and an optional ending
# (aspect index, attribute indices).
_Chain = tuple[tuple[int, ...], tuple[int, ...]]


class Traverser:
    """Bounded, strategy-driven walks over one graph snapshot.

    Args:
        arrays: the graph's array view.
        graph: the same graph (attribute text for bridging and constraint lengths; aspect names).
        config: the budgets.
        edge_weight: optional learned weights per CSR slot; edges of one entity are followed in
            descending weight (ties by CSR order). None: confidence x strength.
    """

    def __init__(
        self,
        arrays: GraphArrays,
        graph: KnowledgeGraph,
        config: TraversalConfig | None = None,
        edge_weight: EdgeWeight | None = None,
    ) -> None:
        self.arrays = arrays
        self.graph = graph
        self.config = config or TraversalConfig()
        self.edge_weight = edge_weight
        a = arrays
        names = graph.aspects["name"].to_numpy(dtype=object)
        self._procedural = np.fromiter(
            (str(n).lower() in PROCEDURAL_ASPECTS for n in names), bool, len(names)
        )
        self._content = graph.attributes["content"].to_numpy(dtype=object)
        self._content_len = graph.attributes["content"].str.len().fillna(0).to_numpy(dtype=np.int64)
        vocab = {t: i for i, t in enumerate(a.dep_type_vocab)}
        codes = [vocab[t] for t in _ACTION_TYPES if t in vocab]
        self._action_slot = np.isin(a.dep_type, np.asarray(codes, dtype=np.int32)) & (a.dep_direction == 1)
        self._conf_ok = a.dep_confidence >= np.float32(self.config.min_confidence)
        # When each attribute's successor was created; NaN when it has none (NaN <= t is False for every t,
        # including the t = inf of a walk with no timestamp).
        self._sb_created = successor_created(a)

    # -- public ------------------------------------------------------------------------------------

    def walk(
        self,
        entry_entities: Sequence[str],
        intent: str,
        timestamp: TimeLike | None = None,
        relevance: Relevance | None = None,
    ) -> Walk:
        """Enumerate candidate paths from ``entry_entities`` with the strategy for ``intent``.

        Args:
            entry_entities: entity ids (unknown ones are skipped and reported in ``Walk.unknown``).
            intent: what / relate / action / changed / none; anything else walks nothing.
            timestamp: the query time; only rows created at or before it are walked. None: all rows.
            relevance: optional query relevance of attributes: called with attribute indices, returns one
                score each. When given, an aspect's attributes are put on paths most relevant first (ties
                by importance), so an aspect holding hundreds of facts yields the ones the query is about;
                otherwise most important first.

        Returns:
            The :class:`Walk`.
        """
        out = Walk()
        entries: list[int] = []
        for eid in entry_entities:
            i = self.arrays.entity_index.get(eid)
            if i is None:
                out.unknown.append(eid)
            elif i not in entries:
                entries.append(i)
        if intent not in STRATEGIES or intent == "none" or not entries:
            return out
        t = query_time(timestamp)
        ctx = _Ctx(t, relevance=relevance)
        chains: list[tuple[_Chain, int, tuple[int, ...]]] = []  # (chain, aspect or -1, attributes)
        if intent == "what":
            self._what(entries, ctx, chains)
        elif intent == "relate":
            self._relate(entries, ctx, chains)
        elif intent == "action":
            self._action(entries, ctx, chains)
        else:
            self._changed(entries, ctx, chains, out)
        out.paths = self._finish(chains, set(entries), intent)
        out.expanded = ctx.expanded
        in_scope = list(entries)
        for p in out.paths:
            for e in p.entities:
                in_scope.append(self.arrays.entity_index[e])
        out.visited = len(ctx.reached | set(entries))
        out.constraints = self._constraints(list(dict.fromkeys(in_scope)), set(entries), t)
        return out

    # -- strategies --------------------------------------------------------------------------------

    def _what(self, entries: list[int], ctx: _Ctx, chains: list) -> None:
        cfg = self.config
        for e in entries:
            for asp in self.arrays.aspects_of(e)[: cfg.max_aspects].tolist():
                self._own(e, asp, ctx, chains)
        for e in entries:
            for chain in self._bfs(e, min(1, cfg.max_depth), ctx):
                self._end_top(chain, ctx, chains)

    def _relate(self, entries: list[int], ctx: _Ctx, chains: list) -> None:
        cfg = self.config
        if len(entries) == 1:
            e = entries[0]
            for asp in self.arrays.aspects_of(e)[: cfg.max_aspects].tolist():
                self._own(e, asp, ctx, chains)
            for chain in self._bfs(e, cfg.max_depth, ctx):
                self._end_top(chain, ctx, chains)
            return
        half = (cfg.max_depth + 1) // 2
        trees = {e: self._tree(e, half, ctx) for e in entries}
        for i, a in enumerate(entries):
            for b in entries[i + 1 :]:
                for chain in self._meet(trees[a], trees[b], a, b):
                    chains.append((chain, -1, ()))
                    self._reasons(chain, ctx, chains)
                self._bridges(a, b, ctx, chains)
        for e in entries:  # lowest priority: the entries' own facts (where their edges' reasons live)
            for asp in self.arrays.aspects_of(e)[: cfg.max_aspects].tolist():
                self._own(e, asp, ctx, chains)

    def _action(self, entries: list[int], ctx: _Ctx, chains: list) -> None:
        cfg, a = self.config, self.arrays
        for e in entries:
            asps = a.aspects_of(e)
            order = np.concatenate([asps[self._procedural[asps]], asps[~self._procedural[asps]]])
            for asp in order[: cfg.max_aspects].tolist():
                self._own(e, asp, ctx, chains)
        for e in entries:
            for chain in self._bfs(e, cfg.max_depth, ctx, self._action_slot):
                end = chain[0][-1]
                found = False
                for asp in a.aspects_of(end).tolist():
                    cur = self._current(asp, ctx.t, ctx.relevance)
                    cons = cur[a.attr_kind[cur] == 1]
                    if len(cons):
                        chains.append((chain, asp, tuple(cons[: cfg.max_attributes_per_aspect].tolist())))
                        found = True
                if not found:
                    chains.append((chain, -1, ()))

    def _changed(self, entries: list[int], ctx: _Ctx, chains: list, out: Walk) -> None:
        cfg, a = self.config, self.arrays
        for e in entries:
            rows = []
            for asp in a.aspects_of(e).tolist():
                attrs = a.attributes_of(asp)
                vis = attrs[(a.attr_created[attrs] <= ctx.t) & (a.attr_status[attrs] != 2)]
                if len(vis):
                    rows.append((-float(a.attr_created[vis].max()), asp))
            for _, asp in sorted(rows)[: cfg.max_aspects]:
                attrs = a.attributes_of(asp)
                cur = self._current(asp, ctx.t, ctx.relevance)
                # Changed facts (those with a visible predecessor) first, then the rest, newest first.
                has_pred = np.isin(cur, a.attr_superseded_by[attrs])
                order = np.lexsort((-a.attr_created[cur], ~has_pred))
                chains.append((((e,), ()), asp, tuple(cur[order][: cfg.max_attributes_per_aspect].tolist())))
                old = attrs[
                    (a.attr_created[attrs] <= ctx.t)
                    & (a.attr_status[attrs] != 2)
                    & (self._sb_created[attrs] <= ctx.t)
                ]
                out.superseded.extend(a.attribute_ids[old].tolist())
        out.superseded = list(dict.fromkeys(out.superseded))

    # -- building blocks ---------------------------------------------------------------------------

    def _current(self, asp: int, t: float, relevance: Relevance | None = None) -> IntArray:
        """Attributes of an aspect current at ``t``: created by then, not deleted, not superseded by then;
        most relevant first when ``relevance`` is given (ties by importance), else most important first."""
        a = self.arrays
        attrs = a.attributes_of(asp)
        cur = attrs[current_attributes(a, attrs, t, self._sb_created[attrs])]
        if relevance is not None and len(cur):
            rel = np.asarray(relevance(cur), dtype=np.float64)
            return cur[np.lexsort((-a.attr_importance[cur], -rel))]
        return cur[np.argsort(-a.attr_importance[cur], kind="stable")]

    def _own(self, e: int, asp: int, ctx: _Ctx, chains: list) -> None:
        """An entry's own aspect: one path of its best facts, or with query relevance up to
        ``aspect_chunks`` paths, each with the next most relevant ``max_attributes_per_aspect`` facts."""
        cur = self._current(asp, ctx.t, ctx.relevance)
        m = self.config.max_attributes_per_aspect
        chunks = self.config.aspect_chunks if ctx.relevance is not None else 1
        for c in range(min(chunks, -(-len(cur) // m))):
            chains.append((((e,), ()), asp, tuple(cur[c * m : (c + 1) * m].tolist())))

    def _end_top(self, chain: _Chain, ctx: _Ctx, chains: list) -> None:
        """End a dependency chain in the reached entity's first aspect with current attributes."""
        for asp in self.arrays.aspects_of(chain[0][-1]).tolist():
            cur = self._current(asp, ctx.t, ctx.relevance)
            if len(cur):
                chains.append((chain, asp, tuple(cur[: self.config.max_attributes_per_aspect].tolist())))
                return
        chains.append((chain, -1, ()))

    def _reasons(self, chain: _Chain, ctx: _Ctx, chains: list) -> None:
        """For each edge of a chain, the attributes under its ``aspect_id`` (its stated reason), reached by
        the chain's prefix up to the edge's source."""
        a = self.arrays
        nodes, slots = chain
        for k, s in enumerate(slots):
            edge = int(a.dep_edge[s])
            asp = int(a.edge_aspect[edge])
            if asp < 0:
                continue
            src = int(a.edge_source[edge])
            cut = k if nodes[k] == src else k + 1
            cur = self._current(asp, ctx.t, ctx.relevance)
            if len(cur) and int(a.aspect_entity[asp]) == nodes[cut]:
                prefix = (nodes[: cut + 1], slots[:cut])
                chains.append((prefix, asp, tuple(cur[: self.config.max_attributes_per_aspect].tolist())))

    def _bridges(self, x: int, y: int, ctx: _Ctx, chains: list) -> None:
        """Attributes of ``x`` and ``y`` that share at least two content words."""
        a, cfg = self.arrays, self.config

        def facts(e: int) -> list[tuple[int, int, frozenset[str]]]:
            out = []
            for asp in a.aspects_of(e)[: cfg.max_aspects].tolist():
                for t in self._current(asp, ctx.t, ctx.relevance).tolist():
                    words = frozenset(
                        w
                        for w in _WORD.findall(str(self._content[t]).lower())
                        if len(w) >= 3 and w not in _STOP
                    )
                    out.append((asp, t, words))
            return out

        fx, fy = facts(x), facts(y)
        for asp_x, tx, wx in fx:
            for asp_y, ty, wy in fy:
                if len(wx & wy) >= 2:
                    chains.append((((x,), ()), asp_x, (tx,)))
                    chains.append((((y,), ()), asp_y, (ty,)))

    def _follow(
        self,
        frontier: IntArray,
        ctx: _Ctx,
        seen: npt.NDArray[np.bool_],
        slot_ok: npt.NDArray[np.bool_] | None,
    ) -> tuple[IntArray, IntArray]:
        """One breadth-first level: the best ``max_branching`` admissible slots of each frontier entity
        leading to unseen entities. Returns ``(slots, owner)`` (owner: position in ``frontier``)."""
        a, b = self.arrays, self.config.max_branching
        slots, owner = a.frontier_slots(frontier)
        ok = self._conf_ok[slots] & ~seen[a.dep_neighbor[slots]]
        if ctx.t != math.inf:
            ok &= a.edge_created[a.dep_edge[slots]] <= ctx.t
        if slot_ok is not None:
            ok &= slot_ok[slots]
        slots, owner = slots[ok], owner[ok]
        if self.edge_weight is not None and len(slots):
            w = np.asarray(self.edge_weight(a, slots), dtype=np.float64)
            order = np.lexsort((np.arange(len(slots)), -w, owner))
            slots, owner = slots[order], owner[order]
        if len(slots):
            start = np.searchsorted(owner, owner, side="left")
            rank = np.arange(len(slots)) - start
            keep = rank < b
            slots, owner = slots[keep], owner[keep]
        ctx.expanded += len(slots)
        return slots, owner

    def _tree(
        self, root: int, depth: int, ctx: _Ctx, slot_ok: npt.NDArray[np.bool_] | None = None
    ) -> dict[int, _Chain]:
        """Breadth-first tree from ``root`` to ``depth`` hops: entity -> its chain from the root."""
        a = self.arrays
        seen = np.zeros(a.num_entities, dtype=bool)
        seen[root] = True
        tree: dict[int, _Chain] = {root: ((root,), ())}
        frontier = np.asarray([root], dtype=np.int64)
        for _ in range(depth):
            if not len(frontier):
                break
            slots, owner = self._follow(frontier, ctx, seen, slot_ok)
            nxt = []
            for s, o in zip(slots.tolist(), owner.tolist(), strict=True):
                v = int(a.dep_neighbor[s])
                if seen[v]:
                    continue  # reached twice in this level: keep the first (best) edge
                seen[v] = True
                nodes, path_slots = tree[int(frontier[o])]
                tree[v] = ((*nodes, v), (*path_slots, s))
                nxt.append(v)
            ctx.reached.update(nxt)
            frontier = np.asarray(nxt, dtype=np.int64)
        return tree

    def _bfs(
        self, root: int, depth: int, ctx: _Ctx, slot_ok: npt.NDArray[np.bool_] | None = None
    ) -> list[_Chain]:
        """The chains of a breadth-first tree, shortest first (the root itself left out)."""
        tree = self._tree(root, depth, ctx, slot_ok)
        return [c for v, c in tree.items() if v != root]

    def _meet(self, ta: dict[int, _Chain], tb: dict[int, _Chain], a: int, b: int) -> list[_Chain]:
        """Simple paths ``a -> b`` joining the two trees at a common entity, within ``max_depth``;
        shortest first."""
        found: list[tuple[int, _Chain]] = []
        for m, (na, sa) in ta.items():
            if m not in tb:
                continue
            nb, sb = tb[m]
            if len(sa) + len(sb) > self.config.max_depth or len(sa) + len(sb) == 0:
                continue
            nodes = na + tuple(reversed(nb[:-1]))
            if len(set(nodes)) != len(nodes):
                continue
            # The b-side slots belong to the far entity; walking a -> b uses the twin slot at the near one.
            back = tuple(self._twin(s) for s in reversed(sb))
            found.append((len(nodes), (nodes, sa + back)))
        found.sort(key=lambda x: x[0])
        return list(dict.fromkeys(c for _, c in found))

    def _twin(self, slot: int) -> int:
        """The slot of the same edge seen from its other end."""
        a = self.arrays
        u = int(a.dep_neighbor[slot])
        lo, hi = int(a.dep_indptr[u]), int(a.dep_indptr[u + 1])
        edge, direction = a.dep_edge[slot], a.dep_direction[slot]
        hits = np.flatnonzero((a.dep_edge[lo:hi] == edge) & (a.dep_direction[lo:hi] == -direction))
        return lo + int(hits[0])

    # -- finishing ---------------------------------------------------------------------------------

    def _finish(self, chains: list, entries: set[int], strategy: str) -> list[Path]:
        """Chains to paths: drop short ones (entry's own facts exempt), duplicates, and any that would give
        a prefix more than ``max_branching`` distinct dependency hops; cap at ``max_paths``."""
        a, cfg = self.arrays, self.config
        out: list[Path] = []
        seen: set[Path] = set()
        branches: dict[tuple[Hop, ...], set[Hop]] = {}
        for (nodes, slots), asp, attrs in chains:
            hops = csr_hops(a, nodes, slots, asp, attrs)
            own = not slots and nodes[0] in entries and asp >= 0
            if len(hops) - 1 < cfg.min_path_length and not own:
                continue
            path = Path(tuple(hops), strategy=strategy)
            if path in seen:
                continue
            new = []
            for i in range(0, len(hops) - 1):
                if hops[i + 1].kind.value == "D":
                    prefix = tuple(hops[: i + 1])
                    if hops[i + 1] not in branches.get(prefix, set()):
                        new.append((prefix, hops[i + 1]))
            if any(len(branches.get(p, ())) >= cfg.max_branching for p, _ in new):
                continue
            for p, h in new:
                branches.setdefault(p, set()).add(h)
            seen.add(path)
            out.append(path)
            if len(out) >= cfg.max_paths:
                break
        return out

    def _constraints(self, scope: list[int], entries: set[int], t: float) -> list[str]:
        """Current constraints of the entities in scope: the entries' always, the others' while they fit
        ``constraint_budget_chars``."""
        a = self.arrays
        out: list[str] = []
        used = 0
        for e in scope:
            for asp in a.aspects_of(e).tolist():
                cur = self._current(asp, t)
                for c in cur[a.attr_kind[cur] == 1].tolist():
                    size = int(self._content_len[c])
                    if e in entries:
                        out.append(str(a.attribute_ids[c]))
                    elif used + size <= self.config.constraint_budget_chars:
                        used += size
                        out.append(str(a.attribute_ids[c]))
        return list(dict.fromkeys(out))


def csr_hops(
    arrays: GraphArrays, nodes: Sequence[int], slots: Sequence[int], aspect: int, attributes: Sequence[int]
) -> list[Hop]:
    """The hops (store ids) of a walk given as CSR indices: entity ``nodes[0]``, then for each dependency
    slot ``slots[k]`` its edge (in the slot's direction) and entity ``nodes[k + 1]``; then, when ``aspect``
    is not -1 and ``attributes`` is not empty, the aspect and its attributes (row indices) in order.

    The one translation from the arrays' indices to a :class:`Path`'s hops, used by the traverser and the
    EdgeWalk environment: ``Path(tuple(csr_hops(...)), strategy=...)``.
    """
    a = arrays
    hops = [Hop.entity(str(a.entity_ids[nodes[0]]))]
    for k, s in enumerate(slots):
        hops.append(Hop.dependency(str(a.edge_ids[a.dep_edge[s]]), int(a.dep_direction[s])))
        hops.append(Hop.entity(str(a.entity_ids[nodes[k + 1]])))
    if aspect >= 0 and attributes:
        hops.append(Hop.aspect(str(a.aspect_ids[aspect])))
        hops.extend(Hop.attribute(str(a.attribute_ids[t])) for t in attributes)
    return hops


def successor_created(arrays: GraphArrays) -> npt.NDArray[np.float64]:
    """When each attribute's successor was created (epoch seconds); NaN for an attribute with none."""
    sb = arrays.attr_superseded_by
    return np.where(sb >= 0, arrays.attr_created[np.maximum(sb, 0)], np.nan)


def current_attributes(arrays: GraphArrays, attrs: IntArray, t: float,
                       successor: npt.NDArray[np.float64] | None = None) -> npt.NDArray[np.bool_]:
    """Which attribute rows ``attrs`` are current at ``t`` (epoch seconds; ``math.inf``: now), the walk's
    rule: created by then, not deleted, not superseded by then (``successor``: :func:`successor_created` of
    ``attrs``, computed when None), and not marked superseded with no successor recorded."""
    a = arrays
    if successor is None:
        successor = successor_created(a)[attrs]
    keep = (a.attr_created[attrs] <= t) & (a.attr_status[attrs] != 2) & ~(successor <= t)
    keep &= ~((a.attr_status[attrs] == 1) & (a.attr_superseded_by[attrs] < 0))
    return np.asarray(keep, dtype=bool)


def query_time(timestamp: TimeLike | None) -> float:
    """A query's time as the walk reads it: epoch seconds, ``math.inf`` for None (every row visible)."""
    return math.inf if timestamp is None else _epoch(timestamp)


def _epoch(t: TimeLike) -> float:
    """Query time in epoch seconds at millisecond precision (a fast path for ``pd.Timestamp``)."""
    if isinstance(t, pd.Timestamp) and t.tzinfo is not None:
        return math.floor(t.timestamp() * 1000.0) / 1000.0
    return _to_epoch(t)


@dataclass
class _Ctx:
    """Per-walk state: the query time, edges followed, entities reached."""

    t: float
    expanded: int = 0
    reached: set[int] = field(default_factory=set)
    relevance: Relevance | None = None
