"""GraphArrays: the CSR and index arrays against a hand-built graph and a naive Python adjacency."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.confidence import LADDER, Reason
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Dependency,
    Entity,
    KnowledgeGraph,
    Memory,
    Mention,
)


def ts(day: str) -> pd.Timestamp:
    return pd.Timestamp(day, tz="UTC")


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    """Five entities (e3 isolated), a self-loop on e1, a tie between d0 and d2 at e0."""
    return KnowledgeGraph.from_records(
        entities=[
            Entity(id="e0", name="signet", entity_type="project", mentions=3),
            Entity(id="e1", name="sqlite", entity_type="tool", pinned=True),
            Entity(id="e2", name="alice", entity_type="person"),
            Entity(id="e3", name="lonely", entity_type="concept"),
            Entity(id="e4", name="bun", entity_type="tool"),
        ],
        dependencies=[  # score = confidence × strength
            Dependency(id="d0", source_entity_id="e0", target_entity_id="e1",
                       dependency_type="uses", strength=0.5, confidence=0.9,
                       reason="multi-memory"),                                        # 0.45
            Dependency(id="d1", source_entity_id="e2", target_entity_id="e0",
                       dependency_type="informs", strength=1.0, confidence=0.7),      # 0.70
            Dependency(id="d2", source_entity_id="e0", target_entity_id="e2",
                       dependency_type="requires", strength=0.9, confidence=0.5,
                       reason="pattern-matched"),                                     # 0.45 (tie)
            Dependency(id="d3", source_entity_id="e1", target_entity_id="e1",
                       dependency_type="blocks", strength=1.0, confidence=1.0,
                       reason="user-asserted", aspect_id="a2"),                       # self-loop
            Dependency(id="d4", source_entity_id="e4", target_entity_id="e0",
                       dependency_type="uses", strength=0.2, confidence=0.3,
                       reason="llm-uncertain", created_at=ts("2024-03-01")),  # 0.06
        ],
        aspects=[
            Aspect(id="a0", entity_id="e0", name="history", weight=0.3),
            Aspect(id="a1", entity_id="e0", name="design", weight=0.8),
            Aspect(id="a2", entity_id="e1", name="limits", weight=0.5),
        ],
        attributes=[
            Attribute(id="t0", content="uses sqlite", aspect_id="a1", memory_id="m0",
                      created_at=ts("2024-01-01")),
            Attribute(id="t1", content="port 3000", aspect_id="a2", status="superseded",
                      superseded_by="t4", created_at=ts("2024-01-10")),
            Attribute(id="t2", content="never delete", aspect_id="a1", kind="constraint",
                      importance=0.9, created_at=ts("2024-01-20")),
            Attribute(id="t3", content="unsorted fact", memory_id="m1",
                      created_at=ts("2024-02-01")),
            Attribute(id="t4", content="port 3850", aspect_id="a2", memory_id="m2",
                      created_at=ts("2024-03-01")),
            Attribute(id="t5", content="old", aspect_id="a0", status="deleted",
                      created_at=ts("2024-03-02")),
        ],
        memories=[
            Memory(id="m0", content="signet uses sqlite", created_at=ts("2024-01-01")),
            Memory(id="m1", content="alice said hi", created_at=ts("2024-02-01"), is_deleted=True,
                   importance=0.2),
            Memory(id="m2", content="port moved", created_at=ts("2024-03-01")),
        ],
        mentions=[
            Mention(memory_id="m0", entity_id="e1"),
            Mention(memory_id="m0", entity_id="e0"),
            Mention(memory_id="m1", entity_id="e0"),
            Mention(memory_id="m2", entity_id="e2"),
            Mention(memory_id="m2", entity_id="e0"),
        ],
    )


@pytest.fixture(scope="module")
def ga(graph: KnowledgeGraph) -> GraphArrays:
    return GraphArrays.from_graph(graph)


def test_entity_index_and_types(ga: GraphArrays) -> None:
    assert ga.entity_ids.tolist() == ["e0", "e1", "e2", "e3", "e4"]
    assert dict(ga.entity_index) == {"e0": 0, "e1": 1, "e2": 2, "e3": 3, "e4": 4}
    assert ga.entity_type_vocab == ("concept", "person", "project", "tool")
    assert [ga.entity_type_vocab[c] for c in ga.entity_type] == [
        "project", "tool", "person", "concept", "tool"]
    assert (ga.num_entities, ga.num_dependencies, ga.num_aspects, ga.num_attributes,
            ga.num_memories, ga.num_mentions) == (5, 5, 3, 6, 3, 5)
    assert ga.indices(["e4", "e0"]).tolist() == [4, 0]
    with pytest.raises(KeyError, match="'nope'"):
        ga.indices(["e0", "nope"])


def test_neighbors_both_directions_in_score_order(ga: GraphArrays) -> None:
    nb = ga.neighbors(0)
    # d1 in (0.70), then the 0.45 tie d0 before d2 by edge row, then d4 in (0.06).
    assert nb.edge.tolist() == [1, 0, 2, 4]
    assert nb.neighbor.tolist() == [2, 1, 2, 4]
    assert nb.direction.tolist() == [-1, 1, 1, -1]
    assert [ga.dep_type_vocab[t] for t in nb.type] == ["informs", "uses", "requires", "uses"]
    np.testing.assert_allclose(nb.strength, [1.0, 0.5, 0.9, 0.2])
    np.testing.assert_allclose(nb.confidence, [0.7, 0.9, 0.5, 0.3])
    assert [LADDER[r] for r in nb.reason] == [Reason.SINGLE_MEMORY, Reason.MULTI_MEMORY,
                                             Reason.PATTERN_MATCHED, Reason.LLM_UNCERTAIN]
    # A self-loop has an outgoing and an incoming slot; they come before d0 (1.0 > 0.45).
    nb1 = ga.neighbors(1)
    assert list(zip(nb1.neighbor.tolist(), nb1.edge.tolist(), nb1.direction.tolist(),
                    strict=True)) == [(1, 3, 1), (1, 3, -1), (0, 0, -1)]
    assert ga.neighbors(2).neighbor.tolist() == [0, 0]
    assert ga.neighbors(2).direction.tolist() == [1, -1]
    assert len(ga.neighbors(3).neighbor) == 0
    assert ga.neighbors(4).neighbor.tolist() == [0]
    assert ga.dep_indptr.tolist() == [0, 4, 7, 9, 9, 10]
    assert ga.degree().tolist() == [4, 3, 2, 0, 1]
    # Views into the CSR, not copies.
    assert np.shares_memory(nb.neighbor, ga.dep_neighbor)


def test_frontier_slots_take_the_best_k_of_each(ga: GraphArrays) -> None:
    slots, owner = ga.frontier_slots([0, 3, 1, 0], k=2)
    assert owner.tolist() == [0, 0, 2, 2, 3, 3]
    assert ga.dep_edge[slots].tolist() == [1, 0, 3, 3, 1, 0]
    slots, owner = ga.frontier_slots(np.array([4, 2]))
    assert ga.dep_neighbor[slots].tolist() == [0, 0, 0] and owner.tolist() == [0, 1, 1]
    slots, owner = ga.frontier_slots([], k=4)
    assert slots.shape == owner.shape == (0,)


def test_slot_scores_non_increasing_and_per_edge_arrays(ga: GraphArrays) -> None:
    score = ga.dep_confidence.astype(np.float64) * ga.dep_strength
    for i in range(ga.num_entities):
        row = score[ga.dep_indptr[i]:ga.dep_indptr[i + 1]]
        assert np.all(np.diff(row) <= 1e-6)
    assert ga.edge_ids.tolist() == ["d0", "d1", "d2", "d3", "d4"]
    assert ga.edge_source.tolist() == [0, 2, 0, 1, 4]
    assert ga.edge_target.tolist() == [1, 0, 2, 1, 0]
    assert ga.edge_aspect.tolist() == [-1, -1, -1, 2, -1]
    np.testing.assert_array_equal(ga.dep_type, ga.edge_type[ga.dep_edge])
    np.testing.assert_array_equal(ga.dep_reason, ga.edge_reason[ga.dep_edge])


def test_aspects_and_attributes(ga: GraphArrays) -> None:
    assert ga.aspect_entity.tolist() == [0, 0, 1]
    assert ga.aspects_of(0).tolist() == [1, 0]  # design (0.8) before history (0.3)
    assert ga.aspects_of(1).tolist() == [2]
    assert ga.aspects_of(3).tolist() == []
    np.testing.assert_allclose(ga.aspect_weight, [0.3, 0.8, 0.5])
    assert ga.attr_aspect.tolist() == [1, 2, 1, -1, 2, 0]  # t3 has a NULL aspect
    assert ga.attr_entity.tolist() == [0, 1, 0, -1, 1, 0]
    assert ga.aspect_attr_indptr.tolist() == [0, 1, 3, 5]
    assert ga.attributes_of(0).tolist() == [5]
    assert ga.attributes_of(1).tolist() == [0, 2]
    assert ga.attributes_of(2).tolist() == [1, 4]
    assert ga.attr_kind.tolist() == [0, 0, 1, 0, 0, 0]
    assert ga.attr_status.tolist() == [0, 1, 0, 0, 0, 2]
    assert ga.attr_superseded_by.tolist() == [-1, 4, -1, -1, -1, -1]
    assert ga.attr_memory.tolist() == [0, -1, -1, 1, 2, -1]
    np.testing.assert_allclose(ga.attr_importance, [0.5, 0.5, 0.9, 0.5, 0.5, 0.5])
    assert ga.attr_created[0] == ts("2024-01-01").timestamp()


def test_memories_and_mentions_both_ways(ga: GraphArrays) -> None:
    assert ga.memory_ids.tolist() == ["m0", "m1", "m2"]
    assert ga.memory_deleted.tolist() == [False, True, False]
    np.testing.assert_allclose(ga.memory_importance, [0.5, 0.2, 0.5])
    assert [ga.memories_of(e).tolist() for e in range(5)] == [[0, 1, 2], [0], [2], [], []]
    assert [ga.entities_of(m).tolist() for m in range(3)] == [[0, 1], [0], [0, 2]]
    assert ga.ent_mem_indptr.tolist() == [0, 3, 4, 5, 5, 5]
    assert ga.mem_ent_indptr.tolist() == [0, 2, 3, 5]


@pytest.mark.parametrize("t", [ts("2024-02-01"), "2024-02-01T00:00:00Z", "2024-02-01 00:00:00",
                               ts("2024-02-01").timestamp(), np.datetime64("2024-02-01T00:00")])
def test_visibility_masks_at_a_timestamp(ga: GraphArrays, t: object) -> None:
    # Rows created exactly at t are visible; later ones are not.
    assert ga.visible_memories(t).tolist() == [True, True, False]
    assert ga.visible_attributes(t).tolist() == [True, True, True, True, False, False]
    assert ga.visible_dependencies(t).tolist() == [True, True, True, True, False]
    assert ga.visible_dependencies(t)[ga.neighbors(0).edge].tolist() == [True, True, True, False]


def test_visibility_before_and_after_everything(ga: GraphArrays) -> None:
    assert not ga.visible_attributes("2000-01-01").any()
    assert ga.visible_memories("2100-01-01").all()


def test_arrays_are_read_only_and_own_their_memory(graph: KnowledgeGraph, ga: GraphArrays) -> None:
    with pytest.raises(ValueError, match="read-only"):
        ga.dep_neighbor[0] = 3
    for name in ("entity_ids", "entity_mentions", "edge_ids", "attribute_ids", "memory_deleted"):
        assert not ga.__dict__[name].flags.writeable
    assert not np.shares_memory(ga.entity_mentions, graph.entities["mentions"].to_numpy())


def test_unresolved_reference_names_table_and_value() -> None:
    g = KnowledgeGraph.from_records(
        entities=[Entity(id="e0", name="x")],
        dependencies=[Dependency(id="d0", source_entity_id="e0", target_entity_id="ghost",
                                 dependency_type="uses")],
        validate=False,
    )
    with pytest.raises(ValueError, match=r"entity_dependencies.*target_entity_id.*'ghost'"):
        GraphArrays.from_graph(g)


def test_to_pyg_validates_with_shapes(ga: GraphArrays) -> None:
    data = ga.to_pyg()
    assert data.validate(raise_on_error=True)
    assert data.num_nodes == 5
    assert data.edge_index.tolist() == [[0, 2, 0, 1, 4], [1, 0, 2, 1, 0]]
    assert data.edge_type.shape == (5,)
    assert data.edge_attr.shape == (5, 2)
    assert data.edge_attr[0].tolist() == pytest.approx([0.5, 0.9])
    assert data.x.shape == (5, len(ga.entity_type_vocab) + 1)
    assert data.x[:, -1].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]  # pinned
    assert data.x[:, : len(ga.entity_type_vocab)].sum(dim=1).tolist() == [1.0] * 5


def test_to_hetero_validates_with_shapes(ga: GraphArrays) -> None:
    data = ga.to_hetero()
    assert data.validate(raise_on_error=True)
    assert set(data.node_types) == {"entity", "aspect", "attribute", "memory"}
    assert set(data.edge_types) == {
        ("entity", "depends_on", "entity"), ("entity", "has_aspect", "aspect"),
        ("aspect", "has_attribute", "attribute"), ("memory", "mentions", "entity"),
    }
    assert data["entity"].x.shape[0] == 5
    assert data["aspect"].x.shape == (3, 1)
    assert data["attribute"].x.shape == (6, 4)
    assert data["memory"].x.shape == (3, 2)
    assert data["entity", "depends_on", "entity"].edge_attr.shape == (5, 2)
    assert data["entity", "has_aspect", "aspect"].edge_index.tolist() == [[0, 0, 1], [0, 1, 2]]
    # The unclassified attribute t3 has no aspect edge.
    assert data["aspect", "has_attribute", "attribute"].edge_index.tolist() == [
        [0, 1, 1, 2, 2], [5, 0, 2, 1, 4]]
    assert data["memory", "mentions", "entity"].edge_index.tolist() == [
        [0, 0, 1, 2, 2], [0, 1, 0, 0, 2]]


def test_empty_graph() -> None:
    ga = GraphArrays.from_graph(KnowledgeGraph())
    assert ga.num_entities == 0 and ga.dep_indptr.tolist() == [0]
    assert ga.to_pyg().validate(raise_on_error=True)
    assert ga.to_hetero().validate(raise_on_error=True)
    assert ga.visible_attributes("2024-01-01").shape == (0,)


# ----------------------------------------------------------------------------------------------
# Property: the CSR equals a naive adjacency built row by row from the frames.

_UNIT = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])  # few values, so ties happen


@st.composite
def random_graphs(draw: st.DrawFn) -> KnowledgeGraph:
    n = draw(st.integers(1, 8))
    ents = [Entity(id=f"e{i}", name=f"e{i}",
                   entity_type=draw(st.sampled_from(["tool", "person", "task"])))
            for i in range(n)]
    n_edges = draw(st.integers(0, 20))
    deps = [Dependency(id=f"d{j}", source_entity_id=f"e{draw(st.integers(0, n - 1))}",
                       target_entity_id=f"e{draw(st.integers(0, n - 1))}",
                       dependency_type=draw(st.sampled_from(["uses", "blocks"])),
                       strength=draw(_UNIT), confidence=draw(_UNIT),
                       reason=draw(st.sampled_from([r.value for r in LADDER])))
            for j in range(n_edges)]
    n_asp = draw(st.integers(0, 6))
    asps = [Aspect(id=f"a{k}", entity_id=f"e{draw(st.integers(0, n - 1))}", name="x",
                   weight=draw(_UNIT)) for k in range(n_asp)]
    n_mem = draw(st.integers(0, 5))
    mems = [Memory(id=f"m{k}", content="x") for k in range(n_mem)]
    pairs = draw(st.sets(st.tuples(st.integers(0, max(n_mem - 1, 0)), st.integers(0, n - 1)),
                         max_size=12)) if n_mem else set()
    ments = [Mention(memory_id=f"m{m}", entity_id=f"e{e}") for m, e in sorted(pairs)]
    attrs = [Attribute(id=f"t{k}", content="x",
                       aspect_id=draw(st.sampled_from([None] + [a.id for a in asps])))
             for k in range(draw(st.integers(0, 8)))]
    # Shuffle the mention rows so ordering comes from the build, not from input order.
    ments = draw(st.permutations(ments))
    return KnowledgeGraph.from_records(entities=ents, dependencies=deps, aspects=asps,
                                       memories=mems, mentions=ments, attributes=attrs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_csr_equals_naive_adjacency(g: KnowledgeGraph) -> None:
    ga = GraphArrays.from_graph(g)
    index = {eid: i for i, eid in enumerate(g.entities["id"])}
    naive: dict[int, list[tuple[float, int, int, int]]] = {i: [] for i in range(len(index))}
    for row, d in enumerate(g.dependencies.itertuples(index=False)):
        s, t = index[d.source_entity_id], index[d.target_entity_id]
        score = d.confidence * d.strength
        naive[s].append((-score, row, -1, t))  # outgoing (+1) sorts before incoming on ties
        naive[t].append((-score, row, 1, s))
    for i in range(len(index)):
        expected = sorted(naive[i])
        nb = ga.neighbors(i)
        assert nb.edge.tolist() == [r for _, r, _, _ in expected]
        assert nb.neighbor.tolist() == [o for _, _, _, o in expected]
        assert nb.direction.tolist() == [-d for _, _, d, _ in expected]
    slots, owner = ga.frontier_slots(np.arange(len(index)), k=2)
    for i in range(len(index)):
        assert ga.dep_neighbor[slots[owner == i]].tolist() == ga.neighbors(i).neighbor[:2].tolist()

    asp_index = {aid: k for k, aid in enumerate(g.aspects["id"])}
    for i in range(len(index)):
        mine = [(-a.weight, k) for k, a in enumerate(g.aspects.itertuples())
                if index[a.entity_id] == i]
        assert ga.aspects_of(i).tolist() == [k for _, k in sorted(mine)]
    for k in range(len(asp_index)):
        # NULL aspect_id may read back as None or NaN.
        expected_attrs = [r for r, a in enumerate(g.attributes["aspect_id"]) if pd.notna(a)
                          and asp_index[a] == k]
        assert ga.attributes_of(k).tolist() == expected_attrs

    mem_index = {mid: k for k, mid in enumerate(g.memories["id"])}
    pairs = [(mem_index[m.memory_id], index[m.entity_id]) for m in g.mentions.itertuples()]
    for i in range(len(index)):
        assert ga.memories_of(i).tolist() == sorted(m for m, e in pairs if e == i)
    for k in range(len(mem_index)):
        assert ga.entities_of(k).tolist() == sorted(e for m, e in pairs if m == k)
