"""Fusing a vector ranking with a keyword ranking: Signet's linear fusion, linear fusion of min-max
normalised legs, and reciprocal-rank fusion.

All three return ``[(id, score), ...]`` sorted by score, best first, ties broken by id (ascending) so results
are deterministic.

Linear fusion is Signet's ``hybridRecall`` step 3, as its code reads: an id's score in a leg is what that
leg gave it (0 when absent); *found by both* means a positive score in both legs, giving
``alpha·vector + (1 − alpha)·keyword``; otherwise the id keeps the score of the leg that found it; ids
scoring below ``min_score`` are dropped. The keyword scores must already be normalised to [0, 1] by the
caller (FTS5: ``|bm25| / max |bm25|`` over the batch; bm25s: min-max within the batch, whose lowest hit
becomes 0 and so counts as not found by keyword, exactly as in Signet's code).

    >>> [(i, round(s, 5)) for i, s in linear_fusion({"a": 0.8, "b": 0.5}, {"a": 1.0, "c": 0.3})]
    [('a', 0.86), ('b', 0.5), ('c', 0.3)]

Min-max linear fusion (:func:`minmax_fusion`) is the textbook convex combination: each leg is min-max
normalised within the batch, an id absent from a leg scores 0 there, and every id gets
``alpha·vector + (1 − alpha)·keyword``, so unlike Signet's rule an id found by one leg is not kept at that
leg's raw score.

    >>> [(i, round(s, 5)) for i, s in minmax_fusion({"a": 0.8, "b": 0.5}, {"a": 1.0, "c": 0.3}, 0.5)]
    [('a', 1.0), ('b', 0.0), ('c', 0.0)]
    >>> [(i, round(s, 5)) for i, s in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])]
    [('b', 0.03252), ('a', 0.01639), ('c', 0.01613)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from signet_rl.core.checks import check_probability

__all__ = ["linear_fusion", "min_max", "minmax_fusion", "reciprocal_rank_fusion"]


def _sorted(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def linear_fusion(
    vector: Mapping[str, float],
    keyword: Mapping[str, float],
    alpha: float = 0.7,
    min_score: float = 0.1,
) -> list[tuple[str, float]]:
    """Signet's linear fusion of a vector leg and a (normalised) keyword leg.

    Args:
        vector: id -> cosine similarity.
        keyword: id -> keyword score normalised to [0, 1].
        alpha: weight of the vector leg when both legs found an id.
        min_score: ids whose fused score is below it are dropped.

    Returns:
        ``[(id, score)]``, best first, ties by id.

    Raises:
        ValueError: ``alpha`` outside [0, 1].
    """
    check_probability("alpha", alpha)
    fused: dict[str, float] = {}
    for key in {*vector, *keyword}:
        v = float(vector.get(key, 0.0))
        k = float(keyword.get(key, 0.0))
        if v > 0 and k > 0:
            score = alpha * v + (1.0 - alpha) * k
        elif v > 0:
            score = v
        else:
            score = k
        if score >= min_score:
            fused[key] = score
    return _sorted(fused)


def minmax_fusion(
    vector: Mapping[str, float],
    keyword: Mapping[str, float],
    alpha: float = 0.5,
    min_score: float = 0.0,
) -> list[tuple[str, float]]:
    """Linear fusion of min-max normalised legs: ``alpha·mm(vector) + (1 − alpha)·mm(keyword)``.

    Each leg is normalised with :func:`min_max` within the batch (its best hit 1, its worst 0; a leg with
    one hit, or all hits equal, gives 1.0 each); an id absent from a leg scores 0 in it.

    Args:
        vector: id -> raw vector score (cosine similarity).
        keyword: id -> raw keyword score (any scale: it is normalised here).
        alpha: weight of the vector leg.
        min_score: ids whose fused score is below it are dropped.

    Returns:
        ``[(id, score)]``, best first, ties by id.

    Raises:
        ValueError: ``alpha`` outside [0, 1].
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    v, k = min_max(vector), min_max(keyword)
    fused = {
        key: alpha * v.get(key, 0.0) + (1.0 - alpha) * k.get(key, 0.0) for key in {*vector, *keyword}
    }
    return _sorted({key: s for key, s in fused.items() if s >= min_score})


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: ``score(id) = Σ_rankings 1 / (k + rank)``, ranks counted from 1.

    Args:
        rankings: each a list of ids, best first (an id repeated within one ranking counts once, at its
            best rank).
        k: the RRF constant (60 in Cormack et al.).

    Returns:
        ``[(id, score)]``, best first, ties by id.

    Raises:
        ValueError: ``k`` below 0.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, key in enumerate(ranking, start=1):
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return _sorted(fused)


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Min-max normalise ``scores`` to [0, 1] within the batch; all equal (or one score) gives 1.0 each."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi <= lo:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - lo) / (hi - lo) for key, value in scores.items()}
