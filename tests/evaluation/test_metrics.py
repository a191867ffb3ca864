"""Metrics against hand-computed values, and the bootstrap intervals."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from signet_rl.evaluation import metrics as M

RANKING = ["a", "x", "b", "y"]  # relevant at ranks 1 and 3
NEEDED = {"a", "b", "c"}


def test_set_metrics_hand_computed():
    # 2 of the 3 needed items were injected; 2 of the 4 injected items are needed.
    assert M.needed_recall(RANKING, NEEDED) == pytest.approx(2 / 3)
    assert M.precision(RANKING, NEEDED) == pytest.approx(0.5)
    # F1 = 2 * (1/2) * (2/3) / (1/2 + 2/3) = (2/3) / (7/6) = 4/7
    assert M.f1(RANKING, NEEDED) == pytest.approx(4 / 7)


def test_rank_metrics_hand_computed():
    # recall@k over the first k items: a | a, x | a, x, b
    assert M.recall_at_k(RANKING, NEEDED, 1) == pytest.approx(1 / 3)
    assert M.recall_at_k(RANKING, NEEDED, 2) == pytest.approx(1 / 3)
    assert M.recall_at_k(RANKING, NEEDED, 3) == pytest.approx(2 / 3)
    # nDCG@3: DCG = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    #         IDCG = 1/log2(2) + 1/log2(3) + 1/log2(4) = 1 + 0.630930 + 0.5 = 2.130930 -> 0.703918
    assert M.ndcg_at_k(RANKING, NEEDED, 3) == pytest.approx(1.5 / (1.5 + 1 / math.log2(3)))
    assert M.ndcg_at_k(RANKING, NEEDED, 3) == pytest.approx(0.703918, abs=1e-6)
    # nDCG@2: DCG = 1; IDCG = 1 + 1/log2(3) = 1.630930 -> 0.613147
    assert M.ndcg_at_k(RANKING, NEEDED, 2) == pytest.approx(0.613147, abs=1e-6)
    # a perfect ranking scores 1 at every k
    assert M.ndcg_at_k(["a", "b", "c"], NEEDED, 10) == pytest.approx(1.0)
    # MRR: first needed item at rank 1 -> 1; at rank 3 -> 1/3
    assert M.mrr(RANKING, NEEDED) == 1.0
    assert M.mrr(["x", "y", "b"], NEEDED) == pytest.approx(1 / 3)


def test_duplicates_count_once_at_first_rank():
    # ["x", "x", "a"] is the ranking x, a: MRR 1/2, recall@2 1/3
    assert M.mrr(["x", "x", "a"], NEEDED) == pytest.approx(0.5)
    assert M.recall_at_k(["x", "x", "a"], NEEDED, 2) == pytest.approx(1 / 3)
    assert M.precision(["a", "a"], NEEDED) == 1.0


def test_nothing_injected_for_a_real_query_scores_zero():
    for value in (
        M.needed_recall([], NEEDED),
        M.precision([], NEEDED),
        M.f1([], NEEDED),
        M.mrr([], NEEDED),
        M.ndcg_at_k([], NEEDED, 5),
        M.recall_at_k([], NEEDED, 5),
    ):
        assert value == 0.0


def test_metrics_are_undefined_when_nothing_is_needed():
    for value in (
        M.needed_recall(["a"], ()),
        M.precision(["a"], ()),
        M.f1(["a"], ()),
        M.mrr(["a"], ()),
        M.ndcg_at_k(["a"], (), 5),
        M.recall_at_k(["a"], (), 5),
    ):
        assert math.isnan(value)
    assert M.zero_injection(0) and not M.zero_injection(1)


def test_bootstrap_ci_contains_the_mean_and_narrows_with_more_queries():
    rng = np.random.default_rng(1)
    small = rng.random(20)
    large = rng.random(2000)
    lo_s, hi_s = M.bootstrap_ci(small, seed=0)
    lo_l, hi_l = M.bootstrap_ci(large, seed=0)
    assert lo_s <= small.mean() <= hi_s
    assert lo_l <= large.mean() <= hi_l
    # the width shrinks like 1/sqrt(n): 100x the queries, about a tenth of the width
    assert (hi_l - lo_l) < 0.2 * (hi_s - lo_s)
    # same seed, same interval; nan values are dropped
    assert M.bootstrap_ci(small, seed=0) == (lo_s, hi_s)
    assert M.bootstrap_ci([*small, float("nan")], seed=0) == (lo_s, hi_s)


def test_bootstrap_ci_degenerate_cases():
    assert M.bootstrap_ci([0.25] * 10) == (0.25, 0.25)
    lo, hi = M.bootstrap_ci([])
    assert math.isnan(lo) and math.isnan(hi)


def test_paired_bootstrap_sees_a_difference_independent_intervals_miss():
    rng = np.random.default_rng(0)
    query_difficulty = rng.random(60)  # shared by both retrievers: a paired design cancels it
    a = query_difficulty + 0.05 + rng.normal(0, 0.01, 60)
    b = query_difficulty
    lo_a, _ = M.bootstrap_ci(a)
    _, hi_b = M.bootstrap_ci(b)
    assert lo_a < hi_b  # unpaired intervals overlap
    lo, hi = M.paired_bootstrap_ci(a, b)
    assert 0 < lo <= 0.05 <= hi  # the paired interval excludes 0 and holds the true difference
    # a constant difference has a zero-width interval
    assert M.paired_bootstrap_ci(b + 0.1, b) == pytest.approx((0.1, 0.1))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: M.recall_at_k(["a"], {"a"}, 0), ValueError, "k must be an integer >= 1, got 0"),
        (lambda: M.ndcg_at_k(["a"], {"a"}, -1), ValueError, "got -1"),
        (lambda: M.bootstrap_ci([1.0], n_boot=0), ValueError, "n_boot must be an integer >= 1, got 0"),
        (lambda: M.bootstrap_ci([1.0], alpha=1.5), ValueError, "alpha must be a number in (0, 1), got 1.5"),
        (lambda: M.paired_bootstrap_ci([1.0, 2.0], [1.0]), ValueError, "differ in length: 2 != 1"),
    ],
)
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()
