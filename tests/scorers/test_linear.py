from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bandit_task import (  # the shared hand-made task (tests/scorers/bandit_task.py)
    ROUTES,
    T0,
    USEFUL,
    WINDOW,
    build_graph,
    make_queries,
    make_truth,
    reached,
    run_bandit,
)

from signet_rl.graph.arrays import GraphArrays
from signet_rl.rating.rater import SimulatedRater
from signet_rl.scorers import LinUCBScorer, PriorScorer, RandomScorer, make_scorer
from signet_rl.scorers.base import Feedback, PathScorer, ScoringContext
from signet_rl.scorers.features import INTENTS, PATH_FEATURES
from signet_rl.traversal.construct import MemoryBuilder


@pytest.fixture(scope="module")
def graph():
    return build_graph()


@pytest.fixture(scope="module")
def ctx(graph):
    return ScoringContext(
        graph, GraphArrays.from_graph(graph), ("hub",), (T0 + pd.Timedelta(days=10)).timestamp()
    )


Q = make_queries(1)[0]


def test_task_is_what_it_claims(graph, ctx):
    prior = PriorScorer().score(Q, ROUTES, ctx)
    assert int(np.argmin(prior)) == USEFUL  # the useful route is the one the prior ranks last
    items = [MemoryBuilder(graph).construct(p).items for p in ROUTES]
    rater = SimulatedRater(make_truth([Q]), noise_rate=0.0)
    assert [int(rater.true_rating(Q.id, it)) for it in items] == [0, -1, 0, 0, 1]


def test_linucb_learns_the_route_the_prior_ranks_last():
    linucb = run_bandit(LinUCBScorer(alpha=0.5))
    prior, random = run_bandit(PriorScorer()), run_bandit(RandomScorer(seed=0))
    assert (reached(linucb) or 999) <= 150 and linucb[-WINDOW:].mean() >= 0.8  # reached, and held to the end
    assert (
        reached(prior) is None and prior[-WINDOW:].mean() == 0.0
    )  # always the strong-looking, useless route
    assert reached(random) is None and random[-WINDOW:].mean() < 0.5


def test_sherman_morrison_matches_the_ridge_solution(ctx):
    s = LinUCBScorer(lam=2.0)
    x = s.design(Q, ROUTES, ctx)
    ratings = [1, -1, 0, 0, 1]
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 1, 2, 3, 4], ratings=ratings)])
    A = 2.0 * np.eye(s.dim) + x.T @ x
    assert np.allclose(s.A_inv, np.linalg.inv(A))
    assert np.allclose(s.theta, np.linalg.solve(A, x.T @ np.asarray(ratings, float)))
    assert s.updates == 5


def test_score_is_mean_plus_alpha_width(ctx):
    greedy = LinUCBScorer(alpha=0.0)
    greedy.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, 0])])
    ucb = LinUCBScorer(alpha=0.7)
    ucb.load_state_dict(greedy.state_dict())
    x = greedy.design(Q, ROUTES, ctx)
    width = np.sqrt(((x @ greedy.A_inv) * x).sum(1))
    assert np.allclose(greedy.score(Q, ROUTES, ctx), x @ greedy.theta)
    assert np.allclose(ucb.score(Q, ROUTES, ctx), x @ greedy.theta + 0.7 * width)


def test_design_puts_the_intent_block_after_the_shared_one(ctx):
    assert LinUCBScorer().dim == (1 + len(PATH_FEATURES) + 3) * (1 + len(INTENTS)) == 300  # with base scores
    s = LinUCBScorer(base_scores=False)
    assert s.dim == (1 + len(PATH_FEATURES)) * (1 + len(INTENTS)) == 282
    x = s.design(Q, ROUTES, ctx)  # "what should I know ...": predicted intent what
    base = s.base_dim
    assert np.all(x[:, 0] == 1) and np.allclose(x[:, base : 2 * base], x[:, :base])
    assert np.all(x[:, 2 * base :] == 0)
    plain = LinUCBScorer(intent_interactions=False, base_scores=False)
    assert plain.design(Q, ROUTES, ctx).shape == (5, base)


def test_importance_weights_are_inverse_pscores_clipped(ctx):
    s = LinUCBScorer(importance_weighted=True, max_importance_weight=10.0)
    x = s.design(Q, ROUTES, ctx)
    s.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, -1], pscores=[0.25, 0.01])])
    assert np.allclose(s.b, 4.0 * x[4] - 10.0 * x[0])
    plain = LinUCBScorer()
    plain.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, -1], pscores=[0.25, 0.01])])
    assert np.allclose(plain.b, x[4] - x[0])


def test_thompson_draws_centre_on_the_mean(ctx):
    s = LinUCBScorer(alpha=0.0, sigma=0.5)
    s.update([Feedback(Q, ROUTES, ctx, shown=[4, 1], ratings=[1, -1])])
    draws = s.sample_scores(Q, ROUTES, ctx, 4000, np.random.default_rng(0))
    assert draws.shape == (4000, 5)
    assert np.allclose(draws.mean(0), s.score(Q, ROUTES, ctx), atol=0.05)
    again = s.sample_scores(Q, ROUTES, ctx, 3, np.random.default_rng(1))
    assert np.array_equal(again, s.sample_scores(Q, ROUTES, ctx, 3, np.random.default_rng(1)))
    assert (
        LinUCBScorer(sigma=0.0).sample_scores(Q, ROUTES, ctx, 2, np.random.default_rng(0)).std(0).max() == 0
    )


def test_state_dict_round_trip(ctx):
    s = LinUCBScorer(alpha=0.3)
    s.update([Feedback(Q, ROUTES, ctx, shown=[2], ratings=[1])])
    other = make_scorer("linucb", alpha=0.3)
    assert isinstance(other, LinUCBScorer) and isinstance(other, PathScorer)
    other.load_state_dict(s.state_dict())
    assert np.array_equal(other.score(Q, ROUTES, ctx), s.score(Q, ROUTES, ctx)) and other.updates == 1
    with pytest.raises(ValueError, match="state has dimension 300, this scorer 50"):
        LinUCBScorer(intent_interactions=False).load_state_dict(s.state_dict())


def test_nothing_rated_is_a_no_op(ctx):
    s = LinUCBScorer()
    s.update([])
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 1], ratings=[None, None])])
    assert s.updates == 0 and np.allclose(s.A_inv, np.eye(s.dim) / s.lam) and not s.b.any()  # the ridge prior
    assert s.score(Q, [], ctx).shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": -1}, "LinUCBScorer: alpha must be a number >= 0, got -1"),
        ({"lam": 0}, "LinUCBScorer: lam must be a number > 0, got 0"),
        ({"sigma": "x"}, "LinUCBScorer: sigma must be a number >= 0, got 'x'"),
        (
            {"max_importance_weight": 0.5},
            "LinUCBScorer: max_importance_weight must be a number >= 1, got 0.5",
        ),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        LinUCBScorer(**kwargs)
