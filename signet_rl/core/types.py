"""The small types every layer shares: a query, a split, a unit of injected context, the budget.

They sit at the bottom of the package (see ``docs/design.md``, "Layers"): a query and what a retriever
returns are spoken of by datasets, retrieval, traversal, scorers, the pipeline, rating and evaluation alike,
while the :class:`~signet_rl.datasets.base.Dataset` that holds queries with their ground truth stays in
``datasets``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_BUDGET_CHARS",
    "SPLITS",
    "Query",
    "Split",
    "Unit",
    "fit_budget",
]

SPLITS: tuple[str, ...] = ("train", "validation", "test")
Split = Literal["train", "validation", "test"]

#: Signet counts four characters per token.
CHARS_PER_TOKEN = 4
#: Signet's session-start memory budget, the default of every budgeted comparison.
DEFAULT_BUDGET_CHARS = 2000


@dataclass(frozen=True)
class Unit:
    """One piece of injected context.

    Attributes:
        text: exactly what would be injected.
        items: ids of the graph rows the unit holds (memory ids and/or attribute ids).
        score: the retriever's score (higher is better); only the order matters to the harness.
        kind: ``memory``, ``attribute``, ``constructed`` or ``constraints``.
        meta: provenance and anything else worth logging (path id, fusion legs, ...).
    """

    text: str
    items: tuple[str, ...]
    score: float = 0.0
    kind: str = "memory"
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def chars(self) -> int:
        return len(self.text)



@dataclass(frozen=True)
class Query:
    """A question asked of one graph at one time. Holds no ground truth.

    Attributes:
        id: unique within the dataset.
        text: what the user (or agent) said.
        graph_id: key into :attr:`Dataset.graphs`.
        split: ``train``, ``validation`` or ``test``.
        timestamp: when it was asked; a query may only see graph rows created at or before it.
        meta: facts that are part of the question itself (``head``, ``relation`` for KG queries; the
            speaker of a turn). Never labels.
    """

    id: str
    text: str
    graph_id: str
    split: Split
    timestamp: pd.Timestamp | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)



def fit_budget(units: Sequence[Unit], budget_chars: int | None) -> list[Unit]:
    """The units injected under a character budget: taken in rank order, a unit that would overflow the
    budget is skipped and later, shorter units may still fit. ``None`` means no budget.

    Raises:
        ValueError: a budget of 0 or below.
    """
    if budget_chars is None:
        return list(units)
    if budget_chars <= 0:
        raise ValueError(f"token budget must be positive, got {budget_chars} characters")
    out, used = [], 0
    for unit in units:
        if used + unit.chars <= budget_chars:
            out.append(unit)
            used += unit.chars
    return out
