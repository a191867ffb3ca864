"""The HTTP service in process (FastAPI's TestClient): Signet-shaped recall with provenance, idempotent
feedback that changes later recalls' statistics, the pull path, errors that name the field, and a store that
is never written."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from fastapi.testclient import TestClient

from signet_rl.core.types import Query
from signet_rl.serving.app import MAX_BODY, FeedbackBody, RecallBody, ResultFeedback, Service, create_app


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def service(served, tmp_path):
    svc = Service(served["store"], served["artifact"], tmp_path / "state.sqlite", k=5)
    yield svc
    svc.state.close()


def _a_query(service) -> str:
    ents = service.graph.entities
    return f"what do we know about {ents['name'].iloc[0]}"


def test_recall_feedback_and_replay(served, service, tmp_path):
    before = _sha(served["store"])
    client = TestClient(create_app(service))
    got = client.post("/api/memory/recall", json={"query": _a_query(service), "sessionKey": "s1"})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["method"] == "desire-paths" and 1 <= len(body["results"]) <= 5
    first = body["results"][0]
    assert {
        "id",
        "content",
        "content_length",
        "truncated",
        "score",
        "source",
        "type",
        "tags",
        "pinned",
        "importance",
        "who",
        "project",
        "created_at",
    } <= set(first)
    assert set(first["path"]) == {"entities", "aspects", "attributes", "memory_ids", "dependencies", "kind"}
    assert 0 < first["propensity"] <= 1 and first["system"] in ("desire", "flat")
    desire = [r for r in body["results"] if r["system"] == "desire" and r["path"]["dependencies"]]
    target = (desire or body["results"])[0]
    weights = service.stats.weights.copy()
    updates = service.policy.scorer.updates
    ok = client.post(
        "/api/memory/feedback",
        json={
            "sessionKey": "s1",
            "results": {target["result_id"]: {"verb": "confirm", "idempotencyKey": "k1"}},
        },
    )
    assert ok.json() == {"ok": True, "recorded": 1, "acknowledged": 1}
    again = client.post(
        "/api/memory/feedback",
        json={
            "sessionKey": "s1",
            "results": {target["result_id"]: {"verb": "confirm", "idempotencyKey": "k1"}},
        },
    )
    assert again.json()["recorded"] == 0
    if target["path"]["dependencies"]:
        assert not np.array_equal(weights, service.stats.weights)
    if target["system"] == "desire":  # LinUCB's posterior learned from the logged context-path vector
        assert service.policy.scorer.updates == updates + 1
    assert "design" not in target["path"]  # the head's input is logged, not returned
    # Signet's own shape, by memory id, with a request key
    mid = next(r["path"]["memory_ids"][0] for r in body["results"] if r["path"]["memory_ids"])
    sig = client.post(
        "/api/memory/feedback", json={"sessionKey": "s1", "feedback": {mid: -1}, "idempotencyKey": "req2"}
    )
    assert sig.json()["recorded"] == 1
    assert client.get("/api/predictor/status").json()["training_pairs"] == 2
    # a restart rebuilds the same statistics from the log
    replayed = Service(served["store"], served["artifact"], tmp_path / "state.sqlite")
    assert replayed.replayed == 2 and np.allclose(replayed.stats.weights, service.stats.weights)
    assert replayed.stats_digest() == service.stats_digest()
    assert _sha(served["store"]) == before


def test_bad_requests_are_named_and_write_nothing(service):
    client = TestClient(create_app(service))
    assert client.post("/api/memory/recall", json={"query": 3}).status_code == 422
    wrong = client.post("/api/memory/recall", json={"query": "x", "limit": "ten"})
    assert wrong.status_code == 422 and "limit" in wrong.text
    bad_json = client.post(
        "/api/memory/recall", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 422
    big = client.post(
        "/api/memory/recall",
        content=b"{" + b" " * MAX_BODY + b"}",
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413
    unknown = client.post(
        "/api/memory/feedback", json={"results": {"r_nope": {"rating": 1, "idempotencyKey": "z"}}}
    )
    assert unknown.status_code == 404 and "unknown result id 'r_nope'" in unknown.text
    assert service.state.counts()["feedback"] == 0
    verb = client.post(
        "/api/memory/feedback", json={"results": {"r_x": {"verb": "boost", "idempotencyKey": "z"}}}
    )
    assert verb.status_code == 422 and "unknown verb 'boost'" in verb.text


def _issue(service, *ids: str) -> None:
    from signet_rl.serving.state import IssuedResult

    path = {"entities": [], "aspects": [], "attributes": [], "memory_ids": [], "dependencies": [],
            "kind": "constructed"}
    service.state.issue([IssuedResult(rid, "s", "q", "main", "desire", 0, 1.0, "what", 0, (), path, (), 0.5)
                         for rid in ids])  # fmt: skip


@pytest.mark.parametrize("conflict", ["earlier-request", "same-request"])
def test_one_feedback_request_is_one_transaction(service, conflict):
    """A request whose second item reuses an idempotency key for another rating records none of its items
    (before: the first item was written in its own transaction), and the error names the second item."""
    client = TestClient(create_app(service))
    _issue(service, "r_a", "r_b")

    def vote(verb: str, key: str) -> dict[str, str]:
        return {"verb": verb, "idempotencyKey": key}

    if conflict == "earlier-request":
        first = {"sessionKey": "s", "results": {"r_a": vote("confirm", "k1")}}
        ok = client.post("/api/memory/feedback", json=first)
        assert ok.json() == {"ok": True, "recorded": 1, "acknowledged": 1}
        body = {"r_b": vote("confirm", "k2"), "r_a": vote("reject", "k1")}
        second = "r_a"
    else:
        body = {"r_a": vote("confirm", "k1"), "r_b": vote("reject", "k1")}
        second = "r_b"
    before = service.state.feedback()
    digest = service.stats_digest()
    got = client.post("/api/memory/feedback", json={"sessionKey": "s", "results": body})
    assert got.status_code == 422
    assert service.state.feedback() == before  # the first item was rolled back with the second
    assert service.stats_digest() == digest  # and nothing was learned from it
    assert got.json()["error"] == (
        f"results.{second}: idempotency key 'k1' already recorded confirm 1 for result 'r_a'; a different "
        "rating needs a new key; nothing in this request was recorded")


def test_expand_impact_and_health(service):
    client = TestClient(create_app(service))
    eid = str(service.graph.entities["id"].iloc[0])
    ex = client.post("/api/knowledge/expand", json={"entity": eid, "maxTokens": 200}).json()
    assert ex["entity"]["id"] == eid and ex["chars"] <= 800
    assert client.post("/api/knowledge/expand", json={"entity": "no such"}).status_code == 404
    assert "impact" in client.get("/api/graph/impact", params={"entity": eid}).json()
    assert client.get("/health").json()["state_integrity"] == "ok"


def test_a_token_guards_every_endpoint_but_health(service):
    client = TestClient(create_app(service, token="s3cret"))
    assert client.post("/api/memory/recall", json={"query": "x"}).status_code == 401
    assert client.get("/health").status_code == 200
    ok = client.post("/api/memory/recall", json={"query": "x"}, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200


def test_the_app_imports_no_torch_trainer_hydra_mlflow_or_evaluation(served, tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from signet_rl.serving.app import Service, create_app\n"
        f"svc = Service({str(served['store'])!r}, {str(served['artifact'])!r}, "
        f"{str(tmp_path / 's.sqlite')!r})\n"
        "c = TestClient(create_app(svc))\n"
        "assert c.post('/api/memory/recall', json={'query': 'what about it'}).status_code == 200\n"
        "bad = ('torch', 'hydra', 'mlflow', 'signet_rl.evaluation', 'signet_rl.learning.trainer')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in bad[:3] or m.startswith(bad[3:])))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_serve_report_prints_the_comparison_and_http_refuses_an_open_bind_without_token(service, capsys):
    from signet_rl.serve import main

    for i in range(3):
        shown = service.recall(RecallBody(query=f"what about entity {i}", sessionKey=f"s{i}"))["results"]
        votes = {
            r["result_id"]: ResultFeedback(
                rating=1.0 if r["system"] == "desire" else 0.0, idempotencyKey=f"{i}{r['result_id']}"
            )
            for r in shown
        }
        service.feedback(FeedbackBody(sessionKey=f"s{i}", results=votes), None)
    assert main(["report", "--state", str(service.state.path)]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("recalls 3, rated 3: desire wins ")
        and "SNIPS value of the desire policy's slate" in out
    )
    assert main(["--db", "x.db", "--policy", "p", "--host", "0.0.0.0"]) == 2
    assert (
        "binding 0.0.0.0 exposes the memory store beyond this machine; give a bearer token"
        in capsys.readouterr().err
    )


def test_a_hybrid_service_floors_on_its_flat_reuses_its_hits_and_names_memory_hops(
    served, tmp_path, monkeypatch
):
    """With the hybrid entry on (``serve --hybrid``), the desire retriever's floor is the service's own flat
    recall (a Signet store has no frozen best_flat), a recall runs flat once and shows flat's units as flat
    computes them, and a result whose path is made of memory hops (a floor hit, a session step) carries
    those memories as provenance (before: a KeyError on the memory hop)."""
    from signet_rl.serving.app import HYBRID
    from signet_rl.traversal.path import HopKind

    svc = Service(served["store"], served["artifact"], tmp_path / "state.sqlite", k=10, traversal=HYBRID)
    try:
        assert svc.desire.flat is svc.flat and svc.desire.config.floor and svc.desire.config.session
        texts = [f"what do we know about {n}" for n in svc.graph.entities["name"].iloc[:6]]
        calls = []
        original = svc.flat.retrieve

        def counted(query, budget_chars=None):
            calls.append(query.text)
            return original(query, budget_chars)

        monkeypatch.setattr(svc.flat, "retrieve", counted)
        hops = 0
        for text in texts:
            calls.clear()
            body = svc.recall(RecallBody(query=text, sessionKey="h"))
            assert calls == [text]  # once: the floor's hits are the flat side of the slate
            expected = {u.text for u in original(Query(id="x", text=text, graph_id="main", split="test"))}
            assert {r["content"] for r in body["results"] if r["system"] == "flat"} <= expected
            cands = svc.desire.candidates(Query(id="y", text=text, graph_id="main", split="test"))
            hops += sum(any(h.kind == HopKind.MEMORY for h in p.hops) for p in cands.walk.paths)
            for r in body["results"]:
                if r["system"] == "desire":  # entity walks and session steps end in memory hops
                    assert r["path"]["memory_ids"] and set(r["path"]["memory_ids"]) <= svc.memory_ids
        assert hops > 0
    finally:
        svc.state.close()
