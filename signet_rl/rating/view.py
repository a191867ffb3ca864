"""The rater's side of an environment: a constructed memory's items, rated by the simulated rater's rule.

Used by the Gymnasium environments (:mod:`signet_rl.envs`), which never read ground truth themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from signet_rl.core.checks import check_probability
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset
from signet_rl.rating.items import ItemResolver
from signet_rl.rating.rater import SimulatedRater, observe

__all__ = ["RatingView"]


class RatingView:
    """The rater's side of a constructed memory: the ids it holds, in the kind the truth counts, rated as a
    :class:`~signet_rl.rating.rater.SimulatedRater` rates them.

    A constructed memory holds the attribute ids on its path (:meth:`MemoryBuilder.construct`'s ``items``),
    plus the entities it reaches after its start for datasets whose truth counts entities. For truth that
    counts memories (LoCoMo, MuSiQue) each attribute is resolved to its memory as the evaluation harness does
    (:class:`~signet_rl.rating.items.ItemResolver`). Ratings are -1, 0, +1, or None (unrated).

    :meth:`rate` is :meth:`SimulatedRater.rate` with its three uniforms per rating (rated?, flipped?, to
    which label?) drawn from the rater's generator in blocks of 1,024 ratings, so a rating costs a set
    lookup rather than a generator call: the same rule and distribution, a cheaper stream.

    Args:
        dataset: the dataset (its ground truth is read here and nowhere else in the environments).
        noise_rate: the rater's label-flip probability.
        rating_prob: the probability a memory is rated at all.
    """

    BLOCK = 1024

    def __init__(self, dataset: Dataset, noise_rate: float = 0.05, rating_prob: float = 0.8) -> None:
        check_probability("noise_rate", noise_rate)
        check_probability("rating_prob", rating_prob)
        self.dataset = dataset
        self.noise_rate = float(noise_rate)
        self.rating_prob = float(rating_prob)
        self.resolver = ItemResolver(dataset)
        self.rater = SimulatedRater(dataset.truth, self.noise_rate, self.rating_prob, seed=0)
        self.entity_items = any(t.needed_kind == "entity" for t in dataset.truth.values())
        self._memory_kind = any(t.needed_kind == "memory" for t in dataset.truth.values())
        self._u: list[list[float]] = []
        self._pos = 0

    def seed(self, seed: int) -> None:
        """Restart the rater's noise stream."""
        self.rater.rng = np.random.default_rng(seed)
        self._u, self._pos = [], 0

    def get_state(self) -> dict[str, Any]:
        """The noise stream's state (for pickling an environment)."""
        return {"rng": self.rater.rng.bit_generator.state, "u": self._u, "pos": self._pos}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.rater.rng.bit_generator.state = state["rng"]
        self._u, self._pos = state["u"], state["pos"]

    def items(
        self,
        query: Query,
        attribute_ids: Iterable[str],
        entity_ids: Iterable[str] = (),
        text: str | None = None,
    ) -> list[str]:
        """The truth-kind items of a memory holding these attributes (and these reached entities).

        With ``text`` (the constructed memory's text) the items are exactly the harness's
        (:meth:`ItemResolver.items`, the credit rule of :mod:`signet_rl.rating.items`): a listed row whose
        whole content ``text`` does not inject (a source passage cut short) is a noise item
        ``"<id>#part"``. Without it the ids are taken as
        carried, which holds for attribute ids on a path: :meth:`MemoryBuilder.construct` writes every
        attribute's whole content, so the edge-walk environment, which rates a stopped path's attribute
        ids before building its text, credits exactly what the harness would.
        """
        items = list(attribute_ids)
        if self.entity_items:
            items += [e for e in entity_ids if e not in items]
        if text is not None:
            return self.resolver.items(query, items, text)
        if self._memory_kind and self.dataset.truth[query.id].needed_kind == "memory":
            out: list[str] = []
            for i in items:
                out.extend(self.resolver.resolve_id(query, i))
            return out
        return items

    def rate(self, query: Query, items: Iterable[str]) -> int | None:
        """The observed rating (noisy, possibly None)."""
        true = self.rater.true_rating(query.id, items)
        if self._pos >= len(self._u):
            self._u, self._pos = self.rater.rng.random((self.BLOCK, 3)).tolist(), 0
        u = self._u[self._pos]
        self._pos += 1
        observed = observe(true, u, self.noise_rate, self.rating_prob)
        return None if observed is None else int(observed)

    def true_rating(self, query: Query, items: Iterable[str]) -> int:
        """The noiseless rating (for oracle evaluation only)."""
        return int(self.rater.true_rating(query.id, items))
