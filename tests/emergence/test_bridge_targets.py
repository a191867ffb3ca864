"""Bridge candidates as explorer targets inside the training loop (``emergence.bridge.target_explorers``)."""

from __future__ import annotations

from signet_rl.emergence.bridges import Bridge, BridgeTracker
from signet_rl.emergence.components import BridgeTargets, bridge_ratings
from signet_rl.emergence.similar import active_attributes, linked_pairs

CFG = dict(max_interactions=12, slate_size=2, session_size=1)


def test_the_explorer_slot_walks_the_bridge_and_its_rating_reaches_the_tracker(tiny, prior_trainer):
    probe = prior_trainer(tiny, **CFG)
    first = probe.train_queries[0]
    entries = list(probe.retriever.candidates(first).entries)
    near = entries[0]
    attrs = active_attributes(tiny.graph)
    linked = linked_pairs(tiny.graph)
    far = next(e for e in attrs["entity_id"] if e not in entries and frozenset((near, e)) not in linked)
    aspect = dict(zip(tiny.graph.attributes["id"], tiny.graph.attributes["aspect_id"], strict=True))
    a = attrs[attrs["entity_id"] == near].iloc[0]
    b = attrs[attrs["entity_id"] == far].iloc[0]
    bridge = Bridge(id="bridge-test", attribute_a=a["id"], attribute_b=b["id"], entity_a=near, entity_b=far,
                    similarity=0.9, lexical=0.5)
    targets = BridgeTargets({"main": tiny.graph}, {"main": [bridge]})
    (path,) = targets(first, entries)
    assert path.serialise() == f"E:{far}>A:{aspect[b['id']]}>T:{b['id']}" and path.explorer
    assert targets(first, [far]) != [] and targets(first, ["nobody"]) == []

    t = probe
    assert t.explorer_targets is None  # off unless the entry layer sets it
    t.explorer_targets = targets
    t.run()
    rec = next(r for r in t.log if r.query_id == first.id)
    slot = [i for i, e in zip(rec.shown, rec.explorer, strict=True) if e]
    assert [rec.candidates[i] for i in slot] == [path.serialise()]  # the bridge took the explorer slot
    assert rec.pscores[rec.explorer.index(True)] == 1.0  # logged with its propensity like any slot
    tracker = BridgeTracker()
    tracker.add([bridge])
    crossed = bridge_ratings(tracker, t.log)
    walked = [r.ratings[k] for r in t.log for k, (i, e) in enumerate(zip(r.shown, r.explorer, strict=True))
              if e and r.candidates[i] == path.serialise()]
    assert crossed == [("bridge-test", int(x)) for x in walked if x is not None] and crossed
