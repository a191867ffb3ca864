"""Bridges: found between unlinked entities, promoted by positive ratings, faded by negative ones."""

from __future__ import annotations

import pandas as pd
import pytest

from signet_rl.emergence.bridges import BridgeError, BridgeTracker, find_bridges
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph

AT = pd.Timestamp("2026-02-01", tz="UTC")
TEXTS = {
    "e0": "prefers dark roast coffee brewed every morning",
    "e1": "deploys the billing service with docker compose",
    "e2": "every morning prefers dark roast coffee, brewed strong",
    "e3": "prefers dark roast coffee brewed every morning too",  # linked to e0: not a bridge
}


def graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e) for e in TEXTS],
        aspects=[Aspect(id=f"a-{e}", entity_id=e, name="habits") for e in TEXTS],
        attributes=[Attribute(id=f"t-{e}", aspect_id=f"a-{e}", content=t) for e, t in TEXTS.items()],
        dependencies=[Dependency(id="d03", source_entity_id="e0", target_entity_id="e3",
                                 dependency_type="uses")])


def test_bridges_join_unlinked_entities_that_say_the_same_thing() -> None:
    bridges = find_bridges(graph(), ["t-e2"])
    assert [(b.attribute_a, b.attribute_b) for b in bridges] == [("t-e0", "t-e2"), ("t-e2", "t-e3")]
    assert all(b.similarity >= 0.6 and b.lexical >= 0.4 for b in bridges)
    every = find_bridges(graph())
    assert {(b.entity_a, b.entity_b) for b in every} == {("e0", "e2"), ("e2", "e3")}  # e0-e3 linked
    assert find_bridges(graph(), ["t-e2"], min_lexical=0.95) == []
    with pytest.raises(BridgeError, match=r"attribute 'nope' is not an active attribute"):
        find_bridges(graph(), ["nope"])


def test_promotion_after_n_positives_then_up_the_ladder_then_fading() -> None:
    g = graph()
    tracker = BridgeTracker(promote_after=3, climb_after=2)
    (bridge, _) = find_bridges(g, ["t-e2"])
    tracker.add([bridge])
    assert tracker.explorer_targets() == [("e0", "e2")]
    for _ in range(2):
        g = tracker.rate(g, bridge.id, +1, at=AT)
    assert len(g.dependencies) == 1  # not yet
    g = tracker.rate(g, bridge.id, +1, at=AT)
    dep = g.dependency("dep-" + bridge.id)
    assert (dep.source_entity_id, dep.target_entity_id, dep.reason, dep.confidence) == (
        "e0", "e2", "pattern-matched", 0.5)  # a pattern match the ratings confirmed: walkable at once
    assert tracker.states[bridge.id].status == "promoted" and tracker.explorer_targets() == []
    g = tracker.rate(g, bridge.id, +1, at=AT)
    assert g.dependency("dep-" + bridge.id).reason == "pattern-matched"
    g = tracker.rate(g, bridge.id, +1, at=AT)
    assert (g.dependency("dep-" + bridge.id).reason, g.dependency("dep-" + bridge.id).confidence) == (
        "single-memory", 0.7)
    g = tracker.rate(g, bridge.id, 0, at=AT)  # neutral: nothing moves
    for reason in ("pattern-matched", "inferred", "llm-uncertain"):
        g = tracker.rate(g, bridge.id, -1, at=AT)
        assert g.dependency("dep-" + bridge.id).reason == reason
    g = tracker.rate(g, bridge.id, -1, at=AT)
    assert "dep-" + bridge.id not in set(g.dependencies["id"])
    s = tracker.states[bridge.id]
    assert (s.status, s.positive, s.negative) == ("faded", 5, 4)
    with pytest.raises(BridgeError, match=rf"bridge '{bridge.id}' has faded"):
        tracker.rate(g, bridge.id, +1)


def test_a_candidate_fades_after_negatives() -> None:
    g = graph()
    tracker = BridgeTracker(fade_after=2)
    tracker.add(find_bridges(g, ["t-e2"]))
    bid = next(iter(tracker.states))
    g2 = tracker.rate(tracker.rate(tracker.rate(g, bid, +1), bid, -1), bid, -1)
    assert tracker.states[bid].status == "candidate"  # net -1
    g2 = tracker.rate(g2, bid, -1)
    assert tracker.states[bid].status == "faded" and g2.diff(g) == []


def test_rating_a_bridge_whose_entity_was_deleted_names_it() -> None:
    g = graph()
    tracker = BridgeTracker()
    tracker.add(find_bridges(g, ["t-e2"]))
    bid = next(iter(tracker.states))
    gone = KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e) for e in ("e0", "e1", "e3")],
        dependencies=[Dependency(id="d03", source_entity_id="e0", target_entity_id="e3",
                                 dependency_type="uses")])
    before = tracker.states[bid]
    with pytest.raises(BridgeError, match=rf"bridge '{bid}' joins entity 'e2', which is no longer in "
                                          r"the graph \(deleted or moved to the cold tier\)"):
        tracker.rate(gone, bid, +1)
    assert tracker.states[bid] == before  # nothing half-applied
    with pytest.raises(BridgeError, match=r"unknown bridge 'bridge-0'"):
        tracker.rate(g, "bridge-0", +1)
    with pytest.raises(BridgeError, match=rf"bridge '{bid}': rating must be -1, 0 or 1, got 2"):
        tracker.rate(g, bid, 2)


def test_tracker_state_round_trips_through_json() -> None:
    g = graph()
    tracker = BridgeTracker(promote_after=1)
    tracker.add(find_bridges(g))
    first = next(iter(tracker.states))
    g = tracker.rate(g, first, +1, at=AT)
    back = BridgeTracker.from_json(tracker.to_json())
    assert back == tracker and back.states[first].status == "promoted"
    assert back.rate(g, first, -1).dependency("dep-" + first).reason == "inferred"
    old = BridgeTracker(promote_after=1, promote_reason="inferred")
    assert BridgeTracker.from_json(old.to_json()).promote_reason == "inferred"
    with pytest.raises(BridgeError, match=r"not a saved BridgeTracker: .*unexpected keyword argument 'x'"):
        BridgeTracker.from_json('{"x": 1, "states": []}')


PARAPHRASED = {  # one fact said two ways by two unlinked entities, and template siblings with other values
    "p0": "the quarterly review falls on the first tuesday of march",
    "p1": "in march the first tuesday is kept free for going over the quarter",
    "d0": "the quarterly review falls on the first thursday of january",
    "d1": "the quarterly review falls on the first monday of september",
    "c0": "log level is info", "c1": "log level is info", "c2": "log level is info",
}


def paraphrased_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e) for e in PARAPHRASED],
        aspects=[Aspect(id=f"a-{e}", entity_id=e, name="schedule") for e in PARAPHRASED],
        attributes=[Attribute(id=f"t-{e}", aspect_id=f"a-{e}", content=t) for e, t in PARAPHRASED.items()])


def test_variants_common_texts_and_mutual_rank_leave_the_restatement_only() -> None:
    g = paraphrased_graph()  # the default (hashing) encoder: p0-p1 at cosine 0.44, p0-d0 at 0.77
    loose = {frozenset((b.entity_a, b.entity_b)) for b in find_bridges(g, min_similarity=0.3,
                                                                      min_lexical=0.0)}
    assert frozenset(("p0", "d0")) in loose and frozenset(("c0", "c1")) in loose  # siblings, copies
    assert frozenset(("p0", "p1")) in loose
    strict = find_bridges(g, min_similarity=0.3, min_lexical=0.0, mutual_top=1, variant_overlap=0.4,
                          max_copies=2)
    assert [(b.entity_a, b.entity_b) for b in strict] == [("p0", "p1")]
    with pytest.raises(ValueError, match=r"mutual_top must be None or an integer >= 1, got 0"):
        find_bridges(g, mutual_top=0)


def test_the_restatement_is_promoted_after_scripted_positive_ratings() -> None:
    g = paraphrased_graph()
    (bridge,) = find_bridges(g, min_similarity=0.3, min_lexical=0.0, mutual_top=1, variant_overlap=0.4,
                             max_copies=2)
    tracker = BridgeTracker(promote_after=3)
    tracker.add([bridge])
    for rating in (+1, -1, +1, +1):  # net +2: still a candidate
        g = tracker.rate(g, bridge.id, rating, at=AT)
    assert tracker.states[bridge.id].status == "candidate" and len(g.dependencies) == 0
    g = tracker.rate(g, bridge.id, +1, at=AT)  # net +3
    dep = g.dependency("dep-" + bridge.id)
    assert (dep.source_entity_id, dep.target_entity_id, dep.reason) == ("p0", "p1", "pattern-matched")


def test_a_just_promoted_bridge_is_walked_at_the_default_min_confidence() -> None:
    """Audit of issue 29: a promoted bridge entered at ``inferred`` (0.4), below TraversalConfig's (and
    conf/dataset/synthetic.yaml's) min_confidence 0.5, so promotion changed no walk until two more
    positives; it now enters at ``pattern-matched`` (0.5) and the very next walk crosses it."""
    from signet_rl.graph.arrays import GraphArrays
    from signet_rl.traversal.config import TraversalConfig
    from signet_rl.traversal.walk import Traverser

    def crossing(graph: KnowledgeGraph, dep_id: str) -> list[str]:
        walker = Traverser(GraphArrays.from_graph(graph), graph, TraversalConfig())
        assert walker.config.min_confidence == 0.5
        return [str(p) for p in walker.walk(["e0"], "relate").paths if dep_id in p.dependencies]

    for reason, walked in (("pattern-matched", True), ("inferred", False)):
        g = graph()
        tracker = BridgeTracker(promote_after=3, promote_reason=reason)
        (bridge, _) = find_bridges(g, ["t-e2"])
        tracker.add([bridge])
        for _ in range(3):
            g = tracker.rate(g, bridge.id, +1, at=AT)
        assert tracker.states[bridge.id].status == "promoted"
        paths = crossing(g, f"dep-{bridge.id}")
        assert bool(paths) is walked, (reason, paths)
        if walked:  # from e0 across the bridge to e2's fact
            assert any(p.endswith(">E:e2>A:a-e2>T:t-e2") for p in paths), paths
    with pytest.raises(ValueError, match=r"^promote_reason: 'user-asserted' is set only by a person; a "
                                         r"bridge promoted by ratings enters at most at 'multi-memory'$"):
        BridgeTracker(promote_reason="user-asserted")
    with pytest.raises(ValueError, match=r"^promote_reason: unknown reason 'sure'; expected one of: "):
        BridgeTracker(promote_reason="sure")
