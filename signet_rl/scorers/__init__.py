"""Path scorers: rank a query's candidate paths. Non-learned baselines here; learned ones implement the same
interface."""

from signet_rl.scorers.base import SCORERS, PathScorer, ScoringContext, make_scorer
from signet_rl.scorers.fused import FusedScorer
from signet_rl.scorers.gnn import GNNPathScorer
from signet_rl.scorers.linear import LinUCBScorer
from signet_rl.scorers.prior import PPRScorer, PriorScorer, RandomScorer

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
    "make_scorer",
]
