"""The GNN scorer's parameter-free inputs, in numpy: what :mod:`signet_rl.scorers.gnn` feeds its network,
computed without torch so that a served (ONNX) policy builds the same inputs for any graph.

:class:`GraphInputs` holds one graph's node and edge inputs (bucketed entity types, sketched name vectors,
community codes, log degrees; bucketed dependency types and numeric edge columns; the message edges both
ways), at any query time (:meth:`GraphInputs.at`: degrees, communities and edges of that time slice).
:func:`path_inputs` turns a batch of paths into per-hop arrays. Both mirror
:class:`~signet_rl.scorers.gnn.GNNPathScorer` exactly (its parity test compares the two).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.confidence import LADDER
from signet_rl.graph.model import DependencyType, EntityType, KnowledgeGraph
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.scorers.features import EDGE_STAT_DIM, INTENTS, PathFeaturizer, QueryFeaturizer
from signet_rl.traversal.path import Path

__all__ = [
    "ATTR_NUMERIC_DIM",
    "DAY",
    "EDGE_NUMERIC_DIM",
    "KNOWN_DEPENDENCY_TYPES",
    "KNOWN_ENTITY_TYPES",
    "MAX_POSITIONS",
    "NAME_SKETCH_DIM",
    "GraphInputs",
    "NodeInputs",
    "PathInputs",
    "path_inputs",
]

DAY = 86400.0
#: Entity types with a bucket of their own (others are hashed into the remaining buckets).
KNOWN_ENTITY_TYPES: tuple[str, ...] = (*EntityType.SIGNET, EntityType.EXTRACTED, EntityType.PRINCIPLE)
#: Dependency types with a bucket of their own.
KNOWN_DEPENDENCY_TYPES: tuple[str, ...] = DependencyType.SIGNET
#: Numeric edge columns: confidence, strength, reason rung one-hot, desire statistics, desire weight.
EDGE_NUMERIC_DIM = 2 + len(LADDER) + EDGE_STAT_DIM + 1
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
        self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer, config: dict[str, Any]
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
        if featurizer.edge_stats is not None and n_edges:
            rows = np.arange(n_edges)
            stats = np.asarray(featurizer.edge_stats.features(rows), dtype=np.float32)
            numeric[:, 2 + len(LADDER) : 2 + len(LADDER) + EDGE_STAT_DIM] = stats.reshape(n_edges, -1)
            numeric[:, -1] = np.asarray(featurizer.edge_stats.weight(rows), dtype=np.float32)
        self.edge_numeric = numeric
        sb = a.attr_superseded_by
        self.sb_created = np.where(sb >= 0, a.attr_created[np.maximum(sb, 0)], np.inf)

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
    """The parameter-free inputs of one query's paths (hop rows, owners and positions per hop kind)."""

    shape: tuple[int, int]  # paths, longest path's hop count
    query: np.ndarray  # [n, Dq]
    hand: np.ndarray | None  # [n, hand_dim]
    ent: np.ndarray
    ent_owner: np.ndarray
    ent_pos: np.ndarray
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


def path_inputs(
    inputs: GraphInputs,
    query_vec: np.ndarray,
    intent: str,
    paths: Sequence[Path],
    context: Any,
    query_featurizer: QueryFeaturizer,
    hand_features: bool,
) -> PathInputs:
    """One query's :class:`PathInputs` (``query_vec``: its query features as the net reads them)."""
    feat, a = inputs.featurizer, inputs.arrays
    b = feat.index(paths)
    n = len(paths)
    hand = None
    if hand_features:
        emb = query_vec[: query_featurizer.embedding_dim]
        hand = np.asarray(feat.features(paths, context, emb, intent, batch=b), dtype=np.float32)
    t = np.nan if context.timestamp is None else float(context.timestamp)
    has = np.flatnonzero(b.asp >= 0)
    asp_rows = b.asp[has]
    asp_x = np.concatenate(
        [feat.aspect_vectors(asp_rows), a.aspect_weight[asp_rows].reshape(-1, 1)], axis=1
    ).astype(np.float32)
    t_att = np.full(len(b.att), t)
    age = np.where(np.isnan(t_att), 0.0, np.maximum(0.0, (t_att - a.attr_created[b.att]) / DAY))
    stale = inputs.sb_created[b.att] <= np.nan_to_num(t_att, nan=-np.inf)  # no time: never stale
    att_num = np.stack(
        [a.attr_importance[b.att], np.log1p(age), a.attr_kind[b.att] == 1, stale], axis=1
    ).astype(np.float32)
    att_x = np.concatenate([feat.attribute_vectors(b.att), att_num], axis=1).astype(np.float32)
    return PathInputs(
        shape=(n, int(b.length.max())),
        query=np.repeat(query_vec[None, :].astype(np.float32), n, axis=0),
        hand=hand,
        ent=b.ent.astype(np.int64), ent_owner=b.ent_owner, ent_pos=b.ent_pos.astype(np.int64),
        dep=b.dep.astype(np.int64), dep_dir=b.dep_dir.astype(np.float32), dep_owner=b.dep_owner,
        dep_pos=b.dep_pos.astype(np.int64),
        asp_x=asp_x, asp_owner=has, asp_pos=b.asp_pos[has].astype(np.int64),
        att_x=att_x, att_owner=b.att_owner, att_pos=b.att_pos.astype(np.int64),
    )  # fmt: skip


def query_vector(query_featurizer: QueryFeaturizer, query: Any, time_features: bool) -> tuple[np.ndarray, str]:
    """The query features the GNN reads and the predicted intent (time features dropped without them)."""
    intent = query_featurizer.intent(query)
    q = query_featurizer.features(query, intent)
    if not time_features:
        q = q[: query_featurizer.embedding_dim + len(INTENTS)]
    return q, intent
