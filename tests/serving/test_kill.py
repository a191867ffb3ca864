"""Nothing acknowledged is lost: a real uvicorn service takes 2,000+ feedback posts from 8 client threads, is
SIGKILLed with requests in flight, restarts, and every acknowledged rating is there exactly once."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from signet_rl.serving.app import Service

ROOT = Path(__file__).resolve().parents[2]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(served, state: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = state.with_suffix(".log")
    with log.open("a") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "signet_rl.serve",
                "--db",
                str(served["store"]),
                "--policy",
                str(served["artifact"]),
                "--state",
                str(state),
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.time() + 240
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(log.read_text())
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError("service did not start")


@pytest.mark.slow
def test_sigkill_loses_no_acknowledged_rating(served, tmp_path):
    store_sha = hashlib.sha256(served["store"].read_bytes()).hexdigest()
    state, port = tmp_path / "state.sqlite", _port()
    url = f"http://127.0.0.1:{port}"
    proc = _start(served, state, port)
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            ids = [
                r["result_id"]
                for i in range(40)
                for r in c.post(
                    "/api/memory/recall", json={"query": f"what about item {i}", "sessionKey": f"s{i}"}
                ).json()["results"]
            ]
        assert len(ids) >= 40
        acked: list[tuple[str, str, float]] = []
        lock, stop = threading.Lock(), threading.Event()
        in_flight = threading.Semaphore(0)

        def client(t: int) -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                for i in range(400):
                    if stop.is_set():
                        return
                    key, rid, rating = f"t{t}-{i}", ids[(t * 400 + i) % len(ids)], [1.0, -1.0, 0.5][i % 3]
                    in_flight.release()
                    try:
                        r = c.post(
                            "/api/memory/feedback",
                            json={"results": {rid: {"rating": rating, "idempotencyKey": key}}},
                        )
                    except httpx.HTTPError:
                        return  # the kill
                    if r.status_code == 200:
                        with lock:
                            acked.append((key, rid, rating))

        threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        while len(acked) < 2000:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)  # 8 clients posting: requests are in flight
        proc.wait()
        stop.set()
        for th in threads:
            th.join()
        assert len(acked) >= 2000
        proc = _start(served, state, port)
        with httpx.Client(base_url=url, timeout=30) as c:
            with closing(sqlite3.connect(state)) as db:
                rows = dict(db.execute("SELECT idempotency_key, rating FROM feedback").fetchall())
            assert all(rows.get(key) == rating for key, _, rating in acked)
            status = c.get("/api/predictor/status").json()
            assert status["training_pairs"] == len(rows) and status["ratings_replayed_at_start"] == len(rows)
            # a resent acknowledged rating is recorded once; a result issued before the kill can be rated
            key, rid, rating = acked[0]
            again = c.post(
                "/api/memory/feedback", json={"results": {rid: {"rating": rating, "idempotencyKey": key}}}
            )
            assert again.json()["recorded"] == 0
            fresh = c.post(
                "/api/memory/feedback",
                json={"results": {ids[-1]: {"verb": "confirm", "idempotencyKey": "after"}}},
            )
            assert fresh.json()["recorded"] == 1
            served_digest = c.get("/api/predictor/status").json()["stats_sha256"]
    finally:
        proc.kill()
        proc.wait()
    replay = Service(served["store"], served["artifact"], state)  # statistics = a replay of the log
    assert replay.stats_digest() == served_digest
    assert replay.state.integrity_check() == "ok"
    assert hashlib.sha256(served["store"].read_bytes()).hexdigest() == store_sha
