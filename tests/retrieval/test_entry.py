"""Entry-entity search: recall on the synthetic benchmark, each evidence leg, time visibility, bad inputs."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from signet_rl.datasets.synthetic import generate
from signet_rl.evaluation.audit import entry_recall
from signet_rl.graph.model import Aspect, Attribute, Entity, KnowledgeGraph, Memory, Mention
from signet_rl.retrieval.entry import DEFAULT_WEIGHTS, EntrySearch

DAY = pd.Timedelta(days=1)
T0 = pd.Timestamp("2026-01-01T00:00:00Z")


@pytest.fixture(scope="module")
def small():
    return generate("small", seed=0)


def _graph() -> KnowledgeGraph:
    """Four entities: billing-api (day 0), Maya (day 0), ledger-db (day 0), zeta-worker (day 10).

    billing-api has an aspect ``deployment`` with the fact "runs in frankfurt"; Maya is only mentioned by a
    memory about oatmeal; ledger-db gets a fact about tokyo on day 20.
    """
    return KnowledgeGraph.from_records(
        entities=[
            Entity(id="e-billing", name="billing-api", entity_type="system", created_at=T0),
            Entity(id="e-maya", name="Maya Lind", entity_type="person", created_at=T0),
            Entity(id="e-ledger", name="ledger-db", entity_type="system", created_at=T0),
            Entity(id="e-zeta", name="zeta-worker", entity_type="system", created_at=T0 + 10 * DAY),
        ],
        aspects=[
            Aspect(id="a1", entity_id="e-billing", name="deployment", created_at=T0),
            Aspect(id="a2", entity_id="e-ledger", name="configuration", created_at=T0),
        ],
        attributes=[
            Attribute(id="t1", aspect_id="a1", content="runs in frankfurt", created_at=T0),
            Attribute(id="t2", aspect_id="a2", content="replicas live in tokyo", created_at=T0 + 20 * DAY),
        ],
        memories=[
            Memory(id="m1", content="had oatmeal with Maya before standup", created_at=T0 + DAY),
            Memory(id="m2", content="zeta-worker crashed on tokyo hosts", created_at=T0 + 10 * DAY),
        ],
        mentions=[
            Mention(memory_id="m1", entity_id="e-maya", created_at=T0 + DAY),
            Mention(memory_id="m2", entity_id="e-zeta", created_at=T0 + 10 * DAY),
        ],
    )


def _ids(hits):
    return [e for e, _ in hits]


def test_recall_on_small(small):
    table = entry_recall(EntrySearch(), small, "test", ks=(1, 3, 5, 10))
    assert set(table.index) == {"what", "relate", "action", "changed", "overall"}
    assert table.loc["overall", "recall@5"] >= 0.95  # measured 1.0: every generated query names its entity
    assert table.loc["relate", "both@3"] >= 0.9  # measured 1.0
    assert np.isnan(table.loc["what", "both@5"])
    assert table.loc["overall", "queries"] == sum(
        small.truth[q.id].intent != "none" for q in small.split("test")
    )


def test_evidence_legs_alone_find_entities(small):
    """Without the name legs, aspects, attributes and memories still point at the queried entity."""
    search = EntrySearch(weights={"exact": 0.0, "kw_name": 0.0, "vec_name": 0.0})
    table = entry_recall(search, small, "test", ks=(10,))
    assert table.loc["overall", "recall@10"] >= 0.6  # measured 0.71


def test_each_leg_finds_its_entity():
    search = EntrySearch().index(_graph())
    t = T0 + 30 * DAY
    assert _ids(search.search("what about billing-api?", timestamp=t))[0] == "e-billing"  # name
    assert _ids(search.search("which one runs in frankfurt?", timestamp=t))[0] == "e-billing"  # attribute
    assert _ids(search.search("who likes oatmeal?", timestamp=t)) == ["e-maya"]  # memory via mention
    assert _ids(search.search("how is the deployment going", timestamp=t))[0] == "e-billing"  # aspect
    assert _ids(search.search("is maya around?", timestamp=t))[0] == "e-maya"  # name token


def test_exact_name_match_scores_its_weight():
    search = EntrySearch(
        vector=False, weights={"kw_name": 0, "kw_aspect": 0, "kw_attribute": 0, "kw_memory": 0}
    ).index(_graph())
    assert search.search("ping billing-api's owner") == [("e-billing", DEFAULT_WEIGHTS["exact"])]
    assert search.search("billing api") == [("e-billing", DEFAULT_WEIGHTS["exact"])]
    assert search.search("billing") == []  # a partial name is not an exact match


def test_time_visibility_on_a_hand_built_graph():
    search = EntrySearch().index(_graph())
    early = T0 + 5 * DAY
    assert "e-zeta" not in _ids(search.search("zeta-worker status?", timestamp=early))
    assert "e-zeta" in _ids(search.search("zeta-worker status?", timestamp=T0 + 11 * DAY))
    # ledger-db's tokyo fact is created on day 20 and zeta's tokyo memory on day 10
    assert _ids(search.search("tokyo?", timestamp=early)) == []
    assert _ids(search.search("tokyo?", timestamp=T0 + 15 * DAY)) == ["e-zeta"]
    assert set(_ids(search.search("tokyo?", timestamp=T0 + 25 * DAY))) == {"e-zeta", "e-ledger"}
    # Maya's memory is on day 1: before it, nothing points at her through oatmeal
    assert search.search("who likes oatmeal?", timestamp=T0 + 0.5 * DAY) == []


def test_time_visibility_on_generated_queries(small):
    search = EntrySearch().index(small.graph)
    created = small.graph.entities.set_index("id")["created_at"]
    later = 0
    for q in small.split("test"):
        for e, _ in search.search(q.text, k=10, timestamp=q.timestamp):
            assert created[e] <= q.timestamp
        # every entity named in the text but created after the query is silently absent
        later += sum(created > q.timestamp)
    assert later > 0  # the check above had entities to leave out


def test_entity_mentioned_only_in_the_future_is_never_returned(small):
    g = small.graph
    first = g.entities.sort_values("created_at").iloc[-1]  # the newest entity
    search = EntrySearch().index(g)
    before = first["created_at"] - pd.Timedelta(seconds=1)
    assert first["id"] not in _ids(search.search(f"what is {first['name']}?", k=50, timestamp=before))
    assert (
        _ids(search.search(f"what is {first['name']}?", k=50, timestamp=first["created_at"]))[0]
        == first["id"]
    )


@pytest.mark.parametrize(
    ("text", "timestamp"),
    [
        ("", None),
        ("   \n", None),
        ("billing-api", T0 - DAY),  # before anything existed
        ("billing-api", pd.NaT),  # unknown time
    ],
)
def test_bad_inputs_give_nothing(text, timestamp):
    assert EntrySearch().index(_graph()).search(text, timestamp=timestamp) == []


def test_huge_query_is_cut_and_fast():
    search = EntrySearch().index(_graph())
    text = "what about billing-api? " + "lorem ipsum " * 9000
    assert len(text) > 100_000
    start = time.perf_counter()
    assert _ids(search.search(text))[0] == "e-billing"
    assert time.perf_counter() - start < 2.0
    # the cut: a name beyond the first max_query_chars characters is not seen
    assert "e-maya" not in _ids(search.search("lorem " * 500 + "Maya Lind"))


def test_graph_without_entities():
    search = EntrySearch().index(KnowledgeGraph.from_records())
    assert search.search("anything about billing-api?") == []
    assert search.scores("x").shape == (0,)


def test_invalid_utf8_is_cleaned():
    search = EntrySearch().index(_graph())
    assert _ids(search.search("billing-api \ud800 status"))[0] == "e-billing"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.search("x", k=0), ValueError, "k must be an integer >= 1, got 0"),
        (lambda s: s.search("x", timestamp="not a time"), ValueError, "not a time"),
        (lambda s: EntrySearch(weights={"names": 1.0}), ValueError, "unknown entry-search weights"),
        (lambda s: EntrySearch(weights={"exact": -1.0}), ValueError, ">= 0"),
        (lambda s: EntrySearch(keyword=False, vector=False), ValueError, "at least one leg"),
        (lambda s: EntrySearch().search("x"), RuntimeError, "before index"),
    ],
)
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call(EntrySearch().index(_graph()))


def test_recall_needs_focus_labels(small):
    from signet_rl.datasets.base import Dataset, GroundTruth

    bare = Dataset(
        name="bare",
        graphs=small.graphs,
        queries=small.queries,
        truth=GroundTruth([small.truth[q.id] for q in small.queries]),
    )
    with pytest.raises(ValueError, match="no focus-entity labels"):
        entry_recall(EntrySearch(), bare, "test")


def _reference_scores(search: EntrySearch, text: str, timestamp=None) -> np.ndarray:
    """The entity scores as the module docstring defines them, computed plainly: every leg's dense BM25 and
    vector scores, each entity's best row by ``np.maximum.at`` over every entity, max-normalised keyword
    legs (the implementation before the sparse fast paths)."""
    from signet_rl.retrieval.entry import _query_time, _tokens
    from signet_rl.text.terms import clean_text

    total = np.zeros(search._n)
    query = clean_text(text)[: search.max_query_chars]
    t = _query_time(timestamp)
    w = search.weights
    toks = _tokens(query)
    for n in range(1, min(search._longest_name, len(toks)) + 1):
        for j in range(len(toks) - n + 1):
            for i in search._names.get(tuple(toks[j : j + n]), ()):
                total[i] = w["exact"]
    qvec = search.encoder.encode([query]) if search.encoder is not None else None
    for name, leg in search._legs.items():
        seen = leg.visible_texts(t)
        hits = []
        if leg.bm25 is not None:
            every = leg.bm25.scores(query, seen).astype(np.float32)
            ids = np.flatnonzero(every > 0)
            hits.append((ids, every[ids], w[f"kw_{name}"], True))
        if leg.vectors is not None and qvec is not None:
            s, ids = leg.vectors.search(qvec, min(search.candidates, len(leg.vectors)), seen)
            keep = (ids[0] >= 0) & (s[0] >= search.min_similarity) & (s[0] > 0)
            hits.append((ids[0][keep], s[0][keep], w[f"vec_{name}"], False))
        for ids, scores, weight, normalise in hits:
            rows, row_scores = search._rows(leg, ids, scores, t)
            pairs = zip(rows.tolist(), row_scores.tolist(), strict=True)
            if name == "memory":
                ptr, ent, when = search._ment_indptr, search._ment_ent, search._ment_time
                owner = [(e, sc) for r, sc in pairs
                         for e, et in zip(ent[ptr[r]:ptr[r + 1]], when[ptr[r]:ptr[r + 1]], strict=True)
                         if t is None or not et > t]  # fmt: skip
            else:
                owner = [(int(leg.owner[r]), sc) for r, sc in pairs]
            best = np.zeros(search._n)
            for e, sc in owner:
                if e >= 0:
                    best[e] = max(best[e], sc)
            if best.max() > 0:
                total += weight * (best / best.max() if normalise else best)
    if t is not None:
        total[search._entity_created > t] = 0.0
    return total


def test_scores_equal_the_plain_reference(small):
    """The sparse fast paths (the entity-name vectors' column product ranking only rows above the similarity
    floor, the scatter onto the entities a leg reaches) give every entity the reference's score exactly, with
    and without a time."""
    search = EntrySearch().index(small.graph)
    queries = list(small.queries)[:40]
    for q in queries:
        for ts in (None, q.timestamp):
            assert np.array_equal(search.scores(q.text, ts), _reference_scores(search, q.text, ts)), q.text
