"""desire_fused and the base scores learned scorers take: values, the registry, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bandit_task import ROUTES, T0, build_graph, make_queries  # the shared hand-made task

from signet_rl.graph.arrays import GraphArrays
from signet_rl.scorers import PPRScorer, PriorScorer, make_scorer
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.fused import BASE_SCORES, BaseScores, FusedScorer, standardise

Q = make_queries(1)[0]


@pytest.fixture(scope="module")
def ctx():
    graph = build_graph()
    arrays = GraphArrays.from_graph(graph)
    rel = np.linspace(0.0, 1.0, len(arrays.attribute_ids))  # a made-up query relevance per fact
    return ScoringContext(graph, arrays, ("hub",), (T0 + pd.Timedelta(days=10)).timestamp(),
                          relevance=lambda idx: rel[idx])  # fmt: skip


def test_standardise_centres_and_scales_each_column():
    z = standardise([[1.0, 5.0], [3.0, 5.0], [5.0, 5.0]])
    np.testing.assert_allclose(z[:, 0], [-1.224745, 0.0, 1.224745], atol=1e-6)
    np.testing.assert_allclose(z[:, 1], [0.0, 0.0, 0.0])  # no spread: zeros, not NaN
    assert standardise(np.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError, match=r"^standardise expects a \[n, k\] array, got shape \(3,\)$"):
        standardise([1.0, 2.0, 3.0])


def test_base_scores_are_the_non_learned_scorers_standardised(ctx):
    base = BaseScores()
    raw = base.raw(Q, ROUTES, ctx)
    assert raw.shape == (5, 3) and BASE_SCORES == ("prior", "ppr", "flat")
    np.testing.assert_allclose(raw[:, 0], np.log(np.maximum(PriorScorer().score(Q, ROUTES, ctx), 1e-12)))
    np.testing.assert_allclose(raw[:, 1], PPRScorer().score(Q, ROUTES, ctx))
    a = ctx.arrays
    rel = ctx.relevance(np.arange(len(a.attribute_ids)))
    index = {str(k): i for i, k in enumerate(a.attribute_ids)}
    best = [max((rel[index[t]] for t in p.attributes), default=0.0) for p in ROUTES]
    np.testing.assert_allclose(raw[:, 2], best)
    np.testing.assert_allclose(base.features(Q, ROUTES, ctx), standardise(raw), atol=1e-6)


def test_fused_scores_are_the_weighted_sum_and_it_is_registered(ctx):
    fused = make_scorer("fused", prior=1.0, ppr=0.5, flat=2.0)
    assert isinstance(fused, FusedScorer) and fused.name == "fused"
    z = BaseScores().features(Q, ROUTES, ctx).astype(np.float64)
    np.testing.assert_allclose(fused.score(Q, ROUTES, ctx), z @ [1.0, 0.5, 2.0], atol=1e-6)
    assert fused.score(Q, [], ctx).shape == (0,)
    fused.update([])  # non-learned: nothing happens
    only_ppr = FusedScorer(prior=0.0, ppr=1.0, flat=0.0).score(Q, ROUTES, ctx)
    ppr = PPRScorer().score(Q, ROUTES, ctx)
    assert list(np.argsort(-only_ppr, kind="stable")) == list(np.argsort(-ppr, kind="stable"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prior": 0.0, "ppr": 0.0, "flat": 0.0},
         "FusedScorer: every weight is 0 (prior, ppr, flat); give at least one a weight"),
        ({"ppr": float("nan")}, "FusedScorer: ppr must be a number, got nan"),
        ({"damping": 1.0}, "damping must be a number in (0, 1), got 1.0"),
    ],
)  # fmt: skip
def test_bad_weights_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=f"^{__import__('re').escape(message)}$"):
        FusedScorer(**kwargs)
