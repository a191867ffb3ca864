"""Search indexes: faiss inner-product vectors, bm25s keywords, and SQLite FTS5 as Signet runs it.

All three answer ``search(query, k, mask=None) -> (scores, ids)`` where ids are row positions (the order
documents were added in), best first, and ``mask`` is an optional boolean ``[n]`` of the rows a query may
see (time visibility, importance filters). A masked row is never returned.

* :class:`VectorIndex` is exact (``IndexFlatIP``) unless ``hnsw_above`` is set and it holds more vectors
  than that; then HNSW, whose recall against exact search :meth:`VectorIndex.recall_against_exact` reports.
  Queries are ``[q, dim]`` and results ``[q, k]``, padded with id ``-1`` and score ``-inf``. Sparse vectors
  (the hashing encoder's on short texts such as entity names: a few dozen of 384 buckets set) are searched
  exactly as a sparse matrix product instead (``sparse_below``), the same ranking at a fraction of the
  dense scan's cost.
* :class:`BM25Index` is Lucene BM25 (``k1`` 1.5, ``b`` 0.75) over bm25s's English-stop-word-filtered
  tokens, with the corpus statistics (IDF, average length) of the visible rows only.
* :class:`FTS5Index` reproduces Signet's keyword leg: FTS5 ``bm25()`` over a ``memories_fts`` table built
  exactly as Signet's schema builds it (external content on ``memories``), queried with each token stripped
  of ``":()^*`` and quoted, tokens joined with ``OR``, ``ORDER BY bm25 LIMIT k``, scores
  ``|bm25| / max |bm25|`` over the returned batch. It can also run over an existing store file.

Keyword searches return 1-D ``(scores, ids)`` (only matching rows, so possibly fewer than ``k``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from signet_rl.core.checks import check_integer
from signet_rl.text.terms import clean_text

__all__ = ["BM25Index", "FTS5Index", "VectorIndex", "fts5_match_query"]

_FTS_STRIP = re.compile(r'[":()^*]')


def _check_k(k: int) -> int:
    return check_integer("k", k, 1)


def _check_mask(mask: np.ndarray | None, n: int) -> np.ndarray | None:
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise ValueError(f"mask must be a boolean array of shape ({n},), got {mask.dtype} {mask.shape}")
    return mask


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best positive scores, best first, ties by position."""
    cand = np.flatnonzero(scores > 0)
    if len(cand) > k:
        part = np.argpartition(-scores[cand], k - 1)[:k]
        kth = scores[cand[part]].min()
        cand = cand[scores[cand] >= kth]  # keep every tie of the k-th score, cut after ordering
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][:k]


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``scores`` (any sign), best first, ties by position."""
    cand = np.arange(len(scores))
    if len(scores) > k:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        cand = np.flatnonzero(scores >= kth)  # every tie of the k-th score, cut after ordering
    return cand[np.lexsort((cand, -scores[cand]))][:k]


def _at_least(scores: np.ndarray, ids: np.ndarray, min_score: float | None) -> tuple[np.ndarray, np.ndarray]:
    """``search``'s padded ``[q, k]`` results without the hits below ``min_score`` (kept order, re-padded)."""
    if min_score is None:
        return scores, ids
    for row in range(len(scores)):
        keep = (ids[row] >= 0) & (scores[row] >= min_score)
        n = int(keep.sum())
        scores[row, :n], ids[row, :n] = scores[row, keep], ids[row, keep]
        scores[row, n:], ids[row, n:] = -np.inf, -1
    return scores, ids


class VectorIndex:
    """Inner-product search over L2-normalised vectors (cosine similarity) with faiss.

    Args:
        dim: vector dimension; every add and search is checked against it.
        hnsw_above: switch to HNSW once the index holds more than this many vectors (``None``: always
            exact, what every evaluation uses).
        hnsw_m: HNSW graph degree.
        ef_search: HNSW search breadth (raised to ``k`` when ``k`` is larger).
        ef_construction: HNSW build breadth.
        sparse_below: when at most this share of the held vectors' entries is non-zero, an exact index
            scores by a sparse product (CSR, float64 sums; ``None``: never; ``"auto"``:
            :attr:`SPARSE_BELOW`). Same top ``k`` as the dense scan up to float rounding (ties by row), in
            time proportional to the non-zeros.
        sparse_query_below: when at most this share of a search's query entries is non-zero, an exact
            dense index scores only the held vectors' columns where the queries are non-zero (float32, from
            a transposed copy; ``None``, the default: never; ``"auto"``: :attr:`SPARSE_QUERY_BELOW`). The
            same scores as faiss's scan up to float rounding, exact ties ordered by row (faiss's order among
            exact ties under a mask is its own), so it is opt-in: the served flat uses it
            (:class:`~signet_rl.retrieval.flat.FlatRetriever`'s ``sparse_queries``), the experiments keep
            faiss's order.

    Example:
        >>> index = VectorIndex(2)
        >>> index.add(np.eye(2, dtype=np.float32))
        >>> index.search(np.array([[1.0, 0.0]], dtype=np.float32), 1)[1]
        array([[0]])
    """

    #: The default ``sparse_below``: hashing vectors of names (about 4% non-zero) qualify, those of
    #: sentences and turns (30-60%) and dense model embeddings do not.
    SPARSE_BELOW: float | None = 0.1
    #: The default ``sparse_query_below``: hashing vectors of queries (about 11% non-zero on xl) qualify,
    #: dense model embeddings do not (they keep faiss's scan).
    SPARSE_QUERY_BELOW: float | None = 0.25

    def __init__(
        self,
        dim: int,
        hnsw_above: int | None = None,
        hnsw_m: int = 32,
        ef_search: int = 64,
        ef_construction: int = 80,
        sparse_below: float | Literal["auto"] | None = "auto",
        sparse_query_below: float | Literal["auto"] | None = None,
    ) -> None:
        import faiss

        check_integer("dim", dim, 1, owner="VectorIndex")
        if hnsw_above is not None and hnsw_above < 0:
            raise ValueError(f"hnsw_above must be None or >= 0, got {hnsw_above}")
        for label, value in (
            ("hnsw_m", hnsw_m),
            ("ef_search", ef_search),
            ("ef_construction", ef_construction),
        ):
            if value < 1:
                raise ValueError(f"{label} must be >= 1, got {value}")
        self._faiss = faiss
        self.dim = dim
        self.hnsw_above = hnsw_above
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self.ef_construction = ef_construction
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._index: Any = faiss.IndexFlatIP(dim)
        self._exact: Any = None
        self.sparse_below = self.SPARSE_BELOW if sparse_below == "auto" else sparse_below
        self._csr: Any = None  # the held vectors as a CSR matrix, when sparse enough (see sparse_below)
        self._csc: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # its columns (built on first use)
        self.sparse_query_below = (
            self.SPARSE_QUERY_BELOW if sparse_query_below == "auto" else sparse_query_below
        )
        self._transposed: np.ndarray | None = None  # [dim, n] copy for sparse queries (built on first use)

    @property
    def ntotal(self) -> int:
        """Number of vectors held."""
        return len(self._vectors)

    @property
    def is_hnsw(self) -> bool:
        """Whether searches run on HNSW (approximate) rather than the exact flat index."""
        return not isinstance(self._index, self._faiss.IndexFlatIP)

    def __len__(self) -> int:
        return self.ntotal

    def _as_matrix(self, x: np.ndarray, what: str) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != self.dim:
            got = x.shape[-1] if x.ndim >= 1 else "scalar"
            raise ValueError(
                f"dimension mismatch: {what} vectors have dimension {got}, the index has dimension {self.dim}"
            )
        return np.ascontiguousarray(x)

    def add(self, vectors: np.ndarray) -> None:
        """Append ``vectors`` (``[n, dim]``); their ids are their row positions in order of addition.

        Raises:
            ValueError: the vectors' dimension is not the index's (both are named).
        """
        v = self._as_matrix(vectors, "added")
        self._vectors = np.concatenate([self._vectors, v]) if self.ntotal else v.copy()
        self._exact = None
        self._csr = None
        self._csc = None
        self._transposed = None
        sparse_enough = self.sparse_below is not None and self.ntotal > 0
        if sparse_enough and np.count_nonzero(self._vectors) <= self.sparse_below * self._vectors.size:
            from scipy import sparse

            self._csr = sparse.csr_matrix(self._vectors.astype(np.float64))
        if self.hnsw_above is not None and self.ntotal > self.hnsw_above and not self.is_hnsw:
            hnsw = self._faiss.IndexHNSWFlat(self.dim, self.hnsw_m, self._faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = self.ef_construction
            hnsw.add(self._vectors)
            self._index = hnsw
            return
        self._index.add(v)

    def _params(self, k: int, mask: np.ndarray | None) -> Any:
        faiss = self._faiss
        selector = None
        if mask is not None:
            selector = faiss.IDSelectorBitmap(np.packbits(mask, bitorder="little"))
        if self.is_hnsw:
            params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k))
            if selector is not None:
                params.sel = selector
            params._selector = selector  # keep the selector alive while faiss holds a pointer to it
            return params
        if selector is None:
            return None
        params = faiss.SearchParameters(sel=selector)
        params._selector = selector
        return params

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None, min_score: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest rows by inner product for each query.

        Args:
            queries: ``[q, dim]`` (or one ``[dim]`` vector).
            k: results per query.
            mask: boolean ``[ntotal]``; only rows where it is True may be returned.
            min_score: only rows scoring at least this are returned (``None``: any score): the results of
                the search without it, less those below it (the sparse path then ranks only the rows that
                reach it).

        Returns:
            ``(scores [q, k] float32, ids [q, k] int64)``, best first, padded with ``-inf`` and ``-1``.

        Raises:
            ValueError: a query dimension, ``k`` or mask shape that does not fit (the message names it).
        """
        q = self._as_matrix(queries, "query")
        k = _check_k(k)
        mask = _check_mask(mask, self.ntotal)
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)
        ids = np.full((len(q), k), -1, dtype=np.int64)
        if not self.ntotal or not len(q) or (mask is not None and not mask.any()):
            return scores, ids
        if self._csr is not None and not self.is_hnsw:
            return self._sparse_search(q, k, mask, scores, ids, min_score)
        sparse_queries = self.sparse_query_below is not None and (
            np.count_nonzero(q) <= self.sparse_query_below * q.size
        )
        if sparse_queries and not self.is_hnsw:
            scores, ids = self._sparse_query_search(q, k, mask, scores, ids)
            return _at_least(scores, ids, min_score)
        params = self._params(k, mask)
        d, i = self._index.search(q, k, params=params) if params is not None else self._index.search(q, k)
        valid = i >= 0
        if mask is not None:
            valid &= mask[np.where(valid, i, 0)]
        if min_score is not None:
            valid &= d >= min_score
        for row in range(len(q)):  # compact: valid results first, in faiss's order (already best first)
            keep = valid[row]
            n = int(keep.sum())
            scores[row, :n] = d[row, keep]
            ids[row, :n] = i[row, keep]
        return scores, ids

    def _sparse_scores(self, query: np.ndarray) -> np.ndarray:
        """``float64 [n]``: every held row's inner product with one ``query``, bit for bit the CSR product
        ``csr @ query`` (each row's sum runs over its non-zero columns in column order, from 0.0), read from
        the query's non-zero columns only: a hashing query sets ~11% of the columns, so this touches ~11% of
        the non-zeros the full product does. A row sharing no column with the query scores 0.0."""
        if self._csc is None:
            csc = self._csr.tocsc()
            csc.sort_indices()  # rows ascending within each column: each row's terms in column order
            self._csc = (csc.indptr.astype(np.int64), csc.indices.astype(np.int32), csc.data)
        indptr, rows, data = self._csc
        q = query.astype(np.float64)
        cols = np.flatnonzero(q)
        if not len(cols):
            return np.zeros(self.ntotal, dtype=np.float64)
        start, stop = indptr[cols].tolist(), indptr[cols + 1].tolist()
        spans = list(zip(start, stop, strict=True))
        weights = np.concatenate([data[a:b] for a, b in spans]) * np.repeat(q[cols], np.subtract(stop, start))
        hit_rows = np.concatenate([rows[a:b] for a, b in spans])
        # bincount adds each row's terms in input order (column by column), as the CSR product does
        return np.bincount(hit_rows, weights=weights, minlength=self.ntotal)

    def _sparse_search(
        self,
        q: np.ndarray,
        k: int,
        mask: np.ndarray | None,
        scores: np.ndarray,
        ids: np.ndarray,
        min_score: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`search` on the sparse copy: every row's inner product (float64 sums,
        :meth:`_sparse_scores`), the ``k`` best of the rows ``mask`` allows (and, with ``min_score``, that
        reach it), best first, ties by row."""
        allowed = np.flatnonzero(mask) if mask is not None and min_score is None else None
        for row in range(len(q)):
            every = self._sparse_scores(q[row])
            if min_score is not None:  # rank only the rows that reach min_score (the same top k, cut)
                ok = every >= min_score
                if mask is not None:
                    ok &= mask
                cand = np.flatnonzero(ok)
                top = cand[np.lexsort((cand, -every[cand]))][:k]
                scores[row, : len(top)] = every[top]
                ids[row, : len(top)] = top
                continue
            s = every if allowed is None else every[allowed]
            top = _best(s, k)
            scores[row, : len(top)] = s[top]
            ids[row, : len(top)] = top if allowed is None else allowed[top]
        return scores, ids

    def _sparse_query_search(
        self, q: np.ndarray, k: int, mask: np.ndarray | None, scores: np.ndarray, ids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`search` for sparse queries (hashing vectors of a query: ~10% non-zero) on dense held
        vectors: each query's inner products read only the held vectors' columns where the query is
        non-zero, from a transposed float32 copy (built on first use), the ``k`` best allowed rows best first,
        ties by row; 4x cheaper than faiss's full scan on 38.5k memories."""
        if self._transposed is None:
            self._transposed = np.ascontiguousarray(self._vectors.T)
        vt = self._transposed
        allowed = np.flatnonzero(mask) if mask is not None else None
        for row in range(len(q)):
            nz = np.flatnonzero(q[row])
            every = q[row, nz] @ vt[nz] if len(nz) else np.zeros(self.ntotal, dtype=np.float32)
            s = every if allowed is None else every[allowed]
            top = _best(s, k)
            scores[row, : len(top)] = s[top]
            ids[row, : len(top)] = top if allowed is None else allowed[top]
        return scores, ids

    def recall_against_exact(self, queries: np.ndarray, k: int) -> float:
        """Mean share of the exact top-``k`` (by brute force on the same vectors) that the index returns.

        1.0 for an exact index; for HNSW, the recall@k its approximation costs on these queries.
        """
        q = self._as_matrix(queries, "query")
        k = _check_k(k)
        if not self.is_hnsw or not self.ntotal or not len(q):
            return 1.0
        if self._exact is None:
            exact = self._faiss.IndexFlatIP(self.dim)
            exact.add(self._vectors)
            self._exact = exact
        _, truth = self._exact.search(q, k)
        _, found = self.search(q, k)
        hits = [
            len(set(t[t >= 0].tolist()) & set(f[f >= 0].tolist())) / max(1, int((t >= 0).sum()))
            for t, f in zip(truth, found, strict=True)
        ]
        return float(np.mean(hits))

    def __repr__(self) -> str:
        kind = "hnsw" if self.is_hnsw else "flat"
        return f"VectorIndex(dim={self.dim}, n={self.ntotal}, kind={kind!r})"


#: bm25s tokens of recent queries, by query text (insertion order: the oldest is dropped first).
_QUERY_TOKENS: dict[str, tuple[str, ...]] = {}


class BM25Index:
    """Lucene BM25 (``k1`` 1.5, ``b`` 0.75) over ``texts``, tokenised by bm25s (lower-cased, ``\\w\\w+``
    tokens, English stop words removed), with the corpus statistics of the rows a query may see.

    bm25s precomputes IDF and the average document length over every row; a time mask would then still
    let rows written after the query weigh its terms. Here scores are computed per query from the
    term-frequency columns: with a ``mask`` the document count, each term's document frequency and the
    average length are those of the visible rows only, so a masked row changes nothing — the scores equal
    those of an index built from the visible rows alone. Without a mask they equal bm25s's (the same
    tokens, the same formula: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``,
    ``tf / (tf + k1 (1 - b + b dl / avgdl))``).

    Args:
        texts: the documents; ids are their positions.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        self._bm25s = bm25s
        self.n = len(texts)
        self.k1, self.b = float(k1), float(b)
        self._vocab: dict[str, int] = {}
        self._indptr = np.zeros(1, dtype=np.int64)
        self._docs = np.zeros(0, dtype=np.int64)
        self._tf = np.zeros(0, dtype=np.float64)
        self._length = np.zeros(self.n, dtype=np.float64)
        self._norm: np.ndarray | None = None  # the length normalisation under every row's statistics
        if self.n:
            tok = bm25s.tokenize(
                [clean_text(t) for t in texts], stopwords="en", return_ids=True, show_progress=False
            )
            self._vocab = dict(tok.vocab)
            lengths = np.fromiter((len(d) for d in tok.ids), dtype=np.int64, count=self.n)
            self._length = lengths.astype(np.float64)
            doc = np.repeat(np.arange(self.n, dtype=np.int64), lengths)
            term = np.fromiter((t for d in tok.ids for t in d), dtype=np.int64, count=int(lengths.sum()))
            # one (term, doc) cell per distinct pair, with its count; sorted by term, then doc
            key = term * self.n + doc
            uniq, counts = np.unique(key, return_counts=True)
            terms = uniq // self.n
            self._docs = (uniq % self.n).astype(np.int64)
            self._tf = counts.astype(np.float64)
            self._indptr = np.searchsorted(terms, np.arange(len(self._vocab) + 1)).astype(np.int64)

    def __len__(self) -> int:
        return self.n

    def tokens(self, query: str) -> list[str]:
        """The query's tokens as the index sees them (stop words removed); the last few queries' tokens are
        kept process-wide (several indexes search the same query: entry search's legs, flat's)."""
        got = _QUERY_TOKENS.get(query)
        if got is None:
            tok = self._bm25s.tokenize(
                [clean_text(query)], stopwords="en", return_ids=False, show_progress=False
            )
            got = tuple(tok[0])
            if len(_QUERY_TOKENS) >= 256:
                _QUERY_TOKENS.pop(next(iter(_QUERY_TOKENS)))
            _QUERY_TOKENS[query] = got
        return list(got)

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray:
        """``float64 [n]``: every row's BM25 score for ``query`` under the statistics of the ``mask``-ed
        rows (0 for a row outside the mask or matching no token)."""
        mask = _check_mask(mask, self.n)
        out = np.zeros(self.n, dtype=np.float64)
        if not self.n:
            return out
        ids = [self._vocab[t] for t in self.tokens(query) if t in self._vocab]
        if not ids:
            return out
        if mask is None:
            if self._norm is None:  # the statistics of every row: computed once
                avg = float(self._length.mean())
                avg = avg if avg > 0 else 1.0
                self._norm = self.k1 * ((1.0 - self.b) + self.b * self._length / avg)
            n_docs, norm = float(self.n), self._norm
        else:
            n_docs = float(mask.sum())
            if not n_docs:
                return out
            avg = float(self._length[mask].mean())
            avg = avg if avg > 0 else 1.0
            norm = self.k1 * ((1.0 - self.b) + self.b * self._length / avg)
        for t in ids:  # a repeated query token counts each time, as in bm25s
            lo, hi = self._indptr[t], self._indptr[t + 1]
            docs, tf = self._docs[lo:hi], self._tf[lo:hi]
            if mask is not None:
                keep = mask[docs]
                docs, tf = docs[keep], tf[keep]
            df = len(docs)
            if not df:
                continue
            idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            out[docs] += idf * tf / (norm[docs] + tf)
        return out

    def search(self, query: str, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best-scoring visible documents that match at least one query token.

        Returns:
            ``(raw BM25 scores float32, ids int64)``, best first, ties by id; empty arrays for an empty or
            all-stop-word query.
        """
        k = _check_k(k)
        scores = self.scores(query, mask).astype(np.float32)
        top = _top_k(scores, k)
        return scores[top], top.astype(np.int64)


def fts5_match_query(query: str, joiner: str = " OR ") -> str:
    """Signet's FTS5 ``MATCH`` expression: each whitespace token stripped of ``":()^*`` and quoted,
    empty tokens dropped, joined with ``OR``. ``""`` when nothing is left.

    >>> fts5_match_query('deploy "ka-6" (prod)*')
    '"deploy" OR "ka-6" OR "prod"'
    """
    tokens = [_FTS_STRIP.sub("", t) for t in clean_text(query).split()]
    return joiner.join(f'"{t}"' for t in tokens if t)


class FTS5Index:
    """SQLite FTS5 ``bm25()`` over a ``memories_fts`` table, queried as Signet queries it.

    Args:
        texts: the documents, written to an in-memory ``memories`` table (row ``i`` has rowid ``i + 1``) and
            indexed by ``memories_fts`` with Signet's own DDL.

    Signet's SQL, run verbatim (with a tie-break on rowid for determinism)::

        SELECT m.rowid, bm25(memories_fts) AS raw_score FROM memories_fts
        JOIN memories m ON memories_fts.rowid = m.rowid
        WHERE memories_fts MATCH ? ORDER BY raw_score LIMIT ?

    A ``mask`` is applied by reading further down the same ordering until ``k`` visible rows are found, so
    the result is exactly the best ``k`` visible rows. BM25's statistics (IDF, average length) are those of
    the rows in the index, masked rows included, as SQLite keeps them. So that rows written after a query
    do not weigh its terms, an index built with ``created`` holds, for a search with ``at``, exactly the rows
    created at or before ``at`` — as Signet's own index held them then: rows are deleted from or re-inserted
    into ``memories_fts`` (FTS5's ``'delete'`` command for external content) in creation order, so moving
    between nearby query times costs a few row updates and the statistics are those of an index built from
    the past rows alone. As in Signet, a query FTS5 rejects gives no keyword results.

    Args:
        texts: the documents.
        created: optional ``[n]`` creation times (any sortable numbers, e.g. ns since the epoch) enabling
            ``search(..., at=...)``.
    """

    def __init__(
        self,
        texts: Sequence[str] | None = None,
        *,
        created: np.ndarray | None = None,
        _conn: sqlite3.Connection | None = None,
    ) -> None:
        if _conn is not None:
            self._conn = _conn
        else:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
            with self._conn:
                self._conn.execute("CREATE TABLE memories (id TEXT, content TEXT NOT NULL)")
                self._conn.execute(
                    "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content=memories, "
                    "content_rowid=rowid)"
                )
                self._conn.executemany(
                    "INSERT INTO memories (rowid, id, content) VALUES (?, ?, ?)",
                    ((i + 1, str(i), clean_text(t)) for i, t in enumerate(texts or ())),
                )
                self._conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('rebuild')")
        rowids = np.asarray([r[0] for r in self._conn.execute("SELECT rowid FROM memories ORDER BY rowid")])
        self.ids: list[str] = [r[0] for r in self._conn.execute("SELECT id FROM memories ORDER BY rowid")]
        self.n = len(rowids)
        self._position = {int(r): i for i, r in enumerate(rowids)}
        self._rowids = rowids
        self._order: np.ndarray | None = None
        if created is not None:
            created = np.asarray(created)
            if created.shape != (self.n,):
                raise ValueError(f"created must have shape ({self.n},), got {created.shape}")
            self._order = np.argsort(created, kind="stable")
            self._sorted = created[self._order]
            self._present = self.n  # rows order[:present] are in memories_fts

    def _sync(self, at: Any) -> None:
        """Make ``memories_fts`` hold exactly the rows created at or before ``at``."""
        assert self._order is not None
        key = int(np.searchsorted(self._sorted, at, side="right"))
        if key == self._present:
            return
        lo, hi = sorted((key, self._present))
        rowids = [int(self._rowids[i]) for i in self._order[lo:hi]]
        with self._conn:
            for chunk in range(0, len(rowids), 500):
                part = rowids[chunk : chunk + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT rowid, content FROM memories WHERE rowid IN ({marks})", part
                ).fetchall()
                if key < self._present:
                    self._conn.executemany(
                        "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES('delete', ?, ?)", rows
                    )
                else:
                    self._conn.executemany("INSERT INTO memories_fts(rowid, content) VALUES (?, ?)", rows)
        self._present = key

    @classmethod
    def from_store(cls, path: str | os.PathLike[str]) -> FTS5Index:
        """Search the ``memories_fts`` of an existing Signet (or signet_rl) store file, read-only.

        Positions follow ``memories.rowid`` order (deleted memories included: mask them); :attr:`ids` holds
        the memory id at each position.
        """
        from signet_rl.graph.store import open_read_only

        conn = open_read_only(Path(path))
        return cls(_conn=conn)

    def __len__(self) -> int:
        return self.n

    _SQL = (
        "SELECT m.rowid, bm25(memories_fts) AS raw_score FROM memories_fts "
        "JOIN memories m ON memories_fts.rowid = m.rowid "
        "WHERE memories_fts MATCH ? ORDER BY raw_score, m.rowid"
    )
    #: :attr:`_SQL` without the join (a third faster on 38k memories): the same rows whenever every index
    #: row has its ``memories`` row, which :meth:`_rows` checks (an orphan index row falls back to the join).
    _FAST_SQL = (
        "SELECT rowid, bm25(memories_fts) AS raw_score FROM memories_fts "
        "WHERE memories_fts MATCH ? ORDER BY raw_score, rowid"
    )

    def _rows(self, match: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        """(position, raw bm25) of the best ``k`` visible matches: Signet's ``LIMIT k`` without a mask;
        with one, ``LIMIT 4k`` first and, if too few of those are visible, the whole ordering read lazily
        (orphan index rows, which the join of :attr:`_SQL` drops, skipped)."""
        try:
            limit = k if mask is None else 4 * k
            position = self._position
            rows = self._conn.execute(self._FAST_SQL + " LIMIT ?", (match, limit)).fetchall()
            if not all(int(r) in position for r, _ in rows):  # an index row without its memory row
                rows = self._conn.execute(self._SQL + " LIMIT ?", (match, limit)).fetchall()
            found = [(position[int(r)], s) for r, s in rows]
            if mask is None:
                return found
            found = [(p, s) for p, s in found if mask[p]]
            if len(found) >= k or len(rows) < limit:
                return found[:k]
            found = []
            cursor = self._conn.execute(self._FAST_SQL, (match,))
            while len(found) < k:
                batch = cursor.fetchmany(1024)
                if not batch:
                    break
                hits = ((position[int(r)], s) for r, s in batch if int(r) in position)
                found += [(p, s) for p, s in hits if mask[p]]
            cursor.close()
            return found[:k]
        except sqlite3.OperationalError:  # Signet: "FTS search failed, continuing with vector only"
            return []

    def search(
        self, query: str, k: int, mask: np.ndarray | None = None, raw: bool = False, at: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` visible rows matching any token of ``query``.

        Args:
            query: free text; tokenised and quoted by :func:`fts5_match_query`.
            k: ``LIMIT``.
            mask: boolean ``[n]`` of visible rows.
            at: the query time, in the units of ``created``: the index holds the rows created at or before
                it (their statistics only). ``None``: every row.
            raw: return FTS5's raw ``bm25()`` values (negative, lower is better) instead of
                ``|bm25| / max |bm25|``.

        Returns:
            ``(scores float32, ids int64)``, best first; empty arrays when nothing matches.
        """
        k = _check_k(k)
        mask = _check_mask(mask, self.n)
        match = fts5_match_query(query)
        empty = np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        if not match or not self.n:
            return empty
        if self._order is not None:
            self._sync(self._sorted[-1] if at is None else at)
        elif at is not None:
            raise ValueError("FTS5Index.search(at=...) needs an index built with created=")
        found = self._rows(match, k, mask)
        if not found:
            return empty
        ids = np.asarray([p for p, _ in found], dtype=np.int64)
        scores = np.asarray([s for _, s in found], dtype=np.float64)
        if not raw:
            mag = np.abs(scores)
            top = mag.max()
            scores = mag / (top if top > 0 else 1.0)
        return scores.astype(np.float32), ids

    def close(self) -> None:
        """Close the SQLite connection."""
        self._conn.close()
