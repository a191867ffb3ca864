"""Bridges, principles and entity health in the service, each off unless switched on (issue 29 §6).

:class:`ServiceEmergence` keeps its state in the **service's own SQLite file** (two tables beside the
feedback log: ``emergence_verbs``, the append-only log of principle verbs, and ``emergence_pruning``, the
pruning plans with the health snapshot each was made with; bridge ratings are read off the feedback log
itself); the Signet store stays read-only. Like the learned statistics, everything is a replay:

- at start, principles are detected on the imported graph (deterministic for a graph and a config), added
  to it, and the verb log is replayed over them **before the desire retriever indexes the graph**, so a
  confirmed principle's raised edges (and a rejected one's, below ``min_confidence``) shape the walks;
- bridges are found at start (the store's contents are the ingest) and the tracker replays the feedback
  log's ratings of results that crossed them. A promoted bridge's edge enters at ``pattern-matched`` (0.5,
  ``emergence.bridge.promote_reason``), the lowest rung walked at the default ``min_confidence``, so a
  promotion changes the walks (earlier it entered at ``inferred`` 0.4 and was walked only after two more
  positives).

Live: a verb answered now, or a rating that promotes, climbs or fades a bridge, changes :attr:`graph`, and
the service (:meth:`signet_rl.serving.app.Service._reindex`) re-indexes the desire retriever over it under
its lock before it answers, so the very next recall walks a confirmed principle's or a promoted bridge's
edge and no longer walks a rejected one; the online-learned edge statistics move across by edge id. A restart
replays the same logs (verbs, then ratings: they move disjoint edges) and reaches the same graph and the same
statistics (tested through a real server).

Users set no weights. Principles answer to ``confirm``, ``reject`` and ``correct`` only
(``POST /api/emergence/principles/{id}``); bridges move only on the ratings of results that crossed them;
health is read from the feedback log (``GET /api/emergence/health``); a pruning plan is made from the
feedback up to a cutoff and kept (``POST``/``GET /api/emergence/pruning``), never applied here: the cold
tier moves rows only offline, on a copy of the store (:data:`APPLY_OFFLINE`). An unknown principle, an empty
correction, a rating of an entity the store has moved to the cold tier: a clear error naming the id, and
nothing written.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from signet_rl.emergence.bridges import BridgeTracker
from signet_rl.emergence.components import bridge_candidates, find_principles
from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.health import (
    PruningPlan,
    community_health,
    entity_health,
    health_from_touches,
    plan_pruning,
    touched_entities,
)
from signet_rl.emergence.principles import (
    META_KEY,
    PrincipleError,
    add_principles,
    confirm,
    correct,
    notification,
    reject,
)
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.serving.state import FeedbackRow, IssuedResult, StateError, UnknownIdError
from signet_rl.text.encoders import Encoder

__all__ = ["APPLY_OFFLINE", "PRINCIPLE_VERBS", "ServiceEmergence", "check_not_cold", "walk_records"]

#: What a user may say about a principle.
PRINCIPLE_VERBS = ("confirm", "reject", "correct")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS emergence_verbs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    principle_id TEXT NOT NULL,
    verb         TEXT NOT NULL CHECK (verb IN ('confirm', 'reject', 'correct')),
    text         TEXT,
    created_at   REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS emergence_pruning (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    computed_at  REAL NOT NULL,
    until        TEXT NOT NULL,
    feedback_seq INTEGER NOT NULL,
    rated_paths  INTEGER NOT NULL,
    health       TEXT NOT NULL,
    plan         TEXT NOT NULL
);
"""

#: How a pruning plan is applied: never by the service, only offline, on a copy of the store.
APPLY_OFFLINE = ("applied only offline, on a copy of the store: save 'plan' as PLAN.json and run "
                 "python -m signet_rl.emergence prune STORE --plan PLAN.json --copy-to OUT.db; the service "
                 "opens the Signet store read-only and never moves a row")


class ServiceEmergence:
    """The service's emergence state (module docstring).

    Args:
        config: the switches (bridges, principles, health) and thresholds.
        state_path: the service's own SQLite file (the one :class:`~signet_rl.serving.state.ServiceState`
            opened).
        encoder: the text encoder for bridges and principles (the policy's).
        cold: ids of entities the store keeps in its cold tier (rating a result through one is an error).
    """

    def __init__(self, config: EmergenceConfig, state_path: str | Path, encoder: Encoder | None = None,
                 cold: Iterable[str] = ()) -> None:
        self.config = config
        self.encoder = encoder
        self.cold = frozenset(cold)
        self.tracker: BridgeTracker | None = None
        self.graph: KnowledgeGraph | None = None
        self._lock = threading.Lock()
        self._db = sqlite3.connect(Path(state_path), check_same_thread=False, isolation_level=None,
                                   timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    @property
    def active(self) -> bool:
        return bool({"bridges", "principles", "health"} & set(self.config.enabled))

    # -- start-up -------------------------------------------------------------------------------------

    def prepare(self, graph: KnowledgeGraph) -> KnowledgeGraph:
        """The graph the service indexes: with principles (and the verb log replayed) and promoted bridge
        edges, for whichever of them is switched on; ``graph`` itself when none is."""
        if self.config.principles:
            p = self.config.principle
            found = find_principles(graph, p, self.encoder)
            graph = add_principles(graph, found, encoder=self.encoder, at=graph.entities["created_at"].max()
                                   if len(graph.entities) else None)
            for pid, verb, text in self._db.execute(
                    "SELECT principle_id, verb, text FROM emergence_verbs ORDER BY seq").fetchall():
                graph = _apply_verb(graph, pid, verb, text, self.encoder)
        if self.config.bridges:
            b = self.config.bridge
            self.tracker = BridgeTracker(promote_after=b.promote_after, climb_after=b.climb_after,
                                         fade_after=b.fade_after, promote_reason=b.promote_reason)
            self.tracker.add(bridge_candidates(graph, b, self.encoder))
            for _, rating, path, recall_id in self._db.execute(
                    "SELECT f.seq, f.rating, r.path, r.recall_id FROM feedback f "
                    "JOIN results r ON r.result_id = f.result_id ORDER BY f.seq").fetchall():
                attrs = json.loads(path).get("attributes", [])
                reached = self._reached(recall_id, json.loads(path))
                for bid in self._crossed(attrs, reached):
                    graph = self.tracker.rate(graph, bid, _sign(rating))
        self.graph = graph
        return graph

    # -- feedback ---------------------------------------------------------------------------------------

    def _reached(self, recall_id: str | None, path: Mapping[str, Any]) -> set[str]:
        """The entities every result of a recall walked through (what the query reached)."""
        if recall_id is None:
            return set(path.get("entities", []))
        out: set[str] = set()
        for (text,) in self._db.execute("SELECT path FROM results WHERE recall_id = ?", (recall_id,)):
            out.update(json.loads(text).get("entities", []))
        return out

    def _crossed(self, attributes: Iterable[str], reached: set[str]) -> list[str]:
        """Tracked, unfaded bridges with one end's attribute in ``attributes`` and the other end's entity
        in ``reached``."""
        assert self.tracker is not None
        attrs = set(attributes)
        out = []
        for bid, s in self.tracker.states.items():
            b = s.bridge
            if s.status != "faded" and ((b.attribute_a in attrs and b.entity_b in reached)
                                        or (b.attribute_b in attrs and b.entity_a in reached)):
                out.append(bid)
        return out

    def on_feedback(self, result: IssuedResult, row: FeedbackRow) -> list[str]:
        """Rate the tracked bridges a newly recorded rating crossed (one end's attribute in the rated
        result, the other end's entity reached by the same recall); returns their ids. Nothing is stored:
        the feedback row is the record, replayed at the next start."""
        if self.tracker is None or self.graph is None:
            return []
        crossed = self._crossed(result.path.get("attributes", []),
                                self._reached(result.recall_id, result.path))
        with self._lock:
            for bid in crossed:
                self.graph = self.tracker.rate(self.graph, bid, _sign(row.rating))
        return crossed

    # -- principles ---------------------------------------------------------------------------------------

    def principles(self) -> list[dict[str, Any]]:
        """Every principle as its notification record (text, status, entities, evidence)."""
        if self.graph is None or not self.config.principles:
            return []
        return [notification(self.graph, pid) for pid in sorted(self.graph.meta.get(META_KEY, {}))]

    def principle_verb(self, pid: str, verb: str, text: str | None = None,
                       before_commit: Callable[[KnowledgeGraph], Callable[[], None]] | None = None,
                       ) -> dict[str, Any]:
        """Confirm, reject or correct principle ``pid``: applied to a copy first, then logged (one
        transaction), then kept; returns the principle's record. ``before_commit`` (the service's index
        builder) gets the changed graph before the verb is logged and returns the call that puts it into
        service once it is: if it raises, nothing is logged or kept.

        Raises:
            StateError: principles switched off, an unknown verb, or an empty correction (naming them).
            UnknownIdError: ``pid`` is not a principle (naming it and the known ones).
        """
        if not self.config.principles or self.graph is None:
            raise StateError("principles are switched off in this service (emergence.principles); "
                             f"cannot {verb} principle {pid!r}")
        if verb not in PRINCIPLE_VERBS:
            raise StateError(f"unknown verb {verb!r} for principle {pid!r}; expected one of: "
                             f"{', '.join(PRINCIPLE_VERBS)}")
        with self._lock:
            try:
                graph = _apply_verb(self.graph, pid, verb, text, self.encoder)
            except PrincipleError as exc:
                kind = UnknownIdError if "does not exist" in str(exc) else StateError
                raise kind(f"{exc}; nothing was recorded") from None
            swap = before_commit(graph) if before_commit is not None else None
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT INTO emergence_verbs (principle_id, verb, text, created_at) "
                                 "VALUES (?, ?, ?, ?)", (pid, verb, text, time.time()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self.graph = graph
            if swap is not None:
                swap()
        return notification(graph, pid)

    def verbs(self) -> list[tuple[str, str, str | None]]:
        """The verb log, in order: ``(principle id, verb, text)``."""
        return [tuple(r) for r in self._db.execute(  # type: ignore[misc]
            "SELECT principle_id, verb, text FROM emergence_verbs ORDER BY seq")]

    # -- bridges and health -------------------------------------------------------------------------------

    def bridges(self) -> dict[str, Any]:
        """Bridge states: counts by status and each bridge with its ratings."""
        if self.tracker is None:
            return {"enabled": False}
        states = list(self.tracker.states.values())
        return {"enabled": True,
                "by_status": {s: sum(x.status == s for x in states)
                              for s in ("candidate", "promoted", "faded")},
                "bridges": [{"id": x.bridge.id, "entity_a": x.bridge.entity_a, "entity_b": x.bridge.entity_b,
                             "attribute_a": x.bridge.attribute_a, "attribute_b": x.bridge.attribute_b,
                             "status": x.status, "positive": x.positive, "negative": x.negative,
                             "dependency_id": x.dependency_id} for x in states]}

    def health(self, rated: Iterable[tuple[IssuedResult, FeedbackRow]]) -> dict[str, Any]:
        """Entity and community health from the service's feedback log (every rated result's path), and
        when the last snapshot was stored (:meth:`prune`)."""
        if not self.config.health or self.graph is None:
            return {"enabled": False}
        frame = self._health_frame(rated)
        last = self.pruning()
        snapshot = None if last is None else {k: last[k] for k in ("seq", "computed_at", "until")}
        return {"enabled": True, **self._summary(frame), "last_snapshot": snapshot}

    def _health_frame(self, rated: Iterable[tuple[IssuedResult, FeedbackRow]]) -> Any:
        """Each entity's health from the rated results' paths (every entity a path touched shares its
        rating)."""
        g = self.graph
        assert g is not None
        touches = [(touched_entities(g, entities=r.path.get("entities", []),
                                     aspects=r.path.get("aspects", []),
                                     attributes=r.path.get("attributes", []),
                                     dependencies=r.path.get("dependencies", [])), fb.rating)
                   for r, fb in rated]
        return health_from_touches(g, touches, thresholds=self.config.health_thresholds)

    def outcome(self, rated: Iterable[tuple[IssuedResult, FeedbackRow]]) -> dict[str, Any]:
        """The service's emergence outcome in the shape a run folder's has
        (:func:`signet_rl.emergence.components.read_outcome` plus ``statuses``), for the constellation's
        overlay: health counts and each entity's status (from the feedback log now), community health, the
        last pruning plan, bridges by status with the promoted ones, the principles' records."""
        out: dict[str, Any] = {"enabled": list(self.config.enabled)}
        if self.config.health and self.graph is not None:
            frame = self._health_frame(rated)
            summary = self._summary(frame)
            out["health"], out["communities"] = summary["entities"], summary["communities"]
            out["statuses"] = dict(zip(frame["entity_id"].astype(str), frame["status"].astype(str),
                                       strict=True))
            last = self.pruning()
            if last is not None:
                out["pruning"] = last["plan"]
        if self.tracker is not None:
            b = self.bridges()
            out["bridges"] = {"by_status": b["by_status"],
                              "promoted": [x for x in b["bridges"] if x["status"] == "promoted"]}
        if self.config.principles:
            out["principles"] = self.principles()
        return out

    def _summary(self, frame: pd.DataFrame) -> dict[str, Any]:
        assert self.graph is not None
        comm = community_health(self.graph, frame, self.config.health_thresholds)
        return {"entities": {str(k): int(v) for k, v in frame["status"].value_counts().sort_index().items()},
                "communities": {str(k): int(v)
                                for k, v in comm["status"].value_counts().sort_index().items()},
                "sick": frame.loc[frame["status"] == "sick", "entity_id"].tolist(),
                "under_mapped": frame.loc[frame["status"] == "under-mapped", "entity_id"].tolist(),
                "cold": sorted(self.cold)}

    # -- pruning plan (kept in the service's file; applied only offline) --------------------------------

    def prune(self, rated: Iterable[tuple[IssuedResult, FeedbackRow]], until: str | None = None,
              now: float | None = None) -> dict[str, Any]:
        """Plan the pruning from the feedback acknowledged up to ``until`` (ISO 8601; default now) with
        :func:`~signet_rl.emergence.health.plan_pruning`, and store it with that moment's entity and
        community health (one row of ``emergence_pruning``, one transaction). Nothing moves: the plan is
        applied only offline, on a copy (:data:`APPLY_OFFLINE`).

        Raises:
            StateError: health switched off, or an ``until`` that is not an ISO 8601 time (naming it);
                nothing is written.
        """
        if not self.config.health or self.graph is None:
            raise StateError("health is switched off in this service (emergence.health); no pruning plan")
        now = time.time() if now is None else now
        cutoff = _cutoff(until, now)
        rated = list(rated)
        records = walk_records(rated)
        t = self.config.health_thresholds
        with self._lock:
            plan = plan_pruning(self.graph, records, until=cutoff, thresholds=t)
            frame = entity_health(self.graph, records, until=cutoff, thresholds=t)
            summary = self._summary(frame)
            used = sum(r.timestamp is not None and r.timestamp <= cutoff for r in records)
            last = max((fb.seq for _, fb in rated if fb.created_at <= cutoff.timestamp()), default=0)
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO emergence_pruning"
                    " (computed_at, until, feedback_seq, rated_paths, health, plan)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (now, cutoff.isoformat(), last, used, json.dumps(summary), json.dumps(plan.to_dict())))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        out = self.pruning()
        assert out is not None
        return out

    def pruning(self) -> dict[str, Any] | None:
        """The last stored pruning plan (:meth:`prune`) with its health snapshot; None when none yet."""
        row = self._db.execute("SELECT seq, computed_at, until, feedback_seq, rated_paths, health, plan "
                               "FROM emergence_pruning ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            return None
        seq, computed_at, until, feedback_seq, rated_paths, health, plan = row
        return {"seq": int(seq),
                "computed_at": pd.Timestamp(computed_at, unit="s", tz="UTC").isoformat(),
                "until": until, "feedback_seq": int(feedback_seq), "rated_paths": int(rated_paths),
                "plan": PruningPlan.from_dict(json.loads(plan), where="emergence_pruning").to_dict(),
                "health": json.loads(health), "apply": APPLY_OFFLINE, "store_written": False}

    def close(self) -> None:
        with self._lock:
            self._db.close()


def check_not_cold(result: IssuedResult, cold: Iterable[str]) -> None:
    """Refuse a rating of a result whose path runs through an entity the store keeps in its cold tier.

    A pruned entity's rows are no longer in the store's hot tables, so a rating of a path through it would
    reinforce edges to something the service can no longer show; the rating is refused, not dropped.

    Raises:
        StateError: naming the result and the entity, and the way out.
    """
    cold = cold if isinstance(cold, frozenset | set) else frozenset(cold)
    for eid in result.path.get("entities", []):
        if eid in cold:
            raise StateError(
                f"result {result.result_id!r} runs through entity {eid!r}, which was pruned to the cold "
                "tier; nothing was recorded. Rate it through an explorer path that rediscovers it "
                "(signet_rl.emergence.cold.rate_cold on an offline copy), or restore it first")


def _cutoff(until: str | None, now: float) -> pd.Timestamp:
    """``until`` as a UTC time (naive: UTC; None, ``"now"`` or ``"today"``: ``now``), or a
    :class:`StateError` naming it: not an ISO 8601 time, or later than ``now`` (a plan reads the feedback
    up to a moment that has passed; a later one would be read as including ratings not given yet)."""
    if until is None or until.strip().lower() in ("now", "today"):
        return pd.Timestamp(now, unit="s", tz="UTC")
    try:
        at = pd.Timestamp(until, tz="UTC")  # naive: UTC, never the host's local time
        if pd.isna(at):
            raise ValueError(until)
    except (TypeError, ValueError):
        raise StateError(f"until: {until!r} is not an ISO 8601 time; no pruning plan was computed or "
                         "stored") from None
    if at.timestamp() > now:
        stamp = pd.Timestamp(now, unit="s", tz="UTC").isoformat()
        raise StateError(f"until: {until!r} is later than now ({stamp}); no pruning plan was computed or "
                         "stored")
    return at


def walk_records(rated: Iterable[tuple[IssuedResult, FeedbackRow]]) -> list[FeedbackRecord]:
    """The service's rated walks as :class:`~signet_rl.learning.feedback_log.FeedbackRecord` s (one per
    rating of a result that logged its walk, stamped when the rating was acknowledged, its sign as the
    rating): what :func:`~signet_rl.emergence.health.plan_pruning` reads. Flat results walked nothing."""
    out = []
    for r, fb in rated:
        walk = r.path.get("walk")
        if not walk:
            continue
        out.append(FeedbackRecord(
            run_id="serve", step=int(fb.seq), query_id=r.result_id, timestamp=fb.created_at,
            session=r.session_key or "", intent=r.intent, context={"entries": [], "graph_id": r.graph_id},
            candidates=[str(walk)], candidate_scores=[r.score if math.isfinite(r.score) else 0.0], shown=[0],
            positions=[0], pscores=[r.propensity], ratings=[_sign(fb.rating)],
            explorer=[bool(r.path.get("explorer", False))], policy_version="serve"))
    return out


def _sign(rating: float) -> int:
    return 1 if rating > 0 else -1 if rating < 0 else 0


def _apply_verb(graph: KnowledgeGraph, pid: str, verb: str, text: str | None,
                encoder: Encoder | None) -> KnowledgeGraph:
    if verb == "confirm":
        return confirm(graph, pid)
    if verb == "reject":
        return reject(graph, pid)
    return correct(graph, pid, text or "", encoder=encoder)


def from_mapping(values: Mapping[str, Any] | EmergenceConfig | None) -> EmergenceConfig:
    """An :class:`EmergenceConfig` from a mapping, a config, or None (everything off)."""
    return values if isinstance(values, EmergenceConfig) else EmergenceConfig.from_mapping(values)
