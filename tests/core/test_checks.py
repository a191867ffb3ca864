"""core/checks.py: the one wording of a numeric-argument error, and what passes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from signet_rl.core.checks import check_integer, check_probability, check_range


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check_range("step_cost", -0.5, 0), "step_cost must be a number >= 0, got -0.5"),
        (
            lambda: check_range("lam", 0, 0, lo_open=True, owner="LinUCBScorer"),
            "LinUCBScorer: lam must be a number > 0, got 0",
        ),
        (
            lambda: check_range("alpha", 1.5, 0, 1, lo_open=True, hi_open=True),
            "alpha must be a number in (0, 1), got 1.5",
        ),
        (lambda: check_range("x", 6, hi=5), "x must be a number <= 5, got 6"),
        (lambda: check_range("x", "a"), "x must be a number, got 'a'"),
        (lambda: check_range("rating", True, -1, 1), "rating must be a number in [-1, 1], got True"),
        (lambda: check_range("rating", float("nan"), -1, 1), "rating must be a number in [-1, 1], got nan"),
        (lambda: check_range("rating", None, -1, 1), "rating must be a number in [-1, 1], got None"),
        (lambda: check_integer("k", 1.0, 0), "k must be an integer >= 0, got 1.0"),
        (lambda: check_integer("bucket", 4, 0, 3), "bucket must be an integer in [0, 3], got 4"),
        (lambda: check_integer("n", np.bool_(True), 0), "n must be an integer >= 0, got np.True_"),
        (lambda: check_probability("noise_rate", 2), "noise_rate must be a number in [0, 1], got 2"),
    ],
)
def test_errors_name_the_argument_the_range_and_the_value(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


def test_good_values_come_back_as_python_numbers():
    assert check_range("x", 0, 0) == 0.0 and isinstance(check_range("x", 0, 0), float)
    assert check_range("x", np.float32(0.5), 0, 1) == 0.5
    k = check_integer("k", np.int64(3), 0)
    assert k == 3 and type(k) is int
    assert check_integer("seed", 2**63 - 1, 0) == 2**63 - 1  # no float round trip
    assert check_probability("p", 1) == 1.0
    assert check_range("x", 5, hi=5) == 5.0


def test_optional_lets_none_through_and_says_so():
    assert check_range("limit", None, 1, integer=True, optional=True) is None
    with pytest.raises(ValueError, match=r"^limit must be an integer >= 1 or None, got 0$"):
        check_range("limit", 0, 1, integer=True, optional=True)
    with pytest.raises(ValueError, match=r"^limit must be an integer >= 1, got None$"):
        check_range("limit", None, 1, integer=True)
