"""Issue 29 §6 in a running service (real uvicorn on loopback, started by the test): a principle verb or a
bridge promotion changes the walks of the very next recall (no restart), and a restart's replay of the
verb and feedback logs gives the same graph and the same learned statistics."""

from __future__ import annotations

import gc
import weakref

import httpx
import pytest
from fastapi.testclient import TestClient

from signet_rl.serving.app import Service, create_app
from signet_rl.serving.state import IssuedResult
from tests.emergence.test_principles import THREE
from tests.emergence.test_principles import graph as principle_graph
from tests.serving.conftest import live_server

ON = {"principles": True, "bridges": True, "health": True, "bridge": {"promote_after": 2}}
REINDEXED = 3


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
        first = weakref.ref(svc.arrays)  # the view served before the re-indexes

        got = c.post("/api/emergence/principles/principle-nope", json={"verb": "reject"})
        assert (got.status_code, got.json()["error"]) == (404, (
            f"cannot reject principle 'principle-nope': it does not exist; known principles: {pid}; nothing "
            "was recorded"))
        assert svc.reindexed == 0 and svc.emergence.verbs() == []

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
        assert svc.reindexed == REINDEXED  # reject, confirm, promotion
        # each re-index dropped the old view: one graph's statistics and scorer state are kept, not one per
        # re-index
        scorer = svc.policy.scorer
        assert (len(svc.policy._stats), len(scorer._graphs), len(scorer._edge_stats_of)) == (1, 1, 1)
        assert next(iter(scorer._graphs.values())).arrays is svc.arrays
        gc.collect()
        assert first() is None  # nothing (scorer, base scores' PPR and prior caches, statistics) kept it
    svc.state.close()

    again = Service(store, served["artifact"], state, emergence=ON)  # the logs are the truth: replayed
    try:
        assert _state_of(again) == live
        assert again.emergence.principles()[0]["status"] == "confirmed"
    finally:
        again.state.close()


def test_pruning_plan_is_kept_in_the_service_file_and_never_applied_to_the_store(store, served, tmp_path):
    import hashlib
    import sqlite3

    from signet_rl.emergence.health import PruningPlan

    state = tmp_path / "state.sqlite"
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    svc = Service(store, served["artifact"], state, emergence={"principles": True, "health": True})
    pid = svc.emergence.principles()[0]["id"]

    def rows() -> int:
        with sqlite3.connect(state) as db:
            return int(db.execute("SELECT COUNT(*) FROM emergence_pruning").fetchone()[0])

    with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
        got = c.get("/api/emergence/pruning")
        assert got.status_code == 404 and got.json()["detail"].startswith("no pruning plan yet")
        hit = next(p for p in c.post("/api/memory/recall", json={
            "query": "what about billing", "sessionKey": "s", "limit": 50}).json()["results"]
            if p["path"]["entities"] == ["billing", "billing-db"])
        for i in range(3):  # three rated walks through billing and billing-db
            assert c.post("/api/memory/feedback", json={"sessionKey": "s", "results": {
                hit["id"]: {"rating": 1 if i else 0.5, "idempotencyKey": f"k{i}"}}}).status_code == 200

        got = c.post("/api/emergence/pruning", json={"until": "yesterday-ish"})
        assert (got.status_code, got.json()["error"]) == (
            422, "until: 'yesterday-ish' is not an ISO 8601 time; no pruning plan was computed or stored")
        assert c.post("/api/emergence/pruning", json={"until": None, "entity": "billing"}).status_code == 422
        assert rows() == 0  # nothing written

        early = c.post("/api/emergence/pruning", json={"until": "2000-01-01T00:00:00Z"}).json()
        assert (early["until"], early["rated_paths"], early["feedback_seq"]) == (
            "2000-01-01T00:00:00+00:00", 0, 0)
        assert early["plan"]["kept"] == {pid: "principle"}  # principles are never pruned
        assert set(early["plan"]["unused"]) == set(svc.graph.entities["id"]) - {pid}

        now = c.post("/api/emergence/pruning", json={}).json()
        assert now["rated_paths"] == 3 and now["feedback_seq"] == 3 and not now["store_written"]
        assert {"billing", "billing-db"}.isdisjoint(now["plan"]["unused"] + now["plan"]["sick"])
        assert now["health"]["entities"]["healthy"] == 2
        assert now["apply"].startswith("applied only offline, on a copy of the store") and \
            "python -m signet_rl.emergence prune STORE --plan PLAN.json --copy-to OUT.db" in now["apply"]
        assert c.get("/api/emergence/pruning").json() == now
        assert c.get("/api/emergence/health").json()["last_snapshot"] == {
            k: now[k] for k in ("seq", "computed_at", "until")}
        plan = PruningPlan.from_dict(now["plan"])
        assert PruningPlan.load(plan.save(tmp_path / "plan.json")) == plan  # what the offline command reads
    svc.state.close()
    assert rows() == 2
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before  # the store is never written

    again = Service(store, served["artifact"], state, emergence={"principles": True, "health": True})
    try:
        assert again.emergence.pruning() == now  # kept across a restart
        overview = TestClient(create_app(again)).get("/api/emergence").json()
        assert overview["health"] == now["health"]["entities"] and overview["principles_by_status"] == {
            "proposed": 1}
        assert {k: overview["pruning"][k] for k in ("unused", "sick", "kept")} == {
            k: now["plan"][k] for k in ("unused", "sick", "kept")}
    finally:
        again.state.close()


def test_serve_describe_prints_the_service_emergence_block(store, served, tmp_path, capsys):
    from signet_rl.serve import main

    state = tmp_path / "state.sqlite"
    svc = Service(store, served["artifact"], state, emergence={"principles": True, "health": True})
    pid = svc.emergence.principles()[0]["id"]
    svc.principle_verb(pid, "confirm")
    svc.emergence.prune([], "2026-01-01T00:00:00Z")
    svc.state.close()
    args = ["describe", "--db", str(store), "--policy", str(served["artifact"]), "--state", str(state)]
    assert main([*args, "--emergence", "principles,health"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "emergence (issue 29):"
    assert "  entity health:    unused 7" in out
    assert "  pruning plan (feedback until 2026-01-01T00:00:00+00:00): 6 unused, 0 sick, 1 kept (pinned or " \
           "principle)" in out
    assert "  principles: confirmed 1" in out
    assert main(args) == 2 and "give the --emergence switches" in capsys.readouterr().err
    # the constellation of the served graph: the principle drawn, each entity's health on it
    png, html = tmp_path / "service.png", tmp_path / "service.html"
    assert main([*args, "--emergence", "principles,health", "--picture", str(png), str(html)]) == 0
    text = html.read_text()
    assert png.stat().st_size > 1000 and pid in text and "health: unused" in text


def test_explorer_slots_are_regulated_per_session_by_staleness_and_kept_across_a_restart(served, tmp_path):
    """A hand-made timeline: the same query every session. Session 3 sees a stale timeline (the same paths,
    no new entities or edges) and gets more explorer slots, within the quota bounds; its explorers all rated
    negative, exploration stops paying and session 4 is back at the base quota. A restart continues it."""
    import json
    import math

    from signet_rl.serving.app import report

    state, q = tmp_path / "state.sqlite", "what is behind buhowi-db?"
    on = {"regulation": True}
    svc = Service(served["store"], served["artifact"], state, emergence=on)

    def recall(c: httpx.Client, session: str) -> list[dict]:
        got = c.post("/api/memory/recall", json={"query": q, "sessionKey": session, "limit": 50})
        assert got.status_code == 200, got.text
        return got.json()["results"]

    with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
        ex = [r for r in recall(c, "s1") if r["system"] == "explorer"]
        shown = list(ex)
        assert len(ex) == 1 and ex[0]["explorer"] and ex[0]["propensity"] == 1.0 and ex[0]["path"]["entities"]
        s1 = c.get("/api/emergence/exploration", params={"session": "s1"}).json()["sessions"][0]
        assert (s1["slots"], s1["used"], s1["regulated"], s1["signals"]) == (1, 1, True, {})
        assert not [r for r in recall(c, "s1") if r["system"] == "explorer"]  # the session's slot is spent

        shown += [r for r in recall(c, "s2") if r["system"] == "explorer"]
        assert len(shown) == 2  # s1 was a first session: never stale
        stale = [r for r in recall(c, "s3") if r["system"] == "explorer"]
        shown += stale
        s3 = c.get("/api/emergence/exploration", params={"session": "s3"}).json()["sessions"][0]
        signals = s3["signals"]
        assert (signals["session"], signals["repeat_share"], signals["new_items"]) == ("s2", 1.0, 0)
        assert s3["staleness"] == pytest.approx(2 / 3)
        # stale: the seed's bounds, at least 2 and up to 30% of the slate slots the last session showed
        assert s3["slots"] == max(2, math.floor(0.3 * signals["slots"])) == len(stale) >= 2

        compared = json.dumps(report(state), sort_keys=True, default=str)
        for i, r in enumerate(shown):  # every explorer of the window rated negative: exploration stops paying
            assert c.post("/api/memory/feedback", json={"sessionKey": "s", "results": {
                r["id"]: {"verb": "reject", "idempotencyKey": f"x{i}"}}}).status_code == 200
        # explorer results are outside the mixed slates: their ratings leave the win rate and OPE as they were
        assert json.dumps(report(state), sort_keys=True, default=str) == compared
        assert len([r for r in recall(c, "s4") if r["system"] == "explorer"]) == 1
        now = c.get("/api/emergence/exploration").json()
        assert now["current"]["session_key"] == "s4" and now["current"]["slots"] == 1
        assert (now["current"]["signals"]["explorer_rated"], now["current"]["signals"]["explorer_hits"]) == (
            len(shown), 0)

        # bad requests: named, nothing written
        got = c.get("/api/emergence/exploration", params={"session": "nope"})
        assert (got.status_code, got.json()["error"]) == (
            404, "unknown session 'nope': no recall of it has been given explorer slots yet")
        assert c.get("/api/emergence/exploration", params={"last": 0}).status_code == 422
        assert c.get("/api/emergence/exploration").json()["sessions_decided"] == 4
    r = report(state)  # explorer results are outside the mixed slates: the comparison still reads them
    assert r["recalls"] == 5
    svc.state.close()

    again = Service(served["store"], served["artifact"], state, emergence=on)
    try:
        client = TestClient(create_app(again))
        assert client.get("/api/emergence/exploration").json() == now  # the regulator's state is kept
        from signet_rl.evaluation.describe import emergence_lines

        lines = emergence_lines(client.get("/api/emergence").json())
        assert ("  explorer slots: regulated by staleness, 4 sessions decided; latest 's4': 1 slots, 1 used, "
                f"staleness {now['current']['staleness']:.2f}") in lines
        assert not [x for x in client.post("/api/memory/recall", json={
            "query": q, "sessionKey": "s4", "limit": 50}).json()["results"] if x["system"] == "explorer"]
    finally:
        again.state.close()

    fixed = Service(served["store"], served["artifact"], tmp_path / "fixed.sqlite",
                    emergence={"explorer": True})
    try:
        client = TestClient(create_app(fixed))
        for s in ("s1", "s2", "s3"):  # a fixed quota: one slot every session, stale or not
            got = client.post("/api/memory/recall", json={"query": q, "sessionKey": s, "limit": 50}).json()
            assert len([x for x in got["results"] if x["system"] == "explorer"]) == 1
        assert {x["slots"] for x in client.get("/api/emergence/exploration").json()["sessions"]} == {1}
        got = client.post("/api/memory/recall", json={"query": q, "sessionKey": "", "limit": 50}).json()
        assert not [x for x in got["results"] if x["system"] == "explorer"]  # an empty key is no session
        assert client.get("/api/emergence/exploration").json()["sessions_decided"] == 3
        assert fixed.emergence is None  # explorer slots alone switch no other mechanism on
    finally:
        fixed.state.close()


def test_a_verb_whose_index_fails_to_build_logs_and_changes_nothing(store, served, tmp_path, monkeypatch):
    from signet_rl.pipeline.desire import DesirePathRetriever

    svc = Service(store, served["artifact"], tmp_path / "state.sqlite", emergence=ON)
    try:
        client = TestClient(create_app(svc))
        pid = svc.emergence.principles()[0]["id"]
        desire, graph = svc.desire, svc.graph

        def broken(self, dataset):
            raise RuntimeError("out of memory while indexing")

        monkeypatch.setattr(DesirePathRetriever, "index", broken)
        with pytest.raises(RuntimeError, match="out of memory while indexing"):
            client.post(f"/api/emergence/principles/{pid}", json={"verb": "reject"})
        monkeypatch.undo()
        assert svc.emergence.verbs() == [] and svc.emergence.principles()[0]["status"] == "proposed"
        assert (svc.desire, svc.graph, svc.reindexed) == (desire, graph, 0)  # still walking the old graph
        assert any(pid in path["entities"] for path in _walked(client))
    finally:
        svc.state.close()


def _bridge_crossing(svc: Service, n: int = 2) -> str:
    """``n`` issued results crossing the billing-garden bridge candidate (r_0, r_1, ...); its id."""
    (bid,) = [b["id"] for b in svc.emergence.bridges()["bridges"]
              if {b["entity_a"], b["entity_b"]} == {"billing", "garden"}]
    crossing = {"entities": ["billing"], "aspects": [], "attributes": ["t-garden"],
                "memory_ids": ["m-garden"], "dependencies": [], "kind": "constructed"}
    svc.state.issue([IssuedResult(f"r_{i}", "s", "q", "main", "desire", 0, 1.0, "what", 0, ("m-garden",),
                                  crossing, (), 0.5) for i in range(n)])
    return bid


def test_a_rating_whose_reindex_fails_is_acknowledged_and_the_reindex_is_retried(store, served, tmp_path,
                                                                                 monkeypatch, caplog):
    from signet_rl.pipeline.desire import DesirePathRetriever

    svc = Service(store, served["artifact"], tmp_path / "state.sqlite", emergence=ON)
    bid = _bridge_crossing(svc)
    graph = svc.graph

    def broken(self, dataset):
        raise RuntimeError("out of memory while indexing")

    try:
        with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
            monkeypatch.setattr(DesirePathRetriever, "index", broken)
            for i in range(2):  # the second promotes the bridge: its re-index fails
                got = c.post("/api/memory/feedback", json={
                    "sessionKey": "s", "results": {f"r_{i}": {"verb": "confirm", "idempotencyKey": f"k{i}"}}})
                assert (got.status_code, got.json()) == (200, {"ok": True, "recorded": 1, "acknowledged": 1})
            assert svc.emergence.bridges()["by_status"]["promoted"] == 1
            assert (svc.graph, svc.reindexed) == (graph, 0)  # still walking the old graph
            assert "re-indexing the changed emergence graph failed" in caplog.text
            monkeypatch.undo()
            crossed = [path for path in _walked(c) if f"dep-{bid}" in path["dependencies"]]
            assert crossed and svc.reindexed == 1  # the next recall re-indexed first, and walked the bridge
            assert svc.state.counts()["feedback"] == 2
    finally:
        svc.state.close()


def test_feedback_by_memory_id_rates_the_slate_result_not_the_explorer_that_showed_it_too(served, tmp_path):
    """An explorer result (issued after the mixed slate, outside it) and a slate result of one recall show
    the same memory: Signet-shaped feedback by memory id rates the slate's, which the comparison reads."""
    from signet_rl.serving.app import report

    state = tmp_path / "state.sqlite"
    svc = Service(served["store"], served["artifact"], state, emergence={"explorer": True})
    try:
        with live_server(create_app(svc)) as url, httpx.Client(base_url=url, timeout=30) as c:
            found = None
            for i, name in enumerate(svc.graph.entities["name"].tolist()[:20]):
                res = c.post("/api/memory/recall", json={
                    "query": f"what about {name}?", "sessionKey": f"s{i}", "limit": 10}).json()["results"]
                ex = [r for r in res if r["system"] == "explorer"]
                slate = [r for r in res if r["system"] != "explorer"]
                both = {m for r in ex for m in r["path"]["memory_ids"]} & {
                    m for r in slate for m in r["path"]["memory_ids"]}
                if both:
                    found = (f"s{i}", sorted(both)[0], slate)
                    break
            assert found is not None, "no recall showed a memory in both an explorer and a slate result"
            session, memory, slate = found
            got = c.post("/api/memory/feedback", json={"sessionKey": session, "feedback": {memory: 1}})
            assert got.status_code == 200 and got.json()["recorded"] == 1
            (rated,) = [fb.result_id for fb in svc.state.feedback()]
            assert rated in {r["id"] for r in slate if memory in r["path"]["memory_ids"]}
        assert report(state)["rated"] == 1  # the rated slate slot is in the comparison
    finally:
        svc.state.close()


def test_reindexing_keeps_one_graph_state_in_a_gnn_policy(store, gnn_artifact, tmp_path, caplog):
    """Each re-index drops the old view's statistics, tensors and edge-feature snapshot; the "other than
    its training graphs" warning is said once, not at every re-index."""
    import logging

    caplog.set_level(logging.WARNING, logger="signet_rl.serving.policy")
    svc = Service(store, gnn_artifact, tmp_path / "state.sqlite", emergence={"principles": True})
    try:
        client = TestClient(create_app(svc))
        pid = svc.emergence.principles()[0]["id"]
        assert _walked(client)
        first = weakref.ref(svc.arrays)
        for verb in ("reject", "confirm", "reject"):
            assert client.post(f"/api/emergence/principles/{pid}", json={"verb": verb}).status_code == 200
            assert _walked(client)  # scored on the new view
        scorer = svc.policy.scorer
        assert svc.reindexed == 3
        assert (len(svc.policy._stats), len(scorer._graphs), len(scorer._edge_stats_of),
                len(scorer._snapshot_of)) == (1, 1, 1, 1)
        assert caplog.text.count("other than its training graphs") == 1
        gc.collect()
        assert first() is None
    finally:
        svc.state.close()


def test_pruning_until_now_is_read_in_utc_and_a_future_until_is_refused(store, served, tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")  # a host nine hours ahead of UTC
    time.tzset()
    svc = Service(store, served["artifact"], tmp_path / "state.sqlite",
                  emergence={"principles": True, "health": True})
    try:
        client = TestClient(create_app(svc))
        now = client.post("/api/emergence/pruning", json={"until": "now"}).json()
        assert now["until"] == now["computed_at"]  # now in UTC, not the host's local time read as UTC
        got = client.post("/api/emergence/pruning", json={"until": "2999-01-01T00:00:00"})
        assert got.status_code == 422 and got.json()["error"].startswith(
            "until: '2999-01-01T00:00:00' is later than now (20")
        assert got.json()["error"].endswith("); no pruning plan was computed or stored")
        assert client.get("/api/emergence/pruning").json() == now  # nothing stored
    finally:
        svc.state.close()
        monkeypatch.undo()
        time.tzset()
