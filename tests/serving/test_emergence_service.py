"""Issue 29 in the service: off by default; principles answer to confirm/reject/correct, kept in the
service's own file and replayed at start; health from the feedback log; bad verbs and pruned items named,
nothing written."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from fastapi.testclient import TestClient

from signet_rl.serving.app import Service, create_app
from tests.emergence.test_principles import THREE
from tests.emergence.test_principles import graph as principle_graph

ON = {"principles": True, "bridges": True, "health": True}


@pytest.fixture()
def store(tmp_path):
    from signet_rl.graph.store import write_graph

    return write_graph(principle_graph(THREE), tmp_path / "memories.db")


def _verbs(state) -> list[tuple]:
    with sqlite3.connect(state) as db:
        return db.execute("SELECT principle_id, verb, text FROM emergence_verbs ORDER BY seq").fetchall()


def test_off_by_default(served, store, tmp_path):
    svc = Service(store, served["artifact"], tmp_path / "state.sqlite")
    try:
        assert svc.emergence is None
        client = TestClient(create_app(svc))
        got = client.get("/api/emergence/principles")
        assert got.status_code == 404 and "emergence is off in this service" in got.json()["detail"]
        with sqlite3.connect(tmp_path / "state.sqlite") as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not {t for t in tables if t.startswith("emergence")}
        assert "principle" not in set(svc.graph.entities["entity_type"])
    finally:
        svc.state.close()


def test_principle_verbs_are_logged_replayed_and_bad_ones_write_nothing(served, store, tmp_path):
    state = tmp_path / "state.sqlite"
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    svc = Service(store, served["artifact"], state, emergence=ON)
    client = TestClient(create_app(svc))
    (p,) = client.get("/api/emergence/principles").json()["principles"]
    assert p["status"] == "proposed" and set(p["entity_ids"]) == {"billing", "garden", "novel"}
    assert {e["attribute_id"] for e in p["evidence"]} == {"t-billing", "t-garden", "t-novel"}
    pid = p["id"]
    assert pid in set(svc.graph.entities["id"])  # indexed with the graph: traversals can touch it

    for url, body, status, message in [
        ("/api/emergence/principles/principle-0", {"verb": "correct", "text": "x"}, 404,
         f"cannot correct principle 'principle-0': it does not exist; known principles: {pid}; nothing was "
         "recorded"),
        (f"/api/emergence/principles/{pid}", {"verb": "correct"}, 422,
         f"cannot correct principle '{pid}': the new text is empty; nothing was recorded"),
        (f"/api/emergence/principles/{pid}", {"verb": "boost"}, 422,
         f"unknown verb 'boost' for principle '{pid}'; expected one of: confirm, reject, correct"),
    ]:
        got = client.post(url, json=body)
        assert (got.status_code, got.json()["error"]) == (status, message)
    weighted = client.post(f"/api/emergence/principles/{pid}", json={"verb": "confirm", "weight": 2})
    assert weighted.status_code == 422  # users set no weights
    assert _verbs(state) == []

    got = client.post(f"/api/emergence/principles/{pid}", json={"verb": "confirm"})
    assert got.status_code == 200 and got.json()["principle"]["status"] == "confirmed"
    got = client.post(f"/api/emergence/principles/{pid}", json={"verb": "correct", "text": "small steps"})
    assert got.json()["principle"]["text"] == "small steps" and len(got.json()["principle"]["evidence"]) == 3
    assert _verbs(state) == [(pid, "confirm", None), (pid, "correct", "small steps")]
    bridges = client.get("/api/emergence/bridges").json()
    assert bridges["enabled"] and bridges["by_status"]["candidate"] >= 1
    health = client.get("/api/emergence/health").json()
    assert health["enabled"] and sum(health["entities"].values()) == len(svc.graph.entities)
    svc.state.close()

    again = Service(store, served["artifact"], state, emergence=ON)  # the verb log is replayed at start
    try:
        deps = again.graph.dependencies
        mine = deps[deps["source_entity_id"] == pid]
        assert set(mine["reason"]) == {"single-memory"}  # pattern-matched, one rung up by the confirm
        (rec,) = TestClient(create_app(again)).get("/api/emergence/principles").json()["principles"]
        assert (rec["status"], rec["text"]) == ("confirmed", "small steps")
    finally:
        again.state.close()
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before  # the store is never written


@pytest.mark.parametrize("emergence", [None, ON], ids=["emergence-off", "emergence-on"])
def test_rating_a_result_through_a_pruned_entity_names_both_and_records_nothing(served, store, tmp_path,
                                                                                emergence):
    """The cold check does not depend on emergence being on: off is the default (audit of issue 29)."""
    from signet_rl.emergence.cold import move_to_cold

    state = tmp_path / "state.sqlite"
    svc = Service(store, served["artifact"], state, emergence=emergence)
    client = TestClient(create_app(svc))
    results = client.post("/api/memory/recall",
                          json={"query": "what about billing", "sessionKey": "s"}).json()
    hit = next(r for r in results["results"] if r["path"]["entities"])
    entity = hit["path"]["entities"][0]
    svc.state.close()
    move_to_cold(store, [entity], copy=True, reason="unused")  # offline, between two runs of the service
    svc = Service(store, served["artifact"], state, emergence=emergence)
    try:
        client = TestClient(create_app(svc))
        got = client.post("/api/memory/feedback", json={
            "sessionKey": "s", "results": {hit["id"]: {"verb": "confirm", "idempotencyKey": "k1"}}})
        assert got.status_code == 422
        assert got.json()["error"] == (
            f"result {hit['id']!r} runs through entity {entity!r}, which was pruned to the cold tier; "
            "nothing was recorded. Rate it through an explorer path that rediscovers it "
            "(signet_rl.emergence.cold.rate_cold on an offline copy), or restore it first")
        assert svc.state.feedback() == []
        # Signet's own shape (by memory id) reaches the same result and is refused the same way
        mid = hit["path"]["memory_ids"][0] if hit["path"]["memory_ids"] else None
        if mid is not None:
            got = client.post("/api/memory/feedback", json={"sessionKey": "s", "feedback": {mid: 1},
                                                            "idempotencyKey": "k2"})
            assert got.status_code == 422 and got.json()["error"].startswith(
                f"result {hit['id']!r} runs through entity {entity!r}")
        assert svc.state.feedback() == [] and svc.cold == {entity}
        if emergence is not None:
            assert client.get("/api/emergence/health").json()["cold"] == [entity]
    finally:
        svc.state.close()


def test_bridges_move_on_ratings_of_results_that_crossed_them_and_are_replayed(served, store, tmp_path):
    from signet_rl.serving.state import IssuedResult

    state = tmp_path / "state.sqlite"
    config = {"bridges": True, "bridge": {"promote_after": 2}}
    svc = Service(store, served["artifact"], state, emergence=config)
    client = TestClient(create_app(svc))
    (bid,) = [b["id"] for b in client.get("/api/emergence/bridges").json()["bridges"]
              if {b["entity_a"], b["entity_b"]} == {"billing", "garden"}]
    # a result that walked from billing and showed garden's side of the bridge
    crossing = {"entities": ["billing"], "aspects": [], "attributes": ["t-garden"],
                "memory_ids": ["m-garden"], "dependencies": [], "kind": "constructed"}
    svc.state.issue([IssuedResult(f"r_{i}", "s", "q", "main", "desire", 0, 1.0, "what", 0, ("m-garden",),
                                  crossing, (), 0.5) for i in range(2)])
    for i in range(2):
        got = client.post("/api/memory/feedback", json={
            "sessionKey": "s", "results": {f"r_{i}": {"verb": "confirm", "idempotencyKey": f"k{i}"}}})
        assert got.status_code == 200, got.text
    (b,) = [b for b in client.get("/api/emergence/bridges").json()["bridges"] if b["id"] == bid]
    assert (b["status"], b["positive"], b["dependency_id"]) == ("promoted", 2, f"dep-{bid}")
    assert f"dep-{bid}" in set(str(e) for e in svc.arrays.edge_ids)  # indexed at once (issue 29 §6)
    svc.state.close()
    again = Service(store, served["artifact"], state, emergence=config)
    try:
        dep = again.graph.dependencies.set_index("id").loc[f"dep-{bid}"]
        assert dep["reason"] == "pattern-matched" and {dep["source_entity_id"], dep["target_entity_id"]} == {
            "billing", "garden"}
        assert f"dep-{bid}" in set(str(e) for e in again.arrays.edge_ids)
        # and walked: the desire retriever's own traverser crosses it from billing at its min_confidence
        walker = again.desire._state("main").traverser
        walked = [p for p in walker.walk(["billing"], "relate").paths if f"dep-{bid}" in p.dependencies]
        assert walked and all("garden" in p.entities for p in walked)
    finally:
        again.state.close()


@pytest.mark.parametrize("switch, message", [
    ("staleness", "emergence.staleness is not a switch: self-regulating exploration is "
                  "task.explorer_regulation=true in the trainer (settings: task.regulator), and "
                  "emergence.regulation=true in the service (settings: emergence.exploration)"),
    ("cold_tier", "emergence.cold_tier is not a switch: rows move to the cold tier only offline, on a store "
                  "copy (signet_rl.emergence.cold.move_to_cold, e.g. with the pruning plan that "
                  "emergence.health=true writes to artifacts/emergence/pruning.json); nothing moves while "
                  "training or serving"),
    ("prewarm", "emergence.prewarm is the trainer's switch; the service's temporal pre-warm is --prewarm "
                "(Service(prewarm=PrewarmConfig()))"),
])
def test_a_switch_the_service_has_no_mechanism_for_is_refused(served, store, tmp_path, capsys, switch,
                                                              message):
    """Audit of issue 29: ``--emergence staleness`` (or cold_tier, prewarm) used to start a service with
    emergence silently off; now the start is refused, naming the switch and where its mechanism is, and no
    state file is left behind."""
    from signet_rl.serve import main

    state = tmp_path / "state.sqlite"
    with pytest.raises(ValueError) as err:
        Service(store, served["artifact"], state, emergence={switch: True})
    assert str(err.value) == message
    assert not state.exists()
    code = main(["--db", str(store), "--policy", str(served["artifact"]), "--state", str(state),
                 "--emergence", f"health,{switch}"])
    assert (code, capsys.readouterr().err) == (2, f"error: {message}\n")
    assert not state.exists()
