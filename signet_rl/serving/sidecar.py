"""Signet's predictor sidecar, served by a signet_rl policy: newline-delimited JSON-RPC 2.0 on stdin/stdout.

Signet's daemon starts its predictor as ``<binary> --native-dim <dims> --checkpoint <path>`` and lets another
binary take its place (``predictor.binaryPath`` / ``binaryArgs``). ``python -m signet_rl.serve sidecar --db
memories.db [--policy DIR]`` is such a binary. One JSON object per line each way; every response carries
``jsonrpc: "2.0"``, the request's ``id`` and either ``result`` or ``error: {code, message}``; a bad line
gets a JSON-RPC error and the process keeps serving; end of input ends it (exit status 0).

Methods (Signet's ``packages/predictor/src/protocol.rs``):

* ``score {context_embedding, candidate_ids, candidate_embeddings?, candidate_texts?, candidate_features?,
  project_slot?}`` -> ``{scores: [{id, score}]}`` in input order. There is no query text: the entries are
  the entities the candidate memories mention (in the store), the policy's traversal walks from them with the
  ``what`` strategy and its learned walk order, the policy scores the paths, and each memory scores as the
  best path that constructs from it (a path holding a fact extracted from the memory, or passing through an
  entity it mentions). A memory no path reaches scores below every reached one. The context vector is the
  query embedding only when its length equals the policy encoder's dimension (Signet's 768-d vectors
  do not match the hashing encoder's 384: then the query embedding is zero).
* ``train {context_embedding, candidate_embeddings, labels, candidate_features?, project_slot?,
  temperature?, candidate_ids?}`` -> ``{loss, step}``: the listwise KL loss of the current scores against the
  labels (softmax at ``temperature``, as Signet's), then feedback: every path that constructs from a
  candidate is rated +1 (label >= 0.5), -1 (label <= 0) or 0, which updates the policy's edge statistics
  (and, for the GNN, the features of the edges that changed) and any online head (LinUCB). Signet's own
  ``train`` carries no ids; this sidecar learns only from calls that add ``candidate_ids`` (an extension;
  without them the loss is reported and nothing is learned).
* ``status`` -> ``{trained, training_pairs, model_version, last_trained}``.
* ``save_checkpoint {path?}`` -> ``{saved, path}``: the learned state (edge statistics, LinUCB posterior,
  counters) to ``path`` or the ``--checkpoint`` file, atomically; a later start with that ``--checkpoint``
  resumes from it.
* ``train_from_db``: not supported (error -32601, naming ``train``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path as FsPath
from typing import IO, Any

import numpy as np

from signet_rl.core.types import Query
from signet_rl.datasets.signet import import_signet
from signet_rl.graph.arrays import GraphArrays
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.serving.policy import ServedPolicy, load_policy
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.walk import Traverser

__all__ = ["PARSE_ERROR", "Sidecar", "serve"]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603,
)  # fmt: skip
_CHECKPOINT_FORMAT = "signet_rl.sidecar/1"
#: Signet's session-start pool holds at most this many candidates; the path budget covers twice as many.
MAX_CANDIDATES = 100
#: Most entry entities of one score call (the walk's cost grows with them).
MAX_ENTRIES = 100


class RpcError(Exception):
    """An error answered as a JSON-RPC error object."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _floats(params: dict[str, Any], key: str, required: bool = True) -> list[float]:
    value = params.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {key} must be a list of numbers")
    return [float(x) for x in value]


def _strings(params: dict[str, Any], key: str, required: bool = True) -> list[str] | None:
    value = params.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {key} must be a list of strings")
    return list(value)


class Sidecar:
    """A policy in front of one Signet store (see the module docstring).

    Args:
        db: the Signet store (read-only).
        policy: an artifact folder (:func:`~signet_rl.serving.policy.load_policy`); None: the prior scorer.
        native_dim: the daemon's embedding dimension (``--native-dim``).
        checkpoint: where ``save_checkpoint`` writes and from where a start resumes (``--checkpoint``);
            a file that is not a signet_rl sidecar checkpoint is left alone (a note on stderr).
    """

    def __init__(
        self,
        db: str | os.PathLike[str],
        policy: str | os.PathLike[str] | None = None,
        native_dim: int = 768,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> None:
        self.graph = import_signet(db)
        self.arrays = GraphArrays.from_graph(self.graph)
        self.policy = load_policy(FsPath(policy)) if policy is not None else ServedPolicy.fixed("prior")
        self.native_dim = int(native_dim)
        self.checkpoint = FsPath(checkpoint) if checkpoint else None
        self.memory_index = {str(m): i for i, m in enumerate(self.arrays.memory_ids)}
        self._candidate_of = np.full(len(self.arrays.memory_ids), -1, dtype=np.int64)
        self._slot_weights: np.ndarray | None = None
        self.stats = self.policy.edge_stats(self.arrays, self.graph)
        self.policy.prepare(self.graph, self.arrays)
        # The trained walk, with a path budget that lets every one of Signet's (at most 100) candidates be
        # reached: a memory scores as its best path.
        trained = dict(self.policy.traversal)
        trained["max_paths"] = max(int(trained.get("max_paths", 50)), 2 * MAX_CANDIDATES)
        self.config = TraversalConfig.from_dict(trained)
        self.traverser = _StoreTraverser(self.arrays, self.graph, self.config)
        self.attr_index = {str(x): i for i, x in enumerate(self.arrays.attribute_ids)}
        self.dim = int(
            getattr(getattr(self.policy.scorer, "query_featurizer", None), "embedding_dim", 0) or 0
        )
        self.step = 0
        self.training_pairs = 0
        self.last_trained: str | None = None
        if self.checkpoint is not None and self.checkpoint.exists():
            self._load_checkpoint(self.checkpoint)

    # -- scoring ------------------------------------------------------------------------------------

    def _query(self, context: Sequence[float]) -> Query:
        meta: dict[str, Any] = {"intent": "what"}
        if self.dim:
            vec = np.asarray(context, dtype=np.float32) if len(context) == self.dim else np.zeros(self.dim)
            meta["query_embedding"] = vec.astype(np.float32)
        return Query(id="sidecar", text="", graph_id="main", split="test", meta=meta)

    def _edge_weight(self) -> Any:
        """The learned walk order (``what``, no query time) of every CSR slot, computed once per state of the
        statistics (:meth:`train` and a checkpoint load drop it) and looked up per call."""
        if self._slot_weights is None:
            fn = self.stats.edge_weight_fn("what", self.stats.time_bucket(None))
            weights = np.asarray(fn(self.arrays, np.arange(len(self.arrays.dep_edge))))
            self._slot_weights = weights

            def edge_weight(arrays: GraphArrays, slots: np.ndarray) -> np.ndarray:
                if arrays is not self.arrays:
                    return fn(arrays, slots)
                return weights[slots]

            self._edge_weight_fn = edge_weight
        return self._edge_weight_fn

    def entries(self, memory_ids: Sequence[str]) -> list[int]:
        """The walk's entry entities: the entities the candidates mention, taken round-robin (each memory's
        most-mentioned entity first, then each one's second, ...) up to :data:`MAX_ENTRIES`, so that every
        candidate contributes before any contributes twice and the walk stays within the score timeout."""
        a = self.arrays
        per = []
        for mid in memory_ids:
            m = self.memory_index.get(mid)
            if m is not None:
                ents = a.entities_of(m)
                per.append(ents[np.argsort(-a.entity_mentions[ents], kind="stable")].tolist())
        out: list[int] = []
        seen: set[int] = set()
        depth = 0
        while len(out) < MAX_ENTRIES and any(depth < len(p) for p in per):
            for p in per:
                if depth < len(p) and p[depth] not in seen and len(out) < MAX_ENTRIES:
                    seen.add(p[depth])
                    out.append(p[depth])
            depth += 1
        return out

    def paths(
        self, memory_ids: Sequence[str], context: Sequence[float]
    ) -> tuple[Query, list[Any], np.ndarray, ScoringContext, list[list[int]]]:
        """The walk from the candidates' entities: ``(query, paths, path scores, context, paths of each
        candidate)``."""
        a = self.arrays
        entries = [str(a.entity_ids[e]) for e in self.entries(memory_ids)]
        query = self._query(context)
        ctx = ScoringContext(self.graph, a, entries, None)
        if self.policy.reinforcement:
            self.traverser.edge_weight = self._edge_weight()
        walk = self.traverser.walk(entries, "what", None) if entries else None
        paths = list(walk.paths) if walk is not None else []
        scores = self.policy.score(query, paths, ctx) if paths else np.zeros(0)
        return query, paths, scores, ctx, self.candidate_paths(paths, memory_ids)

    def candidate_paths(self, paths: Sequence[Any], memory_ids: Sequence[str]) -> list[list[int]]:
        """The paths that construct from each candidate memory (ascending path indices): a path holding a
        fact extracted from it, or passing through an entity it mentions (a repeated id counts at its last
        place). Array work over the entity-memory CSR; one Python pass over the paths' hops."""
        a = self.arrays
        cand = self._candidate_of  # memory row -> candidate position, -1 elsewhere (reset below)
        rows = []
        for j, mid in enumerate(memory_ids):
            m = self.memory_index.get(mid)
            if m is not None:
                cand[m] = j
                rows.append(m)
        try:
            ent_p: list[int] = []
            ent_r: list[int] = []
            att_p: list[int] = []
            att_r: list[int] = []
            ent_index, attr_index = a.entity_index, self.attr_index
            for p_i, path in enumerate(paths):
                for eid in path.entities:
                    e = ent_index.get(eid)
                    if e is not None:
                        ent_p.append(p_i)
                        ent_r.append(e)
                for att in path.attributes:
                    k = attr_index.get(att)
                    if k is not None:
                        att_p.append(p_i)
                        att_r.append(k)
            ents = np.asarray(ent_r, dtype=np.int64)
            start, count = a.ent_mem_indptr[ents], np.diff(a.ent_mem_indptr)[ents]
            total = int(count.sum())
            # the CSR slices of every entity hop, concatenated: slot i of hop h is start[h] + i
            offset = np.repeat(start - (np.cumsum(count) - count), count)
            mem = a.ent_mem[offset + np.arange(total)]
            att_mem = a.attr_memory[np.asarray(att_r, dtype=np.int64)]
            has = att_mem >= 0
            owner = np.concatenate([np.repeat(np.asarray(ent_p, dtype=np.int64), count),
                                    np.asarray(att_p, dtype=np.int64)[has]])  # fmt: skip
            j = cand[np.concatenate([mem, att_mem[has]]).astype(np.int64)]
        finally:
            cand[rows] = -1
        hit = j >= 0
        pairs = np.unique(j[hit] * max(len(paths), 1) + owner[hit])  # by candidate, then path
        per: list[list[int]] = [[] for _ in memory_ids]
        for c, p_i in zip((pairs // max(len(paths), 1)).tolist(), (pairs % max(len(paths), 1)).tolist(),
                          strict=True):  # fmt: skip
            per[c].append(p_i)
        return per

    def score(self, memory_ids: Sequence[str], context: Sequence[float] = ()) -> list[tuple[str, float]]:
        """``(id, score)`` per candidate, in input order: the best score of a path that constructs from the
        memory; candidates no path reaches score 1 below the lowest reached one (0 when none is reached)."""
        _, _, scores, _, per = self.paths(memory_ids, context)
        best = [max(float(scores[i]) for i in idx) if idx else None for idx in per]
        reached = [b for b in best if b is not None]
        floor = (min(reached) - 1.0) if reached else 0.0
        return [(mid, floor if b is None else b) for mid, b in zip(memory_ids, best, strict=True)]

    # -- learning -----------------------------------------------------------------------------------

    def train(self, memory_ids: Sequence[str] | None, labels: Sequence[float], context: Sequence[float],
              temperature: float) -> tuple[float, int]:  # fmt: skip
        """The listwise loss of the current scores, then feedback (see the module docstring)."""
        if memory_ids is None:
            return _listwise_kl(
                np.zeros(len(labels)), np.asarray(labels, dtype=np.float64), temperature
            ), self.step
        if len(memory_ids) != len(labels):
            raise RpcError(
                INVALID_PARAMS, f"Invalid params: {len(labels)} labels for {len(memory_ids)} candidate_ids"
            )
        query, paths, scores, ctx, per = self.paths(memory_ids, context)
        best_scores = np.array([max(scores[i] for i in idx) if idx else 0.0 for idx in per])
        loss = _listwise_kl(best_scores, np.asarray(labels, dtype=np.float64), temperature)
        rating: dict[int, int] = {}  # every path through a labelled memory, rated by its first label
        for idx, label in zip(per, labels, strict=True):
            for i in idx:
                rating.setdefault(int(i), 1 if label >= 0.5 else (-1 if label <= 0 else 0))
        if rating:
            order = sorted(rating, key=lambda i: -float(scores[i]))
            self.policy.feedback([Feedback(query, paths, ctx, order, [rating[i] for i in order])])
            self._slot_weights = None  # the statistics changed
            self.step += 1
            self.training_pairs += sum(1 for idx in per if idx)
            self.last_trained = _dt.datetime.now(_dt.UTC).isoformat()
        return loss, self.step

    def status(self) -> dict[str, Any]:
        return {"trained": self.policy.manifest.get("training", {}).get("steps", 0) > 0 or self.step > 0,
                "training_pairs": self.training_pairs, "model_version": self.step,
                "last_trained": self.last_trained}  # fmt: skip

    # -- checkpoints --------------------------------------------------------------------------------

    def save_checkpoint(self, path: str | None = None) -> dict[str, Any]:
        target = FsPath(path) if path else self.checkpoint
        if target is None:
            raise RpcError(INVALID_PARAMS, "Invalid params: no path given and the sidecar was started "
                           "without --checkpoint")  # fmt: skip
        target.parent.mkdir(parents=True, exist_ok=True)
        blob: dict[str, Any] = {f"stats_{k}": v for k, v in self.stats.state_dict().items()}
        head = getattr(self.policy.scorer, "state_dict", None)
        if head is not None and self.policy.name == "linucb":
            state = head()
            blob["linucb_A_inv"], blob["linucb_b"] = state["A_inv"], state["b"]
        meta = {"format": _CHECKPOINT_FORMAT, "step": self.step, "training_pairs": self.training_pairs,
                "last_trained": self.last_trained, "policy": self.policy.name,
                "online_edges": sorted(self.policy.online_edges)}  # fmt: skip
        blob["meta"] = np.asarray(json.dumps(meta))
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **blob)
            os.replace(tmp, target)
        finally:
            FsPath(tmp).unlink(missing_ok=True)
        return {"saved": True, "path": str(target)}

    def _load_checkpoint(self, path: FsPath) -> None:
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("format") != _CHECKPOINT_FORMAT:
                    raise ValueError(meta.get("format"))
                self.stats.load_state_dict({k[6:]: z[k] for k in z.files if k.startswith("stats_")})
                self._slot_weights = None
                if "linucb_A_inv" in z.files and self.policy.name == "linucb":
                    head: Any = self.policy.scorer
                    head.load_state_dict(
                        {
                            "format": "signet_rl.LinUCBScorer/1",
                            "A_inv": z["linucb_A_inv"],
                            "b": z["linucb_b"],
                        }
                    )
        except Exception as err:
            print(f"signet_rl sidecar: {path} is not a signet_rl sidecar checkpoint ({type(err).__name__}: "
                  f"{err}); starting from the policy artifact", file=sys.stderr)  # fmt: skip
            return
        self.step = int(meta.get("step", 0))
        self.training_pairs = int(meta.get("training_pairs", 0))
        self.last_trained = meta.get("last_trained")
        online = [str(e) for e in meta.get("online_edges", [])]
        self.policy.online_edges.update(online)
        forget = getattr(self.policy.scorer, "forget_snapshot", None)
        if forget is not None and online:
            forget(online)  # the edges feedback changed read the resumed statistics; the rest as trained

    # -- protocol -----------------------------------------------------------------------------------

    def handle(self, method: str, params: Any) -> Any:
        """The result of one call (raises :class:`RpcError` for a JSON-RPC error)."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
        if method == "score":
            ids = _strings(params, "candidate_ids")
            assert ids is not None
            ctx = _floats(params, "context_embedding")
            return {"scores": [{"id": i, "score": s} for i, s in self.score(ids, ctx)]}
        if method == "train":
            ctx = _floats(params, "context_embedding")
            labels = _floats(params, "labels")
            embeddings = params.get("candidate_embeddings")
            if not isinstance(embeddings, list):
                raise RpcError(
                    INVALID_PARAMS, "Invalid params: candidate_embeddings must be a list of number lists"
                )
            temperature = params.get("temperature", 0.5)
            if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature <= 0:
                raise RpcError(INVALID_PARAMS, "Invalid params: temperature must be a number > 0")
            ids = _strings(params, "candidate_ids", required=False)
            loss, step = self.train(ids, labels, ctx, float(temperature))
            return {"loss": loss, "step": step}
        if method == "status":
            return self.status()
        if method == "save_checkpoint":
            path = params.get("path")
            if path is not None and not isinstance(path, str):
                raise RpcError(INVALID_PARAMS, "Invalid params: path must be a string")
            return self.save_checkpoint(path)
        if method == "train_from_db":
            raise RpcError(METHOD_NOT_FOUND, "Method not supported: train_from_db (send train with labels)")
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def respond(self, line: str) -> dict[str, Any] | None:
        """The response to one input line (None for a blank line)."""
        if not line.strip():
            return None
        try:
            request = json.loads(line)
        except json.JSONDecodeError as err:
            return _error(None, PARSE_ERROR, f"Parse error: {err.msg} at column {err.colno}")
        if not isinstance(request, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
        rid = request.get("id")
        method = request.get("method")
        if request.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(rid, INVALID_REQUEST, 'Invalid Request: needs jsonrpc "2.0" and a string method')
        try:
            result = self.handle(method, request.get("params"))
        except RpcError as err:
            return _error(rid, err.code, str(err))
        except Exception as err:
            return _error(rid, INTERNAL_ERROR, f"Internal error: {type(err).__name__}: {err}")
        return {"jsonrpc": "2.0", "id": rid, "result": result}


class _StoreTraverser(Traverser):
    """The traverser over the sidecar's store, which never changes while it serves: an aspect's current
    attributes with no query time and no query relevance (every ``score`` call's case) are computed once per
    aspect and kept, not recomputed per call (the same arrays, so the same walk)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._current_memo: dict[tuple[int, float], Any] = {}

    def _current(self, asp: int, t: float, relevance: Any = None, *args: Any, **kwargs: Any) -> Any:
        if relevance is not None or args or kwargs:
            return super()._current(asp, t, relevance, *args, **kwargs)
        key = (int(asp), float(t))
        hit = self._current_memo.get(key)
        if hit is None:
            hit = super()._current(asp, t)
            hit.setflags(write=False)  # shared between calls: nobody may change it
            self._current_memo[key] = hit
        return hit


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _listwise_kl(scores: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    """KL(softmax(labels / T) || softmax(scores / T)), Signet's listwise loss; 0 for no candidates."""
    if not len(labels):
        return 0.0

    def softmax(x: np.ndarray) -> np.ndarray:
        z = np.exp((x - x.max()) / temperature)
        return z / z.sum()

    p, q = softmax(labels), softmax(scores)
    return float(np.sum(p * (np.log(np.maximum(p, 1e-12)) - np.log(np.maximum(q, 1e-12)))))


def serve(sidecar: Sidecar, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> int:
    """Answer lines from ``stdin`` until end of input; returns the exit status (0)."""
    for line in stdin:
        response = sidecar.respond(line)
        if response is None:
            continue
        stdout.write(json.dumps(response, allow_nan=False, default=_json_default) + "\n")
        stdout.flush()
    return 0


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
