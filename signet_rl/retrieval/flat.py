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

Step 4 of ``hybridRecall`` is **not** included by default: no rehearsal boost, no graph boost, no traversal
boost and no embedding reranker (this store has no access history). ``graph_boost=True``
(``flat_signet_full``) adds its graph boost, ``0.85·score + 0.15`` for the documents of the entities whose
names the query contains (whole words, case-insensitive) and of their one-hop neighbours over dependencies
(either direction), applied to the fused candidates; ``constraints=True`` puts Signet's always-injected
constraints section first (the active constraints of those entities written by the query's time, most
important first, whole constraints within 1,000 characters or the budget). ``importance_min`` (0.3, the
hook's filter) applies to both legs; ``None`` switches it off (``UNCAPPED`` does).

Beyond Signet, for the strongest-flat search (``experiments/best_flat.py``): linear fusion of min-max
normalised legs (``fusion="minmax"``), and window expansion (``window=w``: each hit is followed by the
memories up to ``w`` places before and after it in time order, nearest first, that the query may see and
that were not injected yet; meant for ordered memories such as LoCoMo's turns). ``best_flat`` resolves to
the choice that script froze for the dataset's family in ``conf/best_flat.yaml`` (:func:`best_flat`).

Signet's rule that ``min_score`` becomes 0.3 when only ``alpha`` is configured is not reproduced
(``min_score`` is explicit).

**Pool.** Every non-deleted memory of each graph (``Unit(kind="memory")``), plus, when
``dataset.meta["pool_attribute_aspects"]`` names aspects (LoCoMo: ``["observations"]``), the non-deleted
attributes under aspects of those names as their own documents (``Unit(kind="attribute")``). One set of
indexes is built per graph; embeddings go through :class:`~signet_rl.text.encoders.CachedEncoder`. A dataset
of one graph is indexed by :meth:`~FlatRetriever.index`; one of several (LoCoMo's conversations) graph by
graph at each graph's first query, so an evaluation of a few conversations' questions embeds those alone (the
indexes are the same: each graph's are its own).

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
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from signet_rl.core.checks import check_integer, check_probability, check_range
from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.retrieval.fusion import linear_fusion, min_max, minmax_fusion, reciprocal_rank_fusion
from signet_rl.retrieval.indexes import BM25Index, FTS5Index, VectorIndex
from signet_rl.text.encoders import QUERY_VECTORS, CachedEncoder, Encoder, encode_query, make_encoder
from signet_rl.text.terms import capped_query, clean_text, keyword_terms, vector_query

__all__ = [
    "BEST_FLAT",
    "FLAT_VARIANTS",
    "UNCAPPED",
    "BestFlat",
    "FlatRetriever",
    "best_flat",
    "best_flat_choice",
    "dataset_family",
    "flat_variant",
    "load_best_flat",
]

KeywordLeg = Literal["fts5", "bm25s"]
FusionKind = Literal["linear", "minmax", "rrf"]

#: Overrides that switch off every per-prompt and per-result cap (the recall limit, truncation, the 5-result
#: and 500-character caps and the hook's ``importance_min`` filter), so that in a budgeted comparison the
#: budget is the only cap: ``flat_variant("flat_vector", **UNCAPPED)``.
UNCAPPED: dict[str, Any] = {
    "limit": None, "truncate_chars": None, "max_results": None, "max_chars": None, "importance_min": None,
}  # fmt: skip

#: The knobs of the flat retrievers that are not Signet's fusion: no gate, no score floor, no caps.
_OPEN: dict[str, Any] = {**UNCAPPED, "gate": None, "min_score": 0.0}

#: The name resolved per dataset family from the frozen choice file (:func:`best_flat`).
BEST_FLAT = "best_flat"

#: Named variants and the knobs they change from Signet's defaults.
FLAT_VARIANTS: dict[str, dict[str, Any]] = {
    "flat_signet": {},
    "flat_signet_uncapped": dict(UNCAPPED),
    "flat_signet_full": {**UNCAPPED, "graph_boost": True, "constraints": True},
    "flat_top15": {"limit": 15, "max_results": 15, "gate": None, "max_chars": None},
    "flat_hybrid_bm25s": {"keyword": "bm25s"},
    "flat_vector": {"keyword": None},
    "flat_bm25": {"keyword": "bm25s", "vector": False},
    "flat_dense": {**_OPEN, "keyword": None},
    "flat_bm25_open": {**_OPEN, "keyword": "bm25s", "vector": False},
    "flat_minmax": {**_OPEN, "keyword": "bm25s", "fusion": "minmax", "alpha": 0.5},
    "flat_rrf": {**_OPEN, "keyword": "bm25s", "fusion": "rrf"},
}

#: Signet's graph boost (``hybridRecall`` step 4): ``GRAPH_BOOST[0]·score + GRAPH_BOOST[1]``.
GRAPH_BOOST: tuple[float, float] = (0.85, 0.15)
#: Signet's always-injected constraints section: about 1,000 characters, never dropped.
CONSTRAINTS_CHARS = 1000


_WORD = re.compile(r"\w+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


@dataclass
class _Scope:
    """What Signet's graph boost and constraints section need of one graph (built when either is on)."""

    names: dict[str, list[tuple[tuple[str, ...], str]]]  # first word -> [(name words, entity id)]
    hop: dict[str, set[str]]  # entity -> its one-hop neighbours over dependencies (either direction)
    docs: dict[str, np.ndarray]  # entity -> positions of the documents that mention it (or sit under it)
    constraints: dict[str, list[tuple[str, str, float, int]]]  # entity -> [(attribute id, text, imp., ns)]
    entity_name: dict[str, str]


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
    order: np.ndarray  # positions of the memory documents in time order (created, then key)
    order_rank: np.ndarray  # each position's index in ``order`` (-1: not a memory)
    scope: _Scope | None


#: Query embeddings shared by every flat retriever of the process (and the desire path and the GNN's query
#: features, :func:`~signet_rl.text.encoders.encode_query`), keyed by (encoder name, dimension, text):
#: encoders are deterministic, and a search over many variants encodes each query once.
_QUERY_VECTORS = QUERY_VECTORS


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


def _scope(graph: KnowledgeGraph, items: list[str], kinds: list[str]) -> _Scope:
    """Entity names, one-hop neighbours, each entity's documents and its constraints, for one graph."""
    ent = graph.entities
    entity_name = dict(zip(ent["id"].astype(str), ent["name"].astype(str), strict=True))
    names: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for eid, name in entity_name.items():
        words = _words(name)
        if words and len("".join(words)) >= 3:  # Signet's terms have at least three characters
            names.setdefault(words[0], []).append((words, eid))
    hop: dict[str, set[str]] = {}
    dep = graph.dependencies
    for a, b in zip(dep["source_entity_id"].astype(str), dep["target_entity_id"].astype(str), strict=True):
        hop.setdefault(a, set()).add(b)
        hop.setdefault(b, set()).add(a)
    position = {(k, i): p for p, (k, i) in enumerate(zip(kinds, items, strict=True))}
    docs: dict[str, list[int]] = {}
    men = graph.mentions
    for mid, eid in zip(men["memory_id"].astype(str), men["entity_id"].astype(str), strict=True):
        if (p := position.get(("memory", mid))) is not None:
            docs.setdefault(eid, []).append(p)
    asp = graph.aspects
    aspect_entity = dict(zip(asp["id"].astype(str), asp["entity_id"].astype(str), strict=True))
    att = graph.attributes
    constraints: dict[str, list[tuple[str, str, float, int]]] = {}
    live = att[att["status"] == "active"]
    for aid, asp_id, kind, content, imp, created in zip(
        live["id"].astype(str), live["aspect_id"], live["kind"], live["content"].astype(str),
        live["importance"].astype(float), _ns(live["created_at"]), strict=True,
    ):  # fmt: skip
        eid = aspect_entity.get(str(asp_id)) if isinstance(asp_id, str) else None
        if eid is None:
            continue
        if (p := position.get(("attribute", aid))) is not None:
            docs.setdefault(eid, []).append(p)
        if kind == "constraint":
            constraints.setdefault(eid, []).append((aid, clean_text(content), float(imp), int(created)))
    return _Scope(
        names=names,
        hop=hop,
        docs={e: np.asarray(sorted(set(p)), dtype=np.int64) for e, p in docs.items()},
        constraints=constraints,
        entity_name=entity_name,
    )


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
        importance_min: documents of lower importance are never returned (``None``: off).
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
        window: also inject each hit's neighbouring memories, up to this many on each side in time order,
            right after it (0: off; for memories that have an order, such as LoCoMo's turns).
        graph_boost: Signet's step-4 graph boost: ``0.85·score + 0.15`` for documents of the entities the
            query names and their one-hop neighbours.
        constraints: put Signet's always-injected constraints section (the active constraints of those
            entities, at most 1,000 characters) first.
        sparse_queries: score sparse query vectors (the hashing encoder's) by their non-zero columns only
            (:class:`~signet_rl.retrieval.indexes.VectorIndex`'s ``sparse_query_below``): 2x cheaper on
            38.5k memories, the same scores, exact ties ordered by row instead of faiss's own order. The
            service's flat uses it; off by default, so the experiments' tables keep faiss's order.

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
        importance_min: float | None = 0.3,
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
        window: int = 0,
        graph_boost: bool = False,
        constraints: bool = False,
        sparse_queries: bool = False,
    ) -> None:
        if keyword not in ("fts5", "bm25s", None):
            raise ValueError(f"keyword must be 'fts5', 'bm25s' or None, got {keyword!r}")
        if keyword is None and not vector:
            raise ValueError("a flat retriever needs at least one leg: keyword is None and vector is False")
        if fusion not in ("linear", "minmax", "rrf"):
            raise ValueError(f"fusion must be 'linear', 'minmax' or 'rrf', got {fusion!r}")
        check_probability("alpha", alpha)
        check_integer("top_k", top_k, 1)
        if not math.isfinite(min_score):
            raise ValueError(f"min_score must be a finite number, got {min_score}")
        if importance_min is not None and not math.isfinite(importance_min):
            raise ValueError(f"importance_min must be None (off) or a finite number, got {importance_min}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ValueError(f"window must be a non-negative integer (0: off), got {window!r}")
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
        self.importance_min = None if importance_min is None else float(importance_min)
        self.window = window
        self.graph_boost = bool(graph_boost)
        self.constraints = bool(constraints)
        self.limit = limit
        self.truncate_chars = truncate_chars
        self.rrf_k = int(rrf_k)
        self.require_terms = bool(require_terms)
        self.dedup_window = int(dedup_window)
        self.hnsw_above = hnsw_above
        self.sparse_queries = bool(sparse_queries)
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
        self._graphs: dict[str, KnowledgeGraph] | None = None  # set by index(); pools built from them
        self._aspect_names: list[str] = []
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
            "window": self.window,
            "graph_boost": self.graph_boost,
            "constraints": self.constraints,
            # a speed knob that moves only exact ties: named only when on, so older configs compare equal
            **({"sparse_queries": True} if self.sparse_queries else {}),
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
        """Prepare one set of indexes per graph of ``dataset`` (never reading its ground truth): built here
        for a dataset of one graph, at each graph's first query for a dataset of several (module
        docstring)."""
        self._aspect_names = [str(a) for a in (dataset.meta.get("pool_attribute_aspects") or [])]
        self._graphs = dict(dataset.graphs)
        self._pools = {}
        self._recent.clear()
        if len(self._graphs) == 1:
            self._pools = self._build(self._graphs)

    def _build(self, graphs: Mapping[str, KnowledgeGraph]) -> dict[str, _Pool]:
        """The indexes of ``graphs``, one set per graph."""
        aspect_names = self._aspect_names
        frames = {gid: self._documents(g, aspect_names) for gid, g in graphs.items()}
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
                vector_index = VectorIndex(
                    self.encoder.dim,
                    hnsw_above=self.hnsw_above,
                    sparse_query_below="auto" if self.sparse_queries else None,
                )
                vector_index.add(vectors[gid])
            keyword_index: FTS5Index | BM25Index | None = None
            if self.keyword == "fts5":  # holds, per query, only the rows created by then (statistics too)
                keyword_index = FTS5Index(texts[gid], created=frame["created"].to_numpy(dtype=np.int64))
            elif self.keyword == "bm25s":
                keyword_index = BM25Index(texts[gid])
            created = frame["created"].to_numpy(dtype=np.int64)
            importance = frame["importance"].to_numpy(dtype=float)
            memories = [i for i, k in enumerate(kinds) if k == "memory"]
            order = np.asarray(sorted(memories, key=lambda i: (created[i], keys[i])), dtype=np.int64)
            order_rank = np.full(len(keys), -1, dtype=np.int64)
            order_rank[order] = np.arange(len(order))
            pools[gid] = _Pool(
                keys=keys,
                position={k: i for i, k in enumerate(keys)},
                items=items,
                kinds=kinds,
                texts=texts[gid],
                created=created,
                eligible=(
                    np.ones(len(keys), dtype=bool)
                    if self.importance_min is None
                    else importance >= self.importance_min
                ),
                vector=vector_index,
                keyword=keyword_index,
                order=order,
                order_rank=order_rank,
                scope=(_scope(graphs[gid], items, kinds) if self.graph_boost or self.constraints else None),
            )
        return pools

    # ------------------------------------------------------------------------------------------------
    # retrieval

    def _encode_query(self, text: str) -> np.ndarray:
        assert self._query_encoder is not None
        return encode_query(self._query_encoder, text)

    def prepare_query(self, query: Query) -> None:
        """Encode ``query``'s vector query now (memoised, :func:`~signet_rl.text.encoders.encode_query`), so
        that a :meth:`retrieve` of it on another thread leaves every encoder's state alone (an encoder may
        grow its tables on an unseen word)."""
        vq = vector_query(capped_query(query).text, self.vector_prefix_chars)
        if self._query_encoder is not None and vq:
            self._encode_query(vq)

    def _pool(self, graph_id: str) -> _Pool:
        if self._graphs is None:
            raise RuntimeError(f"{self.name}: call index(dataset) before retrieve()")
        pool = self._pools.get(graph_id)
        if pool is None:
            if graph_id not in self._graphs:
                known = ", ".join(sorted(self._graphs)[:10])
                raise ValueError(f"{self.name}: graph {graph_id!r} was not indexed (indexed: {known})")
            pool = self._pools[graph_id] = self._build({graph_id: self._graphs[graph_id]})[graph_id]
        return pool

    def _mask(self, pool: _Pool, query: Query) -> np.ndarray:
        """Documents the query may see: eligible, and created at or before its time."""
        mask = pool.eligible
        if query.timestamp is not None:
            mask = mask & (pool.created <= _timestamp_ns(query.timestamp))
        return mask

    @staticmethod
    def _in_scope(pool: _Pool, text: str) -> set[str]:
        """The entities ``text`` names (whole-word, case-insensitive) and their one-hop neighbours."""
        assert pool.scope is not None
        words = _words(text)
        named: set[str] = set()
        for i, word in enumerate(words):
            for name, eid in pool.scope.names.get(word, ()):
                if words[i : i + len(name)] == name:
                    named.add(eid)
        return named.union(*(pool.scope.hop.get(e, set()) for e in named)) if named else set()

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
        mask = self._mask(pool, query)
        at = None if query.timestamp is None else _timestamp_ns(query.timestamp)
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
        elif self.fusion == "minmax":
            fused = minmax_fusion(vector, keyword, self.alpha, self.min_score)
        else:
            legs = [list(leg) for leg in (vector, keyword) if leg]  # each leg's dict is in rank order
            n_legs = int(pool.keyword is not None) + int(pool.vector is not None)
            top = n_legs / (self.rrf_k + 1)
            fused = [
                (k, s / top) for k, s in reciprocal_rank_fusion(legs, self.rrf_k) if s / top >= self.min_score
            ]
        if self.graph_boost and fused:
            assert pool.scope is not None
            scope = self._in_scope(pool, text)
            boosted = {
                pool.keys[p] for e in scope if e in pool.scope.docs for p in pool.scope.docs[e].tolist()
            }
            a, b = GRAPH_BOOST
            fused = sorted(
                ((k, a * s + b if k in boosted else s) for k, s in fused), key=lambda ks: (-ks[1], ks[0])
            )
        return [(k, s, {"vector": vector.get(k, 0.0), "keyword": keyword.get(k, 0.0)}) for k, s in fused]

    def _neighbours(self, pool: _Pool, pos: int, mask: np.ndarray) -> list[int]:
        """The memories within ``window`` of ``pos`` in time order that the query may see, nearest first
        (the earlier one first at equal distance)."""
        rank = int(pool.order_rank[pos])
        if rank < 0:
            return []
        out = []
        for d in range(1, self.window + 1):
            for r in (rank - d, rank + d):
                if 0 <= r < len(pool.order) and mask[p := int(pool.order[r])]:
                    out.append(p)
        return out

    def _constraints_section(self, pool: _Pool, query: Query, budget_chars: int | None) -> Unit | None:
        """Signet's always-injected constraints section: the active constraints (created by the query's
        time) of the entities in scope, most important first, whole constraints only, within
        ``min(1,000, budget)`` characters; ``None`` when there is none."""
        assert pool.scope is not None
        scope = self._in_scope(pool, clean_text(query.text))
        at = None if query.timestamp is None else _timestamp_ns(query.timestamp)
        found = [
            (imp, aid, eid, content)
            for eid in scope
            for aid, content, imp, created in pool.scope.constraints.get(eid, ())
            if at is None or created <= at
        ]
        if not found:
            return None
        limit = CONSTRAINTS_CHARS if budget_chars is None else min(CONSTRAINTS_CHARS, budget_chars)
        found.sort(key=lambda c: (-c[0], c[1]))
        names = pool.scope.entity_name

        def render(chosen: list[tuple[float, str, str, str]]) -> str:
            by_entity: dict[str, list[str]] = {}
            for _, _, eid, content in chosen:
                by_entity.setdefault(eid, []).append(content)
            lines = [f"{names.get(e, e)}: {'; '.join(cs)}" for e, cs in by_entity.items()]
            return "\n".join(["Constraints:", *lines])

        chosen: list[tuple[float, str, str, str]] = []
        for c in found:
            if len(render([*chosen, c])) <= limit:
                chosen.append(c)
        if not chosen:
            return None
        return Unit(
            text=render(chosen),
            items=tuple(c[1] for c in chosen),
            score=math.inf,
            kind="constraints",
            meta={"source": "constraints", "entities": tuple(dict.fromkeys(c[2] for c in chosen))},
        )

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        """Units for ``query``, best first; ``[]`` when Signet would inject nothing.

        With ``window``, each hit is followed by its neighbouring memories not injected yet (a hit already
        injected as a neighbour still brings its own neighbours); with
        ``constraints``, the constraints section comes first (also when the gate injects nothing else).

        Raises:
            ValueError: ``budget_chars`` of 0 or below, or a graph that was not indexed.
        """
        if budget_chars is not None:
            fit_budget([], budget_chars)  # validates the budget (raises for 0 or below)
        pool = self._pool(query.graph_id)
        ranked = self.scores(query)
        if self.limit is not None:
            ranked = ranked[: self.limit]
        if self.gate is not None and ranked and ranked[0][1] < self.gate:
            ranked = []
        mask = self._mask(pool, query) if self.window else pool.eligible
        units: list[Unit] = []
        used = 0
        emitted: set[int] = set()
        full = False
        for key, score, legs in ranked:
            pos = pool.position[key]
            hit_source = (
                "hybrid"
                if legs["vector"] > 0 and legs["keyword"] > 0
                else ("vector" if legs["vector"] > 0 else "keyword")
            )
            group = [(pos, {"source": hit_source, "vector": legs["vector"], "keyword": legs["keyword"]})]
            if self.window:
                group += [(n, {"source": "window", "of": key}) for n in self._neighbours(pool, pos, mask)]
            for p, meta in group:
                if p in emitted:
                    continue
                text = pool.texts[p]
                if self.truncate_chars is not None:
                    text = text[: self.truncate_chars]
                if self.max_chars is not None:
                    if used + len(text) > self.max_chars:
                        full = True
                        break
                    used += len(text)
                emitted.add(p)
                units.append(
                    Unit(text=text, items=(pool.items[p],), score=float(score), kind=pool.kinds[p], meta=meta)
                )
            if full:
                break
        if self.max_results is not None:
            units = units[: self.max_results]
        if self.dedup_window:
            units = self._dedup(query, units)
        if self.constraints and clean_text(query.text).strip():
            section = self._constraints_section(pool, query, budget_chars)
            if section is not None:
                units = [section, *units]
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
    ``flat_signet_uncapped``    the same with the caps off (no limit, truncation, 5-result or 500-char cap,
                                no ``importance_min``): the shared budget is the only cap
    ``flat_signet_full``        ``flat_signet_uncapped`` plus Signet's step 4 graph boost (one hop) and its
                                always-injected constraints section
    ``flat_top15``              the "top 15 memories" variant: 15 results, no gate, no per-prompt char cap
    ``flat_hybrid_bm25s``       bm25s keyword leg + vector
    ``flat_vector``             vector leg only (Signet's gate and caps)
    ``flat_bm25``               bm25s keyword leg only (Signet's gate and caps)
    ``flat_dense``              vector leg only, no gate, no score floor, no caps
    ``flat_bm25_open``          bm25s leg only, no gate, no score floor, no caps
    ``flat_minmax``             bm25s + vector, linear fusion of min-max normalised legs (``alpha``)
    ``flat_rrf``                bm25s + vector, reciprocal-rank fusion (``rrf_k``), no gate, no caps
    ``best_flat``               the frozen choice for the dataset family of ``dataset=`` (:func:`best_flat`);
                                without ``dataset=``, a :class:`BestFlat` that resolves it when indexed
    ==========================  ===========================================================================

    Raises:
        ValueError: an unknown name (the message lists the known ones); ``best_flat`` for a family with no
            frozen choice.
    """
    if name == BEST_FLAT:
        dataset = overrides.pop("dataset", None)
        if dataset is None:
            return BestFlat(**overrides)  # type: ignore[return-value]  # resolved when indexed
        return best_flat(str(dataset), **overrides)
    if name not in FLAT_VARIANTS:
        raise ValueError(
            f"unknown flat variant {name!r}; known variants: {', '.join([*FLAT_VARIANTS, BEST_FLAT])}"
        )
    knobs: dict[str, Any] = {**FLAT_VARIANTS[name], "name": name, **overrides}
    return FlatRetriever(**knobs)


# ----------------------------------------------------------------------------------------------------
# best_flat: the strongest flat retriever per dataset family, frozen from validation

#: The frozen choice, written by ``experiments/best_flat.py`` (never by hand).
BEST_FLAT_FILE = Path(__file__).resolve().parents[2] / "conf" / "best_flat.yaml"


def dataset_family(dataset: str) -> str:
    """The family of a dataset spec or name: the part before the first ``:`` (``synthetic:medium:0`` ->
    ``synthetic``, ``locomo`` -> ``locomo``)."""
    family = str(dataset).split(":", 1)[0].strip().lower()
    if not family:
        raise ValueError(
            f"cannot tell the dataset family of {dataset!r}: expected e.g. locomo or synthetic:small"
        )
    return family


def load_best_flat(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The frozen choice file (default ``conf/best_flat.yaml``), checked for shape.

    Raises:
        FileNotFoundError: no file (the message says how to write one).
        ValueError: a file that is not a mapping with a ``families`` mapping, or a family entry without a
            known ``variant`` or a ``params`` mapping (naming the file and the family).
    """
    import yaml

    file = Path(path) if path is not None else BEST_FLAT_FILE
    if not file.is_file():
        raise FileNotFoundError(
            f"no frozen best_flat choice file at {file}; run python experiments/best_flat.py to choose on "
            "validation and write it"
        )
    data = yaml.safe_load(file.read_text())
    if not isinstance(data, Mapping) or not isinstance(data.get("families"), Mapping):
        raise ValueError(f"{file}: expected a mapping with a 'families' mapping (family -> frozen choice)")
    for family, entry in data["families"].items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("params", {}), Mapping):
            raise ValueError(f"{file}: families.{family} must be a mapping with 'variant' and 'params'")
        if entry.get("variant") not in FLAT_VARIANTS:
            raise ValueError(
                f"{file}: families.{family}.variant is {entry.get('variant')!r}, not a flat variant; "
                f"known variants: {', '.join(FLAT_VARIANTS)}"
            )
    return dict(data)


def best_flat_choice(dataset: str, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The frozen choice (``variant``, ``params``, validation figures, ...) for ``dataset``'s family.

    Raises:
        ValueError: the family has no frozen choice (naming it, the file and the frozen families).
    """
    family = dataset_family(dataset)
    data = load_best_flat(path)
    families = data["families"]
    if family not in families:
        file = Path(path) if path is not None else BEST_FLAT_FILE
        raise ValueError(
            f"best_flat has no frozen choice for dataset family {family!r} (from {str(dataset)!r}) in "
            f"{file}; "
            f"frozen families: {', '.join(sorted(families)) or 'none'}; choose one on validation with "
            f"python experiments/best_flat.py --families {family}"
        )
    return dict(families[family])


def best_flat(
    dataset: str, path: str | os.PathLike[str] | None = None, name: str = BEST_FLAT, **overrides: Any
) -> FlatRetriever:
    """The flat retriever frozen for ``dataset``'s family in ``conf/best_flat.yaml``, named ``best_flat``.

    Nothing is chosen here: the variant and its knobs are read as ``experiments/best_flat.py`` froze them
    on validation. ``overrides`` are for plumbing only (``cache_dir``, ``progress``, ``hnsw_above``).

    Raises:
        ValueError: a family with no frozen choice, or a malformed choice file.
        FileNotFoundError: no choice file.
    """
    choice = best_flat_choice(dataset, path)
    params = {str(k): v for k, v in dict(choice.get("params") or {}).items()}
    retriever = flat_variant(str(choice["variant"]), **{**params, **overrides})
    retriever.name = name
    return retriever


class BestFlat:
    """``best_flat`` for whatever dataset it is indexed on: :meth:`index` reads the frozen choice for the
    dataset's family (``dataset.name``'s part before ``:``) and delegates to it. Configs name it without
    knowing the dataset (``flat_variant("best_flat")``); nothing is chosen here.

    Raises:
        ValueError: (from :meth:`index`) the dataset's family has no frozen choice.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, name: str = BEST_FLAT, **overrides: Any):
        self.name = name
        self.path = path
        self.overrides = overrides
        self.inner: FlatRetriever | None = None
        self.family: str | None = None

    def index(self, dataset: Dataset) -> None:
        """Resolve the frozen choice for ``dataset``'s family and index it."""
        self.inner = best_flat(dataset.name, self.path, name=self.name, **self.overrides)
        self.family = dataset_family(dataset.name)
        self.inner.index(dataset)

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        if self.inner is None:
            raise RuntimeError(f"{self.name}: call index(dataset) before retrieve()")
        return self.inner.retrieve(query, budget_chars)

    def config(self) -> dict[str, Any]:
        """The resolved retriever's knobs (plus the family), or only the name before :meth:`index`."""
        if self.inner is None:
            return {"name": self.name, "variant": BEST_FLAT}
        return {**self.inner.config(), "family": self.family}
