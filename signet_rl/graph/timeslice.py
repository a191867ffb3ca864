"""What the graph looked like at a query's time: time-sliced edges, degrees and communities, on arrays.

A query asked at time ``t`` may only see rows created at or before ``t`` (``docs/design.md``). The walk
already checks every hop (:mod:`signet_rl.traversal.walk`); what scores the walk's paths must not look
further. :class:`TimeSlices` gives, for a query time, the graph's state then:

* :meth:`TimeSlices.edge_mask` — which dependencies existed (``edge_created <= t``, the walk's rule: a
  NULL ``created_at`` never counts as visible at a finite time). The visible set is a prefix of the
  edges sorted by creation time, so its length (:meth:`TimeSlices.key`) identifies it exactly; masks,
  degrees and anything a caller derives from them are cached per key (LRU), so queries asked between the
  same two edge writes share one slice.
* :meth:`TimeSlices.degree` — in-degree plus out-degree over the visible edges (what
  :meth:`GraphArrays.degree` counts over all of them).
* :meth:`TimeSlices.community` — each entity's community at ``t``. A stored partition
  (``graph.communities``) is one detection over the whole timeline and so reads the future; it is never
  used at a finite time. Instead, when the graph carries communities, Leiden (igraph, modularity, seed 0)
  partitions the community graph of :func:`~signet_rl.graph.communities.community_edges` built from the
  rows that existed at the **start of the query's UTC day** (a nightly snapshot: per-query Leiden would
  cost a partition per distinct query time; a day's snapshot is computed once and never holds a row
  written after the query). An entity with no visible edge has no community (-1). A community is
  labelled by the id of its lowest-row member (:meth:`TimeSlices.community_labels`), so the same group
  keeps its label from one day to the next. A graph without stored communities has none at any time,
  as before.

``t = None`` (a query without a time) sees the whole graph: every edge, the stored degrees and
communities.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import igraph as ig
import numpy as np

from signet_rl.graph.arrays import BoolArray, GraphArrays, IntArray, TimeLike, _to_epoch

__all__ = ["DAY_SECONDS", "TimeSlices"]

DAY_SECONDS = 86400.0
_T = TypeVar("_T")


class _LRU:
    """A small least-recently-used cache."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any, make: Callable[[], _T]) -> _T:
        hit = self._data.get(key)
        if hit is not None:
            self._data.move_to_end(key)
            return hit
        value = make()
        self._data[key] = value
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return value


class TimeSlices:
    """The graph as it was at a query time (see the module docstring).

    Args:
        arrays: the graph's arrays.
        cache_size: slices (masks, degrees, communities) kept per kind.

    Example:
        >>> slices = TimeSlices(arrays)  # doctest: +SKIP
        >>> slices.degree(query_epoch_seconds)  # doctest: +SKIP
    """

    def __init__(self, arrays: GraphArrays, cache_size: int = 32) -> None:
        self.arrays = arrays
        created = np.asarray(arrays.edge_created, dtype=np.float64)
        order = np.argsort(np.where(np.isnan(created), np.inf, created), kind="stable")
        self._order = order
        # NaN (NULL created_at) sorts last and is never <= a finite t
        self._sorted = np.where(np.isnan(created[order]), np.inf, created[order])
        self._has_communities = bool((np.asarray(arrays.entity_community) >= 0).any())
        self._masks = _LRU(cache_size)
        self._degrees = _LRU(cache_size)
        self._communities = _LRU(cache_size)
        self._extra = _LRU(cache_size)

    @staticmethod
    def epoch(t: TimeLike | None) -> float | None:
        """``t`` in epoch seconds (``None`` stays ``None``; NaN reads as ``None``)."""
        if t is None:
            return None
        x = _to_epoch(t)
        return None if math.isnan(x) else x

    def key(self, t: TimeLike | None) -> int | None:
        """How many edges existed at ``t`` (``None``: no time, the whole graph)."""
        x = self.epoch(t)
        if x is None:
            return None
        return int(np.searchsorted(self._sorted, x, side="right"))

    def creation_rank(self) -> IntArray:
        """``[E]``: each dependency's position in creation order (NULL ``created_at`` last, ties by row):
        the edges that existed at ``t`` are those of rank below :meth:`key` (``t``)."""
        rank = np.empty(len(self._order), dtype=np.int64)
        rank[self._order] = np.arange(len(self._order))
        return rank

    def edge_mask(self, t: TimeLike | None) -> BoolArray:
        """``[E]``: which dependencies existed at ``t`` (all for ``None``)."""
        k = self.key(t)

        def make() -> BoolArray:
            mask = np.zeros(len(self._order), dtype=bool)
            mask[self._order[: len(self._order) if k is None else k]] = True
            mask.flags.writeable = False
            return mask

        return self._masks.get(k, make)

    def degree(self, t: TimeLike | None) -> IntArray:
        """``[N]``: in-degree plus out-degree over the edges that existed at ``t``."""
        k = self.key(t)
        if k is None:
            return self.arrays.degree()

        def make() -> IntArray:
            a, m = self.arrays, self.edge_mask(t)
            n = a.num_entities
            out = np.bincount(a.edge_source[m], minlength=n) + np.bincount(a.edge_target[m], minlength=n)
            out = out.astype(np.int64)
            out.flags.writeable = False
            return out

        return self._degrees.get(k, make)

    def snapshot_time(self, t: TimeLike | None) -> float | None:
        """The community snapshot a query at ``t`` reads: the start of its UTC day (``None`` for none)."""
        x = self.epoch(t)
        return None if x is None else math.floor(x / DAY_SECONDS) * DAY_SECONDS

    def community(self, t: TimeLike | None) -> IntArray:
        """``[N]``: each entity's community at ``t`` (-1: none); see the module docstring."""
        if t is None or self.epoch(t) is None:
            return self.arrays.entity_community
        if not self._has_communities:
            return np.full(self.arrays.num_entities, -1, dtype=np.int64)
        day = self.snapshot_time(t)
        assert day is not None
        return self._communities.get(day, lambda: self._detect(day))

    def community_labels(self, t: TimeLike | None) -> list[str] | None:
        """The label of each community of :meth:`community` at ``t`` (index = community number): the id
        of its lowest-row member. ``None`` for ``t = None`` (the stored communities keep their ids)."""
        if t is None or self.epoch(t) is None:
            return None
        comm = self.community(t)
        if not (comm >= 0).any():
            return []
        first = np.full(int(comm.max()) + 1, -1, dtype=np.int64)
        rows = np.flatnonzero(comm >= 0)
        # rows ascend, so the first write per community (reversed assignment) is its lowest row
        first[comm[rows[::-1]]] = rows[::-1]
        return [str(self.arrays.entity_ids[r]) for r in first]

    def slice_id(self, t: TimeLike | None) -> tuple[int | None, float | None]:
        """What identifies the slice at ``t``: the edge key and, when the graph has communities, the
        snapshot day. Two times with the same id see the same edges, degrees and communities."""
        return (self.key(t), self.snapshot_time(t) if self._has_communities else None)

    def cached(self, kind: str, t: TimeLike | None, make: Callable[[], _T]) -> _T:
        """A caller's value derived from the slice at ``t``, cached per (``kind``, :meth:`slice_id`) —
        e.g. a scorer's per-time node inputs."""
        return self._extra.get((kind, *self.slice_id(t)), make)

    def _detect(self, day: float) -> IntArray:
        """Leiden over the community graph of the rows that existed at ``day``."""
        from signet_rl.graph.communities import _leiden, _renumber, community_edges

        n = self.arrays.num_entities
        u, v, w = community_edges(self.arrays, at=day)
        out = np.full(n, -1, dtype=np.int64)
        if not len(u):
            out.flags.writeable = False
            return out
        g = ig.Graph(n=n, edges=np.stack([u, v], axis=1).tolist(), directed=False)
        g.es["weight"] = w.tolist()
        raw = _leiden(g, "modularity", "igraph", 1.0, 0, -1)
        membership = np.asarray(raw, dtype=np.int64)
        touched = np.zeros(n, dtype=bool)
        touched[u] = touched[v] = True
        membership[~touched] = -1
        keep = membership >= 0
        out[keep] = _renumber(membership[keep])
        out.flags.writeable = False
        return out
