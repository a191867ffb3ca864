"""Explorers walk into cold territory inside the bandit trainer: a positive rating brings an entity back."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from signet_rl.datasets.base import Dataset
from signet_rl.emergence.cold import ColdSplit, ColdTierError, cold_frontier, move_to_cold
from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.health import PruningPlan
from signet_rl.emergence.rediscovery import ColdExplorer, RediscoveryParams
from signet_rl.graph.store import read_graph, write_graph
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.scorers import make_scorer
from signet_rl.train import _emergence_after_training, _emergence_rediscovery
from signet_rl.traversal.path import HopKind
from signet_rl.traversal.path import Path as TPath


def needed_entities(ds: Dataset) -> Counter[str]:
    """How many training queries need a fact of each entity (the test's choice of what to prune only)."""
    g = ds.graph
    owner = dict(zip(g.attributes["id"], g.attribute_entity_ids(), strict=True))
    return Counter(owner[i] for q in ds.split("train") for i in ds.truth[q.id].needed if i in owner)


def walked_entities(trainer: BanditTrainer, after_step: int) -> set[str]:
    """Entities on the policy's own (non-explorer) candidate paths logged after ``after_step``."""
    out: set[str] = set()
    for rec in trainer.log.records:
        if rec.step <= after_step:
            continue
        for text in rec.candidates:
            path = TPath.parse(text)
            out.update(h.id for h in path.hops if h.kind is HopKind.ENTITY)
    return out


@pytest.fixture(scope="module")
def pruned(tiny: Dataset) -> list[str]:
    return [e for e, _ in needed_entities(tiny).most_common(10)]


def trainer_of(ds: Dataset, run_dir: Path | None = None, checkpoint_every: int = 0) -> BanditTrainer:
    """A quiet prior-scorer trainer: 2 epochs, 2 explorer slots per session, seed 3."""
    cfg = BanditConfig(epochs=2, explorer_per_session=2, eval_every=0, checkpoint_every=checkpoint_every)
    return BanditTrainer(ds, make_scorer("prior"), cfg, traversal={"max_depth": 2}, seed=3, progress=False,
                         run_dir=run_dir)


def run(tiny: Dataset, cold: list[str]) -> tuple[BanditTrainer, ColdExplorer]:
    trainer = trainer_of(tiny)
    explorer = ColdExplorer(tiny.graphs, {"main": cold})
    trainer.use_cold_explorer(explorer)
    trainer.run()
    return trainer, explorer


def test_an_explorer_rediscovers_a_needed_pruned_entity_and_later_walks_reach_it(
        tiny: Dataset, prior_trainer: Callable[..., BanditTrainer], pruned: list[str]) -> None:
    trainer, explorer = run(tiny, pruned)
    assert trainer.retriever._state("main").graph.num_entities <= tiny.graph.num_entities
    owner = dict(zip(tiny.graph.attributes["id"], tiny.graph.attribute_entity_ids(), strict=True))
    back = [e for e in explorer.events if e["restored"]]
    assert back, "no cold path earned a positive rating"
    # the rediscovery was the trainer's explorer slot, rated by the rater for a query that needed it
    first = next(e for e in back if any(owner.get(i) == e["entity_id"]
                                        for i in tiny.truth[e["query_id"]].needed))
    entity = first["entity_id"]
    rec = next(r for r in trainer.log.records if r.step == first["step"] and r.query_id == first["query_id"])
    slot = next(j for j, i in enumerate(rec.shown) if f"E:{entity}>" in rec.candidates[i])
    assert rec.explorer[slot] and rec.pscores[slot] == 1.0 and rec.ratings[slot] == 1.0
    assert TPath.parse(rec.candidates[rec.shown[slot]]).hops[2].id == entity  # hot > dep > cold entity
    # hot again: in the graph the policy walks, off the cold tier, and later walks reach it
    hot = trainer.retriever._state("main")
    assert entity in set(hot.graph.entities["id"]) and entity not in explorer.splits["main"].cold
    assert trainer.stats["main"].num_edges == hot.arrays.num_dependencies
    assert entity in walked_entities(trainer, first["step"])
    assert explorer.restored["main"][0] == back[0]["entity_id"]


def test_a_cold_path_rated_negative_or_noise_stays_cold(tiny: Dataset,
                                                        prior_trainer: Callable[..., BanditTrainer],
                                                        pruned: list[str]) -> None:
    trainer, explorer = run(tiny, pruned)
    refused = {e["entity_id"] for e in explorer.events} - set(explorer.restored.get("main", []))
    assert refused, "every cold entity an explorer reached was restored"
    hot = set(trainer.retriever._state("main").graph.entities["id"])
    for entity in refused:
        ratings = [e["rating"] for e in explorer.events if e["entity_id"] == entity]
        assert all(r is None or r <= 0 for r in ratings)
        assert entity in explorer.splits["main"].cold and entity not in hot
    # the policy's own walks never reach a cold entity (only explorer slots do)
    walked = set()
    for rec in trainer.log.records:
        for i, text in enumerate(rec.candidates):
            if i not in rec.shown or not rec.explorer[rec.shown.index(i)]:
                walked.update(h.id for h in TPath.parse(text).hops if h.kind is HopKind.ENTITY)
    assert walked.isdisjoint(refused)


def test_a_cold_entity_that_missed_max_misses_times_is_not_proposed_again(tiny: Dataset,
                                                                        pruned: list[str]) -> None:
    trainer = trainer_of(tiny)
    explorer = ColdExplorer(tiny.graphs, {"main": pruned}, RediscoveryParams(reach="frontier", max_misses=1))
    trainer.use_cold_explorer(explorer)
    trainer.run()
    misses = Counter(e["entity_id"] for e in explorer.events if e["rating"] is not None and not e["restored"])
    assert misses and max(misses.values()) == 1
    for entity in misses:  # nothing after its miss
        first = next(i for i, e in enumerate(explorer.events) if e["entity_id"] == entity and
                     e["rating"] is not None and not e["restored"])
        assert all(e["entity_id"] != entity for e in explorer.events[first + 1:])
    with pytest.raises(ValueError, match=r"RediscoveryParams.max_misses must be None or an integer >= 1, "
                                         r"got 0"):
        RediscoveryParams(max_misses=0)


def test_off_by_default_and_a_resumed_run_replays_the_restores(
        tiny: Dataset, prior_trainer: Callable[..., BanditTrainer], pruned: list[str],
        tmp_path: Path) -> None:
    assert not EmergenceConfig().rediscovery
    assert EmergenceConfig.from_mapping({"rediscovery": True, "rediscover": {"min_similarity": 0.2}}) \
        .rediscover.min_similarity == 0.2
    plain = prior_trainer(tiny)
    assert plain.cold_explorer is None
    whole, explorer = run(tiny, pruned)
    restore_steps = [e["step"] for e in explorer.events if e["restored"]]
    stop = restore_steps[0] + 5
    first = trainer_of(tiny, tmp_path, checkpoint_every=5)
    first.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": pruned}))
    first.run(stop_after=stop + 3)  # killed after the checkpoint at `stop`
    again = trainer_of(tiny, tmp_path, checkpoint_every=5)
    resumed = ColdExplorer(tiny.graphs, {"main": pruned})
    again.use_cold_explorer(resumed)
    again.run()
    assert again.resumed_from is not None and again.resumed_from > restore_steps[0]
    assert resumed.events == explorer.events
    assert again.retriever._state("main").graph.entities["id"].tolist() == \
        whole.retriever._state("main").graph.entities["id"].tolist()


def test_the_split_in_memory_is_what_the_store_copy_keeps_hot(tiny: Dataset, pruned: list[str],
                                                             tmp_path: Path) -> None:
    split = ColdSplit(tiny.graph, pruned[:4])
    path = write_graph(tiny.graph, tmp_path / "copy.db")
    move_to_cold(path, pruned[:4], copy=True)
    stored = read_graph(path)
    for table in ("entities", "aspects", "attributes", "dependencies", "memories"):
        assert getattr(split.hot, table)["id"].tolist() == getattr(stored, table)["id"].tolist(), table
    assert split.hot.mentions[["memory_id", "entity_id"]].values.tolist() == \
        stored.mentions[["memory_id", "entity_id"]].values.tolist()
    assert split.frontier() == cold_frontier(path)
    back = split.restore(pruned[:4])
    assert not back.cold and back.hot.entities["id"].tolist() == tiny.graph.entities["id"].tolist()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM signet_rl_cold_rows WHERE table_name = 'entities'") \
            .fetchone() == (4,)


def test_bad_input_is_named(tiny: Dataset) -> None:
    with pytest.raises(ColdTierError, match=r"entity 'nope' is not in the graph"):
        ColdSplit(tiny.graph, ["nope"])
    split = ColdSplit(tiny.graph, ["ent-000001"])
    with pytest.raises(ColdTierError, match=r"entity 'ent-000002' is not in the cold tier \(it is in the hot "
                                            r"graph\); nothing was restored"):
        split.restore(["ent-000001", "ent-000002"])
    assert split.cold == {"ent-000001"}
    with pytest.raises(ValueError, match=r"cold entities given for graph 'other'"):
        ColdExplorer(tiny.graphs, {"other": ["ent-000001"]})
    explorer = ColdExplorer(tiny.graphs, {"main": ["ent-000001"]})
    hot_path = TPath.parse("E:ent-000002")
    with pytest.raises(ColdTierError, match=r"path 'E:ent-000002' reaches no cold entity of graph 'main'"):
        explorer.rate("main", hot_path, 1.0)
    with pytest.raises(ValueError, match=r"RediscoveryParams.reach must be 'entries', 'walk' or 'frontier', "
                                         r"got 'all'"):
        RediscoveryParams(reach="all")
    cfg = BanditConfig(epochs=1, eval_every=0, checkpoint_every=0)
    hybrid = BanditTrainer(tiny, make_scorer("prior"), cfg, traversal={"max_depth": 2, "floor": True}, seed=3,
                           progress=False)
    with pytest.raises(ValueError) as refused:
        hybrid.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": ["ent-000001"]}))
    assert str(refused.value) == (
        "cold explorers walk the graph's hot part, and the hybrid entry's flat floor indexes the whole "
        "dataset; run without it (signet_rl.train: hybrid=false; TraversalConfig: floor, session and "
        "entity_walks off)")


def test_the_entry_layer_starts_a_run_with_a_saved_plan_cold(tiny: Dataset, pruned: list[str],
                                                             tmp_path: Path) -> None:
    plan = PruningPlan(until=pd.Timestamp("2026-01-01", tz="UTC"), unused=tuple(pruned[:3]), sick=())
    plan.save(tmp_path / "pruning.json")

    def cfg(**rediscover: object) -> object:
        return OmegaConf.create({"emergence": {"rediscovery": True, "rediscover": rediscover}})

    trainer = trainer_of(tiny)
    _emergence_rediscovery(cfg(plan=str(tmp_path / "pruning.json"), reach="frontier"), tiny, trainer)
    assert trainer.cold_explorer.splits["main"].cold == set(pruned[:3])
    assert trainer.cold_explorer.params.reach == "frontier"
    assert set(trainer.retriever._state("main").graph.entities["id"]).isdisjoint(pruned[:3])
    trainer.run()
    _emergence_after_training(cfg(plan=str(tmp_path / "pruning.json")), tiny, trainer, tmp_path / "art")
    written = json.loads((tmp_path / "art" / "emergence" / "rediscovery.json").read_text())
    assert written["initially_cold"] == {"main": sorted(pruned[:3])}
    assert written["restored"] == trainer.cold_explorer.restored and len(written["events"]) == \
        len(trainer.cold_explorer.events)
    with pytest.raises(ValueError, match=r"emergence.rediscovery=true needs emergence.rediscover.plan"):
        _emergence_rediscovery(cfg(), tiny, trainer_of(tiny))
    PruningPlan(until=None, unused=("ent-999999",), sick=()).save(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"bad.json: entity 'ent-999999' of the pruning plan is in no graph"):
        _emergence_rediscovery(cfg(plan=str(tmp_path / "bad.json")), tiny, trainer_of(tiny))
    off = trainer_of(tiny)
    _emergence_rediscovery(OmegaConf.create({"emergence": {"health": True}}), tiny, off)
    assert off.cold_explorer is None


@pytest.mark.parametrize("scorer", ["prior", "linucb"])
def test_validation_runs_during_a_rediscovery_run_and_the_old_graphs_are_forgotten(
        tiny: Dataset, pruned: list[str], scorer: str) -> None:
    """Review 54 #1: the frozen copy that validation scores with is a deep copy of the scorer; the arrays of a
    replaced graph must not stay reachable from it (they are not in the shared memo, and copying them fails),
    nor pile up with each restore."""
    seen: list[int] = []

    def validate(frozen: object) -> dict[str, float]:
        seen.append(1)
        return {"recall": 0.0}

    cfg = BanditConfig(epochs=1, explorer_per_session=2, eval_every=10, checkpoint_every=0)
    trainer = BanditTrainer(tiny, make_scorer(scorer), cfg, traversal={"max_depth": 2}, seed=3,
                            progress=False, validate=validate)
    explorer = ColdExplorer(tiny.graphs, {"main": pruned})
    trainer.use_cold_explorer(explorer)
    trainer.run()
    assert explorer.restored.get("main"), "the run restored nothing; the test needs a restore"
    assert len(seen) >= trainer.step // 10 >= 2
    current = trainer.retriever._state("main").arrays
    kept = {"prior": lambda s: [a for a, _ in s._graphs.values()],
            "linucb": lambda s: [st.arrays for st in s._graphs.values()] + list(s._edge_stats_of)
            + [a for a, _ in s.base.prior._graphs.values()] + [a for a, _ in s.base.ppr._csrs.values()]}
    held = kept[scorer](trainer.scorer)
    assert all(a is current or a == id(current) for a in held), "the scorer keeps a replaced graph's arrays"


def test_a_cold_path_holds_only_what_a_walk_at_the_query_time_could_see(tiny: Dataset,
                                                                      pruned: list[str]) -> None:
    """Review 54 #3: no fact, dependency or entity created after the query, no fact stale by then."""
    from signet_rl.text.encoders import make_encoder

    g = tiny.graph
    created = dict(zip(g.attributes["id"], pd.to_datetime(g.attributes["created_at"], utc=True), strict=True))
    dep_created = dict(zip(g.dependencies["id"], pd.to_datetime(g.dependencies["created_at"], utc=True),
                           strict=True))
    successor = dict(zip(g.attributes["id"], g.attributes["superseded_by"], strict=True))
    encoder = make_encoder("hashing")
    params = RediscoveryParams(reach="frontier", min_similarity=-1)
    explorer = ColdExplorer(tiny.graphs, {"main": pruned}, params, encoder=encoder)
    owner = dict(zip(g.attributes["id"], g.attribute_entity_ids(), strict=True))
    cold_facts = [a for a, e in owner.items() if e in set(pruned)]
    shown, future_exists = 0, 0
    for q in tiny.queries:
        t = pd.Timestamp(q.timestamp)
        future_exists += any(created[a] > t for a in cold_facts)
        for p in explorer.paths(q, [], [], encoder.encode([q.text])[0], k=50):
            shown += 1
            assert all(created[a] <= t for a in p.attributes), (q.id, p.serialise())
            assert all(dep_created[d] <= t for d in p.dependencies), (q.id, p.serialise())
            for a in p.attributes:  # not superseded by a successor written by then
                s = successor[a]
                assert not (isinstance(s, str) and s in created and created[s] <= t), (q.id, a)
    assert shown >= 20 and future_exists >= 10  # the check had something to catch


def test_a_resume_with_another_plan_or_other_settings_is_refused_naming_both(
        tiny: Dataset, pruned: list[str], tmp_path: Path) -> None:
    """Review 54 #4: the checkpoint keeps the initially cold entities and the settings; a resumed run
    with others is refused (naming the key and both values), not silently continued."""
    first = trainer_of(tiny, tmp_path, checkpoint_every=5)
    first.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": pruned}))
    first.run(stop_after=12)  # killed after the checkpoint at 10
    other_plan = trainer_of(tiny, tmp_path, checkpoint_every=5)
    other_plan.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": pruned[5:]}))
    with pytest.raises(ValueError) as refused:
        other_plan.run()
    shown = ", ".join(repr(e) for e in sorted(pruned)[:5])
    assert str(refused.value) == (
        f"checkpoint {tmp_path / 'checkpoint.pkl'} is incompatible: it was written with the initially cold "
        f"entities of graph 'main' (the plan's)=10 entities [{shown}, ...], this run has "
        f"{sorted(pruned[5:])!r}; use another run_dir or fresh=true")
    other_settings = trainer_of(tiny, tmp_path, checkpoint_every=5)
    other_settings.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": pruned},
                                                  RediscoveryParams(min_similarity=0.9, reach="entries")))
    with pytest.raises(Exception, match=r"emergence\.rediscover\.min_similarity.*0\.0.*0\.9"):
        other_settings.run()
    same = trainer_of(tiny, tmp_path, checkpoint_every=5)
    same.use_cold_explorer(ColdExplorer(tiny.graphs, {"main": pruned}))
    same.run()
    assert same.resumed_from == 10


def test_a_cold_path_is_built_with_the_retrievers_memory_settings(tiny: Dataset) -> None:
    """Review 54 #12: on a pure KG (no facts) the retriever's memories list entities as items; a cold
    path's memory must be built the same way."""
    from signet_rl.graph.model import KnowledgeGraph
    from signet_rl.pipeline.desire import memory_builder

    g = tiny.graph
    kg = KnowledgeGraph.from_frames(entities=g.entities, aspects=g.aspects, attributes=g.attributes.iloc[0:0],
                                    dependencies=g.dependencies)
    for graph, kg_only in ((g, False), (kg, True)):
        explorer = ColdExplorer({"main": graph}, {"main": ["ent-000001"]})
        assert explorer.builder("main").entity_items is memory_builder(graph).entity_items is kg_only
