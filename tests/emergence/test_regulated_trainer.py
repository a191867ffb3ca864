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
