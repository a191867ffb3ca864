"""Issue 29 §6 in a running service (real uvicorn on loopback, started by the test): a principle verb or a
bridge promotion changes the walks of the very next recall (no restart), and a restart's replay of the
verb and feedback logs gives the same graph and the same learned statistics."""

from __future__ import annotations

import httpx
import pytest

from signet_rl.serving.app import Service, create_app
from signet_rl.serving.state import IssuedResult
from tests.emergence.test_principles import THREE
from tests.emergence.test_principles import graph as principle_graph
from tests.serving.conftest import live_server

ON = {"principles": True, "bridges": True, "health": True, "bridge": {"promote_after": 2}}


@pytest.fixture()
def store(tmp_path):
    from signet_rl.graph.store import write_graph

    return write_graph(principle_graph(THREE), tmp_path / "memories.db")


def _walked(c: httpx.Client, query: str = "what about billing") -> list[dict]:
    """Every result path of one recall (``limit`` 50 shows every candidate of this tiny store)."""
    got = c.post("/api/memory/recall", json={"query": query, "sessionKey": "s", "limit": 50})
    assert got.status_code == 200, got.text
    return [r["path"] for r in got.json()["results"]]


def _state_of(svc: Service) -> tuple:
    deps = svc.graph.dependencies.sort_values("id")
    return (tuple(zip(deps["id"], deps["reason"], deps["confidence"].round(6), strict=True)),
            tuple(str(e) for e in svc.arrays.edge_ids), svc.stats_digest())


def test_principle_verbs_and_bridge_promotions_change_the_next_recall_and_replay_the_same(store, served,
                                                                                          tmp_path):
    state = tmp_path / "state.sqlite"
    svc = Service(store, served["artifact"], state, emergence=ON)
    with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
        (p,) = c.get("/api/emergence/principles").json()["principles"]
        pid = p["id"]
        assert any(pid in path["entities"] for path in _walked(c))  # proposed: pattern-matched, 0.5: walked

        got = c.post(f"/api/emergence/principles/{pid}", json={"verb": "reject"})
        assert got.status_code == 200 and got.json()["principle"]["status"] == "rejected"
        assert not any(pid in path["entities"] for path in _walked(c))  # gone from the next recall's walks

        got = c.post(f"/api/emergence/principles/{pid}", json={"verb": "confirm"})
        assert got.json()["principle"]["status"] == "confirmed"
        reached = [path for path in _walked(c) if pid in path["entities"]]
        assert reached and all(f"{pid}/billing" in path["dependencies"] for path in reached)

        # a bridge promoted by ratings is walked by the next recall
        (bid,) = [b["id"] for b in c.get("/api/emergence/bridges").json()["bridges"]
                  if {b["entity_a"], b["entity_b"]} == {"billing", "garden"}]
        crossing = {"entities": ["billing"], "aspects": [], "attributes": ["t-garden"],
                    "memory_ids": ["m-garden"], "dependencies": [], "kind": "constructed"}
        svc.state.issue([IssuedResult(f"r_{i}", "s", "q", "main", "desire", 0, 1.0, "what", 0, ("m-garden",),
                                      crossing, (), 0.5) for i in range(2)])
        assert not any(f"dep-{bid}" in path["dependencies"] for path in _walked(c))
        for i in range(2):
            got = c.post("/api/memory/feedback", json={
                "sessionKey": "s", "results": {f"r_{i}": {"verb": "confirm", "idempotencyKey": f"k{i}"}}})
            assert got.status_code == 200, got.text
        (b,) = [b for b in c.get("/api/emergence/bridges").json()["bridges"] if b["id"] == bid]
        assert b["status"] == "promoted"
        crossed = [path for path in _walked(c) if f"dep-{bid}" in path["dependencies"]]
        assert crossed and all({"billing", "garden"} <= set(path["entities"]) for path in crossed)
        # ratings of the walks after the changes land on the re-indexed edges
        rid = c.post("/api/memory/recall", json={"query": "what about billing", "sessionKey": "s",
                                                 "limit": 50}).json()["results"][0]["result_id"]
        got = c.post("/api/memory/feedback", json={
            "sessionKey": "s", "results": {rid: {"rating": 1, "idempotencyKey": "k-after"}}})
        assert got.status_code == 200, got.text
        live = _state_of(svc)
        assert svc.reindexed >= 3  # reject, confirm, promotion
    svc.state.close()

    again = Service(store, served["artifact"], state, emergence=ON)  # the logs are the truth: replayed
    try:
        assert _state_of(again) == live
        assert again.emergence.principles()[0]["status"] == "confirmed"
    finally:
        again.state.close()
