"""Desire edges: shortcuts from a query's entry entities to the memories its ratings said helped, learned
online, and the flat competitor that learns from the same ratings (issue 24, the prequential evaluation).

:class:`DesireEdges` keeps, for one graph, a sparse weight per (entry entity, memory) pair, ``w[e, m]``.
When a query that entered the graph at the entities ``E`` had a unit injected that carries the memory ``m``
(for a walked path, the path's own entities join ``E``) and the rater rated it ``r ∈ [-1, 1]``, every pair
``(e, m)``, ``e ∈ E``, moves as :class:`~signet_rl.learning.reinforcement.EdgeStats` moves a dependency edge:

.. math::

    w \\leftarrow \\operatorname{clip}\\big(w \\cdot e^{\\,\\mathrm{lr} \\cdot r},\\ \\mathrm{floor},\\
        \\mathrm{ceiling}\\big)

starting at ``init`` (1.0, neutral: a pair never rated is no edge at all), and pairs not rated in a step
cool toward ``init`` by the share ``cool``. The *desire* of a memory for a query entering at ``E`` is
``sum_{e in E} idf(e) · log w[e, m]``: 0 for a memory no rating touched, positive along a worn shortcut,
negative where ratings said "noise" or "misleading". With ``conditioned=False`` every query enters at one
key, and the desire is a memory-level rating statistic (what a flat retriever with feedback can keep): the
ablation that isolates what the graph conditioning adds.

:class:`OnlineDesire` puts a :class:`DesireEdges` per graph behind a
:class:`~signet_rl.pipeline.desire.DesirePathRetriever` over the hybrid entry:

* (a) memories reachable from the query's entries by a desire edge of positive weight join the candidates
  as ``desire`` paths ``E:<entry>>M:<memory>`` (at most ``max_paths``; ``DesirePathRetriever.desire_fn``);
* (b) every candidate's score becomes ``z(score) + beta · desire`` with ``z`` the scorer's scores
  standardised over the query's candidates (:class:`DesireBoost`), so ``beta`` reads on one scale whatever
  the scorer.

:class:`FlatFeedback` is the flat competitor: ``best_flat``'s deeper ranking (the hybrid floor's depth),
re-ranked by ``z(fused) + beta · boost`` with a memory-level :class:`DesireEdges` (``variant="memory"``) or a
query-conditioned nearest-neighbour memory of past ratings (``variant="knn"``: the ratings of the ``k``
most similar earlier queries, weighted by their similarity).

Nothing here reads ground truth: ratings come from the caller (the simulated rater lives in
:mod:`signet_rl.rating` and the loop in :mod:`signet_rl.evaluation.online`).

    >>> edges = DesireEdges(num_entities=3, num_memories=4)
    >>> edges.reinforce([0], [2], +1).tolist()  # the edge slot it touched
    [0]
    >>> edges.desire([0]).round(3).tolist()
    [0.0, 0.0, 0.2, 0.0]
    >>> edges.shortcuts([0]).tolist(), edges.shortcuts([1]).tolist()
    ([2], [])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from signet_rl.core.checks import check_integer, check_probability, check_range
from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.retrieval.base import Retriever
from signet_rl.retrieval.flat import BEST_FLAT, flat_variant
from signet_rl.text.encoders import encode_query, make_encoder
from signet_rl.traversal.path import Hop, HopKind, Path

__all__ = ["IDF_MODES", "DesireBoost", "DesireEdges", "FlatFeedback", "OnlineDesire", "standardise"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def standardise(scores: npt.ArrayLike) -> FloatArray:
    """``scores`` minus their mean over their standard deviation (zeros when they are all equal).

    >>> standardise([1.0, 2.0, 3.0]).round(3).tolist()
    [-1.225, 0.0, 1.225]
    """
    s = np.asarray(scores, dtype=np.float64)
    if len(s) == 0:
        return s
    sd = float(s.std())
    return (s - s.mean()) / sd if sd > 1e-12 else np.zeros_like(s)


class DesireEdges:
    """Learned (entry entity -> memory) desire weights of one graph (see the module docstring).

    Args:
        num_entities: the graph's entity count (entity rows of its :class:`GraphArrays`).
        num_memories: its memory count (memory rows).
        lr: step size of the multiplicative update, ``> 0``.
        floor: lowest weight, in ``(0, init]``.
        ceiling: highest weight, ``>= init``.
        cool: share of the distance to ``init`` a pair not rated in a step recovers (:meth:`cool`).
        init: the neutral weight.
        conditioned: key the weights by entry entity; ``False``: one key for every query (memory level).
        idf: weight each entry's desire by ``log(1 + M / (1 + n_e))`` so an entity in every question (a
            speaker) counts less: ``none`` (weight 1), ``reach`` (``n_e`` the memories its edges of positive
            weight reach), ``df`` (``n_e`` the memories that mention it, ``entity_df``).
        entity_df: memories mentioning each entity, ``[num_entities]`` (needed by ``idf="df"``).

    Attributes:
        src, dst, w: the edges (entity key, memory row, weight), ``[n]`` each, in creation order.

    Raises:
        ValueError: a hyperparameter out of range, naming it.
    """

    def __init__(
        self,
        num_entities: int,
        num_memories: int,
        lr: float = 0.2,
        floor: float = 0.2,
        ceiling: float = 3.0,
        cool: float = 0.0,
        init: float = 1.0,
        conditioned: bool = True,
        idf: str = "none",
        entity_df: npt.ArrayLike | None = None,
    ) -> None:
        check_integer("num_entities", num_entities, 0)
        if idf not in IDF_MODES:
            raise ValueError(f"idf={idf!r}: known modes are {', '.join(IDF_MODES)}")
        if idf == "df" and entity_df is None:
            raise ValueError("idf='df' needs entity_df (the memories mentioning each entity)")
        check_integer("num_memories", num_memories, 0)
        check_range("lr", lr, 0.0, None, lo_open=True)
        check_range("floor", floor, 0.0, init, lo_open=True)
        check_range("ceiling", ceiling, init, None)
        check_probability("cool", cool)
        self.num_entities = num_entities
        self.num_memories = num_memories
        self.lr, self.floor, self.ceiling, self.cool_rate, self.init = lr, floor, ceiling, cool, init
        self.conditioned = bool(conditioned)
        self.idf = idf
        self.entity_df = None if entity_df is None else np.asarray(entity_df, dtype=np.float64)
        self._slot: dict[tuple[int, int], int] = {}
        self._of: dict[int, list[int]] = {}
        self.src = np.zeros(0, dtype=np.int64)
        self.dst = np.zeros(0, dtype=np.int64)
        self.w = np.zeros(0, dtype=np.float64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _keys(self, entities: Sequence[int] | npt.ArrayLike) -> list[int]:
        if not self.conditioned:
            return [0]
        keys = [int(e) for e in np.asarray(entities, dtype=np.int64).reshape(-1)]
        for e in keys:
            if not 0 <= e < self.num_entities:
                raise ValueError(f"entity row {e} is outside this graph's {self.num_entities} entities")
        return list(dict.fromkeys(keys))

    def _new(self, e: int, m: int) -> int:
        if self._n == len(self.w):  # grow the arrays (amortised doubling)
            size = max(16, 2 * len(self.w))
            self.src = np.resize(self.src, size)
            self.dst = np.resize(self.dst, size)
            self.w = np.resize(self.w, size)
        i = self._n
        self.src[i], self.dst[i], self.w[i] = e, m, self.init
        self._n += 1
        self._slot[(e, m)] = i
        self._of.setdefault(e, []).append(i)
        return i

    def reinforce(self, entities: Sequence[int] | npt.ArrayLike, memories: Sequence[int] | npt.ArrayLike,
                  rating: float) -> IntArray:  # fmt: skip
        """Move every pair (entry key, memory) by ``rating`` (each pair once); returns the edge slots it
        touched. A zero rating touches the pairs without moving them (they are rated, so they do not cool).

        Raises:
            ValueError: a rating outside [-1, 1] or a row outside the graph, naming it.
        """
        if not -1.0 <= float(rating) <= 1.0:
            raise ValueError(f"rating {rating!r} must be in [-1, 1]")
        mems = list(dict.fromkeys(int(m) for m in np.asarray(memories, dtype=np.int64).reshape(-1)))
        for m in mems:
            if not 0 <= m < self.num_memories:
                raise ValueError(f"memory row {m} is outside this graph's {self.num_memories} memories")
        slots = []
        factor = math.exp(self.lr * float(rating))
        for e in self._keys(entities):
            for m in mems:
                i = self._slot.get((e, m))
                if i is None:
                    if rating == 0:
                        continue  # no edge to create for a pair that gained nothing
                    i = self._new(e, m)
                self.w[i] = min(max(self.w[i] * factor, self.floor), self.ceiling)
                slots.append(i)
        return np.asarray(slots, dtype=np.int64)

    def cool(self, touched: npt.ArrayLike | None = None) -> None:
        """One step of cooling: every edge not in ``touched`` relaxes toward ``init`` by ``cool``."""
        if self.cool_rate <= 0 or not self._n:
            return
        mask = np.ones(self._n, dtype=bool)
        if touched is not None:
            mask[np.asarray(touched, dtype=np.int64)] = False
        w = self.w[: self._n]
        w[mask] = self.init + (1.0 - self.cool_rate) * (w[mask] - self.init)

    def _idf(self, e: int) -> float:
        if self.idf == "none" or not self.conditioned:
            return 1.0
        if self.idf == "df":
            assert self.entity_df is not None
            n = float(self.entity_df[e])
        else:
            slots = self._of.get(e, [])
            n = float((self.w[slots] > self.init).sum()) if slots else 0.0
        return math.log(1.0 + self.num_memories / (1.0 + n))

    def desire(self, entities: Sequence[int] | npt.ArrayLike) -> FloatArray:
        """The desire of every memory for a query entering at ``entities``: ``sum idf(e) · log w[e, m]``,
        0 where no edge. Shape ``[num_memories]``."""
        out = np.zeros(self.num_memories, dtype=np.float64)
        for e in self._keys(entities):
            slots = self._of.get(e)
            if not slots:
                continue
            idx = np.asarray(slots, dtype=np.int64)
            np.add.at(out, self.dst[idx], self._idf(e) * np.log(self.w[idx] / self.init))
        return out

    def shortcuts(self, entities: Sequence[int] | npt.ArrayLike, k: int = 10) -> IntArray:
        """The memories (rows) with positive desire for a query entering at ``entities``, the most desired
        first (ties by row), at most ``k``."""
        d = self.desire(entities)
        rows = np.flatnonzero(d > 1e-12)
        order = np.lexsort((rows, -d[rows]))
        return rows[order][:k]


class _Graphs:
    """Per-graph lookups shared by the online learners (memory and entity rows of a :class:`GraphArrays`)."""

    def __init__(self, arrays: GraphArrays) -> None:
        self.arrays = arrays
        self.memory = {str(m): i for i, m in enumerate(arrays.memory_ids.tolist())}
        self.attribute = {str(t): i for i, t in enumerate(arrays.attribute_ids.tolist())}

    def rows(self, ids: Sequence[str]) -> list[int]:
        """Memory rows of memory ids (attribute ids count as the memory they were drawn from)."""
        out = []
        for i in ids:
            m = self.memory.get(str(i))
            if m is None:
                t = self.attribute.get(str(i))
                if t is not None and self.arrays.attr_memory[t] >= 0:
                    m = int(self.arrays.attr_memory[t])
            if m is not None:
                out.append(m)
        return list(dict.fromkeys(out))

    def path_row(self, path: Path) -> int:
        """The memory row a path's unit carries (its last memory hop, or its last attribute's memory); -1."""
        for hop in reversed(path.hops):
            if hop.kind is HopKind.MEMORY:
                return self.memory.get(hop.id, -1)
            if hop.kind is HopKind.ATTRIBUTE:
                rows = self.rows([hop.id])
                return rows[0] if rows else -1
        return -1


#: How :class:`DesireEdges` weighs each entry entity.
IDF_MODES: tuple[str, ...] = ("none", "reach", "df")


class OnlineDesire:
    """Desire edges learned online behind a desire-path retriever (see the module docstring).

    Args:
        beta: weight of the desire in ``z(score) + beta · desire``.
        max_paths: most desire candidates per query (0: none join the pool; the boost still applies).
        conditioned, idf, lr, floor, ceiling, cool: :class:`DesireEdges`'s.
        knn: ``> 0``: condition on the query itself instead of its entries — a memory's desire is the
            similarity-weighted mean rating it got from the ``knn`` earlier queries of the graph most similar
            to this one (cosine of ``encoder`` vectors, positive only), as ``FlatFeedback``'s ``knn``
            variant; the shortcuts are the memories of positive desire. ``0``: the desire edges.
        encoder: the ``knn`` mode's query encoder.
    """

    def __init__(
        self,
        beta: float = 1.0,
        max_paths: int = 10,
        conditioned: bool = True,
        idf: str = "none",
        lr: float = 0.2,
        floor: float = 0.2,
        ceiling: float = 3.0,
        cool: float = 0.0,
        knn: int = 0,
        encoder: str = "minilm",
    ) -> None:
        check_range("beta", beta, 0.0, None)
        check_integer("max_paths", max_paths, 0)
        check_integer("knn", knn, 0)
        self.knn = knn
        self.encoder_name = encoder
        self._encoder: Any = None
        self._past: dict[str, tuple[list[np.ndarray], list[dict[int, float]]]] = {}
        self.beta = float(beta)
        self.max_paths = max_paths
        self.options = {"conditioned": conditioned, "idf": idf, "lr": lr, "floor": floor, "ceiling": ceiling,
                        "cool": cool}  # fmt: skip
        DesireEdges(0, 0, entity_df=np.zeros(0), **self.options)  # checks the options now
        self.edges: dict[str, DesireEdges] = {}
        self._graphs: dict[str, _Graphs] = {}
        self._arrays_of: Any = None
        self._policy: Any = None
        #: Each query's candidates and scoring context, kept by :class:`DesireBoost` for :meth:`learn`.
        self.last: dict[str, tuple[list[Path], Any]] = {}

    def attach(self, retriever: Any) -> Any:
        """Put these desire edges behind ``retriever`` (a hybrid
        :class:`~signet_rl.pipeline.desire.DesirePathRetriever`): its ``desire_fn`` offers the shortcuts,
        its scorer is wrapped in :class:`DesireBoost`. Returns the retriever."""
        self._arrays_of = lambda gid: retriever._state(gid).arrays
        self._policy = retriever.scorer
        retriever.desire_fn = self.candidates
        retriever.scorer = DesireBoost(retriever.scorer, self)
        return retriever

    def learn(self, query: Query, units: Sequence[Unit], ratings: Sequence[float | None],
              reinforce_walks: bool = True) -> None:  # fmt: skip
        """After the attached retriever answered ``query`` with ``units`` and they were rated: the desire
        edges learn (:meth:`feedback`), and with ``reinforce_walks`` the wrapped policy's dependency-edge
        statistics too (``ServedPolicy.feedback(..., learn_scorer=False)``: the scorer's weights stay
        frozen), as the service learns from ratings."""
        got = self.last.pop(query.id, None)
        if got is None:
            return  # nothing was scored for it (an empty query, or no candidates)
        paths, context = got
        self.feedback(query, context.entries, units, ratings)
        feedback = getattr(self._policy, "feedback", None)
        if not reinforce_walks or feedback is None:
            return
        from signet_rl.scorers.base import Feedback

        where = {p.id: i for i, p in enumerate(paths)}
        shown, rated = [], []
        for u, r in zip(units, ratings, strict=True):
            i = where.get(str(u.meta.get("path_id")))
            if i is not None:
                shown.append(i)
                rated.append(None if r is None else int(r))
        if shown:
            feedback([Feedback(query, paths, context, shown, rated)], learn_scorer=False)

    def graph(self, graph_id: str, arrays: GraphArrays | None = None) -> tuple[DesireEdges, _Graphs]:
        """The graph's desire edges and lookups (created on first use, neutral)."""
        if graph_id not in self.edges:
            a = arrays if arrays is not None else self._arrays_of(graph_id)
            df = np.fromiter((len(a.memories_of(e)) for e in range(len(a.entity_ids))), np.float64,
                             len(a.entity_ids))  # fmt: skip
            self.edges[graph_id] = DesireEdges(
                len(a.entity_ids), len(a.memory_ids), entity_df=df, **self.options
            )
            self._graphs[graph_id] = _Graphs(a)
        return self.edges[graph_id], self._graphs[graph_id]

    def entry_rows(self, graph_id: str, entries: Sequence[str]) -> list[int]:
        _, g = self.graph(graph_id)
        index = g.arrays.entity_index
        return [int(index[e]) for e in entries if e in index]

    def candidates(self, query: Query, entries: list[str]) -> list[tuple[Path, int]]:
        """The query's worn shortcuts as candidates ``E:<entry>>M:<memory>`` (strategy ``desire``), the most
        desired first; the entry named is the one whose edge to the memory weighs most."""
        if self.max_paths == 0:
            return []
        edges, g = self.graph(query.graph_id)
        rows = self.entry_rows(query.graph_id, entries)
        if self.knn:
            d = self._knn_desire(query)
            pos = np.flatnonzero(d > 1e-12)
            found = pos[np.lexsort((pos, -d[pos]))][: self.max_paths].tolist()
        elif not rows and edges.conditioned:
            return []
        else:
            found = edges.shortcuts(rows, self.max_paths).tolist()
        out = []
        for m in found:
            best, start = -np.inf, None
            for e in rows:
                i = edges._slot.get((e if edges.conditioned else 0, m))
                if i is not None and edges.w[i] > best:
                    best, start = edges.w[i], e
            if start is None:  # memory level: start at the first entry, or at the memory itself
                start = rows[0] if rows else None
            mem = Hop.memory(str(g.arrays.memory_ids[m]))
            hops = (Hop.entity(str(g.arrays.entity_ids[start])), mem) if start is not None else (mem,)
            out.append((Path(hops, strategy="desire"), m))
        return out

    def boost(self, query: Query, entries: Sequence[str], paths: Sequence[Path]) -> FloatArray:
        """Each candidate's desire for this query (its memory's; 0 for a path that carries none)."""
        edges, g = self.graph(query.graph_id)
        if self.knn:
            d = self._knn_desire(query)
        elif not len(edges):
            return np.zeros(len(paths))
        else:
            d = edges.desire(self.entry_rows(query.graph_id, entries))
        rows = np.asarray([g.path_row(p) for p in paths], dtype=np.int64)
        return np.where(rows >= 0, d[np.maximum(rows, 0)], 0.0)

    def feedback(self, query: Query, entries: Sequence[str], units: Sequence[Unit],
                 ratings: Sequence[float | None]) -> None:  # fmt: skip
        """Learn from the ratings of the units injected for ``query`` (entered at ``entries``): each rated
        unit's memories move the edges from the entries (and, for a walked path, from its own entities);
        then one cooling step for the edges no rating touched."""
        edges, g = self.graph(query.graph_id)
        touched: list[IntArray] = []
        base = self.entry_rows(query.graph_id, entries)
        for unit, r in zip(units, ratings, strict=True):
            if r is None:
                continue
            mems = g.rows([str(m) for m in unit.meta.get("memories", ())] or [str(i) for i in unit.items])
            if not mems:
                continue
            keys = list(base)
            path = unit.meta.get("path")
            if isinstance(path, str) and edges.conditioned:
                keys += [g.arrays.entity_index[e] for e in Path.parse(path).entities
                         if e in g.arrays.entity_index]  # fmt: skip
            if keys or not edges.conditioned:
                touched.append(edges.reinforce(keys, mems, float(r)))
        edges.cool(np.concatenate(touched) if touched else None)
        if self.knn:
            rated: dict[int, float] = {}
            for unit, r in zip(units, ratings, strict=True):
                if r is not None:
                    ids = [str(x) for x in unit.meta.get("memories", ())] or [str(x) for x in unit.items]
                    rated.update(dict.fromkeys(g.rows(ids), float(r)))
            if rated:
                vecs, past = self._past.setdefault(query.graph_id, ([], []))
                vecs.append(self._vector(query))
                past.append(rated)

    def _vector(self, query: Query) -> np.ndarray:
        if self._encoder is None:
            self._encoder = make_encoder(self.encoder_name)
        return np.asarray(encode_query(self._encoder, query.text[:1000]), dtype=np.float64)

    def _knn_desire(self, query: Query) -> FloatArray:
        """The ``knn`` mode's desire of every memory of the query's graph (see the class docstring)."""
        edges, _ = self.graph(query.graph_id)
        out = np.zeros(edges.num_memories, dtype=np.float64)
        vecs, past = self._past.get(query.graph_id, ([], []))
        if not vecs:
            return out
        sims = np.asarray(vecs) @ self._vector(query)
        near = [j for j in np.argsort(-sims, kind="stable")[: self.knn].tolist() if sims[j] > 0]
        den = float(sum(sims[j] for j in near))
        for j in near:
            for m, r in past[j].items():
                out[m] += float(sims[j]) * r / den
        return out


class DesireBoost:
    """A scorer whose scores are another's standardised per query plus ``beta`` times the candidates'
    desire (:meth:`OnlineDesire.boost`); everything else is the wrapped scorer's."""

    def __init__(self, base: Any, online: OnlineDesire) -> None:
        self.base = base
        self.online = online

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def score(self, query: Query, paths: Sequence[Path], context: Any) -> FloatArray:
        s = np.asarray(self.base.score(query, paths, context), dtype=np.float64)
        self.online.last[query.id] = (list(paths), context)
        if self.online.beta == 0 or not len(paths):
            return s
        return standardise(s) + self.online.beta * self.online.boost(query, context.entries, paths)


class FlatFeedback:
    """``best_flat``'s deeper ranking re-ranked by the ratings of its own injected units (no graph).

    For each query: flat's ranking to the hybrid floor's depth (every unit flat injects at the budget,
    then more while at most ``depth`` units and ``depth_budgets`` budgets of text), re-ranked by
    ``z(fused) + beta · boost``, optionally under flat's head (the units that fit ``keep`` × the budget stay
    first, in flat's order, as the learned desire retriever's ``floor_keep``), fitted to the budget.

    Args:
        beta: weight of the rating statistic.
        variant: ``memory`` — a memory-level :class:`DesireEdges` (``log w[m]``); ``knn`` — the ratings of
            the ``k`` earlier queries most similar to this one (cosine of ``encoder`` vectors, positive
            only), averaged with their similarities as weights, per memory.
        keep: share of the budget that keeps flat's head.
        depth, depth_budgets: the re-ranked depth.
        k: neighbours of the ``knn`` variant.
        encoder: the ``knn`` variant's query encoder.
        flat: the flat retriever (default ``best_flat``).
        lr, floor, ceiling, cool: the ``memory`` variant's :class:`DesireEdges` options.
    """

    VARIANTS = ("memory", "knn")

    def __init__(
        self,
        beta: float = 1.0,
        variant: str = "memory",
        keep: float = 0.0,
        depth: int = 30,
        depth_budgets: float = 3.0,
        k: int = 10,
        encoder: str = "minilm",
        flat: Retriever | str = BEST_FLAT,
        name: str = "flat_feedback",
        lr: float = 0.2,
        floor: float = 0.2,
        ceiling: float = 3.0,
        cool: float = 0.0,
    ) -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"FlatFeedback: unknown variant {variant!r}; known: {', '.join(self.VARIANTS)}")
        check_range("beta", beta, 0.0, None)
        check_probability("keep", keep)
        check_integer("depth", depth, 1)
        check_integer("k", k, 1)
        self.beta, self.variant, self.keep, self.depth, self.depth_budgets, self.k = (
            float(beta), variant, float(keep), depth, float(depth_budgets), k)  # fmt: skip
        self.encoder_name = encoder
        self.flat = flat_variant(flat) if isinstance(flat, str) else flat
        self.name = name
        self.options = {"lr": lr, "floor": floor, "ceiling": ceiling, "cool": cool}
        self.online = OnlineDesire(beta=beta, max_paths=0, conditioned=False, **self.options)
        self._past: dict[str, tuple[list[np.ndarray], list[dict[int, float]]]] = {}
        self._encoder: Any = None
        self._dataset: Dataset | None = None

    def index(self, dataset: Dataset) -> None:
        if getattr(self.flat, "_floor_indexed", None) is not dataset:
            self.flat.index(dataset)
            self.flat._floor_indexed = dataset  # type: ignore[attr-defined]
        self._dataset = dataset
        self._arrays = {gid: GraphArrays.from_graph(g) for gid, g in dataset.graphs.items()}
        self.online._arrays_of = self._arrays.__getitem__
        if self.variant == "knn" and self._encoder is None:
            self._encoder = make_encoder(self.encoder_name)

    def _depth(self, units: list[Unit], budget: int) -> list[Unit]:
        injected = {id(u) for u in fit_budget(list(units), budget)}
        out, used = [], 0
        for u in units:
            must = id(u) in injected
            if not must and (len(out) >= self.depth or used + u.chars > self.depth_budgets * budget):
                continue
            used += u.chars
            out.append(u)
        return out

    def _boost(self, query: Query, units: list[Unit]) -> FloatArray:
        _, g = self.online.graph(query.graph_id)
        rows = [g.rows([str(i) for i in u.items]) for u in units]
        if self.variant == "memory":
            d = self.online.edges[query.graph_id].desire([])
            return np.asarray([max((d[m] for m in r), default=0.0, key=abs) for r in rows])
        vecs, rated = self._past.get(query.graph_id, ([], []))
        if not vecs:
            return np.zeros(len(units))
        qv = np.asarray(encode_query(self._encoder, query.text[:1000]), dtype=np.float64)
        sims = np.asarray(vecs, dtype=np.float64) @ qv
        near = [j for j in np.argsort(-sims, kind="stable")[: self.k].tolist() if sims[j] > 0]
        num: dict[int, float] = {}
        den = sum(float(sims[j]) for j in near)
        for j in near:
            for m, r in rated[j].items():
                num[m] = num.get(m, 0.0) + float(sims[j]) * r
        return np.asarray([sum(num.get(m, 0.0) for m in r) / den if den > 0 else 0.0 for r in rows])

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        from signet_rl.core.types import DEFAULT_BUDGET_CHARS

        budget = DEFAULT_BUDGET_CHARS if budget_chars is None else budget_chars
        units = self._depth(list(self.flat.retrieve(query, None)), budget)
        if not units:
            return []
        score = standardise([float(u.score) for u in units])
        if self.beta > 0:
            score = score + self.beta * self._boost(query, units)
        head: list[Unit] = []
        if self.keep > 0:
            head = fit_budget(list(units), int(self.keep * budget))
        ids = {id(u) for u in head}
        rest = [units[i] for i in np.argsort(-score, kind="stable").tolist() if id(units[i]) not in ids]
        return fit_budget(head + rest, budget)

    def feedback(self, query: Query, units: Sequence[Unit], ratings: Sequence[float | None]) -> None:
        """Learn from the ratings of the units this retriever injected for ``query``."""
        if self.variant == "memory":
            self.online.feedback(query, [], units, ratings)
            return
        _, g = self.online.graph(query.graph_id)
        rated: dict[int, float] = {}
        for u, r in zip(units, ratings, strict=True):
            if r is not None:
                for m in g.rows([str(i) for i in u.items]):
                    rated[m] = float(r)
        if rated:
            vecs, past = self._past.setdefault(query.graph_id, ([], []))
            vecs.append(np.asarray(encode_query(self._encoder, query.text[:1000]), dtype=np.float64))
            past.append(rated)

    def config_dict(self) -> Mapping[str, Any]:
        return {"beta": self.beta, "variant": self.variant, "keep": self.keep, "depth": self.depth,
                "depth_budgets": self.depth_budgets, "k": self.k, **self.options}  # fmt: skip
