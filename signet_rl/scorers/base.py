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

__all__ = [
    "SCORERS",
    "Feedback",
    "PathScorer",
    "ScoringContext",
    "check_feedback",
    "forget_arrays",
    "make_scorer",
    "register",
]


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
    #: Per candidate path id, what the hybrid entry knows of it (never ground truth): ``flat_vector``,
    #: ``flat_keyword``, ``flat_fused`` (the flat retriever's own scores of the row the path injects, 0 when
    #: flat did not score it), ``floor_rank`` (position in flat's ranking, -1 off the floor),
    #: ``flat_slate`` (1 for a floor unit flat itself injects at the budget, else 0),
    #: ``session_distance`` (sessions between the injected memory and the nearest floor hit, -1 unknown),
    #: ``memory_sim`` (cosine of the injected memories with the query, the best one) and
    #: ``query_overlap`` (entities on the path or mentioned by its memories that entry search found for the
    #: query). Empty without the hybrid entry.
    path_info: dict[str, dict[str, float]] = field(default_factory=dict)


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

    Raises:
        ValueError: a bad entry (:func:`check_feedback`, which learned scorers run again at ``update``).
    """

    query: Query
    paths: Sequence[Path]
    context: ScoringContext
    shown: Sequence[int]
    ratings: Sequence[float | None]
    pscores: Sequence[float] = ()
    explorer: Sequence[bool] = ()

    def __post_init__(self) -> None:
        check_feedback(self)


_NUMBER = (int, float, np.integer, np.floating)


def check_feedback(fb: Feedback) -> None:
    """Refuse a :class:`Feedback` a learned scorer must not learn from.

    Called when a Feedback is built and again by every learned scorer's ``update`` (and by path
    reinforcement), because a Feedback is a mutable record: a rating or propensity changed after
    construction would otherwise reach the model, and one NaN turns its parameters into NaN for good.

    Checks: one rating, propensity (when given) and explorer flag (when given) per shown path; shown
    indices are integers inside ``paths``; ratings are -1, 0, +1 or ``None``; propensities are finite
    numbers in ``(0, 1]``; explorer flags are bools.

    Raises:
        ValueError: the first bad entry, naming the query, the value and its index, e.g.
            ``Feedback for 'q7': pscore nan is not a probability in (0, 1] (pscores[0])``.
    """
    n = len(fb.shown)
    who = f"Feedback for {getattr(fb.query, 'id', fb.query)!r}"
    for name, values in (("ratings", fb.ratings), ("pscores", fb.pscores), ("explorer", fb.explorer)):
        if (name == "ratings" or len(values)) and len(values) != n:
            what = "explorer flags" if name == "explorer" else name
            raise ValueError(f"{who}: {len(values)} {what} for {n} shown paths")
    for j, i in enumerate(fb.shown):
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise ValueError(f"{who}: shown index {i!r} is not an integer (shown[{j}])")
        if not 0 <= i < len(fb.paths):
            raise ValueError(f"{who}: shown index {i!r} outside {len(fb.paths)} paths (shown[{j}])")
    for j, r in enumerate(fb.ratings):
        if r is not None and (isinstance(r, bool) or not isinstance(r, _NUMBER) or r not in (-1, 0, 1)):
            raise ValueError(f"{who}: rating {r!r} is not -1, 0, +1 or None (ratings[{j}])")
    for j, p in enumerate(fb.pscores):
        if isinstance(p, bool) or not isinstance(p, _NUMBER) or not 0 < p <= 1:  # False for NaN
            raise ValueError(f"{who}: pscore {p!r} is not a probability in (0, 1] (pscores[{j}])")
    for j, x in enumerate(fb.explorer):
        if not isinstance(x, bool | np.bool_):
            raise ValueError(f"{who}: explorer flag {x!r} is not a bool (explorer[{j}])")


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


def forget_arrays(scorer: Any, arrays: GraphArrays) -> None:
    """Tell ``scorer`` that the graph ``arrays`` views was replaced: a scorer that keeps per-graph state by
    arrays object has a ``forget(arrays)`` method that drops it (otherwise the old arrays stay reachable
    from the scorer, and a deep copy of it reaches them); a scorer without one keeps nothing, and this is a
    no-op (``forget`` is optional, not part of :class:`PathScorer`)."""
    forget = getattr(scorer, "forget", None)
    if forget is not None:
        forget(arrays)


class _Registry(dict[str, Callable[..., PathScorer]]):
    """Scorer factories by name. Scorers whose module imports torch (:data:`LAZY_SCORERS`) are imported on
    first lookup, so that the non-learned scorers and the serving side load without torch."""

    def __missing__(self, name: str) -> Callable[..., PathScorer]:
        module = LAZY_SCORERS.get(name)
        if module is None:
            raise KeyError(name)
        import importlib

        importlib.import_module(module)  # its @register fills the entry
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in LAZY_SCORERS

    def names(self) -> list[str]:
        """Every known name, imported or not."""
        return sorted(set(self.keys()) | set(LAZY_SCORERS))


#: Scorers registered by a module imported on first lookup: name -> module.
LAZY_SCORERS: dict[str, str] = {"gnn": "signet_rl.scorers.gnn",
                                 "signet_predictor": "signet_rl.scorers.signet_predictor"}
SCORERS: _Registry = _Registry()


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
        raise ValueError(f"unknown scorer {name!r}; known scorers: {', '.join(SCORERS.names())}")
    return SCORERS[name](**kwargs)
