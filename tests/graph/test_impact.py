"""Impact analysis: dependents of an entity by depth tier."""

from __future__ import annotations

import pytest

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.impact import impact, impact_report
from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph


def _dep(i: int, src: str, tgt: str, conf: float = 0.9) -> Dependency:
    return Dependency(id=f"d{i}", source_entity_id=src, target_entity_id=tgt, dependency_type="uses",
                      confidence=conf)


@pytest.fixture
def graph() -> KnowledgeGraph:
    # db <- api <- web <- cdn <- edge (a chain of "uses"), a cycle web -> api -> web, a self-loop on api,
    # a low-confidence dependent (cli -> db at 0.5), an exactly-0.7 edge (job -> api), db -> cache (a
    # dependency of db, not a dependent), and ops depending on cdn at depth 4.
    return KnowledgeGraph.from_records(
        entities=[Entity(id=i, name=i.upper()) for i in
                  ["db", "api", "web", "cdn", "edge", "cli", "job", "cache", "lone"]],
        dependencies=[
            _dep(0, "api", "db"), _dep(1, "web", "api"), _dep(2, "cdn", "web"), _dep(3, "edge", "cdn"),
            _dep(4, "api", "web"), _dep(5, "api", "api"), _dep(6, "cli", "db", 0.5),
            _dep(7, "job", "api", 0.7), _dep(8, "db", "cache"),
        ],
    )


def test_tiers_on_chain_with_cycle_and_low_confidence(graph: KnowledgeGraph) -> None:
    assert impact(graph, "db") == {1: ["api"], 2: ["web", "job"], 3: ["cdn"]}
    ga = GraphArrays.from_graph(graph)
    assert impact(ga, "db") == impact(graph, "db")
    assert impact(ga, "db", max_depth=4) == {1: ["api"], 2: ["web", "job"], 3: ["cdn"], 4: ["edge"]}
    # a lower threshold lets the 0.5 edge in; a higher one drops the 0.7 edge
    assert impact(ga, "db", min_confidence=0.5)[1] == ["api", "cli"]
    assert impact(ga, "db", min_confidence=0.8)[2] == ["web"]


def test_each_entity_in_its_shallowest_tier_and_cycles_safe(graph: KnowledgeGraph) -> None:
    ga = GraphArrays.from_graph(graph)
    # web depends on api and api on web: api is tier 1 of web and never reappears, web never reports itself
    tiers = impact(ga, "web", max_depth=10)
    seen = [e for ids in tiers.values() for e in ids]
    assert tiers[1] == ["api", "cdn"] and len(seen) == len(set(seen)) and "web" not in seen
    assert impact(ga, "lone") == {1: [], 2: [], 3: []}
    assert impact(ga, "edge") == {1: [], 2: [], 3: []}


def test_report_names_tiers(graph: KnowledgeGraph) -> None:
    assert impact_report(graph, "db") == {
        "will break": ["API"], "likely affected": ["WEB", "JOB"], "may need testing": ["CDN"],
    }


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"entity_id": "nope"}, KeyError, "no entity with id 'nope'"),
        ({"entity_id": "db", "min_confidence": -0.1}, ValueError, "min_confidence"),
        ({"entity_id": "db", "min_confidence": 1.5}, ValueError, "min_confidence"),
        ({"entity_id": "db", "max_depth": 0}, ValueError, "max_depth"),
    ],
)
def test_bad_input(graph: KnowledgeGraph, kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        impact(graph, **kwargs)
