"""The scorer interface every path scorer implements, and the registry that resolves scorers by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.traversal.path import Path

__all__ = ["SCORERS", "Feedback", "PathScorer", "ScoringContext", "make_scorer", "register"]


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
    #: Query relevance of attributes by attribute index (similarity of their text to the query), when the
    #: retriever computed it; scorers may use it to rank an aspect's facts.
    relevance: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass
class Feedback:
    """One rated interaction, as a learned scorer's :meth:`PathScorer.update` receives it.

    Attributes:
        query: the query (never its ground truth).
        paths: every candidate the scorer scored for it, in the order scored.
        context: the scoring context the candidates were scored in.
        shown: indices into ``paths`` of the slate shown, in slate order.
        ratings: one per shown path: -1, 0 or +1, or ``None`` where the unit went unrated.
        pscores: one per shown path: the probability it was in the slate under the logging policy.
        explorer: one per shown path: whether it filled an exploration slot.
    """

    query: Query
    paths: Sequence[Path]
    context: ScoringContext
    shown: Sequence[int]
    ratings: Sequence[float | None]
    pscores: Sequence[float] = ()
    explorer: Sequence[bool] = ()

    def __post_init__(self) -> None:
        n = len(self.shown)
        who = f"Feedback for {self.query.id!r}"
        if len(self.ratings) != n:
            raise ValueError(f"{who}: {len(self.ratings)} ratings for {n} shown paths")
        for i in self.shown:
            if not 0 <= i < len(self.paths):
                raise ValueError(f"{who}: shown index {i} outside {len(self.paths)} paths")
        for r in self.ratings:
            if r is not None and (r != r or r not in (-1, 0, 1)):
                raise ValueError(f"{who}: rating {r!r} is not -1, 0, +1 or None")
        if self.pscores and len(self.pscores) != n:
            raise ValueError(f"{who}: {len(self.pscores)} pscores for {n} shown paths")
        if self.explorer and len(self.explorer) != n:
            raise ValueError(f"{who}: {len(self.explorer)} explorer flags for {n} shown")


@runtime_checkable
class PathScorer(Protocol):
    """Scores a batch of one query's candidate paths (higher is better); learned scorers also update."""

    name: str

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        """Precompute per-graph lookups (called once per graph by the retriever)."""

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """One float per path."""

    def update(self, feedback: Sequence[Feedback]) -> None:
        """Learn from a batch of rated interactions (non-learned scorers ignore it)."""


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
