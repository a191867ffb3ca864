"""Equal text, equal credit: a unit is credited with a passage only if it injects that passage's whole text,
whichever retriever cut it (issue 23, part 3)."""

from __future__ import annotations

import dataclasses

import pytest

from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.evaluation.harness import evaluate, recall_at_k_units
from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph, Memory
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.rating.items import ItemResolver
from signet_rl.rating.view import RatingView
from signet_rl.retrieval.flat import UNCAPPED, flat_variant
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Hop, Path
from tests.conftest import FixedRetriever, day

#: A passage longer than any cut used below; the answer ("Lisbon") sits past character 600.
LONG = (
    "Harbor Bridge spans the bay. "
    + "It was built over many years by many crews. " * 16
    + "Its architect lives in Lisbon."
)
SHORT = "Maria Costa designed Harbor Bridge."


def _passages() -> Dataset:
    """MuSiQue-like: two passages, both needed; the OpenIE edges name the passage each came from."""
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=n, created_at=day(0)) for e, n in
                  (("e-bridge", "harbor bridge"), ("e-maria", "maria costa"), ("e-lisbon", "lisbon"))],
        dependencies=[
            Dependency(id="d-designed", source_entity_id="e-maria", target_entity_id="e-bridge",
                       dependency_type="designed", confidence=0.9, strength=1.0, created_at=day(0)),
            Dependency(id="d-lives", source_entity_id="e-maria", target_entity_id="e-lisbon",
                       dependency_type="lives in", confidence=0.9, strength=1.0, created_at=day(0)),
        ],
        memories=[Memory(id="p-long", content=LONG, created_at=day(0)),
                  Memory(id="p-short", content=SHORT, created_at=day(0))],
    )  # fmt: skip
    graph.meta["dependency_memory"] = ["p-short", "p-long"]
    q = Query(id="q", text="Where does the architect of Harbor Bridge live?", graph_id="g", split="test",
              timestamp=day(1))  # fmt: skip
    truth = GroundTruth([Truth("q", ("p-long", "p-short"), "memory", category="2hop")])
    return Dataset(name="hand:passages", graphs={"g": graph}, queries=[q], truth=truth)


def test_the_long_passage_is_longer_than_the_cut():
    assert len(LONG) > 700 and LONG.index("Lisbon") > 600


@pytest.mark.parametrize("cut, recall", [(600, 0.5), (None, 1.0)])
def test_flat_is_credited_only_with_passages_it_injects_whole(cut, recall):
    ds = _passages()
    flat = flat_variant("flat_bm25", **{**UNCAPPED, "truncate_chars": cut}, gate=None, min_score=0.0)
    res = evaluate(ds, {"flat": flat}, budget_chars=None, n_boot=1)
    row = res.rows.iloc[0]
    assert row["units"] == 2
    assert row["needed_recall"] == recall
    # a cut passage is a noise item: its characters were spent, its fact not delivered
    assert row["noise_items"] == (1 if cut else 0)


@pytest.mark.parametrize("source_chars, recall", [(600, 0.5), (0, 1.0)])
def test_desire_is_credited_only_with_passages_it_injects_whole(source_chars, recall):
    ds = _passages()
    builder = MemoryBuilder(ds.graphs["g"], source_chars=source_chars)
    path = Path.of(Hop.entity("e-bridge"), Hop.dependency("d-designed", -1), Hop.entity("e-maria"),
                   Hop.dependency("d-lives", 1), Hop.entity("e-lisbon"))  # fmt: skip
    unit = builder.construct(path, at=day(1))
    res = evaluate(ds, [FixedRetriever("desire", {"q": [unit]})], budget_chars=None, n_boot=1)
    assert res.rows.iloc[0]["needed_recall"] == recall
    # the guard does not rely on the builder: a unit listing the cut passage is still not credited with it
    claimed = Unit(unit.text, ("p-short", "p-long"), kind="constructed")
    q = ds.queries[0]
    expected = ["p-short", "p-long#part"] if source_chars else ["p-short", "p-long"]
    assert ItemResolver(ds).unit_items(q, claimed) == expected
    # and the simulated rater reads the same items from the same text
    assert RatingView(ds, 0.0, 1.0).items(q, claimed.items, text=claimed.text) == expected


def test_the_pipelines_desire_units_are_credited_only_with_passages_they_inject_whole():
    ds = _passages()
    ds.queries[0] = dataclasses.replace(ds.queries[0], text="Where does Maria Costa live?")
    r = DesirePathRetriever("prior", encoder="hashing")
    res = evaluate(ds, {"desire": r}, budget_chars=None, n_boot=1)
    units = r.retrieve(ds.queries[0], None)
    # both edges are walked; the pipeline cuts the long passage to 600 characters
    assert [u.meta["cut_sources"] for u in units] == [(), ("p-long",)]
    assert [ItemResolver(ds).unit_items(ds.queries[0], u) for u in units] == [["p-short"], []]
    assert res.rows.iloc[0]["needed_recall"] == 0.5


def test_turn_recall_counts_turns_never_units():
    ds = _passages()
    both = Unit(f"{SHORT}\n{LONG}", ("p-short", "p-long"), kind="constructed")
    r = FixedRetriever("r", {"q": [both]})
    rows = recall_at_k_units(ds, [r], ks=(1, 2)).set_index("k")
    # one unit, two passages: R@1 counts the first passage only, R@2 both
    assert rows.loc[1, "recall"] == 0.5 and rows.loc[2, "recall"] == 1.0
    assert rows.loc[1, "units"] == 1
