"""Which attributes say the same thing: embedding similarity plus lexical agreement.

Shared by :mod:`~signet_rl.emergence.bridges` (one attribute against the attributes of unlinked entities)
and :mod:`~signet_rl.emergence.principles` (clusters of similar attributes across communities). Two texts
*agree* when the cosine of their encoder vectors is at least ``min_similarity`` and the Jaccard overlap of
their keyword terms (:func:`signet_rl.text.terms.keyword_terms`) is at least ``min_lexical``: the
embedding alone matches paraphrases and near-duplicate distractors alike; the lexical check keeps the pair
honest about sharing content words.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from signet_rl.graph.model import KnowledgeGraph
from signet_rl.text.encoders import Encoder, HashingEncoder
from signet_rl.text.terms import STOP_WORDS, keyword_terms

_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")

__all__ = ["active_attributes", "agreeing_neighbours", "content_tokens", "default_encoder", "encode",
           "jaccard", "linked_pairs", "resolve", "similar_pairs", "slot_variant", "terms"]


def default_encoder() -> Encoder:
    """The encoder used when none is given: the deterministic hashing encoder (no model, no download)."""
    return HashingEncoder()


def resolve(encoder: Encoder | None) -> Encoder:
    """``encoder``, or the default one when it is None. (Not ``encoder or default``: a cached encoder is
    falsy while its cache is empty — it has a length — and would be silently replaced by the default.)"""
    return default_encoder() if encoder is None else encoder


def terms(text: str) -> frozenset[str]:
    """The keyword terms of ``text``, as a set."""
    return frozenset(keyword_terms(text, max_terms=None))


def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased word and number tokens of ``text`` (numbers kept: "250" is what a slot value often is),
    a plural ``s`` dropped from words of more than three letters ("rewrites" and "rewrite" are one token).
    Stop words are kept: they are the wording :func:`slot_variant` compares."""
    words = (w for w in _TOKEN_SPLIT.split(text.lower()) if w)
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def slot_variant(a: frozenset[str], b: frozenset[str], max_overlap: float) -> bool:
    """Whether two texts (as :func:`content_tokens`) are the same wording with different values: their
    token Jaccard is at least ``max_overlap`` *and* each has a content word (not a stop word) the other
    lacks ("review falls on the first tuesday of march" against "... first thursday of january"; "also
    goes by Fomo" against "also goes by Fiwu"). Such a pair states two different values — an update or a
    conflict for deduplication — not one fact twice. A text that only adds words to the other ("prefers
    dark roast" / "prefers dark roast, brewed strong"), or swaps only stop words ("over" / "to"), is not
    a variant."""
    only_a = {w for w in a - b if w not in STOP_WORDS}
    only_b = {w for w in b - a if w not in STOP_WORDS}
    return bool(only_a) and bool(only_b) and jaccard(a, b) >= max_overlap


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def active_attributes(graph: KnowledgeGraph) -> pd.DataFrame:
    """Active attributes that belong to an entity: ``id``, ``content``, ``memory_id``, ``entity_id``,
    ``aspect``, in the graph's order."""
    attrs = graph.attributes.assign(entity_id=graph.attribute_entity_ids().to_numpy())
    attrs = attrs[(attrs["status"] == "active") & attrs["entity_id"].notna()]
    aspect_name = dict(zip(graph.aspects["id"], graph.aspects["name"], strict=True))
    attrs = attrs.assign(aspect=attrs["aspect_id"].map(aspect_name))
    return attrs[["id", "content", "memory_id", "entity_id", "aspect"]].reset_index(drop=True)


def linked_pairs(graph: KnowledgeGraph) -> set[frozenset[str]]:
    """Pairs of entities a dependency connects (either direction)."""
    deps = graph.dependencies
    return {frozenset(p) for p in zip(deps["source_entity_id"], deps["target_entity_id"], strict=True)}


def encode(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """L2-normalised rows (the encoders already normalise; a zero row stays zero)."""
    if not texts:
        return np.zeros((0, 1), np.float32)
    x = np.asarray(encoder.encode(texts), dtype=np.float32)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def similar_pairs(vectors: np.ndarray, rows: np.ndarray, min_similarity: float,
                  chunk: int = 2048) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, cosine)`` for every query row ``i`` in ``rows`` and any row ``j != i`` of ``vectors`` with
    cosine at least ``min_similarity``; computed ``chunk`` query rows at a time, so memory stays
    ``O(chunk × n)`` on a large graph."""
    out_i, out_j, out_s = [], [], []
    for start in range(0, len(rows), chunk):
        block = rows[start:start + chunk]
        sims = vectors[block] @ vectors.T
        r, j = np.nonzero(sims >= min_similarity)
        keep = block[r] != j
        out_i.append(block[r][keep])
        out_j.append(j[keep])
        out_s.append(sims[r[keep], j[keep]])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64),
            np.concatenate(out_s))


def agreeing_neighbours(vectors: np.ndarray, rows: np.ndarray, allowed: Callable[[int, int], bool], k: int,
                        min_similarity: float, chunk: int = 1024, scan: int = 64) -> dict[int, list[int]]:
    """Each row's ``k`` nearest rows (cosine, highest first) at least ``min_similarity`` that
    ``allowed(i, j)`` admits (another entity, not linked, not a slot variant: the caller decides).

    Only the ``scan`` nearest rows of each are sorted and examined first; the whole row is sorted only when
    fewer than ``k`` of those were admitted and rows above the threshold remain, so the usual cost is
    ``O(n)`` per row on a large graph.
    """
    out: dict[int, list[int]] = {}
    n = len(vectors)
    for start in range(0, len(rows), chunk):
        block = rows[start:start + chunk]
        sims = vectors[block] @ vectors.T
        for r, i in enumerate(block.tolist()):
            row = sims[r]
            row[i] = -np.inf
            top = min(scan, n - 1)
            head = np.argpartition(-row, top)[:top] if top < n - 1 else np.arange(n)
            head = head[np.argsort(-row[head], kind="stable")]
            kept, done = _admit(row, head, i, allowed, k, min_similarity)
            if not done and len(head) < n:
                kept, _ = _admit(row, np.argsort(-row, kind="stable"), i, allowed, k, min_similarity)
            out[i] = kept
        del sims
    return out


def _admit(row: np.ndarray, order: np.ndarray, i: int, allowed: Callable[[int, int], bool], k: int,
           min_similarity: float) -> tuple[list[int], bool]:
    """The first ``k`` rows of ``order`` above the threshold that ``allowed`` admits, and whether the
    walk ended for good (``k`` found or the threshold reached) rather than by running out of ``order``."""
    kept: list[int] = []
    for j in order.tolist():
        if row[j] < min_similarity or len(kept) >= k:
            return kept, True
        if j != i and allowed(i, j):
            kept.append(j)
    return kept, len(kept) >= k
