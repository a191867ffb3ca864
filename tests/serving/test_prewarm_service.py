"""Temporal pre-warm in the service (``POST /api/session/start``): off by default; when on, a rated path comes
back at the next session start with no query, within 600 characters, and its statistics survive a restart."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from signet_rl.emergence.prewarm import PrewarmConfig
from signet_rl.serving.app import Service, create_app


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_session_start_is_off_by_default(served, tmp_path):
    svc = Service(served["store"], served["artifact"], tmp_path / "state.sqlite")
    try:
        got = TestClient(create_app(svc)).post("/api/session/start", json={"sessionKey": "s1"})
        assert got.status_code == 409
        assert got.json() == {"detail": "pre-warm is off; start the service with --prewarm"}
    finally:
        svc.state.close()


def test_a_rated_path_is_prewarmed_at_the_next_session_start(served, tmp_path):
    before = _sha(served["store"])
    state = tmp_path / "state.sqlite"
    svc = Service(served["store"], served["artifact"], state, prewarm=PrewarmConfig())
    try:
        client = TestClient(create_app(svc))
        empty = client.post("/api/session/start", json={"sessionKey": "s0"}).json()
        assert empty["results"] == [] and empty["chars"] == 0  # nothing rated yet: nothing to predict
        name = svc.graph.entities["name"].iloc[0]
        shown = client.post("/api/memory/recall", json={"query": f"what do we know about {name}",
                                                         "sessionKey": "s1"}).json()["results"]
        walked = [r for r in shown if r["system"] == "desire"]
        assert walked, shown
        rid = walked[0]["result_id"]
        assert client.post("/api/memory/feedback", json={"sessionKey": "s1", "results": {
            rid: {"verb": "confirm", "idempotencyKey": "k1"}}}).status_code == 200
        assert len(svc.prewarm) == 1
        at = (pd.Timestamp.now(tz="UTC") + pd.Timedelta(minutes=1)).isoformat()
        got = client.post("/api/session/start", json={"sessionKey": "s2", "at": at})
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["method"] == "prewarm" and 0 < body["chars"] <= 600
        first = body["results"][0]
        assert first["system"] == "prewarm" and first["propensity"] == 1.0
        assert first["content"] == walked[0]["content"] and first["path"] == walked[0]["path"]
        # a pre-warmed memory is rated like any result, and the rating feeds the statistics
        assert client.post("/api/memory/feedback", json={"sessionKey": "s2", "results": {
            first["result_id"]: {"rating": 1, "idempotencyKey": "k2"}}}).status_code == 200
        assert len(svc.prewarm) == 2
        assert client.post("/api/session/start", json={"at": "not a time"}).status_code == 422
    finally:
        svc.state.close()
    again = Service(served["store"], served["artifact"], state, prewarm=PrewarmConfig())
    try:
        assert again.replayed == 2 and len(again.prewarm) == 2  # rebuilt from the state file's log
    finally:
        again.state.close()
    assert _sha(served["store"]) == before


def test_serve_cli_has_the_switch():
    import argparse

    from signet_rl.serve import _prewarm

    assert _prewarm(argparse.Namespace(prewarm=False)) is None
    assert _prewarm(argparse.Namespace(prewarm=True)) == PrewarmConfig()
    with pytest.raises(ValueError, match=r"^prewarm.max_paths must be an integer >= 1, got 0$"):
        PrewarmConfig(max_paths=0)
