"""The reachability ceiling (evaluation/audit.py) and describe's density block, on a hand-built graph."""

from __future__ import annotations

import re

import pytest

from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport, Truth
from signet_rl.evaluation.audit import reachability_ceiling
from signet_rl.evaluation.describe import describe, format_description
from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph, Memory, Mention
from signet_rl.retrieval.entry import EntrySearch


def _dataset() -> Dataset:
    """Six turns. Ann speaks in all of them (a hub). alpha is in m1, beta in m2 and m3 (alpha - beta is a
    dependency), gamma in m4 (no edge to alpha), delta in m5 and m6 (beta - delta is a dependency)."""
    mems = [Memory(id=f"m{i}", content=f"turn {i}") for i in range(1, 7)]
    ents = [Entity(id=e, name=e) for e in ("ann", "alpha", "beta", "gamma", "delta")]
    ment = [Mention(memory_id=f"m{i}", entity_id="ann") for i in range(1, 7)] + [
        Mention(memory_id="m1", entity_id="alpha"), Mention(memory_id="m2", entity_id="beta"),
        Mention(memory_id="m3", entity_id="beta"), Mention(memory_id="m4", entity_id="gamma"),
        Mention(memory_id="m5", entity_id="delta"), Mention(memory_id="m6", entity_id="delta")]
    deps = [Dependency(id="d1", source_entity_id="beta", target_entity_id="alpha", dependency_type="x"),
            Dependency(id="d2", source_entity_id="beta", target_entity_id="delta", dependency_type="y"),
            Dependency(id="d3", source_entity_id="ann", target_entity_id="gamma", dependency_type="z")]
    g = KnowledgeGraph.from_records(memories=mems, entities=ents, mentions=ment, dependencies=deps)
    queries = [Query(id="q1", text="what about alpha?", graph_id="g", split="test"),
               Query(id="q2", text="and ann?", graph_id="g", split="test")]
    truth = GroundTruth([Truth(query_id="q1", needed=("m1", "m3", "m4", "m5"), needed_kind="memory"),
                         Truth(query_id="q2", needed=("m4",), needed_kind="memory")])
    return Dataset(name="hand", graphs={"g": g}, queries=queries, truth=truth, report=LoadReport(), meta={})


def test_reachability_counts_two_hops_and_skips_hubs():
    ds = _dataset()
    r = reachability_ceiling(ds, k=1, search=EntrySearch(vector=False), hub_share=0.5)
    # q1 enters at alpha: hop 1 reaches m1, hop 2 (beta) m2 and m3; m4 (gamma) and m5 (delta, 3 hops) not:
    # 2 of 4. q2 names only ann, a hub (6 of 6 memories > 50 %): no entry, nothing reached: 0 of 1.
    assert r == {"ceiling": 0.25, "ceiling_micro": 0.4, "hop1": 0.125, "reach_share": 0.25, "queries": 2,
                 "k": 1, "hub_share": 0.5}
    # with no hub rule ann is an entry for q2, reaching every memory in one hop
    r = reachability_ceiling(ds, k=1, search=EntrySearch(vector=False), hub_share=1.0)
    assert (r["ceiling"], r["ceiling_micro"]) == (0.75, 0.6)
    with pytest.raises(ValueError, match=re.escape("reachability_ceiling: k must be >= 1, got 0")):
        reachability_ceiling(ds, k=0)


def test_describe_prints_density():
    d = describe(_dataset())
    assert d["density"]["entities"] == 5 and d["density"]["dependencies_per_entity"] == 0.6
    assert "reachability" in d["density"] and "extractor" not in d["density"]
    text = format_description(d)
    assert (
        "density: 5 entities (5 without session nodes), 0.60 dependencies per entity, "
        "2.00 mentions per memory"
    ) in text
    assert (
        "reachability ceiling (evidence within 2 hops of entry search's top 5 non-hub entities, 2 queries)"
    ) in text
