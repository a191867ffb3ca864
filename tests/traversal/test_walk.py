from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import HopKind
from signet_rl.traversal.walk import Traverser, Walk

T0 = pd.Timestamp("2026-01-01", tz="UTC")


def day(n: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(days=n)


# --------------------------------------------------------------------------------------------------
# A hand-built graph


@pytest.fixture(scope="module")
def hand():
    ents = [Entity(id=e, name=e, created_at=day(0)) for e in ("api", "db", "auth", "cache", "far", "team")]
    asps = [
        Aspect(id="api-design", entity_id="api", name="design", weight=0.9, created_at=day(0)),
        Aspect(id="api-runbook", entity_id="api", name="runbook", weight=0.2, created_at=day(0)),
        Aspect(id="api-notes", entity_id="api", name="notes", weight=0.1, created_at=day(0)),
        Aspect(id="db-config", entity_id="db", name="configuration", weight=0.8, created_at=day(0)),
        Aspect(id="auth-status", entity_id="auth", name="status", weight=0.7, created_at=day(0)),
        Aspect(id="cache-config", entity_id="cache", name="configuration", weight=0.6, created_at=day(0)),
        Aspect(id="far-status", entity_id="far", name="status", weight=0.6, created_at=day(0)),
        Aspect(id="team-goals", entity_id="team", name="goals", weight=0.6, created_at=day(0)),
    ]
    attrs = [
        Attribute(
            id="t-api-rest",
            aspect_id="api-design",
            content="rest endpoints with json payloads",
            created_at=day(1),
        ),
        Attribute(
            id="t-api-uses-db",
            aspect_id="api-design",
            content="stores sessions in postgres db",
            created_at=day(1),
        ),
        Attribute(
            id="t-api-old",
            aspect_id="api-notes",
            content="timeout was 30 seconds",
            status="superseded",
            superseded_by="t-api-new",
            created_at=day(2),
        ),
        Attribute(id="t-api-new", aspect_id="api-notes", content="timeout is 60 seconds", created_at=day(10)),
        Attribute(
            id="t-api-deploy",
            aspect_id="api-runbook",
            content="deploy with blue green rollout",
            created_at=day(1),
        ),
        Attribute(
            id="c-api-freeze",
            aspect_id="api-runbook",
            kind="constraint",
            content="never deploy on fridays",
            created_at=day(1),
        ),
        Attribute(
            id="t-api-gone",
            aspect_id="api-design",
            content="soap endpoints",
            status="deleted",
            created_at=day(1),
        ),
        Attribute(id="t-db-pool", aspect_id="db-config", content="pool size twenty", created_at=day(1)),
        Attribute(
            id="c-db-backup",
            aspect_id="db-config",
            kind="constraint",
            content="must back up nightly",
            created_at=day(1),
        ),
        Attribute(
            id="t-auth-cut", aspect_id="auth-status", content="oauth cutover in march", created_at=day(1)
        ),
        Attribute(
            id="c-auth-mfa",
            aspect_id="auth-status",
            kind="constraint",
            content="must require mfa",
            created_at=day(1),
        ),
        Attribute(id="t-cache-ttl", aspect_id="cache-config", content="ttl five minutes", created_at=day(1)),
        Attribute(id="t-far-x", aspect_id="far-status", content="far away fact", created_at=day(1)),
        Attribute(
            id="t-team-goal",
            aspect_id="team-goals",
            content="ship rest endpoints with json payloads soon",
            created_at=day(1),
        ),
        Attribute(id="t-late", aspect_id="db-config", content="added later", created_at=day(50)),
    ]
    deps = [
        Dependency(
            id="d-api-db",
            source_entity_id="api",
            target_entity_id="db",
            dependency_type="uses",
            strength=0.9,
            confidence=0.9,
            aspect_id="api-design",
            created_at=day(1),
        ),
        Dependency(
            id="d-api-auth",
            source_entity_id="api",
            target_entity_id="auth",
            dependency_type="blocks",
            strength=0.8,
            confidence=0.9,
            created_at=day(1),
        ),
        Dependency(
            id="d-cache-api",
            source_entity_id="cache",
            target_entity_id="api",
            dependency_type="informs",
            strength=0.5,
            confidence=0.7,
            created_at=day(1),
        ),
        Dependency(
            id="d-db-far",
            source_entity_id="db",
            target_entity_id="far",
            dependency_type="uses",
            strength=0.5,
            confidence=0.9,
            created_at=day(1),
        ),
        Dependency(
            id="d-weak",
            source_entity_id="api",
            target_entity_id="team",
            dependency_type="uses",
            strength=1.0,
            confidence=0.3,
            created_at=day(1),
        ),
        Dependency(
            id="d-late",
            source_entity_id="auth",
            target_entity_id="far",
            dependency_type="uses",
            strength=1.0,
            confidence=1.0,
            created_at=day(40),
        ),
        Dependency(
            id="d-loop",
            source_entity_id="db",
            target_entity_id="db",
            dependency_type="uses",
            strength=1.0,
            confidence=1.0,
            created_at=day(1),
        ),
        Dependency(
            id="d-cycle",
            source_entity_id="far",
            target_entity_id="api",
            dependency_type="uses",
            strength=0.6,
            confidence=0.8,
            created_at=day(1),
        ),
    ]
    g = KnowledgeGraph.from_records(entities=ents, aspects=asps, attributes=attrs, dependencies=deps)
    return Traverser(GraphArrays.from_graph(g), g)


def all_attrs(w: Walk) -> set[str]:
    return {a for p in w.paths for a in p.attributes}


def test_what_is_broad_over_aspects_and_one_hop(hand):
    w = hand.walk(["api"], "what", day(20))
    assert w.paths and all(p.strategy == "what" for p in w.paths)
    own = [p for p in w.paths if not p.dependencies]
    assert [p.aspects[0] for p in own] == ["api-design", "api-runbook", "api-notes"]  # by weight
    assert {"t-api-rest", "t-api-uses-db", "t-api-new", "t-db-pool"} <= all_attrs(w)
    assert "t-api-old" not in all_attrs(w) and "t-api-gone" not in all_attrs(w)
    assert max(len(p.dependencies) for p in w.paths) == 1
    assert "d-weak" not in {d for p in w.paths for d in p.dependencies}  # confidence 0.3 < 0.5


def test_relate_finds_connecting_paths_and_bridges(hand):
    w = hand.walk(["cache", "db"], "relate", day(20))
    chains = [p for p in w.paths if p.entities[0] == "cache" and p.entities[-1] == "db"]
    assert chains and chains[0].dependencies == ("d-cache-api", "d-api-db")
    assert [h.direction for h in chains[0].hops if h.kind is HopKind.DEPENDENCY] == [1, 1]
    assert "t-api-uses-db" in all_attrs(w)  # the stated reason of d-api-db (its aspect)
    bridged = hand.walk(["api", "team"], "relate", day(20))  # only a weak edge: bridged by shared words
    assert {"t-api-rest", "t-team-goal"} <= all_attrs(bridged)
    reverse = hand.walk(["db", "cache"], "relate", day(20))
    back = [p for p in reverse.paths if p.entities[0] == "db" and p.entities[-1] == "cache"]
    assert [h.direction for h in back[0].hops if h.kind is HopKind.DEPENDENCY] == [-1, -1]


def test_action_takes_procedures_constraints_and_blocked_targets(hand):
    w = hand.walk(["api"], "action", day(20))
    own = [p for p in w.paths if not p.dependencies]
    assert own[0].aspects == ("api-runbook",)  # procedural first despite its low weight
    assert {"t-api-deploy", "c-api-freeze"} <= all_attrs(w)
    blocked = [p for p in w.paths if p.dependencies]
    assert blocked and all(p.dependencies[0] == "d-api-auth" for p in blocked)
    assert "c-auth-mfa" in all_attrs(w) and "c-auth-mfa" in w.constraints


def test_changed_orders_by_recency_and_flags_superseded(hand):
    w = hand.walk(["api"], "changed", day(20))
    assert w.paths[0].aspects == ("api-notes",) and w.paths[0].attributes == ("t-api-new",)
    assert w.superseded == ["t-api-old"]
    before = hand.walk(["api"], "changed", day(5))  # the new version did not exist yet
    assert "t-api-old" in all_attrs(before) and before.superseded == []


def test_none_and_unknown_intents_walk_nothing(hand):
    for intent in ("none", "chit-chat"):
        w = hand.walk(["api"], intent, day(20))
        assert w.paths == [] and w.constraints == [] and w.expanded == 0


def test_constraints_always_surface(hand):
    for intent in ("what", "relate", "action", "changed"):
        w = hand.walk(["api"], intent, day(20))
        assert "c-api-freeze" in w.constraints, intent
    tight = Traverser(hand.arrays, hand.graph, TraversalConfig(constraint_budget_chars=0))
    w = tight.walk(["api"], "what", day(20))
    assert "c-api-freeze" in w.constraints  # an entry's own: never dropped
    assert "c-db-backup" not in w.constraints  # a neighbour's: within the budget only
    assert "c-db-backup" in hand.walk(["api"], "what", day(20)).constraints


def test_time_visibility(hand):
    w = hand.walk(["db"], "what", day(20))
    assert "t-late" not in all_attrs(w) and "t-late" in all_attrs(hand.walk(["db"], "what", day(60)))
    deps = {d for p in hand.walk(["auth"], "relate", day(20)).paths for d in p.dependencies}
    assert "d-late" not in deps
    assert hand.walk(["api"], "what", day(-5)).paths == []


def test_unknown_entries_are_skipped_and_reported(hand):
    w = hand.walk(["nope", "api", "api"], "what", day(20))
    assert w.unknown == ["nope"] and w.paths
    assert hand.walk(["nope"], "relate").unknown == ["nope"]


def test_min_path_length_drops_short_dependency_paths_not_own_facts(hand):
    strict = Traverser(hand.arrays, hand.graph, TraversalConfig(min_path_length=5))
    w = strict.walk(["api"], "what", day(20))
    assert w.paths and all(p.length >= 5 or not p.dependencies for p in w.paths)


def test_edge_weight_hook_reorders(hand):
    a = hand.arrays
    prefer_cache = Traverser(
        a,
        hand.graph,
        TraversalConfig(max_branching=1),
        edge_weight=lambda arr, slots: (arr.dep_edge[slots] == 2).astype(float),
    )
    w = prefer_cache.walk(["api"], "what", day(20))
    assert {p.dependencies[0] for p in w.paths if p.dependencies} == {"d-cache-api"}


# --------------------------------------------------------------------------------------------------
# Hubs and cycles


def test_hub_with_ten_thousand_edges():
    n = 10_000
    names = ["hub"] + [f"e{i}" for i in range(n)]
    ents = pd.DataFrame({"id": names, "name": names})
    rng = np.random.default_rng(0)
    deps = pd.DataFrame(
        {
            "id": [f"d{i}" for i in range(n)],
            "source_entity_id": "hub",
            "target_entity_id": [f"e{i}" for i in range(n)],
            "dependency_type": "uses",
            "strength": rng.random(n),
            "confidence": rng.random(n),
        }
    )
    g = KnowledgeGraph.from_frames(entities=ents, dependencies=deps)
    tr = Traverser(GraphArrays.from_graph(g), g)
    w = tr.walk(["hub"], "relate")
    assert len({p.dependencies[0] for p in w.paths}) <= 4 and w.expanded <= 4
    w2 = tr.walk(["e1", "e2", "e3"], "relate")  # all meet through the hub
    assert any(len(p.dependencies) == 2 for p in w2.paths) or w2.expanded <= 3 * (4 + 16)


def test_cycles_end():
    ents = [Entity(id=f"c{i}", name=f"c{i}") for i in range(5)]
    deps = [
        Dependency(
            id=f"d{i}",
            source_entity_id=f"c{i}",
            target_entity_id=f"c{(i + 1) % 5}",
            dependency_type="uses",
            confidence=1.0,
            strength=1.0,
        )
        for i in range(5)
    ]
    deps.append(
        Dependency(
            id="self",
            source_entity_id="c0",
            target_entity_id="c0",
            dependency_type="uses",
            confidence=1.0,
            strength=1.0,
        )
    )
    g = KnowledgeGraph.from_records(entities=ents, dependencies=deps)
    tr = Traverser(GraphArrays.from_graph(g), g, TraversalConfig(max_depth=10))
    for intent in ("what", "relate", "action", "changed"):
        w = tr.walk(["c0", "c3"], intent)
        for p in w.paths:
            assert len(set(p.entities)) == len(p.entities)


# --------------------------------------------------------------------------------------------------
# Properties on random graphs

TYPES = ["uses", "requires", "blocks", "informs", "owned_by"]


@st.composite
def random_graphs(draw):
    n = draw(st.integers(2, 12))
    m = draw(st.integers(0, 40))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))  # self-loops, cycles, multi-edges
    unit = st.floats(0, 1, allow_nan=False)
    conf = draw(st.lists(unit, min_size=m, max_size=m))
    strength = draw(st.lists(unit, min_size=m, max_size=m))
    types = draw(st.lists(st.sampled_from(TYPES), min_size=m, max_size=m))
    dday = draw(st.lists(st.integers(0, 10), min_size=m, max_size=m))
    ents = pd.DataFrame({"id": [f"e{i}" for i in range(n)], "name": [f"e{i}" for i in range(n)]})
    deps = pd.DataFrame(
        {
            "id": [f"d{i}" for i in range(m)],
            "source_entity_id": [f"e{i}" for i in src],
            "target_entity_id": [f"e{i}" for i in dst],
            "dependency_type": types,
            "strength": strength,
            "confidence": conf,
            "created_at": [day(d) for d in dday],
        }
    )
    na = draw(st.integers(0, 2 * n))
    asp_ent = draw(st.lists(st.integers(0, n - 1), min_size=na, max_size=na))
    asps = pd.DataFrame(
        {
            "id": [f"a{i}" for i in range(na)],
            "entity_id": [f"e{i}" for i in asp_ent],
            "name": draw(st.lists(st.sampled_from(["runbook", "goals", "status"]), min_size=na, max_size=na)),
        }
    )
    nt = draw(st.integers(0, 3 * na)) if na else 0
    t_asp = draw(st.lists(st.integers(0, max(na - 1, 0)), min_size=nt, max_size=nt))
    attrs = pd.DataFrame(
        {
            "id": [f"t{i}" for i in range(nt)],
            "aspect_id": [f"a{i}" for i in t_asp],
            "content": [f"fact number {i} about things" for i in range(nt)],
            "kind": draw(st.lists(st.sampled_from(["attribute", "constraint"]), min_size=nt, max_size=nt)),
            "status": draw(
                st.lists(st.sampled_from(["active", "active", "deleted"]), min_size=nt, max_size=nt)
            ),
            "created_at": [day(d) for d in draw(st.lists(st.integers(0, 10), min_size=nt, max_size=nt))],
        }
    )
    g = KnowledgeGraph.from_frames(entities=ents, dependencies=deps, aspects=asps, attributes=attrs)
    cfg = TraversalConfig(
        max_branching=draw(st.integers(1, 4)),
        max_paths=draw(st.integers(1, 30)),
        min_confidence=draw(st.sampled_from([0.0, 0.3, 0.5, 0.9])),
        max_depth=draw(st.integers(0, 4)),
        min_path_length=draw(st.integers(0, 3)),
    )
    k = draw(st.integers(1, min(3, n)))
    entries = [f"e{i}" for i in draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))]
    when = draw(st.sampled_from([None, day(5)]))
    return g, cfg, entries, when


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.sampled_from(["what", "relate", "action", "changed"]))
def test_walk_guarantees(case, intent):
    g, cfg, entries, when = case
    tr = Traverser(GraphArrays.from_graph(g), g, cfg)
    w = tr.walk(entries, intent, when)
    deps = g.dependencies.set_index("id")
    attrs = g.attributes.set_index("id")
    b, depth = cfg.max_branching, cfg.max_depth
    assert len(w.paths) <= cfg.max_paths
    assert w.expanded <= len(entries) * sum(b**d for d in range(1, depth + 1))
    branches: dict[tuple, set] = {}
    for p in w.paths:
        assert p.strategy == intent and p.start in entries
        assert len(p.dependencies) <= depth
        assert len(set(p.entities)) == len(p.entities)
        for i, hop in enumerate(p.hops):
            if hop.kind is HopKind.DEPENDENCY:
                row = deps.loc[hop.id]
                assert row.confidence >= cfg.min_confidence
                if when is not None:
                    assert row.created_at <= when
                src, dst = p.hops[i - 1].id, p.hops[i + 1].id
                assert (row.source_entity_id, row.target_entity_id) == (
                    (src, dst) if hop.direction == 1 else (dst, src)
                )
                branches.setdefault(p.hops[:i], set()).add(hop)
            elif hop.kind is HopKind.ATTRIBUTE:
                row = attrs.loc[hop.id]
                assert row.status == "active"
                if when is not None:
                    assert row.created_at <= when
        if p.dependencies:
            assert p.length >= cfg.min_path_length
    assert all(len(v) <= b for v in branches.values())
    for c in w.constraints:
        assert attrs.loc[c, "kind"] == "constraint" and attrs.loc[c, "status"] == "active"


# --------------------------------------------------------------------------------------------------
# Candidate recall on the synthetic benchmark


@pytest.fixture(scope="module")
def small():
    from signet_rl.datasets.synthetic import generate

    return generate("small")


def test_candidate_recall_on_synthetic_small(small):
    g = small.graph
    tr = Traverser(GraphArrays.from_graph(g), g, TraversalConfig(max_depth=2))
    focus = small.truth.labels["queries"].set_index("query_id")
    recall: dict[str, list[float]] = {}
    for q in small.queries:
        truth = small.truth[q.id]
        if q.split != "test" or truth.intent in (None, "none"):
            continue
        row = focus.loc[q.id]
        entries = [e for e in (row.x, row.y) if isinstance(e, str)]
        got = tr.walk(entries, truth.intent, q.timestamp).attribute_ids
        need = set(truth.needed)
        recall.setdefault(truth.intent, []).append(len(need & got) / len(need))
    means = {k: float(np.mean(v)) for k, v in recall.items()}
    assert means["what"] >= 0.8 and means["action"] >= 0.9 and means["changed"] >= 0.95
    assert means["relate"] >= 0.5  # true edges below min_confidence 0.5 are, by design, not walked
