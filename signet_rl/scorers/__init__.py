"""Path scorers: rank a query's candidate paths. Non-learned baselines here; learned ones implement the same
interface."""

from typing import Any

from signet_rl.scorers.base import SCORERS, PathScorer, ScoringContext, make_scorer
from signet_rl.scorers.fused import FusedScorer
from signet_rl.scorers.linear import LinUCBScorer
from signet_rl.scorers.prior import PPRScorer, PriorScorer, RandomScorer


def __getattr__(name: str) -> Any:
    """:class:`GNNPathScorer` and :class:`SignetPredictorScorer` on first use: their modules import torch,
    which the serving side never loads."""
    if name == "GNNPathScorer":
        from signet_rl.scorers.gnn import GNNPathScorer

        return GNNPathScorer
    if name == "SignetPredictorScorer":
        from signet_rl.scorers.signet_predictor import SignetPredictorScorer

        return SignetPredictorScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SCORERS",
    "FusedScorer",
    "GNNPathScorer",
    "LinUCBScorer",
    "PPRScorer",
    "PathScorer",
    "PriorScorer",
    "RandomScorer",
    "ScoringContext",
    "SignetPredictorScorer",
    "make_scorer",
]
