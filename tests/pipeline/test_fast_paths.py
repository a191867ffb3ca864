"""The recall path's speed-ups change no ranking: on a seeded query set, the desire retriever with the hybrid
entry injects the same units (texts, items, scores) and scores the same paths whether entity search runs the
sparse vector path or the dense faiss scan, and whether PageRank ranks come from the scorer's cache or a
fresh solve."""

from __future__ import annotations

import numpy as np
import pytest

from signet_rl.core.types import Query
from signet_rl.datasets.synthetic import generate
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import flat_variant
from signet_rl.retrieval.indexes import VectorIndex
from signet_rl.scorers.prior import PPRScorer

HYBRID = {"floor": True, "session": True, "entity_walks": True, "graph_walk": True}


@pytest.fixture(scope="module")
def dataset():
    return generate("tiny", seed=0)


def _queries(dataset, n: int = 24) -> list[Query]:
    qs = list(dataset.queries)
    rng = np.random.default_rng(0)
    picked = [qs[i] for i in sorted(rng.choice(len(qs), min(n, len(qs)), replace=False))]
    # a second pass over the first few: the same entry sets again, which the PageRank cache then answers
    return picked + [Query(id=f"{q.id}:again", text=q.text, graph_id=q.graph_id, split=q.split,
                           timestamp=q.timestamp) for q in picked[:6]]  # fmt: skip


def _run(dataset, queries: list[Query], fresh_ppr: bool) -> list[tuple]:
    desire = DesirePathRetriever("ppr", config=HYBRID, flat=flat_variant("flat_signet_uncapped"))
    desire.index(dataset)
    sparse = VectorIndex.SPARSE_BELOW is not None
    assert all((s.entry._legs["name"].vectors._csr is not None) == sparse for s in desire._states.values())
    out = []
    for q in queries:
        if fresh_ppr:  # the plain reference: a solve per query, no rank cache
            desire.scorer = PPRScorer(desire.scorer.damping)
        cands = desire.candidates(q, 2000)
        paths = [] if cands is None else [p.id for p in cands.walk.paths]
        scores = [] if cands is None else desire.scorer.score(q, cands.walk.paths, cands.context).tolist()
        units = [(u.text, u.items, u.score) for u in desire.retrieve(q, 2000)]
        out.append((paths, scores, units))
    return out


def test_same_paths_and_units_before_and_after(dataset, monkeypatch):
    queries = _queries(dataset)
    after = _run(dataset, queries, fresh_ppr=False)
    monkeypatch.setattr(VectorIndex, "SPARSE_BELOW", None)  # entity search on the dense faiss scan
    before = _run(dataset, queries, fresh_ppr=True)
    assert sum(bool(units) for _, _, units in after) >= len(queries) // 2  # the set exercises the path
    assert after == before
