"""``python -m signet_rl.serve``: a trained policy in front of a Signet store, over HTTP.

The service opens the user's Signet v30 store **read-only** (it is never written), loads an exported policy
artifact (:func:`~signet_rl.serving.policy.load_policy`; no torch), and answers in the shapes of Signet's
own API (facts: the project's design notes on Signet's HTTP API):

* ``POST /api/memory/recall`` — Signet's request fields (``query``, ``keywordQuery``, ``limit``, ...; plus
  ``sessionKey`` and ``budgetChars``); Signet's result fields plus, per result, ``result_id`` (what
  feedback rates), ``system`` (``desire`` or ``flat``: the online comparison's label), ``propensity`` and
  ``path`` — the constructed memory's provenance (entities, aspects, attributes, memory ids, dependencies).
  The results are a mixed slate of the desire retriever's constructed memories and Signet's flat recall
  (:mod:`signet_rl.serving.compare`); Signet's significance gate may leave the flat side empty.
* ``POST /api/memory/feedback`` — Signet's shape (``sessionKey``, ``feedback: {id: rating}``, where ``id`` is
  a result id or a memory id the session was shown) plus ``results: {result_id: {rating | verb, text,
  idempotencyKey}}``; the verbs are the seed's ``confirm`` (+1), ``reject`` (-1) and ``correct`` (-0.5, with
  the correction's text logged). Each rating carries an idempotency key (given, or derived from the
  request's ``idempotencyKey`` and the id), and is acknowledged only once committed; one request is one
  transaction (every item is checked first, and an item that fails, e.g. a key reused for another rating,
  leaves none of the request's items written, the error naming it). No endpoint sets a weight.
* ``POST /api/knowledge/expand`` — the pull path: an entity's constraints, aspects with attributes,
  dependencies and memories within ``maxTokens``.
* ``GET /api/graph/impact?entity=...``, ``GET /health``, ``GET /api/predictor/status``.
* ``POST /api/session/start`` — the push path (issue 29 §5), only when the service runs with pre-warm on
  (``--prewarm``; off by default): with no query, the paths the time-of-day and weekday statistics of the
  acknowledged ratings predict (:mod:`signet_rl.emergence.prewarm`), as constructed memories within 600
  characters, shown like recall results (``system`` ``prewarm``, a ``propensity`` each) and rated the same
  way; each rating of a walked path also feeds those statistics.
* Issue 29 (``--emergence``, each switch off by default; state in the service's own file, the store stays
  read-only): ``GET /api/emergence/principles`` and ``POST /api/emergence/principles/{id}`` (``confirm``,
  ``reject``, ``correct``: the only verbs; users set no weights), ``GET /api/emergence/bridges``, ``GET
  /api/emergence/health``, ``POST``/``GET /api/emergence/pruning`` (a pruning plan from the feedback up to
  ``until``, kept with its health snapshot and applied only offline, on a copy) and ``GET
  /api/emergence/exploration`` (each session's explorer slots, set by the staleness signal with
  ``regulation``; :mod:`signet_rl.serving.exploration`). A verb, or a rating that promotes, climbs or fades a
  bridge, re-indexes the desire retriever at once (:meth:`Service._reindex`): the next recall walks the
  changed graph. With explorer slots on, a recall of a session with slots left ends with speculative results
  (``system`` ``explorer``, propensity 1, outside the mixed slate).

Online learning: each newly recorded rating reinforces the rated path's edges in the policy's desire-path
statistics with the training rule (:meth:`~signet_rl.learning.reinforcement.EdgeStats.reinforce`: floor,
ceiling) and a cooling step, and where the artifact has an online-learnable head (LinUCB) updates its
posterior with the context-path vector logged when the path was shown; at start-up the statistics are rebuilt
by replaying the state file's feedback log, so they always equal a replay of what was acknowledged.

Security: binds 127.0.0.1 by default; elsewhere a bearer token is required (``--token`` or
``SIGNET_RL_SERVE_TOKEN``). Bodies over 64 KiB get 413; malformed JSON or a wrong field type gets 422
naming the field; unknown ids are rejected with nothing written, and so is a rating of a result whose path
runs through an entity the store has since moved to its cold tier (422 naming both; emergence on or off).
This module imports neither torch, the trainer, Hydra, MLflow nor the evaluation package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from signet_rl.core.timing import StageTimer, stage
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport
from signet_rl.datasets.signet import import_signet
from signet_rl.emergence.cold import cold_entities
from signet_rl.emergence.prewarm import PREWARM_INTENT, PrewarmConfig, TemporalPrewarm, prewarm_slate
from signet_rl.graph.impact import impact_report
from signet_rl.serving.compare import MixedSlate, compare_report, mix
from signet_rl.serving.emergence import check_not_cold
from signet_rl.serving.state import FeedbackRow, IssuedResult, ServiceState, StateError, UnknownIdError

__all__ = ["HYBRID", "MAX_BODY", "Service", "create_app", "default_state_path"]

log = logging.getLogger(__name__)

#: Traversal overrides that switch the hybrid entry on (``serve --hybrid``): flat's hits as the floor,
#: session-DAG steps and entity walks beside the policy's graph walk.
HYBRID: dict[str, Any] = {"floor": True, "session": True, "entity_walks": True, "graph_walk": True}

#: Largest request body accepted (bytes); larger ones get 413.
MAX_BODY = 64 * 1024
VERB_RATING = {"confirm": 1.0, "reject": -1.0, "correct": -0.5}


def default_state_path(store: str | Path) -> Path:
    """The service's own state file beside the store: ``<store>.signet_rl.sqlite``."""
    store = Path(store)
    return store.with_name(store.name + ".signet_rl.sqlite")


# -- request bodies (strict types: a wrong type is a 422 naming the field) ------------------------------


class RecallBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query: StrictStr = Field(min_length=1, max_length=8192)
    keywordQuery: StrictStr | None = None
    limit: StrictInt | None = Field(default=None, ge=1, le=50)
    type: StrictStr | None = None
    tags: list[StrictStr] | None = None
    who: StrictStr | None = None
    pinned: bool | None = None
    importance_min: StrictFloat | StrictInt | None = None
    since: StrictStr | None = None
    until: StrictStr | None = None
    sessionKey: StrictStr | None = None
    budgetChars: StrictInt | None = Field(default=None, ge=1, le=100_000)


class ResultFeedback(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rating: StrictFloat | StrictInt | None = Field(default=None, ge=-1, le=1)
    verb: StrictStr | None = None
    text: StrictStr | None = Field(default=None, max_length=4000)
    idempotencyKey: StrictStr | None = Field(default=None, min_length=1, max_length=200)


class FeedbackBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sessionKey: StrictStr | None = None
    feedback: dict[StrictStr, StrictFloat | StrictInt] = Field(default_factory=dict)
    results: dict[StrictStr, ResultFeedback] = Field(default_factory=dict)
    idempotencyKey: StrictStr | None = Field(default=None, min_length=1, max_length=150)


class SessionStartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sessionKey: StrictStr | None = None
    budgetChars: StrictInt | None = Field(default=None, ge=1, le=100_000)
    at: StrictStr | None = None  # the session's start (ISO 8601); default: now


class ExpandBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    entity: StrictStr
    aspect: StrictStr | None = None
    maxTokens: StrictInt = Field(default=500, ge=1, le=20_000)


# -- the service ---------------------------------------------------------------------------------------


class Service:
    """Everything one running service holds: the store's graph, the policy, the retrievers, the state.

    Args:
        store: the Signet database (opened read-only).
        policy: an exported artifact folder.
        state: the service's own SQLite file (default :func:`default_state_path`).
        k: results per recall (Signet's ``limit`` overrides per request).
        budget_chars: the desire retriever's character budget per recall.
        alpha, temperature: the online comparison's mixing (see :mod:`~signet_rl.serving.compare`).
        seed: seeds the slate draws.
        flat: the flat recall mixed in, which is also the desire retriever's floor when the traversal
            switches on a hybrid-entry piece (a Signet store has no frozen ``best_flat``).
        traversal: traversal overrides on top of the one the policy was trained with (e.g. the hybrid
            entry's ``floor``, ``session``, ``entity_walks``).
        prewarm: temporal pre-warm settings; None (the default) leaves ``/api/session/start`` off.
    """

    def __init__(self, store: str | Path, policy: str | Path, state: str | Path | None = None, *, k: int = 5,
                 budget_chars: int = 2000, alpha: float = 0.5, temperature: float = 0.02, seed: int = 0,
                 flat: str = "flat_signet", prewarm: PrewarmConfig | None = None,
                 emergence: Mapping[str, Any] | None = None,
                 traversal: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        from signet_rl.retrieval.flat import flat_variant
        from signet_rl.serving.policy import load_policy

        t0 = time.perf_counter()
        emergence_config = self._emergence_config(emergence)  # a refused switch leaves no state file behind
        self.store = Path(store)
        self.graph = import_signet(self.store)
        self.policy = load_policy(policy)  # before the state file: a bad artifact leaves no file behind
        self.state = ServiceState(state or default_state_path(self.store), store=self.store)
        #: entities the store keeps in its cold tier: a rating of a result through one is refused, whether
        #: emergence is on or off (pruning happens offline, between two runs of the service)
        self.cold = frozenset(cold_entities(self.store))
        self.emergence_config = emergence_config
        self.emergence = self._emergence(emergence_config)
        self.exploration = self._exploration(emergence_config, k)
        self.dataset = Dataset(name=f"signet:{self.store}", graphs={"main": self.graph}, queries=[],
                               truth=GroundTruth(), report=LoadReport(files=[str(self.store)]))  # fmt: skip
        # sparse query vectors by their non-zero columns (the same scores as faiss's scan, ties by row)
        self.flat = flat_variant(flat, encoder=self.policy.encoder, sparse_queries=True)
        self._traversal = traversal
        self.desire = self.policy.retriever(name="desire", config=traversal)
        self.desire.flat_spec = self.flat  # a hybrid traversal's floor: indexed once, by whoever is first
        self.desire.parallel_floor = True  # the floor's flat retrieval overlaps entry search and the walk
        self.desire.index(self.dataset)
        if getattr(self.flat, "_floor_indexed", None) is not self.dataset:
            self.flat.index(self.dataset)
        self.arrays = self.desire._state("main").arrays
        self.edge_index = {str(e): i for i, e in enumerate(self.arrays.edge_ids)}
        self.stats = self.policy.edge_stats(self.arrays)
        self.k, self.budget_chars, self.alpha, self.temperature = k, budget_chars, alpha, temperature
        self._rng = np.random.default_rng(seed)
        # Retrieval, slate draws and online updates share caches and the statistics (the hashing encoder and
        # the scorers' lazy per-graph state are not thread-safe): one lock serialises them; the state file has
        # its own.
        self._lock = threading.RLock()
        self.memories = self.graph.memories.set_index("id", drop=False)
        self.memory_ids = frozenset(str(m) for m in self.graph.memories["id"])
        self.prewarm = TemporalPrewarm(prewarm) if prewarm is not None else None
        self.replayed = self.state.replay(self._learn)
        #: how often the live graph was re-indexed (a principle verb or a bridge move, :meth:`_reindex`)
        self.reindexed = 0
        self._entity_vectors: np.ndarray | None = None
        self.started = time.time()
        self.load_seconds = time.perf_counter() - t0
        log.info("serving %s on %s: %d entities, %d memories; %d ratings replayed in %.1f s",
                 self.policy.name, self.store, self.graph.num_entities, self.graph.num_memories,
                 self.replayed, self.load_seconds)  # fmt: skip

    @staticmethod
    def _emergence_config(values: Mapping[str, Any] | None) -> Any:
        """The service's :class:`~signet_rl.emergence.config.EmergenceConfig`.

        Raises:
            ValueError: a switch the service has no mechanism for, naming it and where it is
                (``staleness``, ``cold_tier``: :data:`~signet_rl.emergence.config.NOT_HERE`; ``prewarm``:
                the service's ``--prewarm``), or any key ``EmergenceConfig.from_mapping`` refuses.
        """
        from signet_rl.serving.emergence import from_mapping

        config = from_mapping(values)
        if config.prewarm:
            raise ValueError("emergence.prewarm is the trainer's switch; the service's temporal pre-warm is "
                             "--prewarm (Service(prewarm=PrewarmConfig()))")
        return config

    def _emergence(self, config: Any) -> Any:
        """Issue 29's bridges, principles and health (:mod:`signet_rl.serving.emergence`), when switched on:
        the graph gains principles and promoted bridges before it is indexed. None when all are off."""
        from signet_rl.serving.emergence import ServiceEmergence
        from signet_rl.text.encoders import make_encoder

        if not {"bridges", "principles", "health"} & set(config.enabled):
            return None
        em = ServiceEmergence(config, self.state.path, encoder=make_encoder(self.policy.encoder),
                              cold=self.cold)
        self.graph = em.prepare(self.graph)
        return em

    def _exploration(self, config: Any, k: int) -> Any:
        """Explorer slots per session (:mod:`signet_rl.serving.exploration`) when ``emergence.explorer`` or
        ``emergence.regulation`` is on; None otherwise."""
        if not (config.explorer or config.regulation):
            return None
        from signet_rl.serving.exploration import ServiceExploration

        return ServiceExploration(config.exploration, config.regulation, self.state.path, k)

    # -- live graph changes (issue 29 §6) ----------------------------------------------------------------

    def _reindex(self, graph: Any) -> float:
        """Walk ``graph`` from the next recall on (:meth:`_prepare_index`, then its swap); returns the
        seconds it took."""
        t0 = time.perf_counter()
        with self._lock:
            self._prepare_index(graph)()
        return time.perf_counter() - t0

    def _prepare_index(self, graph: Any) -> Any:
        """A desire retriever indexed over ``graph`` (arrays, traverser, entry search), built while the
        serving one stays in place (callers hold the service's lock, so recalls wait for the build), and
        the call that swaps it in; the online-learned edge
        statistics move across by edge id (an edge the graph gained starts from the policy's mapped
        statistics, neutral when it never saw it, as after a restart). Nothing changes until the swap, so a
        failure leaves the service walking the old graph. The flat side is untouched: principles and bridges
        add no memories."""
        dataset = dataclasses.replace(self.dataset, graphs={"main": graph})
        desire = self.policy.retriever(name="desire", config=self._traversal)
        desire.flat_spec = self.flat
        desire.parallel_floor = self.desire.parallel_floor
        desire.timer = self.desire.timer
        self.flat._floor_indexed = dataset  # type: ignore[attr-defined]  # memories unchanged: flat kept
        desire.index(dataset)
        arrays = desire._state("main").arrays
        stats = self.policy.edge_stats(arrays)
        index = {str(e): i for i, e in enumerate(arrays.edge_ids)}
        stats.carry_over(self.stats, self.edge_index, index)

        def swap() -> None:
            old = self.desire
            # the old view's statistics and the scorer's state for it (featurizer, tensors, snapshot): gone
            self.policy.forget_graph(self.arrays)
            self.graph, self.dataset, self.desire, self.arrays, self.edge_index, self.stats = (
                graph, dataset, desire, arrays, index, stats)
            if getattr(old, "_floor_thread", None) is not None:
                old._floor_thread.shutdown(wait=False)
            forget = getattr(self.policy.scorer, "forget_snapshot", None)
            if forget is not None:
                forget()
            self._entity_vectors = None
            self.reindexed += 1

        return swap

    def _follow_emergence(self) -> bool:
        """Re-index when the emergence graph moved away from the indexed one (a bridge promoted, climbed
        or faded by a rating); returns whether the served graph is the emergence graph now. A build that
        fails is logged and leaves the old graph served; the next recall or rating tries again (the rating
        that moved the bridge is committed and learned either way)."""
        if self.emergence is None or self.emergence.graph is None or self.emergence.graph is self.graph:
            return True
        try:
            self._reindex(self.emergence.graph)
        except Exception:
            log.exception("re-indexing the changed emergence graph failed; still walking the old graph, "
                          "retried at the next recall or rating")
            return False
        return True

    def emergence_overview(self) -> dict[str, Any]:
        """Issue 29's state in this service at a glance, in the keys ``describe``'s emergence block uses
        (:func:`signet_rl.evaluation.describe.emergence_lines`): the switches, principles by status with
        each one's text, bridges by status, the last health snapshot and pruning plan, the explorer
        regulator's latest decision, and how often the walks were re-indexed live."""
        out: dict[str, Any] = {"switches": list(self.emergence_config.enabled), "reindexed": self.reindexed}
        em = self.emergence
        if em is not None and em.config.principles:
            records = em.principles()
            out["principles_by_status"] = dict(sorted(
                (s, sum(r["status"] == s for r in records)) for s in {r["status"] for r in records}))
            out["principles"] = [{"id": r["id"], "status": r["status"], "text": r["text"],
                                  "entities": len(r["entity_ids"]), "evidence": len(r["evidence"])}
                                 for r in records]
        if em is not None and em.tracker is not None:
            out["bridges"] = {"by_status": em.bridges()["by_status"]}
        last = em.pruning() if em is not None and em.config.health else None
        if last is not None:
            out["health"] = last["health"]["entities"]
            out["communities"] = last["health"]["communities"]
            out["pruning"] = {**last["plan"], "computed_at": last["computed_at"], "apply": last["apply"]}
        if self.exploration is not None:
            status = self.exploration.status(last=1)
            out["exploration"] = {k: status[k] for k in ("regulated", "sessions_decided", "current")}
        return out

    def principle_verb(self, pid: str, verb: str, text: str | None = None) -> dict[str, Any]:
        """Confirm, reject or correct principle ``pid``: the changed graph is applied and indexed first,
        then the verb is logged (:meth:`ServiceEmergence.principle_verb`), then the new index is swapped in,
        so the next recall walks it; a verb refused, or an index that fails to build, logs and changes
        nothing."""
        with self._lock:
            return self.emergence.principle_verb(pid, verb, text, before_commit=self._prepare_index)

    # -- learning -----------------------------------------------------------------------------------------

    def _learn(self, result: IssuedResult, fb: FeedbackRow) -> None:
        """One rating's online update: the rated path's edges reinforced (training rule), then a cool step."""
        edges = np.asarray(
            [self.edge_index[e] for e in result.edge_ids if e in self.edge_index], dtype=np.int64
        )
        intent = result.intent if result.intent in self.stats.intents else self.stats.intents[0]
        if len(edges):
            self.stats.reinforce(edges, intent, result.bucket, fb.rating)
        self.stats.cool(edges if len(edges) else None)
        design = result.path.get("design")
        head = getattr(self.policy.scorer, "update_vector", None)
        if design is not None and head is not None:  # LinUCB's posterior learns online too
            head(np.asarray(design, dtype=np.float64), float(fb.rating))
        forget = getattr(self.policy.scorer, "forget_snapshot", None)
        if forget is not None:
            forget()
        self._learn_prewarm(result, fb)

    def _learn_prewarm(self, result: IssuedResult, fb: FeedbackRow) -> None:
        """With pre-warm on, a rated walked path joins its time-of-day statistics (at the rating's time)."""
        walk = result.path.get("walk")
        if self.prewarm is not None and walk:
            self.prewarm.add(str(walk), fb.created_at, fb.rating)

    # -- recall -------------------------------------------------------------------------------------------

    @property
    def timer(self) -> StageTimer | None:
        """Per-stage timing of each recall's desire path (the desire retriever's own stages, plus this
        service's scoring with the policy; :mod:`signet_rl.core.timing`); None: off (the default)."""
        return self.desire.timer

    @timer.setter
    def timer(self, value: StageTimer | None) -> None:
        self.desire.timer = value

    def _desire(
        self, query: Query, budget: int
    ) -> tuple[list[Any], dict[str, list[float]], list[Any] | None, Any]:
        """The desire retriever's constructed memories for ``query``; when the policy has an
        online-learnable head (LinUCB), each scored path's context-path vector by path id; flat's units
        when the hybrid entry already ran flat for this query (``None``: run it); and the candidates."""
        cands = self.desire.candidates(query)
        if cands is None:
            return [], {}, None, None
        paths = cands.walk.paths
        with stage(self.desire.timer, "scoring"):
            scores = self.policy.score(query, paths, cands.context) if paths else np.zeros(0)
        units = [u for u in self.desire.slate(query, cands, zip(paths, scores.tolist(), strict=True), budget)
                 if u.kind == "constructed"]  # fmt: skip
        designs: dict[str, list[float]] = {}
        head = getattr(self.policy.scorer, "update_vector", None)
        if head is not None and units:
            wanted = {u.meta.get("path_id") for u in units}
            chosen = [p for p in paths if p.id in wanted]
            if chosen:
                x = self.policy.scorer.design(query, chosen, cands.context)
                designs = {p.id: row.tolist() for p, row in zip(chosen, x, strict=True)}
        return units, designs, cands.flat_units, cands

    def _explorers(self, query: Query, cands: Any, taken: set[str], n: int) -> list[tuple[Any, int]]:
        """Up to ``n`` speculative paths for ``query``'s explorer slots, as constructed memories with their
        rank among the speculative candidates (0: the most speculative). Candidates: the walk's paths and
        the far paths (entities close in meaning, two or more hops from every entry), ranked by
        :func:`~signet_rl.learning.exploration.speculative_candidates` (uncertain edges, close but far);
        the paths the desire side already constructed are left out."""
        from signet_rl.learning.exploration import speculative_candidates

        if n <= 0 or cands is None:
            return []
        state = self.desire._state("main")
        paths = list(cands.walk.paths) + self.desire.far_paths(query, cands)
        if not paths:
            return []
        if self._entity_vectors is None:
            names = state.graph.entities.set_index("id")["name"].reindex(state.arrays.entity_ids)
            self._entity_vectors = state.encoder.encode(names.fillna("").astype(str).tolist())
        qv = state.encoder.encode([query.text[:1000]])[0]
        ranked = speculative_candidates(paths, state.arrays, self.stats, qv, self._entity_vectors,
                                        cands.entries, k=len(paths))
        out: list[tuple[Any, int]] = []
        seen = set(taken)
        for rank, i in enumerate(ranked.tolist()):
            p = paths[i]
            if p.id in seen:
                continue
            seen.add(p.id)
            unit = state.builder.construct(p)
            if unit.text and unit.meta.get("path"):  # a walk to log (and to walk again)
                out.append((unit, rank))
            if len(out) == n:
                break
        return out

    def recall(self, body: RecallBody) -> dict[str, Any]:
        limit = body.limit or self.k
        query = Query(id=f"serve:{uuid.uuid4().hex}", text=body.query, graph_id="main", split="test",
                      meta={"session": body.sessionKey} if body.sessionKey else {})  # fmt: skip
        explorers: list[tuple[Any, int]] = []
        with self._lock:
            self._follow_emergence()  # a re-index an earlier rating's failed build left pending
            budget = body.budgetChars or self.budget_chars
            desire_units, designs, floor_units, cands = self._desire(query, budget)
            if self.exploration is not None:  # explorer slots (issue 29 §1): filled before the mixed slate
                n = self.exploration.available(body.sessionKey, limit)
                taken = {str(u.meta.get("path_id")) for u in desire_units}
                explorers = self._explorers(query, cands, taken, n)
            # the hybrid entry's floor is this same flat retriever: its units for this query are reused
            flat_units = floor_units if floor_units is not None else self.flat.retrieve(query, None)
            d_keys = _unique([f"p:{u.meta.get('path_id', u.text[:40])}" for u in desire_units])
            f_keys = _unique([f"m:{u.items[0]}" if u.items else f"f:{i}" for i, u in enumerate(flat_units)])
            units = {**dict(zip(d_keys, desire_units, strict=False)),
                     **dict(zip(f_keys, flat_units, strict=False))}  # fmt: skip
            slate = mix(list(dict.fromkeys(d_keys)), [k for k in dict.fromkeys(f_keys) if k not in d_keys],
                        limit - len(explorers), self._rng, alpha=self.alpha, temperature=self.temperature)
            if self.exploration is not None:  # held until the results are logged (or fail to be), so a
                # concurrent recall of the same session counts them as used
                self.exploration.reserve(body.sessionKey, len(explorers))
        try:
            return self._issue_recall(body, limit, slate, units, designs, explorers)
        finally:
            if self.exploration is not None:
                self.exploration.release(body.sessionKey, len(explorers))

    def _issue_recall(self, body: RecallBody, limit: int, slate: MixedSlate, units: dict[str, Any],
                      designs: dict[str, list[float]], explorers: list[tuple[Any, int]]) -> dict[str, Any]:
        """Log a recall's shown results (the mixed slate, then the explorers) and answer with them."""
        recall_id = uuid.uuid4().hex
        bucket = self.stats.time_bucket(time.time())
        issued, out = [], []
        for slot, (j, p) in enumerate(zip(slate.shown, slate.pscores, strict=True)):
            key = slate.keys[j]
            unit = units[key]
            rid = f"r_{uuid.uuid4().hex}"
            path = _provenance(unit, self.memory_ids)
            system = slate.systems[j]
            logged = dict(path)
            if unit.meta.get("path"):  # the walk itself, so pre-warm can walk it again
                logged["walk"] = str(unit.meta["path"])
            pid = unit.meta.get("path_id")
            if key.startswith("p:") and pid in designs:  # the online head's input, applied when rated
                logged["design"] = designs[pid]
            issued.append(IssuedResult(
                rid, body.sessionKey, body.query, "main", system, slot, p,
                str(unit.meta.get("strategy") or "what"), bucket, tuple(path["memory_ids"]), logged,
                tuple(path["dependencies"]), float(slate.fused[j]), recall_id, slot))  # fmt: skip
            out.append(self._result_json(rid, unit, system, p, slate.fused[j], path))
        for unit, rank in explorers:  # after the mixed slate, outside it (slot None): not in the comparison
            rid = f"r_{uuid.uuid4().hex}"
            path = _provenance(unit, self.memory_ids)
            logged = {**path, "walk": str(unit.meta["path"]), "explorer": True, "speculative_rank": rank}
            issued.append(IssuedResult(
                rid, body.sessionKey, body.query, "main", "desire", len(issued), 1.0,
                str(unit.meta.get("strategy") or "what"), bucket, tuple(path["memory_ids"]), logged,
                tuple(path["dependencies"]), 0.0, recall_id, None))  # fmt: skip
            out.append({**self._result_json(rid, unit, "explorer", 1.0, 0.0, path), "explorer": True,
                        "speculative_rank": rank})
        self.state.issue(issued, {"recall_id": recall_id, "session_key": body.sessionKey, "query": body.query,
                                  "k": limit - len(explorers), "slate": slate.to_json()})  # fmt: skip
        return {"results": out, "query": body.query, "method": "desire-paths", "recall_id": recall_id}

    def _result_json(
        self, rid: str, unit: Any, system: str, p: float, score: float, path: Mapping[str, Any]
    ) -> dict:
        first = path["memory_ids"][0] if path["memory_ids"] else None
        row = self.memories.loc[first] if first is not None and first in self.memories.index else None
        return {
            "id": rid, "result_id": rid, "content": unit.text, "content_length": len(unit.text),
            "truncated": False, "score": float(score), "source": f"signet_rl:{system}",
            "type": "constructed" if unit.kind == "constructed" else str(_get(row, "type", "fact")),
            "tags": _get(row, "tags", None), "pinned": bool(_get(row, "pinned", False)),
            "importance": float(_get(row, "importance", 0.5)), "who": _get(row, "who", None),
            "project": _get(row, "project", None), "created_at": str(_get(row, "created_at", "")),
            "system": system, "propensity": float(p), "path": dict(path),
        }  # fmt: skip

    # -- session start (pre-warm) -----------------------------------------------------------------------

    def session_start(self, body: SessionStartBody) -> dict[str, Any]:
        """The pre-warm slate for a session starting now (or at ``body.at``), issued like recall results.

        Raises:
            HTTPException: 409 when pre-warm is off; 422 for an unreadable ``at``.
        """
        if self.prewarm is None:
            raise HTTPException(409, "pre-warm is off; start the service with --prewarm")
        try:
            at = pd.Timestamp(body.at) if body.at is not None else pd.Timestamp.now(tz="UTC")
            if pd.isna(at):
                raise ValueError(body.at)
        except ValueError:
            raise HTTPException(422, f"at: {body.at!r} is not an ISO 8601 time") from None
        at = at.tz_localize("UTC") if at.tzinfo is None else at.tz_convert("UTC")
        config = self.prewarm.config
        if body.budgetChars is not None:
            config = dataclasses.replace(config, budget_chars=body.budgetChars)
        builder = self.desire.builder("main")
        with self._lock:
            slate = prewarm_slate(self.prewarm, at, lambda p: builder.construct(p, at=at), self._rng, config)
        bucket = self.stats.time_bucket(at.timestamp())
        issued, out = [], []
        for slot, (idx, p, unit) in enumerate(zip(slate.shown, slate.pscores, slate.units, strict=True)):
            rid = f"r_{uuid.uuid4().hex}"
            path = _provenance(unit, self.memory_ids)
            logged = {**path, "walk": slate.candidates[idx]}
            score = float(slate.scores[idx])
            # stored as a desire result (the state file's systems) with intent "prewarm"; no recall row, so
            # the online comparison of recalls is not touched
            issued.append(IssuedResult(
                rid, body.sessionKey, "", "main", "desire", slot, p, PREWARM_INTENT, bucket,
                tuple(path["memory_ids"]), logged, tuple(path["dependencies"]), score))  # fmt: skip
            out.append(self._result_json(rid, unit, "prewarm", p, score, path))
        self.state.issue(issued)
        return {"results": out, "method": "prewarm", "at": at.isoformat(), "chars": slate.chars}

    # -- feedback -----------------------------------------------------------------------------------------

    def feedback(self, body: FeedbackBody, header_key: str | None) -> dict[str, Any]:
        base = body.idempotencyKey or header_key
        # label (how an error names the item), key, result id, rating, verb, text
        items: list[tuple[str, str, str, float, str, str | None]] = []
        for ident, rating in body.feedback.items():
            rid = (
                ident
                if ident.startswith("r_")
                else self.state.latest_result_for_memory(ident, body.sessionKey)
            )
            if rid is None:
                raise UnknownIdError(
                    f"unknown id {ident!r}: neither a result id nor a memory this session was shown"
                )
            key = f"{base}:{ident}" if base else _derived_key(body.sessionKey, ident, float(rating))
            items.append((f"feedback.{ident}", key, rid, float(rating), "rate", None))
        for rid, fb in body.results.items():
            if fb.verb is not None and fb.verb not in VERB_RATING:
                raise StateError(
                    f"results.{rid}.verb: unknown verb {fb.verb!r}; expected one of: {', '.join(VERB_RATING)}"
                )
            if (fb.rating is None) == (fb.verb is None):
                raise StateError(f"results.{rid}: give exactly one of rating or verb")
            rating = float(fb.rating) if fb.rating is not None else VERB_RATING[str(fb.verb)]
            key = fb.idempotencyKey or (f"{base}:{rid}" if base else None)
            if key is None:
                raise StateError(f"results.{rid}: an idempotencyKey is required (per result or per request)")
            items.append((f"results.{rid}", key, rid, rating, fb.verb or "rate", fb.text))
        for _, _, rid, _, _, _ in items:  # every id checked before anything is written
            check_not_cold(self.state.result(rid), self.cold)
        # one request, one transaction: a later item that conflicts (a key reused for another rating) rolls
        # back the earlier ones, and nothing is learned until the whole request is committed. The service's
        # lock is held from the commit through the learning, so ratings are learned in the log's order:
        # what a restart's replay (in seq order) rebuilds (lock order: service, then state)
        recorded = 0
        with self._lock:
            rows = self.state.record_many([item[1:] for item in items], body.sessionKey,
                                          labels=[item[0] for item in items])
            for row, new in rows:
                if new:
                    recorded += 1
                    result = self.state.result(row.result_id)
                    self._learn(result, row)
                    if self.emergence is not None:
                        self.emergence.on_feedback(result, row)
                        self._follow_emergence()  # a bridge promoted (or moved) is walked from now on
        return {"ok": True, "recorded": recorded, "acknowledged": len(items)}

    # -- pull path, impact, status ------------------------------------------------------------------------

    def expand(self, body: ExpandBody) -> dict[str, Any]:
        g = self.graph
        ents = g.entities
        hit = ents[(ents["id"] == body.entity) | (ents["name"].str.lower() == body.entity.lower())]
        if hit.empty:
            raise UnknownIdError(f"unknown entity {body.entity!r} (give an entity id or its name)")
        eid = str(hit["id"].iloc[0])
        budget = body.maxTokens * 4
        aspects = g.aspects[g.aspects["entity_id"] == eid]
        attrs = g.attributes[g.attributes["aspect_id"].isin(set(aspects["id"]))]
        attrs = attrs[attrs["status"] == "active"]
        if body.aspect is not None:
            aspects = aspects[(aspects["id"] == body.aspect) | (aspects["name"] == body.aspect)]
            if aspects.empty:
                raise UnknownIdError(f"entity {eid!r} has no aspect {body.aspect!r}")
        used = 0

        def take(text: str) -> bool:
            nonlocal used
            if used + len(text) > budget:
                return False
            used += len(text)
            return True

        constraints = [
            {"id": str(r.id), "content": str(r.content)}
            for r in attrs[attrs["kind"] == "constraint"].itertuples()
            if take(str(r.content))
        ]
        out_aspects = []
        for a in aspects.sort_values("weight", ascending=False).itertuples():
            facts = [
                {"id": str(r.id), "content": str(r.content), "memory_id": r.memory_id}
                for r in attrs[(attrs["aspect_id"] == a.id) & (attrs["kind"] != "constraint")]
                .sort_values("importance", ascending=False)
                .itertuples()
                if take(str(r.content))
            ]
            out_aspects.append(
                {"id": str(a.id), "name": str(a.name), "weight": float(a.weight), "attributes": facts}
            )
        deps = g.dependencies[
            (g.dependencies["source_entity_id"] == eid) | (g.dependencies["target_entity_id"] == eid)
        ]
        dependencies = [
            {
                "id": str(d.id),
                "source": str(d.source_entity_id),
                "target": str(d.target_entity_id),
                "type": str(d.dependency_type),
                "strength": float(d.strength),
            }
            for d in deps.itertuples()
        ]
        mids = sorted({str(m) for m in attrs["memory_id"].dropna()})
        memories = [
            {"id": m, "content": str(self.memories.loc[m, "content"])}
            for m in mids
            if m in self.memories.index and take(str(self.memories.loc[m, "content"]))
        ]
        return {"entity": {"id": eid, "name": str(hit["name"].iloc[0])}, "constraints": constraints,
                "aspects": out_aspects, "dependencies": dependencies, "memories": memories,
                "chars": used, "maxTokens": body.maxTokens}  # fmt: skip

    def stats_digest(self) -> str:
        """SHA-256 of what ratings change: the desire-path statistics (weights, walk counts, step) and an
        online head's posterior (LinUCB's ``A_inv`` and ``b``); equal digests, equal learned state."""
        with self._lock:
            h = hashlib.sha256(np.ascontiguousarray(self.stats.weights).tobytes())
            h.update(np.ascontiguousarray(self.stats.walks).tobytes())
            h.update(str(self.stats.step).encode())
            for name in ("A_inv", "b"):  # an online-learnable head's state (LinUCB)
                value = getattr(self.policy.scorer, name, None)
                if value is not None:
                    h.update(np.ascontiguousarray(value).tobytes())
        return h.hexdigest()

    def status(self) -> dict[str, Any]:
        counts = self.state.counts()
        return {"trained": True, "model_version": self.policy.manifest.get("version", 1),
                "policy": self.policy.name, "encoder": self.policy.encoder,
                "training_pairs": counts["feedback"], "results_issued": counts["results"],
                "ratings_replayed_at_start": self.replayed,
                "stats_sha256": self.stats_digest(),
                "last_trained": None}  # fmt: skip


def _unique(keys: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append(k if n == 0 else f"{k}#{n}")
    return out


def _get(row: Any, field: str, default: Any) -> Any:
    if row is None or field not in row.index:
        return default
    value = row[field]
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return default
    return value.item() if hasattr(value, "item") else value


def _derived_key(session: str | None, ident: str, rating: float) -> str:
    """A Signet-shaped rating without a key: one per (session, id, rating), so a retry is recorded once."""
    return "auto:" + hashlib.sha256(f"{session}\0{ident}\0{rating!r}".encode()).hexdigest()[:32]


def _provenance(unit: Any, memory_ids_of_graph: frozenset[str]) -> dict[str, Any]:
    """The constructed memory's path: entities, aspects, attributes, memory ids, dependencies."""
    from signet_rl.traversal.path import HopKind
    from signet_rl.traversal.path import Path as WalkPath

    entities: list[str] = []
    aspects: list[str] = []
    attributes: list[str] = []
    deps: list[str] = []
    hop_memories: list[str] = []  # the hybrid entry's memory hops (floor hits, session steps, entity walks)
    text = unit.meta.get("path")
    if text:
        lists = {
            HopKind.ENTITY: entities,
            HopKind.ASPECT: aspects,
            HopKind.ATTRIBUTE: attributes,
            HopKind.DEPENDENCY: deps,
            HopKind.MEMORY: hop_memories,
        }
        for hop in WalkPath.parse(str(text)).hops:
            lists[hop.kind].append(str(hop.id))
    memory_ids = [str(m) for m in (unit.meta.get("memories") or ())]
    memory_ids += [m for m in hop_memories if m in memory_ids_of_graph and m not in memory_ids]
    for item in unit.items:
        if str(item) in memory_ids_of_graph and str(item) not in memory_ids:
            memory_ids.append(str(item))
    return {"entities": entities, "aspects": aspects, "attributes": attributes, "memory_ids": memory_ids,
            "dependencies": deps, "kind": unit.kind}  # fmt: skip


def create_app(service: Service, token: str | None = None) -> FastAPI:
    """The FastAPI app over a :class:`Service` (``token``: require ``Authorization: Bearer <token>``)."""
    app = FastAPI(title="signet_rl serve", version="1")

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Any:
        if (
            token is not None
            and request.url.path != "/health"
            and request.headers.get("authorization") != f"Bearer {token}"
        ):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY:
            return JSONResponse({"error": f"body of {length} bytes is over the {MAX_BODY}-byte limit"},
                                status_code=413)  # fmt: skip
        if request.method == "POST":
            body = await request.body()
            if len(body) > MAX_BODY:
                return JSONResponse({"error": f"body of {len(body)} bytes is over the {MAX_BODY}-byte limit"},
                                    status_code=413)  # fmt: skip
        return await call_next(request)

    @app.exception_handler(StateError)
    async def state_error(_: Request, exc: StateError) -> JSONResponse:
        status = 404 if isinstance(exc, UnknownIdError) else 422
        return JSONResponse({"error": str(exc)}, status_code=status)

    @app.post("/api/memory/recall")
    def recall(body: RecallBody) -> dict[str, Any]:
        return service.recall(body)

    @app.post("/api/memory/feedback")
    def feedback(body: FeedbackBody, request: Request) -> dict[str, Any]:
        return service.feedback(body, request.headers.get("idempotency-key"))

    @app.post("/api/session/start")
    def session_start(body: SessionStartBody) -> dict[str, Any]:
        return service.session_start(body)

    @app.post("/api/knowledge/expand")
    def expand(body: ExpandBody) -> dict[str, Any]:
        return service.expand(body)

    @app.get("/api/graph/impact")
    def graph_impact(entity: str, min_confidence: float = 0.7, max_depth: int = 3) -> dict[str, Any]:
        if entity not in set(service.graph.entities["id"]):
            raise HTTPException(404, f"unknown entity {entity!r}")
        return {"entity": entity, "impact": impact_report(service.graph, entity, min_confidence, max_depth,
                                                          arrays=service.arrays)}  # fmt: skip

    _emergence_routes(app, service)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "uptime_s": round(time.time() - service.started, 1),
                "store": str(service.store), "state_integrity": service.state.integrity_check()}  # fmt: skip

    @app.get("/api/predictor/status")
    def predictor_status() -> dict[str, Any]:
        return service.status()

    return app


class PrincipleVerbBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verb: StrictStr
    text: StrictStr | None = Field(default=None, max_length=8192)


class PruningBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    until: StrictStr | None = Field(default=None, max_length=64)  # ISO 8601; default: now


def _emergence_routes(app: FastAPI, service: Service) -> None:
    """Issue 29's read-outs and the principle verbs (404 for all of them when emergence is off)."""

    def em() -> Any:
        if service.emergence is None:
            raise HTTPException(404, "emergence is off in this service; start it with --emergence")
        return service.emergence

    @app.get("/api/emergence")
    def overview() -> dict[str, Any]:
        """Issue 29's state at a glance (``describe``'s emergence block for this service)."""
        if service.emergence is None and service.exploration is None:
            raise HTTPException(404, "emergence is off in this service; start it with --emergence")
        return service.emergence_overview()

    @app.get("/api/emergence/exploration")
    def exploration(session: str | None = None, last: int = 20) -> dict[str, Any]:
        """The explorer regulator's state: its settings and each session's slots (the newest ``last``,
        1 to 1000, or the one ``session`` names, 404 when it has none yet)."""
        if service.exploration is None:
            raise HTTPException(404, "explorer slots are off in this service; start it with --emergence "
                                     "explorer (base quota) or --emergence regulation (regulated)")
        if not 1 <= last <= 1000:
            raise HTTPException(422, f"last: must be in [1, 1000], got {last!r}; nothing was read")
        return service.exploration.status(session, last)

    @app.get("/api/emergence/principles")
    def principles() -> dict[str, Any]:
        return {"principles": em().principles()}

    @app.post("/api/emergence/principles/{pid}")
    def principle_verb(pid: str, body: PrincipleVerbBody) -> dict[str, Any]:
        em()
        return {"ok": True, "principle": service.principle_verb(pid, body.verb, body.text)}

    @app.get("/api/emergence/bridges")
    def bridges() -> dict[str, Any]:
        return em().bridges()

    def rated() -> list[tuple[IssuedResult, FeedbackRow]]:
        state = service.state
        return [(state.result(fb.result_id), fb) for fb in state.feedback()]

    @app.get("/api/emergence/health")
    def health() -> dict[str, Any]:
        return em().health(rated())

    @app.post("/api/emergence/pruning")
    def prune(body: PruningBody) -> dict[str, Any]:
        """Plan the pruning from the feedback up to ``until`` and keep it (with a health snapshot) in the
        service's file; the store is not touched (the answer's ``apply`` says how it is applied)."""
        return em().prune(rated(), body.until)

    @app.get("/api/emergence/pruning")
    def pruning() -> dict[str, Any]:
        got = em().pruning()
        if got is None:
            raise HTTPException(404, "no pruning plan yet: POST /api/emergence/pruning {\"until\": ISO time} "
                                     "plans one from the feedback up to then")
        return got


def report(state_path: str | Path, seed: int = 0) -> dict[str, Any]:
    """``serve report``: the win rate and OPE estimates from a service's state file."""
    state = ServiceState(state_path)
    rows = state.recalls()
    slates = [MixedSlate.from_json({f: d[f] for f in MixedSlate.__dataclass_fields__}) for d, _ in rows]
    ratings = [r for _, r in rows]
    k = max((d["k"] for d, _ in rows), default=5)
    return compare_report(slates, ratings, k, seed=seed)
