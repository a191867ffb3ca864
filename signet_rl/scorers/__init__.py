"""Path scorers: rank a query's candidate paths. Non-learned baselines here; learned ones implement the same
interface."""

from typing import Any

from signet_rl.scorers.base import SCORERS, PathScorer, ScoringContext, make_scorer
from signet_rl.scorers.fused import FusedScorer
from signet_rl.scorers.linear import LinUCBScorer
from signet_rl.scorers.prior import PRE_STUDY_PRIOR_HALF_LIFE_DAYS, PPRScorer, PriorScorer, RandomScorer

#: The learned scorers' settings before issue 25 §3 made their sweeps' best trials the defaults (GNN: hidden,
#: lr, weight_decay, steps_per_update; LinUCB: alpha, lam; Signet's predictor: Signet's own lr, temperature,
#: epochs, final_alpha and prior baseline, and without the base scores as inputs, issue 25 §1 session 5). A
#: reported run or script that was not rerun under the new defaults pins these, so it still reproduces its
#: committed figure (docs/results.md, "Tuned defaults applied"). The prior's half-life (the prior scorer's,
#: and the prior the learned scorers read) was 90 days before its study (issue 25 §3, session 7).
PRE_SWEEP_DEFAULTS: dict[str, dict[str, Any]] = {
    "gnn": {
        "hidden": 32, "lr": 0.01, "weight_decay": 0.0, "steps_per_update": 1,
        "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
    },
    "linucb": {"alpha": 1.0, "lam": 1.0, "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS},
    "signet_predictor": {
        "lr": 0.001,
        "temperature": 0.5,
        "epochs": 3,
        "final_alpha": 0.5,
        "baseline": "prior",
        "base_scores": False,
        "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
    },
    "prior": {"half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS},
}


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
    "PRE_SWEEP_DEFAULTS",
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
