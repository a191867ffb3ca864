"""The trainer-side component: bridges rated from a feedback log, principles, health; written, read back."""

from __future__ import annotations

import pandas as pd
import pytest
from omegaconf import OmegaConf

from signet_rl.emergence.bridges import BridgeError, BridgeTracker, find_bridges
from signet_rl.emergence.components import after_training, bridge_ratings, read_outcome
from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.health import PruningPlan
from signet_rl.graph.model import Entity, KnowledgeGraph
from signet_rl.learning.feedback_log import FeedbackRecord
from tests.emergence.test_bridges import graph as bridge_graph

T0 = pd.Timestamp("2026-01-01", tz="UTC")


def record(step: int, entries: list[str], path: str, rating: float | None, day: int = 0) -> FeedbackRecord:
    return FeedbackRecord(
        run_id="r", step=step, query_id=f"q{step}", timestamp=T0 + pd.Timedelta(days=day), session="s",
        intent="what", context={"entries": entries, "graph_id": "main"}, candidates=[path],
        candidate_scores=[0.5], shown=[0], positions=[0], pscores=[1.0], ratings=[rating], explorer=[True],
        policy_version="v0")


ACROSS = "E:e2>A:a-e2>T:t-e2"  # e2's side of the e0-e2 bridge, shown to a query that entered at e0


def test_bridge_ratings_count_paths_that_crossed_a_bridge() -> None:
    tracker = BridgeTracker()
    tracker.add(find_bridges(bridge_graph(), ["t-e0"]))
    (bid,) = tracker.states
    recs = [record(0, ["e0"], ACROSS, 1), record(1, ["e1"], ACROSS, 1),  # entered elsewhere: not across
            record(2, ["e0"], ACROSS, None), record(3, ["e0"], "E:e0>A:a-e0>T:t-e0", -1),  # own side
            record(4, ["e2"], "E:e0>A:a-e0>T:t-e0", -1)]
    assert bridge_ratings(tracker, recs) == [(bid, 1), (bid, -1)]


def test_after_training_promotes_a_bridge_the_log_rates_up_and_writes_what_describe_reads(tmp_path) -> None:
    config = EmergenceConfig.from_mapping({"bridges": True, "health": True, "principles": True,
                                           "bridge": {"promote_after": 2}})
    recs = [record(i, ["e0"], ACROSS, 1, day=i) for i in range(3)] + [record(9, ["e0"], ACROSS, -1, day=9)]
    out = after_training(config, bridge_graph(), recs, until=T0 + pd.Timedelta(days=5), at=T0)
    (state,) = [s for s in out.bridges.states.values()
                if {s.bridge.entity_a, s.bridge.entity_b} == {"e0", "e2"}]
    assert len(out.bridges.states) == 2  # e2-e3 too (e3 is linked to e0 only); no path crossed it
    assert (state.status, state.positive, state.negative) == ("promoted", 3, 1)
    dep = out.graph.dependencies.set_index("id").loc[state.dependency_id]
    assert (dep["source_entity_id"], dep["target_entity_id"], dep["reason"]) == ("e0", "e2", "inferred")
    # promoted `pattern-matched` at the 2nd positive; the 3rd is half a climb; the negative: one rung down
    # health judged on the training period only: the day-9 negative is after `until`
    h = out.health.set_index("entity_id")
    assert h.loc["e2", ["rated", "positive", "negative"]].tolist() == [3, 3, 0]
    assert out.pruning.unused == ("e0", "e1", "e3") and out.pruning.sick == ()
    assert out.principles == []  # no decision pattern across three communities here
    out.write(tmp_path)
    got = read_outcome(tmp_path)
    assert got["enabled"] == ["health", "bridges", "principles"]
    assert got["health"] == {"healthy": 1, "unused": 3}
    assert got["bridges"]["by_status"] == {"candidate": 1, "promoted": 1, "faded": 0}
    assert got["bridges"]["promoted"][0]["dependency_id"] == state.dependency_id
    assert got["pruning"]["unused"] == ["e0", "e1", "e3"] and got["principles"] == []
    # the saved plan is the input of ``python -m signet_rl.emergence prune``
    assert PruningPlan.load(tmp_path / "emergence" / "pruning.json") == out.pruning
    assert read_outcome(tmp_path / "nothing") == {}


def test_all_off_runs_nothing() -> None:
    out = after_training(EmergenceConfig(), bridge_graph(), [record(0, ["e0"], ACROSS, 1)], until=None)
    assert out.health is None and out.bridges is None and out.pruning is None and out.principles == []
    assert out.graph.equals(bridge_graph())


def test_promoting_a_bridge_to_a_deleted_entity_names_it_and_adds_no_edge() -> None:
    tracker = BridgeTracker(promote_after=1)
    tracker.add(find_bridges(bridge_graph(), ["t-e0"]))
    (bid,) = tracker.states
    g = bridge_graph()
    keep = g.aspects["entity_id"] != "e2"
    gone = g.replace(entities=g.entities[g.entities["id"] != "e2"].reset_index(drop=True),
                     aspects=g.aspects[keep].reset_index(drop=True),
                     attributes=g.attributes[g.attributes["aspect_id"].isin(g.aspects.loc[keep, "id"])]
                     .reset_index(drop=True))
    before = tracker.states[bid]
    with pytest.raises(BridgeError, match=rf"bridge '{bid}' joins entity 'e2', which is no longer in the "):
        tracker.rate(gone, bid, +1)  # this rating would promote it
    assert tracker.states[bid] == before and len(gone.dependencies) == 1


def _entry_check(ds, trainer, tmp_path) -> None:
    from signet_rl.train import _emergence_after_training

    off = OmegaConf.create({"encoder": "hashing", "emergence": {"bridges": False, "principles": False,
                                                                 "health": False}})
    _emergence_after_training(off, ds, trainer, tmp_path / "off")
    assert not (tmp_path / "off").exists()
    on = OmegaConf.create({"encoder": "hashing", "emergence": {"health": True}})
    _emergence_after_training(on, ds, trainer, tmp_path / "on")
    got = read_outcome(tmp_path / "on")
    assert got["enabled"] == ["health"] and sum(got["health"].values()) == len(ds.graphs["main"].entities)
    assert set(got) == {"enabled", "health", "communities", "pruning"}
    bad = OmegaConf.create({"encoder": "hashing", "emergence": {"health": "yes"}})
    with pytest.raises(ValueError, match=r"emergence.health must be true or false, got 'yes'"):
        _emergence_after_training(bad, ds, trainer, tmp_path / "bad")


def test_the_train_entry_writes_the_outcome_only_when_switched_on(tmp_path) -> None:
    from types import SimpleNamespace

    from signet_rl.core.types import Query

    q = Query(id="q0", text="coffee", graph_id="main", split="train", timestamp=T0 + pd.Timedelta(days=5))
    ds = SimpleNamespace(graphs={"main": bridge_graph()})  # what the entry reads of a dataset and a trainer
    trainer = SimpleNamespace(train_queries=[q], log=[record(0, ["e0"], ACROSS, 1)])
    _entry_check(ds, trainer, tmp_path)
    assert read_outcome(tmp_path / "on")["health"] == {"healthy": 1, "unused": 3}


@pytest.mark.slow
def test_the_train_entry_after_a_real_bandit_run(tmp_path) -> None:
    from signet_rl.datasets.synthetic_v2 import generate_v2
    from signet_rl.learning.trainer import BanditConfig, BanditTrainer
    from signet_rl.scorers import make_scorer

    ds = generate_v2("tiny", seed=3)
    trainer = BanditTrainer(ds, make_scorer("linucb"),
                            BanditConfig(eval_every=0, checkpoint_every=0, max_interactions=30),
                            progress=False)
    trainer.run()
    _entry_check(ds, trainer, tmp_path)


def test_a_graph_without_entities_is_handled() -> None:
    empty = KnowledgeGraph.from_records(entities=[Entity(id="x", name="x")])
    out = after_training(EmergenceConfig(health=True, bridges=True), empty, [], until=None)
    assert out.health["status"].tolist() == ["unused"] and out.bridges.states == {}
