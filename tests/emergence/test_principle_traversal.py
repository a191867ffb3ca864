"""What confirm and reject do to the walks and scores of paths through a principle (issue 29 §3, audit):
a confirmed principle's paths score higher than a merely proposed one's and outrank the entry's own facts;
a rejected one's are never walked, even after earlier confirms."""

from __future__ import annotations

import numpy as np
import pytest

from signet_rl.core.types import Query
from signet_rl.emergence.principles import add_principles, confirm, detect_principles, reject
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.prior import PriorScorer
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.walk import STRATEGIES, Traverser
from tests.emergence.test_principles import AT, PATTERN, THREE
from tests.emergence.test_principles import graph as principle_graph

QUERY = Query(id="q", text="what do we prefer", graph_id="main", split="test")


@pytest.fixture(scope="module")
def proposed() -> tuple[KnowledgeGraph, str]:
    g = principle_graph(THREE)
    (p,) = detect_principles(g)
    return add_principles(g, [p], at=AT), p.id


def _scored(graph: KnowledgeGraph, entry: str) -> dict[str, float]:
    """Every path a ``relate`` walk from ``entry`` finds, with its prior score (the graph's belief:
    confidence x strength along the path; no recency, no query relevance)."""
    arrays = GraphArrays.from_graph(graph)
    walk = Traverser(arrays, graph, TraversalConfig()).walk([entry], "relate")
    scores = PriorScorer(half_life_days=None, relevance=False).score(
        QUERY, walk.paths, ScoringContext(graph, arrays, [entry]))
    return {str(p): float(s) for p, s in zip(walk.paths, scores, strict=True)}


def test_a_confirmed_principles_paths_score_higher_than_a_proposed_ones(proposed) -> None:
    g, pid = proposed
    before, after = _scored(g, "billing"), _scored(confirm(g, pid), "billing")
    assert set(before) == set(after)  # the same paths are walked; confirm changes how much they weigh
    through = {p for p in before if pid in p}
    assert len(through) >= 3  # billing -> principle, and on to garden and novel
    for path in through:
        hops = path.count(f"{pid}/")  # principle edges on the path
        assert after[path] == pytest.approx(before[path] * (0.7 / 0.5) ** hops)  # 0.5 -> 0.7 per edge
    others = {p: s for p, s in before.items() if p not in through}
    assert others and all(after[p] == before[p] for p in others)
    # proposed, the best path through the principle only ties the entry's own facts; confirmed, it leads
    assert max(before[p] for p in through) <= max(others.values())
    best = max(after, key=after.__getitem__)
    assert pid in best and after[best] > max(others.values())


@pytest.mark.parametrize("confirms", [0, 1, 2])
def test_after_reject_no_walk_goes_through_the_principle(proposed, confirms) -> None:
    g, pid = proposed
    for _ in range(confirms):
        g = confirm(g, pid)
    assert any(pid in p for p in _scored(g, "billing"))  # walked before the reject
    gone = reject(g, pid)
    deps = gone.dependencies[gone.dependencies["source_entity_id"] == pid]
    assert set(deps["reason"]) == {"inferred"} and np.allclose(deps["confidence"], 0.4)
    arrays = GraphArrays.from_graph(gone)
    walker = Traverser(arrays, gone, TraversalConfig())
    walked = [walker.walk(entries, intent).paths for intent in STRATEGIES
              for entries in [[e] for e in PATTERN] + [list(PATTERN)]]  # each entity, and all three together
    assert sum(len(w) for w in walked) > 0
    assert not any(pid in p.entities for w in walked for p in w)
    assert gone.meta["principles"][pid]["status"] == "rejected"
