"""Indexes: exact and HNSW vector search under masks, bm25s, and FTS5 scored as Signet scores it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet_rl.graph.model import KnowledgeGraph, Memory
from signet_rl.graph.store import write_graph
from signet_rl.retrieval.indexes import BM25Index, FTS5Index, VectorIndex, fts5_match_query


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim))
    return _unit(centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, dim)))


# ---------------------------------------------------------------------------------------------------------
# VectorIndex


def test_exact_search_matches_brute_force():
    x = _clustered(300, 16)
    index = VectorIndex(16)
    index.add(x[:100])
    index.add(x[100:])
    q = x[:7] + 0.05
    scores, ids = index.search(q, 5)
    sims = q @ x.T
    for row in range(len(q)):
        expected = np.argsort(-sims[row], kind="stable")[:5]
        assert set(ids[row]) == set(expected)
        np.testing.assert_allclose(scores[row], np.sort(sims[row])[::-1][:5], rtol=1e-5)
    assert not index.is_hnsw and len(index) == 300


def test_search_pads_with_minus_one():
    index = VectorIndex(4)
    index.add(np.eye(4, dtype=np.float32)[:2])
    scores, ids = index.search(np.eye(4, dtype=np.float32)[0], 4)
    assert ids.tolist() == [[0, 1, -1, -1]]
    assert np.isneginf(scores[0, 2:]).all()
    _, ids = index.search(np.eye(4, dtype=np.float32)[0], 4, mask=np.array([False, False]))
    assert (ids == -1).all()
    _, ids = VectorIndex(4).search(np.eye(4, dtype=np.float32)[0], 3)
    assert (ids == -1).all()


def test_dimension_mismatch_names_both_dimensions():
    index = VectorIndex(8)
    with pytest.raises(ValueError, match=r"dimension 4, the index has dimension 8"):
        index.add(np.ones((2, 4), dtype=np.float32))
    index.add(np.ones((2, 8), dtype=np.float32))
    with pytest.raises(ValueError, match=r"query vectors have dimension 16, the index has dimension 8"):
        index.search(np.ones((1, 16), dtype=np.float32), 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be an integer >= 1, got 0"),
        ({"k": 2, "mask": np.ones(3, dtype=bool)}, "mask must be"),
    ],
)
def test_bad_search_arguments(kwargs, message):
    index = VectorIndex(2)
    index.add(np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match=message):
        index.search(np.eye(2, dtype=np.float32), **kwargs)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 120),
    k=st.integers(1, 30),
    seed=st.integers(0, 10_000),
    density=st.floats(0.0, 1.0),
    hnsw=st.booleans(),
)
def test_mask_is_never_violated(n, k, seed, density, hnsw):
    rng = np.random.default_rng(seed)
    x = _unit(rng.standard_normal((n, 8)))
    mask = rng.random(n) < density
    index = VectorIndex(8, hnsw_above=10 if hnsw else None, hnsw_m=8)
    index.add(x)
    q = _unit(rng.standard_normal((3, 8)))
    scores, ids = index.search(q, k, mask=mask)
    for row in range(3):
        found = ids[row][ids[row] >= 0]
        assert mask[found].all()
        assert len(set(found.tolist())) == len(found)
        if not hnsw:  # exact: exactly the best min(k, visible) visible rows
            visible = np.flatnonzero(mask)
            assert len(found) == min(k, len(visible))
            best = np.sort(q[row] @ x[visible].T)[::-1][: len(found)]
            np.testing.assert_allclose(scores[row][: len(found)], best, rtol=1e-5, atol=1e-6)


def test_hnsw_switches_above_the_threshold_and_reports_recall():
    x = _clustered(3000, 32)
    index = VectorIndex(32, hnsw_above=1000)
    index.add(x[:1000])
    assert not index.is_hnsw
    assert index.recall_against_exact(x[:10], 10) == 1.0
    index.add(x[1000:])
    assert index.is_hnsw
    recall = index.recall_against_exact(x[::30] + 0.01, 10)
    assert 0.0 <= recall <= 1.0
    assert recall > 0.9


# ---------------------------------------------------------------------------------------------------------
# BM25Index

DOCS = ["the cat sat on the mat", "dogs chase the cat", "a bird in the hand", "stock prices fell sharply"]


def test_bm25_ranks_matching_documents_only():
    index = BM25Index(DOCS)
    scores, ids = index.search("cat dogs", 10)
    assert ids.tolist() == [1, 0]
    assert scores[0] > scores[1] > 0
    scores, ids = index.search("cat", 10, mask=np.array([True, False, True, True]))
    assert ids.tolist() == [0]


@pytest.mark.parametrize("query", ["", "   ", "the a of in", "zzzz"])
def test_bm25_empty_or_stopword_query_gives_empty_arrays(query):
    scores, ids = BM25Index(DOCS).search(query, 5)
    assert scores.shape == (0,) and ids.shape == (0,) and ids.dtype == np.int64


def test_bm25_empty_corpus():
    assert BM25Index([]).search("cat", 3)[1].shape == (0,)


# ---------------------------------------------------------------------------------------------------------
# FTS5Index

FTS_DOCS = ["apple banana", "apple cherry cherry", "durian"]


def _fts5_bm25(tf: int, doc_len: int, n_hit: int, n_docs: int = 3, avgdl: float = 2.0) -> float:
    """SQLite FTS5's bm25() for one query term (k1 1.2, b 0.75; negative, as FTS5 returns it)."""
    idf = math.log((n_docs - n_hit + 0.5) / (n_hit + 0.5))
    idf = idf if idf > 0 else 1e-6
    return -idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * doc_len / avgdl))


def test_fts5_scores_equal_a_hand_computation():
    index = FTS5Index(FTS_DOCS)
    raw, ids = index.search("banana cherry", 10, raw=True)
    banana_d0 = _fts5_bm25(tf=1, doc_len=2, n_hit=1)  # -0.5108
    cherry_d1 = _fts5_bm25(tf=2, doc_len=3, n_hit=1)  # -0.6158
    assert ids.tolist() == [1, 0]
    np.testing.assert_allclose(raw, [cherry_d1, banana_d0], rtol=1e-5)
    norm, ids = index.search("banana cherry", 10)
    np.testing.assert_allclose(norm, [1.0, banana_d0 / cherry_d1], rtol=1e-5)  # |bm25| / max |bm25|
    raw, ids = index.search("apple", 10, raw=True)  # in 2 of 3 documents: FTS5 clamps the idf to 1e-6
    np.testing.assert_allclose(raw, [_fts5_bm25(1, 2, 2), _fts5_bm25(1, 3, 2)], rtol=1e-5)


def test_fts5_query_is_built_as_signet_builds_it():
    assert fts5_match_query('deploy "ka-6" (prod)* ^x:y') == '"deploy" OR "ka-6" OR "prod" OR "xy"'
    assert fts5_match_query(" ()  * ") == ""
    index = FTS5Index(FTS_DOCS)
    for query in ["", "()", 'NEAR("a" "b")', "AND OR NOT", "-", "durian*"]:
        index.search(query, 3)  # never a syntax error
    assert index.search("durian*", 3)[1].tolist() == [2]
    assert index.search("AND", 3)[1].tolist() == []


def test_fts5_limit_and_mask_are_exact():
    docs = [f"common word {i}" for i in range(100)]
    index = FTS5Index(docs)
    assert len(index.search("common", 7)[1]) == 7
    mask = np.zeros(100, dtype=bool)
    mask[[3, 50, 97]] = True
    scores, ids = index.search("common", 10, mask=mask)
    assert sorted(ids.tolist()) == [3, 50, 97]
    np.testing.assert_allclose(scores, 1.0)


def test_fts5_over_an_existing_store(tmp_path):
    graph = KnowledgeGraph.from_records(
        memories=[
            Memory(id="m1", content="signet uses sqlite"),
            Memory(id="m2", content="bun runs the daemon"),
        ]
    )
    path = write_graph(graph, tmp_path / "store.db")
    index = FTS5Index.from_store(path)
    assert index.ids == ["m1", "m2"]
    _, ids = index.search("daemon sqlite", 5)
    assert sorted(index.ids[i] for i in ids) == ["m1", "m2"]
    index.close()


def _join_rows(index: FTS5Index, match: str, limit: int) -> list[tuple[int, float]]:
    """The original query, joined to ``memories`` (what the fast path must reproduce)."""
    rows = index._conn.execute(index._SQL + " LIMIT ?", (match, limit)).fetchall()
    return [(index._position[int(r)], s) for r, s in rows]


def test_fts5_without_the_join_returns_the_joined_rows(tmp_path):
    """The keyword leg reads memories_fts without joining memories (a third faster on xl): on a generated
    store, the same rows and bm25 values as the joined query, for every test query; and an index row whose
    memory row is gone (which the join drops) still never comes back."""
    import sqlite3

    from signet_rl.datasets.synthetic import generate
    from signet_rl.text.terms import keyword_terms

    ds = generate("tiny", seed=0)
    path = write_graph(ds.graph, tmp_path / "store.db")
    index = FTS5Index.from_store(path)
    matches = [fts5_match_query(" ".join(keyword_terms(q.text, 12))) for q in ds.queries]
    matches = [m for m in matches if m]
    assert len(matches) >= 50
    for m in matches:
        for k in (3, 50):
            assert index._rows(m, k, None) == _join_rows(index, m, k)
    index.close()
    # orphan: delete a memory row behind the index's back (an external-content FTS5 table keeps its row)
    first = matches[0]
    conn = sqlite3.connect(path)
    with conn:
        (victim,) = conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts), rowid "
            "LIMIT 1", (first,)).fetchone()  # fmt: skip
        conn.execute("DROP TRIGGER IF EXISTS memories_ad")
        conn.execute("DELETE FROM memories WHERE rowid = ?", (victim,))
    conn.close()
    index = FTS5Index.from_store(path)
    fast_first = index._conn.execute(index._FAST_SQL + " LIMIT 1", (first,)).fetchone()[0]
    assert fast_first == victim  # still indexed
    got = index._rows(first, 5, None)
    assert got == _join_rows(index, first, 5) and got  # the join's rows: the orphan dropped, the rest kept
    index.close()


def test_sparse_queries_rank_as_faiss_and_the_plain_reference():
    """Hashing vectors of queries are sparse (memories' are not): the sparse-query path reads only the
    query's non-zero columns and must return the exact reference's rows in its order (ties by row:
    duplicate memories tie exactly), here also faiss's, with faiss's scores. (On the xl store faiss orders
    some exact ties under a mask otherwise: the served top results were identical on 200 of 200 queries;
    docs/results.md.)"""
    from signet_rl.datasets.synthetic import generate
    from signet_rl.text.encoders import make_encoder

    enc = make_encoder("hashing")
    ds = generate("tiny", seed=0)
    texts = ds.graph.memories["content"].astype(str).tolist()
    vectors = enc.encode(texts)
    fast, scan = VectorIndex(enc.dim, sparse_query_below="auto"), VectorIndex(enc.dim)
    fast.add(vectors)
    scan.add(vectors)
    assert fast._csr is None  # memory vectors are dense enough for faiss
    queries = enc.encode([q.text for q in ds.queries[:40]])
    assert np.count_nonzero(queries) <= 0.25 * queries.size
    mask = np.random.default_rng(0).random(len(texts)) < 0.7
    for q in queries:
        for m in (None, mask):
            s, ids = fast.search(q, 10, m)
            d, scan_ids = scan.search(q, 10, m)
            assert ids[0].tolist() == scan_ids[0].tolist() == _reference_top(vectors, q, 10, m)
            np.testing.assert_allclose(s, d, atol=1e-6)
    assert fast._transposed is not None and scan._transposed is None
    few = np.zeros(len(texts), dtype=bool)
    few[[3, 5]] = True
    s, ids = fast.search(queries[0], 4, few)
    assert sorted(ids[0][:2].tolist()) == [3, 5] and ids[0][2:].tolist() == [-1, -1]
    assert np.isneginf(s[0][2:]).all()


def _reference_top(vectors: np.ndarray, q: np.ndarray, k: int, mask: np.ndarray | None) -> list[int]:
    """The plain reference: every row's exact inner product (``math.fsum`` of float64 products, which are
    exact for float32 inputs), the ``k`` best allowed rows, ties by row."""
    scores = [math.fsum(float(a) * float(b) for a, b in zip(row, q, strict=True)) for row in vectors]
    rows = [i for i in range(len(vectors)) if mask is None or mask[i]]
    return sorted(rows, key=lambda i: (-scores[i], i))[:k]


def test_sparse_search_ranks_as_the_plain_reference_and_faiss():
    """Hashing vectors of names are sparse: the CSR path must return the reference's rows, in its order, and
    the dense faiss scan's scores (the ranking an optimisation could have changed)."""
    from signet_rl.datasets.synthetic import generate
    from signet_rl.text.encoders import make_encoder

    enc = make_encoder("hashing")
    names = list(dict.fromkeys(generate("tiny", seed=0).graph.entities["name"].astype(str)))
    vectors = enc.encode(names)
    sparse, dense = VectorIndex(enc.dim), VectorIndex(enc.dim, sparse_below=None)
    sparse.add(vectors)
    dense.add(vectors)
    assert sparse._csr is not None and dense._csr is None
    rng = np.random.default_rng(0)
    queries = enc.encode([f"{names[i]} {names[j]}" for i, j in rng.integers(0, len(names), (12, 2))])
    mask = rng.random(len(names)) < 0.7
    for q in queries:
        for m in (None, mask):
            s, ids = sparse.search(q, 10, m)
            assert ids[0].tolist() == _reference_top(vectors, q, 10, m)
            d, dense_ids = dense.search(q, 10, m)
            assert np.allclose(s, d, atol=1e-6)
            assert set(ids[0][s[0] > d[0][-1] + 1e-6].tolist()) <= set(dense_ids[0].tolist())
    # fewer allowed rows than k: padded as the dense index pads
    few = np.zeros(len(names), dtype=bool)
    few[[3, 5]] = True
    s, ids = sparse.search(queries[0], 4, few)
    assert sorted(ids[0][:2].tolist()) == [3, 5] and ids[0][2:].tolist() == [-1, -1]
    assert np.isneginf(s[0][2:]).all()


def test_dense_vectors_keep_the_faiss_scan():
    index = VectorIndex(16)
    index.add(_clustered(50, 16))
    assert index._csr is None


def _name_index():
    from signet_rl.datasets.synthetic import generate
    from signet_rl.text.encoders import make_encoder

    enc = make_encoder("hashing")
    names = list(dict.fromkeys(generate("tiny", seed=0).graph.entities["name"].astype(str)))
    index = VectorIndex(enc.dim)
    index.add(enc.encode(names))
    assert index._csr is not None
    return enc, names, index


def test_sparse_scores_are_the_csr_product_bit_for_bit():
    """The column-wise sparse product (only the query's non-zero columns are read) sums each row's terms in
    the CSR product's order, so its scores are scipy's ``csr @ q`` exactly, not merely close."""
    enc, names, index = _name_index()
    rng = np.random.default_rng(1)
    queries = enc.encode([f"{names[i]} and {names[j]}?" for i, j in rng.integers(0, len(names), (30, 2))])
    for q in queries:
        got = index._sparse_scores(q)
        assert got.dtype == np.float64
        assert np.array_equal(got, np.asarray(index._csr @ q.astype(np.float64)))
    assert np.array_equal(index._sparse_scores(np.zeros(enc.dim, np.float32)), np.zeros(len(names)))


@pytest.mark.parametrize("kind", ["sparse", "dense", "sparse_queries"])
def test_min_score_is_the_search_cut_below_it(kind):
    """``search(..., min_score=m)``: the same hits, in the same order, as the search without it less those
    below ``m`` (re-padded), on each search path."""
    from signet_rl.text.encoders import make_encoder

    if kind == "sparse":
        enc, names, index = _name_index()
        pairs = np.random.default_rng(2).integers(0, len(names), (10, 2))
        texts = [f"{names[i]} {names[j]}" for i, j in pairs]
    else:
        from signet_rl.datasets.synthetic import generate

        enc = make_encoder("hashing")
        ds = generate("tiny", seed=0)
        index = VectorIndex(enc.dim, sparse_query_below="auto" if kind == "sparse_queries" else None)
        index.add(enc.encode(ds.graph.memories["content"].astype(str).tolist()))
        texts = [q.text for q in ds.queries[:10]]
    mask = np.random.default_rng(3).random(index.ntotal) < 0.6
    cut_any = False
    for q in enc.encode(texts):
        for m in (None, mask):
            s, ids = index.search(q, 20, m)
            for floor in (-1.0, 0.0, 0.2, 0.35, 2.0):
                got_s, got_ids = index.search(q, 20, m, min_score=floor)
                keep = (ids[0] >= 0) & (s[0] >= floor)
                cut_any |= bool((ids[0] >= 0).sum() > keep.sum() > 0)
                n = int(keep.sum())
                assert got_ids[0, :n].tolist() == ids[0][keep].tolist()
                assert np.array_equal(got_s[0, :n], s[0][keep])
                assert (got_ids[0, n:] == -1).all() and np.isneginf(got_s[0, n:]).all()
    assert cut_any  # some threshold fell inside the hits
