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
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset

__all__ = ["Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """Anything that can be compared by the evaluation harness."""

    name: str

    def index(self, dataset: Dataset) -> None:
        """Build indexes over every graph of ``dataset`` (never reading its ground truth)."""

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        """Units for ``query``, best first; ``[]`` to inject nothing."""
