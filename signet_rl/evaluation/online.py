"""Prequential (online) evaluation: each system answers a conversation's questions one by one, in one
seeded order, and learns from the simulated rater's ratings of what it injected before the next question.

This is how a deployed Signet user's memory learns: a question is answered first (scored on what was
injected), then its units are rated, then the system may learn — so a question never benefits from its own
rating. Statistics are per graph (per user), so a held-out conversation starts neutral and learns as it goes.
Ground truth reaches only the rater (:class:`~signet_rl.rating.rater.SimulatedRater`) and the scores here.

Per question and system the rows carry needed recall and precision at the budget, and needed recall split
into the needed items no earlier question of the conversation (in this order) needed (``recall_new``) and
those an earlier one did (``recall_seen``): where an online gain comes from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset
from signet_rl.evaluation import metrics as M
from signet_rl.rating.items import ItemResolver
from signet_rl.rating.rater import SimulatedRater
from signet_rl.retrieval.base import Retriever

__all__ = ["OnlineSystem", "prequential", "question_order"]

#: ``learn(query, units, ratings)``: what a system does with the ratings of the units it injected.
Learn = Callable[[Query, Sequence[Unit], Sequence[float | None]], None]


@dataclass
class OnlineSystem:
    """One system of the prequential run: a retriever, and how it learns from ratings (``None``: frozen)."""

    retriever: Retriever
    learn: Learn | None = None


def question_order(queries: Sequence[Query], seed: int) -> list[Query]:
    """``queries`` grouped by graph (graphs in id order), each graph's questions in an order shuffled by
    ``seed`` (the same for every system)."""
    by_graph: dict[str, list[Query]] = {}
    for q in queries:
        by_graph.setdefault(q.graph_id, []).append(q)
    rng = np.random.default_rng(seed)
    out: list[Query] = []
    for gid in sorted(by_graph):
        qs = by_graph[gid]
        out += [qs[i] for i in rng.permutation(len(qs)).tolist()]
    return out


def prequential(
    dataset: Dataset,
    systems: Mapping[str, OnlineSystem],
    queries: Sequence[Query],
    seed: int = 0,
    budget_chars: int = 2000,
    rater_noise: float = 0.05,
    rater_prob: float = 0.8,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Run every system over ``queries`` in :func:`question_order` (``seed``): answer, score, rate, learn.

    Each system has its own :class:`SimulatedRater` seeded with ``seed`` and rates every unit it injected.
    Returns one row per (system, question): ``system``, ``seed``, ``position`` (the question's place in its
    conversation's order), ``graph_id``, ``query_id``, ``category``, ``n_needed``, ``needed_recall``,
    ``precision``, ``recall_new``, ``recall_seen`` (NaN where the question has no such items),
    ``n_new``, ``n_seen``, ``units``, ``chars``, ``walk_share`` and ``desire_share`` (the share of
    characters from walk or session units and from worn shortcuts; NaN for a flat system),
    ``rated_helpful`` (how many of its units the rater called helpful), and ``recall_rated`` /
    ``n_rated``: recall over the needed items this system injected for an earlier question of the
    conversation in a unit its rater called helpful (what learning from its own ratings could bring back).

    The systems are used as given and keep what they learned: a second call with the same objects starts
    from the first call's learned state (the raters and the bookkeeping above are fresh per call). For
    independent seeds, build fresh systems for every call, as ``experiments/online_desire.py`` does; then
    a call is reproducible row for row.
    """
    resolver = ItemResolver(dataset)
    raters = {name: SimulatedRater(dataset.truth, rater_noise, rater_prob, seed=seed) for name in systems}
    order = question_order(queries, seed)
    seen: dict[str, set[str]] = {}
    helped: dict[tuple[str, str], set[str]] = {}  # (system, graph) -> items in units rated helpful
    position: dict[str, int] = {}
    rows = []
    for n, query in enumerate(order):
        truth = dataset.truth[query.id]
        needed = set(truth.needed)
        before = seen.setdefault(query.graph_id, set())
        new, old = needed - before, needed & before
        pos = position.get(query.graph_id, 0)
        position[query.graph_id] = pos + 1
        for name, system in systems.items():
            units = list(system.retriever.retrieve(query, budget_chars))
            per_unit = [resolver.unit_items(query, u) for u in units]
            ranking = M.dedupe(i for items in per_unit for i in items)
            got = set(ranking)
            chars = sum(u.chars for u in units)
            walked = sum(u.chars for u in units if u.meta.get("source") in ("walk", "session"))
            desire = sum(u.chars for u in units if u.meta.get("strategy") == "desire")
            is_desire = any("path_id" in u.meta for u in units)
            ratings = [None if r is None else int(r) for r in raters[name].rate_many(query.id, per_unit)]
            good = helped.setdefault((name, query.graph_id), set())
            rated = needed & good
            rows.append({
                "system": name, "seed": seed, "position": pos, "graph_id": query.graph_id,
                "query_id": query.id, "category": truth.category, "n_needed": len(needed),
                "needed_recall": M.needed_recall(ranking, needed), "precision": M.precision(ranking, needed),
                "recall_new": len(got & new) / len(new) if new else math.nan,
                "recall_seen": len(got & old) / len(old) if old else math.nan,
                "n_new": len(new), "n_seen": len(old), "units": len(units), "chars": chars,
                "walk_share": walked / chars if chars and is_desire else math.nan,
                "desire_share": desire / chars if chars and is_desire else math.nan,
                "rated_helpful": sum(1 for r in ratings if r == 1),
                "recall_rated": len(got & rated) / len(rated) if rated else math.nan, "n_rated": len(rated),
            })  # fmt: skip
            good.update(i for items, r in zip(per_unit, ratings, strict=True) if r == 1 for i in items)
            if system.learn is not None:  # after the question was scored: it never gains from its own rating
                system.learn(query, units, ratings)
        before |= needed
        if progress is not None:
            progress(n + 1, len(order))
    return pd.DataFrame(rows)
