"""The flat-retrieval baseline: a reproduction of Signet's hybrid recall and per-prompt injection.

:class:`FlatRetriever` ranks a flat pile of documents for a query the way Signet's ``hybridRecall`` does
(Signet 0.58.1, ``packages/daemon/src/memory-search.ts``) and then applies the per-prompt injection rules of
its ``user-prompt-submit`` hook (``hooks.ts``). Every knob is a constructor argument whose default is
Signet's.

What is reproduced, in order:

1. **Query shape** (hook): at most ``keyword_terms`` (12) keyword terms — hyphenated identifiers, then
   lower-cased words of three or more characters that are not stop words nor all digits
   (:func:`~signet_rl.text.terms.keyword_terms`); the vector query is the prompt's first
   ``vector_prefix_chars`` (200) characters. A prompt with no keyword term gets nothing (``require_terms``).
2. **Keyword leg** (``hybridRecall`` step 1): ``keyword="fts5"`` runs SQLite FTS5 exactly as Signet does
   (terms stripped of ``":()^*``, quoted, joined with ``OR``, ``ORDER BY bm25 LIMIT top_k``, scores
   ``|bm25| / max |bm25|``); ``keyword="bm25s"`` uses bm25s with scores min-max normalised in the batch.
3. **Vector leg** (step 2): the ``top_k`` (20) nearest documents by cosine similarity (exact faiss search).
4. **Fusion** (step 3): :func:`~signet_rl.retrieval.fusion.linear_fusion` (``alpha`` 0.7, ``min_score``
   0.1), or reciprocal-rank fusion (``fusion="rrf"``, constant ``rrf_k`` 60) whose score is divided by its
   largest possible value (``legs / (rrf_k + 1)``) so that ``min_score`` and ``gate`` keep a meaning.
5. **Recall output** (step 5): the best ``limit`` (10) results, each cut to ``truncate_chars`` (500).
6. **Per-prompt injection** (hook): nothing when the best score is below ``gate`` (0.4); otherwise results
   in rank order while their characters fit ``max_chars`` (500; Signet stops at the first that does not
   fit), then at most ``max_results`` (5). Skipping memories injected in the last ``dedup_window`` prompts
   of a session is off by default (``0``; Signet uses 5), because evaluation queries are independent; when
   on, a session is ``query.meta["session_key"]`` (default: the graph id).

Step 4 of ``hybridRecall`` is **not** included: no rehearsal boost, no graph boost, no traversal boost and
no embedding reranker (this store has no access history, and graph-aware retrieval is what desire paths
is compared against). ``importance_min`` (0.3, the hook's filter) applies to both legs. Signet's rule that
``min_score`` becomes 0.3 when only ``alpha`` is configured is not reproduced (``min_score`` is explicit).

**Pool.** Every non-deleted memory of each graph (``Unit(kind="memory")``), plus, when
``dataset.meta["pool_attribute_aspects"]`` names aspects (LoCoMo: ``["observations"]``), the non-deleted
attributes under aspects of those names as their own documents (``Unit(kind="attribute")``). One set of
indexes is built per graph; embeddings go through :class:`~signet_rl.text.encoders.CachedEncoder`.

**Time.** A query sees only documents created at or before ``query.timestamp`` (when set), through the
indexes' masks. Keyword statistics (IDF) are those of the whole graph.

**Bad input.** An empty or whitespace-only query returns ``[]``. A query of any length works: it is cut to
its first :data:`~signet_rl.text.terms.MAX_QUERY_CHARS` (8,192) characters with a logged warning
(:func:`~signet_rl.text.terms.capped_query`), of which only the first 200 reach the vector leg and 12
terms the keyword leg. Invalid UTF-8 is handled, never an
error: ``bytes`` are decoded as UTF-8 with U+FFFD for bad sequences and lone surrogates in a ``str`` become
U+FFFD (:func:`~signet_rl.text.terms.clean_text`), in queries and documents alike. ``budget_chars`` of 0
or below raises :func:`~signet_rl.core.types.fit_budget`'s ``ValueError``; a positive budget is applied
with :func:`~signet_rl.core.types.fit_budget`. A query for a graph that was not indexed raises
``ValueError`` naming it.

    >>> from signet_rl.datasets.synthetic import generate
    >>> ds = generate("tiny")
    >>> flat = flat_variant("flat_signet", cache=False)
    >>> flat.index(ds)
    >>> units = flat.retrieve(ds.queries[0])
    >>> len(units) <= 5 and sum(u.chars for u in units) <= 500
    True
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from signet_rl.core.checks import check_integer, check_probability, check_range
from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.retrieval.fusion import linear_fusion, min_max, reciprocal_rank_fusion
from signet_rl.retrieval.indexes import BM25Index, FTS5Index, VectorIndex
from signet_rl.text.encoders import CachedEncoder, Encoder, make_encoder
from signet_rl.text.terms import capped_query, clean_text, keyword_terms, vector_query

__all__ = ["FLAT_VARIANTS", "UNCAPPED", "FlatRetriever", "flat_variant"]

KeywordLeg = Literal["fts5", "bm25s"]
FusionKind = Literal["linear", "rrf"]

#: Overrides that switch off every per-prompt and per-result cap (and the recall limit), so that in a
#: budgeted comparison the budget is the only cap: ``flat_variant("flat_vector", **UNCAPPED)``.
UNCAPPED: dict[str, Any] = {"limit": None, "truncate_chars": None, "max_results": None, "max_chars": None}

#: Named variants and the knobs they change from Signet's defaults.
FLAT_VARIANTS: dict[str, dict[str, Any]] = {
    "flat_signet": {},
    "flat_signet_uncapped": dict(UNCAPPED),
    "flat_top15": {"limit": 15, "max_results": 15, "gate": None, "max_chars": None},
    "flat_hybrid_bm25s": {"keyword": "bm25s"},
    "flat_vector": {"keyword": None},
    "flat_bm25": {"keyword": "bm25s", "vector": False},
}


@dataclass
class _Pool:
    """One graph's documents and their indexes."""

    keys: list[str]
    position: dict[str, int]
    items: list[str]
    kinds: list[str]
    texts: list[str]
    created: np.ndarray  # int64 ns since the epoch, UTC
    eligible: np.ndarray  # bool: passes importance_min
    vector: VectorIndex | None
    keyword: FTS5Index | BM25Index | None


def _ns(values: pd.Series) -> np.ndarray:
    idx = pd.DatetimeIndex(values)
    if idx.tz is None:
        idx = idx.tz_localize("UTC")
    return np.asarray(idx.as_unit("ns").asi8, dtype=np.int64)


def _timestamp_ns(ts: Any) -> int:
    t = pd.Timestamp(ts)
    if t.tzinfo is None:
        t = t.tz_localize("UTC")
    return int(t.value)


class FlatRetriever:
    """Signet's hybrid recall with its per-prompt injection rules (see the module docstring).

    Args:
        keyword: the keyword leg, ``"fts5"`` (Signet's), ``"bm25s"`` or ``None`` (vector only).
        vector: whether the vector leg runs.
        encoder: an encoder name for :func:`~signet_rl.text.encoders.make_encoder` (``"hashing"``,
            ``"minilm"``) or an :class:`~signet_rl.text.encoders.Encoder`.
        fusion: ``"linear"`` (Signet's) or ``"rrf"``.
        alpha: vector weight of linear fusion.
        top_k: candidates per leg.
        min_score: fused scores below it are dropped.
        gate: inject nothing when the best fused score is below it (``None``: never gate).
        max_results: at most this many units per prompt (``None``: no cap).
        max_chars: per-prompt character cap, filled in rank order up to the first unit that does not fit
            (``None``: no cap; a budgeted comparison then makes the budget the only cap).
        keyword_terms: at most this many keyword terms (``None``: all).
        vector_prefix_chars: the vector query is the prompt's first this many characters (``None``: all).
        importance_min: documents of lower importance are never returned.
        name: the retriever's name in result tables.
        limit: recall's result limit before the per-prompt rules (``None``: every fused result).
        truncate_chars: each result's text is cut to this many characters (``None``: never cut).
        rrf_k: the reciprocal-rank-fusion constant.
        require_terms: return nothing for a prompt with no keyword term (Signet's hook does).
        dedup_window: skip documents injected in the last this many prompts of the same session (0: off).
        cache: cache document embeddings on disk (:class:`~signet_rl.text.encoders.CachedEncoder`).
        cache_dir: where (default :func:`~signet_rl.text.encoders.default_cache_dir`).
        hnsw_above: use HNSW for graphs with more documents than this (``None``: exact search).
        progress: show a progress bar while embedding.

    Raises:
        ValueError: a knob outside its allowed values (the message names it).
    """

    def __init__(
        self,
        keyword: KeywordLeg | None = "fts5",
        vector: bool = True,
        encoder: str | Encoder = "hashing",
        fusion: FusionKind = "linear",
        alpha: float = 0.7,
        top_k: int = 20,
        min_score: float = 0.1,
        gate: float | None = 0.4,
        max_results: int | None = 5,
        max_chars: int | None = 500,
        keyword_terms: int | None = 12,
        vector_prefix_chars: int | None = 200,
        importance_min: float = 0.3,
        name: str = "flat",
        *,
        limit: int | None = 10,
        truncate_chars: int | None = 500,
        rrf_k: int = 60,
        require_terms: bool = True,
        dedup_window: int = 0,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        hnsw_above: int | None = None,
        progress: bool = False,
    ) -> None:
        if keyword not in ("fts5", "bm25s", None):
            raise ValueError(f"keyword must be 'fts5', 'bm25s' or None, got {keyword!r}")
        if keyword is None and not vector:
            raise ValueError("a flat retriever needs at least one leg: keyword is None and vector is False")
        if fusion not in ("linear", "rrf"):
            raise ValueError(f"fusion must be 'linear' or 'rrf', got {fusion!r}")
        check_probability("alpha", alpha)
        check_integer("top_k", top_k, 1)
        for label, value in (("min_score", min_score), ("importance_min", importance_min)):
            if not math.isfinite(value):
                raise ValueError(f"{label} must be a finite number, got {value}")
        if gate is not None and not math.isfinite(gate):
            raise ValueError(f"gate must be None or a finite number, got {gate}")
        for label, v in (
            ("max_results", max_results),
            ("max_chars", max_chars),
            ("keyword_terms", keyword_terms),
            ("vector_prefix_chars", vector_prefix_chars),
            ("limit", limit),
            ("truncate_chars", truncate_chars),
        ):
            check_range(label, v, 1, integer=True, optional=True)
        check_range("rrf_k", rrf_k, 0)
        check_range("dedup_window", dedup_window, 0)
        self.name = name
        self.keyword: KeywordLeg | None = keyword
        self.vector = bool(vector)
        self.fusion: FusionKind = fusion
        self.alpha = float(alpha)
        self.top_k = top_k
        self.min_score = float(min_score)
        self.gate = None if gate is None else float(gate)
        self.max_results = max_results
        self.max_chars = max_chars
        self.keyword_terms = keyword_terms
        self.vector_prefix_chars = vector_prefix_chars
        self.importance_min = float(importance_min)
        self.limit = limit
        self.truncate_chars = truncate_chars
        self.rrf_k = int(rrf_k)
        self.require_terms = bool(require_terms)
        self.dedup_window = int(dedup_window)
        self.hnsw_above = hnsw_above
        self.progress = progress
        self.encoder: Encoder | None = None
        self._query_encoder: Encoder | None = None
        if self.vector:
            enc = make_encoder(encoder) if isinstance(encoder, str) else encoder
            if cache and not isinstance(enc, CachedEncoder):
                enc = CachedEncoder(enc, cache_dir)
            self.encoder = enc
            self._query_encoder = enc.inner if isinstance(enc, CachedEncoder) else enc
        self._pools: dict[str, _Pool] = {}
        self._query_vectors: dict[str, np.ndarray] = {}
        self._recent: dict[str, deque[set[str]]] = {}

    # ------------------------------------------------------------------------------------------------
    # configuration

    def config(self) -> dict[str, Any]:
        """The knobs, JSON-able (for run parameters)."""
        return {
            "name": self.name,
            "keyword": self.keyword,
            "vector": self.vector,
            "encoder": self.encoder.name if self.encoder is not None else None,
            "fusion": self.fusion,
            "alpha": self.alpha,
            "top_k": self.top_k,
            "min_score": self.min_score,
            "gate": self.gate,
            "max_results": self.max_results,
            "max_chars": self.max_chars,
            "keyword_terms": self.keyword_terms,
            "vector_prefix_chars": self.vector_prefix_chars,
            "importance_min": self.importance_min,
            "limit": self.limit,
            "truncate_chars": self.truncate_chars,
            "rrf_k": self.rrf_k,
            "require_terms": self.require_terms,
            "dedup_window": self.dedup_window,
            "hnsw_above": self.hnsw_above,
        }

    def __repr__(self) -> str:
        return f"FlatRetriever({self.config()})"

    # ------------------------------------------------------------------------------------------------
    # indexing

    @staticmethod
    def _documents(graph: KnowledgeGraph, aspect_names: list[str]) -> pd.DataFrame:
        mem = graph.memories[~graph.memories["is_deleted"]]
        docs = [
            pd.DataFrame(
                {
                    "item": mem["id"].to_numpy(dtype=object),
                    "kind": "memory",
                    "text": mem["content"].to_numpy(dtype=object),
                    "created": _ns(mem["created_at"]),
                    "importance": mem["importance"].to_numpy(dtype=float),
                }
            )
        ]
        if aspect_names:
            aspects = graph.aspects.loc[graph.aspects["name"].isin(aspect_names), "id"]
            att = graph.attributes
            att = att[att["aspect_id"].isin(aspects) & (att["status"] != "deleted")]
            docs.append(
                pd.DataFrame(
                    {
                        "item": att["id"].to_numpy(dtype=object),
                        "kind": "attribute",
                        "text": att["content"].to_numpy(dtype=object),
                        "created": _ns(att["created_at"]),
                        "importance": att["importance"].to_numpy(dtype=float),
                    }
                )
            )
        return pd.concat(docs, ignore_index=True)

    def index(self, dataset: Dataset) -> None:
        """Build one set of indexes per graph of ``dataset`` (never reading its ground truth)."""
        aspect_names = [str(a) for a in (dataset.meta.get("pool_attribute_aspects") or [])]
        frames = {gid: self._documents(g, aspect_names) for gid, g in dataset.graphs.items()}
        texts = {gid: [clean_text(t) for t in f["text"].tolist()] for gid, f in frames.items()}
        vectors: dict[str, np.ndarray] = {}
        if self.encoder is not None:
            every = [t for gid in frames for t in texts[gid]]
            emb = self.encoder.encode(every, progress=self.progress)
            start = 0
            for gid in frames:
                vectors[gid] = emb[start : start + len(texts[gid])]
                start += len(texts[gid])
        pools: dict[str, _Pool] = {}
        for gid, frame in frames.items():
            items = [str(i) for i in frame["item"].tolist()]
            kinds = frame["kind"].tolist()
            keys = (
                items
                if len(set(items)) == len(items)
                else [f"{k}:{i}" for k, i in zip(kinds, items, strict=True)]
            )
            vector_index = None
            if self.encoder is not None:
                vector_index = VectorIndex(self.encoder.dim, hnsw_above=self.hnsw_above)
                vector_index.add(vectors[gid])
            keyword_index: FTS5Index | BM25Index | None = None
            if self.keyword == "fts5":  # holds, per query, only the rows created by then (statistics too)
                keyword_index = FTS5Index(texts[gid], created=frame["created"].to_numpy(dtype=np.int64))
            elif self.keyword == "bm25s":
                keyword_index = BM25Index(texts[gid])
            pools[gid] = _Pool(
                keys=keys,
                position={k: i for i, k in enumerate(keys)},
                items=items,
                kinds=kinds,
                texts=texts[gid],
                created=frame["created"].to_numpy(dtype=np.int64),
                eligible=frame["importance"].to_numpy(dtype=float) >= self.importance_min,
                vector=vector_index,
                keyword=keyword_index,
            )
        self._pools = pools
        self._recent.clear()

    # ------------------------------------------------------------------------------------------------
    # retrieval

    def _encode_query(self, text: str) -> np.ndarray:
        vec = self._query_vectors.get(text)
        if vec is None:
            assert self._query_encoder is not None
            vec = np.asarray(self._query_encoder.encode([text]), dtype=np.float32)[0]
            if len(self._query_vectors) >= 100_000:
                self._query_vectors.clear()
            self._query_vectors[text] = vec
        return vec

    def _pool(self, graph_id: str) -> _Pool:
        if not self._pools:
            raise RuntimeError(f"{self.name}: call index(dataset) before retrieve()")
        try:
            return self._pools[graph_id]
        except KeyError:
            known = ", ".join(sorted(self._pools)[:10])
            raise ValueError(f"{self.name}: graph {graph_id!r} was not indexed (indexed: {known})") from None

    def scores(self, query: Query) -> list[tuple[str, float, dict[str, float]]]:
        """The fused ranking before the recall limit and the per-prompt rules (for analysis).

        Returns:
            ``[(key, fused score, {"vector": ..., "keyword": ...})]``, best first; ``[]`` for an empty query
            or (with ``require_terms``) one without keyword terms.
        """
        pool = self._pool(query.graph_id)
        text = capped_query(query).text
        if not text.strip():
            return []
        terms = keyword_terms(text, self.keyword_terms)
        if self.require_terms and not terms:
            return []
        mask = pool.eligible
        at = None if query.timestamp is None else _timestamp_ns(query.timestamp)
        if at is not None:
            mask = mask & (pool.created <= at)
        keyword: dict[str, float] = {}
        if pool.keyword is not None and terms:
            if isinstance(pool.keyword, FTS5Index):
                s, ids = pool.keyword.search(" ".join(terms), self.top_k, mask, at=at)
            else:  # BM25Index: statistics of the masked rows
                s, ids = pool.keyword.search(" ".join(terms), self.top_k, mask)
            keyword = {pool.keys[i]: float(v) for v, i in zip(s.tolist(), ids.tolist(), strict=True)}
            if self.keyword == "bm25s":
                keyword = min_max(keyword)
        vector: dict[str, float] = {}
        vq = vector_query(text, self.vector_prefix_chars)
        if pool.vector is not None and vq:
            qv = self._encode_query(vq)
            if qv.any():
                s, ids = pool.vector.search(qv[None, :], self.top_k, mask)
                vector = {
                    pool.keys[i]: float(v)
                    for v, i in zip(s[0].tolist(), ids[0].tolist(), strict=True)
                    if i >= 0
                }
        if self.fusion == "linear":
            fused = linear_fusion(vector, keyword, self.alpha, self.min_score)
        else:
            legs = [list(leg) for leg in (vector, keyword) if leg]  # each leg's dict is in rank order
            n_legs = int(pool.keyword is not None) + int(pool.vector is not None)
            top = n_legs / (self.rrf_k + 1)
            fused = [
                (k, s / top) for k, s in reciprocal_rank_fusion(legs, self.rrf_k) if s / top >= self.min_score
            ]
        return [(k, s, {"vector": vector.get(k, 0.0), "keyword": keyword.get(k, 0.0)}) for k, s in fused]

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        """Units for ``query``, best first; ``[]`` when Signet would inject nothing.

        Raises:
            ValueError: ``budget_chars`` of 0 or below, or a graph that was not indexed.
        """
        if budget_chars is not None:
            fit_budget([], budget_chars)  # validates the budget (raises for 0 or below)
        pool = self._pool(query.graph_id)
        ranked = self.scores(query)
        if self.limit is not None:
            ranked = ranked[: self.limit]
        if not ranked or (self.gate is not None and ranked[0][1] < self.gate):
            return []
        units: list[Unit] = []
        used = 0
        for key, score, legs in ranked:
            pos = pool.position[key]
            text = pool.texts[pos]
            if self.truncate_chars is not None:
                text = text[: self.truncate_chars]
            if self.max_chars is not None:
                if used + len(text) > self.max_chars:
                    break
                used += len(text)
            source = (
                "hybrid"
                if legs["vector"] > 0 and legs["keyword"] > 0
                else ("vector" if legs["vector"] > 0 else "keyword")
            )
            units.append(
                Unit(
                    text=text,
                    items=(pool.items[pos],),
                    score=float(score),
                    kind=pool.kinds[pos],
                    meta={"source": source, "vector": legs["vector"], "keyword": legs["keyword"]},
                )
            )
        if self.max_results is not None:
            units = units[: self.max_results]
        if self.dedup_window:
            units = self._dedup(query, units)
        return fit_budget(units, budget_chars) if budget_chars is not None else units

    def _dedup(self, query: Query, units: list[Unit]) -> list[Unit]:
        session = str(query.meta.get("session_key", query.graph_id))
        recent = self._recent.setdefault(session, deque(maxlen=self.dedup_window))
        seen = set().union(*recent) if recent else set()
        units = [u for u in units if not set(u.items) & seen]
        if units:
            recent.appendleft({i for u in units for i in u.items})
        return units

    def reset_sessions(self) -> None:
        """Forget which documents were injected in earlier prompts (the ``dedup_window`` state)."""
        self._recent.clear()


def flat_variant(name: str, **overrides: Any) -> FlatRetriever:
    """A named flat-baseline variant, with any knob overridden.

    ==========================  ===========================================================================
    ``flat_signet``             FTS5 + vector, linear fusion, every Signet default and cap
    ``flat_signet_uncapped``    the same with the caps off (no limit, truncation, 5-result or 500-char cap)
    ``flat_top15``              the "top 15 memories" variant: 15 results, no gate, no per-prompt char cap
    ``flat_hybrid_bm25s``       bm25s keyword leg + vector
    ``flat_vector``             vector leg only
    ``flat_bm25``               bm25s keyword leg only
    ==========================  ===========================================================================

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if name not in FLAT_VARIANTS:
        raise ValueError(f"unknown flat variant {name!r}; known variants: {', '.join(FLAT_VARIANTS)}")
    knobs: dict[str, Any] = {**FLAT_VARIANTS[name], "name": name, **overrides}
    return FlatRetriever(**knobs)
