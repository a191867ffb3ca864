"""The candidate ceiling: an oracle scorer that ranks a query's candidate paths by ground truth.

It tells traversal misses from scorer misses: whatever the oracle cannot reach, no scorer over the same
candidates can. It reads ground truth, so it lives with the evaluator and must never be used for training
or serving.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from signet_rl.datasets.base import GroundTruth, Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import ScoringContext
from signet_rl.traversal.path import Path

__all__ = ["OracleScorer"]


class OracleScorer:
    """Scores a path by the needed items it holds, minus the misleading ones (evaluation only).

    Args:
        truth: the dataset's ground truth.
        misleading_penalty: subtracted per misleading item.
    """

    name = "oracle"

    def __init__(self, truth: GroundTruth, misleading_penalty: float = 1.0) -> None:
        self.truth = truth
        self.misleading_penalty = misleading_penalty

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        return None

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        t = self.truth[query.id]
        needed, misleading = set(t.needed), set(t.misleading)
        out = np.empty(len(paths), dtype=np.float64)
        for i, p in enumerate(paths):
            items = set(p.attributes) | set(p.entities[1:])
            out[i] = len(items & needed) - self.misleading_penalty * len(items & misleading)
        return out

    def update(self, feedback: Any) -> None:
        return None
