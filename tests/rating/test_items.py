"""What a unit injects, in the items ground truth speaks of, for every needed_kind."""

from __future__ import annotations

import pytest

from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.graph.model import Entity, KnowledgeGraph
from signet_rl.rating.items import ItemResolver, classify


def _q(ds: Dataset, qid: str) -> Query:
    return next(q for q in ds.queries if q.id == qid)


def _u(ds: Dataset, *ids: str, graph: str = "main") -> Unit:
    """A unit that injects the whole text of every row it lists (unknown ids add their id)."""
    g = ds.graphs[graph]
    content = dict(zip(g.memories["id"], g.memories["content"], strict=True))
    content.update(zip(g.attributes["id"], g.attributes["content"], strict=True))
    return Unit(" | ".join(content.get(i, i) for i in ids), ids)


def test_memory_counts_as_its_facts_visible_at_query_time(facts_dataset):
    r = ItemResolver(facts_dataset)
    now, early = _q(facts_dataset, "q-now"), _q(facts_dataset, "q-early")
    # mem-1 holds att-old and att-keep, both created on day 1
    assert r.unit_items(now, _u(facts_dataset, "mem-1")) == ["att-old", "att-keep"]
    # on day 2, mem-2's fact (day 3) does not exist yet: the id counts as itself (noise)
    assert r.unit_items(early, _u(facts_dataset, "mem-2")) == ["mem-2"]
    assert r.unit_items(now, _u(facts_dataset, "mem-2")) == ["att-new"]
    # an attribute id is itself; a memory without facts is itself
    assert r.unit_items(now, _u(facts_dataset, "att-new", "mem-chat")) == ["att-new", "mem-chat"]


def test_a_memory_holding_a_superseded_fact_injects_it_as_misleading(facts_dataset):
    r = ItemResolver(facts_dataset)
    now = _q(facts_dataset, "q-now")
    split = classify(r.unit_items(now, _u(facts_dataset, "mem-1")), facts_dataset.truth["q-now"])
    assert split.needed == {"att-keep"}
    assert split.misleading == {"att-old"}
    assert split.noise == frozenset()


def test_one_dense_unit_is_many_items(facts_dataset):
    r = ItemResolver(facts_dataset)
    now = _q(facts_dataset, "q-now")
    unit = _u(facts_dataset, "mem-1", "att-new", "att-keep", "mem-chat")
    # duplicates within a unit count once, in the order listed
    assert r.unit_items(now, unit) == ["att-old", "att-keep", "att-new", "mem-chat"]
    ranking = r.ranking(now, [_u(facts_dataset, "mem-2"), unit])
    assert ranking == ["att-new", "att-old", "att-keep", "mem-chat"]


def test_observations_count_toward_their_turn_summaries_do_not(make_turns_dataset):
    ds = make_turns_dataset()
    r = ItemResolver(ds)
    q = ds.queries[0]
    assert r.unit_items(q, _u(ds, "D1:3", graph="conv-1")) == ["D1:3"]
    assert r.unit_items(q, _u(ds, "obs-2", graph="conv-1")) == ["D1:2"]
    # the summary is drawn from D1:1 (needed) but is no evidence of it: it stays itself, a noise item
    assert r.unit_items(q, _u(ds, "sum-1", graph="conv-1")) == ["sum-1"]
    assert classify(["sum-1"], ds.truth["q1"]).noise == {"sum-1"}
    # an observation with no source turn is itself
    assert r.unit_items(q, _u(ds, "obs-free", graph="conv-1")) == ["obs-free"]


def test_without_evidence_aspects_any_sourced_attribute_counts(make_turns_dataset):
    ds = make_turns_dataset(None)
    r = ItemResolver(ds)
    q = ds.queries[0]
    assert r.unit_items(q, _u(ds, "sum-1", graph="conv-1")) == ["D1:1"]
    assert r.unit_items(q, _u(ds, "obs-2", graph="conv-1")) == ["D1:2"]


def test_entity_ids_are_themselves():
    graph = KnowledgeGraph.from_records(entities=[Entity(id="e1", name="a"), Entity(id="e2", name="b")])
    ds = Dataset(
        name="hand:kg",
        graphs={"main": graph},
        queries=[Query(id="q", text="(e1, r, ?)", graph_id="main", split="test")],
        truth=GroundTruth([Truth("q", ("e2",), "entity")]),
    )
    r = ItemResolver(ds)
    assert r.unit_items(ds.queries[0], Unit("e2", ("e2", "e1"))) == ["e2", "e1"]


@pytest.mark.data
def test_locomo_summaries_never_count_toward_turn_recall(require_data):
    require_data("locomo")
    from signet_rl.datasets.registry import load_dataset

    ds = load_dataset("locomo", options={"observations": True})  # the summaries are an option now
    q = ds.queries[0]
    g = ds.graphs[q.graph_id]
    aspect = g.attributes["aspect_id"].map(g.aspects.set_index("id")["name"])
    summary = g.attributes[aspect == "session_summaries"].iloc[0]
    observation = g.attributes[aspect == "observations"].iloc[0]
    r = ItemResolver(ds)
    assert r.unit_items(q, Unit(summary["content"], (summary["id"],))) == [summary["id"]]
    assert r.unit_items(q, Unit(observation["content"], (observation["id"],))) == [observation["memory_id"]]


def test_a_cut_memory_is_credited_with_the_facts_its_text_still_carries():
    from signet_rl.graph.model import Aspect, Attribute, Memory
    from signet_rl.rating.items import PART_SUFFIX

    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e1", name="deploy")],
        aspects=[Aspect(id="asp", entity_id="e1", name="runbook")],
        memories=[Memory(id="mem", content="deploys run on tuesdays. rollbacks need two approvals.")],
        attributes=[
            Attribute(id="att-day", content="deploys run on tuesdays", aspect_id="asp", memory_id="mem"),
            Attribute(id="att-two", content="rollbacks need two approvals", aspect_id="asp", memory_id="mem"),
        ],
    )
    ds = Dataset(
        name="hand:cut",
        graphs={"main": graph},
        queries=[Query(id="q", text="deploy day?", graph_id="main", split="test")],
        truth=GroundTruth([Truth("q", ("att-day", "att-two"), "attribute")]),
    )
    r, q = ItemResolver(ds), ds.queries[0]
    whole = "deploys run on tuesdays. rollbacks need two approvals."
    assert r.unit_items(q, Unit(whole, ("mem",))) == ["att-day", "att-two"]
    # cut to 30 characters: the first fact is still there, the second is not
    assert r.unit_items(q, Unit(whole[:30], ("mem",))) == ["att-day"]
    # cut inside the first fact: nothing carried, one noise item
    assert r.unit_items(q, Unit(whole[:10], ("mem",))) == ["mem" + PART_SUFFIX]
    # an attribute id is credited only with its whole text, and whitespace runs do not matter
    assert r.unit_items(q, Unit("deploys  run\non tuesdays", ("att-day",))) == ["att-day"]
    assert r.unit_items(q, Unit("deploys run", ("att-day",))) == ["att-day" + PART_SUFFIX]
