from __future__ import annotations

import pytest

from signet_rl.datasets.base import GroundTruth, Truth
from signet_rl.rating.rater import Rating, SimulatedRater


@pytest.fixture
def truth():
    return GroundTruth(
        [
            Truth("q1", needed=("a", "b"), needed_kind="attribute", misleading=("old-a",), intent="changed"),
            Truth("q2", needed=(), needed_kind="attribute", intent="none"),
        ]
    )


@pytest.mark.parametrize(
    ("query", "unit", "expected"),
    [
        ("q1", ["a"], Rating.HELPFUL),
        ("q1", ["a", "zzz"], Rating.HELPFUL),
        ("q1", ["zzz"], Rating.NOISE),
        ("q1", ["a", "old-a"], Rating.MISLEADING),  # one stale fact spoils the unit
        ("q2", ["a"], Rating.NOISE),  # anything injected for a non-query is noise
    ],
)
def test_true_rating(truth, query, unit, expected):
    assert SimulatedRater(truth, noise_rate=0, rating_prob=1).rate(query, unit) == expected


def test_noise_and_partial_rating_rates_are_as_configured(truth):
    rater = SimulatedRater(truth, noise_rate=0.2, rating_prob=0.7, seed=1)
    ratings = [rater.rate("q1", ["a"]) for _ in range(20000)]
    rated = [r for r in ratings if r is not None]
    assert abs(len(rated) / len(ratings) - 0.7) < 0.02
    flipped = sum(r != Rating.HELPFUL for r in rated) / len(rated)
    assert abs(flipped - 0.2) < 0.02
    assert {Rating.NOISE, Rating.MISLEADING} <= set(rated)


def test_same_seed_same_ratings(truth):
    a = SimulatedRater(truth, noise_rate=0.3, seed=7).rate_many("q1", [["a"]] * 50)
    b = SimulatedRater(truth, noise_rate=0.3, seed=7).rate_many("q1", [["a"]] * 50)
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"noise_rate": -0.1}, r"SimulatedRater: noise_rate=-0.1 must be in \[0, 1\]"),
        ({"rating_prob": 2}, r"SimulatedRater: rating_prob=2 must be in \[0, 1\]"),
    ],
)
def test_bad_rates(truth, kwargs, message):
    with pytest.raises(ValueError, match=message):
        SimulatedRater(truth, **kwargs)


def test_unknown_query(truth):
    with pytest.raises(KeyError, match="no ground truth for query 'nope'"):
        SimulatedRater(truth).rate("nope", ["a"])
