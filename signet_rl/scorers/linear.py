"""A linear contextual-bandit path scorer: LinUCB scores and linear Thompson sampling over hand-made path
features.

:class:`LinUCBScorer` (registered as ``linucb``) models a path's expected rating as :math:`\\theta^\\top x`
with one shared :math:`\\theta` over the context-path vector

.. math:: x = z \\otimes (1, \\mathrm{onehot}(\\text{intent}))
          = [\\,z,\\; z\\,[i{=}what],\\; z\\,[i{=}relate],\\;\\dots,\\; z\\,[i{=}none]\\,],
          \\qquad z = [\\,1,\\; \\mathrm{symlog}(f(p))\\,]

where :math:`f(p)` are :class:`~signet_rl.scorers.features.PathFeaturizer`'s features (query similarity
included), ``symlog(v) = sign(v) ln(1 + |v|)`` tames counts and ages, and the intent is *predicted*
(:class:`~signet_rl.scorers.features.QueryFeaturizer`). The first block is shared by all intents, each
further block adds an intent's own correction (with ``intent_interactions=False``, :math:`x = z`). Ridge
regression with prior :math:`\\theta \\sim N(0, \\lambda^{-1} I)`:

.. math:: A = \\lambda I + \\sum_i w_i x_i x_i^\\top, \\quad b = \\sum_i w_i r_i x_i, \\quad
          \\hat\\theta = A^{-1} b

kept as :math:`A^{-1}` with Sherman–Morrison rank-one updates. :meth:`LinUCBScorer.score` is the upper
confidence bound :math:`\\hat\\theta^\\top x + \\alpha \\sqrt{x^\\top A^{-1} x}` (``alpha=0``: the greedy
posterior mean, for evaluation); :meth:`LinUCBScorer.sample_scores` draws
:math:`\\theta \\sim N(\\hat\\theta, \\sigma^2 A^{-1})` (linear Thompson sampling). :math:`r_i` is a rating
(-1, 0, +1; unrated paths are skipped) and :math:`w_i` is 1, or :math:`\\min(1/\\mathrm{pscore}_i, w_{max})`
with ``importance_weighted``.

    >>> scorer = LinUCBScorer(alpha=0.5)   # doctest: +SKIP
    >>> fb = Feedback(query, paths, context, shown=[2], ratings=[1], pscores=[0.9])  # doctest: +SKIP
    >>> scorer.update([fb])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from signet_rl.core.checks import check_integer, check_range
from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.retrieval.intent import IntentClassifier
from signet_rl.scorers.base import Feedback, ScoringContext, check_feedback, register
from signet_rl.scorers.features import (
    INTENTS,
    PATH_FEATURES,
    EdgeStats,
    PathFeaturizer,
    PerGraphFeaturizers,
    QueryFeaturizer,
    floor_prior,
)
from signet_rl.scorers.fused import BASE_SCORES, BaseScores
from signet_rl.scorers.prior import PRE_STUDY_PRIOR_HALF_LIFE_DAYS
from signet_rl.traversal.path import Path

__all__ = ["LinUCBScorer"]

_FORMAT = "signet_rl.LinUCBScorer/1"
#: Constructor arguments added after format 1 was first written, with the values that reproduce a scorer
#: saved without them (an exported policy or a checkpoint missing a key loads with that value).
ADDED_ARGUMENTS: dict[str, Any] = {
    # the base scores' prior column took the prior's tuned half-life (issue 25 §3, session 7): 90 days before
    "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
}


@register("linucb")
class LinUCBScorer(PerGraphFeaturizers[PathFeaturizer]):
    """LinUCB / linear Thompson sampling over path features (see the module docstring).

    Args:
        alpha: width of the upper confidence bound in :meth:`score` (>= 0; 0 is greedy).
        lam: ridge prior precision :math:`\\lambda` (> 0).
        sigma: scale of the Thompson posterior in :meth:`sample_scores` (>= 0).
        importance_weighted: weight each rated path by ``min(1 / pscore, max_importance_weight)``.
        max_importance_weight: the clip of importance weights (>= 1).
        intent_interactions: add one block of features per predicted intent (else one block only).
        base_scores: append the non-learned scorers' standardised scores (prior, PPR, flat:
            :class:`~signet_rl.scorers.fused.BaseScores`) to :math:`z`, the inputs the GNN's residual gets.
        prior_half_life_days: the recency half-life of the base scores' prior column (> 0, or None: no
            recency term); by default 90 days
            (:data:`~signet_rl.scorers.prior.PRE_STUDY_PRIOR_HALF_LIFE_DAYS`), the column every study of the
            learned scorers ran with (the prior scorer's own default is its study's 27 days);
            a state saved without it read 90 days too.
        encoder: text encoder name (query similarity features).
        classifier: predicts the query intent (default rule-based).
        edge_stats: learned desire-path statistics per edge (features ``desire_*``).
        floor_prior: > 0: learn a residual over the hybrid entry's floor. :math:`z` gains the column
            :func:`~signet_rl.scorers.features.floor_prior` (``floor_prior / (1 + flat's rank)`` on the floor,
            0 off it), and the ridge prior's mean puts weight 1 on it (:math:`\\theta_0`; every other weight
            0), so the posterior mean is
            :math:`\\theta_0 + A^{-1} \\sum_i w_i x_i (r_i - \\theta_0^\\top x_i)`:
            untrained, the greedy score is exactly the floor prior (``best_flat``'s order, the floor
            first), and ratings move it from there. 0: off (a prior mean of 0).

    Attributes:
        dim: length of :math:`x` (``(1 + 46) * 6`` with intent interactions; ``(1 + 46 + 3) * 6`` with
            ``base_scores``).
        A_inv: :math:`A^{-1}`, ``float64 [dim, dim]``.
        b: ``float64 [dim]``.
        updates: number of rated paths learned from.

    Raises:
        ValueError: a bad argument, naming it and its value.
    """

    name = "linucb"

    def __init__(
        self,
        alpha: float = 2.594901330624211,
        lam: float = 5.49571618641162,
        sigma: float = 0.37019151914203846,
        importance_weighted: bool = False,
        max_importance_weight: float = 10.0,
        intent_interactions: bool = True,
        base_scores: bool = True,
        prior_half_life_days: float | None = PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
        encoder: str = "hashing",
        classifier: IntentClassifier | None = None,
        edge_stats: EdgeStats | None = None,
        floor_prior: float = 0.0,
    ) -> None:
        who = "LinUCBScorer"
        check_range("floor_prior", floor_prior, 0, owner=who)
        check_range("alpha", alpha, 0, owner=who)
        check_range("lam", lam, 0, lo_open=True, owner=who)
        check_range("sigma", sigma, 0, owner=who)
        check_range("prior_half_life_days", prior_half_life_days, 0, lo_open=True, optional=True, owner=who)
        check_range("max_importance_weight", max_importance_weight, 1, owner=who)
        self.alpha = float(alpha)
        self.lam = float(lam)
        self.sigma = float(sigma)
        self.importance_weighted = importance_weighted
        self.max_importance_weight = float(max_importance_weight)
        self.intent_interactions = intent_interactions
        self.query_featurizer = QueryFeaturizer(encoder, classifier)
        self._init_graph_states(edge_stats)
        self.config: dict[str, Any] = {
            "alpha": self.alpha, "lam": self.lam, "sigma": self.sigma,
            "importance_weighted": importance_weighted, "max_importance_weight": self.max_importance_weight,
            "intent_interactions": intent_interactions, "base_scores": base_scores,
            "prior_half_life_days": prior_half_life_days, "encoder": encoder,
        }  # fmt: skip
        self.floor_prior = float(floor_prior)
        if self.floor_prior:  # (a state saved without the key is a scorer without the column)
            self.config["floor_prior"] = self.floor_prior
        self.base = BaseScores(half_life_days=prior_half_life_days) if base_scores else None
        self.base_dim = 1 + len(PATH_FEATURES) + (len(BASE_SCORES) if base_scores else 0)
        self.base_dim += 1 if self.floor_prior else 0  # the floor prior's column, last in z
        self.dim = self.base_dim * (1 + len(INTENTS) if intent_interactions else 1)
        self.A_inv = np.eye(self.dim) / self.lam
        #: the ridge prior's mean: weight 1 on the shared block's floor-prior column (with floor_prior)
        self.theta0 = np.zeros(self.dim)
        if self.floor_prior:
            self.theta0[self.base_dim - 1] = 1.0
        self.b = self.lam * self.theta0
        self.updates = 0
        self._theta: np.ndarray | None = None
        self._chol: np.ndarray | None = None

    # -- features -----------------------------------------------------------------------------------

    def _build_graph_state(
        self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer
    ) -> PathFeaturizer:
        """LinUCB keeps a graph's featurizer and nothing else (:class:`PerGraphFeaturizers`)."""
        return featurizer

    def design(
        self, query: Query, paths: Sequence[Path], context: ScoringContext, base: np.ndarray | None = None
    ) -> np.ndarray:
        """The context-path vectors :math:`x` of ``paths``: ``float64 [len(paths), dim]``. ``base``: the
        paths' standardised base scores when the caller has them (an update standardises over every
        candidate of the query, as scoring did); else computed over ``paths``."""
        qf = self.query_featurizer
        intent = qf.intent(query)
        f = self._graph_state(context.graph, context.arrays)
        raw = f.features(paths, context, qf.embed(query.text or ""), intent).astype(np.float64)
        parts = [np.ones((len(paths), 1)), np.sign(raw) * np.log1p(np.abs(raw))]
        if self.base is not None:
            z_base = self.base.features(query, paths, context) if base is None else base
            parts.append(np.asarray(z_base, dtype=np.float64))
        if self.floor_prior:
            parts.append(floor_prior(paths, context, self.floor_prior)[:, None])
        z = np.concatenate(parts, axis=1)
        if not self.intent_interactions:
            return z
        x = np.zeros((len(paths), self.dim))
        x[:, : self.base_dim] = z
        block = 1 + INTENTS.index(intent)
        x[:, block * self.base_dim : (block + 1) * self.base_dim] = z
        return x

    @property
    def theta(self) -> np.ndarray:
        """The posterior mean :math:`A^{-1} b`."""
        if self._theta is None:
            self._theta = self.A_inv @ self.b
        return self._theta

    # -- PathScorer ---------------------------------------------------------------------------------

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """Upper confidence bounds :math:`\\hat\\theta^\\top x + \\alpha\\sqrt{x^\\top A^{-1} x}`, ``[n]``."""
        if not paths:
            return np.zeros(0)
        x = self.design(query, paths, context)
        mean = x @ self.theta
        if self.alpha == 0:
            return mean
        width = np.sqrt(np.maximum(((x @ self.A_inv) * x).sum(axis=1), 0.0))
        return mean + self.alpha * width

    def sample_scores(
        self,
        query: Query,
        paths: Sequence[Path],
        context: ScoringContext,
        n: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``n`` Thompson draws :math:`x^\\top\\theta_s`, :math:`\\theta_s \\sim N(\\hat\\theta,
        \\sigma^2 A^{-1})`: ``[n, len(paths)]``."""
        check_integer("n", n, 1, owner="LinUCBScorer.sample_scores")
        if not paths:
            return np.zeros((n, 0))
        x = self.design(query, paths, context)
        z = rng.standard_normal((n, self.dim))
        thetas = self.theta[None, :] + self.sigma * z @ self._root().T
        return thetas @ x.T

    def _root(self) -> np.ndarray:
        """A square root :math:`L` of :math:`A^{-1} = L L^\\top` (Cholesky), kept until the next update."""
        if self._chol is None:
            cov = (self.A_inv + self.A_inv.T) / 2
            try:
                self._chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:  # rounding made it indefinite: clip the spectrum
                vals, vecs = np.linalg.eigh(cov)
                self._chol = vecs * np.sqrt(np.maximum(vals, 0.0))
        return self._chol

    def update(self, feedback: Sequence[Feedback]) -> None:
        """Sherman–Morrison updates with every rated shown path (unrated ones are skipped).

        Raises:
            ValueError: a bad Feedback in the batch (:func:`~signet_rl.scorers.base.check_feedback`);
                nothing is learned from the batch then.
        """
        for fb in feedback:
            check_feedback(fb)
        for fb in feedback:
            rated = [
                (j, i, r) for j, (i, r) in enumerate(zip(fb.shown, fb.ratings, strict=True)) if r is not None
            ]
            if not rated:
                continue
            shown = [i for _, i, _ in rated]
            base = None
            if self.base is not None:  # standardised over every candidate, as when the query was scored
                base = self.base.features(fb.query, fb.paths, fb.context)[np.asarray(shown)]
            x = self.design(fb.query, [fb.paths[i] for i in shown], fb.context, base)
            for row, (j, _, r) in zip(x, rated, strict=True):
                w = 1.0
                if self.importance_weighted and fb.pscores:
                    w = min(1.0 / float(fb.pscores[j]), self.max_importance_weight)  # pscore in (0, 1]
                self.update_vector(row, float(r), w)

    def update_vector(self, x: np.ndarray, rating: float, weight: float = 1.0) -> None:
        """One Sherman–Morrison update with a context-path vector ``x`` (from :meth:`design`) and its rating:
        what :meth:`update` does per rated path, and what a service that logged ``x`` when it showed the path
        applies when the rating arrives later."""
        row = np.asarray(x, dtype=np.float64)
        if row.shape != (self.dim,) or not np.isfinite(row).all():
            raise ValueError(f"x must be {self.dim} finite numbers, got shape {row.shape}")
        u = self.A_inv @ row
        self.A_inv -= np.outer(u, u) * (weight / (1.0 + weight * float(row @ u)))
        self.b += weight * float(rating) * row
        self.updates += 1
        self._theta = self._chol = None

    # -- persistence --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The posterior (:math:`A^{-1}`, :math:`b`), the update count and the constructor arguments."""
        return {
            "format": _FORMAT,
            "config": dict(self.config),
            "A_inv": self.A_inv.copy(),
            "b": self.b.copy(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises:
            ValueError: another format, or a posterior of another dimension.
        """
        if state.get("format") != _FORMAT:
            raise ValueError(f"not a LinUCBScorer state: format {state.get('format')!r}")
        a_inv, b = np.asarray(state["A_inv"], dtype=np.float64), np.asarray(state["b"], dtype=np.float64)
        if a_inv.shape != (self.dim, self.dim) or b.shape != (self.dim,):
            raise ValueError(f"state has dimension {b.shape[0]}, this scorer {self.dim}")
        if "config" in state and self.base is not None:  # the same inputs, or the posterior means nothing
            saved = {**ADDED_ARGUMENTS, **state["config"]}.get("prior_half_life_days")
            if saved != self.config["prior_half_life_days"]:
                raise ValueError(
                    f"state was built with prior_half_life_days={saved!r}, this scorer with "
                    f"{self.config['prior_half_life_days']!r} (set scorer.prior_half_life_days={saved!r})"
                )
        self.A_inv, self.b = a_inv.copy(), b.copy()
        self.updates = int(state.get("updates", 0))
        self._theta = self._chol = None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"LinUCBScorer({args})"
