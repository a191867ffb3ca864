"""``signet_rl/EdgeWalk-v0``: walk the graph one dependency edge at a time, stopping paths into memories.

An episode is one query. The environment finds the query's entry entities the way the desire-path pipeline
does (predicted intent, entry search; never ground truth) and puts the walker on the first one. Each step
the agent either follows one of up to ``max_branching`` candidate edges of the current entity, stops the
current path (``STOP_PATH``), or ends the episode (``END``):

* **candidate edges** are the current entity's dependency slots in CSR order (confidence × strength,
  descending), keeping those with ``confidence >= min_confidence``, created at or before the query time,
  and not leading back onto the current path; the first ``max_branching`` are offered.
* **STOP_PATH** turns the current path into a constructed memory: the path's entities and edges, ending in
  the end entity's *most query-relevant* aspect (the aspect holding the attribute most similar to the
  query; ties by aspect weight) with its current attributes, most relevant first, at most
  ``max_attributes_per_aspect`` — the traverser's path ending, with query relevance. The memory is rated by
  the simulated rater, and the walker returns to an entry entity (path ``k`` starts at entry
  ``k mod len(entries)``).
* **depth** is per path: following the ``max_depth``-th edge of a path stops it at once, as STOP_PATH would.
* **path budget**: the episode terminates when ``path_budget`` paths have been stopped, or on END.
  ``truncated`` is never set by the environment itself (episodes are bounded by
  ``path_budget * (max_depth + 1)`` steps); wrap it in ``gymnasium.wrappers.TimeLimit`` for a shorter cap.

Actions: ``Discrete(max_branching + 2)`` — ``0..B-1`` follow candidate ``i``, ``B`` = STOP_PATH, ``B + 1`` =
END. The int8 mask (``obs["action_mask"]``, also ``info["action_mask"]``) marks existing candidates, and
STOP_PATH and END (always valid while the walker stands on an entity). A terminal observation's mask holds
END alone, so a masked-softmax policy stepping it under next-step autoreset never sees an empty mask (the
action is discarded; stepping a finished episode directly raises ``RuntimeError``).

Reward of one step, exactly::

    r = -step_cost                         if the step follows an edge        (default step_cost 0.01)
        + rating(memory)                   if the step stops a path (STOP_PATH, or the depth ran out)
        - invalid_penalty                  if the action was masked            (default 0.1)

``rating`` is the rater's -1 / 0 / +1 of the stopped memory; an unrated memory (``rating_prob``) counts 0,
and a *duplicate* — a memory whose items (its attributes; for a path without attributes its edges, else its
entities: :meth:`MemoryBuilder.path_keys`) are all held by memories already stopped this episode — counts 0
without being shown to the rater (the slate would drop it, as :func:`build_slate` does). END earns 0. A
masked action acts as STOP_PATH (as END where no entity is stood on) and pays the penalty; ``strict=True``
raises ``ValueError`` naming the action and the mask instead.

Observation (``Dict``, fixed shapes, ``float32`` unless noted; :data:`NODE_FEATURES`,
:data:`WALK_FEATURES`, :data:`EDGE_FEATURES` name the columns):

=================  ====================  ==============================================================
``query``          ``[Dq]``              :class:`~signet_rl.scorers.features.QueryFeaturizer` features
``node``           ``[9]``               the current entity, and what stopping here would give
``path``           ``[4]``               a summary of the path so far
``edges``          ``[B, 14]``           the candidate edges (zeros for missing ones)
``action_mask``    ``int8 [B + 2]``      valid actions
``budgets``        ``[2]``               depth left on this path, paths left in the episode
=================  ====================  ==============================================================

``prior`` columns are :class:`~signet_rl.scorers.prior.PriorScorer`'s score of the memory a stop would
make (the path's confidence × strength product × the aspect's weight × mean attribute importance × recency
with a 90-day half-life, the hand-made feature's fixed one, not the scorer's tuned default), so a prior policy
can act from the observation alone.

**Hybrid entry.** With a traversal config that switches on the floor or session steps
(:class:`~signet_rl.traversal.config.TraversalConfig`'s ``floor`` / ``session``), the hybrid pool's memory
candidates — best_flat's floor in its ranking, then the session-DAG steps — become ``K = max_floor_paths +
session_paths`` more actions: action ``B + 2 + k`` injects candidate ``k`` whole (rated like a stopped path
and counted toward ``path_budget``; masked once injected). ``obs["memories"]`` (``[K, 6]``,
:data:`MEMORY_FEATURES`) describes them; ``action_mask`` grows to ``B + 2 + K``. An episode then also serves a
query with no entry entity when flat found something (only END and the injections are valid).

Queries with no entry entity (non-queries, or nothing found) are skipped by default; with
``include_empty=True`` they are served with only END valid (injecting nothing is right for a non-query).

Speed: everything a step needs about an entity (its candidate edges with their static features, its
ending) is computed once per query and entity and cached; a step is a few small numpy operations, and a
rating is a set lookup (``benchmarks/bench_envs.py``). Paths and constructed memories are built only on
request (:meth:`EdgeWalkEnv.stopped_paths`, :meth:`EdgeWalkEnv.memories`).
"""

from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from signet_rl.core.checks import check_integer, check_range
from signet_rl.core.types import Query, Unit
from signet_rl.envs.common import CandidatePipeline, DatasetLike, QueryEpisodeEnv, action_index
from signet_rl.graph.arrays import GraphArrays
from signet_rl.retrieval.flat import BEST_FLAT
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import Path
from signet_rl.traversal.walk import csr_hops

__all__ = ["EDGE_FEATURES", "MEMORY_FEATURES", "NODE_FEATURES", "WALK_FEATURES", "EdgeWalkEnv"]

#: Columns of ``obs["node"]``.
NODE_FEATURES: tuple[str, ...] = (
    "is_entry",  # 1 for an entry entity
    "log_degree",  # ln(1 + dependency degree)
    "relevance",  # best cosine of the query with the attributes a stop here would show (0 with none)
    "end_factor",  # aspect weight x mean importance x recency of that ending (1 with none, as the prior)
    "end_attributes",  # attributes a stop here would show / max_attributes_per_aspect
    "name_similarity",  # cosine of the query with the entity's name
    "end_constraints",  # share of constraints among those attributes
    "stop_prior",  # PriorScorer's score of the memory STOP_PATH would make now
    "stop_duplicate",  # 1 when STOP_PATH now would make a duplicate (rated 0)
)
#: Columns of ``obs["path"]``.
WALK_FEATURES: tuple[str, ...] = (
    "hops",  # edges followed on this path / max_depth
    "cs_product",  # product of confidence x strength along the path (1 with no edge)
    "cs_min",  # smallest confidence x strength along the path (1 with no edge)
    "backward_fraction",  # share of edges walked target -> source
)
#: Columns of each row of ``obs["edges"]``.
EDGE_FEATURES: tuple[str, ...] = (
    "confidence",
    "strength",
    "cs",  # confidence x strength
    "direction",  # +1 walked source -> target, -1 the other way
    "reason",  # rung of the edge's reason on the confidence ladder / 5
    "action_type",  # 1 for an outgoing blocks / requires edge
    "log_degree",  # the neighbour's
    "is_entry",  # the neighbour is an entry entity
    "relevance",  # the neighbour's ending, as NODE_FEATURES
    "end_factor",
    "end_attributes",
    "name_similarity",
    "continue_prior",  # PriorScorer's score of the memory made by following this edge, then stopping
    "duplicate",  # 1 when that memory would be a duplicate
)
#: Columns of each row of ``obs["memories"]`` (the hybrid entry's floor and session candidates).
MEMORY_FEATURES: tuple[str, ...] = (
    "type_floor",  # 1 for one of best_flat's hits
    "type_session",  # 1 for a session-DAG step
    "floor_rank_inv",  # 1 / (1 + rank) in best_flat's ranking (0 off the floor)
    "flat_fused",  # best_flat's fused score (0 off the floor)
    "session_distance",  # sessions from the nearest floor hit
    "memory_sim",  # cosine of the memory with the query
)
_NODE_STATIC = 7  # NODE_FEATURES before the two dynamic columns
_EDGE_STATIC = 12  # EDGE_FEATURES before the two dynamic columns
_ACTION_TYPES = ("blocks", "requires")
_DAY = 86400.0
_HALF_LIFE_DAYS = 90.0
FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


class _GraphPre:
    """Per-graph arrays for the walk, built once and shared by every environment on the pipeline."""

    def __init__(self, pipeline: CandidatePipeline, graph_id: str) -> None:
        state = pipeline.state(graph_id)
        a: GraphArrays = state.arrays
        self.arrays = a
        self.slot_cs = a.dep_confidence.astype(np.float64) * a.dep_strength.astype(np.float64)
        self.slot_conf_ok = a.dep_confidence >= np.float32(pipeline.config.min_confidence)
        self.slot_created = a.edge_created[a.dep_edge]
        vocab = {t: i for i, t in enumerate(a.dep_type_vocab)}
        codes = np.asarray([vocab[t] for t in _ACTION_TYPES if t in vocab], dtype=np.int32)
        self.slot_action = np.isin(a.dep_type, codes) & (a.dep_direction == 1)
        self.log_degree = np.log1p(a.degree().astype(np.float64))
        # entity -> the attributes of its aspects (aspects by weight, as ent_aspect; attributes in row order)
        sizes = np.diff(a.aspect_attr_indptr)[a.ent_aspect]
        first = np.repeat(a.aspect_attr_indptr[a.ent_aspect], sizes)
        within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        self.ea_attr = a.aspect_attr[first + within]
        self.ea_aspect = np.repeat(a.ent_aspect, sizes)
        rank = (
            np.arange(len(a.ent_aspect), dtype=np.int64) - a.ent_aspect_indptr[a.aspect_entity[a.ent_aspect]]
        )
        self.ea_rank = np.repeat(rank, sizes)
        per_entity = np.bincount(a.aspect_entity[a.ent_aspect], weights=sizes, minlength=a.num_entities)
        self.ea_indptr = np.zeros(a.num_entities + 1, dtype=np.int64)
        np.cumsum(per_entity.astype(np.int64), out=self.ea_indptr[1:])
        sb = a.attr_superseded_by
        self.sb_created = np.where(sb >= 0, a.attr_created[np.maximum(sb, 0)], np.nan)
        self.orphan_superseded = (a.attr_status == 1) & (sb < 0)
        self.attr_vectors = state.attr_vectors
        names = state.graph.entities.set_index("id")["name"].reindex(a.entity_ids).fillna("").astype(str)
        self.name_vectors = np.asarray(state.encoder.encode(names.tolist()), dtype=np.float32)
        self.n_attr = a.num_attributes
        self.n_edge = a.num_dependencies


@dataclass
class _Ending:
    """What a stop at one entity shows, for one query, and the entity's static features."""

    aspect: int  # -1: no aspect with current attributes
    attrs: tuple[int, ...]
    end_factor: float
    static: FloatArray  # [_NODE_STATIC]
    template: FloatArray  # [len(NODE_FEATURES)]: static, then zeros for the dynamic columns
    ids: list[str] | None = None  # attribute ids, filled on the first stop


@dataclass
class _View:
    """An entity's candidate edges once the neighbours already on the path are left out."""

    follow: list[int]  # candidate i -> position in the node's slots
    edges: FloatArray  # [B, len(EDGE_FEATURES)]; continue_prior as if the path so far had product 1
    mask: npt.NDArray[np.int8]  # [B + 2]
    prior: list[float]  # the continue_prior column as if the path so far had product 1


@dataclass
class _Node:
    """One entity's admissible edges, for one query, with their static features."""

    ending: _Ending
    slots: list[int]  # admissible slots, best first (a few more than max_branching)
    neighbors: list[int]
    cs: list[float]
    edges: list[int]  # dependency row of each slot
    backward: list[bool]
    edge_static: FloatArray  # [len(slots), _EDGE_STATIC]
    views: dict[tuple[int, ...], _View] = field(default_factory=dict)


class _QueryPre:
    """One query's walk data: entries, query features, the entities met so far."""

    def __init__(
        self, query: Query, intent: str, entries: list[int], qv: FloatArray, qfeat: FloatArray, pre: _GraphPre
    ) -> None:
        self.query = query
        self.intent = intent
        self.entries = entries
        self.entry_set = frozenset(entries)
        self.qv = qv
        self.qfeat = qfeat
        self.pre = pre
        self.t = math.inf if query.timestamp is None else float(query.timestamp.timestamp())
        self.endings: dict[int, _Ending] = {}
        self.nodes: dict[int, _Node] = {}
        #: The hybrid entry's floor and session candidates (empty without it), their features and units.
        self.mem_paths: list[Path] = []
        self.mem_feats: FloatArray = np.zeros((0, len(MEMORY_FEATURES)), dtype=np.float32)
        self.mem_items: list[list[str]] = []


#: One stopped path: entities, slots, aspect (-1: none), attributes, rating.
_Stop = tuple[tuple[int, ...], tuple[int, ...], int, tuple[int, ...], int]


@dataclass
class _Episode:
    """The walk's state: plain values, so an environment pickles mid-episode."""

    query_id: str
    node: int  # -1 where there is no entry entity
    nodes: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    cs_product: float = 1.0
    cs_min: float = 1.0
    backward: int = 0
    stopped: int = 0
    covered: set[int] = field(default_factory=set)
    stops: list[_Stop] = field(default_factory=list)
    done: bool = False
    injected: list[int] = field(default_factory=list)  # hybrid candidates injected, in order
    injected_ratings: list[int] = field(default_factory=list)
    mem_covered: set[str] = field(default_factory=set)  # rated items of the injected candidates


class EdgeWalkEnv(QueryEpisodeEnv):
    """Sequential edge steps under branching, depth and path budgets (see the module docstring).

    Args:
        dataset: a dataset spec (``synthetic:small``, ...) or a loaded dataset.
        split: the split episodes draw queries from (``train``, ``validation``, ``test``, ``all``).
        traversal: traversal budgets or overrides: ``max_branching`` (candidate edges), ``max_depth``
            (edges per path), ``min_confidence``, ``max_attributes_per_aspect``.
        path_budget: paths stopped per episode, >= 1.
        step_cost: cost of following an edge, >= 0.
        invalid_penalty: cost of a masked action, >= 0.
        strict: raise ``ValueError`` on a masked action instead.
        order: ``random`` or ``sequential`` query order.
        include_empty: serve queries with no entry entity (only END valid) instead of skipping them.
        noise_rate: the simulated rater's label-flip probability.
        rating_prob: the probability that the rater rates a memory at all.
        encoder: the encoder of entry search and relevance.
        seed: seeds the environment when given.
        flat: the flat variant whose hits are the hybrid entry's floor (traversal ``floor`` / ``session``
            / ``entity_walks``; default ``best_flat``, frozen per dataset family).

    Raises:
        ValueError: a bad argument (naming it and the allowed values), or an unknown dataset spec.
    """

    env_name = "EdgeWalk"

    def __init__(
        self,
        dataset: DatasetLike = "synthetic:small",
        split: str = "train",
        traversal: TraversalConfig | Mapping[str, Any] | None = None,
        path_budget: int = 4,
        step_cost: float = 0.01,
        invalid_penalty: float = 0.1,
        strict: bool = False,
        order: str = "random",
        include_empty: bool = False,
        noise_rate: float = 0.05,
        rating_prob: float = 0.8,
        encoder: str = "hashing",
        seed: int | None = None,
        flat: str = BEST_FLAT,
    ) -> None:
        self._init_args: dict[str, Any] = {k: v for k, v in locals().items() if k != "self"}
        check_integer("path_budget", path_budget, 1)
        check_range("step_cost", step_cost, 0)
        check_range("invalid_penalty", invalid_penalty, 0)
        self.pipeline = CandidatePipeline.shared(dataset, traversal, encoder, flat=flat)
        self.config = self.pipeline.config
        self.path_budget = path_budget
        self.step_cost = float(step_cost)
        self.invalid_penalty = float(invalid_penalty)
        self.strict = bool(strict)
        self.include_empty = bool(include_empty)
        self._episodes(split, order, noise_rate, rating_prob)
        b = self.config.max_branching
        self.n_branch = b
        #: The action index of STOP_PATH.
        self.STOP = b
        #: The action index of END.
        self.END = b + 1
        self._depth = self.config.max_depth
        self._per_hop = 1.0 / max(1, self._depth)
        #: Hybrid-entry candidates offered as injection actions (0 without the floor or session steps).
        self.n_mem = (
            min(self.config.max_paths, self.config.max_floor_paths + self.config.session_paths)
            if self.config.floor or self.config.session
            else 0
        )
        #: The first injection action.
        self.INJECT = b + 2
        n_actions = b + 2 + self.n_mem
        big = np.float32(1e3)
        obs_spaces: dict[str, spaces.Space[Any]] = {
            "query": spaces.Box(-1.0, 1.0, (self.pipeline.query_features.dim,), np.float32),
            "node": spaces.Box(-big, big, (len(NODE_FEATURES),), np.float32),
            "path": spaces.Box(0.0, 1.0, (len(WALK_FEATURES),), np.float32),
            "edges": spaces.Box(-big, big, (b, len(EDGE_FEATURES)), np.float32),
            "action_mask": spaces.MultiBinary(n_actions),
            "budgets": spaces.Box(0.0, float(max(self._depth, path_budget)), (2,), np.float32),
        }
        if self.n_mem:
            obs_spaces["memories"] = spaces.Box(-big, big, (self.n_mem, len(MEMORY_FEATURES)), np.float32)
        self.observation_space = spaces.Dict(obs_spaces)
        self.action_space: spaces.Space[Any] = spaces.Discrete(n_actions)
        self._queries: OrderedDict[str, _QueryPre] = OrderedDict()
        self._ep: _Episode | None = None
        self._qp: _QueryPre | None = None
        self._view: _View | None = None
        self._node_now: _Node | None = None
        self._end_only = np.zeros(b + 2, dtype=np.int8)
        self._end_only[b + 1] = 1
        self._stop_end = self._end_only.copy()
        self._stop_end[b] = 1
        self._no_edges = np.zeros((b, len(EDGE_FEATURES)), dtype=np.float32)
        self._mask = self._end_only
        if seed is not None:
            self.reset(seed=seed)

    # -- gymnasium API ---------------------------------------------------------------------------------

    def _begin(self, query: Query) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start the episode of ``query`` (:meth:`QueryEpisodeEnv.reset`): the walker on its first entry."""
        self._qp = qp = self._query(query)
        start = qp.entries[0] if qp.entries else -1
        self._ep = _Episode(query.id, start, nodes=[start] if start >= 0 else [])
        obs = self._observe()
        return obs, self._info(obs, False, 0, False, False, 0.0)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Follow an edge, stop the path, or end (see the module docstring for the reward).

        Raises:
            RuntimeError: the episode has ended (or never started): call ``reset()``.
            ValueError: an action outside the action space; in strict mode a masked action.
        """
        ep = self._ep
        if ep is None or ep.done:
            raise RuntimeError("EdgeWalk: step() called after the episode ended; call reset() first")
        try:
            a = operator.index(action)
        except TypeError:
            a = -1
        n_actions = self.END + 1 + self.n_mem
        if not 0 <= a < n_actions or isinstance(action, bool):
            a = action_index(action, n_actions, "EdgeWalk")
        penalty = 0.0
        if not self._mask[a]:
            if self.strict:
                inject = f", {self.INJECT}.. inject a floor/session memory" if self.n_mem else ""
                raise ValueError(
                    f"EdgeWalk (strict): action {a} is masked; action_mask={self._mask.tolist()} "
                    f"(0..{self.n_branch - 1} follow an edge, {self.STOP} STOP_PATH, {self.END} END{inject})"
                )
            penalty = self.invalid_penalty
            a = self.STOP if ep.node >= 0 else self.END
        reward = -penalty
        stopped, rating, rated, duplicate = False, 0, False, False
        if a >= self.INJECT:
            stopped = True
            rating, rated, duplicate = self._inject(ep, a - self.INJECT)
            reward += rating
            obs = self._observe()
            return obs, reward, ep.done, False, self._info(obs, stopped, rating, rated, duplicate, penalty)
        if a < self.STOP:
            node, view = self._node_now, self._view
            assert node is not None and view is not None
            j = view.follow[a]
            cs = node.cs[j]
            ep.nodes.append(node.neighbors[j])
            ep.slots.append(node.slots[j])
            ep.node = node.neighbors[j]
            ep.cs_product *= cs
            if cs < ep.cs_min:
                ep.cs_min = cs
            ep.backward += node.backward[j]
            reward -= self.step_cost
            if len(ep.slots) >= self._depth:
                a = self.STOP
        if a == self.STOP:
            stopped = True
            rating, rated, duplicate = self._stop(ep)
            reward += rating
        elif a == self.END:
            ep.done = True
        obs = self._observe()
        return obs, reward, ep.done, False, self._info(obs, stopped, rating, rated, duplicate, penalty)

    # -- episode mechanics -----------------------------------------------------------------------------

    def _usable(self, query: Query) -> bool:
        if self.include_empty or self.pipeline.entries(query)[1]:
            return True
        return bool(self.n_mem) and bool(self._query(query).mem_paths)

    def _inject(self, ep: _Episode, k: int) -> tuple[int, bool, bool]:
        """Inject hybrid candidate ``k`` (a floor hit or a session step) whole: rate it, count it toward
        the path budget. ``(rating, rated, duplicate)``; a memory already injected by a stopped path or an
        earlier injection is a duplicate (rated 0, not shown)."""
        qp = self._qp
        assert qp is not None
        items = qp.mem_items[k]
        held = {f"item:{i}" for i in items}
        duplicate = bool(held) and held <= ep.mem_covered
        rating, rated = 0, False
        if not duplicate:
            r = self.rating.rate(qp.query, items)
            if r is not None:
                rating, rated = r, True
            ep.mem_covered |= held
        ep.injected.append(k)
        ep.injected_ratings.append(rating)
        ep.stopped += 1
        if ep.stopped >= self.path_budget:
            ep.done = True
        return rating, rated, duplicate

    def _graph(self, graph_id: str) -> _GraphPre:
        key = ("edgewalk", graph_id)
        if key not in self.pipeline.extras:
            self.pipeline.extras[key] = _GraphPre(self.pipeline, graph_id)
        pre: _GraphPre = self.pipeline.extras[key]
        return pre

    def _query(self, query: Query) -> _QueryPre:
        hit = self._queries.get(query.id)
        if hit is not None:
            return hit
        intent, entries, qv = self.pipeline.entries(query)
        pre = self._graph(query.graph_id)
        index = pre.arrays.entity_index
        idx = [index[e] for e in entries if e in index]
        qfeat = np.clip(self.pipeline.query_features.features(query, intent=intent), -1.0, 1.0)
        out = _QueryPre(query, intent, idx, qv, qfeat.astype(np.float32), pre)
        if self.n_mem:
            self._memory_candidates(out)
        self._queries[query.id] = out
        while len(self._queries) > CandidatePipeline.CACHE_SIZE:
            self._queries.popitem(last=False)
        return out

    def _ending(self, qp: _QueryPre, e: int) -> _Ending:
        """What stopping at entity ``e`` shows: its most query-relevant aspect with its current attributes,
        most relevant first; and the entity's static features."""
        hit = qp.endings.get(e)
        if hit is not None:
            return hit
        pre, cfg, t = qp.pre, self.config, qp.t
        a = pre.arrays
        lo, hi = int(pre.ea_indptr[e]), int(pre.ea_indptr[e + 1])
        attrs = pre.ea_attr[lo:hi]
        keep = (a.attr_created[attrs] <= t) & (a.attr_status[attrs] != 2) & ~(pre.sb_created[attrs] <= t)
        keep &= ~pre.orphan_superseded[attrs]
        attrs = attrs[keep]
        aspect, chosen, end_factor, relevance, constraints = -1, np.zeros(0, np.int64), 1.0, 0.0, 0.0
        if len(attrs):
            asp, rank = pre.ea_aspect[lo:hi][keep], pre.ea_rank[lo:hi][keep]
            if pre.attr_vectors is not None:
                rel = (pre.attr_vectors[attrs] @ qp.qv).astype(np.float64)
                relevance = float(rel.max())
            else:
                rel = np.zeros(len(attrs))
            aspect = int(asp[np.lexsort((rank, -rel))[0]])
            mine = asp == aspect
            cur, cur_rel = attrs[mine], rel[mine]
            chosen = cur[np.lexsort((-a.attr_importance[cur], -cur_rel))][: cfg.max_attributes_per_aspect]
            importance = float(a.attr_importance[chosen].astype(np.float64).mean())
            end_factor = float(a.aspect_weight[aspect]) * importance
            if math.isfinite(t):
                age = max(0.0, (t - float(a.attr_created[chosen].max())) / _DAY)
                end_factor *= 0.5 ** (age / _HALF_LIFE_DAYS)
            constraints = float((a.attr_kind[chosen] == 1).mean())
        static = np.asarray(
            [
                e in qp.entry_set,
                pre.log_degree[e],
                relevance,
                end_factor,
                len(chosen) / cfg.max_attributes_per_aspect,
                float(pre.name_vectors[e] @ qp.qv),
                constraints,
            ],
            dtype=np.float32,
        )
        template = np.zeros(len(NODE_FEATURES), dtype=np.float32)
        template[:_NODE_STATIC] = static
        out = _Ending(aspect, tuple(chosen.tolist()), end_factor, static, template)
        qp.endings[e] = out
        return out

    def _node(self, qp: _QueryPre, e: int) -> _Node:
        """Entity ``e``'s admissible slots in CSR order (a few spare for neighbours already on the path),
        with the static features of each edge and its neighbour."""
        hit = qp.nodes.get(e)
        if hit is not None:
            return hit
        pre, cfg, t = qp.pre, self.config, qp.t
        a = pre.arrays
        lo, hi = int(a.dep_indptr[e]), int(a.dep_indptr[e + 1])
        ok = pre.slot_conf_ok[lo:hi] & (pre.slot_created[lo:hi] <= t)
        slots = (np.flatnonzero(ok) + lo)[: cfg.max_branching + cfg.max_depth + 1]
        neighbors = a.dep_neighbor[slots]
        feats = np.zeros((len(slots), _EDGE_STATIC), dtype=np.float32)
        if len(slots):
            nb = np.stack([self._ending(qp, v).static for v in neighbors.tolist()])
            feats[:, 0] = a.dep_confidence[slots]
            feats[:, 1] = a.dep_strength[slots]
            feats[:, 2] = pre.slot_cs[slots]
            feats[:, 3] = a.dep_direction[slots]
            feats[:, 4] = a.dep_reason[slots] / 5.0
            feats[:, 5] = pre.slot_action[slots]
            feats[:, 6] = nb[:, 1]  # log_degree
            feats[:, 7] = nb[:, 0]  # is_entry
            feats[:, 8:12] = nb[:, 2:6]  # relevance, end_factor, end_attributes, name_similarity
        out = _Node(
            self._ending(qp, e),
            slots.tolist(),
            neighbors.tolist(),
            pre.slot_cs[slots].tolist(),
            a.dep_edge[slots].tolist(),
            (a.dep_direction[slots] < 0).tolist(),
            feats,
        )
        qp.nodes[e] = out
        return out

    def _view_of(self, node: _Node, excluded: tuple[int, ...]) -> _View:
        view = node.views.get(excluded)
        if view is not None:
            return view
        b = self.n_branch
        follow = [j for j in range(len(node.slots)) if j not in excluded][:b]
        n = len(follow)
        edges = np.zeros((b, len(EDGE_FEATURES)), dtype=np.float32)
        mask = self._stop_end.copy()
        if n:
            edges[:n, :_EDGE_STATIC] = node.edge_static[follow]
            edges[:n, 12] = np.asarray([node.cs[j] for j in follow]) * edges[:n, 9]
            mask[:n] = 1
        edges.setflags(write=False)
        mask.setflags(write=False)
        view = _View(follow, edges, mask, edges[:n, 12].tolist())
        node.views[excluded] = view
        return view

    def _covered(self, ep: _Episode, attrs: tuple[int, ...], extra_slot: int = -1) -> bool:
        """Would a memory with these attributes (the current path, one edge further with ``extra_slot``) be
        a duplicate? Its keys (:meth:`MemoryBuilder.path_keys`: attributes, else edges, else entities, as
        offset ints) all held by memories already stopped."""
        return self._keys(ep, attrs, extra_slot) <= ep.covered

    def _keys(self, ep: _Episode, attrs: tuple[int, ...], extra_slot: int = -1) -> set[int]:
        if attrs:
            return set(attrs)
        pre = self._qp.pre  # type: ignore[union-attr]
        slots = ep.slots if extra_slot < 0 else [*ep.slots, extra_slot]
        if slots:
            dep_edge = pre.arrays.dep_edge
            return {pre.n_attr + int(dep_edge[s]) for s in slots}
        return {pre.n_attr + pre.n_edge + v for v in ep.nodes}

    def _stop(self, ep: _Episode) -> tuple[int, bool, bool]:
        """Stop the current path: rate its memory, return to an entry. ``(rating, rated, duplicate)``."""
        qp = self._qp
        assert qp is not None
        end = self._ending(qp, ep.node)
        keys = self._keys(ep, end.attrs)
        duplicate = keys <= ep.covered
        rating, rated = 0, False
        if not duplicate:
            a = qp.pre.arrays
            if end.ids is None:
                end.ids = a.attribute_ids[list(end.attrs)].tolist() if end.attrs else []
            ents = a.entity_ids[ep.nodes[1:]].tolist() if self.rating.entity_items else ()
            r = self.rating.rate(qp.query, self.rating.items(qp.query, end.ids, ents))
            if r is not None:
                rating, rated = r, True
            ep.covered |= keys
        ep.stops.append((tuple(ep.nodes), tuple(ep.slots), end.aspect, end.attrs, rating))
        ep.stopped += 1
        if ep.stopped >= self.path_budget:
            ep.done = True
        start = qp.entries[ep.stopped % len(qp.entries)]
        ep.node, ep.nodes, ep.slots = start, [start], []
        ep.cs_product, ep.cs_min, ep.backward = 1.0, 1.0, 0
        return rating, rated, duplicate

    def _memory_candidates(self, qp: _QueryPre) -> None:
        """The hybrid pool's floor and session candidates of ``qp``'s query, their features and items."""
        cands = self.pipeline.candidates(qp.query)
        paths = [p for p in cands.paths if p.kind in ("floor", "session")][: self.n_mem]
        info = cands.context.path_info
        feats = np.zeros((len(paths), len(MEMORY_FEATURES)), dtype=np.float32)
        builder = self.pipeline.state(qp.query.graph_id).builder
        items = []
        for i, p in enumerate(paths):
            rec = info.get(p.id, {})
            rank = rec.get("floor_rank", -1.0)
            feats[i] = (
                p.kind == "floor", p.kind == "session", 1.0 / (1.0 + rank) if rank >= 0 else 0.0,
                rec.get("flat_fused", 0.0), rec.get("session_distance", -1.0), rec.get("memory_sim", 0.0),
            )  # fmt: skip
            unit = builder.construct(p, at=qp.query.timestamp)
            items.append(self.rating.items(qp.query, unit.items, (), text=unit.text))
        qp.mem_paths, qp.mem_feats, qp.mem_items = paths, np.clip(feats, -1e3, 1e3), items

    def _observe(self) -> dict[str, np.ndarray]:
        obs = self._observe_walk()
        if self.n_mem:
            ep, qp = self._ep, self._qp
            assert ep is not None and qp is not None
            mem = np.zeros((self.n_mem, len(MEMORY_FEATURES)), dtype=np.float32)
            mem[: len(qp.mem_feats)] = qp.mem_feats
            inject = np.zeros(self.n_mem, dtype=np.int8)
            if not ep.done:
                inject[: len(qp.mem_paths)] = 1
                inject[ep.injected] = 0
            self._mask = np.concatenate([obs["action_mask"], inject])
            obs["action_mask"] = self._mask.copy()
            obs["memories"] = mem
        return obs

    def _observe_walk(self) -> dict[str, np.ndarray]:
        ep, qp = self._ep, self._qp
        assert ep is not None and qp is not None
        hops = len(ep.slots)
        depth_left = self._depth - hops
        p = ep.cs_product
        if ep.node < 0 or ep.done:
            node_f = np.zeros(len(NODE_FEATURES), dtype=np.float32)
            edges = self._no_edges.copy()
            self._mask = self._end_only
        else:
            node = self._node_now = qp.nodes.get(ep.node) or self._node(qp, ep.node)
            end = node.ending
            covered = ep.covered
            node_f = end.template.copy()
            node_f[7] = p * end.end_factor
            if covered and (covered.issuperset(end.attrs) if end.attrs else self._covered(ep, end.attrs)):
                node_f[8] = 1.0
            if depth_left > 0:
                on_path = ep.nodes
                excluded = tuple(j for j, v in enumerate(node.neighbors) if v in on_path)
                view = self._view = self._view_of(node, excluded)
                edges = view.edges.copy()
                if p != 1.0:
                    for i, base in enumerate(view.prior):
                        edges[i, 12] = p * base
                if covered:
                    endings = qp.endings
                    for i, j in enumerate(view.follow):
                        attrs = endings[node.neighbors[j]].attrs
                        if attrs:
                            if covered.issuperset(attrs):
                                edges[i, 13] = 1.0
                        elif self._covered(ep, attrs, node.slots[j]):
                            edges[i, 13] = 1.0
                self._mask = view.mask
            else:
                edges = self._no_edges.copy()
                self._mask = self._stop_end
        return {
            "query": qp.qfeat.copy(),
            "node": node_f,
            "path": np.array(
                (hops * self._per_hop, p, ep.cs_min, ep.backward / hops if hops else 0.0), np.float32
            ),
            "edges": edges,
            "action_mask": self._mask.copy(),
            "budgets": np.array((depth_left, self.path_budget - ep.stopped), np.float32),
        }

    def _info(
        self,
        obs: dict[str, np.ndarray],
        stopped: bool,
        rating: int,
        rated: bool,
        duplicate: bool,
        penalty: float,
    ) -> dict[str, Any]:
        return {
            "query_id": self._ep.query_id,  # type: ignore[union-attr]
            "action_mask": obs["action_mask"],  # the observation's array (a new one every step)
            "stopped": stopped,
            "rating": rating,
            "rated": rated,
            "duplicate": duplicate,
            "penalty": penalty,
        }

    # -- inspection ------------------------------------------------------------------------------------

    def stopped_paths(self) -> list[Path]:
        """The paths stopped so far this episode, as :class:`Path` objects (store ids)."""
        ep, qp = self._ep, self._qp
        if ep is None or qp is None:
            return []
        a = qp.pre.arrays
        out = []
        for nodes, slots, aspect, attrs, _ in ep.stops:
            out.append(Path(tuple(csr_hops(a, nodes, slots, aspect, attrs)), strategy="edgewalk"))
        out += [qp.mem_paths[k] for k in ep.injected]  # then the injected floor and session candidates
        return out

    def stopped_ratings(self) -> list[int]:
        """The rating each stopped path earned this episode (0 for unrated and duplicates), then each
        injected hybrid candidate's."""
        return [] if self._ep is None else [s[4] for s in self._ep.stops] + list(self._ep.injected_ratings)

    def memories(self) -> list[Unit]:
        """The constructed memories of the paths stopped so far (:meth:`MemoryBuilder.construct`)."""
        if self._qp is None:
            return []
        query = self._qp.query
        builder = self.pipeline.state(query.graph_id).builder
        return [builder.construct(p, at=query.timestamp) for p in self.stopped_paths()]

    # -- pickling (QueryEpisodeEnv): the walk's state; the per-query caches are rebuilt -----------------

    def _episode_state(self) -> dict[str, Any]:
        return {"episode": self._ep}

    def _restore_episode(self, state: dict[str, Any]) -> None:
        self._ep = state["episode"]
        if self._ep is not None:
            self._qp = self._query(self.pipeline.query(self._ep.query_id))
            self._observe()
