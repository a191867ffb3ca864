"""Path scorers: rank a query's candidate paths. Non-learned baselines here; learned ones implement the same
interface."""

from typing import Any

from signet_rl.scorers.base import SCORERS, PathScorer, ScoringContext, make_scorer
from signet_rl.scorers.linear import LinUCBScorer
from signet_rl.scorers.prior import PPRScorer, PriorScorer, RandomScorer
from signet_rl.scorers.signet_predictor import SignetPredictorScorer


def __getattr__(name: str) -> Any:
    """:class:`GNNPathScorer` on first use: its module imports torch, which the serving side never loads."""
    if name == "GNNPathScorer":
        from signet_rl.scorers.gnn import GNNPathScorer

        return GNNPathScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SCORERS",
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
