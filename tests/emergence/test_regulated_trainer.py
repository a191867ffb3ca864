"""The explorer regulator wired into the bandit trainer (``task.explorer_regulation``, off by default)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from signet_rl.datasets import load_dataset
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.scorers import make_scorer
from signet_rl.train import explorer_regulator

CFG = dict(epochs=1, max_interactions=30, eval_every=0, checkpoint_every=0, slate_size=2, session_size=5)


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic:tiny:0")


def _trainer(ds, **over):
    config = BanditConfig(**{**CFG, **over})
    return BanditTrainer(ds, make_scorer("prior"), config, traversal={"max_depth": 2}, seed=3, progress=False)


def test_each_session_gets_the_slots_the_regulator_sets(tiny):
    seen: list[int] = []

    def scripted(records, slate_size):
        assert slate_size == 2
        seen.append(len(records))
        return 0 if len(seen) % 2 else 2  # sessions alternate: none, two, none, two...

    t = _trainer(tiny, explorer_regulation=True)
    t.explorer_regulator = scripted
    t.run()
    slots = t.session_slots
    assert list(slots.values())[:4] == [0, 2, 0, 2] and seen[0] == 0 and seen == sorted(seen)
    used = Counter(r.session for r in t.log if any(r.explorer))
    assert used and all(used[s] <= slots[s] for s in used)
    assert all(used[s] == 0 for s, n in slots.items() if n == 0)
    assert any(used[s] == 2 for s, n in slots.items() if n == 2)  # two explorer slots in one session


def test_regulation_is_off_by_default_and_needs_a_regulator_when_on(tiny):
    assert BanditConfig().explorer_regulation is False and explorer_regulator(BanditConfig()) is None
    plain = _trainer(tiny)
    plain.run()
    assert plain.session_slots == {}
    t = _trainer(tiny, explorer_regulation=True)
    msg = ("task.explorer_regulation=true needs an explorer regulator; signet_rl.train builds it from "
           "task.regulator (BanditTrainer.explorer_regulator), or set task.explorer_regulation=false")
    with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
        t.run()


def test_the_entry_layer_builds_the_staleness_regulator(tiny):
    config = BanditConfig(**{**CFG, "explorer_regulation": True, "regulator": {"window": 2, "history": 4}})
    fn = explorer_regulator(config)
    t = _trainer(tiny, explorer_regulation=True, regulator={"window": 2, "history": 4})
    t.explorer_regulator = fn
    t.run()
    assert t.session_slots and set(t.session_slots.values()) <= {1, 2}
    with pytest.raises(ValueError, match=r"^task.regulator: unknown key 'windw'"):
        explorer_regulator(BanditConfig(explorer_regulation=True, regulator={"windw": 2}))


def test_the_base_quota_is_the_tasks_explorer_per_session():
    silent = explorer_regulator(BanditConfig(explorer_per_session=0, explorer_regulation=True))
    assert silent([], 3) == 0
    assert explorer_regulator(BanditConfig(explorer_regulation=True))([], 3) == 1
    assert explorer_regulator(BanditConfig(explorer_regulation=True, regulator={"min_slots": 2}))([], 3) == 2


def test_a_regulated_run_resumes_to_the_same_slots_and_log(tiny, tmp_path):
    over = {"explorer_regulation": True, "regulator": {"window": 2, "history": 4, "drop_at": 0.1},
            "checkpoint_every": 6}

    def trainer(run_dir):
        t = BanditTrainer(tiny, make_scorer("prior"), BanditConfig(**{**CFG, **over}),
                          traversal={"max_depth": 2}, seed=3, run_dir=run_dir, progress=False)  # fmt: skip
        t.explorer_regulator = explorer_regulator(t.config)
        return t

    whole = trainer(tmp_path / "whole")
    whole.run()
    trainer(tmp_path / "cut").run(stop_after=15)  # killed after 15: the checkpoint holds 12
    again = trainer(tmp_path / "cut")
    again.run()
    assert again.resumed_from == 12 and set(whole.session_slots.values()) == {1, 2}  # the regulator acted
    assert again.session_slots == whole.session_slots
    assert [(r.shown, r.explorer) for r in again.log] == [(r.shown, r.explorer) for r in whole.log]


def _two_graphs():
    """synthetic:tiny seeds 0 and 1 as one dataset of two graphs (two users), their timelines interleaved."""
    import dataclasses

    from signet_rl.datasets.base import Dataset, GroundTruth

    graphs, queries, truths = {}, [], []
    for gid, seed in (("a", 0), ("b", 1)):
        ds = load_dataset(f"synthetic:tiny:{seed}")
        graphs[gid] = next(iter(ds.graphs.values()))
        for q in ds.queries:
            queries.append(dataclasses.replace(q, id=f"{gid}-{q.id}", graph_id=gid))
            truths.append(dataclasses.replace(ds.truth[q.id], query_id=f"{gid}-{q.id}"))
    return Dataset(name="two-users", graphs=graphs, queries=queries, truth=GroundTruth(truths))


def test_the_regulator_reads_only_the_sessions_graph():
    """Audit of issue 29: the regulator was handed the whole log, so on a multi-graph dataset (LoCoMo: one
    graph per conversation) another user's sessions set this user's explorer share."""
    graphs_seen: list[set[str]] = []

    def scripted(records, slate_size):
        mine = {r.context["graph_id"] for r in records}
        graphs_seen.append(mine)
        return 2 if mine == {"a"} else 0  # user a, once it has a history, explores twice; user b never

    t = _trainer(_two_graphs(), explorer_regulation=True)
    t.explorer_regulator = scripted
    t.run()
    slots = t.session_slots
    assert {s.split(":")[0] for s in slots} == {"a", "b"}  # both users' sessions were opened
    assert all(len(g) <= 1 for g in graphs_seen)
    a = [n for s, n in slots.items() if s.startswith("a:")]  # in the order they opened
    b = [n for s, n in slots.items() if s.startswith("b:")]
    assert b == [0] * len(b) and a == [0] + [2] * (len(a) - 1)  # a's first session has no history yet
    used = Counter(r.session for r in t.log if any(r.explorer))
    assert all(used[s] <= slots[s] for s in used)  # a re-entered session keeps its own slots
    assert not any(used[s] for s in slots if s.startswith("b:")) and any(used[s] for s in slots)


@pytest.mark.parametrize(("key", "mine"), [("explorer", "task.explorer_per_session"),
                                           ("regulation", "task.explorer_regulation")])
def test_the_services_explorer_switches_are_refused_by_the_trainer(tmp_path, key, mine):
    from tests.serving.conftest import train_run

    with pytest.raises(ValueError) as err:
        train_run(tmp_path / "run", f"+emergence.{key}=true")
    assert str(err.value) == (f"emergence.{key} is the service's switch (python -m signet_rl.serve "
                              f"--emergence {key}); the trainer's is {mine}")
