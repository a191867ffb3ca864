"""What an injected unit holds, in the items a query's ground truth speaks of.

A :class:`~signet_rl.core.types.Unit` lists the graph rows it holds (memory ids, attribute ids); a
:class:`~signet_rl.datasets.base.Truth` counts ``needed`` and ``misleading`` in one kind of item
(``Truth.needed_kind``). :class:`ItemResolver` maps the first onto the second, per query:

``attribute`` (the synthetic benchmark: needed facts are attribute ids)
    A memory id counts as the attributes whose ``memory_id`` is that memory and that were created at or
    before the query time, whatever their status: a memory holding a since-superseded fact injects that stale
    fact, which the truth marks misleading. An attribute id counts as itself.
``memory`` (LoCoMo dialog turns, MuSiQue passages)
    A memory id counts as itself. An attribute id counts as the memory it was drawn from (its evidence turn)
    when it has a ``memory_id`` and, if the dataset names ``meta["evidence_attribute_aspects"]``, its aspect
    is one of those (LoCoMo: ``observations`` are evidence for the turn they cite, session summaries are not
    and never count toward turn recall).
``entity`` (KG path reasoning: answer entities)
    Every id counts as itself.

An id that resolves to nothing (a chit-chat memory with no facts, a session summary, an unknown id) counts
as itself, so it is still an injected item for precision, noise and misleading: one dense unit holding ten
items is ten items, never one.

**Equal text, equal credit.** A unit is credited with a row only if it injects that row's text: a memory id
(a passage, a dialog turn, a synthetic memory) or an attribute id (a fact, an observation) listed in
``Unit.items`` resolves as above only when the row's *whole* content is in ``Unit.text`` — both compared
with runs of whitespace collapsed to one space (and lone surrogates read as U+FFFD, as the flat indexes
read them), nothing else relaxed. A row the unit lists but does not carry whole (a passage cut to 600
characters by a constructed memory, a turn cut to 500 by Signet's ``truncate_chars``) counts as one noise
item ``"<id>#part"`` (:data:`PART_SUFFIX`): its characters were spent, its fact was not delivered, and it can
never be needed or misleading. One refinement where the truth counts facts (``attribute``): a memory cut
short is credited with those of its facts whose whole content the cut text still carries (the part that
carries the answer is the fact's own text), and becomes ``"<id>#part"`` only when it carries none of
them. Passages and turns (``memory``) are all or nothing. The rule is the same for every retriever, flat
or desire, and for the simulated rater (:class:`~signet_rl.rating.view.RatingView` resolves through this
class). Entity ids
(``entity`` truth) are exempt: a constructed memory writes the name of every entity it lists. So passage
and turn recall count passages and turns injected, never units; a LoCoMo turn is also credited through an
observation whose evidence it is, when that observation's whole text is injected.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset, Truth
from signet_rl.graph.model import KnowledgeGraph

__all__ = ["NEEDED_KINDS", "PART_SUFFIX", "ItemResolver", "ItemSplit", "classify", "credit_text"]

NEEDED_KINDS: tuple[str, ...] = ("attribute", "memory", "entity")
#: Suffix of the noise item a row becomes when a unit lists it without injecting its whole text.
PART_SUFFIX = "#part"


def credit_text(text: str) -> str:
    """``text`` as the credit rule compares it: lone surrogates as U+FFFD (as the flat indexes read text),
    runs of whitespace collapsed to one space, stripped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return " ".join(text.split())


@dataclass(frozen=True)
class ItemSplit:
    """The injected items of one query sorted by what the truth says of them."""

    needed: frozenset[str]
    misleading: frozenset[str]
    noise: frozenset[str]


def classify(items: Iterable[str], truth: Truth) -> ItemSplit:
    """Split ``items`` into needed, misleading (marked so by the truth, and not needed) and noise (the rest).

    For a non-query (nothing needed) every injected item is noise unless the truth marks it misleading.
    """
    got = set(items)
    need = got & set(truth.needed)
    mis = (got & set(truth.misleading)) - need
    return ItemSplit(frozenset(need), frozenset(mis), frozenset(got - need - mis))


def _as_ns(ts: pd.Timestamp | None) -> int | None:
    if ts is None or pd.isna(ts):
        return None
    t = pd.Timestamp(ts)
    t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    return int(t.as_unit("ns").value)


class _MemoryFacts:
    """Memory id -> its attributes (ids and creation times in ns), by creation time then table order."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        att = graph.attributes
        att = att[att["memory_id"].notna()]
        created = att["created_at"].dt.as_unit("ns").astype("int64").to_numpy()
        order = np.argsort(created, kind="stable")  # by creation time, ties in table order
        self._by_memory: dict[str, tuple[list[str], np.ndarray]] = {}
        mem = att["memory_id"].to_numpy(dtype=object)[order]
        ids = att["id"].to_numpy(dtype=object)[order]
        times = created[order]
        groups: dict[str, list[int]] = {}
        for i, m in enumerate(mem):
            groups.setdefault(m, []).append(i)
        for m, positions in groups.items():
            idx = np.asarray(positions)
            self._by_memory[m] = (list(ids[idx]), times[idx])

    def facts(self, memory_id: str, at_ns: int | None) -> list[str]:
        hit = self._by_memory.get(memory_id)
        if hit is None:
            return []
        ids, times = hit
        if at_ns is None:
            return list(ids)
        return ids[: int(np.searchsorted(times, at_ns, side="right"))]


def _evidence_memory(graph: KnowledgeGraph, aspects: Sequence[str] | None) -> dict[str, str]:
    """Attribute id -> the memory it is evidence for (see the module docstring)."""
    att = graph.attributes
    keep = att["memory_id"].notna()
    if aspects is not None:
        names = att["aspect_id"].map(graph.aspects.set_index("id")["name"])
        keep &= names.isin(list(aspects)).fillna(False).astype(bool)
    att = att[keep]
    return dict(zip(att["id"].tolist(), att["memory_id"].tolist(), strict=True))


class ItemResolver:
    """Resolves the ids a unit holds into the items ground truth counts (see the module docstring).

    Lookups are built lazily, once per graph, so resolving one query costs a few dictionary lookups.

    Args:
        dataset: the dataset whose graphs the units come from.

    Example:
        >>> resolver = ItemResolver(dataset)  # doctest: +SKIP
        >>> resolver.unit_items(query, Unit(text="...", items=("mem-000001",)))  # doctest: +SKIP
        ['att-0000003', 'att-0000004']
    """

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        aspects = dataset.meta.get("evidence_attribute_aspects")
        self.evidence_aspects: tuple[str, ...] | None = None if aspects is None else tuple(aspects)
        self._memory_facts: dict[str, _MemoryFacts] = {}
        self._evidence: dict[str, dict[str, str]] = {}
        self._content: dict[str, dict[str, str]] = {}
        self._credit_text: dict[tuple[str, str], str] = {}
        self._memory_ids: dict[str, frozenset[str]] = {}

    def memory_ids(self, graph_id: str) -> frozenset[str]:
        """The memory ids of one graph (what passage and turn recall count)."""
        hit = self._memory_ids.get(graph_id)
        if hit is None:
            hit = frozenset(self.dataset.graphs[graph_id].memories["id"].astype(str))
            self._memory_ids[graph_id] = hit
        return hit

    def row_text(self, query: Query, item_id: str) -> str | None:
        """The content of the memory or attribute ``item_id`` in ``query``'s graph, read by
        :func:`credit_text`; ``None`` for an id that names neither (an entity, an unknown id)."""
        content = self._content.get(query.graph_id)
        if content is None:
            graph = self.dataset.graphs[query.graph_id]
            content = {}
            for frame in (graph.attributes, graph.memories):
                content.update(zip(frame["id"].astype(str), frame["content"].astype(str), strict=True))
            self._content[query.graph_id] = content
        text = content.get(item_id)
        if text is None:
            return None
        key = (query.graph_id, item_id)
        norm = self._credit_text.get(key)
        if norm is None:
            norm = self._credit_text[key] = credit_text(text)
        return norm

    def kind(self, query: Query) -> str:
        """The ``needed_kind`` of ``query``'s truth."""
        kind = self.dataset.truth[query.id].needed_kind
        if kind not in NEEDED_KINDS:
            raise ValueError(
                f"query {query.id!r}: unknown needed_kind {kind!r}; expected one of {NEEDED_KINDS}"
            )
        return kind

    def resolve_id(self, query: Query, item_id: str) -> list[str]:
        """What one id counts as for ``query`` (itself when it resolves to nothing)."""
        kind = self.kind(query)
        if kind == "attribute":
            if query.graph_id not in self._memory_facts:
                self._memory_facts[query.graph_id] = _MemoryFacts(self.dataset.graphs[query.graph_id])
            facts = self._memory_facts[query.graph_id].facts(item_id, _as_ns(query.timestamp))
            return facts or [item_id]
        if kind == "memory":
            if query.graph_id not in self._evidence:
                graph = self.dataset.graphs[query.graph_id]
                self._evidence[query.graph_id] = _evidence_memory(graph, self.evidence_aspects)
            return [self._evidence[query.graph_id].get(item_id, item_id)]
        return [item_id]

    def items(self, query: Query, ids: Iterable[str], text: str) -> list[str]:
        """The distinct items a unit with text ``text`` listing ``ids`` injects for ``query``, in order:
        each id credited under the rule of the module docstring, then resolved (:meth:`resolve_id`)."""
        kind = self.kind(query)
        unit_text = credit_text(text) if kind != "entity" else ""
        out: list[str] = []
        seen: set[str] = set()
        for raw in ids:
            row = None if kind == "entity" else self.row_text(query, raw)
            if row is None or row in unit_text:
                got = self.resolve_id(query, raw)
            elif kind == "attribute":  # a cut memory: the facts whose own text it still carries
                got = [
                    f
                    for f in self.resolve_id(query, raw)
                    if f != raw and (fact := self.row_text(query, f)) is not None and fact in unit_text
                ] or [raw + PART_SUFFIX]
            else:
                got = [raw + PART_SUFFIX]
            for item in got:
                if item not in seen:
                    seen.add(item)
                    out.append(item)
        return out

    def unit_items(self, query: Query, unit: Unit) -> list[str]:
        """The distinct items ``unit`` injects for ``query``, in the order the unit lists them (only rows
        whose whole text the unit injects are credited; see the module docstring)."""
        return self.items(query, unit.items, unit.text)

    def ranking(self, query: Query, units: Sequence[Unit]) -> list[str]:
        """The distinct items of ``units`` in injection order (units best first, each expanded to items)."""
        out: list[str] = []
        seen: set[str] = set()
        for unit in units:
            for item in self.unit_items(query, unit):
                if item not in seen:
                    seen.add(item)
                    out.append(item)
        return out
