"""Retrieval metrics on item sets and rankings, and bootstrap confidence intervals over queries.

Every metric here is a pure function of what one query needed and what a retriever injected for it, as
*items* (attribute ids, dialog-turn ids, passage ids; see :mod:`signet_rl.rating.items`), never units.
A ranking is the list of injected items in injection order (units in rank order, each expanded to its items,
an item counted at its first appearance). Relevance is binary: an item is relevant when it is needed.

Definitions, with ``N`` the needed set, ``I`` the set of injected items and ``r_1, r_2, ...`` the ranking:

=================  ===========================================================================================
needed-recall      ``|I ∩ N| / |N|``
precision          ``|I ∩ N| / |I|``; 0 when nothing is injected for a query that needs something
F1                 harmonic mean of precision and needed-recall (0 when both are 0)
recall@k           ``|{r_1..r_k} ∩ N| / |N|`` (the first ``k`` items of the ranking)
nDCG@k             ``DCG@k / IDCG@k`` with ``DCG@k = sum_{i<=k} rel(r_i) / log2(i + 1)`` and ``IDCG@k`` the
                   DCG of a ranking with every needed item first (``min(k, |N|)`` ones)
MRR                ``1 / i`` for the first ``i`` with ``r_i`` needed, 0 when no needed item is injected
=================  ===========================================================================================

Every metric that divides by ``|N|`` is undefined (``nan``) for a query that needs nothing (a non-query:
there the right amount of context is zero, which :func:`zero_injection` measures). Means over queries skip
``nan``.

    >>> needed_recall(["a", "x"], {"a", "b"})
    0.5
    >>> round(ndcg_at_k(["x", "a"], {"a"}, k=2), 4)  # 1/log2(3) / 1
    0.6309
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence

import numpy as np

from signet_rl.core.checks import check_integer, check_range

__all__ = [
    "bootstrap_ci",
    "dedupe",
    "f1",
    "mrr",
    "ndcg_at_k",
    "needed_recall",
    "paired_bootstrap_ci",
    "precision",
    "recall_at_k",
    "zero_injection",
]

NAN = float("nan")


def dedupe(ranking: Iterable[str]) -> list[str]:
    """``ranking`` with each item kept at its first appearance."""
    seen: set[str] = set()
    out = []
    for item in ranking:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def needed_recall(injected: Iterable[str], needed: Collection[str]) -> float:
    """Share of the needed items that were injected; ``nan`` when nothing is needed."""
    need = set(needed)
    if not need:
        return NAN
    return len(need & set(injected)) / len(need)


def precision(injected: Iterable[str], needed: Collection[str]) -> float:
    """Share of the distinct injected items that are needed.

    ``nan`` for a query that needs nothing; 0 when nothing is injected for a query that needs something
    (nothing useful was delivered, and a retriever must not gain precision by staying silent).
    """
    need = set(needed)
    if not need:
        return NAN
    got = set(injected)
    if not got:
        return 0.0
    return len(need & got) / len(got)


def f1(injected: Iterable[str], needed: Collection[str]) -> float:
    """Harmonic mean of :func:`precision` and :func:`needed_recall`; ``nan`` when nothing is needed."""
    items = list(injected)
    p, r = precision(items, needed), needed_recall(items, needed)
    if math.isnan(p) or math.isnan(r):
        return NAN
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def recall_at_k(ranking: Sequence[str], needed: Collection[str], k: int) -> float:
    """Share of the needed items among the first ``k`` distinct items of ``ranking``."""
    _check_k(k)
    return needed_recall(dedupe(ranking)[:k], needed)


def ndcg_at_k(ranking: Sequence[str], needed: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with binary relevance (see the module docstring)."""
    _check_k(k)
    need = set(needed)
    if not need:
        return NAN
    dcg = sum(1.0 / math.log2(i + 2) for i, item in enumerate(dedupe(ranking)[:k]) if item in need)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(need))))
    return dcg / idcg


def mrr(ranking: Sequence[str], needed: Collection[str]) -> float:
    """Reciprocal rank of the first needed item (0 when none is injected); ``nan`` when nothing is needed."""
    need = set(needed)
    if not need:
        return NAN
    for i, item in enumerate(dedupe(ranking)):
        if item in need:
            return 1.0 / (i + 1)
    return 0.0


def zero_injection(num_units: int) -> bool:
    """Whether nothing was injected (the right answer to a non-query)."""
    return num_units == 0


def _check_k(k: int) -> None:
    check_integer("k", k, 1)


# ----------------------------------------------------------------------------------------------------
# Bootstrap over queries


def _finite(values: Iterable[float]) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    return arr[np.isfinite(arr)]


def _check_bootstrap(n_boot: int, alpha: float) -> None:
    check_integer("n_boot", n_boot, 1)
    check_range("alpha", alpha, 0, 1, lo_open=True, hi_open=True)


def _percentile_ci(values: np.ndarray, n_boot: int, alpha: float, seed: int) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_ci(
    values: Iterable[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean of per-query ``values``.

    Queries are resampled with replacement ``n_boot`` times; the interval is the ``alpha/2`` and
    ``1 - alpha/2`` quantiles of the resampled means. ``nan`` values (metrics undefined for a query) are
    dropped first; with no values left the interval is ``(nan, nan)``.

    Args:
        values: one number per query.
        n_boot: number of bootstrap resamples.
        alpha: 1 - confidence level (0.05 gives a 95% interval).
        seed: seeds the resampling.

    Returns:
        ``(low, high)``.

    Example:
        >>> low, high = bootstrap_ci([0.0, 1.0] * 50, seed=0)
        >>> low < 0.5 < high
        True
    """
    _check_bootstrap(n_boot, alpha)
    return _percentile_ci(_finite(values), n_boot, alpha, seed)


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``mean(a - b)`` for two retrievers scored on the same queries.

    ``a[i]`` and ``b[i]`` belong to the same query; queries are resampled as pairs, so the interval reflects
    the per-query difference, not two independent spreads. Pairs where either value is ``nan`` are dropped.
    An interval that excludes 0 reads as a real difference at level ``alpha``.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    _check_bootstrap(n_boot, alpha)
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError(f"paired values differ in length: {len(xa)} != {len(xb)}")
    diff = xa - xb
    return _percentile_ci(diff[np.isfinite(diff)], n_boot, alpha, seed)
