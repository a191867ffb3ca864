"""Feedback validation: bad ratings, propensities and slates are refused when a :class:`Feedback` is built and
again when a learned scorer (or path reinforcement) consumes it, so one NaN cannot poison a model."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch
from bandit_task import ROUTES, T0, build_graph, make_queries  # tests/scorers/bandit_task.py

from signet_rl.graph.arrays import GraphArrays
from signet_rl.learning.reinforcement import EdgeStats
from signet_rl.scorers import GNNPathScorer, LinUCBScorer
from signet_rl.scorers.base import Feedback, ScoringContext, check_feedback

torch.set_num_threads(1)

Q = make_queries(1)[0]
WHO = f"Feedback for {Q.id!r}"


@pytest.fixture(scope="module")
def ctx():
    graph = build_graph()
    return ScoringContext(
        graph, GraphArrays.from_graph(graph), ("hub",), (T0 + pd.Timedelta(days=10)).timestamp()
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pscores": [float("nan")]}, "pscore nan is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": [0.0]}, "pscore 0.0 is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": [-0.5]}, "pscore -0.5 is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": [1.5]}, "pscore 1.5 is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": [float("inf")]}, "pscore inf is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": ["0.5"]}, "pscore '0.5' is not a probability in (0, 1] (pscores[0])"),
        ({"pscores": [True]}, "pscore True is not a probability in (0, 1] (pscores[0])"),
        ({"ratings": [float("nan")]}, "rating nan is not -1, 0, +1 or None (ratings[0])"),
        ({"ratings": [0.5]}, "rating 0.5 is not -1, 0, +1 or None (ratings[0])"),
        ({"ratings": [True]}, "rating True is not -1, 0, +1 or None (ratings[0])"),
        ({"shown": [9]}, "shown index 9 outside 5 paths (shown[0])"),
        ({"shown": [1.0]}, "shown index 1.0 is not an integer (shown[0])"),
        ({"explorer": [1]}, "explorer flag 1 is not a bool (explorer[0])"),
        ({"pscores": [0.5, 0.5]}, "2 pscores for 1 shown paths"),
    ],
)
def test_bad_feedback_is_refused_at_construction(ctx, kwargs, message):
    args = {"shown": [4], "ratings": [1], "pscores": [0.5], "explorer": [False], **kwargs}
    with pytest.raises(ValueError, match=re.escape(f"{WHO}: {message}")):
        Feedback(Q, ROUTES, ctx, **args)


def test_second_bad_entry_is_named_by_its_index(ctx):
    with pytest.raises(ValueError, match=re.escape("pscore nan is not a probability in (0, 1] (pscores[1])")):
        Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, -1], pscores=[0.5, float("nan")])


def _poisoned(ctx, field, value):
    """A valid Feedback whose ``field`` is changed to ``value`` after construction."""
    fb = Feedback(Q, ROUTES, ctx, shown=[4], ratings=[1], pscores=[0.5])
    setattr(fb, field, value)
    return fb


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pscores", [float("nan")], "pscore nan is not a probability in (0, 1] (pscores[0])"),
        ("ratings", [float("nan")], "rating nan is not -1, 0, +1 or None (ratings[0])"),
        ("ratings", [1, 1], "2 ratings for 1 shown paths"),
    ],
)
@pytest.mark.parametrize(
    "make",
    [
        lambda: LinUCBScorer(importance_weighted=True),
        lambda: GNNPathScorer(seed=0, hidden=8, n_heads=2, importance_weighted=True),
    ],
)
def test_learned_scorers_revalidate_at_update_and_learn_nothing(ctx, field, value, message, make):
    scorer = make()
    before = scorer.score(Q, ROUTES, ctx)
    with pytest.raises(ValueError, match=re.escape(f"{WHO}: {message}")):
        scorer.update([Feedback(Q, ROUTES, ctx, shown=[0], ratings=[1]), _poisoned(ctx, field, value)])
    after = scorer.score(Q, ROUTES, ctx)
    assert np.isfinite(after).all() and np.array_equal(
        before, after
    )  # the good item before it was not learned


def test_path_reinforcement_revalidates_too(ctx):
    stats = EdgeStats(ctx.arrays.num_dependencies)
    with pytest.raises(
        ValueError, match=re.escape(f"{WHO}: rating nan is not -1, 0, +1 or None (ratings[0])")
    ):
        stats.apply([_poisoned(ctx, "ratings", [float("nan")])])
    assert np.all(stats.weights == 1.0) and stats.step == 0


def test_check_feedback_accepts_what_the_trainer_builds(ctx):
    fb = Feedback(
        Q,
        ROUTES,
        ctx,
        shown=[4, 0],
        ratings=[1, None],
        pscores=[1.0, np.float64(1e-300)],
        explorer=[np.bool_(True), False],
    )
    check_feedback(fb)  # numpy scalars, None ratings and tiny propensities are all fine
    s = LinUCBScorer(importance_weighted=True, max_importance_weight=10.0)
    s.update([fb])
    assert s.updates == 1 and np.isfinite(s.b).all()
