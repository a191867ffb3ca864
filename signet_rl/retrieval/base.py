"""What every retriever returns, and the contract it keeps.

A retriever (the flat baseline, desire-path retrieval with any scorer) turns a :class:`Query` into a ranked
list of :class:`Unit` — pieces of context it would inject. A unit carries its text (every character of it
counts toward the token budget) and the ids of the graph rows it holds (memory ids, attribute ids), so the
evaluator can count *items*, never units: one constructed memory holding ten attributes is ten items.

The contract (checked by the harness and the tests):

* :meth:`Retriever.index` builds whatever the retriever needs from the dataset's graphs. It never reads
  ``dataset.truth``.
* :meth:`Retriever.retrieve` only uses rows created at or before ``query.timestamp`` (when there is one) and
  not deleted, returns units best first, and may return nothing (the significance gate: sometimes the right
  amount of context is zero). ``budget_chars`` is a hint; the harness enforces the budget itself with
  :func:`fit_budget`.
* A retriever reads a query's text through :func:`capped_query` (at most
  :data:`~signet_rl.retrieval.text.MAX_QUERY_CHARS` characters, cleaned), once, before any index,
  classifier, encoder or scorer sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from signet_rl.datasets.base import Dataset, Query
from signet_rl.retrieval.text import query_text

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_BUDGET_CHARS", "Retriever", "Unit", "capped_query", "fit_budget"]

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


@runtime_checkable
class Retriever(Protocol):
    """Anything that can be compared by the evaluation harness."""

    name: str

    def index(self, dataset: Dataset) -> None:
        """Build indexes over every graph of ``dataset`` (never reading its ground truth)."""

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        """Units for ``query``, best first; ``[]`` to inject nothing."""


def capped_query(query: Query) -> Query:
    """``query`` with its text as retrieval reads it (:func:`~signet_rl.retrieval.text.query_text`): cleaned
    and cut to :data:`~signet_rl.retrieval.text.MAX_QUERY_CHARS` characters, with a logged warning naming
    the query when it was longer. The same object when nothing changes."""
    text = query_text(query.text, where=f"query {query.id!r}")
    return query if text is query.text or text == query.text else replace(query, text=text)


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
