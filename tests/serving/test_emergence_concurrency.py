"""Concurrent clients of a running service (real uvicorn on loopback, started by the test): explorer slots
are never over-spent by two recalls of one session at once, and ratings posted from several threads are
learned in the log's order, so a restart's replay rebuilds the same statistics."""

from __future__ import annotations

import threading

import httpx

from signet_rl.serving.app import Service, create_app
from tests.serving.conftest import live_server

Q = "what is behind buhowi-db?"


def test_two_concurrent_recalls_of_a_session_never_show_more_explorers_than_its_slots(served, tmp_path):
    svc = Service(served["store"], served["artifact"], tmp_path / "state.sqlite",
                  emergence={"explorer": True})
    sessions = [f"c{i}" for i in range(8)]
    shown: dict[str, int] = {s: 0 for s in sessions}
    errors: list[str] = []
    try:
        with live_server(create_app(svc)) as url:
            def recall(session: str, start: threading.Barrier) -> None:
                with httpx.Client(base_url=url, timeout=30) as c:
                    start.wait()
                    got = c.post("/api/memory/recall", json={"query": Q, "sessionKey": session, "limit": 5})
                    if got.status_code != 200:
                        errors.append(got.text)
                        return
                    n = sum(r["system"] == "explorer" for r in got.json()["results"])
                    with lock:
                        shown[session] += n

            lock = threading.Lock()
            for s in sessions:  # two recalls of the same fresh session at once
                start = threading.Barrier(2)
                threads = [threading.Thread(target=recall, args=(s, start)) for _ in range(2)]
                [t.start() for t in threads]
                [t.join() for t in threads]
        assert errors == []
        # the base quota is one slot per session: exactly one of the two recalls shows an explorer
        assert shown == {s: 1 for s in sessions}
        assert {s: (svc.exploration.slots(s), svc.exploration.used(s)) for s in sessions} == {
            s: (1, 1) for s in sessions}
        assert svc.exploration._pending == {}  # every reservation released once its results were logged
    finally:
        svc.state.close()


def test_ratings_posted_from_several_threads_replay_to_the_same_statistics(served, tmp_path):
    state = tmp_path / "state.sqlite"
    svc = Service(served["store"], served["artifact"], state)
    threads_n, per_thread = 4, 12
    try:
        with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
            got = c.post("/api/memory/recall", json={"query": Q, "sessionKey": "s", "limit": 50})
            results = [r["id"] for r in got.json()["results"] if r["system"] == "desire"]
            assert len(results) >= 4
            errors: list[str] = []

            def rate(t: int, start: threading.Barrier) -> None:
                with httpx.Client(base_url=url, timeout=30) as mine:
                    start.wait()
                    for i in range(per_thread):
                        rid = results[(t + i) % len(results)]
                        got = mine.post("/api/memory/feedback", json={"sessionKey": "s", "results": {
                            rid: {"rating": (1, -1, 0.5)[(t + i) % 3], "idempotencyKey": f"k{t}-{i}"}}})
                        if got.status_code != 200:
                            errors.append(got.text)

            start = threading.Barrier(threads_n)
            threads = [threading.Thread(target=rate, args=(t, start)) for t in range(threads_n)]
            [t.start() for t in threads]
            [t.join() for t in threads]
            assert errors == []
        live = svc.stats_digest()
        assert svc.state.counts()["feedback"] == threads_n * per_thread
    finally:
        svc.state.close()
    again = Service(served["store"], served["artifact"], state)
    try:
        assert again.replayed == threads_n * per_thread
        assert again.stats_digest() == live  # learned in seq order, as the replay applies them
    finally:
        again.state.close()
