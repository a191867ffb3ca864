"""A HippoRAG-style peer baseline: Personalized PageRank over the entity graph, passages by their entities'
mass (Gutiérrez et al., *HippoRAG*, 2024).

For a query, :class:`PPRRetriever`

1. finds the query's entities with :class:`~signet_rl.retrieval.entry.EntrySearch` (names, exact and
   keyword; with ``vector=True`` also by name embedding: HippoRAG links query entities to graph nodes by
   embedding similarity) — the ``seeds`` best, with their entry scores;
2. weights each seed by its score times its *node specificity* ``1 / |memories mentioning it|``
   (HippoRAG's IDF-like weight; ``specificity=False``: 1) and normalises the weights into the reset
   distribution ``r``;
3. runs Personalized PageRank on the undirected entity graph whose edges are the dependencies (on MuSiQue
   the OpenIE triples) weighted by ``confidence × strength``, plus, with ``comention=True``, one edge of
   weight ``comention_weight`` per memory that mentions both ends (the only links in a graph extracted
   without relations):

   .. math:: p = (1 - d)\\, r + d\\, P^\\top p, \\qquad P_{uv} = w_{uv} / \\textstyle\\sum_{v'} w_{uv'}

   with damping ``d`` (HippoRAG's 0.5), iterated on the CSR arrays (``np.bincount`` over the edge list, no
   Python loop over edges) until the L1 change is below ``tol``; a node without edges keeps its mass
   (its row of ``P`` is empty, so its teleport share stays with it: dangling mass returns to ``r``);
4. scores every memory visible at the query time by the PPR mass of the entities it mentions,
   ``s(m) = Σ_{e ∈ m} p_e`` (a sparse incidence product), and returns the memories in score order (ties by
   memory row) as ``Unit(kind="memory")`` with their whole text, fitted to the budget.

Only rows created at or before the query time count: edges and mentions written later are dropped from
the graph of that query (rebuilt once per distinct time that cuts anything, then cached). A query whose
entity search finds nothing returns ``[]``.

    >>> from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph, Memory, Mention
    >>> g = KnowledgeGraph.from_records(
    ...     entities=[Entity(id="a", name="alpha"), Entity(id="b", name="beta")],
    ...     dependencies=[Dependency(id="d", dependency_type="uses", source_entity_id="a",
    ...                              target_entity_id="b")],
    ...     memories=[Memory(id="m1", content="alpha text"), Memory(id="m2", content="beta text")],
    ...     mentions=[Mention(memory_id="m1", entity_id="a"), Mention(memory_id="m2", entity_id="b")])
    >>> ppr = PPRRetriever(vector=False, specificity=False)
    >>> ppr.index_graphs({"g": g})
    >>> [u.items[0] for u in ppr.retrieve(Query(id="q", text="alpha?", graph_id="g", split="test"))]
    ['m1', 'm2']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from signet_rl.core.checks import check_integer, check_range
from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.retrieval.entry import EntrySearch, _query_time
from signet_rl.text.terms import capped_query

__all__ = ["PPRRetriever", "personalized_pagerank"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def personalized_pagerank(
    n: int,
    src: IntArray,
    dst: IntArray,
    weight: FloatArray,
    reset: FloatArray,
    damping: float = 0.5,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> FloatArray:
    """PPR on the directed edge list ``src -> dst`` (pass both directions for an undirected graph).

    ``p = (1 - d) r + d (P^T p + dangling mass · r)``, with ``P`` the row-normalised weights and ``r`` the
    reset distribution (normalised here). Returns ``p`` (sums to 1), or zeros when ``reset`` is all zero.
    """
    r = np.asarray(reset, dtype=np.float64)
    total = r.sum()
    if n == 0 or total <= 0:
        return np.zeros(n)
    r = r / total
    w = np.asarray(weight, dtype=np.float64)
    out_w = np.bincount(src, weights=w, minlength=n)
    norm = np.where(out_w[src] > 0, w / np.where(out_w[src] > 0, out_w[src], 1.0), 0.0)
    dangling = out_w <= 0
    p = r.copy()
    for _ in range(max_iter):
        spread = np.bincount(dst, weights=norm * p[src], minlength=n)
        nxt = (1.0 - damping) * r + damping * (spread + p[dangling].sum() * r)
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


@dataclass
class _Graph:
    arrays: GraphArrays
    entry: EntrySearch
    texts: list[str]
    mem_created: FloatArray
    mem_ok: npt.NDArray[np.bool_]
    ment_mem: IntArray  # one row per mention
    ment_ent: IntArray
    ment_time: FloatArray
    edge_src: IntArray
    edge_dst: IntArray
    edge_w: FloatArray
    edge_time: FloatArray  # NaN: always there
    cache: dict[Any, tuple[IntArray, IntArray, FloatArray, IntArray, IntArray, FloatArray]]


class PPRRetriever:
    """HippoRAG-style Personalized PageRank retrieval (see the module docstring); a
    :class:`~signet_rl.retrieval.base.Retriever` for the same tables as the flat baselines.

    Args:
        damping: the PageRank damping ``d`` (HippoRAG: 0.5).
        seeds: most query entities seeding the walk.
        specificity: weight seeds by ``1 / |memories mentioning them|``.
        comention: add co-mention edges (entities mentioned by the same memory).
        comention_weight: weight of one co-mention.
        vector: entity linking also by name embedding (``encoder``).
        encoder: the encoder of entity linking.
        name: the name in result tables.

    Raises:
        ValueError: a damping outside (0, 1), ``seeds`` < 1 or a negative co-mention weight.
    """

    def __init__(
        self,
        damping: float = 0.5,
        seeds: int = 5,
        specificity: bool = True,
        comention: bool = True,
        comention_weight: float = 0.5,
        vector: bool = True,
        encoder: str = "hashing",
        name: str = "hipporag_ppr",
    ) -> None:
        check_range("damping", damping, 0, 1, lo_open=True, hi_open=True)
        check_integer("seeds", seeds, 1)
        check_range("comention_weight", comention_weight, 0)
        self.damping = float(damping)
        self.seeds = seeds
        self.specificity = specificity
        self.comention = comention
        self.comention_weight = float(comention_weight)
        self.vector = vector
        self.encoder = encoder
        self.name = name
        self._graphs: dict[str, _Graph] = {}

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name, "damping": self.damping, "seeds": self.seeds, "specificity": self.specificity,
            "comention": self.comention, "comention_weight": self.comention_weight, "vector": self.vector,
            "encoder": self.encoder,
        }  # fmt: skip

    def index(self, dataset: Dataset) -> None:
        """Build each graph's entity graph, incidence and entity search (never reading ground truth)."""
        self.index_graphs(dataset.graphs)

    def index_graphs(self, graphs: Mapping[str, KnowledgeGraph]) -> None:
        """:meth:`index` over a ``{graph_id: graph}`` mapping."""
        self._graphs = {gid: self._build(g) for gid, g in graphs.items()}

    def _build(self, graph: KnowledgeGraph) -> _Graph:
        a = GraphArrays.from_graph(graph)
        entry = EntrySearch(vector=self.vector, encoder=self.encoder).index(graph, a)
        texts = graph.memories.set_index("id")["content"].reindex(a.memory_ids).fillna("").astype(str)
        counts = np.diff(a.mem_ent_indptr)
        ment_mem = np.repeat(np.arange(a.num_memories, dtype=np.int64), counts)
        ment_ent = a.mem_ent.astype(np.int64)
        ment_time = a.memory_created[ment_mem] if len(ment_mem) else np.zeros(0)
        src, dst = a.edge_source.astype(np.int64), a.edge_target.astype(np.int64)
        w = (a.edge_confidence * a.edge_strength).astype(np.float64)
        etime = np.asarray(a.edge_created, dtype=np.float64)
        keep = src != dst
        return _Graph(
            arrays=a, entry=entry, texts=texts.tolist(), mem_created=a.memory_created,
            mem_ok=~a.memory_deleted, ment_mem=ment_mem, ment_ent=ment_ent, ment_time=ment_time,
            edge_src=src[keep], edge_dst=dst[keep], edge_w=w[keep], edge_time=etime[keep], cache={},
        )  # fmt: skip

    def _edges(
        self, g: _Graph, t: float | None
    ) -> tuple[IntArray, IntArray, FloatArray, IntArray, IntArray, FloatArray]:
        """The undirected edge list (both directions), the visible mentions and each entity's number of
        mentioning memories, at time ``t`` (cached per cut)."""
        cut_e = np.ones(len(g.edge_src), bool) if t is None else ~(g.edge_time > t)
        cut_m = g.mem_ok[g.ment_mem] & (np.ones(len(g.ment_mem), bool) if t is None else ~(g.ment_time > t))
        key = (int(cut_e.sum()), int(cut_m.sum()))
        hit = g.cache.get(key)
        if hit is not None:
            return hit
        src, dst, w = g.edge_src[cut_e], g.edge_dst[cut_e], g.edge_w[cut_e]
        mm, me = g.ment_mem[cut_m], g.ment_ent[cut_m]
        if self.comention and len(mm):
            # pairs of entities mentioned by the same memory: within each memory's (sorted) run of entities
            order = np.lexsort((me, mm))
            mm_s, me_s = mm[order], me[order]
            starts = np.flatnonzero(np.r_[True, mm_s[1:] != mm_s[:-1]])
            sizes = np.diff(np.r_[starts, len(mm_s)])
            pair_src: list[IntArray] = []
            pair_dst: list[IntArray] = []
            for k in range(1, int(sizes.max()) if len(sizes) else 0):
                i = np.flatnonzero(np.r_[mm_s[k:] == mm_s[:-k], np.zeros(k, bool)])
                pair_src.append(me_s[i])
                pair_dst.append(me_s[i + k])
            if pair_src:
                cs, cd = np.concatenate(pair_src), np.concatenate(pair_dst)
                keep = cs != cd
                src = np.concatenate([src, cs[keep]])
                dst = np.concatenate([dst, cd[keep]])
                w = np.concatenate([w, np.full(int(keep.sum()), self.comention_weight)])
        n = g.arrays.num_entities
        nmem = np.bincount(me, minlength=n).astype(np.float64)
        out = (np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w]), mm, me, nmem)
        g.cache[key] = out
        return out

    def scores(self, query: Query) -> FloatArray:
        """Every memory's PPR score for ``query`` (0 for memories it may not see). Shape ``[K]``.

        Raises:
            ValueError: a graph that was not indexed (naming it).
        """
        g = self._graph(query.graph_id)
        a = g.arrays
        out = np.zeros(a.num_memories)
        query = capped_query(query)
        if not query.text.strip():
            return out
        found = g.entry.search(query.text, k=self.seeds, timestamp=query.timestamp)
        if not found:
            return out
        t = _query_time(query.timestamp)
        src, dst, w, mm, me, nmem = self._edges(g, t)
        reset = np.zeros(a.num_entities)
        for eid, s in found:
            e = a.entity_index[eid]
            reset[e] = s / max(nmem[e], 1.0) if self.specificity else s
        p = personalized_pagerank(a.num_entities, src, dst, w, reset, self.damping)
        out = np.bincount(mm, weights=p[me], minlength=a.num_memories)
        visible = g.mem_ok if t is None else g.mem_ok & ~(g.mem_created > t)
        return np.where(visible, out, 0.0)

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        """Memories by PPR score (positive scores only), best first, fitted to ``budget_chars``."""
        g = self._graph(query.graph_id)
        s = self.scores(query)
        rows = np.flatnonzero(s > 0)
        rows = rows[np.lexsort((rows, -s[rows]))]
        units = [
            Unit(
                text=g.texts[r], items=(str(g.arrays.memory_ids[r]),), score=float(s[r]), kind="memory",
                meta={"source": "ppr"},
            )
            for r in rows.tolist()
        ]
        return fit_budget(units, budget_chars) if budget_chars is not None else units

    def _graph(self, graph_id: str) -> _Graph:
        if not self._graphs:
            raise RuntimeError(f"{self.name}: call index(dataset) before retrieve()")
        try:
            return self._graphs[graph_id]
        except KeyError:
            raise ValueError(f"{self.name}: graph {graph_id!r} was not indexed") from None
