"""The harness: hand-computed rows, one budget for all, zero injection, intervals, recall@k, bad inputs."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Unit
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.evaluation.harness import (
    EvaluationResult,
    dataset_hash,
    evaluate,
    mean_memory_chars,
    recall_at_k_budget,
    recall_at_k_units,
    recall_summary,
    render_markdown,
)


def _row(result: EvaluationResult, retriever: str, qid: str) -> pd.Series:
    rows = result.rows
    return rows[(rows["retriever"] == retriever) & (rows["query_id"] == qid)].iloc[0]


def test_rows_are_hand_computed(facts_dataset, fixed_retriever):
    # q-now needs {att-new, att-keep}; att-old misleads. mem-1 (100 chars) holds att-old and att-keep;
    # the second unit (50 chars) is att-new.
    # (units inject the whole text of what they list: mem-1 is "a" * 100, att-new is "new")
    units = [Unit("a" * 100, ("mem-1",)), Unit("new".ljust(50, "b"), ("att-new",))]
    r = fixed_retriever("r", {"q-now": units})
    res = evaluate(facts_dataset, {"r": r}, budget_chars=None, ks=(1, 2))
    row = _row(res, "r", "q-now")
    # ranking: att-old, att-keep, att-new
    assert row["needed_recall"] == 1.0
    assert row["precision"] == pytest.approx(2 / 3)
    assert row["f1"] == pytest.approx(0.8)  # 2 * (2/3) * 1 / (2/3 + 1)
    assert row["mrr"] == pytest.approx(0.5)
    assert row["recall@1"] == 0.0 and row["recall@2"] == pytest.approx(0.5)
    # nDCG@2: DCG = 1/log2(3) = 0.6309; IDCG = 1 + 0.6309 -> 0.3869
    assert row["ndcg@2"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert (row["units"], row["chars"], row["tokens"]) == (2, 150, 37.5)
    assert (row["items"], row["needed_items"], row["misleading_items"], row["noise_items"]) == (3, 2, 1, 0)
    # tokens: mem-1's 100 chars shared by its 2 items -> 50 misleading, 50 needed; + 50 needed -> /4
    assert (row["needed_tokens"], row["misleading_tokens"], row["noise_tokens"]) == (25.0, 12.5, 0.0)
    assert not row["zero_injection"] and row["latency_s"] >= 0
    # q-early got nothing: recall, precision and F1 are 0; q-hi is a non-query with nothing injected
    early = _row(res, "r", "q-early")
    assert (early["needed_recall"], early["precision"], early["f1"], early["zero_injection"]) == (
        0,
        0,
        0,
        True,
    )
    hi = _row(res, "r", "q-hi")
    assert math.isnan(hi["f1"]) and hi["zero_injection"]
    assert set(res.rows["query_id"]) == {"q-early", "q-now", "q-hi"}  # the test split only


def test_the_budget_is_the_only_cap_and_applies_alike(facts_dataset, fixed_retriever):
    units = [Unit("a" * 100, ("mem-1",)), Unit("b" * 50, ("att-new",)), Unit("c" * 20, ("mem-chat",))]
    a = fixed_retriever("a", {"q-now": units})
    b = fixed_retriever("b", {"q-now": units})
    res = evaluate(facts_dataset, [a, b], budget_chars=120)
    # in rank order: 100 fits, 50 would overflow (150 > 120) and is skipped, 20 still fits -> 120 chars
    for name in ("a", "b"):
        row = _row(res, name, "q-now")
        assert (row["chars"], row["units"], row["items"]) == (120, 2, 3)
        assert row["budget"] == "120"
    assert a.hints == b.hints == [120, 120, 120]  # each was told the same budget
    assert a.indexed == b.indexed == 1  # indexed once, before the timed queries
    free = evaluate(facts_dataset, [fixed_retriever("a", {"q-now": units})], budget_chars=None)
    assert _row(free, "a", "q-now")["chars"] == 170
    assert free.summary()["budget"].tolist() == ["none"]


def test_zero_injection_accuracy_and_silenced_real_queries(facts_dataset, fixed_retriever):
    unit = [Unit("a" * 100, ("mem-1",))]
    chatty = fixed_retriever("chatty", {q.id: unit for q in facts_dataset.queries})
    gated = fixed_retriever("gated", {"q-now": unit, "q-early": unit})  # nothing for the non-query
    silent = fixed_retriever("silent", {})
    res = evaluate(facts_dataset, [chatty, gated, silent], budget_chars=2000)
    summ = res.summary()
    assert summ.loc["chatty", "zero_injection_accuracy"] == 0.0
    assert summ.loc["gated", "zero_injection_accuracy"] == 1.0
    assert summ.loc["silent", "zero_injection_accuracy"] == 1.0
    assert summ.loc["gated", "silenced_real"] == 0.0 and summ.loc["silent", "silenced_real"] == 1.0
    # what is injected for a non-query is noise
    assert _row(res, "chatty", "q-hi")["noise_items"] == 2


def test_summary_intervals_tables_and_paired_comparison():
    from signet_rl.datasets.registry import load_dataset

    ds = load_dataset("synthetic:tiny")
    content = {
        gid: dict(zip(g.attributes["id"], g.attributes["content"], strict=True))
        for gid, g in ds.graphs.items()
    }

    def carrying(q, ids):  # a unit injecting the whole text of every fact it lists
        return Unit(" | ".join(content[q.graph_id][i] for i in ids), tuple(ids))

    good = {q.id: [carrying(q, ds.truth[q.id].needed)] for q in ds.queries if ds.truth[q.id].needed}
    half = {
        q.id: [carrying(q, ds.truth[q.id].needed[: max(1, len(ds.truth[q.id].needed) // 2)])]
        for q in ds.queries
        if ds.truth[q.id].needed
    }

    class Fixed:
        def __init__(self, name, units):
            self.name, self.units = name, units

        def index(self, dataset):
            pass

        def retrieve(self, query, budget_chars=None):
            return self.units.get(query.id, [])

    res = evaluate(ds, [Fixed("flat_good", good), Fixed("half", half)], n_boot=200)
    summ = res.summary()
    for m in res.headline_metrics():
        for name in ("flat_good", "half"):
            lo, mean, hi = summ.loc[name, [f"{m}_low", m, f"{m}_high"]]
            assert lo <= mean <= hi
    assert (
        summ.loc["flat_good", "needed_recall"] == 1.0
        and summ.loc["flat_good", "zero_injection_accuracy"] == 1.0
    )
    diff, lo, hi = res.compare("flat_good", "half", "needed_recall")
    assert 0 < lo <= diff <= hi
    per_intent = res.per_intent()
    assert set(per_intent.index.get_level_values("intent")) == {
        ds.truth[q.id].intent for q in ds.split("test")
    }
    tables = res.intent_tables()
    assert tables["csv"].startswith("retriever,intent,budget")
    assert tables["md"].splitlines()[0].startswith("| retriever | intent |")
    text = res.table()
    assert "synthetic:tiny:0 [test]" in text and "flat_good" in text and "[" in text
    flat = res.flat_metrics()
    assert flat["baseline_flat/needed_recall"] == 1.0 == flat["retrieval/flat_good/needed_recall"]
    assert "retrieval/half/vs_baseline/needed_recall_high" in flat
    assert "retrieval/half/intent/what/ndcg_at_10" in flat and not any("@" in k for k in flat)
    with pytest.raises(ValueError, match="baseline 'nope' is not among"):
        res.flat_metrics("nope")
    with pytest.raises(KeyError, match="no retriever 'nope'"):
        res.compare("nope", "half")


def test_concat_keeps_budgets_apart(facts_dataset, fixed_retriever):
    a = evaluate(facts_dataset, [fixed_retriever("a", {})], budget_chars=100)
    b = evaluate(facts_dataset, [fixed_retriever("b", {})], budget_chars=None)
    both = EvaluationResult.concat([a, b])
    assert both.budgets == {"a": 100, "b": None}
    assert both.summary()["budget"].tolist() == ["100", "none"]
    with pytest.raises(ValueError, match="retriever 'a' appears in two results"):
        EvaluationResult.concat([a, a])


def test_recall_at_k_within_k_average_memories_and_over_k_units(facts_dataset, fixed_retriever):
    # memories of 100, 50 and 30 chars: a k-memory budget is k * 60 characters
    assert mean_memory_chars(facts_dataset) == 60.0
    units = [
        Unit("keep".ljust(70, "a"), ("att-keep",)),
        Unit("new".ljust(30, "b"), ("att-new",)),
        Unit("new".ljust(40, "c"), ("att-new",)),
    ]
    r = fixed_retriever("r", {"q-now": units})
    by_budget = recall_at_k_budget(facts_dataset, [r], ks=(1, 2))
    now = by_budget[by_budget["query_id"] == "q-now"].set_index("k")
    # k=1, 60 chars: 70 overflows, 30 fits (att-new), 40 overflows -> recall 1/2
    # k=2, 120 chars: 70 + 30 fit (att-keep, att-new) -> recall 1
    assert now.loc[1, "budget_chars"] == 60 and now.loc[1, "recall"] == 0.5 and now.loc[1, "chars"] == 30
    assert now.loc[2, "budget_chars"] == 120 and now.loc[2, "recall"] == 1.0
    assert r.hints[0] == 120  # told the largest budget it will be cut to
    by_units = recall_at_k_units(facts_dataset, [fixed_retriever("r", {"q-now": units})], ks=(1, 2))
    now = by_units[by_units["query_id"] == "q-now"].set_index("k")
    assert now.loc[1, "recall"] == 0.5 and now.loc[1, "units"] == 1  # exactly the first unit: att-keep
    assert now.loc[2, "recall"] == 1.0
    summ = recall_summary(by_units)
    # q-now 0.5 and q-early 0 at k=1; the non-query needs nothing and is left out
    assert summ.loc[("r", 1), "queries"] == 2 and summ.loc[("r", 1), "recall"] == 0.25


def test_dataset_hash_is_stable_and_sees_changes(facts_dataset):
    assert dataset_hash(facts_dataset) == dataset_hash(facts_dataset)
    truths = [t for t in facts_dataset.truth.values() if t.query_id != "q-train"]
    truth = GroundTruth([*truths, Truth("q-train", ("att-new",), "attribute")])
    changed = Dataset(facts_dataset.name, facts_dataset.graphs, facts_dataset.queries, truth)
    assert dataset_hash(changed) != dataset_hash(facts_dataset)


def test_markdown_escapes_pipes():
    md = render_markdown(pd.DataFrame({"a": ["x|y"], "b": [np.float64(0.5)]}))
    assert md.splitlines()[2] == "| x\\|y | 0.500 |"


class NotARetriever:
    pass


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"budget_chars": 0}, ValueError, "token budget must be positive, got budget_chars=0"),
        ({"budget_chars": -5}, ValueError, "token budget must be positive, got budget_chars=-5"),
        ({"budget_chars": 2.5}, ValueError, "budget_chars must be a positive integer or None, got 2.5"),
        ({"split": "validation"}, ValueError, "split 'validation' of dataset 'hand:facts' has no queries"),
        ({"split": "dev"}, ValueError, "unknown split 'dev'"),
        ({"ks": (5, 0)}, ValueError, "ks must be positive integers, got [5, 0]"),
        ({"max_queries": 0}, ValueError, "max_queries must be an integer >= 1 or None, got 0"),
        ({"retrievers": []}, ValueError, "no retrievers to evaluate"),
        ({"retrievers": {"x": NotARetriever()}}, TypeError, "retriever 'x' (NotARetriever) has no"),
        ({"retrievers": {"x": "flat_vector"}}, TypeError, "retriever 'x' (str)"),
    ],
)
def test_bad_inputs(facts_dataset, fixed_retriever, kwargs, error, message):
    kwargs = {"retrievers": [fixed_retriever("r", {})], **kwargs}
    with pytest.raises(error, match=re.escape(message)):
        evaluate(facts_dataset, **kwargs)


def test_duplicate_names_and_non_units_are_refused(facts_dataset, fixed_retriever):
    with pytest.raises(ValueError, match="two retrievers are named 'r'"):
        evaluate(facts_dataset, [fixed_retriever("r", {}), fixed_retriever("r", {})])
    bad = fixed_retriever("bad", {"q-now": ["just text"]})
    with pytest.raises(TypeError, match="retriever 'bad' returned a str for query 'q-now', not a Unit"):
        evaluate(facts_dataset, [bad])


def test_max_queries_takes_a_seeded_subset_in_time_order():
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.evaluation.harness import select_queries

    ds = load_dataset("synthetic:tiny")
    a = select_queries(ds, "test", max_queries=5, seed=3)
    assert len(a) == 5 and a == select_queries(ds, "test", max_queries=5, seed=3)
    order = [q.id for q in ds.split("test")]
    assert [q.id for q in a] == sorted((q.id for q in a), key=order.index)
