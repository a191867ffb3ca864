"""What the non-learned scorers know, as inputs for learned ones, and their non-learned fusion.

* :class:`BaseScores` — per candidate path, the scores of the non-learned scorers, standardised within
  the query's candidate set: ``float32 [n, 3]`` with the columns :data:`BASE_SCORES`:

  - ``prior``: :math:`\\ln` of :class:`~signet_rl.scorers.prior.PriorScorer`'s score (confidence × strength,
    aspect weight, importance, recency, and the query relevance of the path's facts when the retriever
    supplies it), floored at :math:`10^{-12}`;
  - ``ppr``: :class:`~signet_rl.scorers.prior.PPRScorer`'s rank mass of what the path reaches;
  - ``flat``: the best query relevance of the path's facts (``ScoringContext.relevance``: the cosine of
    each fact's text to the query, what flat retrieval ranks by; 0 for a path without facts or without
    relevance).

  Each column is z-scored over the candidates of the query, :math:`(x - \\bar x) / \\max(\\sigma, 10^{-6})`,
  so that scores of different scales and of different queries are comparable (a single candidate gets
  zeros). Nothing here reads ground truth, and nothing learns.
* :class:`FusedScorer` (registered as ``fused``; ``desire_fused`` in result tables) — the non-learned
  fusion :math:`s = w^\\top z` of those columns. Its weights are not learned from ratings: they are chosen
  on *validation* queries by a small grid (``experiments/fused_grid.py``) and frozen in
  ``conf/scorer/fused.yaml``; the learned scorers (``gnn`` and ``linucb`` with ``base_scores=true``) take
  the same columns as inputs and must beat it.

    >>> FusedScorer(prior=1.0, ppr=0.5, flat=1.0).weights.tolist()
    [1.0, 0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from signet_rl.core.checks import check_range
from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import ScoringContext, register
from signet_rl.scorers.prior import (
    PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
    PRIOR_HALF_LIFE_DAYS,
    PPRScorer,
    PriorScorer,
)
from signet_rl.traversal.path import Path

__all__ = ["BASE_SCORES", "DEFAULT_FUSED_WEIGHTS", "BaseScores", "FusedScorer", "standardise"]

#: Column names of :meth:`BaseScores.features`, in order.
BASE_SCORES: tuple[str, ...] = ("prior", "ppr", "flat")
#: The fusion weights chosen on synthetic v2 medium validation (``experiments/fused_grid.py``); the
#: constructor defaults of :class:`FusedScorer` and the starting skip weights of the GNN's residual.
DEFAULT_FUSED_WEIGHTS: dict[str, float] = {"prior": 0.0, "ppr": 1.0, "flat": 0.0}


def standardise(x: npt.ArrayLike) -> np.ndarray:
    """Columns of ``x`` (``[n, k]``) z-scored over the rows, the spread floored at 1e-6; float64.

        >>> standardise([[1.0], [3.0]]).ravel().tolist()
        [-1.0, 1.0]
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"standardise expects a [n, k] array, got shape {a.shape}")
    if len(a) == 0:
        return a.copy()
    return (a - a.mean(axis=0)) / np.maximum(a.std(axis=0), 1e-6)


class BaseScores:
    """The non-learned scorers' view of a query's candidates (see the module docstring).

    Args:
        half_life_days: the prior's recency half-life (as :class:`PriorScorer`).
        damping: PPR's damping (as :class:`PPRScorer`).
    """

    dim = len(BASE_SCORES)
    names = BASE_SCORES

    def __init__(self, half_life_days: float | None = PRIOR_HALF_LIFE_DAYS, damping: float = 0.5) -> None:
        self.prior = PriorScorer(half_life_days=half_life_days, relevance=True)
        self.ppr = PPRScorer(damping=damping)
        self._attr: dict[int, tuple[GraphArrays, dict[str, int]]] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> BaseScores:
        """A fresh instance with the same settings: what is kept is per-graph lookups and PPR graphs, rebuilt
        on use (a frozen copy of a learned scorer need not copy an igraph graph)."""
        return BaseScores(self.prior.half_life_days, self.ppr.damping)

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        self.prior.prepare(graph, arrays)
        self.ppr.prepare(graph, arrays)

    def forget(self, arrays: GraphArrays) -> None:
        """Drop what is kept for ``arrays`` (its graph was replaced)."""
        self.prior.forget(arrays)
        self.ppr.forget(arrays)
        self._attr.pop(id(arrays), None)

    def prefetch(self, query: Query, context: ScoringContext) -> None:
        """What :meth:`raw` reads of the entries alone, computed now (PPR's rank, see
        :meth:`~signet_rl.scorers.prior.PPRScorer.prefetch`)."""
        self.ppr.prefetch(query, context)

    def _attr_index(self, arrays: GraphArrays) -> dict[str, int]:
        hit = self._attr.get(id(arrays))
        if hit is None or hit[0] is not arrays:
            hit = self._attr[id(arrays)] = (arrays, {str(k): i for i, k in enumerate(arrays.attribute_ids)})
        return hit[1]

    def raw(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """``float64 [n, 3]``: log prior, PPR mass, best fact relevance (unstandardised)."""
        n = len(paths)
        out = np.zeros((n, self.dim))
        if n == 0:
            return out
        out[:, 0] = np.log(np.maximum(self.prior.score(query, paths, context), 1e-12))
        out[:, 1] = self.ppr.score(query, paths, context)
        if context.relevance is not None:
            index = self._attr_index(context.arrays)
            rows = [[index[t] for t in p.attributes] for p in paths]
            flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows]) if n else np.zeros(0, int)
            if len(flat):
                rel = np.asarray(context.relevance(flat), dtype=np.float64)
                owner = np.repeat(np.arange(n), [len(r) for r in rows])
                best = np.full(n, -np.inf)
                np.maximum.at(best, owner, rel)
                out[:, 2] = np.where(np.isfinite(best), best, 0.0)
        return out

    def features(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """``float32 [n, 3]``: :meth:`raw` z-scored over the query's candidates."""
        return standardise(self.raw(query, paths, context)).astype(np.float32)


@register("fused")
class FusedScorer:
    """The non-learned fusion :math:`w^\\top z` of the prior, PPR and flat scores (see the module docstring).

    Args:
        prior, ppr, flat: the weights of the standardised columns (finite; all zero is refused: it ranks
            nothing).
        half_life_days: the prior column's recency half-life (read only when ``prior`` is not 0): 90 days,
            the value of the trial ``desire_fused``'s study chose (trial 16, PPR alone; docs/results.md).
        damping: PPR's damping.

    Raises:
        ValueError: a non-finite weight, or all weights zero.
    """

    name = "fused"

    def __init__(
        self,
        prior: float = DEFAULT_FUSED_WEIGHTS["prior"],
        ppr: float = DEFAULT_FUSED_WEIGHTS["ppr"],
        flat: float = DEFAULT_FUSED_WEIGHTS["flat"],
        half_life_days: float | None = PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
        damping: float = 0.5,
    ) -> None:
        for arg, value in (("prior", prior), ("ppr", ppr), ("flat", flat)):
            check_range(arg, value, owner="FusedScorer")
        if prior == ppr == flat == 0:
            raise ValueError("FusedScorer: every weight is 0 (prior, ppr, flat); give at least one a weight")
        self.weights = np.array([prior, ppr, flat], dtype=np.float64)
        self.base = BaseScores(half_life_days=half_life_days, damping=damping)
        self.config: dict[str, Any] = {
            "prior": prior, "ppr": ppr, "flat": flat, "half_life_days": half_life_days, "damping": damping,
        }  # fmt: skip

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        self.base.prepare(graph, arrays)

    def forget(self, arrays: GraphArrays) -> None:
        self.base.forget(arrays)

    def prefetch(self, query: Query, context: ScoringContext) -> None:
        self.base.prefetch(query, context)

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        if not paths:
            return np.zeros(0)
        return self.base.features(query, paths, context).astype(np.float64) @ self.weights

    def update(self, feedback: Any) -> None:
        return None
