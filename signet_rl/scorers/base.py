"""The scorer interface every path scorer implements, and the registry that resolves scorers by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from signet_rl.datasets.base import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.traversal.path import Path

__all__ = ["SCORERS", "PathScorer", "ScoringContext", "make_scorer", "register"]


@dataclass
class ScoringContext:
    """What a scorer may look at for one query: the graph snapshot, the entry entities, the time.

    Never ground truth: the context is built by the retriever from what a Signet store holds.
    """

    graph: KnowledgeGraph
    arrays: GraphArrays
    entries: Sequence[str] = ()
    timestamp: float | None = None  # epoch seconds
    cache: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PathScorer(Protocol):
    """Scores a batch of one query's candidate paths (higher is better); learned scorers also update."""

    name: str

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        """Precompute per-graph lookups (called once per graph by the retriever)."""

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """One float per path."""

    def update(self, feedback: Any) -> None:
        """Learn from rated feedback (non-learned scorers ignore it)."""


SCORERS: dict[str, Callable[..., PathScorer]] = {}


def register(name: str) -> Callable[[Callable[..., PathScorer]], Callable[..., PathScorer]]:
    def wrap(factory: Callable[..., PathScorer]) -> Callable[..., PathScorer]:
        SCORERS[name] = factory
        return factory

    return wrap


def make_scorer(name: str, **kwargs: Any) -> PathScorer:
    """A scorer by name (``prior``, ``ppr``, ``random``, ...).

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORERS))}")
    return SCORERS[name](**kwargs)
