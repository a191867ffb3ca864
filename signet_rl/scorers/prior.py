"""Non-learned path scorers: the baselines the learned policy must beat.

* :class:`PriorScorer` — what the graph already believes: the product of confidence × strength along the
  path's dependency hops, times the aspect's weight, the attributes' importance and their recency,

  .. math:: s(p) = \\prod_{e \\in p} c_e s_e \\cdot w_{a} \\cdot \\bar{\\imath} \\cdot 2^{-\\Delta t / h}

  where :math:`w_a` is the weight of the aspect the path ends in (1 when none), :math:`\\bar\\imath` the mean
  importance of its attributes (1 when none), :math:`\\Delta t` the age in days of its newest attribute at
  the query time and :math:`h` the half-life (``half_life_days``, default :data:`PRIOR_HALF_LIFE_DAYS`, about
  27 days; recency off when ``None``).
  When the retriever supplies query relevance (``ScoringContext.relevance``, the cosine similarity of each
  attribute's text to the query) and ``relevance=True``, the score is also multiplied by the mean relevance
  of the path's attributes (floored at 0.01), so of an aspect's several chunks of facts the one about the
  query ranks first; a path that ends in memories (the hybrid entry's session steps and walks) is multiplied
  by its memories' similarity to the query (``ScoringContext.path_info["memory_sim"]``, floored at 0.01).
* :class:`PPRScorer` — personalized PageRank from the entry entities (HippoRAG-style, damping 0.5 over
  dependency edges weighted by confidence × strength, undirected, only the edges that existed at the query
  time), solved locally by forward push (:func:`~signet_rl.graph.pagerank.push_pagerank`: igraph's
  ``personalized_pagerank`` definition, each entity's mass at most ``tol`` × its weighted degree below the
  exact solve, without touching the far graph); a path scores the rank mass of the entities it reaches
  (excluding its start; a memory path: the entities its memories mention).
* Nothing here sees the future: the prior reads only the rows of the path, which the walk admits only when
  created at or before the query time, and PPR runs on the time-sliced edge set.
* :class:`RandomScorer` — a floor: seeded per query, so runs are reproducible.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import igraph as ig
import numpy as np

from signet_rl.core.checks import check_range
from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.graph.pagerank import DEFAULT_TOL, CSRGraph, csr_graph, push_pagerank
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.scorers.base import ScoringContext, register
from signet_rl.traversal.path import Path

__all__ = [
    "PRE_STUDY_PRIOR_HALF_LIFE_DAYS", "PRIOR_HALF_LIFE_DAYS", "PPRScorer", "PriorScorer", "RandomScorer",
]  # fmt: skip

DAY = 86400.0
#: The prior's recency half-life in days: trial 0 of the prior's equal-tuning study (``python -m
#: signet_rl.train -m +experiment=learning/sweep/prior``, study ``learning-prior``, 16 trials, 0.5-730 days
#: on synthetic v2 medium validation; issue 25 §3), chosen among its trials by the worse of two validation
#: sets: the study's own (synthetic) and LoCoMo's validation fold (``experiments/prior_half_life.py``). The
#: synthetic study alone prefers about 2 days (0.2700 there, 27 days 0.2343), but there LoCoMo's needed recall
#: falls to 0.245 (0.336 at 27 days, 0.387 at its best, 332 days): the generator's questions ask about recent
#: facts, real conversations about any session. The default of :class:`PriorScorer` and of the prior column
#: of :class:`~signet_rl.scorers.fused.BaseScores` (desire_fused's and the learned scorers' inputs); the runs
#: that were not rerun pin the 90 days before it (``signet_rl.scorers.PRE_SWEEP_DEFAULTS``).
PRIOR_HALF_LIFE_DAYS = 27.2652561911619
#: The half-life before that study: what every policy, checkpoint, recipe and figure made before it read.
PRE_STUDY_PRIOR_HALF_LIFE_DAYS = 90.0


class _Lookups:
    """Store id -> array row, built once per graph."""

    def __init__(self, arrays: GraphArrays) -> None:
        self.edge = {str(k): i for i, k in enumerate(arrays.edge_ids)}
        self.aspect = {str(k): i for i, k in enumerate(arrays.aspect_ids)}
        self.attr = {str(k): i for i, k in enumerate(arrays.attribute_ids)}


@register("prior")
class PriorScorer:
    """Confidence × strength along the path, aspect weight, attribute importance, recency (see module)."""

    name = "prior"

    def __init__(self, half_life_days: float | None = PRIOR_HALF_LIFE_DAYS, relevance: bool = True) -> None:
        check_range("half_life_days", half_life_days, 0, lo_open=True, optional=True)
        self.half_life_days = half_life_days
        self.relevance = relevance
        self.config: dict[str, Any] = {"half_life_days": half_life_days, "relevance": relevance}
        self._graphs: dict[int, tuple[GraphArrays, _Lookups]] = {}

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        self._graphs[id(arrays)] = (arrays, _Lookups(arrays))

    def forget(self, arrays: GraphArrays) -> None:
        """Drop the lookups kept for ``arrays`` (its graph was replaced)."""
        self._graphs.pop(id(arrays), None)

    def _lookups(self, arrays: GraphArrays) -> _Lookups:
        if id(arrays) not in self._graphs:
            self._graphs[id(arrays)] = (arrays, _Lookups(arrays))
        return self._graphs[id(arrays)][1]

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        a = context.arrays
        lk = self._lookups(a)
        out = np.empty(len(paths), dtype=np.float64)
        for i, p in enumerate(paths):
            s = 1.0
            for d in p.dependencies:
                e = lk.edge[d]
                s *= float(a.edge_confidence[e]) * float(a.edge_strength[e])
            if p.aspects:
                s *= float(a.aspect_weight[lk.aspect[p.aspects[0]]])
            attrs = [lk.attr[t] for t in p.attributes]
            if attrs:
                idx = np.asarray(attrs)
                s *= float(a.attr_importance[idx].mean())
                if self.half_life_days is not None and context.timestamp is not None:
                    age = max(0.0, (context.timestamp - float(a.attr_created[idx].max())) / DAY)
                    s *= 0.5 ** (age / self.half_life_days)
                if self.relevance and context.relevance is not None:
                    s *= max(float(np.mean(context.relevance(idx))), 0.01)
            if p.memories and self.relevance:  # a memory path: its memories' similarity to the query
                info = context.path_info.get(p.id)
                if info is not None:
                    s *= max(float(info.get("memory_sim", 0.0)), 0.01)
            out[i] = s
        return out

    def update(self, feedback: Any) -> None:
        return None


@register("ppr")
class PPRScorer:
    """Personalized PageRank mass of what a path reaches, reset at the entry entities (see module).

    PageRank runs over the dependencies that existed at the query time only
    (:class:`~signet_rl.graph.timeslice.TimeSlices`): one undirected CSR graph per graph, of which the push
    reads only the slice's edges (no per-slice copy), solved by local forward push to ``tol``
    (:mod:`signet_rl.graph.pagerank`); ``tol=None`` solves it exactly on the whole graph with igraph's
    ``personalized_pagerank`` instead (the reference the push is measured against). The rank vector of the
    last :attr:`RANK_CACHE` (entry set, time slice) pairs is kept: a service answering several queries about
    the same entities solves PageRank once (the same solve, so the same ranks).
    """

    name = "ppr"
    #: Rank vectors kept (per scorer, most recently used; one float64 per entity each).
    RANK_CACHE = 64

    def __init__(self, damping: float = 0.5, tol: float | None = DEFAULT_TOL) -> None:
        check_range("damping", damping, 0, 1, lo_open=True, hi_open=True)
        if tol is not None:
            check_range("tol", tol, 0, 1, lo_open=True)
        self.damping, self.tol = damping, tol
        self.config: dict[str, Any] = {"damping": damping}
        if tol != DEFAULT_TOL:
            self.config["tol"] = tol
        self._slices: dict[int, TimeSlices] = {}
        self._graphs: dict[int, tuple[GraphArrays, ig.Graph]] = {}
        self._csrs: dict[int, tuple[GraphArrays, CSRGraph]] = {}
        self._mem_index: dict[int, tuple[GraphArrays, dict[str, int]]] = {}
        self._ranks: OrderedDict[tuple[Any, ...], tuple[GraphArrays, np.ndarray]] = OrderedDict()

    def __deepcopy__(self, memo: dict[int, Any]) -> PPRScorer:
        """A fresh instance with the same settings (per-graph state and cached ranks are rebuilt on use)."""
        return PPRScorer(self.damping, self.tol)

    def _rank(self, arrays: GraphArrays, timestamp: float | None, entries: list[int]) -> np.ndarray:
        """Personalized PageRank reset at ``entries`` over the edges that existed at ``timestamp``
        (cached per entry set and time slice, see the class docstring)."""
        slices = self._time_slices(arrays)
        key = (id(arrays), slices.key(timestamp), tuple(entries))
        hit = self._ranks.get(key)
        if hit is not None and hit[0] is arrays:
            self._ranks.move_to_end(key)
            return hit[1]
        if self.tol is None:
            g, weights = self._graph(arrays, timestamp)
            rank = np.asarray(g.personalized_pagerank(damping=self.damping, reset_vertices=entries,
                                                      weights=weights))  # fmt: skip
        else:
            rank = push_pagerank(self._csr(arrays), entries, self.damping, self.tol, slices.key(timestamp))
        self._ranks[key] = (arrays, rank)
        while len(self._ranks) > self.RANK_CACHE:
            self._ranks.popitem(last=False)
        return rank

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        self._slices[id(arrays)] = TimeSlices(arrays)

    def forget(self, arrays: GraphArrays) -> None:
        """Drop what is kept for ``arrays`` (time slices, graphs, cached ranks): its graph was replaced."""
        self._slices.pop(id(arrays), None)
        self._csrs.pop(id(arrays), None)
        self._graphs.pop(id(arrays), None)
        self._mem_index.pop(id(arrays), None)
        for key in [k for k, (a, _) in self._ranks.items() if a is arrays]:
            del self._ranks[key]

    def _time_slices(self, arrays: GraphArrays) -> TimeSlices:
        slices = self._slices.get(id(arrays))
        if slices is None or slices.arrays is not arrays:
            slices = self._slices[id(arrays)] = TimeSlices(arrays)
        return slices

    def _csr(self, arrays: GraphArrays) -> CSRGraph:
        """The undirected CSR graph of every dependency, weighted by ``confidence × strength``, each entry
        keyed by its edge's rank in creation order (built once per graph; a time slice is the entries
        below the slice's edge count, :meth:`~signet_rl.graph.timeslice.TimeSlices.key`)."""
        hit = self._csrs.get(id(arrays))
        if hit is None or hit[0] is not arrays:
            weight = (arrays.edge_confidence * arrays.edge_strength).astype(np.float64)
            rank = self._time_slices(arrays).creation_rank()
            csr = csr_graph(len(arrays.entity_ids), arrays.edge_source, arrays.edge_target, weight, rank)
            hit = self._csrs[id(arrays)] = (arrays, csr)
        return hit[1]

    def _has_edges(self, arrays: GraphArrays, timestamp: float | None) -> bool:
        """Whether any dependency of positive weight existed at ``timestamp``."""
        if self.tol is None:
            g, weights = self._graph(arrays, timestamp)
            return g.ecount() > 0 and any(weights)
        csr, before = self._csr(arrays), self._time_slices(arrays).key(timestamp)
        return bool(len(csr.order)) and (before is None or int(csr.order.min()) < before)

    @staticmethod
    def _build(arrays: GraphArrays, mask: np.ndarray | None = None) -> ig.Graph:
        n = len(arrays.entity_ids)
        src, dst = arrays.edge_source, arrays.edge_target
        weight = arrays.edge_confidence * arrays.edge_strength
        if mask is not None:
            src, dst, weight = src[mask], dst[mask], weight[mask]
        g = ig.Graph(n=n, edges=np.stack([src, dst], axis=1).tolist(), directed=False)
        g.es["weight"] = weight.astype(float).tolist()
        return g

    def _graph(self, arrays: GraphArrays, timestamp: float | None) -> tuple[ig.Graph, list[float]]:
        """The igraph graph (every edge, built once per graph) and the edge weights at ``timestamp``:
        ``confidence × strength`` for the edges that existed then, 0 for the others (a zero-weight edge
        carries no rank, so the result is PageRank on the past edges alone); the exact reference only."""
        slices = self._time_slices(arrays)
        hit = self._graphs.get(id(arrays))
        if hit is None or hit[0] is not arrays:
            hit = self._graphs[id(arrays)] = (arrays, self._build(arrays))
        g = hit[1]
        if slices.key(timestamp) is None:
            return g, g.es["weight"]

        def past_weights() -> list[float]:
            weight = (arrays.edge_confidence * arrays.edge_strength).astype(float)
            return np.where(slices.edge_mask(timestamp), weight, 0.0).tolist()

        return g, slices.cached("ppr_weights", timestamp, past_weights)

    def _context_rank(self, context: ScoringContext) -> np.ndarray | None:
        """The PageRank of the context's entries at its time (solved once per context, kept in its cache);
        ``None`` when no entry is in the graph or no edge of positive weight existed then."""
        a = context.arrays
        entries = [a.entity_index[e] for e in context.entries if e in a.entity_index]
        if not entries or not self._has_edges(a, context.timestamp):
            return None
        key = f"ppr:{context.timestamp}:" + ",".join(map(str, entries))
        if key not in context.cache:
            context.cache[key] = self._rank(a, context.timestamp, entries)
        return context.cache[key]

    def prefetch(self, query: Query, context: ScoringContext) -> None:
        """Solve the context's PageRank now (it reads only the entries and the time), so that a caller can do
        it while it waits for something else (the served path: while the floor's thread runs)."""
        self._context_rank(context)

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        a = context.arrays
        if not paths:
            return np.zeros(0)
        rank = self._context_rank(context)
        if rank is None:
            return np.zeros(len(paths))
        out = np.empty(len(paths), dtype=np.float64)
        mem_index = self._memory_index(a)
        for i, p in enumerate(paths):
            reached = [a.entity_index[e] for e in p.entities[1:]]
            if not reached and p.entities:
                reached = [a.entity_index[p.start]]
            if not reached:  # a memory path (flat hit, session step): the entities its memories mention
                rows = [mem_index[m] for m in p.memories if m in mem_index]
                reached = [int(e) for r in rows for e in a.entities_of(r).tolist()]
            out[i] = float(rank[np.asarray(reached, dtype=np.int64)].sum()) if reached else 0.0
        return out

    def _memory_index(self, arrays: GraphArrays) -> dict[str, int]:
        hit = self._mem_index.get(id(arrays))
        if hit is None or hit[0] is not arrays:
            hit = self._mem_index[id(arrays)] = (arrays, {str(m): i for i, m in enumerate(arrays.memory_ids)})
        return hit[1]

    def update(self, feedback: Any) -> None:
        return None


@register("random")
class RandomScorer:
    """Uniform random scores, seeded by (seed, query id): a reproducible floor."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.config: dict[str, Any] = {"seed": seed}

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        return None

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        digest = hashlib.sha256(f"{self.seed}:{query.id}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return rng.random(len(paths))

    def update(self, feedback: Any) -> None:
        return None
