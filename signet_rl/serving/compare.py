"""The online comparison of desire paths against flat recall: a randomised mixed slate, logged with exact
propensities, a win rate, and off-policy estimates of the desire policy's value.

**The slate.** Each recall has two rankings: the desire retriever's constructed memories and Signet's flat
recall. Their union is scored by weighted reciprocal-rank fusion, Signet's own way of mixing its
predictor with its baseline (``k = 12``; weight ``alpha`` on desire, ``1 - alpha`` on flat), and the shown
slate of ``k`` is drawn by Plackett-Luce sampling at ``temperature`` over those scores. Every candidate
therefore has a known, positive probability of being shown
(:func:`~signet_rl.learning.exploration.plackett_luce_inclusion`), and each shown result is labelled with the
system that ranks it higher (``desire`` or ``flat``; one both rank equally, e.g. a memory both put first, is
labelled by the better-fused side and counts for neither in the win rate).

**Win rate.** Per rated recall, the desire side wins when the ratings of its shown results sum higher than
the flat side's; ties are dropped. The rate is wins / (wins + losses) with a Wilson 95% interval.

**Off-policy value.** The *target* is the desire policy alone: its top ``k`` constructed memories
(inclusion 1, every other candidate 0). From the log of mixed slates (shown items, ratings, propensities)
IPS, SNIPS and DR (:mod:`signet_rl.learning.ope`) estimate the summed rating the desire slate would earn
per recall, without ever showing it alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from signet_rl.learning.exploration import plackett_luce_inclusion
from signet_rl.learning.ope import LoggedBandit, estimate_all

__all__ = ["RRF_K", "MixedSlate", "compare_report", "logged_bandit", "mix", "wilson", "win_rate"]

#: Signet's reciprocal-rank-fusion constant.
RRF_K = 12


@dataclass(frozen=True)
class MixedSlate:
    """One recall's candidates (desire's then flat's not already there), the shown ones and their odds.

    Attributes:
        keys: candidate keys (a constructed memory's unit id, or a flat memory id).
        systems: per candidate, ``"desire"`` or ``"flat"`` (the system ranking it higher).
        desire_rank: per candidate, its 0-based rank in the desire ranking, -1 when absent.
        flat_rank: the same in the flat ranking.
        fused: the fusion score the slate was drawn from.
        shown: indices into ``keys`` in slate order.
        pscores: each shown candidate's inclusion probability, in ``(0, 1]``.
        inclusion: every candidate's inclusion probability (sums to ``len(shown)``).
    """

    keys: tuple[str, ...]
    systems: tuple[str, ...]
    desire_rank: tuple[int, ...]
    flat_rank: tuple[int, ...]
    fused: tuple[float, ...]
    shown: tuple[int, ...]
    pscores: tuple[float, ...]
    inclusion: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {f: list(getattr(self, f)) for f in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MixedSlate:
        return cls(**{f: tuple(data[f]) for f in cls.__dataclass_fields__})


def mix(desire: Sequence[str], flat: Sequence[str], k: int, rng: np.random.Generator, *, alpha: float = 0.5,
        temperature: float = 0.02) -> MixedSlate:  # fmt: skip
    """Draw one mixed slate (see the module docstring).

    Args:
        desire: the desire ranking's keys, best first (distinct).
        flat: the flat ranking's keys, best first (distinct); a key in both is one candidate.
        k: slate size.
        rng: the only source of randomness.
        alpha: the desire side's fusion weight, in ``[0, 1]``.
        temperature: Plackett-Luce temperature over the RRF scores (which lie in ``[0, 1/13]``), ``> 0``.

    Raises:
        ValueError: a repeated key within one ranking, ``k < 1``, or ``alpha``/``temperature`` out of range.
    """
    for name, ranking in (("desire", desire), ("flat", flat)):
        if len(set(ranking)) != len(ranking):
            dup = next(x for i, x in enumerate(ranking) if x in ranking[:i])
            raise ValueError(f"the {name} ranking repeats key {dup!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    keys = list(desire) + [x for x in flat if x not in set(desire)]
    d_rank = {x: i for i, x in enumerate(desire)}
    f_rank = {x: i for i, x in enumerate(flat)}
    dr = np.array([d_rank.get(x, -1) for x in keys], dtype=np.int64)
    fr = np.array([f_rank.get(x, -1) for x in keys], dtype=np.int64)
    d_part = np.where(dr >= 0, alpha / (RRF_K + 1 + dr), 0.0)
    f_part = np.where(fr >= 0, (1 - alpha) / (RRF_K + 1 + fr), 0.0)
    fused = d_part + f_part
    systems = tuple("desire" if d > f else "flat" for d, f in zip(d_part, f_part, strict=True))
    n = len(keys)
    if n == 0:
        return MixedSlate((), (), (), (), (), (), (), ())
    logits = fused / temperature
    inclusion = plackett_luce_inclusion(logits, k)
    kk = min(k, n)
    gumbel = rng.gumbel(size=n)
    order = np.argsort(-(logits + gumbel), kind="stable")[:kk]
    shown = tuple(int(i) for i in order)
    return MixedSlate(tuple(keys), systems, tuple(int(x) for x in dr), tuple(int(x) for x in fr),
                      tuple(float(x) for x in fused), shown, tuple(float(inclusion[i]) for i in shown),
                      tuple(float(x) for x in inclusion))  # fmt: skip


def wilson(wins: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``wins / n`` (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def win_rate(slates: Sequence[MixedSlate], ratings: Sequence[Sequence[float | None]]) -> dict[str, Any]:
    """Desire's win rate over rated recalls (see the module docstring); ``ratings`` align with each
    slate's ``shown`` (None: unrated)."""
    wins = losses = ties = 0
    for slate, rated in zip(slates, ratings, strict=True):
        if all(r is None for r in rated):
            continue
        side = {"desire": 0.0, "flat": 0.0}
        for i, r in zip(slate.shown, rated, strict=True):
            if r is not None and slate.desire_rank[i] != slate.flat_rank[i]:
                side[slate.systems[i]] += float(r)
        if side["desire"] > side["flat"]:
            wins += 1
        elif side["desire"] < side["flat"]:
            losses += 1
        else:
            ties += 1
    lo, hi = wilson(wins, wins + losses)
    rate = wins / (wins + losses) if wins + losses else float("nan")
    return {"wins": wins, "losses": losses, "ties": ties, "win_rate": rate, "ci95": (lo, hi)}


def logged_bandit(slates: Sequence[MixedSlate], ratings: Sequence[Sequence[float | None]], k: int,
                  unrated: float = 0.0) -> LoggedBandit:  # fmt: skip
    """The log as a :class:`LoggedBandit` whose target is the desire policy's top ``k``."""
    n = len(slates)
    width = max((len(s.shown) for s in slates), default=0)
    cands = max((len(s.keys) for s in slates), default=0)
    shown = np.full((n, max(width, 1)), -1, dtype=np.int64)
    reward = np.zeros((n, max(width, 1)))
    pscore = np.ones((n, max(width, 1)))
    target: npt.NDArray[np.float64] = np.zeros((n, max(cands, 1)))
    for i, (s, rated) in enumerate(zip(slates, ratings, strict=True)):
        m = len(s.shown)
        shown[i, :m] = s.shown
        reward[i, :m] = [unrated if r is None else float(r) for r in rated]
        pscore[i, :m] = s.pscores
        dr = np.asarray(s.desire_rank)
        target[i, : len(dr)] = (dr >= 0) & (dr < k)
    # DR's reward model: the mean logged rating of shown items at the same desire rank (flat-only items
    # pooled), a direct method fitted on the log itself
    sums: dict[int, list[float]] = {}
    for s, rated in zip(slates, ratings, strict=True):
        for j, r in zip(s.shown, rated, strict=True):
            sums.setdefault(int(s.desire_rank[j]), []).append(unrated if r is None else float(r))
    mean = {b: float(np.mean(v)) for b, v in sums.items()}
    overall = float(np.mean([x for v in sums.values() for x in v])) if sums else 0.0
    reward_hat = np.zeros_like(target)
    for i, s in enumerate(slates):
        reward_hat[i, : len(s.keys)] = [mean.get(int(b), overall) for b in s.desire_rank]
    return LoggedBandit(shown=shown, reward=reward, pscore=pscore, target=target, reward_hat=reward_hat)


def compare_report(slates: Sequence[MixedSlate], ratings: Sequence[Sequence[float | None]], k: int,
                   seed: int = 0, bootstrap: int = 500) -> dict[str, Any]:  # fmt: skip
    """Win rate and IPS / SNIPS / DR of the desire policy's top ``k``, with 95% intervals."""
    out: dict[str, Any] = {"recalls": len(slates),
                           "rated": sum(any(r is not None for r in rs) for rs in ratings),
                           **win_rate(slates, ratings)}  # fmt: skip
    if slates:
        est = estimate_all(logged_bandit(slates, ratings, k), n_boot=bootstrap, seed=seed)
        out["ope"] = {name: {"value": e.value, "ci95": (e.ci_low, e.ci_high)} for name, e in est.items()}
    return out
