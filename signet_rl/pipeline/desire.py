"""Desire-path retrieval without learning: entry search, intent, bounded walk, scorer, constructed memories.

For each query: the significance gate / intent classifier decides the shape (a non-query walks nothing);
entry search lands on the entities the query is about (the best one, or the best two for *relate*, plus any
within ``entry_ratio`` of the best score); the traverser enumerates candidate paths with the intent's
strategy; the scorer ranks them; and :func:`~signet_rl.traversal.construct.build_slate` turns them into the
constraints section plus one constructed memory per path, fitted to the budget. Nothing here reads ground
truth: the intent is predicted, the entries are searched.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from signet_rl.core.checks import check_integer, check_probability
from signet_rl.core.timing import StageTimer, stage
from signet_rl.core.types import DEFAULT_BUDGET_CHARS, Query, Unit
from signet_rl.datasets.base import Dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.pipeline.hybrid import (
    HybridEntry,
    Pool,
    density_order,
    floor_first,
    floor_head,
    floor_part,
    floor_share_first,
)
from signet_rl.retrieval.base import Retriever
from signet_rl.retrieval.entry import EntrySearch
from signet_rl.retrieval.flat import BEST_FLAT, flat_variant
from signet_rl.retrieval.intent import IntentClassifier, RuleIntentClassifier
from signet_rl.scorers.base import PathScorer, ScoringContext, forget_arrays, make_scorer
from signet_rl.text.encoders import CachedEncoder, encode_query, make_encoder
from signet_rl.text.terms import capped_query, clean_text
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.construct import MemoryBuilder, build_slate
from signet_rl.traversal.path import Path as PathType
from signet_rl.traversal.walk import STRATEGIES, EdgeWeight, Traverser, Walk

__all__ = ["Candidates", "DesireFn", "DesirePathRetriever", "EdgeWeightFn", "memory_builder"]


def _entry_vector(state: _GraphState, text: str, qv: np.ndarray) -> np.ndarray | None:
    """``qv`` (the state encoder's vector of ``text[:1000]``) when entry search would encode that very text
    with that very encoder, so the query is encoded once; else ``None`` (entry search encodes its own)."""
    entry = state.entry
    if entry.encoder is not state.encoder:
        return None
    return qv if clean_text(text)[: entry.max_query_chars] == text[:1000] else None


def memory_builder(graph: KnowledgeGraph) -> MemoryBuilder:
    """The :class:`MemoryBuilder` the retriever constructs ``graph``'s memories with. A pure KG (entities and
    typed relations only, no facts, no source passages) answers with entities: its constructed memories list
    the entities they reach as items."""
    kg_only = graph.attributes.empty and "dependency_memory" not in graph.meta
    return MemoryBuilder(graph, entity_items=kg_only)


class _GraphState:
    def __init__(self, graph: KnowledgeGraph, config: TraversalConfig, encoder: str, relevance: bool) -> None:
        self.graph = graph
        self.arrays = GraphArrays.from_graph(graph)
        self.traverser = Traverser(self.arrays, graph, config)
        self.builder = memory_builder(graph)
        self.entry = EntrySearch(encoder=encoder).index(graph, self.arrays)
        self.encoder = self.entry.encoder or make_encoder(encoder)
        # Attribute vectors in arrays order, for ranking an aspect's facts against the query.
        self.attr_vectors: np.ndarray | None = None
        if relevance and len(self.arrays.attribute_ids):
            content = graph.attributes.set_index("id")["content"]
            texts = content.reindex(self.arrays.attribute_ids).fillna("").astype(str).tolist()
            self.attr_vectors = CachedEncoder(self.encoder).encode(texts)
        self.hybrid = (
            HybridEntry(graph, self.arrays, self.builder, self.encoder, config.session_source)
            if config.hybrid
            else None
        )
        self.conf_ok = self.arrays.dep_confidence >= config.min_confidence


@dataclass
class Candidates:
    """One query's candidates before scoring (see :meth:`DesirePathRetriever.candidates`)."""

    intent: str
    entries: list[str]
    walk: Walk
    context: ScoringContext
    #: The hybrid entry's candidate set (floor, session steps, entity walks), when it is on; ``walk.paths``
    #: then holds the same paths.
    pool: Pool | None = None
    #: The flat retriever's units for the query (the hybrid entry's floor source), so a caller that also
    #: shows flat's results (the service's online comparison) need not run flat a second time.
    flat_units: list[Unit] | None = None


#: ``edge_weight_fn(graph_id, intent, timestamp) -> EdgeWeight | None``: learned desire-path edge order.
EdgeWeightFn = Callable[[str, str, Any], EdgeWeight | None]
#: ``desire_fn(query, entries) -> [(path, memory row), ...]``: worn shortcuts (learned online from ratings)
#: that join the hybrid entry's candidates (:meth:`~signet_rl.pipeline.hybrid.HybridEntry.pool`).
DesireFn = Callable[[Query, list[str]], list[tuple[PathType, int]]]


class DesirePathRetriever:
    """The desire-paths pipeline as a :class:`~signet_rl.retrieval.base.Retriever`.

    Args:
        scorer: a :class:`~signet_rl.scorers.base.PathScorer` or its registered name (``prior``, ``ppr``,
            ``random``).
        config: traversal budgets, or a mapping of overrides (a dataset config's ``traversal`` block) on
            top of the traversal a loaded scorer was trained with (its ``traversal``, see
            :meth:`~signet_rl.scorers.gnn.GNNPathScorer.load`), else of :class:`TraversalConfig`'s defaults.
        classifier: predicts the intent (default: the rule-based classifier).
        encoder: the encoder of entry search and of attribute relevance.
        relevance: order each aspect's facts by their similarity to the query (else by importance), so an
            aspect with hundreds of facts contributes the ones the query is about.
        entry_k: most entry entities per query.
        entry_ratio: extra entries must score at least this share of the best entry's score.
        name: the name in result tables.
        flat: the flat retriever of the hybrid entry (its hits are the floor, the session steps' anchors
            and the entity walks' sources): a :class:`~signet_rl.retrieval.base.Retriever` or a flat variant
            name (default ``best_flat``, frozen per dataset family). Used only when the traversal config
            switches a hybrid piece on (``floor``, ``session``, ``entity_walks``).
        floor_first: rank the floor first, in flat's order, and every other candidate after it in the
            scorer's order (:func:`~signet_rl.pipeline.hybrid.floor_first`). ``None``: on for the
            non-learned scorers (``prior``, ``ppr``, ``random``, ``fused``), off for any other (a learned
            scorer or the oracle ranks every candidate itself).
    """

    #: Scorers that rank the floor first by default.
    NON_LEARNED = frozenset({"prior", "ppr", "random", "fused"})

    def __init__(
        self,
        scorer: PathScorer | str = "prior",
        config: TraversalConfig | Mapping[str, Any] | None = None,
        classifier: IntentClassifier | None = None,
        encoder: str = "hashing",
        relevance: bool = True,
        entry_k: int = 2,
        entry_ratio: float = 0.8,
        name: str | None = None,
        flat: Retriever | str = BEST_FLAT,
        floor_first: bool | None = None,
    ) -> None:
        check_integer("entry_k", entry_k, 1)
        check_probability("entry_ratio", entry_ratio)
        self.scorer = make_scorer(scorer) if isinstance(scorer, str) else scorer
        # A loaded policy carries the traversal it was trained with: walk the same way unless told otherwise
        # (a mapping overrides some of its fields, a TraversalConfig replaces it).
        trained = getattr(self.scorer, "traversal", None) or {}
        if isinstance(config, TraversalConfig):
            self.config = config
        else:  # None, or a plain mapping (e.g. a dataset config's traversal block)
            self.config = TraversalConfig.from_dict({**trained, **dict(config or {})})
        self.classifier = classifier or RuleIntentClassifier()
        self.encoder = encoder
        self.relevance = relevance
        self.entry_k = entry_k
        self.entry_ratio = entry_ratio
        self.name = name or f"desire_{self.scorer.name}"
        self._states: dict[str, _GraphState] = {}
        #: Optional learned edge order (path reinforcement); None: confidence x strength.
        self.edge_weight_fn: EdgeWeightFn | None = None
        #: Optional worn shortcuts from the query's entries to memories (hybrid entry only); None: none.
        self.desire_fn: DesireFn | None = None
        self._dataset: Dataset | None = None
        self.flat_spec = flat
        self.flat: Retriever | None = None
        self.floor_first = self.scorer.name in self.NON_LEARNED if floor_first is None else bool(floor_first)
        #: Per-stage timing of every call (:mod:`signet_rl.core.timing`; benchmarks attach one); None: off.
        self.timer: StageTimer | None = None
        #: With the hybrid entry, run the floor's flat retrieval on a helper thread while entry search and the
        #: graph walk run (neither reads it), so that its wall time (mostly SQLite FTS5 and a vector scan,
        #: which release the GIL) overlaps theirs; the same units either way. The service turns it on; the
        #: experiments keep one thread. Its CPU is added to the stage timer (``StageTimer.add_cpu``).
        self.parallel_floor = False
        self._floor_thread: ThreadPoolExecutor | None = None

    def index(self, dataset: Dataset) -> None:
        """Build the per-graph state (arrays, traverser, entry search) and prepare the scorer.

        Indexing the same dataset object again only prepares the (possibly new) scorer: a trainer that
        evaluates a frozen copy of its scorer every few hundred interactions shares one index.
        """
        if self._states and self._dataset is dataset:
            for state in self._states.values():
                self.scorer.prepare(state.graph, state.arrays)
            return
        self._dataset = dataset
        self._states = {}
        if self.config.hybrid:
            flat = self.flat_spec
            self.flat = flat_variant(flat) if isinstance(flat, str) else flat
            # One flat retriever may be the floor of several desire retrievers (ablations): index it once.
            if getattr(self.flat, "_floor_indexed", None) is not dataset:
                self.flat.index(dataset)
                self.flat._floor_indexed = dataset  # type: ignore[union-attr]
        for gid, graph in dataset.graphs.items():
            state = _GraphState(graph, self.config, self.encoder, self.relevance)
            self.scorer.prepare(graph, state.arrays)
            self._states[gid] = state

    def replace_graph(self, graph_id: str, graph: KnowledgeGraph) -> GraphArrays:
        """Index ``graph`` in place of graph ``graph_id``'s (a training run whose graph changed: cold entities
        restored, :mod:`signet_rl.emergence.rediscovery`) and prepare the scorer for it; returns its arrays.
        The scorer forgets what it kept for the old arrays (:func:`~signet_rl.scorers.base.forget_arrays`).

        Raises:
            ValueError: the hybrid entry is on (its flat floor indexes the dataset, not this graph), or the
                graph id is not indexed.
        """
        if self.config.hybrid:
            raise ValueError(f"{self.name}: a graph cannot be replaced under the hybrid entry (its flat "
                             "floor indexes the dataset's memories); run without it (signet_rl.train: "
                             "hybrid=false; TraversalConfig: floor, session and entity_walks off)")
        old = self._state(graph_id).arrays
        state = _GraphState(graph, self.config, self.encoder, self.relevance)
        forget_arrays(self.scorer, old)  # nothing of the old graph stays reachable from the scorer
        self.scorer.prepare(graph, state.arrays)
        self._states[graph_id] = state
        return state.arrays

    def entries(self, query: Query, intent: str, query_vector: np.ndarray | None = None) -> list[str]:
        """The entry entities of ``query`` (two for *relate* when a second one scores close enough);
        ``query_vector``: entry search's encoding of the query, when the caller has it."""
        state = self._state(query.graph_id)
        found = state.entry.search(
            query.text, k=self.entry_k, timestamp=query.timestamp, query_vector=query_vector
        )
        if not found:
            return []
        best = found[0][1]
        keep = [found[0][0]]
        wanted = 2 if intent == "relate" else 1
        for eid, score in found[1:]:
            if len(keep) >= max(wanted, 1) and score < self.entry_ratio * best:
                break
            keep.append(eid)
        return keep[: self.entry_k]

    def candidates(self, query: Query, budget_chars: int | None = None) -> Candidates | None:
        """Everything up to scoring: the predicted intent, the entries, the walk and the scoring context.

        ``None`` for an empty query, a predicted non-query, or a query whose entry search finds nothing
        (with the hybrid entry: a query for which flat finds nothing either; a predicted non-query is then
        walked as *what*, since the floor keeps what flat would inject). With the hybrid entry on
        (:class:`~signet_rl.pipeline.hybrid.HybridEntry`), the candidates are the floor, session steps,
        entity walks and graph walk within the bounds for ``budget_chars`` (default
        :data:`~signet_rl.core.types.DEFAULT_BUDGET_CHARS`), and :attr:`Candidates.pool` reports them.
        With :attr:`edge_weight_fn` set (learned desire-path weights), the walk follows edges in the order
        it gives for the query's intent and time. The query's text is read through :func:`capped_query`
        (cut to :data:`~signet_rl.text.terms.MAX_QUERY_CHARS` characters, with a logged warning).
        """
        query = capped_query(query)
        if not query.text or not query.text.strip():
            return None
        timer = self.timer
        with stage(timer, "entry_and_flat_hits"):
            intent = self.classifier.predict([query.text])[0]
        state = self._state(query.graph_id)
        if state.hybrid is not None:
            return self._hybrid_candidates(query, intent, state, budget_chars)
        if intent == "none":
            return None
        with stage(timer, "entry_and_flat_hits"):
            entries = self.entries(query, intent)
        if not entries:
            return None
        rel = None
        if state.attr_vectors is not None:
            with stage(timer, "query_encoding"):
                qv = state.encoder.encode([query.text[:1000]])[0]
            vectors = state.attr_vectors
            rel = lambda idx: vectors[idx] @ qv  # noqa: E731
        with stage(timer, "traversal"):
            state.traverser.edge_weight = (
                None
                if self.edge_weight_fn is None
                else self.edge_weight_fn(query.graph_id, intent, query.timestamp)
            )
            walk = state.traverser.walk(entries, intent, query.timestamp, relevance=rel)
        with stage(timer, "scoring"):
            context = self.context(query, entries, rel)
        if timer is not None:
            timer.counts["candidates"] = len(walk.paths)
        return Candidates(intent, entries, walk, context)

    def _hybrid_candidates(
        self, query: Query, intent: str, state: _GraphState, budget_chars: int | None
    ) -> Candidates | None:
        """:meth:`candidates` with the hybrid entry (see :mod:`signet_rl.pipeline.hybrid`)."""
        assert state.hybrid is not None and self.flat is not None
        budget = DEFAULT_BUDGET_CHARS if budget_chars is None else budget_chars
        walk_intent = "what" if intent == "none" else intent
        timer = self.timer
        with stage(timer, "query_encoding"):  # once per process: flat and the GNN may read the same vector
            qv = encode_query(state.encoder, query.text[:1000])
        with stage(timer, "entry_and_flat_hits"):
            floor = self._start_floor(query)
            entries = self.entries(query, walk_intent, _entry_vector(state, query.text, qv))
        rel = None
        if state.attr_vectors is not None:
            vectors = state.attr_vectors
            rel = lambda idx: vectors[idx] @ qv  # noqa: E731
        with stage(timer, "traversal"):
            state.traverser.edge_weight = (
                None
                if self.edge_weight_fn is None
                else self.edge_weight_fn(query.graph_id, walk_intent, query.timestamp)
            )
            if self.config.graph_walk and entries:
                walk = state.traverser.walk(entries, walk_intent, query.timestamp, relevance=rel)
            else:
                walk = Walk()
        with stage(timer, "scoring"):
            context = self.context(query, entries, rel)
            prefetch = getattr(self.scorer, "prefetch", None)
            if self.parallel_floor and prefetch is not None:  # scoring's work on the entries alone (PageRank)
                prefetch(query, context)  # while the floor's thread runs
        with stage(timer, "entry_and_flat_hits"):
            flat_units = floor()
        with stage(timer, "traversal"):
            ts = None if query.timestamp is None else float(query.timestamp.timestamp())
            desire = self.desire_fn(query, entries) if self.desire_fn is not None else None
            pool = state.hybrid.pool(
                query, self.config, budget, flat_units, entries, qv, ts, state.conf_ok, list(walk.paths),
                desire,
            )  # fmt: skip
        if not pool.paths:
            return None
        walk.paths = list(pool.paths)
        context.path_info = pool.info
        if timer is not None:
            timer.counts["candidates"] = len(pool.paths)
        return Candidates(intent, entries, walk, context, pool, flat_units)

    def _start_floor(self, query: Query) -> Callable[[], list[Unit]]:
        """The floor's flat units of ``query``, as a call that returns them: started on the helper thread
        with :attr:`parallel_floor` (the query's vector encoded here first), else run when called."""
        assert self.flat is not None
        flat = self.flat
        if not self.parallel_floor:
            return lambda: flat.retrieve(query, None)
        prepare = getattr(flat, "prepare_query", None)
        if prepare is not None:
            prepare(query)
        if self._floor_thread is None:
            self._floor_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desire-floor")

        def run() -> tuple[list[Unit], float]:
            cpu = time.thread_time()
            units = flat.retrieve(query, None)
            return units, time.thread_time() - cpu

        future = self._floor_thread.submit(run)
        timer = self.timer

        def result() -> list[Unit]:
            units, cpu = future.result()
            if timer is not None:
                timer.add_cpu("entry_and_flat_hits", cpu)
            return units

        return result

    def context(self, query: Query, entries: list[str], relevance: Any = False) -> ScoringContext:
        """The scoring context of ``query`` with these entries (query relevance recomputed unless given)."""
        state = self._state(query.graph_id)
        if relevance is False:
            relevance = None
            if state.attr_vectors is not None:
                qv = state.encoder.encode([query.text[:1000]])[0]
                vectors = state.attr_vectors
                relevance = lambda idx: vectors[idx] @ qv  # noqa: E731
        ts = None if query.timestamp is None else float(query.timestamp.timestamp())
        return ScoringContext(state.graph, state.arrays, entries, ts, relevance=relevance)

    def far_paths(self, query: Query, cands: Candidates, k: int = 5) -> list[PathType]:
        """Explorer candidates: the own facts of entities that entry search finds close to the query in
        meaning but that lie two or more hops from every entry in the graph (neither an entry nor one of
        its neighbours). Tagged ``explorer=True``; at most ``k`` search hits are considered."""
        state = self._state(query.graph_id)
        a = state.arrays
        found = state.entry.search(query.text, k=k + len(cands.entries), timestamp=query.timestamp)
        idx = a.indices(cands.entries)
        near = set(idx.tolist())
        if len(idx):
            slots, _ = a.frontier_slots(idx)
            near.update(a.dep_neighbor[slots].tolist())
        far = [eid for eid, _ in found if a.entity_index.get(eid) not in near][:k]
        if not far:
            return []
        walk = state.traverser.walk(far, "what", query.timestamp, relevance=cands.context.relevance)
        own = [p for p in walk.paths if not p.dependencies]
        return [
            PathType(
                p.hops, strategy=cands.intent if cands.intent in STRATEGIES else p.strategy, explorer=True
            )
            for p in own
        ]

    def slate(
        self, query: Query, cands: Candidates, paths_with_scores: Any, budget_chars: int | None = None
    ) -> list[Unit]:
        """The units injected for ``paths_with_scores`` (constraints section first), fitted to the budget."""
        state = self._state(query.graph_id)
        budget = DEFAULT_BUDGET_CHARS if budget_chars is None else budget_chars
        with stage(self.timer, "construction"):
            return build_slate(
                paths_with_scores, cands.walk.constraints, budget, state.builder, at=query.timestamp
            )

    def builder(self, graph_id: str) -> MemoryBuilder:
        """The graph's :class:`MemoryBuilder` (turns one path into its constructed memory)."""
        return self._state(graph_id).builder

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        query = capped_query(query)  # once: the scorer reads the same text the walk was built for
        # (subclasses that override candidates(query) keep working without the hybrid entry)
        cands = self.candidates(query, budget_chars) if self.config.hybrid else self.candidates(query)
        if cands is None:
            return []
        paths = cands.walk.paths
        head: set[str] = set()  # the floor units floor_keep injects in flat's order (none without it)
        with stage(self.timer, "scoring"):
            scores = self.scorer.score(query, paths, cands.context) if paths else np.zeros(0)
            if cands.pool is not None and self.floor_first and self.config.floor_share < 1.0:
                budget = DEFAULT_BUDGET_CHARS if budget_chars is None else budget_chars
                chars = self._chars(query.graph_id, paths)
                scores = floor_share_first(scores, paths, cands.pool.info, chars, budget,
                                           self.config.floor_share)  # fmt: skip
            elif cands.pool is not None and self.floor_first:
                scores = floor_first(scores, paths, cands.pool.info)
            elif cands.pool is not None and (self.config.floor_keep > 0 or self.config.density):
                # a learned scorer: under flat's head, and/or by value per character
                budget = DEFAULT_BUDGET_CHARS if budget_chars is None else budget_chars
                chars = self._chars(query.graph_id, paths)
                if self.config.density:
                    scores = density_order(scores, chars)
                if self.config.floor_keep > 0:
                    kept = floor_head(paths, cands.pool.info, chars, budget, self.config.floor_keep)
                    scores = floor_share_first(scores, paths, cands.pool.info, chars, budget,
                                               self.config.floor_keep, head=kept)  # fmt: skip
                    head = {p.id for p, k in zip(paths, kept.tolist(), strict=True) if k}
        units = self.slate(query, cands, zip(paths, scores.tolist(), strict=True), budget_chars)
        if cands.pool is not None:  # the pool size (and a floor unit's part) travels with every unit
            units = [dataclasses.replace(u, meta={**u.meta, "pool": dict(cands.pool.sizes),
                                                  **floor_part(u, cands.pool.info, head)})
                     for u in units]  # fmt: skip
        return units

    def _chars(self, graph_id: str, paths: list[PathType]) -> list[int]:
        """Each candidate's constructed length, read from the hybrid entry's per-path memo (the pool already
        constructed every candidate for its bounds)."""
        hybrid = self._state(graph_id).hybrid
        assert hybrid is not None  # only hybrid candidates carry a pool
        return [hybrid.chars(p) for p in paths]

    def _state(self, graph_id: str) -> _GraphState:
        try:
            return self._states[graph_id]
        except KeyError:
            raise RuntimeError(
                f"{self.name}: graph {graph_id!r} is not indexed; call index(dataset) first"
            ) from None

    def config_dict(self) -> dict[str, Any]:
        return {
            "scorer": self.scorer.name,
            "traversal": self.config.to_dict(),
            "entry_k": self.entry_k,
            "relevance": self.relevance,
            "entry_ratio": self.entry_ratio,
            "encoder": self.encoder,
            "flat": self.flat_spec if isinstance(self.flat_spec, str) else self.flat_spec.name,
            "floor_first": self.floor_first,
        }
