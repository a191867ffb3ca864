"""The candidate ceiling: an oracle scorer that ranks a query's candidate paths by ground truth.

It tells traversal misses from scorer misses: whatever the oracle cannot reach, no scorer over the same
candidates can. It reads ground truth, so it lives with the evaluator and must never be used for training
or serving.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.rating.items import ItemResolver
from signet_rl.scorers.base import ScoringContext
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Path

__all__ = ["OracleScorer"]


class OracleScorer:
    """Scores a path by the needed items it holds, minus the misleading ones (evaluation only).

    Given the :class:`~signet_rl.datasets.base.Dataset` (not just its truth), a path's items are those of
    its constructed memory resolved the way the evaluator resolves them (an attribute counts as its
    evidence memory on LoCoMo, a walked OpenIE edge as its source passage on MuSiQue), and among paths
    holding as much, the shorter text ranks first (it leaves more of the budget to the others).

    Args:
        truth: the dataset (preferred) or only its ground truth (then a path's raw attribute and entity
            ids are matched against the truth).
        misleading_penalty: subtracted per misleading item.
    """

    name = "oracle"

    def __init__(self, truth: GroundTruth | Dataset, misleading_penalty: float = 1.0) -> None:
        self.dataset = truth if isinstance(truth, Dataset) else None
        self.truth = truth.truth if isinstance(truth, Dataset) else truth
        self.misleading_penalty = misleading_penalty
        self._resolver = ItemResolver(self.dataset) if self.dataset is not None else None
        self._builders: dict[int, MemoryBuilder] = {}

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        if self._resolver is not None and id(graph) not in self._builders:
            self._builders[id(graph)] = MemoryBuilder(graph)

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        t = self.truth[query.id]
        needed, misleading = set(t.needed), set(t.misleading)
        out = np.empty(len(paths), dtype=np.float64)
        builder = self._builders.get(id(context.graph))
        if self._resolver is not None and builder is None:
            builder = self._builders[id(context.graph)] = MemoryBuilder(context.graph)
        for i, p in enumerate(paths):
            if self._resolver is not None and builder is not None:
                unit = builder.construct(p)
                items = set(self._resolver.unit_items(query, unit))
                tie = 1e-6 * len(unit.text)
            else:
                items = set(p.attributes) | set(p.entities[1:])
                tie = 0.0
            out[i] = len(items & needed) - self.misleading_penalty * len(items & misleading) - tie
        return out

    def update(self, feedback: Any) -> None:
        return None
