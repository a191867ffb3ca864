"""Entity and community health on a hand-made feedback log, and the pruning plan."""

from __future__ import annotations

import pandas as pd
import pytest

from signet_rl.emergence.health import (
    HealthThresholds,
    PruningPlan,
    community_health,
    entity_health,
    plan_pruning,
)
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
)
from signet_rl.learning.feedback_log import FeedbackRecord

T0 = pd.Timestamp("2026-01-01", tz="UTC")


def graph(communities: bool = True) -> KnowledgeGraph:
    """e0 -d01-> e1 -d12-> e2; e3 has one attribute and no edge; e4 and e5 (pinned) are isolated; with
    ``communities``, c0 = {e0, e1, e2} and c1 = {e3, e4} (else none, as on the synthetic benchmark)."""
    ents = [Entity(id=f"e{i}", name=f"n{i}", pinned=i == 5) for i in range(6)]
    ents.append(Entity(id="p0", name="principle 0", entity_type="principle"))
    return KnowledgeGraph.from_records(
        entities=ents,
        dependencies=[Dependency(id="d01", source_entity_id="e0", target_entity_id="e1",
                                 dependency_type="uses"),
                      Dependency(id="d12", source_entity_id="e1", target_entity_id="e2",
                                 dependency_type="uses")],
        aspects=[Aspect(id="a3", entity_id="e3", name="habits"),
                 Aspect(id="a0", entity_id="e0", name="facts")],
        attributes=[Attribute(id="t3", aspect_id="a3", content="walks at dawn"),
                    Attribute(id="t0", aspect_id="a0", content="a", status="superseded")],
        communities=[Community(id="c0"), Community(id="c1")] if communities else [],
        community_members=([CommunityMember(community_id="c0", entity_id=e) for e in ("e0", "e1", "e2")]
                           + [CommunityMember(community_id="c1", entity_id=e) for e in ("e3", "e4")])
        if communities else [],
    )


def record(step: int, paths: list[str], ratings: list[float | None], day: int = 0) -> FeedbackRecord:
    n = len(paths)
    return FeedbackRecord(
        run_id="r", step=step, query_id=f"q{step}", timestamp=T0 + pd.Timedelta(days=day), session="s",
        intent="what", context={"entries": ["e0"], "graph_id": "g"}, candidates=paths,
        candidate_scores=[0.5] * n, shown=list(range(n)), positions=list(range(n)), pscores=[1.0] * n,
        ratings=ratings, explorer=[False] * n, policy_version="v0")


def log() -> list[FeedbackRecord]:
    recs = []
    # e0 -> e1 walked and rated down 3 times of 4: e0 and e1 sick; e2 (via d12) up 1, down 0.
    for step, r in enumerate([-1, -1, 1, -1]):
        recs.append(record(step, ["E:e0>D+:d01>E:e1"], [r]))
    recs.append(record(4, ["E:e1>D+:d12>E:e2"], [0]))
    # e3's attribute liked 5 times: busy on sparse structure -> under-mapped.
    for step in range(5, 10):
        recs.append(record(step, ["E:e3>A:a3>T:t3", "E:e4"], [1, None]))  # e4 shown, never rated
    return recs


def test_entity_statuses_from_a_hand_made_log() -> None:
    h = entity_health(graph(), log()).set_index("entity_id")
    assert h["status"].to_dict() == {"e0": "sick", "e1": "sick", "e2": "healthy", "e3": "under-mapped",
                                     "e4": "unused", "e5": "unused", "p0": "unused"}
    assert h.loc["e1", ["rated", "positive", "negative"]].tolist() == [5, 1, 3]
    assert h.loc["e1", "mean_rating"] == pytest.approx(-0.4)
    assert h.loc["e3", "degree"] == 1 and h.loc["e0", "degree"] == 1  # the superseded t0 does not count
    assert h.loc["e1", "degree"] == 2


def test_thresholds_are_parameters() -> None:
    h = entity_health(graph(), log(), thresholds=HealthThresholds(sick_share=0.8, sparse_degree=0))
    assert h.set_index("entity_id")["status"].to_dict()["e0"] == "healthy"  # 3/4 negative < 0.8
    assert h.set_index("entity_id")["status"].to_dict()["e3"] == "healthy"  # degree 1 > 0
    with pytest.raises(ValueError, match=r"HealthThresholds.sick_share must be in \(0, 1\], got 1.5"):
        HealthThresholds(sick_share=1.5)


def test_community_health_sums_members() -> None:
    c = community_health(graph(), entity_health(graph(), log())).set_index("community_id")
    assert c.loc["c0", ["members", "rated", "negative"]].tolist() == [3, 10, 6]
    assert c.loc["c0", "mean_rating"] == pytest.approx(-0.4)
    assert c["status"].to_dict() == {"c0": "sick", "c1": "under-mapped"}  # 6/10 negative >= 0.6
    lenient = community_health(graph(), entity_health(graph(), log()),
                               HealthThresholds(sick_share=0.7)).set_index("community_id")
    assert lenient.loc["c0", "status"] == "healthy"


def test_community_health_falls_back_to_detected_communities_on_a_graph_without_any() -> None:
    """Audit of issue 29: on a graph that carries no communities (synthetic v2/v3) per-community health was
    empty; ``auto`` (the default) now runs Leiden, and the e0-e1-e2 chain is one community again."""
    bare = graph(communities=False)
    assert bare.community_members.empty
    health = entity_health(bare, log())
    c = community_health(bare, health).set_index("community_id")
    assert c["members"].sum() == bare.num_entities and all(i.startswith("leiden:") for i in c.index)
    (chain,) = [i for i in c.index if c.loc[i, "members"] == 3]
    assert c.loc[chain, ["members", "rated", "negative"]].tolist() == [3, 10, 6]
    assert c.loc[chain, "status"] == "sick"  # as c0 on the graph that names it
    assert community_health(bare, health, community_source="graph").empty  # the graph's own: none
    own = community_health(graph(), entity_health(graph(), log()), community_source="detect")
    assert set(own["community_id"]) == set(c.index)  # detect ignores the graph's own
    with pytest.raises(ValueError, match=r"^community_source must be 'graph', 'detect' or 'auto', got 'x'$"):
        community_health(bare, health, community_source="x")


def test_pruning_uses_training_feedback_only_and_keeps_pinned_and_principles() -> None:
    recs = [*log(), record(20, ["E:e4"], [1], day=10)]  # e4 rated after training ended
    plan = plan_pruning(graph(), recs, until=T0 + pd.Timedelta(days=5))
    assert plan.unused == ("e4",) and plan.sick == ("e0", "e1")
    assert plan.kept == {"e5": "pinned", "p0": "principle"}
    assert plan.entity_ids == ("e4", "e0", "e1")
    later = plan_pruning(graph(), recs, until=None)
    assert later.unused == ()


def test_a_saved_plan_loads_back_equal_and_a_bad_file_is_named(tmp_path) -> None:
    plan = plan_pruning(graph(), log(), until=T0 + pd.Timedelta(days=5))
    path = plan.save(tmp_path / "plan.json")
    assert PruningPlan.load(path) == plan and PruningPlan.load(path).entity_ids == ("e4", "e0", "e1")
    assert PruningPlan.from_dict(PruningPlan(None, (), ()).to_dict()).until is None
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.json: not JSON \(line 1: "):
        PruningPlan.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"missing.json: cannot read the pruning plan \(No such file"):
        PruningPlan.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=r"^p: not a pruning plan \(expected format "
                                         r"'signet_rl.pruning_plan/1', got None\)$"):
        PruningPlan.from_dict({"unused": []}, where="p")
    with pytest.raises(ValueError) as old:  # a plan saved before the format key (review 54 #10)
        PruningPlan.from_dict({"until": None, "unused": ["e1"], "sick": [], "kept": {}}, where="p")
    assert str(old.value) == (
        "p: not a pruning plan (expected format 'signet_rl.pruning_plan/1', got None); it looks like a plan "
        "saved before plans carried a format: regenerate it (rerun the training command with "
        "emergence.health=true, which writes artifacts/emergence/pruning.json, or `python "
        "experiments/emergence_report.py --part pruning --save-plans DIR`), or add \"format\": "
        "\"signet_rl.pruning_plan/1\" to it (the layout, until, unused, sick and kept, is the same)")
    legacy = {"format": "signet_rl.pruning_plan/1", "until": None, "unused": ["e1"], "sick": [], "kept": {}}
    assert PruningPlan.from_dict(legacy).unused == ("e1",)  # the advice works
    good = plan.to_dict()
    with pytest.raises(ValueError, match=r"^p: 'sick' must be a list of entity ids \(non-empty strings\), "
                                         r"got \['e0', 3\]$"):
        PruningPlan.from_dict({**good, "sick": ["e0", 3]}, where="p")
    with pytest.raises(ValueError, match=r"^p: entity 'e0' is listed both unused and sick$"):
        PruningPlan.from_dict({**good, "unused": ["e0"]}, where="p")
    with pytest.raises(ValueError, match=r"^p: 'until' is not a timestamp: 'soon'$"):
        PruningPlan.from_dict({**good, "until": "soon"}, where="p")


def test_bad_logs_are_named() -> None:
    with pytest.raises(ValueError, match=r"feedback record r/0/q0: candidate 'p-1234' is not a path "
                                         r"serialisation"):
        entity_health(graph(), [record(0, ["p-1234"], [1])])
    undated = FeedbackRecord(**{**record(3, ["E:e0"], [1]).__dict__, "timestamp": None})
    with pytest.raises(ValueError, match=r"feedback record r/3/q3 is undated"):
        plan_pruning(graph(), [undated], until=T0)


def test_only_passing_mentions_are_pruned_when_mentions_are_read() -> None:
    """u0: one memory, alone (a passing mention); u1: two memories; u2: one memory shared with u3; u3 and
    u4 written after the cutoff, u4 alone. None is on a rated path."""
    from signet_rl.graph.model import Memory, Mention

    day = [T0 + pd.Timedelta(days=d) for d in range(10)]
    mems = [("m0", 1, ["u0"]), ("m1", 1, ["u1"]), ("m2", 2, ["u1"]), ("m3", 2, ["u2", "u3"]),
            ("m4", 8, ["u4"]), ("m5", 8, ["u3"])]
    g = KnowledgeGraph.from_records(
        entities=[Entity(id=f"u{i}", name=f"u{i}") for i in range(5)],
        memories=[Memory(id=m, content=m, created_at=day[d]) for m, d, _ in mems],
        mentions=[Mention(memory_id=m, entity_id=e) for m, _, es in mems for e in es],
    )
    until = day[5]
    passing = HealthThresholds(max_mentions=1, max_co_mentioned=0)
    plan = plan_pruning(g, [], until=until, thresholds=passing)
    assert plan.unused == ("u0",)
    assert plan.kept == {"u1": "mentioned again", "u2": "co-mentioned", "u3": "co-mentioned",
                         "u4": "not yet written"}
    once = HealthThresholds(max_mentions=1)
    assert plan_pruning(g, [], until=until, thresholds=once).unused == ("u0", "u2", "u3")
    assert plan_pruning(g, [], until=until).unused == ("u0", "u1", "u2", "u3", "u4")  # mentions not read
    with pytest.raises(ValueError, match=r"HealthThresholds.max_mentions must be None or an integer >= 0, "
                                         r"got -1"):
        HealthThresholds(max_mentions=-1)
