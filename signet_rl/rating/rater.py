"""A simulated rater: how a user (or agent) would rate each injected unit, from ground truth.

Signet's feedback is a number in [-1, 1] per memory; signet_rl rates one injected unit (a constructed
memory, or a flat memory) as helpful (+1), noise (0) or misleading (-1):

* **misleading** (-1) when the unit holds any item the query's truth marks as misleading (a superseded
  version the user has moved on from);
* **helpful** (+1) when it holds any needed item (and nothing misleading);
* **noise** (0) otherwise — including anything injected for a non-query.

With probability ``noise_rate`` the true label is replaced by one of the two others (uniformly), and with
probability ``1 - rating_prob`` the unit is not rated at all (``None``), as real users rate only some of what
they are shown. Only the rater and the evaluator ever see ground truth.

    >>> rater = SimulatedRater(truth, noise_rate=0.0, rating_prob=1.0, seed=0)  # doctest: +SKIP
    >>> rater.rate("q-00001", ["att-0000042"])  # doctest: +SKIP
    1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum

import numpy as np

from signet_rl.datasets.base import GroundTruth

__all__ = ["Rating", "SimulatedRater", "observe"]


class Rating(IntEnum):
    MISLEADING = -1
    NOISE = 0
    HELPFUL = 1


def observe(true: Rating, u: Sequence[float], noise_rate: float, rating_prob: float) -> Rating | None:
    """The rater's rule: from the true rating and three uniforms (rated?, flipped?, to which label?), the
    observed rating: ``None`` (unrated) with probability ``1 - rating_prob``, else one of the two other labels
    (uniformly) with probability ``noise_rate``, else the true one. Every rater here applies this rule."""
    u_rated, u_flip, u_which = u
    if u_rated >= rating_prob:
        return None
    if u_flip < noise_rate:
        return [r for r in Rating if r != true][int(u_which * 2)]
    return true


class SimulatedRater:
    """Rates injected units from ground truth, with rating noise and partial rating.

    Args:
        truth: the dataset's ground truth.
        noise_rate: probability that a rating is flipped to another label, in [0, 1].
        rating_prob: probability that a unit is rated at all, in [0, 1].
        seed: seeds the noise; the same seed and the same sequence of calls give the same ratings.
    """

    def __init__(
        self, truth: GroundTruth, noise_rate: float = 0.05, rating_prob: float = 0.8, seed: int = 0
    ) -> None:
        for name, value in (("noise_rate", noise_rate), ("rating_prob", rating_prob)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"SimulatedRater: {name}={value!r} must be in [0, 1]")
        self.truth = truth
        self.noise_rate = noise_rate
        self.rating_prob = rating_prob
        self.rng = np.random.default_rng(seed)
        self._sets: dict[str, tuple[frozenset[str], frozenset[str]]] = {}

    def true_rating(self, query_id: str, item_ids: Iterable[str]) -> Rating:
        """The noiseless rating of a unit made of ``item_ids``.

        Raises:
            KeyError: ``query_id`` has no ground truth.
        """
        if query_id not in self._sets:
            try:
                t = self.truth[query_id]
            except KeyError:
                raise KeyError(f"no ground truth for query {query_id!r}") from None
            self._sets[query_id] = (frozenset(t.needed), frozenset(t.misleading))
        needed, misleading = self._sets[query_id]
        items = set(item_ids)
        if items & misleading:
            return Rating.MISLEADING
        if items & needed:
            return Rating.HELPFUL
        return Rating.NOISE

    def rate(self, query_id: str, item_ids: Iterable[str]) -> Rating | None:
        """The observed rating of one unit: possibly flipped, possibly missing (``None``)."""
        u = self.rng.random(3).tolist()  # the same three uniforms, as the floats observe() takes
        return observe(self.true_rating(query_id, item_ids), u, self.noise_rate, self.rating_prob)

    def rate_many(self, query_id: str, units: Sequence[Iterable[str]]) -> list[Rating | None]:
        """Ratings of several units shown for one query, in order."""
        return [self.rate(query_id, unit) for unit in units]
