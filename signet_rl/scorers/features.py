"""Features for learned path scorers: what a query looks like, and what a candidate path looks like.

* :func:`time_features` — hour of day and day of week on the unit circle (UTC): ``[4]``.
* :class:`QueryFeaturizer` — ``[text embedding, predicted intent one-hot, time features]`` for a query. The
  intent is *predicted* (by default with :class:`~signet_rl.retrieval.intent.RuleIntentClassifier`), never
  read from ground truth.
* :class:`PathFeaturizer` — hand-made features of a batch of candidate paths, ``float32 [n, dim]``, with the
  column names in :attr:`PathFeaturizer.names` (documented there). Id -> row lookups and text vectors are
  built once per graph; a call does one Python pass over the paths' hops to collect row indices and then
  works on arrays.

Both are plain numpy: the linear (:mod:`signet_rl.scorers.linear`) and GNN (:mod:`signet_rl.scorers.gnn`)
scorers and the Gymnasium environments share them.

    >>> qf = QueryFeaturizer()
    >>> q = Query(id="q", text="what does billing-api use?", graph_id="g", split="test")
    >>> qf.intent(q), qf.features(q).shape
    ('what', (393,))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.retrieval.intent import INTENTS as _CLASSIFIER_INTENTS
from signet_rl.retrieval.intent import IntentClassifier, RuleIntentClassifier
from signet_rl.scorers.base import ScoringContext
from signet_rl.text.encoders import Encoder, encode_query, make_encoder
from signet_rl.traversal.path import HopKind, Path

__all__ = [
    "EDGE_STAT_DIM",
    "HYBRID_FEATURES",
    "INTENTS",
    "PATH_FEATURES",
    "STRATEGY_NAMES",
    "TIME_FEATURES",
    "EdgeStats",
    "PathBatch",
    "PathFeaturizer",
    "PerGraphFeaturizers",
    "QueryFeaturizer",
    "floor_first",
    "floor_prior",
    "intent_one_hot",
    "time_features",
]

FloatArray = npt.NDArray[np.float32]

#: The intents, in one-hot column order (the intent classifier's order).
INTENTS: tuple[str, ...] = ("what", "relate", "action", "changed", "none")
assert INTENTS == _CLASSIFIER_INTENTS
_INTENT_INDEX = {name: i for i, name in enumerate(INTENTS)}
#: Names of the :func:`time_features` columns.
TIME_FEATURES: tuple[str, ...] = ("hour_sin", "hour_cos", "weekday_sin", "weekday_cos")
#: Traversal strategies a path may carry (``Path.strategy``), in flag-column order.
STRATEGY_NAMES: tuple[str, ...] = ("what", "relate", "action", "changed")
#: Width of :meth:`EdgeStats.features`.
EDGE_STAT_DIM = 3
#: Queries embed their first this many characters.
MAX_QUERY_CHARS = 1000
DAY = 86400.0
#: Half-life of the recency factor inside the hand-made ``prior`` feature: PriorScorer's default before its
#: study (issue 25 §3) and fixed since, because it is part of a feature's definition (a saved or exported
#: policy reads the feature as it was trained on); ``log_age`` beside it lets a learned scorer weigh recency
#: as it likes, and the tuned half-life reaches the learned scorers through their base scores.
PRIOR_FEATURE_HALF_LIFE_DAYS = 90.0


def time_features(ts: pd.Timestamp | float | None) -> FloatArray:
    """Hour of day and day of week of ``ts`` (UTC) on the unit circle.

    Args:
        ts: a timestamp (naive ones are taken as UTC), epoch seconds, or None.

    Returns:
        ``float32 [4]``: ``sin, cos`` of ``2π·hour/24`` (hour with minutes as a fraction) and of
        ``2π·weekday/7`` (Monday 0); zeros when ``ts`` is None or NaT/NaN.

        >>> time_features(pd.Timestamp("2026-01-05T06:00Z")).round(3).tolist()   # a Monday, 06:00
        [1.0, 0.0, 0.0, 1.0]
    """
    out = np.zeros(4, dtype=np.float32)
    if ts is None:
        return out
    if isinstance(ts, int | float | np.integer | np.floating) and not isinstance(ts, bool):
        if not math.isfinite(float(ts)):
            return out
        stamp = pd.Timestamp(float(ts), unit="s", tz="UTC")
    else:
        stamp = pd.Timestamp(ts)
        if pd.isna(stamp):
            return out
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    hour = stamp.hour + stamp.minute / 60.0 + stamp.second / 3600.0
    h, w = 2.0 * math.pi * hour / 24.0, 2.0 * math.pi * stamp.weekday() / 7.0
    out[:] = (math.sin(h), math.cos(h), math.sin(w), math.cos(w))
    return out


def intent_one_hot(intent: str | None) -> FloatArray:
    """``float32 [5]`` one-hot over :data:`INTENTS`; all zeros for None.

    Raises:
        ValueError: an intent not in :data:`INTENTS`.
    """
    out = np.zeros(len(INTENTS), dtype=np.float32)
    if intent is None:
        return out
    if intent not in _INTENT_INDEX:
        raise ValueError(f"unknown intent {intent!r}; expected one of: {', '.join(INTENTS)}")
    out[_INTENT_INDEX[intent]] = 1.0
    return out


class QueryFeaturizer:
    """A query as ``[text embedding, intent one-hot, time features]``, ``float32 [dim]``.

    Args:
        encoder: an :class:`~signet_rl.text.encoders.Encoder` or its name (``hashing``, ``minilm``).
        classifier: predicts the intent from the query text (default: the rule-based classifier). Ground
            truth is never consulted.

    Attributes:
        dim: ``encoder.dim + 5 + 4``.
        embedding_dim: ``encoder.dim``.
    """

    #: Most query embeddings kept (a scorer featurises a query when scoring and again when updating).
    CACHE_SIZE = 4096

    def __init__(
        self, encoder: str | Encoder = "hashing", classifier: IntentClassifier | None = None
    ) -> None:
        self.encoder: Encoder = make_encoder(encoder) if isinstance(encoder, str) else encoder
        self.classifier: IntentClassifier = classifier or RuleIntentClassifier()
        self.embedding_dim = int(self.encoder.dim)
        self.dim = self.embedding_dim + len(INTENTS) + len(TIME_FEATURES)
        self._intents: dict[str, str] = {}

    def embed(self, text: str) -> FloatArray:
        """The L2-normalised embedding of ``text`` (its first 1,000 characters), read-only, memoised
        process-wide (:func:`~signet_rl.text.encoders.encode_query`: the retrievers share it)."""
        return encode_query(self.encoder, text[:MAX_QUERY_CHARS])

    def intent(self, query: Query) -> str:
        """The predicted intent of ``query`` (``none`` for an empty text)."""
        text = query.text or ""
        if not text.strip():
            return "none"
        found = self._intents.get(text)
        if found is None:
            found = self.classifier.predict([text])[0]
            if len(self._intents) >= self.CACHE_SIZE:
                self._intents.pop(next(iter(self._intents)))
            self._intents[text] = found
        return found

    def features(self, query: Query, intent: str | None = None) -> FloatArray:
        """``float32 [dim]``: embedding, one-hot of ``intent`` (predicted when None), time features."""
        intent = self.intent(query) if intent is None else intent
        return np.concatenate(
            [self.embed(query.text or ""), intent_one_hot(intent), time_features(query.timestamp)]
        ).astype(np.float32, copy=False)


@runtime_checkable
class EdgeStats(Protocol):
    """Learned desire-path statistics per dependency edge (row of ``arrays.edge_ids``)."""

    def features(self, edge_idx: np.ndarray) -> np.ndarray:
        """``[m, 3]`` statistics of the edges ``edge_idx``."""

    def weight(self, edge_idx: np.ndarray) -> np.ndarray:
        """``[m]`` learned weights of the edges ``edge_idx``."""


def floor_prior(
    paths: Sequence[Path], context: ScoringContext, scale: float = 1.0
) -> npt.NDArray[np.float64]:
    """The learned scorers' frozen base over the hybrid entry's floor: ``scale / (1 + rank)`` for a path on
    the floor (``ScoringContext.path_info[...]["floor_rank"] = rank >= 0``: its position in ``best_flat``'s
    ranking), 0 for every other candidate; ``[len(paths)]``.

    A scorer with ``floor_prior > 0`` scores ``floor_prior(path) + residual(path)`` and learns only the
    residual (started at exactly 0): untrained, it ranks the floor first in flat's order (floor values are
    > 0 and strictly decreasing with the rank, the rest 0), so its slate is ``best_flat``'s; ratings move a
    path away from that order only where they say so. Flat's tail is held more loosely than its head (the
    gaps shrink as ``1 / rank^2``). Reads flat's ranking only, never ground truth.

        >>> from signet_rl.traversal.path import Hop
        >>> ps = [Path((Hop.memory(m),), strategy="floor") for m in ("a", "b", "c")]
        >>> info = {ps[0].id: {"floor_rank": 0.0}, ps[1].id: {"floor_rank": 1.0}}
        >>> ctx = ScoringContext(None, None, path_info=info)  # type: ignore[arg-type]
        >>> floor_prior(ps, ctx).tolist()
        [1.0, 0.5, 0.0]
    """
    info = context.path_info
    rank = np.asarray([info.get(p.id, {}).get("floor_rank", -1.0) for p in paths], dtype=np.float64)
    return np.where(rank >= 0, float(scale) / (1.0 + np.maximum(rank, 0.0)), 0.0)


def floor_first(scores: np.ndarray, paths: Sequence[Path], info: dict[str, dict[str, float]]) -> np.ndarray:
    """Scores that put the floor first, in flat's ranking, then every other candidate in the scorer's
    order: floor paths get ``2 - rank / n`` (in ``(1, 2]``), the others their scorer rank mapped into
    ``[0, 1)``. The non-learned desire retriever uses it, so its slate starts with what flat would inject
    (unless a unit above already carries it) and fills what is left with walk and session units; Signet's
    predictor takes it as its baseline ranking over the hybrid entry (best_flat's order is the analogue of
    Signet's own flat recall). Reads flat's ranking only, never ground truth."""
    n = len(paths)
    out = np.zeros(n, dtype=np.float64)
    floor = np.asarray([info.get(p.id, {}).get("floor_rank", -1.0) >= 0 for p in paths], dtype=bool)
    ranks = np.asarray([info.get(p.id, {}).get("floor_rank", -1.0) for p in paths], dtype=np.float64)
    nf = max(int(floor.sum()), 1)
    out[floor] = 2.0 - ranks[floor] / nf
    rest = np.flatnonzero(~floor)
    if len(rest):
        order = rest[np.argsort(-np.asarray(scores, dtype=np.float64)[rest], kind="stable")]
        out[order] = 1.0 - (np.arange(len(order)) + 1.0) / (len(order) + 1.0)
    return out


#: :class:`PathFeaturizer` column names, in order (see its docstring for each one's meaning).
#: Columns about the hybrid entry (flat's floor, session steps, entity walks); see :class:`PathFeaturizer`.
HYBRID_FEATURES: tuple[str, ...] = (
    "flat_vector",
    "flat_keyword",
    "flat_fused",
    "floor_rank_inv",
    "type_floor",
    "type_session",
    "type_walk",
    "path_length",
    "session_distance",
    "query_overlap",
    "edge_conf_mean",
    "memory_sim",
    "n_memories",
    "log_chars",
    "flat_any",
    "flat_any_rank_inv",
    "neigh_flat_max",
    "neigh_flat_sum",
)
PATH_FEATURES: tuple[str, ...] = (
    "n_dependencies",
    "n_attributes",
    "has_aspect",
    "cs_product",
    "cs_min",
    "aspect_weight",
    "importance_mean",
    "log_age_days",
    "prior",
    "starts_at_entry",
    "end_log_degree",
    "same_community",
    "backward_fraction",
    "constraint_fraction",
    "stale_fraction",
    "attr_sim_max",
    "attr_sim_mean",
    "end_name_sim",
    *(f"desire_stat_{i}" for i in range(EDGE_STAT_DIM)),
    "desire_weight_mean",
    "explorer",
    *(f"strategy_{s}" for s in STRATEGY_NAMES),
    "strategy_matches_intent",
    *HYBRID_FEATURES,
)


class PathBatch:
    """Row indices of every hop of a batch of paths, flattened, with the path (``*_owner``) and the
    position in the path (``*_pos``) of each hop. Built by :meth:`PathFeaturizer.index`.

    Attributes:
        start, end: first and last entity row of each path. Shape ``[n]``.
        asp, asp_pos: aspect row and its position, -1 when the path has no aspect. Shape ``[n]``.
        length: number of hops of each path. Shape ``[n]``.
        ent, ent_owner, ent_pos: entity hops.
        dep, dep_dir, dep_owner, dep_pos: dependency hops (``dep_dir`` is the walked direction, ±1).
        att, att_owner, att_pos: attribute hops.
    """

    __slots__ = (
        "asp", "asp_pos", "att", "att_owner", "att_pos", "dep", "dep_dir", "dep_owner", "dep_pos",
        "end", "ent", "ent_owner", "ent_pos", "length", "start",
    )  # fmt: skip

    def __init__(self, n: int) -> None:
        self.start = np.full(n, -1, dtype=np.int64)  # -1: the path holds no entity (a memory path)
        self.end = np.full(n, -1, dtype=np.int64)
        self.asp = np.full(n, -1, dtype=np.int64)
        self.asp_pos = np.full(n, -1, dtype=np.int64)
        self.length = np.zeros(n, dtype=np.int64)
        empty = np.zeros(0, dtype=np.int64)
        self.ent, self.ent_owner, self.ent_pos = empty, empty, empty
        self.dep, self.dep_owner, self.dep_pos = empty, empty, empty
        self.dep_dir = np.zeros(0, dtype=np.float32)
        self.att, self.att_owner, self.att_pos = empty, empty, empty


class _LazyVectors:
    """Text embeddings of a fixed list of texts, encoded on demand and kept (rows in first-asked order)."""

    def __init__(self, texts: np.ndarray, encoder: Encoder) -> None:
        self.texts = texts
        self.encoder = encoder
        self.row = np.full(len(texts), -1, dtype=np.int64)
        self.store = np.zeros((0, int(encoder.dim)), dtype=np.float32)
        self.filled = 0

    def get(self, idx: npt.ArrayLike | None) -> FloatArray:
        rows = np.arange(len(self.texts)) if idx is None else np.asarray(idx, dtype=np.int64).reshape(-1)
        missing = np.unique(rows[self.row[rows] < 0])
        if len(missing):
            vectors = np.asarray(self.encoder.encode(self.texts[missing].tolist()), dtype=np.float32)
            need = self.filled + len(missing)
            if need > len(self.store):
                grown = np.zeros((max(need, 2 * len(self.store), 64), self.store.shape[1]), dtype=np.float32)
                grown[: self.filled] = self.store[: self.filled]
                self.store = grown
            self.store[self.filled : need] = vectors
            self.row[missing] = np.arange(self.filled, need)
            self.filled = need
        return self.store[self.row[rows]]


class PathFeaturizer:
    """Hand-made features of candidate paths over one graph, vectorised over a batch.

    Columns (:attr:`names`, :data:`PATH_FEATURES`); "edges" are the path's dependency hops, "attributes"
    its attribute hops, "end" its last entity, ``t`` the context's timestamp:

    * ``n_dependencies``: number of dependency hops.
    * ``n_attributes``: number of attribute hops.
    * ``has_aspect``: 1 when the path ends in an aspect.
    * ``cs_product``, ``cs_min``: product and smallest confidence × strength over the edges (1 with none).
    * ``aspect_weight``: the aspect's weight (1 with no aspect, as in the prior).
    * ``importance_mean``: mean attribute importance (1 with no attributes, as in the prior).
    * ``log_age_days``: ``ln(1 + age in days)`` of the newest attribute at ``t`` (0 with no attributes or
      no ``t``; negative ages count as 0).
    * ``prior``: :class:`~signet_rl.scorers.prior.PriorScorer`'s score (half-life 90 days), without its
      optional query-relevance factor (the ``attr_sim_*`` columns carry that).
    * ``starts_at_entry``: 1 when the path starts at one of the context's entry entities.
    * ``end_log_degree``: ``ln(1 + degree)`` of the end entity, counting the edges that existed at ``t``.
    * ``same_community``: 1 when the end entity shares a (known) community with an entry entity, in the
      communities of ``t`` (:meth:`~signet_rl.graph.timeslice.TimeSlices.community`: a daily snapshot,
      never the stored whole-timeline partition).
    * ``backward_fraction``: share of edges walked target → source (0 with no edges).
    * ``constraint_fraction``: share of attributes that are constraints (0 with none).
    * ``stale_fraction``: share of attributes superseded by a row created at or before ``t`` (0 with none
      or no ``t``).
    * ``attr_sim_max``, ``attr_sim_mean``: max / mean cosine of the query embedding with the attributes'
      contents (0 with no attributes or no query vector).
    * ``end_name_sim``: cosine of the query embedding with the end entity's name (0 with no query vector).
    * ``desire_stat_0..2``: mean of ``edge_stats.features`` over the edges (0 with no edges or no stats).
    * ``desire_weight_mean``: mean of ``edge_stats.weight`` over the edges (0 with no edges or no stats).
    * ``explorer``: ``Path.explorer``.
    * ``strategy_<s>``: 1 when ``Path.strategy`` is ``s`` (what, relate, action, changed).
    * ``strategy_matches_intent``: 1 when ``Path.strategy`` equals the ``intent`` passed in.

    The hybrid entry's columns (:data:`HYBRID_FEATURES`; read from ``ScoringContext.path_info``, 0 without
    it — never QA category, evidence ids or observation evidence):

    * ``flat_vector``, ``flat_keyword``, ``flat_fused``: the flat retriever's own scores of the row a floor
      path injects (0 off the floor).
    * ``floor_rank_inv``: ``1 / (1 + rank)`` in flat's ranking (0 off the floor).
    * ``type_floor``, ``type_session``, ``type_walk``: the path type (:attr:`Path.kind`).
    * ``path_length``: :attr:`Path.length` (hops after the start).
    * ``session_distance``: sessions between the injected memory and the nearest floor hit (-1 unknown).
    * ``query_overlap``: entities on the path, or mentioned by its memories, that entry search found for
      the query.
    * ``edge_conf_mean``: mean confidence of the path's dependencies (0 with none).
    * ``memory_sim``: the best cosine of the injected memories with the query (0 with none).
    * ``n_memories``: memory hops.
    * ``log_chars``: ``ln(1 + length)`` of the candidate's constructed text (longer turns hold evidence
      more often, and cost more budget).
    * ``flat_any``, ``flat_any_rank_inv``: the flat retriever's fused score of the injected memory over its
      top score, and ``1 / (1 + rank)``, anywhere in its whole ranking (so session and walk units get them
      too; 0 where flat does not rank the memory).
    * ``neigh_flat_max``, ``neigh_flat_sum``: max / sum of those relative flat scores over the turns up to
      two places either side in the same session (context smoothing:
      :meth:`~signet_rl.pipeline.hybrid.HybridEntry.flat_context`).

    Paths that start at a memory (floor and session paths) have no start or end entity: the entity columns
    (``starts_at_entry``, ``end_log_degree``, ``same_community``, ``end_name_sim``) are 0 for them.

    Args:
        graph: the graph (attribute contents and entity names for the similarity columns).
        arrays: its array view; paths' store ids are mapped to its rows.
        encoder: encodes attribute contents and entity names (same space as the query vector).
        edge_stats: optional :class:`EdgeStats` (desire-path statistics per edge).

    Raises:
        KeyError: (from :meth:`features`) a path holding an id this graph does not have, naming it.
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        arrays: GraphArrays,
        encoder: str | Encoder = "hashing",
        edge_stats: EdgeStats | None = None,
    ) -> None:
        self.graph = graph
        self.arrays = arrays
        self.encoder: Encoder = make_encoder(encoder) if isinstance(encoder, str) else encoder
        self.edge_stats = edge_stats
        self.names: tuple[str, ...] = PATH_FEATURES
        self.dim = len(self.names)
        self._col = {name: j for j, name in enumerate(self.names)}
        a = arrays
        self.entity_index = a.entity_index
        self.edge_index = {str(k): i for i, k in enumerate(a.edge_ids)}
        self.aspect_index = {str(k): i for i, k in enumerate(a.aspect_ids)}
        self.attr_index = {str(k): i for i, k in enumerate(a.attribute_ids)}
        self._cs = (a.edge_confidence * a.edge_strength).astype(np.float64)
        self._log_cs = np.log(np.maximum(self._cs, 1e-12))
        #: degrees and communities as they were at the query time (nothing later is counted)
        self.slices = TimeSlices(a)
        sb = a.attr_superseded_by
        # When each attribute's successor was created (inf when it has none: never stale).
        self._sb_created = np.where(sb >= 0, a.attr_created[np.maximum(sb, 0)], np.inf)
        self._attr_vectors: _LazyVectors | None = None
        self._aspect_vectors: _LazyVectors | None = None
        self._entity_vectors: FloatArray | None = None
        self._memory_vectors: _LazyVectors | None = None
        self._memory_index: dict[str, int] = {}

    # -- text vectors (encoded on first use, once per row) -----------------------------------------

    def _column(self, frame: pd.DataFrame, column: str, ids: np.ndarray) -> _LazyVectors:
        texts = frame.set_index("id")[column].reindex(ids).fillna("").astype(str).to_numpy(dtype=object)
        return _LazyVectors(texts, self.encoder)

    def attribute_vectors(self, idx: npt.ArrayLike | None = None) -> FloatArray:
        """Embeddings of attribute contents: rows ``idx`` of ``arrays.attribute_ids`` (all when None),
        ``[len(idx), d]``. Each row is encoded the first time it is asked for and kept (a 43k-entity graph
        holds ~260k attributes; a query touches a few hundred)."""
        if self._attr_vectors is None:
            self._attr_vectors = self._column(self.graph.attributes, "content", self.arrays.attribute_ids)
        return self._attr_vectors.get(idx)

    def aspect_vectors(self, idx: npt.ArrayLike | None = None) -> FloatArray:
        """Embeddings of aspect names: rows ``idx`` of ``arrays.aspect_ids`` (all when None), ``[m, d]``;
        encoded on first use, like :meth:`attribute_vectors`."""
        if self._aspect_vectors is None:
            self._aspect_vectors = self._column(self.graph.aspects, "name", self.arrays.aspect_ids)
        return self._aspect_vectors.get(idx)

    def memory_vectors(self, ids: Sequence[str]) -> FloatArray:
        """Embeddings of memory contents by memory id, ``[len(ids), d]`` (the floor and session units of the
        hybrid entry are memories); encoded on first use, like :meth:`attribute_vectors`.

        Raises:
            KeyError: a memory id the graph does not hold, named.
        """
        if self._memory_vectors is None:
            mem_ids = self.graph.memories["id"].astype(str).to_numpy()
            self._memory_index = {k: i for i, k in enumerate(mem_ids)}
            self._memory_vectors = self._column(self.graph.memories, "content", mem_ids)
        missing = [m for m in ids if str(m) not in self._memory_index]
        if missing:
            raise KeyError(f"memory_vectors: memory id {missing[0]!r} is not in the graph")
        return self._memory_vectors.get([self._memory_index[str(m)] for m in ids])

    def entity_vectors(self) -> FloatArray:
        """Embeddings of every entity's name, in ``arrays.entity_ids`` order: ``[N, d]`` (all encoded at
        the first call, then kept)."""
        if self._entity_vectors is None:
            lazy = self._column(self.graph.entities, "name", self.arrays.entity_ids)
            self._entity_vectors = lazy.get(None)
            self._entity_vectors.setflags(write=False)
        return self._entity_vectors

    # -- batch indexing -----------------------------------------------------------------------------

    def index(self, paths: Sequence[Path]) -> PathBatch:
        """Row indices of every hop of ``paths`` (one Python pass; the rest is arrays).

        Raises:
            KeyError: a path holding an id this graph does not have, naming the path and the id.
        """
        n = len(paths)
        b = PathBatch(n)
        # (row, owner, position) triples per hop kind; dependencies add the direction
        ent: list[int] = []
        dep: list[int] = []
        att: list[int] = []
        dep_dir: list[int] = []
        ent_idx, edg, asp, atr = self.entity_index, self.edge_index, self.aspect_index, self.attr_index
        E, D, T, M = HopKind.ENTITY, HopKind.DEPENDENCY, HopKind.ATTRIBUTE, HopKind.MEMORY
        try:
            for i, p in enumerate(paths):
                for j, h in enumerate(p.hops):
                    kind = h.kind
                    if kind is M:
                        continue  # memory hops: counted from the path itself (n_memories)
                    if kind is E:
                        ent += (ent_idx[h.id], i, j)
                    elif kind is D:
                        dep += (edg[h.id], i, j)
                        dep_dir.append(h.direction)
                    elif kind is T:
                        att += (atr[h.id], i, j)
                    else:
                        b.asp[i] = asp[h.id]
                        b.asp_pos[i] = j
                b.length[i] = len(p.hops)
        except KeyError as exc:
            raise KeyError(f"path {p.serialise()!r}: id {exc.args[0]!r} is not in this graph") from None
        e3 = np.asarray(ent, dtype=np.int64).reshape(-1, 3)
        d3 = np.asarray(dep, dtype=np.int64).reshape(-1, 3)
        t3 = np.asarray(att, dtype=np.int64).reshape(-1, 3)
        b.ent, b.ent_owner, b.ent_pos = e3[:, 0], e3[:, 1], e3[:, 2]
        b.dep, b.dep_owner, b.dep_pos = d3[:, 0], d3[:, 1], d3[:, 2]
        b.att, b.att_owner, b.att_pos = t3[:, 0], t3[:, 1], t3[:, 2]
        b.dep_dir = np.asarray(dep_dir, dtype=np.float32)
        if n:
            # entity hops are in path order: each path's first and last
            first = np.ones(len(e3), dtype=bool)
            first[1:] = b.ent_owner[1:] != b.ent_owner[:-1]
            last = np.ones(len(e3), dtype=bool)
            last[:-1] = first[1:]
            b.start[b.ent_owner[first]] = b.ent[first]
            b.end[b.ent_owner[last]] = b.ent[last]
        return b

    # -- features -----------------------------------------------------------------------------------

    def features(
        self,
        paths: Sequence[Path],
        context: ScoringContext,
        query_vec: np.ndarray | None = None,
        intent: str | None = None,
        batch: PathBatch | None = None,
    ) -> FloatArray:
        """The feature matrix of ``paths`` (see the class docstring for the columns).

        Args:
            paths: candidate paths over this featurizer's graph.
            context: the scoring context (entry entities, query time).
            query_vec: the query's embedding in the encoder's space (similarity columns are 0 without it).
            intent: the predicted intent (``strategy_matches_intent`` is 0 without it).
            batch: :meth:`index` of ``paths``, when the caller already has it.

        Returns:
            ``float32 [len(paths), dim]``.
        """
        n = len(paths)
        out = np.zeros((n, self.dim), dtype=np.float64)
        if n == 0:
            return out.astype(np.float32)
        a = self.arrays
        b = self.index(paths) if batch is None else batch
        col = self._col
        t = context.timestamp

        # edges
        n_dep = np.bincount(b.dep_owner, minlength=n).astype(np.float64)
        has_dep = n_dep > 0
        cs_prod = np.exp(np.bincount(b.dep_owner, weights=self._log_cs[b.dep], minlength=n))
        cs_prod[~has_dep] = 1.0
        cs_min = np.ones(n)
        np.minimum.at(cs_min, b.dep_owner, self._cs[b.dep])
        backward = np.bincount(b.dep_owner, weights=(b.dep_dir < 0).astype(np.float64), minlength=n)
        safe_dep = np.maximum(n_dep, 1.0)

        # aspect
        has_asp = b.asp >= 0
        asp_w = np.ones(n)
        asp_w[has_asp] = a.aspect_weight[b.asp[has_asp]]

        # attributes
        n_att = np.bincount(b.att_owner, minlength=n).astype(np.float64)
        has_att = n_att > 0
        safe_att = np.maximum(n_att, 1.0)
        imp = np.bincount(b.att_owner, weights=a.attr_importance[b.att].astype(np.float64), minlength=n)
        imp = np.where(has_att, imp / safe_att, 1.0)
        newest = np.full(n, -np.inf)
        np.maximum.at(newest, b.att_owner, a.attr_created[b.att])
        log_age = np.zeros(n)
        recency = np.ones(n)
        if t is not None:
            age = np.maximum(0.0, (float(t) - newest[has_att]) / DAY)
            log_age[has_att] = np.log1p(age)
            recency[has_att] = 0.5 ** (age / PRIOR_FEATURE_HALF_LIFE_DAYS)
            stale = (self._sb_created[b.att] <= float(t)).astype(np.float64)
        else:
            stale = np.zeros(len(b.att))
        constraint = (a.attr_kind[b.att] == 1).astype(np.float64)

        # entries and topology
        entries = np.fromiter(
            (self.entity_index[e] for e in context.entries if e in self.entity_index), dtype=np.int64
        )
        has_end = b.end >= 0
        end = np.maximum(b.end, 0)
        starts_entry = np.isin(b.start, entries) & (b.start >= 0)
        comm = self.slices.community(t)
        entry_comm = comm[entries]
        entry_comm = entry_comm[entry_comm >= 0]
        end_comm = comm[end] if len(comm) else np.full(n, -1)
        same_comm = has_end & (end_comm >= 0) & np.isin(end_comm, entry_comm)

        out[:, col["n_dependencies"]] = n_dep
        out[:, col["n_attributes"]] = n_att
        out[:, col["has_aspect"]] = has_asp
        out[:, col["cs_product"]] = cs_prod
        out[:, col["cs_min"]] = cs_min
        out[:, col["aspect_weight"]] = asp_w
        out[:, col["importance_mean"]] = imp
        out[:, col["log_age_days"]] = log_age
        out[:, col["prior"]] = cs_prod * asp_w * imp * recency
        out[:, col["starts_at_entry"]] = starts_entry
        log_degree = self.slices.cached(
            "log_degree", t, lambda: np.log1p(self.slices.degree(t).astype(np.float64))
        )
        out[:, col["end_log_degree"]] = np.where(has_end, log_degree[end] if len(log_degree) else 0.0, 0.0)
        out[:, col["same_community"]] = same_comm
        out[:, col["backward_fraction"]] = backward / safe_dep
        out[:, col["constraint_fraction"]] = (
            np.bincount(b.att_owner, weights=constraint, minlength=n) / safe_att
        )
        out[:, col["stale_fraction"]] = np.bincount(b.att_owner, weights=stale, minlength=n) / safe_att

        # similarity to the query
        if query_vec is not None:
            q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
            if len(b.att):
                sims = (self.attribute_vectors(b.att) @ q).astype(np.float64)
                smax = np.full(n, -np.inf)
                np.maximum.at(smax, b.att_owner, sims)
                out[:, col["attr_sim_max"]] = np.where(has_att, smax, 0.0)
                out[:, col["attr_sim_mean"]] = np.bincount(b.att_owner, weights=sims, minlength=n) / safe_att
            if a.num_entities:
                out[:, col["end_name_sim"]] = np.where(has_end, self.entity_vectors()[end] @ q, 0.0)

        # learned desire-path statistics
        if self.edge_stats is not None and len(b.dep):
            stats = np.asarray(self.edge_stats.features(b.dep), dtype=np.float64).reshape(len(b.dep), -1)
            if stats.shape[1] != EDGE_STAT_DIM:
                raise ValueError(
                    f"edge_stats.features returned {stats.shape[1]} columns; expected {EDGE_STAT_DIM}"
                )
            first = col["desire_stat_0"]
            for j in range(EDGE_STAT_DIM):
                out[:, first + j] = np.bincount(b.dep_owner, weights=stats[:, j], minlength=n) / safe_dep
            w = np.asarray(self.edge_stats.weight(b.dep), dtype=np.float64).reshape(-1)
            out[:, col["desire_weight_mean"]] = np.bincount(b.dep_owner, weights=w, minlength=n) / safe_dep

        # the hybrid entry: flat's own scores, path type and length, sessions, overlap, edge confidence
        conf = np.bincount(b.dep_owner, weights=a.edge_confidence[b.dep].astype(np.float64), minlength=n)
        out[:, col["edge_conf_mean"]] = np.where(has_dep, conf / safe_dep, 0.0)
        kinds = ("floor", "session", "walk")
        info_cols = ("flat_vector", "flat_keyword", "flat_fused", "session_distance", "query_overlap",
                     "memory_sim", "flat_any", "flat_any_rank_inv", "neigh_flat_max",
                     "neigh_flat_sum")  # fmt: skip
        for i, p in enumerate(paths):
            out[i, col["path_length"]] = p.length
            out[i, col["n_memories"]] = len(p.memories)
            out[i, col[f"type_{p.kind}"] if p.kind in kinds else col["type_walk"]] = 1.0
            rec = context.path_info.get(p.id)
            if rec is None:
                out[i, col["session_distance"]] = -1.0
                continue
            for name in info_cols:
                out[i, col[name]] = rec.get(name, 0.0)
            out[i, col["log_chars"]] = math.log1p(rec.get("chars", 0.0))
            rank = rec.get("floor_rank", -1.0)
            out[i, col["floor_rank_inv"]] = 1.0 / (1.0 + rank) if rank >= 0 else 0.0

        # how the path was found
        first = col["strategy_what"]
        match = col["strategy_matches_intent"]
        for i, p in enumerate(paths):
            if p.explorer:
                out[i, col["explorer"]] = 1.0
            s = p.strategy
            if s in STRATEGY_NAMES:
                out[i, first + STRATEGY_NAMES.index(s)] = 1.0
            if intent is not None and s == intent:
                out[i, match] = 1.0
        return out.astype(np.float32)

    def __repr__(self) -> str:
        return f"PathFeaturizer({self.arrays!r}, dim={self.dim}, edge_stats={self.edge_stats!r})"


class _OfArrays(Protocol):
    arrays: GraphArrays


S = TypeVar("S", bound=_OfArrays)


class PerGraphFeaturizers(Generic[S]):
    """What a learned scorer keeps per graph, built on first use around the graph's :class:`PathFeaturizer`.

    The LinUCB scorer keeps the featurizer itself, the GNN its tensors and node states around it
    (:meth:`_build_graph_state`). Graphs are told apart by their arrays (one per graph of a multi-graph
    dataset); the state is rebuilt when a graph's arrays object changes, and each graph may carry its own
    desire-path statistics (:meth:`attach_edge_stats`; ``edge_stats`` serves the others).

    A scorer calls :meth:`_init_graph_states` in its constructor, after ``query_featurizer`` is set (its
    encoder embeds the featurizer's texts).
    """

    edge_stats: EdgeStats | None
    query_featurizer: QueryFeaturizer

    def _init_graph_states(self, edge_stats: EdgeStats | None) -> None:
        self.edge_stats = edge_stats
        self._edge_stats_of: dict[int, EdgeStats] = {}
        self._graphs: dict[int, S] = {}

    def attach_edge_stats(self, arrays: GraphArrays, stats: EdgeStats) -> None:
        """Use ``stats`` as the desire-path statistics of the graph ``arrays`` views (one per graph in a
        multi-graph dataset; the constructor's ``edge_stats`` serves graphs with none attached)."""
        self._edge_stats_of[id(arrays)] = stats
        self.invalidate(arrays)

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        """Build what is kept for the graph now (done lazily on first use otherwise)."""
        self._graph_state(graph, arrays)

    def invalidate(self, arrays: GraphArrays | None = None) -> None:
        """Forget what is kept for ``arrays`` (for every graph when None); it is rebuilt on next use. Call
        it after ``edge_stats`` change."""
        if arrays is None:
            self._graphs.clear()
        else:
            self._graphs.pop(id(arrays), None)

    def forget(self, arrays: GraphArrays) -> None:
        """Drop everything kept for ``arrays`` (its state and attached statistics, and the base scores'
        lookups): the graph it views was replaced (:meth:`~signet_rl.pipeline.desire.DesirePathRetriever.\
replace_graph`). Arrays not seen are ignored."""
        self._graphs.pop(id(arrays), None)
        self._edge_stats_of.pop(id(arrays), None)
        base = getattr(self, "base", None)
        if base is not None:
            base.forget(arrays)

    def _graph_state(self, graph: KnowledgeGraph, arrays: GraphArrays) -> S:
        state = self._graphs.get(id(arrays))
        if state is None or state.arrays is not arrays:
            stats = self._edge_stats_of.get(id(arrays), self.edge_stats)
            featurizer = PathFeaturizer(graph, arrays, self.query_featurizer.encoder, stats)
            state = self._build_graph_state(graph, arrays, featurizer)
            self._graphs[id(arrays)] = state
        return state

    def _build_graph_state(self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer) -> S:
        """What is kept for a graph, given its featurizer."""
        raise NotImplementedError
