"""The service's own state: one SQLite file beside the Signet store, never the store itself.

:class:`ServiceState` keeps what the HTTP service (:mod:`signet_rl.serving.app`) must not lose:

* ``results``: every result it issued (a result id per constructed memory shown), with the path that
  constructed it (entities, aspects, attributes, memory ids, the dependency ids it walked), the system that
  contributed it in the online comparison (``desire`` or ``flat``), the probability it was shown, its slate
  position, the intent and time bucket it was walked for;
* ``feedback``: the append-only log of ratings, one row per **idempotency key** (a retried post with the
  same key is acknowledged again and recorded once), each naming the result it rates;
* ``meta``: the schema version and the store it serves (path and SHA-256 at first open).

Durability: WAL journal, ``synchronous=FULL``, every write in one transaction that commits before the
service answers, so an acknowledged rating survives a SIGKILL. The learned statistics are never stored as
the truth: they are a replay of the feedback log (:meth:`ServiceState.replay`), so after a crash they are
rebuilt exactly from what was acknowledged. All SQL is parameterised.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "FeedbackRow", "IssuedResult", "ServiceState", "StateError", "UnknownIdError"]

SCHEMA_VERSION = 1
#: The verbs a rating may carry (the seed's: users confirm, correct or reject; they never set a weight).
VERBS = ("rate", "confirm", "correct", "reject")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recalls (
    recall_id   TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    session_key TEXT,
    query       TEXT NOT NULL,
    k           INTEGER NOT NULL,
    slate       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recalls_session ON recalls (session_key, created_at);
CREATE TABLE IF NOT EXISTS results (
    result_id   TEXT PRIMARY KEY,
    recall_id   TEXT REFERENCES recalls (recall_id),
    slot        INTEGER,
    created_at  REAL NOT NULL,
    session_key TEXT,
    query       TEXT NOT NULL,
    graph_id    TEXT NOT NULL,
    system      TEXT NOT NULL CHECK (system IN ('desire', 'flat')),
    position    INTEGER NOT NULL CHECK (position >= 0),
    propensity  REAL NOT NULL CHECK (propensity > 0 AND propensity <= 1),
    intent      TEXT NOT NULL,
    bucket      INTEGER NOT NULL,
    memory_ids  TEXT NOT NULL,
    path        TEXT NOT NULL,
    edge_ids    TEXT NOT NULL,
    score       REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS results_session ON results (session_key);
CREATE TABLE IF NOT EXISTS result_memories (
    result_id TEXT NOT NULL REFERENCES results (result_id),
    memory_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, result_id)
);
CREATE TABLE IF NOT EXISTS feedback (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL UNIQUE,
    session_key     TEXT,
    result_id       TEXT NOT NULL REFERENCES results (result_id),
    rating          REAL NOT NULL CHECK (rating >= -1 AND rating <= 1),
    verb            TEXT NOT NULL,
    text            TEXT,
    created_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_result ON feedback (result_id);
"""


class StateError(ValueError):
    """A request the state cannot apply; the message names the id or value."""


class UnknownIdError(StateError):
    """A result id (or memory id) the service never issued."""


@dataclass(frozen=True)
class IssuedResult:
    """One shown result, as :meth:`ServiceState.issue` records it (``slot``: its index in the recall's
    mixed slate's ``shown``)."""

    result_id: str
    session_key: str | None
    query: str
    graph_id: str
    system: str
    position: int
    propensity: float
    intent: str
    bucket: int
    memory_ids: tuple[str, ...]
    path: Mapping[str, Any]
    edge_ids: tuple[str, ...]
    score: float
    recall_id: str | None = None
    slot: int | None = None


@dataclass(frozen=True)
class FeedbackRow:
    """One logged rating."""

    seq: int
    idempotency_key: str
    session_key: str | None
    result_id: str
    rating: float
    verb: str
    text: str | None
    created_at: float


class ServiceState:
    """The service's SQLite file (see the module docstring).

    Args:
        path: the state file (created with its parent folder when absent).
        store: the Signet store it serves; recorded at first open, and a later open against another store
            is refused (naming both), so one state file never mixes two users' memories.

    Raises:
        StateError: the file belongs to another store or has another schema version.
    """

    def __init__(self, path: str | Path, store: str | Path | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)
        with self._tx() as db:
            got = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if "schema_version" not in got:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                if store is not None:
                    db.execute("INSERT INTO meta VALUES ('store', ?)", (str(Path(store).resolve()),))
            elif int(got["schema_version"]) != SCHEMA_VERSION:
                raise StateError(
                    f"{self.path}: state schema version {got['schema_version']}, this signet_rl "
                    f"reads {SCHEMA_VERSION}; start a new state file (--state PATH)"
                )
            elif store is not None and got.get("store") not in (None, str(Path(store).resolve())):
                raise StateError(
                    f"{self.path} is the state of store {got['store']}, not of "
                    f"{Path(store).resolve()}; give this store its own --state file"
                )

    # -- plumbing ---------------------------------------------------------------------------------------

    class _Tx:
        def __init__(self, state: ServiceState) -> None:
            self.state = state

        def __enter__(self) -> sqlite3.Connection:
            self.state._lock.acquire()
            self.state._db.execute("BEGIN IMMEDIATE")
            return self.state._db

        def __exit__(self, kind: object, *_: object) -> None:
            try:
                self.state._db.execute("COMMIT" if kind is None else "ROLLBACK")
            finally:
                self.state._lock.release()

    def _tx(self) -> ServiceState._Tx:
        return ServiceState._Tx(self)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s answer (``"ok"`` when sound)."""
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    # -- results ----------------------------------------------------------------------------------------

    def issue(self, results: Sequence[IssuedResult], recall: Mapping[str, Any] | None = None) -> None:
        """Record shown results (and the recall's mixed slate, ``{recall_id, session_key, query, k, slate}``),
        all or none, before the recall that shows them is answered."""
        rows = [(r.result_id, r.recall_id, r.slot, time.time(), r.session_key, r.query, r.graph_id,
                 r.system, int(r.position), float(r.propensity), r.intent, int(r.bucket),
                 json.dumps(list(r.memory_ids)),
                 json.dumps(dict(r.path), sort_keys=True), json.dumps(list(r.edge_ids)), float(r.score))
                for r in results]  # fmt: skip
        with self._tx() as db:
            if recall is not None:
                db.execute("INSERT INTO recalls VALUES (?, ?, ?, ?, ?, ?)",
                           (recall["recall_id"], time.time(), recall.get("session_key"), recall["query"],
                            int(recall["k"]), json.dumps(recall["slate"])))  # fmt: skip
            db.executemany(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )
            db.executemany(
                "INSERT OR IGNORE INTO result_memories VALUES (?, ?)",
                [(r.result_id, m) for r in results for m in r.memory_ids],
            )

    def result(self, result_id: str) -> IssuedResult:
        """The issued result ``result_id``.

        Raises:
            UnknownIdError: the service never issued it.
        """
        with self._lock:
            row = self._db.execute("SELECT * FROM results WHERE result_id = ?", (result_id,)).fetchone()
        if row is None:
            raise UnknownIdError(f"unknown result id {result_id!r}: this service never issued it")
        return _issued(row)

    def results(self) -> Iterator[IssuedResult]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM results ORDER BY created_at, rowid").fetchall()
        return (_issued(r) for r in rows)

    def latest_result_for_memory(self, memory_id: str, session_key: str | None) -> str | None:
        """The most recent result that injected ``memory_id`` (in ``session_key`` when given): what
        Signet-shaped feedback by memory id rates. Results are ordered by the recall that showed them (its
        time; a pre-warm result's own), and within one recall a mixed-slate result comes before an explorer
        result (issued after the slate, outside it): a memory both showed is rated in the slate, where the
        online comparison reads it."""
        sql = (
            "SELECT r.result_id FROM result_memories m JOIN results r ON r.result_id = m.result_id "
            "LEFT JOIN recalls rc ON rc.recall_id = r.recall_id "
            "WHERE m.memory_id = ? AND (? IS NULL OR r.session_key = ?) "
            "ORDER BY COALESCE(rc.created_at, r.created_at) DESC, "
            "(r.recall_id IS NOT NULL AND r.slot IS NULL), r.rowid DESC LIMIT 1"
        )
        with self._lock:
            row = self._db.execute(sql, (memory_id, session_key, session_key)).fetchone()
        return None if row is None else str(row[0])

    # -- feedback ---------------------------------------------------------------------------------------

    def record(
        self,
        idempotency_key: str,
        result_id: str,
        rating: float,
        verb: str = "rate",
        session_key: str | None = None,
        text: str | None = None,
    ) -> tuple[FeedbackRow, bool]:
        """Append one rating (committed before this returns), or find the one its key already recorded.

        Returns:
            The logged row and whether this call wrote it (False: a retry of an acknowledged key).

        Raises:
            UnknownIdError: ``result_id`` was never issued (nothing is written).
            StateError: a bad rating or verb, or a key already used for a different rating.
        """
        ((row, new),) = self.record_many([(idempotency_key, result_id, rating, verb, text)], session_key)
        return row, new

    def record_many(
        self,
        items: Sequence[tuple[str, str, float, str, str | None]],
        session_key: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> list[tuple[FeedbackRow, bool]]:
        """Append the ratings of one request, all or none, in one transaction.

        Args:
            items: ``(idempotency key, result id, rating, verb, text)`` per rating, in order.
            session_key: the request's session.
            labels: how an error names each item (e.g. ``results.r_1``); given, every message starts with
                the item's label and ends with "nothing in this request was recorded".

        Returns:
            Per item, the logged row and whether this call wrote it (False: its key was already recorded,
            by an earlier request or an earlier item of this one, for the same rating).

        Raises:
            UnknownIdError: a result id that was never issued.
            StateError: a bad key, rating or verb, or a key already used for a different rating.
            Either way nothing of the request is written.
        """
        if labels is not None and len(labels) != len(items):
            raise ValueError(f"record_many: {len(labels)} labels for {len(items)} items")

        def fail(i: int, message: str, kind: type[StateError] = StateError) -> StateError:
            if labels is None:
                return kind(message)
            return kind(f"{labels[i]}: {message}; nothing in this request was recorded")

        for i, (key, _, rating, verb, _) in enumerate(items):  # every item checked before the transaction
            if not isinstance(key, str) or not key or len(key) > 200:
                raise fail(i, f"idempotency key must be a non-empty string of at most 200 characters, got "
                              f"{key!r}")
            if verb not in VERBS:
                raise fail(i, f"unknown verb {verb!r}; expected one of: {', '.join(VERBS)}")
            number = not isinstance(rating, bool) and isinstance(rating, int | float)
            if not number or not -1.0 <= float(rating) <= 1.0:
                raise fail(i, f"rating must be a number in [-1, 1], got {rating!r}")
        out: list[tuple[FeedbackRow, bool]] = []
        with self._tx() as db:  # an exception inside rolls back every earlier item of the request
            for i, (key, result_id, rating, verb, text) in enumerate(items):
                old = db.execute("SELECT * FROM feedback WHERE idempotency_key = ?", (key,)).fetchone()
                if old is not None:
                    row = FeedbackRow(*old)
                    if row.result_id != result_id or row.rating != float(rating) or row.verb != verb:
                        raise fail(i, f"idempotency key {key!r} already recorded {row.verb} {row.rating:g} "
                                      f"for result {row.result_id!r}; a different rating needs a new key")
                    out.append((row, False))
                    continue
                if db.execute("SELECT 1 FROM results WHERE result_id = ?", (result_id,)).fetchone() is None:
                    raise fail(i, f"unknown result id {result_id!r}: this service never issued it",
                               UnknownIdError)
                now = time.time()
                cur = db.execute(
                    "INSERT INTO feedback"
                    " (idempotency_key, session_key, result_id, rating, verb, text, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, session_key, result_id, float(rating), verb, text, now),
                )
                row = FeedbackRow(int(cur.lastrowid or 0), key, session_key, result_id, float(rating), verb,
                                  text, now)  # fmt: skip
                out.append((row, True))
        return out

    def feedback(self) -> list[FeedbackRow]:
        """The whole log, in the order it was acknowledged."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM feedback ORDER BY seq").fetchall()
        return [FeedbackRow(*r) for r in rows]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                t: int(self._db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("recalls", "results", "feedback")
            }

    def recalls(self) -> list[tuple[dict[str, Any], list[float | None]]]:
        """Every logged recall's mixed slate (JSON) with the latest rating of each shown slot (None:
        unrated), in order: what ``serve report`` compares."""
        with self._lock:
            recs = self._db.execute(
                "SELECT recall_id, k, slate FROM recalls ORDER BY created_at, rowid"
            ).fetchall()
            rated = self._db.execute(
                "SELECT r.recall_id, r.slot, f.rating FROM feedback f "
                "JOIN results r ON r.result_id = f.result_id "
                "WHERE r.recall_id IS NOT NULL AND r.slot IS NOT NULL ORDER BY f.seq"
            ).fetchall()
        latest: dict[tuple[str, int], float] = {(rid, int(slot)): float(x) for rid, slot, x in rated}
        out = []
        for rid, k, slate in recs:
            data = json.loads(slate)
            data["k"] = int(k)
            out.append((data, [latest.get((rid, j)) for j in range(len(data["shown"]))]))
        return out

    def replay(self, apply: Any) -> int:
        """Call ``apply(result, feedback_row)`` for every logged rating in order (rebuilds learned state from
        the log after a restart); returns how many were replayed."""
        issued = {r.result_id: r for r in self.results()}
        n = 0
        for fb in self.feedback():
            apply(issued[fb.result_id], fb)
            n += 1
        return n


def _issued(row: Sequence[Any]) -> IssuedResult:
    (rid, recall_id, slot, _created, session, query, graph_id, system, position, propensity, intent, bucket,
     mids, path, edges, score) = row  # fmt: skip
    return IssuedResult(str(rid), session, str(query), str(graph_id), str(system), int(position),
                        float(propensity), str(intent), int(bucket), tuple(json.loads(mids)),
                        json.loads(path), tuple(json.loads(edges)), float(score), recall_id,
                        None if slot is None else int(slot))  # fmt: skip
