from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph
from signet_rl.scorers import PPRScorer, PriorScorer, RandomScorer, ScoringContext, make_scorer
from signet_rl.traversal.path import Hop, Path

T0 = pd.Timestamp("2026-01-01T00:00:00Z")


@pytest.fixture
def graph():
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e) for e in ("a", "b", "c", "d")],
        aspects=[Aspect(id="asp-b", entity_id="b", name="config", weight=0.8)],
        attributes=[
            Attribute(id="t1", aspect_id="asp-b", content="x", importance=0.6, created_at=T0),
            Attribute(id="t2", aspect_id="asp-b", content="y", importance=0.4, created_at=T0),
        ],
        dependencies=[
            Dependency(
                id="ab",
                source_entity_id="a",
                target_entity_id="b",
                dependency_type="uses",
                confidence=0.9,
                strength=0.5,
            ),
            Dependency(
                id="bc",
                source_entity_id="b",
                target_entity_id="c",
                dependency_type="uses",
                confidence=0.7,
                strength=1.0,
            ),
            Dependency(
                id="cd",
                source_entity_id="c",
                target_entity_id="d",
                dependency_type="uses",
                confidence=0.7,
                strength=1.0,
            ),
        ],
    )


def _ctx(graph, entries=("a",), days=0.0):
    return ScoringContext(graph, GraphArrays.from_graph(graph), entries, T0.timestamp() + days * 86400)


Q = Query(id="q1", text="x", graph_id="main", split="test")
AB_T = Path.of(
    Hop.entity("a"),
    Hop.dependency("ab"),
    Hop.entity("b"),
    Hop.aspect("asp-b"),
    Hop.attribute("t1"),
    Hop.attribute("t2"),
)
ABC = Path.of(Hop.entity("a"), Hop.dependency("ab"), Hop.entity("b"), Hop.dependency("bc"), Hop.entity("c"))
ABCD = Path.of(*ABC.hops, Hop.dependency("cd"), Hop.entity("d"))


def test_prior_is_the_documented_product(graph):
    s = PriorScorer(half_life_days=90).score(Q, [AB_T, ABC], _ctx(graph, days=90))
    assert s[0] == pytest.approx(0.9 * 0.5 * 0.8 * 0.5 * 0.5)  # conf×strength · weight · mean imp · half-life
    assert s[1] == pytest.approx(0.9 * 0.5 * 0.7 * 1.0)
    no_recency = PriorScorer(half_life_days=None).score(Q, [AB_T], _ctx(graph, days=900))
    assert no_recency[0] == pytest.approx(0.9 * 0.5 * 0.8 * 0.5)


def test_ppr_prefers_what_is_near_the_entries(graph):
    s = PPRScorer().score(Q, [ABC, ABCD, AB_T], _ctx(graph))
    rank = np.asarray(
        PPRScorer()
        ._build(GraphArrays.from_graph(graph))
        .personalized_pagerank(damping=0.5, reset_vertices=[0], weights="weight")
    )
    # the local push is within its tolerance (1e-6 x weighted degree <= 3e-6 per entity) of the exact solve
    assert s[0] == pytest.approx(rank[1] + rank[2], abs=6e-6)
    assert s[1] == pytest.approx(rank[1] + rank[2] + rank[3], abs=9e-6)
    exact = PPRScorer(tol=None).score(Q, [ABC, ABCD, AB_T], _ctx(graph))  # igraph's whole-graph solve
    assert exact[0] == pytest.approx(rank[1] + rank[2])
    assert exact[1] == pytest.approx(rank[1] + rank[2] + rank[3])
    assert rank[1] > rank[2] > rank[3]  # mass decays with distance from the entry
    assert np.all(PPRScorer().score(Q, [ABC], _ctx(graph, entries=())) == 0)


def test_random_is_reproducible_per_query(graph):
    a = RandomScorer(seed=3).score(Q, [ABC, ABCD, AB_T], _ctx(graph))
    assert np.array_equal(a, RandomScorer(seed=3).score(Q, [ABC, ABCD, AB_T], _ctx(graph)))
    other = Query(id="q2", text="x", graph_id="main", split="test")
    assert not np.array_equal(a, RandomScorer(seed=3).score(other, [ABC, ABCD, AB_T], _ctx(graph)))


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (
            lambda: make_scorer("oracle"),
            "unknown scorer 'oracle'; known scorers: fused, gnn, linucb, ppr, prior, random",
        ),
        (lambda: PriorScorer(half_life_days=0), "half_life_days must be a number > 0 or None, got 0"),
        (lambda: PPRScorer(damping=1.0), r"damping must be a number in \(0, 1\), got 1.0"),
    ],
)
def test_bad_scorers(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_registry_builds_each_scorer():
    assert {make_scorer(n).name for n in ("prior", "ppr", "random")} == {"prior", "ppr", "random"}
    assert not math.isnan(PriorScorer().score(Q, [], _ctx(KnowledgeGraph())).sum())


def test_prior_multiplies_by_the_query_relevance_of_its_facts():
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e", name="caroline", entity_type="person")],
        aspects=[Aspect(id="obs", entity_id="e", name="observations")],
        attributes=[
            Attribute(id=f"t{i}", aspect_id="obs", content=f"fact {i}", importance=0.5) for i in range(4)
        ],
    )
    arrays = GraphArrays.from_graph(graph)
    paths = [
        Path.of(Hop.entity("e"), Hop.aspect("obs"), Hop.attribute("t0"), Hop.attribute("t1")),
        Path.of(Hop.entity("e"), Hop.aspect("obs"), Hop.attribute("t2"), Hop.attribute("t3")),
    ]
    rel = np.array([0.8, 0.4, -0.3, 0.0])
    plain = ScoringContext(graph, arrays, ["e"])
    ctx = ScoringContext(graph, arrays, ["e"], relevance=lambda idx: rel[idx])
    q = Query(id="q", text="fact", graph_id="main", split="test")
    base = PriorScorer(half_life_days=None).score(q, paths, plain)
    np.testing.assert_allclose(base, [0.25, 0.25])  # aspect weight 0.5 x importance 0.5
    np.testing.assert_allclose(
        PriorScorer(half_life_days=None).score(q, paths, ctx), [0.25 * 0.6, 0.25 * 0.01]
    )
    np.testing.assert_allclose(PriorScorer(half_life_days=None, relevance=False).score(q, paths, ctx), base)
