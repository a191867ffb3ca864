"""The HippoRAG-style PPR baseline on a hand-built graph, against PageRank worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query
from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph, Memory, Mention
from signet_rl.retrieval.ppr import PPRRetriever, personalized_pagerank

T0 = pd.Timestamp("2024-01-01", tz="UTC")


def chain_graph() -> KnowledgeGraph:
    """alpha - beta - gamma (two dependencies, confidence x strength 1); m1 mentions alpha, m2 gamma,
    m3 beta and gamma; m4 is written after the query."""
    ents = [Entity(id=i, name=n, created_at=T0) for i, n in (("a", "alpha"), ("b", "beta"), ("c", "gamma"))]
    deps = [
        Dependency(id="d1", dependency_type="uses", source_entity_id="a", target_entity_id="b",
                   strength=1.0, confidence=1.0, created_at=T0),
        Dependency(id="d2", dependency_type="uses", source_entity_id="b", target_entity_id="c",
                   strength=1.0, confidence=1.0, created_at=T0),
    ]  # fmt: skip
    mems = [Memory(id=f"m{i}", content=f"text {i}", created_at=T0) for i in (1, 2, 3)]
    mems.append(Memory(id="m4", content="later", created_at=T0 + pd.Timedelta(days=30)))
    ments = [Mention(memory_id=m, entity_id=e) for m, e in
             (("m1", "a"), ("m2", "c"), ("m3", "b"), ("m3", "c"), ("m4", "a"))]  # fmt: skip
    return KnowledgeGraph.from_records(entities=ents, dependencies=deps, memories=mems, mentions=ments)


def test_ppr_matches_the_hand_computed_fixed_point():
    # Seed alpha, damping 1/2, path alpha-beta-gamma with unit weights:
    #   p_a = 1/2 + 1/2 (p_b / 2),  p_b = 1/2 (p_a + p_c),  p_c = 1/2 (p_b / 2)
    # gives p = (7/12, 4/12, 1/12).
    src = np.array([0, 1, 1, 2])
    dst = np.array([1, 0, 2, 1])
    p = personalized_pagerank(3, src, dst, np.ones(4), np.array([1.0, 0.0, 0.0]), damping=0.5)
    assert p == pytest.approx([7 / 12, 4 / 12, 1 / 12], abs=1e-9)


def test_passages_score_their_entities_ppr_mass():
    ppr = PPRRetriever(vector=False, specificity=False, comention=False)
    ppr.index_graphs({"g": chain_graph()})
    q = Query(id="q", text="tell me about alpha", graph_id="g", split="test",
              timestamp=T0 + pd.Timedelta(days=1))
    s = ppr.scores(q)
    # m1 = p_a = 7/12, m2 = p_c = 1/12, m3 = p_b + p_c = 5/12; m4 was written after the query: 0.
    assert s == pytest.approx([7 / 12, 1 / 12, 5 / 12, 0.0], abs=1e-9)
    units = ppr.retrieve(q)
    assert [u.items[0] for u in units] == ["m1", "m3", "m2"]
    assert [u.text for u in units] == ["text 1", "text 3", "text 2"]
    assert [len(ppr.retrieve(q, budget_chars=12))] == [2]  # "text 1" + "text 3" fill 12 characters


def test_comention_edges_join_what_a_memory_mentions_together():
    # Without dependencies, m3's co-mention of beta and gamma is the only edge: seeding beta with
    # weight 1/2 per co-mention, p_b = 1/2 + 1/2 p_c, p_c = 1/2 p_b -> p = (0, 2/3, 1/3).
    g = chain_graph()
    g = KnowledgeGraph.from_records(
        entities=[Entity(id=i, name=n, created_at=T0)
                  for i, n in (("a", "alpha"), ("b", "beta"), ("c", "gamma"))],
        memories=[Memory(id=f"m{i}", content=f"text {i}", created_at=T0) for i in (1, 2, 3)],
        mentions=[Mention(memory_id=m, entity_id=e)
                  for m, e in (("m1", "a"), ("m2", "c"), ("m3", "b"), ("m3", "c"))],
    )  # fmt: skip
    ppr = PPRRetriever(vector=False, specificity=False, comention=True)
    ppr.index_graphs({"g": g})
    s = ppr.scores(Query(id="q", text="beta?", graph_id="g", split="test"))
    assert s == pytest.approx([0.0, 1 / 3, 1.0], abs=1e-9)


def test_specificity_divides_a_seed_by_its_memories_and_unknown_graphs_are_named():
    ppr = PPRRetriever(vector=False, specificity=True, comention=False)
    ppr.index_graphs({"g": chain_graph()})
    q = Query(id="q", text="alpha and gamma", graph_id="g", split="test", timestamp=T0 + pd.Timedelta(days=1))
    # both names match exactly (entry score 2 + keyword 1 each); alpha is mentioned by 1 visible memory,
    # gamma by 2: reset (3/1, 3/2) normalised = (2/3, 1/3).
    expected = personalized_pagerank(
        3, np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]), np.ones(4), np.array([2 / 3, 0, 1 / 3])
    )
    s = ppr.scores(q)
    assert s[:3] == pytest.approx([expected[0], expected[2], expected[1] + expected[2]], abs=1e-9)
    with pytest.raises(ValueError, match="hipporag_ppr: graph 'nope' was not indexed"):
        ppr.retrieve(Query(id="q", text="alpha", graph_id="nope", split="test"))
