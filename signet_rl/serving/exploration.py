"""The service's explorer slots, self-regulated per user timeline (issue 29 §1 and §6); off by default.

A service serves one user's store, so its feedback log is one user's timeline, and its sessions are the
requests' ``sessionKey`` s. With ``emergence.explorer`` on, each session gets the base quota of explorer
slots (``exploration.min_slots``, the seed's 1); with ``emergence.regulation`` on, the number is set when the
session's first recall comes, from the staleness signal of the sessions before it
(:func:`~signet_rl.emergence.staleness.session_signals` over the service's own log: the same paths every
session, no new entities or edges, a falling explorer hit rate) by the trainer's regulator
(:class:`~signet_rl.emergence.staleness.ExplorerRegulator`): the base quota normally, up to
``stale_share`` (30%) of the slate slots the last session showed when the timeline is stale (never fewer
than ``max_slots``, 2), and back to the base when exploration stops paying.

A session spends its slots over its recalls, at most ``floor(stale_share * limit)`` (at least one, and never
the whole slate) per recall; a slot is filled with a speculative path (the trainer's machinery:
:meth:`~signet_rl.pipeline.desire.DesirePathRetriever.far_paths` and
:func:`~signet_rl.learning.exploration.speculative_candidates`), shown with ``system`` ``explorer`` and
propensity 1 (the pick is deterministic given the candidates), and logged as a desire result whose path
carries ``"explorer": true``, so its rating teaches like any other and feeds the next sessions' hit rate.

State: the decision per session (slots, whether regulated, the signals it was read from) is a row of
``emergence_exploration`` in the service's own file, written once per session; the slots a session has
used are counted from the results it was shown, plus the slots its recalls in flight have reserved
(:meth:`ServiceExploration.reserve`, taken under the service's lock with the decision and released once the
recall's results are logged), so concurrent recalls of one session never show more explorers than its
slots. A restart continues both. Recalls without a ``sessionKey`` (or with an empty one) have no place on
the timeline and get no explorer slot.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

from signet_rl.emergence.config import ExplorationParams
from signet_rl.emergence.staleness import session_signals
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.serving.state import UnknownIdError

__all__ = ["ServiceExploration", "timeline_records"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS emergence_exploration (
    session_key TEXT PRIMARY KEY,
    slots       INTEGER NOT NULL CHECK (slots >= 0),
    regulated   INTEGER NOT NULL CHECK (regulated IN (0, 1)),
    staleness   REAL,
    signals     TEXT NOT NULL,
    created_at  REAL NOT NULL
);
"""

#: The signals kept with each decision (a :func:`session_signals` row of the last session before it).
SIGNALS = ("session", "shown", "repeat_share", "new_items", "explorer_rated", "explorer_hits",
           "explorer_hit_rate", "hit_rate_falling", "staleness", "slots", "routine_rating", "routine_drop")


class ServiceExploration:
    """Explorer slots per session, in the service's own file (module docstring).

    Args:
        params: the signal's and the regulator's settings.
        regulated: set each new session's slots from the staleness signal (else the base quota).
        state_path: the service's own SQLite file.
        slate_size: the service's results per recall (the slate the stale share is taken of, at least).
    """

    def __init__(self, params: ExplorationParams, regulated: bool, state_path: str | Path,
                 slate_size: int) -> None:
        self.params = params
        self.regulated = bool(regulated)
        self.regulator = params.regulator()
        self.slate_size = int(slate_size)
        self._lock = threading.Lock()
        #: explorer results reserved by recalls of each session not yet logged (:meth:`reserve`)
        self._pending: dict[str, int] = {}
        self._db = sqlite3.connect(Path(state_path), check_same_thread=False, isolation_level=None,
                                   timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    # -- the decision ------------------------------------------------------------------------------------

    def slots(self, session: str) -> int:
        """``session``'s explorer slots: decided at its first call (from the log of the sessions before it)
        and kept in ``emergence_exploration``; read back afterwards (and after a restart)."""
        with self._lock:
            row = self._db.execute("SELECT slots FROM emergence_exploration WHERE session_key = ?",
                                   (session,)).fetchone()
            if row is not None:
                return int(row[0])
            signal: dict[str, Any] = {}
            slots = min(self.regulator.min_slots, self.slate_size)
            if self.regulated:
                records = timeline_records(self._db, before=session, history=self.params.history)
                if records:
                    frame = session_signals(records, window=self.params.window,
                                            repeat_threshold=self.params.repeat_threshold)
                    last = frame.iloc[-1]
                    slots = self.regulator.slots(last, max(self.slate_size, int(last["slots"])))
                    signal = {k: _plain(last[k]) for k in SIGNALS}
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT INTO emergence_exploration VALUES (?, ?, ?, ?, ?, ?)",
                                 (session, int(slots), int(self.regulated), signal.get("staleness"),
                                  json.dumps(signal), time.time()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return int(slots)

    def used(self, session: str) -> int:
        """Explorer results ``session`` was shown so far (counted from the results log)."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM results WHERE session_key = ? AND json_extract(path, '$.explorer') = 1",
                (session,)).fetchone()
        return int(row[0])

    def available(self, session: str | None, limit: int) -> int:
        """Explorer results the next recall of ``session`` (with ``limit`` results) may show: what is left
        of the session's slots, at most ``floor(stale_share * limit)`` (at least 1) and fewer than
        ``limit``. 0 without a session (None or empty). Slots reserved by the session's recalls in flight
        count as used."""
        if not session:
            return 0
        per_recall = max(1, math.floor(self.params.stale_share * limit))
        with self._lock:
            pending = self._pending.get(session, 0)
        left = self.slots(session) - self.used(session) - pending
        return max(0, min(left, per_recall, limit - 1))

    def reserve(self, session: str | None, n: int) -> None:
        """Hold ``n`` of ``session``'s slots for a recall whose results are not logged yet (the caller
        decides and reserves under one lock; :meth:`release` once the results are logged, or failed)."""
        if session and n > 0:
            with self._lock:
                self._pending[session] = self._pending.get(session, 0) + int(n)

    def release(self, session: str | None, n: int) -> None:
        """Give back what :meth:`reserve` held (the results are in the log now, or were never written)."""
        if session and n > 0:
            with self._lock:
                left = self._pending.get(session, 0) - int(n)
                if left > 0:
                    self._pending[session] = left
                else:
                    self._pending.pop(session, None)

    # -- read-out -----------------------------------------------------------------------------------------

    def status(self, session: str | None = None, last: int = 20) -> dict[str, Any]:
        """The regulator's state: its settings, and each session's decision (the newest ``last``, or the
        one ``session`` names) with the slots it used.

        Raises:
            UnknownIdError: ``session`` has no decision yet (naming it).
        """
        with self._lock:
            if session is not None:
                rows = self._db.execute("SELECT * FROM emergence_exploration WHERE session_key = ?",
                                        (session,)).fetchall()
                if not rows:
                    raise UnknownIdError(f"unknown session {session!r}: no recall of it has been given "
                                         "explorer slots yet")
            else:
                rows = self._db.execute("SELECT * FROM emergence_exploration ORDER BY created_at DESC, "
                                        "rowid DESC LIMIT ?", (int(last),)).fetchall()
            total = int(self._db.execute("SELECT COUNT(*) FROM emergence_exploration").fetchone()[0])
        sessions = [{"session_key": key, "slots": int(slots), "used": self.used(key), "regulated": bool(reg),
                     "staleness": staleness, "signals": json.loads(signals),
                     "decided_at": pd.Timestamp(at, unit="s", tz="UTC").isoformat()}
                    for key, slots, reg, staleness, signals, at in rows]
        return {"enabled": True, "regulated": self.regulated, "slate_size": self.slate_size,
                "params": dict(self.params.__dict__), "sessions_decided": total,
                "current": sessions[0] if sessions else None, "sessions": sessions}

    def close(self) -> None:
        with self._lock:
            self._db.close()


def timeline_records(db: sqlite3.Connection, *, before: str | None = None,
                     history: int = 12) -> list[FeedbackRecord]:
    """The service's log as one timeline of :class:`~signet_rl.learning.feedback_log.FeedbackRecord` s:
    one per recall with a ``sessionKey`` (its shown results as candidates: the walk a desire result
    followed, or ``memory:<ids>`` for a flat one; each result's latest rating, by its sign; the explorer
    flags), of the last ``history`` sessions that started before session ``before`` (every session when
    None; ``before`` itself left out)."""
    start = None
    if before is not None:
        got = db.execute("SELECT MIN(created_at) FROM recalls WHERE session_key = ?", (before,)).fetchone()
        start = got[0] if got is not None else None
    sessions = db.execute(
        "SELECT session_key, MIN(created_at) AS t FROM recalls WHERE session_key IS NOT NULL "
        "AND session_key != '' AND session_key != ? GROUP BY session_key HAVING ? IS NULL OR t < ? "
        "ORDER BY t DESC LIMIT ?", (before or "", start, start, int(history))).fetchall()
    keep = sorted(s for s, _ in sessions)
    if not keep:
        return []
    # only the kept sessions' results and their ratings are read (the log may hold many more sessions)
    marks = ", ".join("?" * len(keep))
    latest: dict[str, float] = dict(db.execute(
        "SELECT f.result_id, f.rating FROM results r JOIN feedback f ON f.result_id = r.result_id "
        f"WHERE r.session_key IN ({marks}) ORDER BY f.seq", keep).fetchall())
    rows = db.execute(
        "SELECT rc.recall_id, rc.session_key, rc.created_at, r.result_id, r.path, r.memory_ids, r.score, "
        "r.propensity, r.intent FROM results r JOIN recalls rc ON rc.recall_id = r.recall_id "
        f"WHERE r.session_key IN ({marks}) AND rc.session_key IN ({marks}) "
        "ORDER BY rc.created_at, rc.rowid, r.position, r.rowid", keep + keep).fetchall()
    by_recall: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_recall.setdefault(row[0], []).append(row)
    return recall_records(by_recall, latest)


def recall_records(by_recall: dict[str, list[tuple[Any, ...]]],
                   latest: dict[str, float]) -> list[FeedbackRecord]:
    """One :class:`FeedbackRecord` per recall, in the order of ``by_recall`` (recall id → its result rows:
    recall id, session key, created at, result id, path, memory ids, score, propensity, intent), rated with
    the latest rating of each result in ``latest`` (its sign; None: unrated)."""
    out = []
    for step, (rid, items) in enumerate(by_recall.items()):
        cands, ratings, explorer = [], [], []
        for _, _, _, result_id, path, mids, _, _, _ in items:
            p = json.loads(path)
            memory_ids = json.loads(mids)
            flat = f"memory:{','.join(memory_ids)}" if memory_ids else result_id
            cands.append(str(p.get("walk") or flat))
            r = latest.get(result_id)
            ratings.append(None if r is None else float((r > 0) - (r < 0)))
            explorer.append(bool(p.get("explorer", False)))
        out.append(FeedbackRecord(
            run_id="serve", step=step, query_id=rid, timestamp=items[0][2], session=str(items[0][1]),
            intent=str(items[0][8]), context={"entries": [], "graph_id": "main"}, candidates=cands,
            candidate_scores=[float(x[6]) if math.isfinite(x[6]) else 0.0 for x in items],
            shown=list(range(len(items))), positions=list(range(len(items))),
            pscores=[float(x[7]) for x in items], ratings=ratings, explorer=explorer, policy_version="serve"))
    return out


def _plain(value: Any) -> Any:
    """A signal value as JSON: numpy scalars as Python ones, NaN as None."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isnan(value) else value
