"""The exported GNN scorer, served with onnxruntime and numpy (no torch).

The ONNX models (:func:`signet_rl.export.export_gnn_onnx`) hold every learned computation; this module
builds the parameter-free inputs for whatever graph is served with the code training uses
(:mod:`signet_rl.scorers.gnn_inputs`: node and edge inputs, path hops, hand features, the standardised
prior / PPR / flat scores of the residual, the intent x aspect keys of the bias) and runs the message passing
between the models: each message ``relu(x_src + e)`` is gathered, and the mean of
a node's incoming messages is scattered, in numpy (GINE with mean aggregation, both directions of every
dependency). Node states are cached per graph and time slice; after online feedback changes the edge
statistics only the changed edges' columns are re-read and only the node states they reach are recomputed
(:meth:`OnnxGNNScorer.forget_snapshot`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import numpy as np

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.scorers.features import PATH_FEATURES, PathFeaturizer, PerGraphFeaturizers, QueryFeaturizer
from signet_rl.scorers.fused import BaseScores
from signet_rl.scorers.gnn_inputs import (
    DESIRE_COLUMNS,
    GraphInputs,
    NodeInputs,
    QueryPaths,
    path_inputs,
    query_vector,
)
from signet_rl.scorers.prior import PRE_STUDY_PRIOR_HALF_LIFE_DAYS
from signet_rl.traversal.path import Path

__all__ = ["OnnxGNNScorer", "query_parts"]


def query_parts(qf: QueryFeaturizer, query: Query) -> tuple[np.ndarray, str]:
    """A query's embedding and intent, as a scorer reads them. ``query.meta`` may carry them instead of text
    (``query_embedding``: a vector of the encoder's dimension; ``intent``): sidecar queries have no text."""
    emb = query.meta.get("query_embedding") if query.meta else None
    intent = query.meta.get("intent") if query.meta else None
    if intent is None:
        intent = qf.intent(query)
    if emb is None:
        emb = qf.embed(query.text or "")
    return np.asarray(emb, dtype=np.float32), str(intent)


@dataclass
class _Pass:
    """One time slice's message passing, kept between calls: its message edges, the messages ordered by
    target, each node's incoming count, every message's edge vector and every layer's node states
    (``states[0]`` the inputs, ``states[-1]`` what the hops read)."""

    nodes: NodeInputs
    order: np.ndarray
    count: np.ndarray
    e: np.ndarray
    states: list[np.ndarray]


class _Served:
    """One graph's inputs, which edges still read the trained snapshot, and the node-state cache (by time
    slice)."""

    def __init__(self, inputs: GraphInputs, snapshot_rows: np.ndarray) -> None:
        self.inputs = inputs
        self.arrays = inputs.arrays
        self.from_snapshot = np.zeros(inputs.arrays.num_dependencies, dtype=bool)
        self.from_snapshot[snapshot_rows] = True
        self.cache: dict[Any, _Pass] = {}


class OnnxGNNScorer(PerGraphFeaturizers[_Served]):
    """The GNN policy from its ONNX models (see the module docstring); a
    :class:`~signet_rl.scorers.base.PathScorer`.

    Args:
        model_dir: the artifact folder (``node_in.onnx``, ``edge_vec.onnx``, ``conv_<l>.onnx``,
            ``hops.onnx``, ``head.onnx``).
        config: the GNN's constructor config (from the manifest).
        snapshots: the trained edge features per training graph, ``{graph id: {edge id: row}}`` (the
            desire columns the policy scored with there); a graph gets its snapshot through
            :meth:`use_snapshot`, and edges without one take the live statistics.
    """

    name = "gnn"

    def __init__(
        self,
        model_dir: str | FsPath,
        config: Mapping[str, Any],
        snapshots: Mapping[str, Mapping[str, np.ndarray]] | None = None,
    ) -> None:
        import onnxruntime as ort

        self.config = dict(config)
        self.layers = int(self.config["layers"])
        self.hidden = int(self.config["hidden"])
        self.time_features = bool(self.config.get("time_features", True))
        self.hand_features = bool(self.config.get("hand_features", True))
        self.hand_feature_count = int(self.config.get("hand_feature_count") or len(PATH_FEATURES))
        # an export written before the base scores took the prior's tuned half-life read 90 days
        # (signet_rl.scorers.gnn.ADDED_ARGUMENTS)
        half_life = self.config.get("prior_half_life_days", PRE_STUDY_PRIOR_HALF_LIFE_DAYS)
        self.base = BaseScores(half_life_days=half_life) if self.config.get("base_scores") else None
        self.aspect_buckets = int(self.config.get("aspect_buckets") or 0)
        self.query_featurizer = QueryFeaturizer(str(self.config.get("encoder", "hashing")))
        self.encoder = self.query_featurizer.encoder
        self._init_graph_states(None)
        self.snapshots = {g: dict(rows) for g, rows in (snapshots or {}).items()}
        self._snapshot_of: dict[int, dict[str, np.ndarray]] = {}
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
        # the hand features the head reads: its input's width (an artifact exported before the manifest
        # carried hand_feature_count has it only there)
        width = next((i.shape[1] for i in self._head.get_inputs() if i.name == "hand"), None)
        if self.hand_features and isinstance(width, int):
            self.hand_feature_count = width

    @staticmethod
    def _run(sess: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        names = getattr(sess, "_signet_input_names", None)
        if names is None:  # the session's input names, read once
            names = sess._signet_input_names = frozenset(i.name for i in sess.get_inputs())
        out: list[np.ndarray] = sess.run(None, {k: v for k, v in feeds.items() if k in names})
        return out

    # -- per graph ----------------------------------------------------------------------------------

    def _build_graph_state(
        self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer
    ) -> _Served:
        inputs = GraphInputs(graph, arrays, featurizer, self.config)
        snapshot = self._snapshot_of.get(id(arrays))
        rows: list[int] = []
        if snapshot and arrays.num_dependencies:
            values = []
            for i, e in enumerate(arrays.edge_ids):
                row = snapshot.get(str(e))
                if row is not None:
                    rows.append(i)
                    values.append(row)
            if rows:
                inputs.edge_numeric[rows] = np.stack(values)
        return _Served(inputs, np.asarray(rows, dtype=np.int64))

    def forget(self, arrays: GraphArrays) -> None:
        """Drop what is kept for ``arrays``, its snapshot choice included (its graph was replaced)."""
        super().forget(arrays)
        self._snapshot_of.pop(id(arrays), None)

    def use_snapshot(self, arrays: GraphArrays, graph_id: str | None) -> None:
        """Score the graph ``arrays`` views with the trained edge features of training graph ``graph_id``
        (None: another graph, live statistics only)."""
        self._snapshot_of[id(arrays)] = dict(self.snapshots.get(graph_id, {})) if graph_id is not None else {}
        self.invalidate(arrays)

    def forget_snapshot(self, edge_ids: Sequence[str] | None = None) -> None:
        """Read these edges' features (all when None) from the live statistics from now on: online feedback
        changed them. The others keep the trained snapshot.

        Nothing is rebuilt: the desire columns of every edge off the snapshot are re-read from the statistics
        (arrays), and the kept node states are updated where those edges reach (:meth:`_repropagate`: the
        changed edges' endpoints and what lies within ``layers`` hops downstream), which gives what a
        full pass would (to float rounding) at a fraction of its cost on a large store."""
        for snapshot in self._snapshot_of.values():
            if edge_ids is None:
                snapshot.clear()
            else:
                for e in edge_ids:
                    snapshot.pop(str(e), None)
        for served in self._graphs.values():
            gi = served.inputs
            if edge_ids is None:
                served.from_snapshot[:] = False
            else:
                index = gi.featurizer.edge_index
                served.from_snapshot[[index[str(e)] for e in edge_ids if str(e) in index]] = False
            live = gi.desire_columns()
            if live is None:
                continue
            old = gi.edge_numeric[:, DESIRE_COLUMNS]
            new = np.where(served.from_snapshot[:, None], old, live)
            rows = np.flatnonzero((new != old).any(axis=1))
            gi.edge_numeric[rows, DESIRE_COLUMNS] = new[rows]
            for kept in served.cache.values():
                self._repropagate(gi, kept, rows)

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
        kept = served.cache.get(key)
        if kept is None:
            kept = served.cache[key] = self._propagate(gi, gi.at(t))
        return kept.states[-1]

    def _propagate(self, gi: GraphInputs, nodes: NodeInputs) -> _Pass:
        """The full message passing over the graph at one time: every layer's node states."""
        x = self._run(self._node_in, {
            "type_code": nodes.type_code, "name_vec": nodes.name_vec, "comm_code": nodes.comm_code,
            "log_degree": nodes.log_degree.astype(np.float32),
        })[0]  # fmt: skip
        n = len(x)
        order = np.argsort(nodes.dst, kind="stable")
        count = np.bincount(nodes.dst, minlength=n).astype(np.float32)
        kept = _Pass(nodes, order, count, np.zeros((0, self.hidden), np.float32), [x])
        if not self.layers:
            return kept
        kept.e = self._edge_vectors(gi, nodes.mp_edge, nodes.mp_dir)
        targets = np.flatnonzero(count)
        starts = np.searchsorted(nodes.dst[order], targets)
        for conv in self._convs:
            msg = np.maximum(x[nodes.src[order]] + kept.e[order], 0.0)
            aggr = np.zeros_like(x)
            if len(msg):
                aggr[targets] = np.add.reduceat(msg, starts, axis=0) / count[targets, None]
            x = self._run(conv, {"x": x, "aggr": aggr.astype(np.float32)})[0]
            kept.states.append(x)
        return kept

    def _repropagate(self, gi: GraphInputs, kept: _Pass, rows: np.ndarray) -> None:
        """Update a kept pass after the features of dependency ``rows`` changed: the edge vectors of their
        messages, then per layer the states of the nodes whose inputs changed (the targets of those messages,
        then everything downstream of a changed node), each from the same messages in the same order as the
        full pass. Node inputs do not depend on edge features, so layer 0 stays."""
        nodes = kept.nodes
        sel = np.flatnonzero(np.isin(nodes.mp_edge, rows))
        if not self.layers or not len(sel):
            return
        kept.e[sel] = self._edge_vectors(gi, nodes.mp_edge[sel], nodes.mp_dir[sel])
        dirty = np.zeros(len(kept.count), dtype=bool)
        dirty[nodes.dst[sel]] = True
        for layer, conv in enumerate(self._convs):
            x = kept.states[layer]
            changed = np.flatnonzero(dirty)
            into = kept.order[dirty[nodes.dst[kept.order]]]  # their messages, in the full pass's order
            aggr = np.zeros((len(changed), self.hidden), dtype=np.float32)
            if len(into):
                msg = np.maximum(x[nodes.src[into]] + kept.e[into], 0.0)
                targets, starts = np.unique(nodes.dst[into], return_index=True)
                rows_of = np.searchsorted(changed, targets)
                aggr[rows_of] = np.add.reduceat(msg, starts, axis=0) / kept.count[targets, None]
            kept.states[layer + 1][changed] = self._run(conv, {"x": x[changed], "aggr": aggr})[0]
            dirty[nodes.dst[dirty[nodes.src]]] = True  # a changed state changes its out-neighbours next

    # -- PathScorer ---------------------------------------------------------------------------------

    def query_vector(self, query: Query) -> tuple[np.ndarray, str]:
        """The query features the net reads and the intent (``query.meta`` may carry the embedding and the
        intent, see :func:`query_parts`)."""
        emb, intent = query_parts(self.query_featurizer, query)
        return query_vector(self.query_featurizer, query, self.time_features, emb, intent)

    def outputs(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """``[n, n_heads]`` head outputs."""
        served = self._graph_state(context.graph, context.arrays)
        gi = served.inputs
        x = path_inputs(
            gi, [QueryPaths(query, *self.query_vector(query), paths, context)],
            self.query_featurizer.embedding_dim, self.hand_feature_count if self.hand_features else None,
            self.base, self.aspect_buckets, query_text=bool(self.config.get("query_text", True)),
            aspect_intent=bool(self.config.get("aspect_intent", True)),
        )  # fmt: skip
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
        zeros = np.zeros((n, 1), dtype=np.float32)
        return self._run(self._head, {
            "hops": hops, "mask": mask, "query": x.query, "hand": zeros if x.hand is None else x.hand,
            "base": zeros if x.base is None else x.base,
            "aspect_key": np.zeros(n, np.int64) if x.aspect_key is None else x.aspect_key,
        })[0]  # fmt: skip

    def prefetch(self, query: Query, context: ScoringContext) -> None:
        """The base scores' work on the entries alone (PPR's rank), done now (see ``BaseScores.prefetch``)."""
        if self.base is not None:
            self.base.prefetch(query, context)

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """The mean of the heads' outputs, ``[n]`` (as :meth:`GNNPathScorer.score`)."""
        if not paths:
            return np.zeros(0)
        return self.outputs(query, paths, context).mean(axis=1).astype(np.float64)

    def update(self, feedback: Sequence[Feedback]) -> None:
        """The exported network does not learn online (its edge statistics do, see the served policy)."""

    def invalidate(self, arrays: GraphArrays | None = None) -> None:
        super().invalidate(arrays)
