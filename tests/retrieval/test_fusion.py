"""Fusion formulas against hand-computed values."""

from __future__ import annotations

import pytest

from signet_rl.retrieval.fusion import linear_fusion, min_max, reciprocal_rank_fusion


def _rounded(pairs, digits=6):
    return [(key, round(score, digits)) for key, score in pairs]


def test_linear_fusion_hand_computed():
    vector = {"a": 0.9, "b": 0.5, "c": 0.05}
    keyword = {"a": 0.6, "d": 1.0, "e": 0.08}
    # a: 0.7 * 0.9 + 0.3 * 0.6 = 0.81 (both legs); b, d: one leg, raw score; c, e: below 0.1, dropped
    assert _rounded(linear_fusion(vector, keyword)) == [("d", 1.0), ("a", 0.81), ("b", 0.5)]
    # another alpha: a = 0.5 * 0.9 + 0.5 * 0.6 = 0.75
    assert _rounded(linear_fusion(vector, keyword, alpha=0.5, min_score=0.0)) == [
        ("d", 1.0),
        ("a", 0.75),
        ("b", 0.5),
        ("e", 0.08),
        ("c", 0.05),
    ]


def test_linear_fusion_ties_by_id_and_min_score_is_inclusive():
    assert linear_fusion({"b": 0.5, "a": 0.5, "c": 0.1}, {}) == [("a", 0.5), ("b", 0.5), ("c", 0.1)]


def test_a_zero_leg_score_counts_as_not_found():
    # bm25s min-max gives the batch's weakest hit 0; Signet's `bm25 > 0 && vec > 0` then keeps
    # the vector score
    assert linear_fusion({"a": 0.5}, {"a": 0.0}) == [("a", 0.5)]
    # a negative cosine is not "found" by the vector leg either
    assert _rounded(linear_fusion({"a": -0.2}, {"a": 0.4})) == [("a", 0.4)]


def test_linear_fusion_rejects_bad_alpha():
    with pytest.raises(ValueError, match=r"^alpha must be a number in \[0, 1\], got 1.5$"):
        linear_fusion({}, {}, alpha=1.5)


def test_rrf_hand_computed():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    # a: 1/61 + 1/62 = 0.0163934 + 0.0161290 = 0.0325225
    # c: 1/63 + 1/61 = 0.0158730 + 0.0163934 = 0.0322665; b: 1/62 = 0.0161290
    assert _rounded(fused, 7) == [("a", 0.0325225), ("c", 0.0322665), ("b", 0.016129)]
    assert _rounded(reciprocal_rank_fusion([["x", "y"]], k=0)) == [("x", 1.0), ("y", 0.5)]


def test_rrf_counts_a_repeated_id_once_and_breaks_ties_by_id():
    assert reciprocal_rank_fusion([["b", "b"], ["a"]], k=1) == [("a", 0.5), ("b", 0.5)]
    assert reciprocal_rank_fusion([]) == []
    with pytest.raises(ValueError, match="RRF k"):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_min_max():
    assert min_max({"a": 2.0, "b": 4.0, "c": 6.0}) == {"a": 0.0, "b": 0.5, "c": 1.0}
    assert min_max({"a": 3.0}) == {"a": 1.0}
    assert min_max({}) == {}
