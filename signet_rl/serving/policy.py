"""Loading an exported policy artifact (:mod:`signet_rl.export`) without torch: :func:`load_policy`.

    >>> policy = load_policy("artifacts/gnn")                     # doctest: +SKIP
    >>> scores = policy.score(query, paths, context)             # doctest: +SKIP
    >>> retriever = policy.retriever()                           # doctest: +SKIP

A :class:`ServedPolicy` is a :class:`~signet_rl.scorers.base.PathScorer` (``score(query, paths, context)``
returns one float per candidate path, higher is better) that also carries what the policy was trained
with: the traversal, the encoder, and its learned desire-path statistics per edge, which it maps onto any
graph it is prepared for by dependency id (edges the training graph lacked start neutral). A graph whose
fingerprint differs from every training graph's is logged, not refused: a store is never the training
graph. :meth:`ServedPolicy.feedback` learns online from rated paths: the edge statistics always, and the
scorer's head where it can (LinUCB).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.reinforcement import EdgeStats
from signet_rl.scorers.base import Feedback, PathScorer, ScoringContext, forget_arrays, make_scorer

__all__ = [
    "FORMAT",
    "LOADERS",
    "MANIFEST",
    "PolicyError",
    "ServedPolicy",
    "graph_fingerprint",
    "load_policy",
    "register_loader",
    "write_edge_stats",
]

log = logging.getLogger(__name__)

FORMAT = "signet_rl.policy/1"
MANIFEST = "manifest.json"
EDGE_STATS = "edge_stats.parquet"


class PolicyError(ValueError):
    """An artifact that cannot be served; the message names the file or field."""


def graph_fingerprint(arrays: GraphArrays) -> dict[str, Any]:
    """Counts and a SHA-256 over a graph's entity ids and its dependencies (id, source id, target id), each
    sorted: the same graph read back from a store in another row order has the same fingerprint."""
    h = hashlib.sha256()
    ents = arrays.entity_ids
    h.update("\n".join(sorted(map(str, ents))).encode())
    h.update(b"\0")
    deps = sorted(
        f"{e}\t{ents[s]}\t{ents[t]}"
        for e, s, t in zip(arrays.edge_ids, arrays.edge_source, arrays.edge_target, strict=True)
    )
    h.update("\n".join(deps).encode())
    return {"entities": int(arrays.num_entities), "dependencies": int(arrays.num_dependencies),
            "sha256": h.hexdigest()}  # fmt: skip


def _weight_columns(intents: Sequence[str], buckets: int) -> list[str]:
    return [f"w_{i}_{b}" for i in intents for b in range(buckets)]


def _edge_keys(graph: KnowledgeGraph, arrays: GraphArrays) -> list[str]:
    """``source name -> target name (type)`` per dependency: what makes "the same edge" in another store
    (Signet's entity names are unique within a store; ids are not comparable across stores)."""
    names = graph.entities.set_index("id")["name"].astype(str).reindex(arrays.entity_ids).fillna("").tolist()
    return [
        f"{names[s]}\t{names[t]}\t{arrays.dep_type_vocab[k]}"
        for s, t, k in zip(arrays.edge_source, arrays.edge_target, arrays.edge_type, strict=True)
    ]


def write_edge_stats(
    path: FsPath, stats: Mapping[str, tuple[KnowledgeGraph, GraphArrays, EdgeStats]]
) -> None:
    """Write every graph's :class:`EdgeStats` as one Parquet table, a row per dependency: ``graph_id``,
    ``edge_id``, ``source``, ``target`` (entity ids), ``key`` (source name, target name, type), ``type``,
    ``walks``, ``last_update``, ``step``, one ``w_<intent>_<bucket>`` column per weight, and the
    hyperparameters (``lr``, ``floor``, ``ceiling``, ``cool``, ``init``)."""
    frames = []
    for gid, (graph, arrays, s) in stats.items():
        n = arrays.num_dependencies
        frame = pd.DataFrame({
            "graph_id": [str(gid)] * n,
            "edge_id": [str(e) for e in arrays.edge_ids],
            "source": [str(arrays.entity_ids[i]) for i in arrays.edge_source],
            "target": [str(arrays.entity_ids[i]) for i in arrays.edge_target],
            "key": _edge_keys(graph, arrays),
            "type": [str(arrays.dep_type_vocab[i]) for i in arrays.edge_type],
            "walks": s.walks, "last_update": s.last_update, "step": np.full(n, s.step, dtype=np.int64),
        })  # fmt: skip
        w = pd.DataFrame(s.weights.reshape(n, -1), columns=_weight_columns(s.intents, s.time_buckets))
        hyper = pd.DataFrame({k: np.full(n, v) for k, v in zip(
            ("lr", "floor", "ceiling", "cool", "init"), (s.lr, s.floor, s.ceiling, s.cool_rate, s.init),
            strict=True)})  # fmt: skip
        frames.append(pd.concat([frame, w, hyper], axis=1))
    pd.concat(frames, ignore_index=True).to_parquet(path, index=False)


class _StatsTable:
    """The exported statistics, matched onto served graphs by dependency id."""

    def __init__(self, frame: pd.DataFrame, intents: Sequence[str], buckets: int) -> None:
        self.intents, self.buckets = tuple(intents), int(buckets)
        self.cols = _weight_columns(self.intents, self.buckets)
        self.frame = frame
        first = frame.iloc[0] if len(frame) else None
        self.hyper = (
            tuple(float(first[k]) for k in ("lr", "floor", "ceiling", "cool", "init"))
            if first is not None else (0.2, 0.2, 3.0, 0.01, 1.0)
        )  # fmt: skip
        self.step = int(frame["step"].max()) if len(frame) else 0

    def for_graph(
        self, graph: KnowledgeGraph, arrays: GraphArrays, graph_id: str | None
    ) -> tuple[EdgeStats, int]:
        """Statistics for a served graph and how many of its edges the export knew: by dependency id on a
        training graph (``graph_id``), else by ``key`` (source name, target name, type)."""
        lr, floor, ceiling, cool, init = self.hyper
        s = EdgeStats(arrays.num_dependencies, self.intents, self.buckets, lr, floor, ceiling, cool, init)
        s.step = self.step
        frame = self.frame
        if graph_id is not None:
            frame = frame[frame["graph_id"] == graph_id].drop_duplicates("edge_id").set_index("edge_id")
            ids = pd.Index([str(e) for e in arrays.edge_ids])
        else:
            frame = frame.drop_duplicates("key").set_index("key") if "key" in frame else frame.iloc[:0]
            ids = pd.Index(_edge_keys(graph, arrays))
        pos = frame.index.get_indexer(ids)
        hit = pos >= 0
        if hit.any():
            rows = frame.iloc[pos[hit]]
            s.weights[hit] = rows[self.cols].to_numpy(np.float32).reshape(-1, len(self.intents), self.buckets)
            s.walks[hit] = rows["walks"].to_numpy(np.int64)
            s.last_update[hit] = rows["last_update"].to_numpy(np.int64)
        return s, int(hit.sum())


#: Loaders by artifact ``kind``: ``fn(directory, manifest) -> PathScorer``.
LOADERS: dict[str, Callable[[FsPath, Mapping[str, Any]], PathScorer]] = {}


def register_loader(kind: str) -> Callable[[Callable[..., PathScorer]], Callable[..., PathScorer]]:
    """Register how an artifact of ``kind`` becomes a scorer (the exporter of that kind writes it)."""

    def wrap(fn: Callable[..., PathScorer]) -> Callable[..., PathScorer]:
        LOADERS[kind] = fn
        return fn

    return wrap


@register_loader("fixed")
def _load_fixed(directory: FsPath, manifest: Mapping[str, Any]) -> PathScorer:
    s = manifest["scorer"]
    return make_scorer(s["name"], **s["config"])


@register_loader("linucb")
def _load_linucb(directory: FsPath, manifest: Mapping[str, Any]) -> PathScorer:
    from signet_rl.scorers.linear import ADDED_ARGUMENTS, LinUCBScorer

    config = {**ADDED_ARGUMENTS, **manifest["scorer"]["config"]}
    scorer = LinUCBScorer(**config)
    blob = np.load(directory / "linucb.npz")
    scorer.load_state_dict({"format": "signet_rl.LinUCBScorer/1", "A_inv": blob["A_inv"], "b": blob["b"],
                            "updates": int(blob["updates"])})  # fmt: skip
    scorer.alpha = 0.0  # served greedily, as a trained policy is evaluated
    return scorer


@register_loader("gnn_onnx")
def _load_gnn(directory: FsPath, manifest: Mapping[str, Any]) -> PathScorer:
    from signet_rl.serving.gnn import OnnxGNNScorer

    snapshots: dict[str, dict[str, np.ndarray]] = {}
    path = directory / "gnn_edge_features.parquet"
    if path.exists():
        frame = pd.read_parquet(path)
        cols = [c for c in frame.columns if c.startswith("f")]
        values = frame[cols].to_numpy(np.float32)
        for i, (gid, eid) in enumerate(
            zip(frame["graph_id"].tolist(), frame["edge_id"].tolist(), strict=True)
        ):
            snapshots.setdefault(str(gid), {})[str(eid)] = values[i]
    return OnnxGNNScorer(directory, manifest["scorer"]["config"], snapshots=snapshots)


class ServedPolicy:
    """An exported policy, ready to score (see the module docstring).

    Attributes:
        manifest: the artifact's ``manifest.json``.
        scorer: the torch-free scorer.
        name: the scorer's name.
        traversal: the traversal the policy was trained with (a ``TraversalConfig`` dict).
    """

    def __init__(
        self, directory: FsPath, manifest: dict[str, Any], scorer: PathScorer, stats: _StatsTable
    ) -> None:
        self.directory = directory
        self.manifest = manifest
        self.scorer = scorer
        self.name = str(manifest["scorer"]["name"])
        self.traversal: dict[str, Any] = dict(manifest.get("traversal") or {})
        self.reinforcement = bool(manifest.get("reinforcement", True))
        self._table = stats
        self._stats: dict[int, tuple[GraphArrays, EdgeStats]] = {}
        self._fingerprints = {v["sha256"]: k for k, v in manifest["training"]["graphs"].items()}
        self._warned_foreign = False  # "serving on a graph other than its training graphs": said once
        #: Dependency ids whose statistics online feedback changed (a GNN reads them live from then on).
        self.online_edges: set[str] = set()

    @classmethod
    def fixed(cls, name: str = "prior", traversal: Mapping[str, Any] | None = None) -> ServedPolicy:
        """A non-learned scorer (``prior``, ``ppr``, ``random``) served with neutral edge statistics: what
        the sidecar runs without ``--policy``."""
        manifest = {
            "format": FORMAT, "scorer": {"name": name, "config": {}, "kind": "fixed"},
            "encoder": {"name": "hashing", "dim": 0}, "traversal": dict(traversal or {}),
            "reinforcement": True, "training": {"graphs": {}, "steps": 0},
        }  # fmt: skip
        from signet_rl.learning.reinforcement import DEFAULT_INTENTS

        empty = pd.DataFrame({"graph_id": [], "edge_id": [], "walks": [], "last_update": [], "step": []})
        return cls(FsPath("."), manifest, make_scorer(name), _StatsTable(empty, DEFAULT_INTENTS, 4))

    @property
    def encoder(self) -> str:
        """The encoder the scorer reads query and node texts with."""
        return str(self.manifest["encoder"]["name"])

    # -- per graph ----------------------------------------------------------------------------------

    def edge_stats(self, arrays: GraphArrays, graph: KnowledgeGraph | None = None) -> EdgeStats:
        """The learned statistics mapped onto the graph ``arrays`` views (built on first use, which needs
        the ``graph``): on a training graph (same fingerprint) edge by edge; on another graph by source
        name, target name and type, edges it never saw starting neutral. A GNN scores a training graph with
        the edge features it was trained with, another graph with features of the mapped statistics."""
        got = self._stats.get(id(arrays))
        if got is not None and got[0] is arrays:
            return got[1]
        if graph is None:
            raise RuntimeError(f"{self.name}: graph not prepared; call prepare(graph, arrays) first")
        fp = graph_fingerprint(arrays)
        gid = self._fingerprints.get(fp["sha256"])
        if gid is None:  # said once: a live re-index (issue 29) maps a changed graph again
            (log.debug if self._warned_foreign else log.warning)(
                "serving %s on a graph (%d entities, %d dependencies, sha256 %s…) other than its training "
                "graphs; edges it never saw start neutral", self.name, fp["entities"], fp["dependencies"],
                fp["sha256"][:12],
            )  # fmt: skip
            self._warned_foreign = True
        stats, _ = self._table.for_graph(graph, arrays, gid)
        self._stats[id(arrays)] = (arrays, stats)
        use_snapshot = getattr(self.scorer, "use_snapshot", None)
        if use_snapshot is not None:
            use_snapshot(arrays, gid)
        attach = getattr(self.scorer, "attach_edge_stats", None)
        if attach is not None:
            attach(arrays, stats)
        return stats

    def forget_graph(self, arrays: GraphArrays) -> None:
        """Drop the statistics mapped onto the graph ``arrays`` views and everything the scorer keeps for
        it (a service that re-indexed a changed graph no longer scores the old view)."""
        self._stats.pop(id(arrays), None)
        forget_arrays(self.scorer, arrays)

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        """Map the statistics onto the graph and let the scorer build its per-graph state."""
        self.edge_stats(arrays, graph)
        self.scorer.prepare(graph, arrays)

    # -- scoring ------------------------------------------------------------------------------------

    def prefetch(self, query: Query, context: ScoringContext) -> None:
        """The scorer's work on the query's entries alone, done now when it has such work (``prefetch``)."""
        prefetch = getattr(self.scorer, "prefetch", None)
        if prefetch is not None:
            prefetch(query, context)

    def score(self, query: Query, paths: Sequence[Any], context: ScoringContext) -> np.ndarray:
        """One float per candidate path (higher is better); ``query.meta`` may carry ``query_embedding``
        and ``intent`` in place of text."""
        self.edge_stats(context.arrays, context.graph)
        return np.asarray(self.scorer.score(query, paths, context), dtype=np.float64)

    def edge_weight_fn(self, arrays_of: Callable[[str], GraphArrays]) -> Callable[[str, str, Any], Any]:
        """The learned walk order for a :class:`~signet_rl.pipeline.desire.DesirePathRetriever`
        (``edge_weight_fn``), as the trainer walks: per intent and time bucket."""

        def fn(graph_id: str, intent: str, timestamp: Any) -> Any:
            s = self.edge_stats(arrays_of(graph_id))
            return s.edge_weight_fn(intent if intent in s.intents else None, s.time_bucket(timestamp))

        return fn

    def retriever(
        self, name: str = "learned", encoder: str | None = None, config: Mapping[str, Any] | None = None
    ) -> Any:
        """A desire-path retriever over this policy: its traversal, its learned walk order, its scorer.

        Args:
            name: the retriever's name in tables.
            encoder: entry search encoder (default: the one the policy was trained with).
            config: traversal overrides on top of the trained traversal.
        """
        from signet_rl.pipeline.desire import DesirePathRetriever

        ret = DesirePathRetriever(
            self, config={**self.traversal, **dict(config or {})},
            encoder=encoder or str(self.manifest["encoder"].get("retrieval", self.encoder)), name=name,
        )  # fmt: skip
        if self.reinforcement:
            ret.edge_weight_fn = self.edge_weight_fn(lambda gid: ret._state(gid).arrays)
        return ret

    # -- learning -----------------------------------------------------------------------------------

    def update(self, feedback: Sequence[Feedback]) -> None:
        """:meth:`feedback` (the PathScorer name)."""
        self.feedback(feedback)

    def feedback(self, feedback: Sequence[Feedback], learn_scorer: bool = True) -> None:
        """Learn from rated paths: the edge statistics of each rated path (per intent and time bucket) and
        the scorer's own update (LinUCB's posterior; the ONNX GNN's network stays fixed, but its edge
        features are recomputed from the updated statistics). ``learn_scorer=False``: the edge statistics
        only, the scorer's weights stay frozen (the prequential evaluation's learned desire, online)."""
        from signet_rl.learning.reinforcement import path_edges

        changed: list[str] = []
        for fb in feedback:
            stats = self.edge_stats(fb.context.arrays, fb.context.graph)
            qf = getattr(self.scorer, "query_featurizer", None)
            intent = fb.query.meta.get("intent") if fb.query.meta else None
            if intent is None and qf is not None:
                intent = qf.intent(fb.query)
            intent = intent if intent in stats.intents else stats.intents[0]
            bucket = stats.time_bucket(fb.query.timestamp)
            for i, r in zip(fb.shown, fb.ratings, strict=True):
                if r is None:
                    continue
                edges, _ = path_edges([fb.paths[i]], fb.context.arrays)
                if len(edges):
                    stats.reinforce(edges, str(intent), bucket, float(r))
                    changed += [str(fb.context.arrays.edge_ids[e]) for e in edges]
        if learn_scorer:
            self.scorer.update(feedback)
        forget = getattr(self.scorer, "forget_snapshot", None)
        if changed:
            self.online_edges.update(changed)
            if forget is not None:
                forget(changed)
            else:
                invalidate = getattr(self.scorer, "invalidate", None)
                if invalidate is not None:
                    invalidate()


def load_policy(directory: str | FsPath) -> ServedPolicy:
    """Load an artifact folder written by ``python -m signet_rl.export``.

    Raises:
        PolicyError: no manifest, another format, an unknown kind, or a missing file (named).
    """
    d = FsPath(directory)
    path = d / MANIFEST
    if not path.exists():
        raise PolicyError(f"{str(d)!r} is not a policy artifact: no {MANIFEST} (write one with "
                          "python -m signet_rl.export RUN_DIR --out DIR)")  # fmt: skip
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise PolicyError(f"{path}: format {manifest.get('format')!r}, this version reads {FORMAT!r}")
    kind = manifest["scorer"].get("kind")
    if kind not in LOADERS:
        raise PolicyError(f"{path}: scorer kind {kind!r} has no loader; known: {', '.join(sorted(LOADERS))}")
    for name in [*manifest["scorer"].get("files", []), EDGE_STATS]:
        if not (d / name).exists():
            raise PolicyError(f"{d}: missing {name} (listed in {MANIFEST})")
    frame = pd.read_parquet(d / EDGE_STATS)
    cols = [c for c in frame.columns if c.startswith("w_")]
    intents = list(dict.fromkeys(c[2:].rsplit("_", 1)[0] for c in cols))
    buckets = len(cols) // max(len(intents), 1)
    scorer = LOADERS[kind](d, manifest)
    return ServedPolicy(d, manifest, scorer, _StatsTable(frame, intents, buckets))
