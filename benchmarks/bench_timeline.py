"""The explorer regulator's read of the service's log (issue 29 §1): a new session's first recall, with
``emergence.regulation`` on, reads the timeline of the last ``history`` sessions
(:func:`signet_rl.serving.exploration.timeline_records`) under the service's lock.

A real state file (:class:`~signet_rl.serving.state.ServiceState`'s schema) is filled with ``--sessions``
old sessions of 10 recalls x 5 results each, a rating on every third result; then the timeline before a
new session is read by the service's function (SQL filtered to the kept sessions) and by the baseline it
replaced (every result row with a session and the whole feedback table read, then filtered in Python),
best of ``--repeats`` each, in the same run. The two must return the same records. Prints the figures and
writes ``benchmarks/results/timeline.json``; nothing is asserted about time.

    python benchmarks/bench_timeline.py --sessions 2000
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def baseline(db: sqlite3.Connection, *, before: str | None = None, history: int = 12) -> list[Any]:
    """``timeline_records`` as it was before the SQL filter (review 55): reads every session's results."""
    from signet_rl.serving.exploration import recall_records

    start = None
    if before is not None:
        got = db.execute("SELECT MIN(created_at) FROM recalls WHERE session_key = ?", (before,)).fetchone()
        start = got[0] if got is not None else None
    sessions = db.execute(
        "SELECT session_key, MIN(created_at) AS t FROM recalls WHERE session_key IS NOT NULL "
        "AND session_key != ? GROUP BY session_key HAVING ? IS NULL OR t < ? ORDER BY t DESC LIMIT ?",
        (before or "", start, start, int(history))).fetchall()
    keep = {s for s, _ in sessions}
    if not keep:
        return []
    latest: dict[str, float] = dict(db.execute(
        "SELECT f.result_id, f.rating FROM feedback f ORDER BY f.seq").fetchall())
    rows = db.execute(
        "SELECT rc.recall_id, rc.session_key, rc.created_at, r.result_id, r.path, r.memory_ids, r.score, "
        "r.propensity, r.intent FROM recalls rc JOIN results r ON r.recall_id = rc.recall_id "
        "WHERE rc.session_key IS NOT NULL ORDER BY rc.created_at, rc.rowid, r.position, r.rowid").fetchall()
    by_recall: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        if row[1] in keep:
            by_recall.setdefault(row[0], []).append(row)
    return recall_records(by_recall, latest)


def fill(path: Path, sessions: int) -> int:
    """``sessions`` old sessions of 10 recalls x 5 results in a fresh state file; returns the results."""
    from signet_rl.serving.state import ServiceState

    ServiceState(path).close()  # the service's schema (and its indexes)
    db = sqlite3.connect(path, isolation_level=None)
    walk = json.dumps({"entities": ["ent-000015"], "walk": "ent-000015 -> ent-000016", "attributes": [],
                       "dependencies": []})
    t, n = time.time() - 10**6, 0
    db.execute("BEGIN")
    for s in range(sessions):
        for _ in range(10):
            rid, t = uuid.uuid4().hex, t + 1
            db.execute("INSERT INTO recalls VALUES (?, ?, ?, ?, ?, ?)", (rid, t, f"old{s}", "q", 5, "{}"))
            for j in range(5):
                result = f"r_{uuid.uuid4().hex}"
                db.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (result, rid, j, t, f"old{s}", "q", "main", "desire", j, 0.5, "what", 0,
                            '["mem-000010"]', walk, "[]", 0.1))
                if n % 3 == 0:
                    db.execute("INSERT INTO feedback (idempotency_key, session_key, result_id, rating, verb, "
                               "text, created_at) VALUES (?, ?, ?, ?, 'rate', NULL, ?)",
                               (f"k{n}", f"old{s}", result, 1.0 if n % 2 else -1.0, t))
                n += 1
    db.execute("COMMIT")
    db.close()
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--history", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from signet_rl.serving.exploration import timeline_records

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.sqlite"
        results = fill(path, args.sessions)
        db = sqlite3.connect(path)
        timings: dict[str, float] = {}
        got: dict[str, list[Any]] = {}
        for name, fn in (("baseline", baseline), ("sql_filtered", timeline_records)):
            best = math.inf
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                got[name] = fn(db, before="brand-new", history=args.history)
                best = min(best, time.perf_counter() - t0)
            timings[name] = best
        db.close()
    same = got["baseline"] == got["sql_filtered"]
    out = {"sessions": args.sessions, "results": results, "history": args.history,
           "records": len(got["sql_filtered"]), "same_records": same,
           "seconds": timings, "speedup": timings["baseline"] / timings["sql_filtered"]}
    print(f"{args.sessions} sessions, {results} results, history {args.history}: "
          f"{len(got['sql_filtered'])} records (same as baseline: {same})")
    for name, s in timings.items():
        print(f"  {name:13s} {s * 1000:9.1f} ms (best of {args.repeats})")
    print(f"  speedup {out['speedup']:.0f}x")
    target = ROOT / "benchmarks" / "results" / "timeline.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
