"""Query relevance orders an aspect's facts: an aspect with many facts yields the ones the query is about."""

from __future__ import annotations

import numpy as np

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Aspect, Attribute, Entity, KnowledgeGraph
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.walk import Traverser


def test_relevance_picks_the_facts_the_query_is_about():
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e", name="caroline", entity_type="person")],
        aspects=[Aspect(id="obs", entity_id="e", name="observations")],
        attributes=[
            Attribute(id=f"t{i:02d}", aspect_id="obs", content=f"fact {i}", importance=0.5 + i / 100)
            for i in range(20)
        ],
    )
    arrays = GraphArrays.from_graph(graph)
    walker = Traverser(arrays, graph, TraversalConfig(max_attributes_per_aspect=3))
    plain = walker.walk(["e"], "what").paths[0].attributes
    assert plain == ("t19", "t18", "t17")  # most important first without relevance
    wanted = {arrays.attribute_ids.tolist().index(t) for t in ("t03", "t11")}
    walk = walker.walk(["e"], "what", relevance=lambda idx: np.isin(idx, list(wanted)).astype(float))
    assert walk.paths[0].attributes == ("t11", "t03", "t19")  # relevant first, ties by importance


def test_aspect_chunks_split_a_large_aspect_into_query_ranked_paths():
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e", name="caroline", entity_type="person")],
        aspects=[Aspect(id="obs", entity_id="e", name="observations")],
        attributes=[
            Attribute(id=f"t{i:02d}", aspect_id="obs", content=f"fact {i}", importance=0.5 + i / 100)
            for i in range(7)
        ],
    )
    arrays = GraphArrays.from_graph(graph)
    walker = Traverser(arrays, graph, TraversalConfig(max_attributes_per_aspect=3, aspect_chunks=4))
    rel = {arrays.attribute_ids.tolist().index(t): float(t[1:]) % 5 for t in arrays.attribute_ids}
    walk = walker.walk(["e"], "what", relevance=lambda idx: np.array([rel[i] for i in idx]))
    # relevance i % 5: t04 (4), t03 (3), t02 (2), then t01 and t06 (1; t06 more important), t05, t00 (0).
    assert [p.attributes for p in walk.paths] == [("t04", "t03", "t02"), ("t06", "t01", "t05"), ("t00",)]
    # Without query relevance an aspect yields one path, whatever aspect_chunks says.
    assert [p.attributes for p in walker.walk(["e"], "what").paths] == [("t06", "t05", "t04")]
