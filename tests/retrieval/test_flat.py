"""The flat baseline: Signet's caps and gate, time visibility, the pool, variants and bad input."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from signet_rl.core.types import Query, fit_budget
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.datasets.synthetic import generate
from signet_rl.graph.model import Aspect, Attribute, Entity, KnowledgeGraph, Memory
from signet_rl.retrieval.base import Retriever
from signet_rl.retrieval.flat import FLAT_VARIANTS, UNCAPPED, FlatRetriever, flat_variant
from signet_rl.retrieval.indexes import FTS5Index
from signet_rl.text.encoders import CachedEncoder
from signet_rl.text.terms import keyword_terms


@pytest.fixture(scope="module")
def tiny():
    return generate("tiny", seed=0)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("flat_cache")


@pytest.fixture(scope="module")
def signet(tiny, cache_dir):
    retriever = flat_variant("flat_signet", cache_dir=cache_dir)
    retriever.index(tiny)
    return retriever


@pytest.fixture(scope="module")
def open_flat(tiny, cache_dir):
    """Uncapped and ungated but keeping the hook's importance filter: returns as much as it can, to check
    what may ever be returned."""
    retriever = flat_variant(
        "flat_signet_uncapped", gate=None, min_score=0.0, importance_min=0.3, cache_dir=cache_dir
    )
    retriever.index(tiny)
    return retriever


def _query(tiny, text, **changes):
    return dataclasses.replace(tiny.queries[-1], text=text, **changes)


def test_is_a_retriever(signet):
    assert isinstance(signet, Retriever)
    assert signet.name == "flat_signet"
    assert isinstance(signet.encoder, CachedEncoder)


def test_signet_caps_hold_on_every_query(tiny, signet):
    injected = 0
    for query in tiny.queries:
        units = signet.retrieve(query)
        assert len(units) <= 5
        assert sum(u.chars for u in units) <= 500
        assert all(u.chars <= 500 for u in units)
        assert [u.score for u in units] == sorted((u.score for u in units), reverse=True)
        if units:
            assert units[0].score >= 0.4
        injected += bool(units)
    assert injected > len(tiny.queries) // 2


def test_gate_silences_a_query_with_no_overlap(tiny, signet):
    query = _query(tiny, "zqxjv plorbnik vexquorth")
    assert signet.scores(query) == [] or signet.scores(query)[0][1] < 0.4
    assert signet.retrieve(query) == []


def test_gate_threshold_is_the_best_fused_score(tiny, cache_dir):
    query = tiny.queries[0]
    ungated = flat_variant("flat_signet", gate=None, cache_dir=cache_dir)
    ungated.index(tiny)
    best = ungated.scores(query)[0][1]
    above = flat_variant("flat_signet", gate=best - 1e-9, cache_dir=cache_dir)
    below = flat_variant("flat_signet", gate=best + 1e-9, cache_dir=cache_dir)
    above.index(tiny)
    below.index(tiny)
    assert above.retrieve(query) and below.retrieve(query) == []


def test_time_visibility_on_tiny(tiny, open_flat):
    g = tiny.graph
    created = {
        **dict(zip(g.memories["id"], g.memories["created_at"], strict=True)),
        **dict(zip(g.attributes["id"], g.attributes["created_at"], strict=True)),
    }
    returned = 0
    for query in tiny.queries:
        for unit in open_flat.retrieve(query):
            returned += 1
            assert all(created[i] <= query.timestamp for i in unit.items), (query.id, unit.items)
    assert returned > 0
    # without a timestamp everything is visible: the latest memory can be found
    latest = g.memories.loc[g.memories["created_at"].idxmax()]
    text = str(latest["content"])
    early = _query(tiny, text, timestamp=g.memories["created_at"].min())
    assert latest["id"] not in {i for u in open_flat.retrieve(early) for i in u.items}
    anytime = _query(tiny, text, timestamp=None)
    assert open_flat.retrieve(anytime)[0].items == (latest["id"],)


def test_deleted_and_unimportant_memories_are_never_returned(tiny, open_flat):
    mem = tiny.graph.memories.set_index("id")
    assert mem["is_deleted"].any() and (mem["importance"] < 0.3).any()
    for query in tiny.queries:
        for unit in open_flat.retrieve(dataclasses.replace(query, timestamp=None)):
            assert unit.kind == "memory"
            assert not mem.loc[unit.items[0], "is_deleted"]
            assert mem.loc[unit.items[0], "importance"] >= 0.3
            assert unit.text == mem.loc[unit.items[0], "content"]


def test_uncapped_drops_the_importance_filter_too(tiny, cache_dir):
    """flat_signet_uncapped: the shared budget is the only cap, so low-importance memories come back."""
    mem = tiny.graph.memories.set_index("id")
    uncapped = flat_variant("flat_signet_uncapped", gate=None, min_score=0.0, cache_dir=cache_dir)
    assert uncapped.importance_min is None
    uncapped.index(tiny)
    seen = {
        unit.items[0]
        for query in tiny.queries
        for unit in uncapped.retrieve(dataclasses.replace(query, timestamp=None))
    }
    assert (mem.loc[sorted(seen), "importance"] < 0.3).any()


def test_a_100k_character_query_is_cut_as_signet_cuts_it(tiny, signet):
    base = tiny.queries[0]
    long = dataclasses.replace(base, text=base.text + " " + "zzpad " * 20_000)
    assert len(long.text) > 100_000
    units = signet.retrieve(long)
    assert units  # the base query's words still reach both legs
    # only the first 200 characters reach the vector leg, and the keyword terms are the same
    assert units == signet.retrieve(dataclasses.replace(base, text=long.text[:200]))


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_query_returns_nothing(tiny, signet, text):
    assert signet.retrieve(_query(tiny, text)) == []


def test_chit_chat_without_keyword_terms_returns_nothing(tiny, signet):
    assert signet.retrieve(_query(tiny, "ok thanks, yes!")) == []


def test_invalid_utf8_is_replaced_not_an_error(tiny, signet):
    base = tiny.queries[0].text
    clean = signet.retrieve(_query(tiny, base + " \ufffd"))
    assert signet.retrieve(_query(tiny, base + " \ud800")) == clean
    assert signet.retrieve(_query(tiny, (base + " \xff").encode("latin-1"))) == clean


def test_budget(tiny, open_flat):
    query = tiny.queries[0]
    units = open_flat.retrieve(query, budget_chars=300)
    assert sum(u.chars for u in units) <= 300
    assert units == fit_budget(open_flat.retrieve(query), 300)
    for budget in (0, -5):
        with pytest.raises(ValueError, match="token budget must be positive"):
            open_flat.retrieve(query, budget_chars=budget)


def test_unknown_graph_and_unindexed_retriever(tiny, signet):
    with pytest.raises(ValueError, match="graph 'nope' was not indexed"):
        signet.retrieve(dataclasses.replace(tiny.queries[0], graph_id="nope"))
    with pytest.raises(RuntimeError, match="index"):
        flat_variant("flat_bm25").retrieve(tiny.queries[0])


def test_a_dataset_of_several_graphs_is_indexed_graph_by_graph_at_first_query(tiny, cache_dir):
    """Only the graphs asked are indexed (LoCoMo's test fold: a few of its conversations), and each graph's
    indexes, hence its results, are what indexing it alone gives."""
    queries = [dataclasses.replace(q, graph_id=g) for q, g in zip(tiny.queries[:2], "ab", strict=True)]
    two = Dataset("pair", {"a": tiny.graph, "b": tiny.graph}, queries, tiny.truth, tiny.report, tiny.meta)
    lazy = flat_variant("flat_signet", cache_dir=cache_dir, **UNCAPPED)
    lazy.index(two)
    assert lazy._pools == {}
    query = tiny.queries[0]
    got = lazy.retrieve(dataclasses.replace(query, graph_id="b"))
    assert set(lazy._pools) == {"b"}
    alone = flat_variant("flat_signet", cache_dir=cache_dir, **UNCAPPED)
    alone.index(tiny)  # one graph: indexed at once
    assert set(alone._pools) == {tiny.queries[0].graph_id}
    assert [(u.items, u.score) for u in got] == [(u.items, u.score) for u in alone.retrieve(query)]
    with pytest.raises(ValueError, match=r"graph 'nope' was not indexed \(indexed: a, b\)"):
        lazy.retrieve(dataclasses.replace(query, graph_id="nope"))
    assert set(lazy._pools) == {"b"}


def test_variants_by_name(tiny, cache_dir):
    for name in FLAT_VARIANTS:
        retriever = flat_variant(name, cache_dir=cache_dir)
        assert retriever.name == name
        retriever.index(tiny)
        for query in tiny.queries[:20]:
            units = retriever.retrieve(query)
            if name in ("flat_signet", "flat_hybrid_bm25s", "flat_vector", "flat_bm25"):
                assert len(units) <= 5 and sum(u.chars for u in units) <= 500
            if name == "flat_top15":
                assert len(units) <= 15
    assert flat_variant("flat_vector").keyword is None
    assert flat_variant("flat_bm25").config()["encoder"] is None
    assert flat_variant("flat_hybrid_bm25s").keyword == "bm25s"
    top15 = flat_variant("flat_top15")
    assert (top15.gate, top15.max_chars, top15.max_results, top15.limit) == (None, None, 15, 15)
    uncapped = flat_variant("flat_signet_uncapped")
    assert all(getattr(uncapped, k) is None for k in UNCAPPED)
    assert flat_variant("flat_signet", alpha=0.5).alpha == 0.5
    with pytest.raises(
        ValueError, match=r"unknown flat variant 'flat_magic'.*flat_signet, flat_signet_uncapped"
    ):
        flat_variant("flat_magic")


def test_uncapped_and_top15_return_more(tiny, cache_dir):
    capped = flat_variant("flat_signet", cache_dir=cache_dir)
    uncapped = flat_variant("flat_signet_uncapped", cache_dir=cache_dir)
    top15 = flat_variant("flat_top15", cache_dir=cache_dir)
    for r in (capped, uncapped, top15):
        r.index(tiny)
    counts = {r.name: sum(len(r.retrieve(q)) for q in tiny.queries) for r in (capped, uncapped, top15)}
    assert counts["flat_signet_uncapped"] > counts["flat_signet"]
    assert counts["flat_top15"] > counts["flat_signet"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keyword": None, "vector": False}, "at least one leg"),
        ({"keyword": "lucene"}, "keyword must be"),
        ({"fusion": "max"}, "fusion must be"),
        ({"alpha": 2.0}, "alpha"),
        ({"top_k": 0}, "top_k"),
        ({"max_results": 0}, "max_results"),
        ({"max_chars": -1}, "max_chars"),
        ({"encoder": "word2vec"}, "unknown encoder 'word2vec'"),
    ],
)
def test_bad_knobs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FlatRetriever(**kwargs)


def test_keyword_only_fts5_is_signets_keyword_leg(tiny, cache_dir):
    retriever = FlatRetriever(keyword="fts5", vector=False, gate=None, min_score=0.0, **UNCAPPED)
    retriever.index(tiny)
    query = dataclasses.replace(tiny.queries[0], timestamp=None)
    pool = tiny.graph.memories
    pool = pool[~pool["is_deleted"]].reset_index(drop=True)
    fts = FTS5Index(pool["content"].tolist())
    terms = " ".join(keyword_terms(query.text))
    mask = (pool["importance"] >= 0.3).to_numpy()
    scores, ids = fts.search(terms, 20, mask)
    got = [(u.items[0], round(u.score, 6)) for u in retriever.retrieve(query)]
    expected = sorted(
        ((pool["id"][i], round(float(s), 6)) for s, i in zip(scores, ids, strict=True)),
        key=lambda p: (-p[1], p[0]),
    )
    assert got == expected


def test_rrf_fusion_scores_are_scaled_to_one(tiny, cache_dir):
    retriever = flat_variant("flat_signet", fusion="rrf", cache_dir=cache_dir, gate=None)
    retriever.index(tiny)
    ranked = retriever.scores(tiny.queries[0])
    assert ranked and all(0 < s <= 1.0 for _, s, _ in ranked)


def test_dedup_window_skips_recent_injections(tiny, cache_dir):
    retriever = flat_variant("flat_signet", dedup_window=5, cache_dir=cache_dir)
    retriever.index(tiny)
    query = next(q for q in tiny.queries if retriever.retrieve(q))
    retriever.reset_sessions()
    first = {i for u in retriever.retrieve(query) for i in u.items}
    second = {i for u in retriever.retrieve(query) for i in u.items}
    assert first and not first & second


def _observation_dataset() -> Dataset:
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e1", name="caroline")],
        aspects=[
            Aspect(id="a1", entity_id="e1", name="observations"),
            Aspect(id="a2", entity_id="e1", name="hobbies"),
        ],
        attributes=[
            Attribute(
                id="at1", aspect_id="a1", content="Caroline adopted a greyhound named Pixel", created_at=t0
            ),
            Attribute(
                id="at2", aspect_id="a2", content="Caroline adopted a greyhound in spring", created_at=t0
            ),
        ],
        memories=[Memory(id="m1", content="Caroline: we went hiking in the alps", created_at=t0)],
    )
    query = Query(id="q1", text="Which greyhound did Caroline adopt?", graph_id="conv-1", split="test")
    return Dataset(
        name="observations",
        graphs={"conv-1": graph},
        queries=[query],
        truth=GroundTruth([Truth(query_id="q1", needed=("at1",), needed_kind="attribute")]),
        meta={"pool_attribute_aspects": ["observations"]},
    )


def test_pool_includes_attributes_of_the_named_aspects(cache_dir):
    ds = _observation_dataset()
    retriever = flat_variant("flat_signet", cache_dir=cache_dir)
    retriever.index(ds)
    units = retriever.retrieve(ds.queries[0])
    assert units[0].items == ("at1",) and units[0].kind == "attribute"
    assert "at2" not in {i for u in units for i in u.items}  # not under an "observations" aspect
    ds.meta.pop("pool_attribute_aspects")
    retriever.index(ds)
    assert all(u.kind == "memory" for u in retriever.retrieve(ds.queries[0]))


def test_embeddings_are_cached_on_disk(tiny, tmp_path):
    retriever = flat_variant("flat_vector", cache_dir=tmp_path)
    retriever.index(tiny)
    assert (tmp_path / "hashing-384.sqlite").exists()
    assert len(retriever.encoder) == len(
        set(tiny.graph.memories.loc[~tiny.graph.memories["is_deleted"], "content"])
    )
    assert not isinstance(flat_variant("flat_vector", cache=False).encoder, CachedEncoder)
