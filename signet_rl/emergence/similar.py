"""Which attributes say the same thing: embedding similarity plus lexical agreement.

Shared by :mod:`~signet_rl.emergence.bridges` (one attribute against the attributes of unlinked entities)
and :mod:`~signet_rl.emergence.principles` (clusters of similar attributes across communities). Two texts
*agree* when the cosine of their encoder vectors is at least ``min_similarity`` and the Jaccard overlap of
their keyword terms (:func:`signet_rl.text.terms.keyword_terms`) is at least ``min_lexical``: the
embedding alone matches paraphrases and near-duplicate distractors alike; the lexical check keeps the pair
honest about sharing content words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from signet_rl.graph.model import KnowledgeGraph
from signet_rl.text.encoders import Encoder, HashingEncoder
from signet_rl.text.terms import keyword_terms

__all__ = ["active_attributes", "default_encoder", "encode", "jaccard", "linked_pairs", "resolve",
           "similar_pairs", "terms"]


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
