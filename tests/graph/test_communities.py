"""Leiden communities: the community graph, detection, cohesion, labels, persistence, recovery and CLI."""

from __future__ import annotations

import random

import igraph as ig
import numpy as np
import pytest

from signet_rl.datasets.registry import load_dataset
from signet_rl.evaluation.audit import recovery
from signet_rl.graph.__main__ import main
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.communities import (
    cohesion,
    community_edges,
    community_graph,
    community_labels,
    detect_communities,
    modularity,
    nmi_ari,
    structure_label,
    with_communities,
)
from signet_rl.graph.model import Aspect, Dependency, Entity, KnowledgeGraph, Memory, Mention
from signet_rl.graph.store import read_graph, write_graph

#: Measured on synthetic:small seed 0: NMI 0.835 (igraph) / 0.827 (leidenalg); the bar leaves margin.
SMALL_NMI = 0.75


def two_cliques() -> KnowledgeGraph:
    """Two 5-cliques of dependencies (a*, b*) joined by one weak edge a0 - b0."""
    a = [f"a{i}" for i in range(5)]
    b = [f"b{i}" for i in range(5)]
    ents = [Entity(id=x, name=f"alpha {x}" if x[0] == "a" else f"beta {x}") for x in a + b]
    deps = []
    for group in (a, b):
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                deps.append(Dependency(id=f"d-{x}-{y}", source_entity_id=x, target_entity_id=y,
                                       dependency_type="uses", strength=1.0, confidence=0.9))
    deps.append(Dependency(id="bridge", source_entity_id="a0", target_entity_id="b0",
                           dependency_type="uses", strength=0.1, confidence=0.5))
    aspects = [Aspect(id=f"asp-{x}", entity_id=x, name="pipeline_design" if x[0] == "a" else "garden")
               for x in a + b]
    return KnowledgeGraph.from_records(entities=ents, dependencies=deps, aspects=aspects)


@pytest.fixture(scope="module")
def small():  # type: ignore[no-untyped-def]
    return load_dataset("synthetic:small")


def test_two_cliques_split_in_two() -> None:
    graph = two_cliques()
    for backend in ("igraph", "leidenalg"):
        found = detect_communities(graph, backend=backend)
        m = found.membership
        assert found.num_communities == 2
        assert len(set(m[:5])) == 1 and len(set(m[5:])) == 1 and m[0] != m[5]
        assert found.sizes.tolist() == [5, 5]
        assert found.modularity > 0.45


def test_community_graph_weights() -> None:
    """Co-mentions count shared non-deleted memories; dependencies add confidence × strength."""
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id=x, name=x) for x in "abcd"],
        memories=[Memory(id="m1", content="x"), Memory(id="m2", content="y"),
                  Memory(id="m3", content="z", is_deleted=True)],
        mentions=[Mention(memory_id="m1", entity_id="a"), Mention(memory_id="m1", entity_id="b"),
                  Mention(memory_id="m1", entity_id="c"), Mention(memory_id="m2", entity_id="a"),
                  Mention(memory_id="m2", entity_id="b"), Mention(memory_id="m3", entity_id="c"),
                  Mention(memory_id="m3", entity_id="d")],
        dependencies=[Dependency(id="d1", source_entity_id="b", target_entity_id="a", dependency_type="uses",
                                 strength=0.5, confidence=0.8),
                      Dependency(id="d2", source_entity_id="d", target_entity_id="d",
                                 dependency_type="uses")],
    )
    u, v, w = community_edges(graph)
    edges = {(int(x), int(y)): float(z) for x, y, z in zip(u, v, w, strict=True)}
    assert edges == pytest.approx({(0, 1): 2.4, (0, 2): 1.0, (1, 2): 1.0})  # no c-d (deleted), no d-d loop
    g = community_graph(graph)
    assert g.vcount() == 4 and g.vs["name"] == list("abcd") and not g.is_directed()


def test_same_seed_same_partition(small) -> None:  # type: ignore[no-untyped-def]
    g = community_graph(small.graph)
    state = random.getstate()
    for backend in ("igraph", "leidenalg"):
        one = detect_communities(small.graph, seed=3, backend=backend, community=g)
        two = detect_communities(small.graph, seed=3, backend=backend, community=g)
        assert np.array_equal(one.membership, two.membership)
        assert np.array_equal(one.cohesion, two.cohesion) and one.labels == two.labels
    assert random.getstate() == state  # igraph's seeding restores Python's random


def test_modularity_matches_igraph(small) -> None:  # type: ignore[no-untyped-def]
    g = community_graph(small.graph)
    for objective, resolution in (("modularity", 1.0), ("rb", 3.0), ("cpm", 0.05)):
        found = detect_communities(small.graph, objective=objective, resolution=resolution, community=g)
        expected = g.modularity(found.membership.tolist(), weights="weight")
        assert found.modularity == pytest.approx(expected, abs=1e-9)
    rng = np.random.default_rng(0)
    membership = rng.integers(0, 7, g.vcount())
    assert modularity(g, membership) == pytest.approx(g.modularity(membership.tolist(), weights="weight"))


def test_cohesion_hand_computed() -> None:
    """Path 0-1-2-3 with weights 3, 1, 2; communities {0, 1} and {2, 3}.

    Community 0: degrees 3 + 4 = 7, inside 3 + 3 = 6 -> 6/7. Community 1: degrees 3 + 2 = 5, inside
    2 + 2 = 4 -> 4/5. An isolated vertex 4 alone has cohesion 0.
    """
    g = ig.Graph(n=5, edges=[(0, 1), (1, 2), (2, 3)])
    g.es["weight"] = [3.0, 1.0, 2.0]
    assert cohesion(g, [0, 0, 1, 1, 2]) == pytest.approx([6 / 7, 4 / 5, 0.0])
    # sampling: with one member sampled, cohesion is that member's share
    assert set(np.round(cohesion(g, [0, 0, 1, 1, 2], sample=1)[:2], 6)) <= {1.0, 0.75, 0.333333}


def test_cohesion_sample_bounded_and_in_range(small) -> None:  # type: ignore[no-untyped-def]
    found = detect_communities(small.graph)
    assert ((found.cohesion >= 0) & (found.cohesion <= 1)).all()
    assert len(found.cohesion) == found.num_communities


def test_labels_are_members_terms() -> None:
    graph = two_cliques()
    found = detect_communities(graph)
    for c, label in enumerate(found.labels):
        terms = label.split(", ")
        assert 1 <= len(terms) <= 3
        members = [i for i, x in enumerate(found.membership) if x == c]
        words = set()
        for i in members:
            words |= set(graph.entities["name"].iloc[i].lower().split())
            words |= set(graph.aspects["name"].iloc[i].split("_"))
        assert set(terms) <= words
    # the shared, distinctive words rank first; ties go alphabetically
    assert sorted(found.labels) == ["alpha, design, pipeline", "beta, garden, b0"]


def test_labels_empty_membership_terms() -> None:
    graph = KnowledgeGraph.from_records(entities=[Entity(id="x", name="__")])
    assert community_labels(graph, [0]) == ("",)


def test_with_communities_round_trip(tmp_path, small) -> None:  # type: ignore[no-untyped-def]
    found = detect_communities(small.graph)
    graph = with_communities(small.graph, found)
    assert len(graph.communities) == found.num_communities
    assert graph.communities["id"].iloc[0] == "com-0001"
    assert graph.communities["size"].sum() == graph.num_entities == len(graph.community_members)
    assert graph.meta["modularity"] == pytest.approx(found.modularity)
    assert "modularity" not in small.graph.meta  # the input graph is untouched
    write_graph(graph, tmp_path / "g.db")
    back = read_graph(tmp_path / "g.db")
    assert back.equals(graph)
    assert back.meta["modularity"] == pytest.approx(found.modularity)
    arrays = GraphArrays.from_graph(back)
    assert np.array_equal(arrays.entity_community, found.membership)
    with pytest.raises(ValueError, match="other entities"):
        with_communities(two_cliques(), found)


def test_entity_community_without_communities() -> None:
    arrays = GraphArrays.from_graph(two_cliques())
    assert arrays.entity_community.tolist() == [-1] * 10


def test_nmi_ari_against_igraph() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 5, 300), rng.integers(0, 4, 300)
    b[:200] = a[:200]
    ours = nmi_ari(a, b)
    assert ours["nmi"] == pytest.approx(ig.compare_communities(a.tolist(), b.tolist(), method="nmi"))
    ari = ig.compare_communities(a.tolist(), b.tolist(), method="adjusted_rand")
    assert ours["ari"] == pytest.approx(ari)
    assert nmi_ari([0, 0, 1], [5, 5, 2]) == {"nmi": 1.0, "ari": 1.0}


def test_recovers_planted_communities(small) -> None:  # type: ignore[no-untyped-def]
    for backend in ("igraph", "leidenalg"):
        scores = recovery(small, detect_communities(small.graph, backend=backend))
        assert scores["nmi"] > SMALL_NMI, (backend, scores)


def test_structure_label() -> None:
    assert [structure_label(q) for q in (0.1, 0.3, 0.45, 0.6, 0.61)] == [
        "fragmented", "moderate", "moderate", "moderate", "strong",
    ]


def test_cli_tiny(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["communities", "synthetic:tiny"]) == 0
    out = capsys.readouterr().out
    assert "60 entities" in out and "modularity" in out and "com-0001" in out and "NMI" in out
    assert main(["communities", "synthetic:tiny", "--json", "--backend", "leidenalg"]) == 0
    import json

    summary = json.loads(capsys.readouterr().out)["graphs"]["main"]
    assert summary["entities"] == 60 and summary["backend"] == "leidenalg"
    assert summary["largest"][0]["size"] >= summary["largest"][-1]["size"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["communities", "nope:x"], "unknown dataset 'nope:x'"),
        (["communities", "synthetic:tiny", "--objective", "bogus"], "unknown objective 'bogus'"),
        (["communities", "synthetic:tiny", "--backend", "networkx"], "unknown backend 'networkx'"),
    ],
)
def test_cli_bad_input(capsys, argv, message) -> None:  # type: ignore[no-untyped-def]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objective": "louvain"}, "unknown objective 'louvain'"),
        ({"backend": "networkx"}, "unknown backend 'networkx'"),
        ({"objective": "rb", "resolution": -1.0}, "resolution -1.0"),
        ({"objective": "cpm", "resolution": 0.0}, "resolution 0.0"),
        ({"objective": "modularity", "resolution": 2.0}, "resolution 2.0"),
        ({"n_iterations": 0}, "n_iterations 0"),
    ],
)
def test_bad_arguments(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        detect_communities(two_cliques(), **kwargs)
