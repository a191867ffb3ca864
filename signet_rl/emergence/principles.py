"""Discovered principles: one pattern across unrelated parts of the graph, made an entity of its own.

:func:`detect_principles` looks at decision and preference attributes (those whose aspect name or content
matches :data:`DECISION_PATTERN`), links two of them when they agree (:mod:`~signet_rl.emergence.similar`)
and belong to different entities that no dependency connects, and takes each connected group of such
links. A group whose entities lie in at least ``min_communities`` communities (an entity in no community
counts as its own) is a :class:`Principle`: the group's most central attribute is its text, and its
evidence trail is every attribute (with its memory) behind it.

:func:`add_principles` writes them into the graph: an entity of type ``principle`` whose description is
the text, a dependency ``informs`` from it to each entity it was found in (``reason`` ``pattern-matched``),
and the record — status, text, embedding, evidence — under ``graph.meta["principles"]``, which the store
keeps. It is shown as a notification-style record (:func:`notification`). Users answer with three verbs:

- :func:`confirm`: status ``confirmed`` and its edges one rung up the ladder (``pattern-matched`` 0.5 to
  ``single-memory`` 0.7). That is the boost: the prior scorer's path score is the product of confidence x
  strength along the path, so every path through the principle scores (0.7 / 0.5) per principle edge
  higher; the traverser follows an entity's edges in confidence x strength order when branching is
  bounded; the learned scorers see edge confidence among their features;
- :func:`reject`: status ``rejected`` and its edges one rung down, at most ``inferred`` (0.4): below the
  default ``min_confidence`` (0.5), so no walk goes through it (it fades);
- :func:`correct`: new text and embedding (entity description and name too), evidence kept.

Each returns a new graph; an unknown id is an error naming it, and nothing changes. Off by default.

:func:`detect_value_principles` is a second detector, for values stated in words that an encoder scores
only loosely alike (cosine 0.3, where the pairwise detector would link millions of pairs). It groups the
attributes that share a content-word stem (a posting list per stem, so the work is linear in the graph),
collapses copies and slot variants (a template filled in at many entities is one statement), asks for at
least ``min_communities`` communities, and keeps a group only when its mean pairwise cosine is
significantly above what a random set of as many attributes from as many communities gives (a z-score
against a seeded Monte-Carlo null drawn from the same graph).

:func:`detect_embedding_principles` is a third, for values said in words that share nothing (generator v4,
where a shared stem would give a value away): a mutual kNN graph over the encoder's vectors (or their
second-order profiles) of the untemplated attributes, never linking two that share a content-word stem (a
topic) or whose entities a dependency connects, and its small connected components across communities.
With MiniLM it recovers no planted value on v4 (docs/results.md, "Principles on generator v4"); it is
not in the config.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from signet_rl.emergence.similar import (
    active_attributes,
    content_tokens,
    encode,
    jaccard,
    linked_pairs,
    resolve,
    similar_pairs,
    slot_variant,
    terms,
)
from signet_rl.graph.confidence import LADDER, Reason, ladder_step, reason_codes
from signet_rl.graph.model import DependencyType, EntityType, KnowledgeGraph
from signet_rl.text.encoders import Encoder
from signet_rl.text.terms import STOP_WORDS

__all__ = ["DECISION_PATTERN", "Principle", "PrincipleError", "add_principles", "confirm", "correct",
           "detect_embedding_principles", "detect_principles", "detect_value_principles", "notification",
           "reject", "stems"]

#: Aspect names or attribute texts that mark a decision or a preference.
DECISION_PATTERN = r"\b(decid\w*|decision\w*|prefer\w*|choos\w*|chose\w*|choice\w*|always|never|avoid\w*)\b"
META_KEY = "principles"


class PrincipleError(ValueError):
    """A principle verb cannot be applied: the message names the principle id and the way out."""


@dataclass(frozen=True)
class Principle:
    """A pattern found in at least ``min_communities`` communities.

    Attributes:
        id: ``principle-<hash of its evidence attribute ids>``: the same evidence, the same id.
        text: the most central attribute's content (or the user's correction).
        entity_ids: the entities it was found in.
        communities: the communities they lie in.
        evidence: one dict per attribute behind it: ``attribute_id``, ``entity_id``, ``memory_id``,
            ``content``.
        status: ``proposed``, ``confirmed`` or ``rejected``.
    """

    id: str
    text: str
    entity_ids: tuple[str, ...]
    communities: tuple[str, ...]
    evidence: tuple[dict[str, Any], ...]
    status: str = "proposed"


def _communities(graph: KnowledgeGraph, source: str) -> dict[str, str]:
    """Entity -> community: the graph's own (``graph``), Leiden's on the entity graph (``detect``), or the
    graph's when it has any and Leiden's otherwise (``auto``). Without either, each entity would count as
    a community of its own, and "at least 3 communities" would mean only "at least 3 entities"."""
    from signet_rl.graph.communities import entity_communities

    return entity_communities(graph, source, seed=0)



def _candidate_attributes(
    graph: KnowledgeGraph, pattern: str, min_communities: int, community_source: str
) -> pd.DataFrame | None:
    """The active attributes a detector reads: not of a principle, and whose aspect name (snake_case read as
    words: "design_preferences" is a preference aspect) or text matches ``pattern``; ``None`` when fewer
    than ``min_communities`` remain. Checks the two arguments every detector shares.

    Raises:
        ValueError: ``min_communities`` < 2 or not an integer, or an unknown ``community_source``.
    """
    if isinstance(min_communities, bool) or not isinstance(min_communities, int) or min_communities < 2:
        raise ValueError(f"min_communities must be an integer >= 2, got {min_communities!r}")
    if community_source not in ("graph", "detect", "auto"):
        raise ValueError(f"community_source must be 'graph', 'detect' or 'auto', got {community_source!r}")
    attrs = active_attributes(graph)
    principle_ids = set(graph.entities.loc[graph.entities["entity_type"] == EntityType.PRINCIPLE, "id"])
    rx = re.compile(pattern, re.IGNORECASE)
    keep = [eid not in principle_ids and bool(rx.search(str(asp or "").replace("_", " ")) or rx.search(text))
            for eid, asp, text in zip(attrs["entity_id"], attrs["aspect"], attrs["content"], strict=True)]
    attrs = attrs[keep].reset_index(drop=True)
    return None if len(attrs) < min_communities else attrs

def detect_principles(graph: KnowledgeGraph, *, encoder: Encoder | None = None,
                      min_communities: int = 3, min_similarity: float = 0.6, min_lexical: float = 0.3,
                      pattern: str = DECISION_PATTERN, min_tightness: float | None = None,
                      variant_overlap: float | None = None,
                      community_source: str = "graph") -> list[Principle]:
    """Principles in ``graph`` not already in it (module docstring).

    Three optional checks keep coincidences out (each off at its default):

    * ``variant_overlap``: two attributes that are the same text, or the same wording with other values
      (:func:`~signet_rl.emergence.similar.slot_variant`), are not linked, and a group needs at least
      ``min_communities`` distinct texts: a principle is one idea said in different words, not one
      template filled in at several entities;
    * ``min_tightness``: the group's mean pairwise cosine must reach it (single-link chains of loosely
      similar attributes are not one pattern);
    * ``community_source``: ``graph`` (the graph's own; an entity in none is its own community), ``detect``
      (Leiden on the entity graph) or ``auto`` (the graph's when it has any, else Leiden's).

    Args:
        graph: the graph.
        encoder: the text encoder (the hashing encoder by default).
        min_communities: least number of distinct communities the pattern's entities lie in.
        min_similarity: least cosine for two attributes to agree.
        min_lexical: least keyword Jaccard for two attributes to agree.
        pattern: regex (case-insensitive) on aspect name or attribute content selecting the
            decision and preference attributes.
        min_tightness: least mean pairwise cosine of a group (None: off).
        variant_overlap: token Jaccard from which two differently-valued wordings are one template
            (None: off; identical texts are then linked like any other pair).
        community_source: where communities come from (above).
    """
    attrs = _candidate_attributes(graph, pattern, min_communities, community_source)
    if attrs is None:
        return []
    texts = attrs["content"].tolist()
    vectors = encode(resolve(encoder), texts)
    owner = attrs["entity_id"].to_numpy(dtype=object)
    linked = linked_pairs(graph)
    words = [terms(t) for t in texts]
    edges: list[tuple[int, int]] = []
    for i, j, _ in zip(*similar_pairs(vectors, np.arange(len(attrs)), min_similarity), strict=True):
        if i > j or owner[i] == owner[j] or frozenset((owner[i], owner[j])) in linked:
            continue
        if jaccard(words[i], words[j]) < min_lexical:
            continue
        if variant_overlap is not None and (
                texts[i].strip().lower() == texts[j].strip().lower()
                or slot_variant(content_tokens(texts[i]), content_tokens(texts[j]), variant_overlap)):
            continue
        edges.append((int(i), int(j)))
    groups = _components(len(attrs), edges)
    comm = _communities(graph, community_source)
    comm_of = [comm.get(e, f"entity:{e}") for e in owner]
    existing = set(graph.meta.get(META_KEY, {}))
    out = []
    for rows in groups:
        if len(rows) < 2:
            continue
        ents = tuple(dict.fromkeys(owner[r] for r in rows))
        distinct = {" ".join(texts[r].lower().split()) for r in rows}
        if variant_overlap is not None and len(distinct) < min_communities:
            continue  # one statement repeated (or two, one inside the other) is not a pattern across many
        communities = tuple(sorted({comm.get(e, f"entity:{e}") for e in ents}))
        if len(communities) < min_communities:
            continue
        if min_tightness is not None:
            block = vectors[rows] @ vectors[rows].T
            if (block.sum() - np.trace(block)) / (len(rows) * (len(rows) - 1)) < min_tightness:
                continue
        p = _principle(attrs, vectors, rows, texts, owner, comm_of)
        if p.id not in existing:
            out.append(p)
    return sorted(out, key=lambda p: p.id)


_WORD = re.compile(r"[a-z]+")


def stems(text: str, prefix: int | None) -> frozenset[str]:
    """The content-word stems of ``text``: lower-cased words of at least three letters that are not stop
    words, cut to their first ``prefix`` letters (truncation stemming: "reproducible" and "reproduce" share
    ``repro`` at 5), or whole (``prefix`` None)."""
    words = (w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP_WORDS)
    return frozenset(w if prefix is None else w[:prefix] for w in words)


_STOP_INDEX = {w: i for i, w in enumerate(sorted(STOP_WORDS))}
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int32)


def _templated(tokens: list[frozenset[str]], rows: list[int], overlap: float,
               chunk: int = 256, pairs: int = 1 << 21) -> set[int]:
    """Those of ``rows`` that are a slot variant (:func:`~signet_rl.emergence.similar.slot_variant` at
    ``overlap``) of another attribute sharing a content word with it.

    The pairs that share a content word, with how many they share, come from a sparse product of the
    content-word incidence matrix (CSR), ``chunk`` rows at a time, read ``pairs`` pairs at a time (memory
    stays bounded on a large graph). The stop words they share (which
    :func:`slot_variant`'s Jaccard counts too) come from a bitset per attribute, so the product never
    pairs every attribute with every other through "the". Only the few pairs whose Jaccard reaches
    ``overlap`` are compared word by word."""
    if not rows:
        return set()
    vocab: dict[str, int] = {}
    content = [sorted(w for w in toks if w not in _STOP_INDEX) for toks in tokens]
    indices = [vocab.setdefault(w, len(vocab)) for toks in content for w in toks]
    indptr = np.concatenate([[0], np.cumsum([len(t) for t in content])]).astype(np.int64)
    x = sparse.csr_matrix((np.ones(len(indices), np.int32), indices, indptr),
                          shape=(len(tokens), max(len(vocab), 1)))
    xt = x.T.tocsr()
    stop = np.zeros((len(tokens), len(_STOP_INDEX)), dtype=bool)
    for i, toks in enumerate(tokens):
        stop[i, [_STOP_INDEX[w] for w in toks if w in _STOP_INDEX]] = True
    bits = np.packbits(stop, axis=1)
    size = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
    out: set[int] = set()
    for start in range(0, len(rows), chunk):
        block = np.asarray(rows[start:start + chunk])
        shared = (x[block] @ xt).tocoo()
        for lo in range(0, shared.nnz, pairs):  # a common word pairs a row with many: bounded slices
            a, b = block[shared.row[lo:lo + pairs]], shared.col[lo:lo + pairs]
            both = shared.data[lo:lo + pairs] + _POPCOUNT[bits[a] & bits[b]].sum(axis=1)
            near = (a != b) & (both >= overlap * (size[a] + size[b] - both) - 1e-9)  # slot_variant: exact
            for i, j in zip(a[near].tolist(), b[near].tolist(), strict=True):
                if i not in out and slot_variant(tokens[i], tokens[j], overlap):
                    out.add(i)
    return out


def _null_tightness(vectors: np.ndarray, comm_codes: np.ndarray, size: int, min_communities: int,
                    draws: int, seed: int) -> tuple[float, float]:
    """Mean and standard deviation of the mean pairwise cosine of ``draws`` random sets of ``size`` rows
    whose communities number at least ``min_communities`` (sets that fall short are drawn again, up to
    ten tries each: on a graph of fewer communities every draw counts). Seeded by ``(seed, size)``, so
    a size's null does not depend on which sizes were drawn before it."""
    rng = np.random.default_rng([seed, size])
    n = len(vectors)
    out = np.empty(draws)
    for d in range(draws):
        for _ in range(10):
            pick = rng.choice(n, size=size, replace=False)
            if len(np.unique(comm_codes[pick])) >= min_communities:
                break
        block = vectors[pick] @ vectors[pick].T
        out[d] = (block.sum() - np.trace(block)) / (size * (size - 1))
    return float(out.mean()), float(out.std(ddof=1))


def _components(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """The connected components of ``n`` rows joined by ``edges`` (union-find), each in row order, listed
    by their first row."""
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in edges:
        parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _check_stem_prefix(stem_prefix: int | None) -> None:
    """``stem_prefix`` is an integer >= 3 or None (naming the bad value)."""
    if stem_prefix is not None and (isinstance(stem_prefix, bool) or not isinstance(stem_prefix, int)
                                    or stem_prefix < 3):
        raise ValueError(f"stem_prefix must be an integer >= 3 or None, got {stem_prefix!r}")


def detect_value_principles(graph: KnowledgeGraph, *, encoder: Encoder | None = None,
                            min_communities: int = 3, stem_prefix: int | None = 5, max_df: int = 32,
                            min_z: float = 3.0, variant_overlap: float = 0.4, pattern: str = r".",
                            community_source: str = "auto", skip_names: bool = True,
                            skip_templates: bool = True, null_draws: int = 500,
                            seed: int = 0) -> list[Principle]:
    """Principles stated as one value in different words across communities (module docstring).

    For each content-word stem (:func:`stems`) held by at most ``max_df`` attributes (a word in many
    attributes is vocabulary, not a value): its attributes, one per entity, with copies and slot variants
    (:func:`~signet_rl.emergence.similar.slot_variant` at ``variant_overlap``) collapsed to one statement;
    at least ``min_communities`` statements in as many communities; and a mean pairwise cosine whose
    z-score against random sets of as many attributes (from at least ``min_communities`` communities,
    ``null_draws`` draws, seeded) is at least ``min_z``. Two groups that share half their attributes are
    one: the higher z-score is kept.

    With ``skip_names``, a stem of a word in any entity's name is skipped: attributes of several entities
    that all name one entity ("needs the billing api", "calls the billing api") state dependencies on it,
    not a value they share. (A value word that is also in some entity's name is then missed.)

    With ``skip_templates``, an attribute that is a slot variant of another attribute anywhere in the graph
    is a filled-in template ("favours python for new services" beside "favours kotlin for new services"),
    and the word it shares with a group is the slot's value: it does not count as a statement of the
    group. Extractors write many such attributes; a value said in one's own words has no slot variant.

    Args:
        graph: the graph.
        encoder: the text encoder (the hashing encoder by default).
        min_communities: least number of distinct communities (and statements).
        stem_prefix: truncation length of a stem (None: whole words).
        max_df: most attributes a stem may be in.
        min_z: least z-score of the group's mean pairwise cosine against the random-set null.
        variant_overlap: token Jaccard from which two differently-valued wordings are one template.
        pattern: regex (case-insensitive) on aspect name or content selecting the attributes looked at.
        community_source: ``graph``, ``detect`` or ``auto`` (as :func:`detect_principles`).
        skip_names: skip the stems of words in entity names (above).
        skip_templates: leave out attributes with a slot variant anywhere in the graph (above).
        null_draws: random sets drawn per group size.
        seed: the null's random seed.
    """
    _check_stem_prefix(stem_prefix)
    attrs = _candidate_attributes(graph, pattern, min_communities, community_source)
    if attrs is None:
        return []
    texts = attrs["content"].tolist()
    owner = attrs["entity_id"].to_numpy(dtype=object)
    comm = _communities(graph, community_source)
    comm_of = [comm.get(e, f"entity:{e}") for e in owner]
    comm_codes = pd.factorize(pd.Series(comm_of))[0]
    vectors = encode(resolve(encoder), texts)
    named: frozenset[str] = frozenset()
    if skip_names:
        named = frozenset().union(*(stems(str(n), stem_prefix) for n in graph.entities["name"]))
    postings: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        for s in stems(t, stem_prefix) - named:
            postings.setdefault(s, []).append(i)
    tokens = [content_tokens(t) for t in texts]
    postings = {k: rows for k, rows in postings.items() if min_communities <= len(rows) <= max_df}
    templated = (_templated(tokens, sorted({r for rows in postings.values() for r in rows}), variant_overlap)
                 if skip_templates else set())
    nulls: dict[int, tuple[float, float]] = {}
    groups: list[tuple[float, list[int], int]] = []
    for rows in postings.values():
        chosen: list[int] = []  # one statement per template, per entity
        for r in rows:
            if r in templated:
                continue
            if any(owner[r] == owner[c] or texts[r].strip().lower() == texts[c].strip().lower()
                   or slot_variant(tokens[r], tokens[c], variant_overlap) for c in chosen):
                continue
            chosen.append(r)
        if len(chosen) < min_communities or len({comm_of[r] for r in chosen}) < min_communities:
            continue
        m = len(chosen)
        if m not in nulls:
            nulls[m] = _null_tightness(vectors, comm_codes, m, min_communities, null_draws, seed)
        mu, sd = nulls[m]
        block = vectors[chosen] @ vectors[chosen].T
        z = ((block.sum() - np.trace(block)) / (m * (m - 1)) - mu) / max(sd, 1e-9)
        if z >= min_z:
            groups.append((float(z), chosen, len(groups)))
    kept: list[list[int]] = []
    for _, rows, _ in sorted(groups, key=lambda g: (-g[0], g[2])):
        if all(2 * len(set(rows) & set(k)) < min(len(rows), len(k)) for k in kept):
            kept.append(rows)
    existing = set(graph.meta.get(META_KEY, {}))
    out = []
    for rows in kept:
        p = _principle(attrs, vectors, rows, texts, owner, comm_of)
        if p.id not in existing:
            out.append(p)
    return sorted(out, key=lambda p: p.id)


def _profiles(vectors: np.ndarray, reference: int, seed: int) -> np.ndarray:
    """Second-order vectors: each row's cosines to ``reference`` rows drawn at random (seeded; all rows when
    there are fewer), centred per reference row and L2-normalised. Two statements of one value in different
    words may have a low cosine yet rank the same things alike; centring removes what every row shares."""
    rng = np.random.default_rng(seed)
    ref = np.arange(len(vectors)) if len(vectors) <= reference else rng.choice(len(vectors), reference,
                                                                                 replace=False)
    prof = vectors @ vectors[ref].T
    prof -= prof.mean(axis=0, keepdims=True)
    norm = np.linalg.norm(prof, axis=1, keepdims=True)
    return (prof / np.where(norm > 0, norm, 1.0)).astype(np.float32)


def detect_embedding_principles(graph: KnowledgeGraph, *, encoder: Encoder | None = None,
                                min_communities: int = 3, k: int = 3, min_similarity: float = 0.3,
                                mutual: bool = True, second_order: bool = True, reference: int = 2000,
                                share_veto: bool = True, stem_prefix: int | None = 5,
                                skip_templates: bool = True, variant_overlap: float = 0.4,
                                max_size: int = 12, pattern: str = r".", community_source: str = "auto",
                                chunk: int = 1024, seed: int = 0) -> list[Principle]:
    """Principles found by meaning: statements that an encoder places near one another, at entities no
    dependency connects, in at least ``min_communities`` communities.

    1. The attributes looked at: those matching ``pattern`` (as :func:`detect_principles`), less, with
       ``skip_templates``, the filled-in templates (an attribute with a slot variant anywhere, as
       :func:`detect_value_principles`): one template at many entities is an extractor's habit, not a value.
    2. Their similarity: the cosine of the encoder's vectors, or with ``second_order`` the cosine of their
       centred profiles against ``reference`` attributes (:func:`_profiles`).
    3. A kNN graph: each attribute is linked to its ``k`` most similar attributes reaching
       ``min_similarity`` (both ways with ``mutual``), never to one of its own entity, of an entity a
       dependency connects to it, or with the same text; with ``share_veto``, never to one it shares a
       content-word stem with (:func:`stems` at ``stem_prefix``): statements that share a word are held
       together by the word — a topic — and are no evidence of a value said in different words.
    4. Its connected components of at most ``max_size`` attributes (a larger one is a chain of loose
       likenesses, not one value), one attribute per entity, no two of whose entities a dependency
       connects, with at least ``min_communities`` distinct texts in as many communities.

    The work is one encoder pass, ``n × reference`` profiles and a chunked top-k per row, so it grows
    linearly with the graph (``reference`` fixed). Arguments as above; ``chunk`` rows are compared at a
    time, ``seed`` draws the reference rows.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    _check_stem_prefix(stem_prefix)
    attrs = _candidate_attributes(graph, pattern, min_communities, community_source)
    if attrs is None:
        return []
    texts = attrs["content"].tolist()
    owner = attrs["entity_id"].to_numpy(dtype=object)
    tokens = [content_tokens(t) for t in texts]
    templated = _templated(tokens, list(range(len(texts))), variant_overlap) if skip_templates else set()
    pool = np.array([i for i in range(len(texts)) if i not in templated], dtype=np.int64)
    if len(pool) < min_communities:
        return []
    vectors = encode(resolve(encoder), texts)
    space = _profiles(vectors, reference, seed) if second_order else vectors
    x = space[pool]
    linked = linked_pairs(graph)
    norm_text = [" ".join(t.lower().split()) for t in texts]
    word = [stems(t, stem_prefix) for t in texts] if share_veto else None

    def allowed(i: int, j: int) -> bool:
        return (owner[i] != owner[j] and norm_text[i] != norm_text[j]
                and frozenset((owner[i], owner[j])) not in linked and not (word and word[i] & word[j]))

    near: list[set[int]] = [set() for _ in range(len(pool))]  # positions in pool
    for lo in range(0, len(pool), chunk):
        sims = x[lo:lo + chunk] @ x.T
        for r in range(sims.shape[0]):
            row = sims[r]
            row[lo + r] = -np.inf
            order = np.argsort(-row, kind="stable")
            for j in order.tolist():  # best first, until k allowed ones or the floor
                if row[j] < min_similarity or len(near[lo + r]) == k:
                    break
                if allowed(int(pool[lo + r]), int(pool[j])):
                    near[lo + r].add(j)
    edges = [(i, j) for i, js in enumerate(near) for j in js if not mutual or i in near[j]]
    groups = _components(len(pool), edges)
    comm = _communities(graph, community_source)
    comm_of = [comm.get(e, f"entity:{e}") for e in owner]
    existing = set(graph.meta.get(META_KEY, {}))
    out = []
    for members in groups:
        if not min_communities <= len(members) <= max_size:
            continue
        rows: list[int] = []
        for m in members:  # one per entity, no two linked
            r = int(pool[m])
            if all(owner[r] != owner[c] and frozenset((owner[r], owner[c])) not in linked for c in rows):
                rows.append(r)
        if (len({norm_text[r] for r in rows}) < min_communities
                or len({comm_of[r] for r in rows}) < min_communities):
            continue
        p = _principle(attrs, vectors, rows, texts, owner, comm_of)
        if p.id not in existing:
            out.append(p)
    return sorted(out, key=lambda p: p.id)


def _principle(attrs: pd.DataFrame, vectors: np.ndarray, rows: list[int], texts: list[str],
               owner: np.ndarray, comm_of: list[str]) -> Principle:
    """The principle behind ``rows``: its id from its evidence, its text the most central attribute."""
    ents = tuple(dict.fromkeys(owner[r] for r in rows))
    communities = tuple(sorted({comm_of[r] for r in rows}))
    ids = sorted(attrs["id"].iat[r] for r in rows)
    pid = "principle-" + hashlib.blake2b("\x1f".join(ids).encode(), digest_size=8).hexdigest()
    within = (vectors[rows] @ vectors[rows].T).sum(axis=1)
    centre = rows[int(np.argmax(within))]  # the first of equals: rows are in graph order
    evidence = tuple({"attribute_id": attrs["id"].iat[r], "entity_id": owner[r],
                      "memory_id": attrs["memory_id"].iat[r], "content": texts[r]} for r in rows)
    return Principle(id=pid, text=texts[centre], entity_ids=ents, communities=communities, evidence=evidence)


def _record(p: Principle, vector: np.ndarray) -> dict[str, Any]:
    rec = asdict(p)
    rec["entity_ids"], rec["communities"] = list(p.entity_ids), list(p.communities)
    rec["evidence"] = [dict(e) for e in p.evidence]
    rec["embedding"] = [float(v) for v in vector]
    return rec


def _name(pid: str, text: str) -> str:
    return f"principle: {text[:60]} ({pid[-6:]})"  # entity names are UNIQUE in Signet


def add_principles(graph: KnowledgeGraph, principles: list[Principle], *,
                   encoder: Encoder | None = None, at: pd.Timestamp | None = None) -> KnowledgeGraph:
    """The graph with each principle as an entity, its ``informs`` edges, and its record in meta."""
    if not principles:
        return graph
    at = pd.Timestamp.now(tz="UTC") if at is None else at
    vectors = encode(resolve(encoder), [p.text for p in principles])
    ents = pd.DataFrame([{"id": p.id, "name": _name(p.id, p.text), "entity_type": EntityType.PRINCIPLE,
                          "description": p.text, "created_at": at} for p in principles])
    deps = pd.DataFrame([{"id": f"{p.id}/{e}", "source_entity_id": p.id, "target_entity_id": e,
                          "dependency_type": DependencyType.INFORMS, "strength": 0.5,
                          "confidence": Reason.PATTERN_MATCHED.prior,
                          "reason": Reason.PATTERN_MATCHED.value, "created_at": at}
                         for p in principles for e in p.entity_ids])
    meta = dict(graph.meta)
    meta[META_KEY] = {**meta.get(META_KEY, {}),
                      **{p.id: _record(p, v) for p, v in zip(principles, vectors, strict=True)}}
    out = graph.replace(entities=pd.concat([graph.entities, ents], ignore_index=True),
                        dependencies=pd.concat([graph.dependencies, deps], ignore_index=True))
    out.meta = meta
    return out


def _get(graph: KnowledgeGraph, pid: str, verb: str) -> dict[str, Any]:
    rec = graph.meta.get(META_KEY, {}).get(pid)
    if rec is None or pid not in set(graph.entities["id"]):
        known = sorted(graph.meta.get(META_KEY, {}))
        listing = f"; known principles: {', '.join(known)}" if known else "; the graph has no principles"
        raise PrincipleError(f"cannot {verb} principle {pid!r}: it does not exist{listing}")
    return rec


def _move_edges(graph: KnowledgeGraph, pid: str, steps: int, at_most: Reason | None = None) -> KnowledgeGraph:
    """The principle's edges ``steps`` rungs along the ladder; with ``at_most``, also down to that rung
    (an edge above it lands on it, one below it still moves ``steps``)."""
    deps = graph.dependencies
    mine = (deps["source_entity_id"] == pid).to_numpy()
    rungs = reason_codes(deps.loc[mine, "reason"]).astype(np.int64)
    moves = np.full(len(rungs), steps, dtype=np.int64)
    if at_most is not None:
        moves = np.minimum(moves, at_most.rung - rungs)
    codes, conf = ladder_step(rungs, moves, deps.loc[mine, "confidence"].to_numpy(np.float32))
    deps = deps.copy()
    deps.loc[mine, "reason"] = [LADDER[c].value for c in codes]
    deps.loc[mine, "confidence"] = conf.astype(np.float64)
    return graph.replace(dependencies=deps)


def _with_record(graph: KnowledgeGraph, pid: str, **changes: Any) -> KnowledgeGraph:
    meta = dict(graph.meta)
    meta[META_KEY] = {**meta[META_KEY], pid: {**meta[META_KEY][pid], **changes}}
    graph.meta = meta
    return graph


def confirm(graph: KnowledgeGraph, pid: str) -> KnowledgeGraph:
    """Confirm a principle: status ``confirmed``, its edges one rung up (at most ``multi-memory``)."""
    _get(graph, pid, "confirm")
    return _with_record(_move_edges(graph, pid, +1), pid, status="confirmed")


def reject(graph: KnowledgeGraph, pid: str) -> KnowledgeGraph:
    """Reject a principle: status ``rejected``, its edges one rung down and at most ``inferred`` (0.4), so
    it fades out of every walk at the default ``min_confidence`` (0.5): a person's reject outranks the
    confirms before it (one rung down from a twice-confirmed ``multi-memory`` would still be walked)."""
    _get(graph, pid, "reject")
    return _with_record(_move_edges(graph, pid, -1, at_most=Reason.INFERRED), pid, status="rejected")


def correct(graph: KnowledgeGraph, pid: str, text: str, *,
            encoder: Encoder | None = None) -> KnowledgeGraph:
    """Refine a principle's text (and its embedding, description and name); its evidence is kept."""
    _get(graph, pid, "correct")
    if not isinstance(text, str) or not text.strip():
        raise PrincipleError(f"cannot correct principle {pid!r}: the new text is empty")
    vector = encode(resolve(encoder), [text])[0]
    ents = graph.entities.copy()
    at = ents.index[ents["id"] == pid][0]
    ents.loc[at, ["description", "name"]] = [text, _name(pid, text)]
    out = graph.replace(entities=ents)
    out.meta = dict(graph.meta)
    return _with_record(out, pid, text=text, embedding=[float(v) for v in vector])


def notification(graph: KnowledgeGraph, pid: str) -> dict[str, Any]:
    """The notification-style record shown for a principle: its text, status, entities and evidence
    (the embedding left out)."""
    rec = _get(graph, pid, "show")
    return {k: v for k, v in rec.items() if k != "embedding"}
