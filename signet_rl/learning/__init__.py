"""Contextual-bandit learning primitives: slate exploration with propensities, path reinforcement, the
feedback log and off-policy evaluation.

* :mod:`~signet_rl.learning.exploration`: :func:`select_slate` (greedy / epsilon / softmax / thompson) with
  exact inclusion probabilities, :class:`ExplorerQuota`, :func:`speculative_candidates`.
* :mod:`~signet_rl.learning.reinforcement`: :class:`EdgeStats`, bounded multiplicative desire-path weights.
* :mod:`~signet_rl.learning.feedback_log`: :class:`FeedbackRecord` and :class:`FeedbackLog` (Parquet).
* :mod:`~signet_rl.learning.ope`: :func:`ips`, :func:`snips`, :func:`doubly_robust` on a
  :class:`LoggedBandit`.
"""

from __future__ import annotations

from signet_rl.learning.exploration import (
    STRATEGIES,
    ExplorerQuota,
    Slate,
    epsilon_greedy_inclusion,
    inclusion_probabilities,
    plackett_luce_inclusion,
    select_slate,
    speculative_candidates,
)
from signet_rl.learning.feedback_log import FeedbackLog, FeedbackRecord
from signet_rl.learning.ope import (
    ESTIMATORS,
    LoggedBandit,
    OPEEstimate,
    doubly_robust,
    estimate_all,
    ips,
    logged_from_records,
    snips,
    target_policy,
)
from signet_rl.learning.reinforcement import DEFAULT_INTENTS, EdgeStats, edge_index, path_edges

__all__ = [
    "DEFAULT_INTENTS",
    "ESTIMATORS",
    "STRATEGIES",
    "EdgeStats",
    "ExplorerQuota",
    "FeedbackLog",
    "FeedbackRecord",
    "LoggedBandit",
    "OPEEstimate",
    "Slate",
    "doubly_robust",
    "edge_index",
    "epsilon_greedy_inclusion",
    "estimate_all",
    "inclusion_probabilities",
    "ips",
    "logged_from_records",
    "path_edges",
    "plackett_luce_inclusion",
    "select_slate",
    "snips",
    "speculative_candidates",
    "target_policy",
]
