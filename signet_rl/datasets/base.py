"""Datasets: graphs, queries, ground truth kept apart, and what a loader found wrong in its input.

A :class:`Dataset` is one or more :class:`~signet_rl.graph.model.KnowledgeGraph` (LoCoMo has one per
conversation), the :class:`Query` objects asked of them, and a :class:`GroundTruth` that only the evaluator
and the simulated rater may read. A :class:`Query` carries nothing a real Signet store would not have at
query time: its text, its timestamp, which graph it is asked of, its split, and loader facts that are part of
the question itself (the head entity and relation of a KG query ``(e1, r, ?)``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from signet_rl.core.paths import DATA_ENV, REQUIRE_DATA_ENV, data_root
from signet_rl.core.types import SPLITS, Query, Split
from signet_rl.graph.model import KnowledgeGraph

__all__ = [
    "DATA_ENV",
    "REQUIRE_DATA_ENV",
    "SPLITS",
    "Dataset",
    "DatasetNotFoundError",
    "GroundTruth",
    "LoadReport",
    "MalformedRow",
    "Query",
    "Truth",
    "data_root",
]

NeededKind = Literal["attribute", "memory", "entity"]


class DatasetNotFoundError(FileNotFoundError):
    """A dataset's files are not under the data root (the message says where it looked)."""


@dataclass(frozen=True)
class Truth:
    """What a query needs, for the evaluator and the simulated rater only.

    Attributes:
        query_id: the :class:`Query` this belongs to.
        needed: ids of what answers the query (latest attribute versions, evidence memories, answer
            entities: see ``needed_kind``). Empty for a non-query: the right amount of context is zero.
        needed_kind: what ``needed`` holds ids of.
        misleading: ids that look right but mislead (superseded versions for *changed* queries).
        intent: the gold intent (what / relate / action / changed / none), where the dataset has one.
        category: a dataset's own category (LoCoMo ``multi-hop``, ``temporal``, ...).
        hops: how many graph hops the needed facts lie from the query's entry entity, if known.
        answers: answer strings, where the dataset has them.
        flat_solvable: whether the needed facts share words with the query (synthetic benchmark).

    ``needed``, ``misleading`` and ``answers`` accept a list (kept as a tuple) or one bare string (one id).

    Raises:
        ValueError: one of them is neither a string nor a list or tuple, naming the query and the value.
    """

    query_id: str
    needed: tuple[str, ...]
    needed_kind: NeededKind
    misleading: tuple[str, ...] = ()
    intent: str | None = None
    category: str | None = None
    hops: int | None = None
    answers: tuple[str, ...] = ()
    flat_solvable: bool | None = None

    def __post_init__(self) -> None:
        # A bare string is one id (iterating it would make every character an id); lists become tuples.
        for name in ("needed", "misleading", "answers"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
            elif isinstance(value, list | tuple):
                if not isinstance(value, tuple):
                    object.__setattr__(self, name, tuple(value))
            else:
                raise ValueError(
                    f"Truth for {self.query_id!r}: {name} must be ids (a tuple of strings), got {value!r}"
                )


class GroundTruth(Mapping[str, Truth]):
    """Query id -> :class:`Truth`. Hand it to evaluators and raters, never to policies or features.

    Attributes:
        labels: planted labels of a generated dataset (domain and community of each entity, bridge,
            principle and distractor facts, spurious edges, the focus entities of each query), as frames.
            Like the truths, they are for evaluation and analysis only.
    """

    def __init__(
        self, truths: Sequence[Truth] = (), labels: Mapping[str, pd.DataFrame] | None = None
    ) -> None:
        self.labels: dict[str, pd.DataFrame] = dict(labels or {})
        self._by_id = {t.query_id: t for t in truths}
        if len(self._by_id) != len(truths):
            dup = Counter(t.query_id for t in truths).most_common(1)[0][0]
            raise ValueError(f"ground truth has two entries for query {dup!r}")

    def __getitem__(self, key: str) -> Truth:
        return self._by_id[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)


@dataclass(frozen=True)
class MalformedRow:
    """One input row a loader could not use as it stood, and what it did with it."""

    file: str
    row: str
    problem: str
    action: str = "skipped"


@dataclass
class LoadReport:
    """What a loader read and what it found wrong. Malformed rows are counted, never silently dropped."""

    files: list[str] = field(default_factory=list)
    malformed: list[MalformedRow] = field(default_factory=list)

    def add(self, file: str | os.PathLike[str], row: object, problem: str, action: str = "skipped") -> None:
        self.malformed.append(MalformedRow(str(file), str(row), problem, action))

    def counts(self) -> dict[str, int]:
        """Malformed rows by problem."""
        return dict(Counter(m.problem for m in self.malformed))

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "malformed_total": len(self.malformed),
            "malformed_by_problem": self.counts(),
            "malformed_examples": [m.__dict__ for m in self.malformed[:10]],
        }


@dataclass
class Dataset:
    """Graphs, queries and their ground truth, as one loader or generator produced them.

    Attributes:
        name: the dataset spec it was loaded from (``synthetic:small:0``, ``kg:kinship``, ...).
        graphs: graph id -> graph. Most datasets have one, keyed ``"main"``; LoCoMo has one per
            conversation, keyed by ``sample_id``.
        queries: every query, in time order where times exist.
        truth: ground truth by query id (for the evaluator and rater only).
        report: what the loader read and the malformed rows it found.
        meta: provenance (config, config hash, sources); JSON-able.
    """

    name: str
    graphs: dict[str, KnowledgeGraph]
    queries: list[Query]
    truth: GroundTruth
    report: LoadReport = field(default_factory=LoadReport)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = [q.id for q in self.queries]
        if len(set(ids)) != len(ids):
            dup = Counter(ids).most_common(1)[0][0]
            raise ValueError(f"{self.name}: query id {dup!r} appears twice")
        for q in self.queries:
            if q.graph_id not in self.graphs:
                raise ValueError(f"{self.name}: query {q.id!r} asks unknown graph {q.graph_id!r}")
            if q.split not in SPLITS:
                raise ValueError(f"{self.name}: query {q.id!r} has split {q.split!r}; expected {SPLITS}")
        missing = [q.id for q in self.queries if q.id not in self.truth]
        if missing:
            raise ValueError(f"{self.name}: {len(missing)} queries have no ground truth, e.g. {missing[0]!r}")

    @property
    def graph(self) -> KnowledgeGraph:
        """The only graph, for single-graph datasets."""
        if len(self.graphs) != 1:
            raise ValueError(f"{self.name} has {len(self.graphs)} graphs; pick one from .graphs")
        return next(iter(self.graphs.values()))

    def split(self, name: Split) -> list[Query]:
        """The queries of one split."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return [q for q in self.queries if q.split == name]

    def kfold(self, k: int, seed: int = 0, group: str | None = None) -> list[tuple[list[str], list[str]]]:
        """``k`` folds of (train query ids, held-out query ids), for small datasets that learn.

        Args:
            k: number of folds (2 <= k <= number of groups).
            seed: shuffles groups before they are dealt into folds.
            group: ``"graph"`` keeps each graph's queries in one fold (LoCoMo conversations); by default
                every query is its own group.
        """
        keys = [q.graph_id if group == "graph" else q.id for q in self.queries]
        groups = sorted(set(keys))
        if not 2 <= k <= len(groups):
            raise ValueError(f"k={k} folds need 2 <= k <= {len(groups)} groups")
        order = np.random.default_rng(seed).permutation(len(groups))
        fold_of = {groups[g]: i % k for i, g in enumerate(order)}
        out = []
        for f in range(k):
            held = [q.id for q, key in zip(self.queries, keys, strict=True) if fold_of[key] == f]
            train = [q.id for q, key in zip(self.queries, keys, strict=True) if fold_of[key] != f]
            out.append((train, held))
        return out

    def learning_split(
        self, k: int = 5, fold: int | str = 0, seed: int = 0, group: str | None = None
    ) -> Dataset:
        """A copy whose splits come from fold ``fold`` of :meth:`kfold`: its held-out queries are ``test``,
        the next fold's are ``validation`` and the rest ``train`` — for datasets that ship every query as
        ``test`` (LoCoMo: ``group="graph"`` keeps conversations whole; MuSiQue: by query).

        ``fold="all"`` makes every query ``train`` (no validation, no test): the policy a user trains on all
        of the dev data before evaluating it on data the framework has never seen (another data root,
        through ``python -m signet_rl.evaluate ... learning_split=false policy=<run>``).

        Raises:
            ValueError: ``fold`` outside ``[0, k)`` and not ``"all"``, or too few groups for ``k`` folds
                (naming them).
        """
        if isinstance(fold, str) and fold == "all":
            queries = [replace(q, split="train") for q in self.queries]
            meta = {**self.meta, "learning_split": {"k": k, "fold": "all", "seed": seed, "group": group}}
            return Dataset(self.name, self.graphs, queries, self.truth, self.report, meta)
        if isinstance(fold, bool) or not isinstance(fold, int) or not 0 <= fold < k:
            raise ValueError(f"fold={fold!r} must be in [0, {k}) or 'all'")
        folds = self.kfold(k, seed=seed, group=group)
        test = set(folds[fold][1])
        validation = set(folds[(fold + 1) % k][1])
        queries = [
            replace(q, split="test" if q.id in test else "validation" if q.id in validation else "train")
            for q in self.queries
        ]
        meta = {**self.meta, "learning_split": {"k": k, "fold": fold, "seed": seed, "group": group}}
        return Dataset(self.name, self.graphs, queries, self.truth, self.report, meta)


def config_hash(config: Mapping[str, Any]) -> str:
    """A short stable hash of a JSON-able config (sorted keys)."""
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
