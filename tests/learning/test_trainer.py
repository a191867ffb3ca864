"""The bandit loop: checkpoints resume to the same numbers, bad input fails clearly, evaluation is frozen."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from signet_rl.core.run_folder import RunFolderError
from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate, validation_callback
from signet_rl.learning.trainer import BanditConfig, BanditTrainer, session_of
from signet_rl.scorers import make_scorer

CFG = dict(epochs=1, max_interactions=24, eval_every=12, checkpoint_every=6, max_val_queries=10, slate_size=2)


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic:tiny:0")


def _trainer(ds, run_dir, scorer="prior", **over):
    cfg = BanditConfig(**{**CFG, **over})
    validate = validation_callback(ds, cfg.budget_chars, cfg.max_val_queries, seed=3)
    return BanditTrainer(
        ds, make_scorer(scorer), cfg, traversal={"max_depth": 2}, seed=3, run_dir=run_dir,
        validate=validate, progress=False,
    )  # fmt: skip


def test_interrupted_and_resumed_run_ends_with_the_same_curve(tiny, tmp_path):
    whole = _trainer(tiny, tmp_path / "whole")
    curve = whole.run()
    assert [row["interactions"] for row in curve] == [12.0, 24.0]
    first = _trainer(tiny, tmp_path / "cut")
    first.run(stop_after=15)  # killed after interaction 15: the last checkpoint holds 12
    assert first.step == 15
    again = _trainer(tiny, tmp_path / "cut")
    resumed = again.run()
    assert again.resumed_from == 12

    def timeless(rows):
        return [{k: v for k, v in r.items() if k != "train/latency_ms"} for r in rows]

    assert timeless(resumed) == timeless(curve)
    assert [(h.query_id, h.mean_rating, h.true_value) for h in again.history] == [
        (h.query_id, h.mean_rating, h.true_value) for h in whole.history
    ]
    assert [r.shown for r in again.log] == [r.shown for r in whole.log]
    assert (tmp_path / "cut" / "feedback.parquet").exists()


def test_checkpoint_of_another_config_is_refused(tiny, tmp_path):
    _trainer(tiny, tmp_path / "run").run(stop_after=7)
    other = _trainer(tiny, tmp_path / "run", slate_size=3)
    with pytest.raises(
        RunFolderError,
        match=re.escape(
            f"run folder {tmp_path / 'run'} was trained with task.slate_size=2; this command asks "
            "task.slate_size=3: use another run_dir or fresh=true"
        ),
    ):
        other.run()
    # the checkpoint itself is checked too (a folder whose marker was replaced, or resume() called alone)
    with pytest.raises(ValueError, match=r"checkpoint .* is incompatible: it was written with config="):
        other.resume()


def test_explorer_quota_and_metrics(tiny, tmp_path):
    t = _trainer(tiny, None, explorer_per_session=1, session_size=5)
    t.run()
    m = t.running_metrics()
    shown = sum(h.explorer_shown for h in t.history)
    sessions = {session_of(q, i, 5) for q, i in t.schedule()}
    assert 0 < shown <= len(sessions)  # at most one explorer slot per session
    assert 0 < m["train/explorer_share"] < 1
    assert m["train/cumulative_regret"] >= 0
    flagged = [r for r in t.log if any(r.explorer)]
    assert len(flagged) == shown and all(r.pscores[r.explorer.index(True)] == 1.0 for r in flagged)


def test_evaluation_never_updates_the_learned_state(tiny, tmp_path):
    t = _trainer(tiny, None, max_interactions=10, eval_every=0)
    t.run()
    before = {g: s.weights.copy() for g, s in t.stats.items()}
    steps = {g: s.step for g, s in t.stats.items()}
    evaluate(t.dataset, {"learned": t.frozen()}, split="test", n_boot=1)
    assert t.validation_metrics()["val/needed_recall"] > 0
    assert all(np.array_equal(before[g], s.weights) and steps[g] == s.step for g, s in t.stats.items())


def test_bad_config_and_dataset_errors(tiny):
    with pytest.raises(ValueError, match=r"^explorer_per_session must be an integer in \[0, 2\], got 3$"):
        BanditConfig(explorer_per_session=3)
    with pytest.raises(ValueError, match=r"BanditConfig: unknown keys \['bogus'\]"):
        BanditConfig.from_dict({"bogus": 1})
    empty = load_dataset("synthetic:tiny:0")
    empty.queries = [q for q in empty.queries if q.split != "train"]
    with pytest.raises(ValueError, match=r"synthetic:tiny:0: no training queries"):
        BanditTrainer(empty, make_scorer("prior"), progress=False)
    t = BanditTrainer(tiny, make_scorer("random"), BanditConfig(exploration="thompson"), progress=False)
    with pytest.raises(ValueError, match=r"exploration 'thompson' needs a scorer with sample_scores"):
        t.run()
    assert math.isfinite(t.seed)


def test_learning_split_deals_folds_into_train_validation_test(tiny):
    ds = tiny.learning_split(k=4, fold=1, seed=0)
    folds = tiny.kfold(4, seed=0)
    assert {q.id for q in ds.split("test")} == set(folds[1][1])
    assert {q.id for q in ds.split("validation")} == set(folds[2][1])
    assert len(ds.split("train")) == len(tiny.queries) - len(folds[1][1]) - len(folds[2][1])
    assert ds.meta["learning_split"] == {"k": 4, "fold": 1, "seed": 0, "group": None}
    with pytest.raises(ValueError, match=r"fold=4 must be in \[0, 4\)"):
        tiny.learning_split(k=4, fold=4)


def test_bad_feedback_is_refused_before_anything_learns(tiny):
    from signet_rl.graph.arrays import GraphArrays
    from signet_rl.learning.reinforcement import EdgeStats
    from signet_rl.scorers.base import Feedback, ScoringContext
    from signet_rl.traversal.path import Hop, Path

    arrays = GraphArrays.from_graph(tiny.graph)
    ctx = ScoringContext(tiny.graph, arrays, [])
    q = tiny.split("train")[0]
    e = str(arrays.entity_ids[0])
    path = Path.of(
        Hop.entity(e),
        Hop.dependency("no-such-edge", 1),
        Hop.entity(str(arrays.entity_ids[1])),
        strategy="what",
    )
    for bad, message in ((2, "rating 2 is not -1, 0, +1 or None"), (float("nan"), "rating nan is not")):
        with pytest.raises(ValueError, match=re.escape(message)):
            Feedback(q, [path], ctx, [0], [bad])
    stats = EdgeStats(arrays.num_dependencies)
    before = stats.weights.copy()
    with pytest.raises(ValueError, match=r"no-such-edge"):
        stats.apply([Feedback(q, [path], ctx, [0], [1])])
    assert np.array_equal(before, stats.weights)  # nothing half-applied
