from __future__ import annotations

import pytest

from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate
from signet_rl.retrieval.base import Unit
from signet_rl.retrieval.desire import DesirePathRetriever
from signet_rl.retrieval.flat import UNCAPPED, flat_variant


@pytest.fixture(scope="module")
def small():
    return load_dataset("synthetic:small:0")


def test_end_to_end_units_respect_budget_time_and_the_gate(small):
    r = DesirePathRetriever("prior")
    r.index(small)
    att = small.graph.attributes.set_index("id")["created_at"]
    answered = 0
    for q in small.split("test"):
        units = r.retrieve(q, budget_chars=600)
        assert all(isinstance(u, Unit) for u in units)
        assert sum(u.chars for u in units) <= 600
        items = [i for u in units for i in u.items if i in att.index]
        assert all(att[i] <= q.timestamp for i in items), q.id  # only the past is walked
        kinds = [u.kind for u in units]
        assert "constraints" not in kinds[1:]  # the constraints section, when present, comes first
        answered += bool(units)
        if q.text in ("lol nice", "good morning", "haha ok"):
            assert units == []
    assert answered > 0.7 * len(small.split("test"))


def test_desire_paths_beat_flat_recall_on_the_synthetic_benchmark(small):
    flat = flat_variant("flat_signet", encoder="hashing", **UNCAPPED)
    flat.name = "flat_signet_uncapped"
    res = evaluate(
        small,
        {"flat": flat, "desire_prior": DesirePathRetriever("prior")},
        split="test",
        budget_chars=2000,
        n_boot=100,
    )
    m = res.rows.groupby("retriever")[["needed_recall", "precision", "tokens"]].mean()
    assert m.at["desire_prior", "needed_recall"] > m.at["flat", "needed_recall"] + 0.1
    assert m.at["desire_prior", "precision"] > 3 * m.at["flat", "precision"]
    assert m.at["desire_prior", "tokens"] < m.at["flat", "tokens"]


def test_bad_arguments_and_unindexed_graphs(small):
    with pytest.raises(ValueError, match="entry_k must be >= 1, got 0"):
        DesirePathRetriever(entry_k=0)
    with pytest.raises(ValueError, match="unknown scorer 'nope'"):
        DesirePathRetriever("nope")
    with pytest.raises(RuntimeError, match="graph 'main' is not indexed"):
        DesirePathRetriever().retrieve(small.split("test")[0])
    r = DesirePathRetriever()
    r.index(small)
    assert (
        r.retrieve(small.split("test")[0].__class__(id="e", text="  ", graph_id="main", split="test")) == []
    )
