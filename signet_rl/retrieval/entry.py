"""Entry-entity search: which entities is this query about?

Hybrid search in desire-path retrieval does not pick memories; it picks the **entry entities** a walk starts
from (docs/design.md §1). :class:`EntrySearch` gathers evidence for every entity from four *legs*:

============  ===============================================  ========================================
leg           rows searched                                    owner entity of a row
============  ===============================================  ========================================
``name``      entity names                                     the entity itself
``aspect``    aspect names (``design_preferences`` → words)    the aspect's entity
``attribute`` attribute contents (not ``deleted``)             the entity of the attribute's aspect
``memory``    memory contents (not ``is_deleted``)             every entity the memory mentions
============  ===============================================  ========================================

and scores each entity ``e`` for a query ``q`` at time ``t`` as

.. math::

    s(e) = w_{exact}\\,[\\text{name}(e) \\sqsubseteq q]
         + \\sum_{L} w^{kw}_{L} \\frac{\\max_{r \\in L(e)} \\mathrm{BM25}_L(q, r)}
                                   {\\max_{e'} \\max_{r \\in L(e')} \\mathrm{BM25}_L(q, r)}
         + \\sum_{L} w^{vec}_{L} \\max_{r \\in L_C(e),\\ \\cos(q, r) \\ge m} \\cos(q, r)

* the first term is an **exact name match**: the entity's name, as a sequence of lower-cased ``[a-z0-9]``
  tokens, occurs contiguously in the query's tokens (``"pacujo-kit's deps?"`` matches ``pacujo-kit``).
  Names made only of stop words never match this way. Names are the strongest signal.
* the keyword term of leg ``L`` takes, per entity, the best BM25 score (bm25s) of the rows it owns, divided
  by the best over all entities for this query, so every leg lies in ``[0, 1]`` and the weights compare
  like with like;
* the vector term takes, per entity, the best cosine similarity among the leg's top ``C`` distinct texts
  (``candidates``; exact faiss inner product over L2-normalised encoder rows, searched over all rows and
  then filtered to those visible at ``t``), counting only similarities of at least ``m``
  (``min_similarity``, 0.2); an entity without such a row adds 0.

Each leg indexes its *distinct* texts once (aspect names repeat across thousands of entities); a hit on a
text counts for every usable, visible row holding it.

Only rows that existed at ``t`` count — in the scores and in the indexes' statistics and candidate lists
alike (BM25 over the texts visible at ``t``, vector candidates drawn from them): entities, aspects,
attributes and memories with ``created_at <= t`` and mentions whose ``created_at`` (or, when NULL, their
memory's) is ``<= t``; an entity created after ``t`` is never returned, whatever evidence points at it.
Rows with a NULL ``created_at`` count as always there.
Per-leg scores are scattered onto entities with ``np.maximum.at`` over row → entity index arrays: no
Python loop over entities or rows at query time.

Defaults (``weights``): exact 2.0; keyword name 1.0, aspect 0.2, attribute 0.3, memory 0.2; vector name
0.5. Vector legs over attributes and memories are off by default (weight 0): with the hashing encoder they
repeat the keyword legs' lexical evidence and, on a 43k-entity graph with 260k attributes, cost tens of
milliseconds per query. A leg with weight 0 is neither indexed nor searched.

Bad input: an empty or whitespace-only query, a graph with no entities, or a time before anything existed
give ``[]``; ``timestamp=pd.NaT`` (time unknown) gives ``[]`` as well, since nothing can be shown to have
existed; an unparseable timestamp is a ``ValueError`` naming it. Queries are cut to their first
``max_query_chars`` (1,000) characters, so a 100,000-character paste costs no more than a long prompt.

    >>> from signet_rl.graph.model import Entity, KnowledgeGraph
    >>> g = KnowledgeGraph.from_records(entities=[Entity(id="e1", name="billing-api"),
    ...                                           Entity(id="e2", name="maya")])
    >>> search = EntrySearch(vector=False).index(g)
    >>> [e for e, _ in search.search("who owns billing-api?")]
    ['e1']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.core.checks import check_integer, check_known_keys
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph, to_timestamp
from signet_rl.retrieval.indexes import BM25Index, VectorIndex
from signet_rl.text.encoders import Encoder, make_encoder
from signet_rl.text.terms import STOP_WORDS, clean_text

__all__ = ["DEFAULT_WEIGHTS", "LEGS", "EntrySearch"]

#: The evidence legs, in scoring order.
LEGS: tuple[str, ...] = ("name", "aspect", "attribute", "memory")
#: Default weights: ``exact``, ``kw_<leg>`` (keyword) and ``vec_<leg>`` (vector) per leg.
DEFAULT_WEIGHTS: dict[str, float] = {
    "exact": 2.0,
    "kw_name": 1.0,
    "kw_aspect": 0.2,
    "kw_attribute": 0.3,
    "kw_memory": 0.2,
    "vec_name": 0.5,
    "vec_aspect": 0.0,
    "vec_attribute": 0.0,
    "vec_memory": 0.0,
}
_TOKEN = re.compile(r"[a-z0-9]+")
_MAX_NAME_TOKENS = 8


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _epoch(values: pd.Series) -> npt.NDArray[np.float64]:
    """``created_at`` columns as float64 epoch seconds at millisecond precision (NaN for NULL)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.float64)
    raw = to_timestamp(values).dt.tz_convert(None).to_numpy(dtype="datetime64[ms]")
    out = raw.view(np.int64).astype(np.float64) / 1000.0
    out[np.isnat(raw)] = np.nan
    return out


def _query_time(timestamp: Any) -> float | None:
    """A query time as epoch seconds; ``None`` for no filter; NaN for an unknown (NaT) time.

    Raises:
        ValueError: a value that is not a time (the message names it).
    """
    if timestamp is None:
        return None
    if isinstance(timestamp, int | float | np.integer | np.floating) and not isinstance(timestamp, bool):
        return float(timestamp)
    if isinstance(timestamp, pd.Timestamp):  # the common case, without a pandas Series round trip
        return (timestamp.value // 1_000_000) / 1000.0  # UTC nanoseconds (naive read as UTC), to ms
    try:
        parsed = to_timestamp(pd.Series([timestamp]))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"query timestamp {timestamp!r} is not a time: {exc}") from None
    return float(_epoch(parsed)[0])


@dataclass(frozen=True)
class _Leg:
    """One evidence leg: the rows' texts, their owner entities, creation times and usability."""

    owner: npt.NDArray[np.int64]  # row -> entity ([R]); for memories, see the mention CSR instead
    created: npt.NDArray[np.float64]  # [R], NaN = always there
    usable: npt.NDArray[np.bool_]  # [R], False for deleted rows
    bm25: BM25Index | None  # over the distinct texts
    text_indptr: npt.NDArray[np.int64]  # CSR distinct text -> its rows ([U + 1])
    text_rows: npt.NDArray[np.int64]  # [R]
    vectors: VectorIndex | None  # over the distinct texts
    text_code: npt.NDArray[np.int64]  # [R]: each row's distinct text

    def visible_texts(self, t: float | None) -> npt.NDArray[np.bool_] | None:
        """``[U]``: the distinct texts held by a usable row that existed at ``t`` (``None`` when ``t`` is
        None: every text). Searches run over these only, so a row written after ``t`` weighs nothing —
        not even BM25's statistics or the vector leg's candidate list."""
        if t is None:
            return None
        ok = self.usable & ~(self.created > t)
        out = np.zeros(len(self.text_indptr) - 1, dtype=bool)
        out[self.text_code[ok]] = True
        return out


class EntrySearch:
    """Query → ranked entry entities, from names, aspects, attributes and mentioning memories.

    Args:
        keyword: use the BM25 legs (and the exact name match).
        vector: use the vector legs (with ``encoder``).
        encoder: an encoder name for :func:`~signet_rl.text.encoders.make_encoder` or an
            :class:`~signet_rl.text.encoders.Encoder`.
        weights: overrides of :data:`DEFAULT_WEIGHTS` (unknown keys are an error).
        candidates: rows each vector leg returns before aggregation.
        min_similarity: vector hits with a lower cosine similarity are ignored (with the hashing encoder,
            unrelated short texts share a few character 3-grams and score 0.05–0.15).
        max_query_chars: queries are cut to this many characters.

    Raises:
        ValueError: no leg enabled, an unknown or negative weight, or a bad size (each message names it).
    """

    name = "entry"

    def __init__(
        self,
        keyword: bool = True,
        vector: bool = True,
        encoder: str | Encoder = "hashing",
        weights: Mapping[str, float] | None = None,
        candidates: int = 200,
        min_similarity: float = 0.2,
        max_query_chars: int = 1000,
    ) -> None:
        check_known_keys(weights or {}, DEFAULT_WEIGHTS, "unknown entry-search weights")
        w = {**DEFAULT_WEIGHTS, **(weights or {})}
        negative = {k: v for k, v in w.items() if not v >= 0}
        if negative:
            raise ValueError(f"entry-search weights must be >= 0, got {negative}")
        if not keyword:
            w = {k: (0.0 if k == "exact" or k.startswith("kw_") else v) for k, v in w.items()}
        if not vector:
            w = {k: (0.0 if k.startswith("vec_") else v) for k, v in w.items()}
        if not any(v > 0 for v in w.values()):
            raise ValueError("entry search needs at least one leg with a positive weight (keyword or vector)")
        if candidates < 1 or max_query_chars < 1:
            raise ValueError(f"candidates={candidates} and max_query_chars={max_query_chars} must be >= 1")
        self.weights = w
        self.candidates = candidates
        self.min_similarity = float(min_similarity)
        self.max_query_chars = max_query_chars
        needs_encoder = any(w[f"vec_{leg}"] > 0 for leg in LEGS)
        self.encoder: Encoder | None = None
        if needs_encoder:
            self.encoder = make_encoder(encoder) if isinstance(encoder, str) else encoder
        self._n = 0

    # -- indexing -------------------------------------------------------------------------------------

    def index(self, graph: KnowledgeGraph, arrays: GraphArrays | None = None) -> EntrySearch:
        """Build the legs' indexes over ``graph`` (replacing any earlier index). Returns ``self``."""
        ga = arrays if arrays is not None else GraphArrays.from_graph(graph)
        n = ga.num_entities
        self._n = n
        self._best = np.zeros(n, dtype=np.float64)  # _scatter's scratch (all zeros between calls)
        self._entity_ids = ga.entity_ids
        self._entity_created = _epoch(graph.entities["created_at"])
        names = graph.entities["name"].astype(str).map(clean_text).tolist()
        # exact names: token tuple -> entity indices (names of stop words only are left out)
        self._names: dict[tuple[str, ...], list[int]] = {}
        for i, name in enumerate(names):
            toks = tuple(_tokens(name))
            if toks and len(toks) <= _MAX_NAME_TOKENS and not all(t in STOP_WORDS for t in toks):
                self._names.setdefault(toks, []).append(i)
        self._longest_name = max((len(t) for t in self._names), default=0)

        aspect_names = graph.aspects["name"].astype(str).str.replace("_", " ").tolist()
        memory_texts = graph.memories["content"].astype(str).map(clean_text).tolist()
        attr_texts = graph.attributes["content"].astype(str).map(clean_text).tolist()
        mem_created = ga.memory_created
        # mentions: a CSR memory -> (entity, mention time), mention time falling back to the memory's
        ment = graph.mentions
        m_mem = pd.Index(ga.memory_ids).get_indexer(ment["memory_id"].to_numpy(dtype=object))
        m_ent = pd.Index(ga.entity_ids).get_indexer(ment["entity_id"].to_numpy(dtype=object))
        ok = (m_mem >= 0) & (m_ent >= 0)
        m_mem, m_ent = m_mem[ok].astype(np.int64), m_ent[ok].astype(np.int64)
        m_time = _epoch(ment["created_at"])[ok]
        m_time = np.where(np.isnan(m_time), mem_created[m_mem], m_time)
        order = np.lexsort((m_ent, m_mem))
        self._ment_ent, self._ment_time = m_ent[order], m_time[order]
        self._ment_indptr = np.zeros(ga.num_memories + 1, dtype=np.int64)
        np.cumsum(np.bincount(m_mem, minlength=ga.num_memories), out=self._ment_indptr[1:])

        rows: dict[
            str, tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[Any]]
        ] = {
            "name": (names, np.arange(n, dtype=np.int64), self._entity_created, np.ones(n, bool)),
            "aspect": (
                aspect_names,
                ga.aspect_entity,
                _epoch(graph.aspects["created_at"]),
                np.ones(ga.num_aspects, bool),
            ),
            "attribute": (
                attr_texts,
                ga.attr_entity,
                ga.attr_created,
                (ga.attr_entity >= 0) & (ga.attr_status != 2),
            ),
            "memory": (memory_texts, np.full(ga.num_memories, -1, np.int64), mem_created, ~ga.memory_deleted),
        }
        self._legs: dict[str, _Leg] = {}
        for leg, (texts, owner, created, usable) in rows.items():
            # index each distinct text once (aspect names repeat across thousands of entities)
            codes, uniques = pd.factorize(pd.Series(texts, dtype=object))
            distinct = [str(u) for u in uniques]
            indptr = np.zeros(len(distinct) + 1, dtype=np.int64)
            np.cumsum(np.bincount(codes, minlength=len(distinct)), out=indptr[1:])
            text_rows = np.argsort(codes, kind="stable").astype(np.int64)
            bm25 = BM25Index(distinct) if self.weights[f"kw_{leg}"] > 0 and distinct else None
            vectors = None
            if self.weights[f"vec_{leg}"] > 0 and distinct and self.encoder is not None:
                vectors = VectorIndex(self.encoder.dim)
                vectors.add(self.encoder.encode(distinct))
            self._legs[leg] = _Leg(
                owner, created, np.asarray(usable, dtype=bool), bm25, indptr, text_rows, vectors,
                np.asarray(codes, dtype=np.int64),
            )
        return self

    # -- search ---------------------------------------------------------------------------------------

    def scores(
        self, text: str, timestamp: Any = None, query_vector: np.ndarray | None = None
    ) -> npt.NDArray[np.float64]:
        """The score of every entity for ``text`` at ``timestamp`` (0 where there is no evidence or the
        entity did not exist yet). Shape ``[N]``. ``query_vector``: this search's encoder's vector of the
        query it reads (``clean_text(text)[:max_query_chars]``), when the caller already encoded that text.

        Raises:
            RuntimeError: :meth:`index` was not called.
            ValueError: an unparseable ``timestamp``.
        """
        if not hasattr(self, "_legs"):
            raise RuntimeError("EntrySearch.search before index(graph)")
        total = np.zeros(self._n, dtype=np.float64)
        query = clean_text(text)[: self.max_query_chars]
        t = _query_time(timestamp)
        if self._n == 0 or not query.strip() or (t is not None and np.isnan(t)):
            return total
        w = self.weights
        if w["exact"] > 0:
            toks = _tokens(query)
            hits = [
                i
                for n in range(1, min(self._longest_name, len(toks)) + 1)
                for j in range(len(toks) - n + 1)
                for i in self._names.get(tuple(toks[j : j + n]), ())
            ]
            if hits:
                total[np.asarray(hits, dtype=np.int64)] = w["exact"]
        qvec = None
        if self.encoder is not None:
            qvec = (
                self.encoder.encode([query])
                if query_vector is None
                else np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
            )
        for name, leg in self._legs.items():
            seen = leg.visible_texts(t)
            if seen is not None and not seen.any():
                continue
            if leg.bm25 is not None:
                # every matching text (what search returns, unsorted: the scatter keeps each entity's best)
                every = leg.bm25.scores(query, seen)
                ids = np.flatnonzero(every > 0)
                hit = every[ids].astype(np.float32)  # (float32 scores, as the index's search gives them)
                ids, hit = (ids, hit) if hit.all() else (ids[hit > 0], hit[hit > 0])
                rows, scores = self._rows(leg, ids, hit, t)
                self._scatter(total, name, rows, scores, w[f"kw_{name}"], t, normalise=True)
            if leg.vectors is not None and qvec is not None:
                # rows below min_similarity are dropped below anyway: the index need not rank them
                s, ids = leg.vectors.search(qvec, min(self.candidates, len(leg.vectors)), seen,
                                            min_score=self.min_similarity)  # fmt: skip
                keep = (ids[0] >= 0) & (s[0] >= self.min_similarity) & (s[0] > 0)
                rows, scores = self._rows(leg, ids[0][keep], s[0][keep], t)
                self._scatter(total, name, rows, scores, w[f"vec_{name}"], t, normalise=False)
        if t is not None:
            total[self._entity_created > t] = 0.0
        return total

    @staticmethod
    def _rows(
        leg: _Leg, texts: npt.NDArray[np.int64], scores: npt.NDArray[Any], t: float | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Expand hits on distinct texts to the usable rows holding them that existed at ``t``."""
        start = leg.text_indptr[texts]
        count = leg.text_indptr[texts + 1] - start
        slot = np.repeat(start - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
        rows, row_scores = leg.text_rows[slot], np.repeat(np.asarray(scores, dtype=np.float64), count)
        keep = leg.usable[rows]
        if t is not None:
            keep &= ~(leg.created[rows] > t)
        return rows[keep], row_scores[keep]

    def _scatter(
        self,
        total: npt.NDArray[np.float64],
        leg: str,
        rows: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64],
        weight: float,
        t: float | None,
        normalise: bool,
    ) -> None:
        """Add ``weight ×`` (per-entity best of ``scores`` over ``rows``, optionally max-normalised)."""
        if not len(rows):
            return
        if leg == "memory":
            start = self._ment_indptr[rows]
            count = self._ment_indptr[rows + 1] - start
            slot = np.repeat(start - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
            owner, scores = self._ment_ent[slot], np.repeat(scores, count)
            if t is not None:
                seen = ~(self._ment_time[slot] > t)
                owner, scores = owner[seen], scores[seen]
        else:
            owner = self._legs[leg].owner[rows]
        keep = owner >= 0
        if not keep.all():
            owner, scores = owner[keep], scores[keep]
        if not len(owner):
            return
        if 8 * len(owner) > self._n:  # many rows: dense over every entity
            best = np.zeros(self._n, dtype=np.float64)
            np.maximum.at(best, owner, scores)
            top = best.max()
            if top > 0:
                total += weight * (best / top if normalise else best)
            return
        # few rows: the same sums on the entities they reach only (an entity listed twice gets one value)
        best = self._best
        np.maximum.at(best, owner, scores)
        got = best[owner]
        best[owner] = 0.0  # the scratch is all zeros again
        top = got.max()
        if top > 0:
            total[owner] += weight * (got / top if normalise else got)

    def search(
        self, text: str, k: int = 10, timestamp: Any = None, query_vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best entry entities for ``text`` as ``(entity_id, score)``, best first (ties by entity
        row); only entities with positive evidence. ``[]`` when there is none (see the module docstring for
        bad inputs).

        Raises:
            ValueError: ``k`` < 1 or an unparseable ``timestamp``.
        """
        check_integer("k", k, 1)
        s = self.scores(text, timestamp, query_vector)
        cand = np.flatnonzero(s > 0)
        if len(cand) > k:
            cand = cand[np.argpartition(-s[cand], k - 1)[:k]]
        cand = cand[np.lexsort((cand, -s[cand]))][:k]
        return [(str(self._entity_ids[i]), float(s[i])) for i in cand]


