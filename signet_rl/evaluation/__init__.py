"""Metrics and the evaluation harness (no MLflow here: :mod:`signet_rl.tracking` logs results)."""

from __future__ import annotations

from signet_rl.evaluation.harness import (
    EvaluationResult,
    dataset_hash,
    evaluate,
    mean_memory_chars,
    recall_at_k_budget,
    recall_at_k_units,
    recall_summary,
)
from signet_rl.evaluation.metrics import bootstrap_ci, paired_bootstrap_ci
from signet_rl.rating.items import ItemResolver, classify

__all__ = [
    "EvaluationResult",
    "ItemResolver",
    "bootstrap_ci",
    "classify",
    "dataset_hash",
    "evaluate",
    "mean_memory_chars",
    "paired_bootstrap_ci",
    "recall_at_k_budget",
    "recall_at_k_units",
    "recall_summary",
]
