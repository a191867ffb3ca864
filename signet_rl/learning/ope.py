"""Off-policy evaluation of slate policies from logged semi-bandit feedback (IPS, SNIPS, DR).

The model is the *independent-item* (item-position) slate model: interaction ``i`` offers candidates
``a ∈ A_i``; a slate policy ``π`` shows a subset, each candidate with marginal *inclusion probability*
``π(a | x_i)``; each shown item earns its own reward with mean ``μ(x_i, a)`` whatever else is shown; and
the slate's reward is the sum over shown items. A policy's value is then

.. math::

    V(\\pi) = \\mathbb{E}_x \\sum_{a \\in A} \\pi(a \\mid x)\\, \\mu(x, a).

Given ``n`` interactions logged by ``π_0`` (shown items ``S_i``, rewards ``r_ia``, logging inclusion
probabilities ``p_ia = π_0(a | x_i) > 0``), write ``w_ia = π(a | x_i) / p_ia`` for a target policy ``π``:

* **IPS**: ``V̂ = (1/n) Σ_i Σ_{a ∈ S_i} w_ia r_ia`` (unbiased when ``π_0`` covers ``π``'s support).
* **SNIPS**: IPS with the weights self-normalised. ``E[Σ_{a ∈ S_i} w_ia] = K_i := Σ_a π(a | x_i)`` (the
  target's expected slate size, known exactly), so ``V̂ = (Σ_i K_i / n) · Σ_i Σ_{S_i} w r / Σ_i Σ_{S_i} w``
  (0 when no shown item has target weight). Slightly biased, usually much lower variance.
* **DR** (doubly robust): with a reward model ``r̂(x, a)`` for every candidate,
  ``V̂ = (1/n) Σ_i [Σ_{a ∈ A_i} π(a | x_i) r̂(x_i, a) + Σ_{a ∈ S_i} w_ia (r_ia - r̂(x_i, a))]``: unbiased
  when either the propensities or the reward model are right, and low-variance when ``r̂`` is good.

Intervals come from a seeded non-parametric bootstrap over interactions (percentile method).

Data enter as plain arrays in a :class:`LoggedBandit`, independent of any scorer;
:func:`logged_from_records` builds one from :class:`~signet_rl.learning.feedback_log.FeedbackRecord` s and
a target policy's inclusion function (e.g. :func:`target_policy`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from signet_rl.core.checks import check_integer, check_range
from signet_rl.learning.exploration import Strategy, inclusion_probabilities
from signet_rl.learning.feedback_log import FeedbackRecord

__all__ = [
    "ESTIMATORS",
    "LoggedBandit",
    "OPEEstimate",
    "doubly_robust",
    "estimate_all",
    "ips",
    "logged_from_records",
    "snips",
    "target_policy",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: ``target(record) -> inclusion probability of every candidate`` (shape ``[len(record.candidates)]``).
InclusionFn = Callable[[FeedbackRecord], npt.ArrayLike]
#: ``reward_model(record) -> predicted reward of every candidate``.
RewardFn = Callable[[FeedbackRecord], npt.ArrayLike]


@dataclass(frozen=True)
class LoggedBandit:
    """Logged slate interactions as padded arrays: ``n`` interactions, at most ``K`` shown and ``C``
    candidates each.

    Attributes:
        shown: candidate index of each shown item, ``-1`` for padding. Shape ``[n, K]``, int64.
        reward: reward of each shown item (finite where shown; ignored at padding). Shape ``[n, K]``.
        pscore: logging inclusion probability of each shown item, in ``(0, 1]`` where shown. Shape ``[n, K]``.
        target: the target policy's inclusion probability of every candidate, in ``[0, 1]``; 0 beyond an
            interaction's candidates. Shape ``[n, C]``.
        reward_hat: a reward model's prediction for every candidate (DR only), or None. Shape ``[n, C]``.

    Raises:
        ValueError: mismatched shapes or out-of-range values, naming the array and the entry.
    """

    shown: IntArray
    reward: FloatArray
    pscore: FloatArray
    target: FloatArray
    reward_hat: FloatArray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "shown", np.asarray(self.shown, dtype=np.int64))
        for name in ("reward", "pscore", "target"):
            set_(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        if self.reward_hat is not None:
            set_(self, "reward_hat", np.asarray(self.reward_hat, dtype=np.float64))
        n, k = self.shown.shape if self.shown.ndim == 2 else (-1, -1)
        if self.shown.ndim != 2:
            raise ValueError(f"LoggedBandit: shown must have shape [n, K], got {self.shown.shape}")
        for name in ("reward", "pscore"):
            if getattr(self, name).shape != (n, k):
                raise ValueError(
                    f"LoggedBandit: {name} has shape {getattr(self, name).shape}, expected {(n, k)}"
                )
        if self.target.ndim != 2 or self.target.shape[0] != n:
            raise ValueError(f"LoggedBandit: target has shape {self.target.shape}, expected ({n}, C)")
        c = self.target.shape[1]
        if self.reward_hat is not None and self.reward_hat.shape != (n, c):
            raise ValueError(f"LoggedBandit: reward_hat has shape {self.reward_hat.shape}, expected {(n, c)}")
        mask = self.shown >= 0
        _first_bad(
            "shown",
            (self.shown < -1) | (self.shown >= c),
            self.shown,
            f"is not a candidate index in [-1, {c})",
        )
        _first_bad(
            "pscore",
            mask & ~((self.pscore > 0) & (self.pscore <= 1)),
            self.pscore,
            "for a shown item; logging propensities must be in (0, 1]",
        )
        _first_bad(
            "reward",
            mask & ~np.isfinite(self.reward),
            self.reward,
            "for a shown item; rewards must be finite",
        )
        _first_bad("target", ~((self.target >= 0) & (self.target <= 1)), self.target, "is outside [0, 1]")
        if self.reward_hat is not None:
            _first_bad("reward_hat", ~np.isfinite(self.reward_hat), self.reward_hat, "is not finite")
        for i in np.flatnonzero(mask.sum(axis=1) > 1):
            row = self.shown[i][mask[i]]
            if len(np.unique(row)) != len(row):
                raise ValueError(f"LoggedBandit: shown[{i}] repeats a candidate: {row.tolist()}")

    def __len__(self) -> int:
        return len(self.shown)

    @property
    def mask(self) -> npt.NDArray[np.bool_]:
        """Where ``shown`` holds an item. Shape ``[n, K]``."""
        return self.shown >= 0

    def weights(self) -> FloatArray:
        """``w = π(a | x) / π_0(a | x)`` for each shown item, 0 at padding. Shape ``[n, K]``."""
        shown_target = np.take_along_axis(self.target, np.maximum(self.shown, 0), axis=1)
        return np.where(self.mask, shown_target / np.where(self.mask, self.pscore, 1.0), 0.0)


def _first_bad(name: str, bad: npt.NDArray[np.bool_], values: np.ndarray, why: str) -> None:
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"LoggedBandit: {name}[{i}, {j}] = {values[i, j].item()!r} {why}")


@dataclass(frozen=True)
class OPEEstimate:
    """An estimated policy value with a bootstrap interval.

    Attributes:
        value: the estimate on all ``n`` interactions.
        ci_low: lower bootstrap percentile bound.
        ci_high: upper bootstrap percentile bound.
        n: the number of interactions.
    """

    value: float
    ci_low: float
    ci_high: float
    n: int

    def metrics(self, name: str, prefix: str = "ope") -> dict[str, float]:
        """``{"ope/<name>": value, "ope/<name>_ci_low": ..., "ope/<name>_ci_high": ...}``."""
        key = f"{prefix}/{name}"
        return {key: self.value, f"{key}_ci_low": self.ci_low, f"{key}_ci_high": self.ci_high}


# -- estimators ------------------------------------------------------------------------------------------
# Each reduces the data to per-interaction columns whose column sums over any resample give the estimate.


def _bootstrap(
    columns: FloatArray,
    reduce: Callable[[FloatArray, int], FloatArray],
    n_boot: int,
    alpha: float,
    seed: int | np.random.Generator | None,
) -> OPEEstimate:
    """``reduce(sums [B, c], n) -> [B]`` on the full data and on ``n_boot`` resamples of its rows."""
    check_integer("n_boot", n_boot, 1)
    check_range("alpha", alpha, 0, 1, lo_open=True, hi_open=True)
    n = len(columns)
    if n == 0:
        raise ValueError("no logged interactions to estimate from")
    value = float(reduce(columns.sum(axis=0, keepdims=True), n)[0])
    rng = np.random.default_rng(seed)
    chunk = max(1, (1 << 22) // n)
    boots = []
    for start in range(0, n_boot, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_boot - start), n))
        boots.append(reduce(columns[idx].sum(axis=1), n))
    lo, hi = np.quantile(np.concatenate(boots), [alpha / 2, 1 - alpha / 2])
    return OPEEstimate(value=value, ci_low=float(lo), ci_high=float(hi), n=n)


def _mean(sums: FloatArray, n: int) -> FloatArray:
    return sums[:, 0] / n


def ips(
    data: LoggedBandit, *, n_boot: int = 1000, alpha: float = 0.05, seed: int | np.random.Generator | None = 0
) -> OPEEstimate:
    """Inverse propensity scoring (see the module docstring).

    Args:
        data: the logged interactions with the target's inclusion probabilities.
        n_boot: bootstrap resamples.
        alpha: the interval is the ``alpha/2`` and ``1 - alpha/2`` bootstrap quantiles.
        seed: seeds the bootstrap.
    """
    per = (data.weights() * np.where(data.mask, data.reward, 0.0)).sum(axis=1)
    return _bootstrap(per[:, None], _mean, n_boot, alpha, seed)


def _snips_reduce(sums: FloatArray, n: int) -> FloatArray:
    num, den, size = sums[:, 0], sums[:, 1], sums[:, 2]
    return np.divide(size / n * num, den, out=np.zeros(len(sums)), where=den > 0)


def snips(
    data: LoggedBandit, *, n_boot: int = 1000, alpha: float = 0.05, seed: int | np.random.Generator | None = 0
) -> OPEEstimate:
    """Self-normalised IPS (see the module docstring); arguments as :func:`ips`."""
    w = data.weights()
    cols = np.stack(
        [(w * np.where(data.mask, data.reward, 0.0)).sum(axis=1), w.sum(axis=1), data.target.sum(axis=1)],
        axis=1,
    )
    return _bootstrap(cols, _snips_reduce, n_boot, alpha, seed)


def doubly_robust(
    data: LoggedBandit, *, n_boot: int = 1000, alpha: float = 0.05, seed: int | np.random.Generator | None = 0
) -> OPEEstimate:
    """Doubly robust estimation (see the module docstring); arguments as :func:`ips`.

    Needs ``data.reward_hat``.

    Raises:
        ValueError: ``data.reward_hat`` is None.
    """
    if data.reward_hat is None:
        raise ValueError(
            "doubly_robust needs LoggedBandit.reward_hat: a reward model's prediction per candidate"
        )
    direct = (data.target * data.reward_hat).sum(axis=1)
    shown_hat = np.take_along_axis(data.reward_hat, np.maximum(data.shown, 0), axis=1)
    residual = np.where(data.mask, data.reward - shown_hat, 0.0)
    per = direct + (data.weights() * residual).sum(axis=1)
    return _bootstrap(per[:, None], _mean, n_boot, alpha, seed)


#: Estimators by metric name.
ESTIMATORS: Mapping[str, Callable[..., OPEEstimate]] = {"ips": ips, "snips": snips, "dr": doubly_robust}


def estimate_all(data: LoggedBandit, **kwargs: Any) -> dict[str, OPEEstimate]:
    """Every estimator in :data:`ESTIMATORS` (DR only with ``data.reward_hat``), same bootstrap seed."""
    return {
        name: fn(data, **kwargs)
        for name, fn in ESTIMATORS.items()
        if name != "dr" or data.reward_hat is not None
    }


# -- from feedback records -------------------------------------------------------------------------------


def target_policy(
    score_fn: Callable[[FeedbackRecord], npt.ArrayLike],
    k: int,
    strategy: Strategy | str,
    **kwargs: Any,
) -> InclusionFn:
    """A target policy's inclusion function for :func:`logged_from_records`: score a record's candidates
    with ``score_fn`` and take :func:`~signet_rl.learning.exploration.inclusion_probabilities`.

    >>> greedy_on_logged = target_policy(lambda r: r.candidate_scores, k=2, strategy="greedy")
    """

    def inclusion(record: FeedbackRecord) -> FloatArray:
        return inclusion_probabilities(np.asarray(score_fn(record), dtype=np.float64), k, strategy, **kwargs)

    return inclusion


def logged_from_records(
    records: Sequence[FeedbackRecord],
    target: InclusionFn,
    *,
    reward_model: RewardFn | None = None,
    unrated: float = 0.0,
) -> LoggedBandit:
    """Pad logged records into a :class:`LoggedBandit` for a target policy.

    Args:
        records: the logged interactions (their ``pscores`` are the logging propensities).
        target: the target policy's inclusion probability of every candidate of a record.
        reward_model: predicted reward of every candidate of a record (for DR), or None.
        unrated: the reward given to a shown item rated ``None``.

    Raises:
        ValueError: a target or reward-model output of the wrong length, naming the record.
    """
    n = len(records)
    k = max((len(r.shown) for r in records), default=0)
    c = max((len(r.candidates) for r in records), default=0)
    shown = np.full((n, k), -1, dtype=np.int64)
    reward = np.zeros((n, k))
    pscore = np.ones((n, k))
    tgt = np.zeros((n, c))
    hat = np.zeros((n, c)) if reward_model is not None else None
    for i, r in enumerate(records):
        m, nc = len(r.shown), len(r.candidates)
        shown[i, :m] = r.shown
        reward[i, :m] = [unrated if x is None else x for x in r.ratings]
        pscore[i, :m] = r.pscores
        who = f"record run={r.run_id!r} step={r.step} query={r.query_id!r}"
        t = np.asarray(target(r), dtype=np.float64)
        if t.shape != (nc,):
            raise ValueError(f"{who}: target gave shape {t.shape}, expected ({nc},) (one per candidate)")
        tgt[i, :nc] = t
        if reward_model is not None and hat is not None:
            h = np.asarray(reward_model(r), dtype=np.float64)
            if h.shape != (nc,):
                raise ValueError(
                    f"{who}: reward_model gave shape {h.shape}, expected ({nc},) (one per candidate)"
                )
            hat[i, :nc] = h
    return LoggedBandit(shown=shown, reward=reward, pscore=pscore, target=tgt, reward_hat=hat)
