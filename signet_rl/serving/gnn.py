"""The exported GNN scorer, served with onnxruntime and numpy (no torch).

The ONNX models (:func:`signet_rl.export.export_gnn_onnx`) hold every learned computation; this module
builds the parameter-free inputs for whatever graph is served (:mod:`signet_rl.scorers.gnn_inputs`) and
runs the message passing between the models: each message ``relu(x_src + e)`` is gathered, and the mean of
a node's incoming messages is scattered, in numpy (GINE with mean aggregation, both directions of every
dependency). Node states are cached per graph and time slice, and recomputed after the edge statistics
change (:meth:`OnnxGNNScorer.invalidate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

import numpy as np

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.scorers.features import (
    PathFeaturizer,
    PerGraphFeaturizers,
    QueryFeaturizer,
    intent_one_hot,
    time_features,
)
from signet_rl.scorers.gnn_inputs import GraphInputs, NodeInputs, path_inputs
from signet_rl.traversal.path import Path

__all__ = ["OnnxGNNScorer", "query_parts"]


def query_parts(qf: QueryFeaturizer, query: Query) -> tuple[np.ndarray, str]:
    """A query's embedding and intent, as a scorer reads them. ``query.meta`` may carry them instead of text
    (``query_embedding``: a vector of the encoder's dimension; ``intent``): the sidecar's queries have none."""
    emb = query.meta.get("query_embedding") if query.meta else None
    intent = query.meta.get("intent") if query.meta else None
    if intent is None:
        intent = qf.intent(query)
    if emb is None:
        emb = qf.embed(query.text or "")
    return np.asarray(emb, dtype=np.float32), str(intent)


class _Served:
    """One graph's inputs and node-state cache (by time slice)."""

    def __init__(self, inputs: GraphInputs) -> None:
        self.inputs = inputs
        self.arrays = inputs.arrays
        self.cache: dict[Any, np.ndarray] = {}


class OnnxGNNScorer(PerGraphFeaturizers[_Served]):
    """The GNN policy from its ONNX models (see the module docstring); a
    :class:`~signet_rl.scorers.base.PathScorer`.

    Args:
        model_dir: the artifact folder (``node_in.onnx``, ``edge_vec.onnx``, ``conv_<l>.onnx``,
            ``hops.onnx``, ``head.onnx``).
        config: the GNN's constructor config (from the manifest).
        edge_features: optional per-graph snapshot of the trained edge features: ``{edge id: row}``
            (the desire columns the policy scored with); edges it lacks take the live statistics.
    """

    name = "gnn"

    def __init__(
        self,
        model_dir: str | FsPath,
        config: Mapping[str, Any],
        edge_features: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        import onnxruntime as ort

        self.config = dict(config)
        self.layers = int(self.config["layers"])
        self.hidden = int(self.config["hidden"])
        self.time_features = bool(self.config.get("time_features", True))
        self.hand_features = bool(self.config.get("hand_features", True))
        self.query_featurizer = QueryFeaturizer(str(self.config.get("encoder", "hashing")))
        self.encoder = self.query_featurizer.encoder
        self._init_graph_states(None)
        self.edge_features = dict(edge_features or {})
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        d = FsPath(model_dir)

        def session(name: str) -> Any:
            return ort.InferenceSession(str(d / f"{name}.onnx"), opts, providers=["CPUExecutionProvider"])

        self._node_in = session("node_in")
        self._edge_vec = session("edge_vec")
        self._convs = [session(f"conv_{i}") for i in range(self.layers)]
        self._hops = session("hops")
        self._head = session("head")

    @staticmethod
    def _run(sess: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        names = {i.name for i in sess.get_inputs()}
        return sess.run(None, {k: v for k, v in feeds.items() if k in names})  # type: ignore[no-any-return]

    # -- per graph ----------------------------------------------------------------------------------

    def _build_graph_state(self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer) -> _Served:
        inputs = GraphInputs(graph, arrays, featurizer, self.config)
        if self.edge_features and arrays.num_dependencies:
            rows = [self.edge_features.get(str(e)) for e in arrays.edge_ids]
            for i, row in enumerate(rows):
                if row is not None:
                    inputs.edge_numeric[i] = row
        return _Served(inputs)

    def forget_snapshot(self, edge_ids: Sequence[str] | None = None) -> None:
        """Read these edges' features (all when None) from the live statistics from now on: online feedback
        changed them. The others keep the trained snapshot."""
        if edge_ids is None:
            self.edge_features = {}
        else:
            for e in edge_ids:
                self.edge_features.pop(str(e), None)
        self.invalidate()

    def _edge_vectors(self, gi: GraphInputs, rows: np.ndarray, direction: np.ndarray) -> np.ndarray:
        return self._run(self._edge_vec, {
            "types": gi.edge_type[rows], "numeric": gi.edge_numeric[rows],
            "direction": direction.astype(np.float32),
        })[0]  # fmt: skip

    def node_states(self, graph: KnowledgeGraph, arrays: GraphArrays, t: float | None = None) -> np.ndarray:
        """Every entity's node state ``[N, H]`` at time ``t`` (cached per time slice)."""
        served = self._graph_state(graph, arrays)
        gi = served.inputs
        key = gi.slices.slice_id(t)
        x = served.cache.get(key)
        if x is None:
            x = self._propagate(gi, gi.at(t))
            served.cache[key] = x
        return x

    def _propagate(self, gi: GraphInputs, nodes: NodeInputs) -> np.ndarray:
        x = self._run(self._node_in, {
            "type_code": nodes.type_code, "name_vec": nodes.name_vec, "comm_code": nodes.comm_code,
            "log_degree": nodes.log_degree.astype(np.float32),
        })[0]  # fmt: skip
        if not self.layers:
            return x
        n = len(x)
        e = self._edge_vectors(gi, nodes.mp_edge, nodes.mp_dir)
        order = np.argsort(nodes.dst, kind="stable")
        dst_sorted = nodes.dst[order]
        count = np.bincount(nodes.dst, minlength=n).astype(np.float32)
        targets = np.flatnonzero(count)
        starts = np.searchsorted(dst_sorted, targets)
        for conv in self._convs:
            msg = np.maximum(x[nodes.src[order]] + e[order], 0.0)
            aggr = np.zeros_like(x)
            if len(msg):
                aggr[targets] = np.add.reduceat(msg, starts, axis=0) / count[targets, None]
            x = self._run(conv, {"x": x, "aggr": aggr.astype(np.float32)})[0]
        return x

    # -- PathScorer ---------------------------------------------------------------------------------

    def query_vector(self, query: Query) -> tuple[np.ndarray, str]:
        """The query features the net reads and the intent."""
        emb, intent = query_parts(self.query_featurizer, query)
        parts = [emb, intent_one_hot(intent)]
        if self.time_features:
            parts.append(time_features(query.timestamp))
        return np.concatenate(parts).astype(np.float32), intent

    def outputs(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """``[n, n_heads]`` head outputs."""
        served = self._graph_state(context.graph, context.arrays)
        gi = served.inputs
        qvec, intent = self.query_vector(query)
        x = path_inputs(gi, qvec, intent, paths, context, self.query_featurizer, self.hand_features)
        states = self.node_states(context.graph, context.arrays, context.timestamp)
        dep_vec = self._edge_vectors(gi, x.dep, x.dep_dir)
        ent, dep, asp, att = self._run(self._hops, {
            "ent_vec": states[x.ent], "ent_pos": x.ent_pos, "dep_vec": dep_vec, "dep_pos": x.dep_pos,
            "asp_x": x.asp_x, "asp_pos": x.asp_pos, "att_x": x.att_x, "att_pos": x.att_pos,
        })  # fmt: skip
        n, length = x.shape
        hops = np.zeros((n, length, self.hidden), dtype=np.float32)
        mask = np.zeros((n, length), dtype=bool)
        for vec, owner, pos in ((ent, x.ent_owner, x.ent_pos), (dep, x.dep_owner, x.dep_pos),
                                (asp, x.asp_owner, x.asp_pos), (att, x.att_owner, x.att_pos)):  # fmt: skip
            if len(owner):
                hops[owner, pos] = vec
                mask[owner, pos] = True
        hand = x.hand if x.hand is not None else np.zeros((n, 1), dtype=np.float32)
        return self._run(self._head, {"hops": hops, "mask": mask, "query": x.query, "hand": hand})[0]

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """The mean of the heads' outputs, ``[n]`` (as :meth:`GNNPathScorer.score`)."""
        if not paths:
            return np.zeros(0)
        return self.outputs(query, paths, context).mean(axis=1).astype(np.float64)

    def update(self, feedback: Sequence[Feedback]) -> None:
        """The exported network does not learn online (its edge statistics do, see the served policy)."""

    def invalidate(self, arrays: GraphArrays | None = None) -> None:
        super().invalidate(arrays)
