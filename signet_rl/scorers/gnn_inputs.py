"""The GNN scorer's parameter-free inputs, in numpy: the one definition of what
:class:`~signet_rl.scorers.gnn.GNNPathScorer` feeds its network, shared by torch training (which wraps
these arrays as tensors, zero-copy) and the served ONNX policy (:mod:`signet_rl.serving.gnn`, no torch).

:class:`GraphInputs` holds one graph's node and edge inputs (bucketed entity types, sketched name vectors,
community codes, log degrees; bucketed dependency types and numeric edge columns; the message edges both
ways; aspect-name buckets), at any query time (:meth:`GraphInputs.at`: degrees, communities and edges of
that time slice). :func:`path_inputs` turns several queries' candidate paths into per-path features (query
vector, hand features, standardised base scores, intent x aspect key) and per-hop arrays;
:func:`query_vector` is the query's feature vector.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.confidence import LADDER
from signet_rl.graph.model import DependencyType, EntityType, KnowledgeGraph
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.scorers.features import (
    EDGE_STAT_DIM,
    INTENTS,
    PathBatch,
    PathFeaturizer,
    QueryFeaturizer,
    intent_one_hot,
)
from signet_rl.scorers.features import time_features as time_feature_vector
from signet_rl.traversal.path import Path

__all__ = [
    "ATTR_NUMERIC_DIM",
    "DAY",
    "DESIRE_COLUMNS",
    "EDGE_NUMERIC_DIM",
    "KNOWN_DEPENDENCY_TYPES",
    "KNOWN_ENTITY_TYPES",
    "MAX_POSITIONS",
    "NAME_SKETCH_DIM",
    "GraphInputs",
    "NodeInputs",
    "PathInputs",
    "QueryPaths",
    "concat_batches",
    "path_inputs",
    "query_vector",
]

DAY = 86400.0
#: Entity types with a bucket of their own (others are hashed into the remaining buckets).
KNOWN_ENTITY_TYPES: tuple[str, ...] = (*EntityType.SIGNET, EntityType.EXTRACTED, EntityType.PRINCIPLE)
#: Dependency types with a bucket of their own.
KNOWN_DEPENDENCY_TYPES: tuple[str, ...] = DependencyType.SIGNET
#: Numeric edge columns: confidence, strength, reason rung one-hot, desire statistics, desire weight.
EDGE_NUMERIC_DIM = 2 + len(LADDER) + EDGE_STAT_DIM + 1
#: The numeric edge columns read from the learned desire-path statistics: the statistics, then the weight.
DESIRE_COLUMNS = slice(2 + len(LADDER), EDGE_NUMERIC_DIM)
#: Numeric attribute-hop columns: importance, ln(1 + age days), is_constraint, is_stale.
ATTR_NUMERIC_DIM = 4
#: Entity-name embeddings enter the net through a fixed Gaussian random projection to this many dimensions
#: (it keeps cosines roughly, and makes the per-pass learned projection of 43k names six times cheaper).
NAME_SKETCH_DIM = 64
#: Positions beyond this share the last position embedding.
MAX_POSITIONS = 32


def _bucket(name: str, known: tuple[str, ...], buckets: int) -> int:
    """A stable bucket for a type name: its own for a known name, else a CRC32 hash into the rest."""
    if name in known:
        return known.index(name)
    return len(known) + zlib.crc32(name.encode("utf-8")) % (buckets - len(known))


def _sketch(dim: int) -> np.ndarray:
    """The fixed ``[dim, NAME_SKETCH_DIM]`` random projection (the same in every process)."""
    rng = np.random.default_rng(20240601)
    return (rng.standard_normal((dim, NAME_SKETCH_DIM)) / np.sqrt(NAME_SKETCH_DIM)).astype(np.float32)


@dataclass
class NodeInputs:
    """Per-node inputs of one graph at one time: ``type_code [N]``, ``name_vec [N, 64]``, ``comm_code [N]``,
    ``log_degree [N, 1]``; and the message edges of that time, ``src``/``dst [M]`` with each message's
    dependency row ``mp_edge [M]`` and direction ``mp_dir [M]`` (+1 along the dependency, -1 against)."""

    type_code: np.ndarray
    name_vec: np.ndarray
    comm_code: np.ndarray
    log_degree: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    mp_edge: np.ndarray
    mp_dir: np.ndarray


class GraphInputs:
    """One graph's GNN inputs (see the module docstring); ``config`` is the scorer's constructor config
    (``type_buckets``, ``edge_type_buckets``, ``community_buckets``)."""

    def __init__(
        self,
        graph: KnowledgeGraph,
        arrays: GraphArrays,
        featurizer: PathFeaturizer,
        config: Mapping[str, Any],
    ) -> None:
        a = arrays
        self.graph, self.arrays, self.featurizer = graph, arrays, featurizer
        self.community_buckets = int(config["community_buckets"])
        self.slices = TimeSlices(a)
        type_codes = np.array(
            [_bucket(t, KNOWN_ENTITY_TYPES, int(config["type_buckets"])) for t in a.entity_type_vocab]
        )
        comm_codes = self.community_codes(graph.communities["id"].astype(str).tolist())
        n_edges = a.num_dependencies
        src, dst = a.edge_source.astype(np.int64), a.edge_target.astype(np.int64)
        self.nodes = NodeInputs(
            type_code=(type_codes[a.entity_type] if len(type_codes) else np.zeros(0, np.int64)).astype(
                np.int64
            ),
            name_vec=(featurizer.entity_vectors() @ _sketch(featurizer.encoder.dim)).astype(np.float32),
            comm_code=comm_codes[a.entity_community].astype(np.int64),
            log_degree=np.log1p(a.degree().astype(np.float32)).reshape(-1, 1),
            src=np.concatenate([src, dst]),
            dst=np.concatenate([dst, src]),
            mp_edge=np.tile(np.arange(n_edges, dtype=np.int64), 2),
            mp_dir=np.concatenate([np.ones(n_edges), -np.ones(n_edges)]).astype(np.float32),
        )
        dep_codes = np.array(
            [_bucket(t, KNOWN_DEPENDENCY_TYPES, int(config["edge_type_buckets"])) for t in a.dep_type_vocab]
        )
        self.edge_type = (dep_codes[a.edge_type] if n_edges else np.zeros(0, np.int64)).astype(np.int64)
        numeric = np.zeros((n_edges, EDGE_NUMERIC_DIM), dtype=np.float32)
        numeric[:, 0] = a.edge_confidence
        numeric[:, 1] = a.edge_strength
        numeric[np.arange(n_edges), 2 + a.edge_reason.astype(np.int64)] = 1.0
        desire = self.desire_columns()
        if desire is not None:
            numeric[:, DESIRE_COLUMNS] = desire
        self.edge_numeric = numeric
        sb = a.attr_superseded_by
        self.sb_created = np.where(sb >= 0, a.attr_created[np.maximum(sb, 0)], np.inf)
        self.aspect_names = (
            graph.aspects.set_index("id")["name"].reindex(a.aspect_ids).fillna("").astype(str).to_numpy()
        )
        self._aspect_codes: tuple[int, np.ndarray] | None = None

    def desire_columns(self) -> np.ndarray | None:
        """``float32 [E, EDGE_STAT_DIM + 1]``: every edge's desire-path statistics and learned weight, read
        from the featurizer's statistics now (the :data:`DESIRE_COLUMNS` of the edge features); None
        without statistics or edges."""
        stats, n = self.featurizer.edge_stats, self.arrays.num_dependencies
        if stats is None or not n:
            return None
        rows = np.arange(n)
        out = np.empty((n, EDGE_STAT_DIM + 1), dtype=np.float32)
        out[:, :EDGE_STAT_DIM] = np.asarray(stats.features(rows), dtype=np.float32).reshape(n, -1)
        out[:, EDGE_STAT_DIM] = np.asarray(stats.weight(rows), dtype=np.float32)
        return out

    def aspect_codes(self, buckets: int) -> np.ndarray:
        """Bucket of every aspect row's name (1 + CRC32 hash into ``buckets - 1``), with a trailing 0 (no
        aspect) for index -1; cached per bucket count."""
        hit = self._aspect_codes
        if hit is None or hit[0] != buckets:
            codes = [1 + zlib.crc32(n.strip().lower().encode()) % (buckets - 1) for n in self.aspect_names]
            hit = self._aspect_codes = (buckets, np.array([*codes, 0], dtype=np.int64))
        return hit[1]

    def community_codes(self, ids: Sequence[str]) -> np.ndarray:
        """Bucket codes of community ids (1 + hash), with a trailing 0 ("no community") for index -1."""
        return np.array([1 + zlib.crc32(c.encode()) % self.community_buckets for c in ids] + [0])

    def at(self, t: float | None) -> NodeInputs:
        """The node inputs and message edges at query time ``t`` (every edge, today's degrees and
        communities for None): nothing that did not exist at ``t`` reaches a node state."""
        if t is None:
            return self.nodes

        def make() -> NodeInputs:
            codes = self.community_codes(self.slices.community_labels(t) or [])
            keep = self.slices.edge_mask(t)[self.nodes.mp_edge]
            n = self.nodes
            return NodeInputs(
                type_code=n.type_code,
                name_vec=n.name_vec,
                comm_code=codes[self.slices.community(t)].astype(np.int64),
                log_degree=np.log1p(self.slices.degree(t).astype(np.float32)).reshape(-1, 1),
                src=n.src[keep], dst=n.dst[keep], mp_edge=n.mp_edge[keep], mp_dir=n.mp_dir[keep],
            )  # fmt: skip

        return self.slices.cached("served_gnn_nodes", t, make)


@dataclass
class PathInputs:
    """The parameter-free inputs of a batch of paths (one or several queries' over one graph): per path its
    query features and hand/base features, and per hop kind its rows, owning path and position.

    ``t_ent`` is the query time of each entity hop (NaN: no time), which decides the time slice its node
    state is computed on."""

    shape: tuple[int, int]  # paths, longest path's hop count
    query: np.ndarray  # [n, Dq] float32
    hand: np.ndarray | None  # [n, hand_feature_count] float32 (hand features on), else None
    base: np.ndarray | None  # [n, 3] float32 standardised prior / PPR / flat scores, or None
    aspect_key: np.ndarray | None  # [n] int64 intent x aspect-name bucket (aspect_buckets > 0), else None
    ent: np.ndarray
    ent_owner: np.ndarray
    ent_pos: np.ndarray
    t_ent: np.ndarray
    dep: np.ndarray
    dep_dir: np.ndarray
    dep_owner: np.ndarray
    dep_pos: np.ndarray
    asp_x: np.ndarray
    asp_owner: np.ndarray
    asp_pos: np.ndarray
    att_x: np.ndarray
    att_owner: np.ndarray
    att_pos: np.ndarray


@dataclass
class QueryPaths:
    """One query's candidate paths with what the net reads of the query (:func:`query_vector`)."""

    query: Any  # the Query (base scores read it)
    vector: np.ndarray  # its query features, float32 [Dq]
    intent: str  # its predicted intent
    paths: Sequence[Path]
    context: Any  # its ScoringContext


def path_inputs(
    inputs: GraphInputs,
    items: Sequence[QueryPaths],
    embedding_dim: int,
    hand_feature_count: int | None,
    base: Any | None = None,
    aspect_buckets: int = 0,
    base_rows: Sequence[np.ndarray] | None = None,
    query_text: bool = True,
    aspect_intent: bool = True,
) -> PathInputs:
    """The :class:`PathInputs` of several queries' paths over one graph (each item's paths non-empty).

    Args:
        inputs: the graph's inputs.
        items: the queries and their paths.
        embedding_dim: the encoder's dimension (the first columns of a query vector are the embedding the
            hand features compare texts with).
        hand_feature_count: the hand-made path features read (the first this many columns of
            :class:`~signet_rl.scorers.features.PathFeaturizer`); None: no hand features.
        base: a :class:`~signet_rl.scorers.fused.BaseScores` (the residual's inputs); None: none.
        aspect_buckets: the intent x aspect bias's aspect buckets (0: no bias).
        base_rows: each item's standardised base scores when the caller has them (an update standardises
            over every candidate of the query, as scoring did, and passes the rated rows); else they are
            computed over the item's paths.
        query_text: the net reads the query's text embedding (False: zeros in its place in ``query``; the
            hand features still compare texts with it).
        aspect_intent: key the aspect bias by (predicted intent, aspect) (False: by aspect alone).
    """
    feat, a = inputs.featurizer, inputs.arrays
    batches: list[PathBatch] = []
    hand, base_parts, intents, times = [], [], [], []
    for qi, item in enumerate(items):
        b = feat.index(item.paths)
        batches.append(b)
        n = len(item.paths)
        intents.append(np.full(n, INTENTS.index(item.intent) if aspect_intent else 0))
        times.append(np.full(n, np.nan if item.context.timestamp is None else float(item.context.timestamp)))
        if hand_feature_count is not None:
            emb = item.vector[:embedding_dim]
            rows = feat.features(item.paths, item.context, emb, item.intent, batch=b)[:, :hand_feature_count]
            hand.append(np.asarray(rows, dtype=np.float32))
        if base is not None:
            rows = base.features(item.query, item.paths, item.context) if base_rows is None else base_rows[qi]
            base_parts.append(np.asarray(rows, dtype=np.float32))
    b = concat_batches(batches)
    sizes = [len(item.paths) for item in items]
    query = np.repeat(np.stack([item.vector for item in items]).astype(np.float32), sizes, axis=0)
    if not query_text:
        query[:, :embedding_dim] = 0.0
    aspect_key = None
    if aspect_buckets:
        code = inputs.aspect_codes(aspect_buckets)[b.asp]  # -1 (no aspect) picks the trailing 0
        aspect_key = (np.concatenate(intents) * aspect_buckets + code).astype(np.int64)
    t_path = np.concatenate(times)  # query time per path (attribute ages and staleness)
    has = np.flatnonzero(b.asp >= 0)
    asp_rows = b.asp[has]
    asp_x = np.concatenate(
        [feat.aspect_vectors(asp_rows), a.aspect_weight[asp_rows].reshape(-1, 1)], axis=1
    ).astype(np.float32)
    t_att = t_path[b.att_owner]
    age = np.where(np.isnan(t_att), 0.0, np.maximum(0.0, (t_att - a.attr_created[b.att]) / DAY))
    stale = inputs.sb_created[b.att] <= np.nan_to_num(t_att, nan=-np.inf)  # no time: never stale
    att_num = np.stack(
        [a.attr_importance[b.att], np.log1p(age), a.attr_kind[b.att] == 1, stale], axis=1
    ).astype(np.float32)
    att_x = np.concatenate([feat.attribute_vectors(b.att), att_num], axis=1).astype(np.float32)
    return PathInputs(
        shape=(len(b.length), int(b.length.max())),
        query=query,
        hand=np.concatenate(hand) if hand_feature_count is not None else None,
        base=np.concatenate(base_parts) if base is not None else None,
        aspect_key=aspect_key,
        ent=b.ent, ent_owner=b.ent_owner, ent_pos=b.ent_pos, t_ent=t_path[b.ent_owner],
        dep=b.dep, dep_dir=b.dep_dir.astype(np.float32), dep_owner=b.dep_owner, dep_pos=b.dep_pos,
        asp_x=asp_x, asp_owner=has, asp_pos=b.asp_pos[has],
        att_x=att_x, att_owner=b.att_owner, att_pos=b.att_pos,
    )  # fmt: skip


def concat_batches(batches: Sequence[PathBatch]) -> PathBatch:
    """One :class:`~signet_rl.scorers.features.PathBatch` of several, with owners shifted."""
    if len(batches) == 1:
        return batches[0]
    sizes = np.array([len(b.length) for b in batches])
    shift = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = PathBatch(int(sizes.sum()))
    for name in ("start", "end", "asp", "asp_pos", "length"):
        setattr(out, name, np.concatenate([getattr(b, name) for b in batches]))
    for kind in ("ent", "dep", "att"):
        setattr(out, kind, np.concatenate([getattr(b, kind) for b in batches]))
        setattr(out, f"{kind}_pos", np.concatenate([getattr(b, f"{kind}_pos") for b in batches]))
        owners = [getattr(b, f"{kind}_owner") + s for b, s in zip(batches, shift, strict=True)]
        setattr(out, f"{kind}_owner", np.concatenate(owners))
    out.dep_dir = np.concatenate([b.dep_dir for b in batches])
    return out


def query_vector(
    query_featurizer: QueryFeaturizer,
    query: Any,
    time_features: bool,
    embedding: np.ndarray | None = None,
    intent: str | None = None,
) -> tuple[np.ndarray, str]:
    """The query features the GNN reads and the predicted intent: ``[embedding, intent one-hot, time
    features]`` (time features dropped without them). ``embedding`` and ``intent`` replace the text's when
    given (a sidecar query has no text)."""
    if intent is None:
        intent = query_featurizer.intent(query)
    if embedding is None:
        q = query_featurizer.features(query, intent)
    else:
        parts = [np.asarray(embedding, dtype=np.float32), intent_one_hot(intent)]
        q = np.concatenate([*parts, time_feature_vector(query.timestamp)]).astype(np.float32)
    if not time_features:
        q = q[: query_featurizer.embedding_dim + len(INTENTS)]
    return q, intent
