"""Leiden communities over the entity graph: routing landmarks and explorer targets (docs/design.md §8).

The graph Leiden runs on is :func:`community_graph`: one undirected, weighted igraph whose vertices are
the entities (in ``graph.entities`` row order) and whose edges join

* entities mentioned in the same non-deleted memory (co-mention), weighted by the number of memories
  they share, and
* the two ends of each dependency, weighted by ``confidence × strength``;

weights are summed where a pair has both, and self-loops are dropped (they say nothing about which
community an entity belongs to). :func:`detect_communities` partitions it with igraph's built-in
``community_leiden`` or with ``leidenalg`` under the same objective, and returns a :class:`Communities`:
a community per entity, the weighted modularity of the partition (always the same formula, whatever
the objective or backend, so runs are comparable), a cohesion and a heuristic label per community.
:func:`with_communities` writes them into the graph's ``communities`` / ``community_members`` tables
(and ``meta["modularity"]``) so the store persists them.

    >>> from signet_rl.datasets.registry import load_dataset
    >>> graph = load_dataset("synthetic:tiny").graph
    >>> found = detect_communities(graph, seed=0)
    >>> found.num_communities > 1, structure_label(found.modularity) in STRUCTURE_LABELS
    (True, True)

Thresholds (docs/design.md §8): a community's cohesion below :data:`WEAK_COHESION` (0.4) is weak; a global
modularity below :data:`FRAGMENTED_MODULARITY` (0.3) is fragmented, above :data:`STRONG_MODULARITY`
(0.6) strong.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import igraph as ig
import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph

if TYPE_CHECKING:
    pass

__all__ = [
    "BACKENDS",
    "COHESION_SAMPLE",
    "DEFAULT_BACKEND",
    "FRAGMENTED_MODULARITY",
    "OBJECTIVES",
    "STRONG_MODULARITY",
    "STRUCTURE_LABELS",
    "WEAK_COHESION",
    "Communities",
    "cohesion",
    "community_graph",
    "community_labels",
    "detect_communities",
    "entity_communities",
    "modularity",
    "nmi_ari",
    "structure_label",
    "with_communities",
]

Objective = Literal["modularity", "rb", "cpm"]
Backend = Literal["igraph", "leidenalg"]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

OBJECTIVES: tuple[str, ...] = ("modularity", "rb", "cpm")
BACKENDS: tuple[str, ...] = ("igraph", "leidenalg")
#: igraph's built-in Leiden: under the modularity objective it is several times faster than leidenalg
#: on ``synthetic:xl`` and reaches the same modularity and recovery (``benchmarks/bench_communities.py``).
DEFAULT_BACKEND: Backend = "igraph"
#: Cohesion is computed on at most this many members of a community, sampled with the seed.
COHESION_SAMPLE = 50
WEAK_COHESION = 0.4
FRAGMENTED_MODULARITY = 0.3
STRONG_MODULARITY = 0.6
STRUCTURE_LABELS: tuple[str, ...] = ("fragmented", "moderate", "strong")
#: Terms per community label.
LABEL_TERMS = 3


def structure_label(modularity: float) -> str:
    """Name the strength of a partition's structure from its global modularity.

    Returns:
        ``"fragmented"`` below 0.3, ``"strong"`` above 0.6, ``"moderate"`` in between.

    >>> structure_label(0.25), structure_label(0.45), structure_label(0.7)
    ('fragmented', 'moderate', 'strong')
    """
    if modularity < FRAGMENTED_MODULARITY:
        return "fragmented"
    if modularity > STRONG_MODULARITY:
        return "strong"
    return "moderate"


@dataclass(frozen=True, eq=False)
class Communities:
    """A partition of a graph's entities into Leiden communities.

    Communities are numbered by size, largest first (ties by their first member's row), so community
    ``0`` is the largest. ``C`` communities over ``N`` entities.

    Attributes:
        entity_ids: entity ids in ``graph.entities`` row order. Shape ``[N]``, object.
        membership: the community of each entity. Shape ``[N]``, int64, in ``0..C-1``.
        modularity: the weighted modularity (resolution 1) of the partition on :func:`community_graph`,
            whatever objective produced it.
        cohesion: per community, the share of its (sampled) members' edge weight that stays inside
            it (see :func:`cohesion`). Shape ``[C]``, float64, in ``[0, 1]``.
        labels: per community, its most characteristic terms (see :func:`community_labels`).
        sizes: members per community. Shape ``[C]``, int64.
        seconds: wall time of the Leiden run itself (not the graph build, cohesion or labels).
        objective, backend, resolution, seed: how it was found.
    """

    entity_ids: npt.NDArray[np.object_]
    membership: IntArray
    modularity: float
    cohesion: FloatArray
    labels: tuple[str, ...]
    sizes: IntArray
    seconds: float
    objective: str = "modularity"
    backend: str = DEFAULT_BACKEND
    resolution: float = 1.0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_communities(self) -> int:
        """``C``."""
        return len(self.sizes)

    @property
    def structure(self) -> str:
        """:func:`structure_label` of the modularity."""
        return structure_label(self.modularity)

    @property
    def weak(self) -> npt.NDArray[np.bool_]:
        """Communities whose cohesion is below :data:`WEAK_COHESION`. Shape ``[C]``."""
        return self.cohesion < WEAK_COHESION

    def summary(self, top: int = 10) -> dict[str, Any]:
        """A JSON-able summary: counts, modularity, structure and the ``top`` largest communities."""
        return {
            "entities": len(self.membership),
            "communities": self.num_communities,
            "singletons": int((self.sizes == 1).sum()),
            "weak": int(self.weak.sum()),
            "modularity": round(float(self.modularity), 4),
            "structure": self.structure,
            "objective": self.objective,
            "backend": self.backend,
            "resolution": self.resolution,
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "largest": [
                {
                    "id": community_id(c),
                    "label": self.labels[c],
                    "size": int(self.sizes[c]),
                    "cohesion": round(float(self.cohesion[c]), 3),
                }
                for c in range(min(top, self.num_communities))
            ],
        }


def community_id(index: int) -> str:
    """The store id of community ``index`` (0-based): ``com-0001``, ``com-0002``, ..."""
    return f"com-{index + 1:04d}"


# ----------------------------------------------------------------------------------------------------
# The graph


def _as_arrays(graph: KnowledgeGraph | GraphArrays) -> GraphArrays:
    return graph if isinstance(graph, GraphArrays) else GraphArrays.from_graph(graph)


def community_edges(
    graph: KnowledgeGraph | GraphArrays, at: float | None = None
) -> tuple[IntArray, IntArray, FloatArray]:
    """The weighted, undirected edges of :func:`community_graph` as arrays, vectorised.

    With ``at`` (epoch seconds) only the memories and dependencies created at or before ``at`` count: the
    community graph as it was then (:class:`~signet_rl.graph.timeslice.TimeSlices` partitions it).

    Co-mention pairs are expanded per memory from the memory -> entity CSR: the mention at position
    ``i`` of a memory's run pairs with every later one in the run, so a memory naming ``k`` entities
    gives ``k(k-1)/2`` pairs (no Python loop over memories or edges).

    Returns:
        ``(u, v, w)`` with ``u < v`` entity indices, unique pairs, ``w > 0``. Shapes ``[P]``.
    """
    arrays = _as_arrays(graph)
    n = arrays.num_entities
    # Co-mentions: mentions of non-deleted memories, each memory's entities contiguous and ascending.
    counts = np.diff(arrays.mem_ent_indptr)
    mem_of_slot = np.repeat(np.arange(len(counts)), counts)
    keep = ~arrays.memory_deleted[mem_of_slot]
    if at is not None:
        keep &= arrays.memory_created[mem_of_slot] <= at
    ents, mems = arrays.mem_ent[keep], mem_of_slot[keep]
    ends = np.searchsorted(mems, mems, side="right")  # one past the last slot of each slot's memory
    pos = np.arange(len(ents))
    n_after = ends - pos - 1
    total = int(n_after.sum())
    left = np.repeat(pos, n_after)
    starts = np.cumsum(n_after) - n_after
    right = np.arange(total) - np.repeat(starts, n_after) + left + 1
    cu, cv = ents[left], ents[right]
    cw = np.ones(total, dtype=np.float64)
    # Dependencies.
    du, dv = arrays.edge_source, arrays.edge_target
    dw = arrays.edge_confidence.astype(np.float64) * arrays.edge_strength.astype(np.float64)
    if at is not None:
        seen = arrays.edge_created <= at
        du, dv, dw = du[seen], dv[seen], dw[seen]
    u = np.concatenate([cu, du])
    v = np.concatenate([cv, dv])
    w = np.concatenate([cw, dw])
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    ok = (lo != hi) & (w > 0)
    key = lo[ok] * n + hi[ok]
    uniq, inverse = np.unique(key, return_inverse=True)
    weight = np.bincount(inverse, weights=w[ok], minlength=len(uniq))
    return (uniq // n).astype(np.int64), (uniq % n).astype(np.int64), weight.astype(np.float64)


def community_graph(graph: KnowledgeGraph | GraphArrays) -> ig.Graph:
    """The undirected weighted igraph Leiden runs on (see the module docstring).

    Args:
        graph: a knowledge graph, or its :class:`GraphArrays` when already built.

    Returns:
        An igraph with one vertex per entity (row order; vertex attribute ``name`` is the entity id) and
        edge attribute ``weight``.
    """
    arrays = _as_arrays(graph)
    u, v, w = community_edges(arrays)
    g = ig.Graph(n=arrays.num_entities, edges=np.column_stack([u, v]), directed=False)
    g.es["weight"] = w
    g.vs["name"] = arrays.entity_ids.tolist()
    return g


def _edge_arrays(g: ig.Graph) -> tuple[IntArray, IntArray, FloatArray]:
    edges = np.asarray(g.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(g.es["weight"], dtype=np.float64) if g.ecount() else np.zeros(0)
    return edges[:, 0], edges[:, 1], weights


# ----------------------------------------------------------------------------------------------------
# Measures


def modularity(g: ig.Graph, membership: npt.ArrayLike) -> float:
    """Weighted modularity (resolution 1) of a partition of ``g``, by numpy.

    ``Q = Σ_c [ W_c / W − (D_c / 2W)² ]`` with ``W`` the total edge weight, ``W_c`` the weight inside
    community ``c`` and ``D_c`` the summed weighted degree of its members; equal to igraph's
    ``g.modularity(membership, weights="weight")``.
    """
    m = np.asarray(membership, dtype=np.int64)
    u, v, w = _edge_arrays(g)
    total = w.sum()
    if total <= 0:
        return 0.0
    k = int(m.max()) + 1 if len(m) else 0
    inside = np.bincount(m[u][m[u] == m[v]], weights=w[m[u] == m[v]], minlength=k)
    degree = np.bincount(m[u], weights=w, minlength=k) + np.bincount(m[v], weights=w, minlength=k)
    return float((inside / total - (degree / (2 * total)) ** 2).sum())


def _sample_mask(membership: IntArray, limit: int, seed: int) -> npt.NDArray[np.bool_]:
    """At most ``limit`` members per community, chosen uniformly with ``seed``."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(len(membership)), membership))
    sorted_comm = membership[order]
    first = np.searchsorted(sorted_comm, sorted_comm, side="left")
    rank = np.arange(len(order)) - first
    mask = np.zeros(len(membership), dtype=bool)
    mask[order[rank < limit]] = True
    return mask


def cohesion(
    g: ig.Graph, membership: npt.ArrayLike, seed: int = 0, sample: int = COHESION_SAMPLE
) -> FloatArray:
    """Per community, the share of its members' edge weight that stays inside it.

    For community ``c`` with (sampled) members ``S``: ``cohesion(c) = Σ_{i∈S} w(i, c) / Σ_{i∈S} d(i)``,
    where ``w(i, c)`` is the weight of ``i``'s edges to other members of ``c`` and ``d(i)`` its
    weighted degree. Communities larger than ``sample`` use ``sample`` members drawn with ``seed``
    (their edges to *all* members count as inside). 1 means no weight leaves the community; a community
    whose members have no edges at all (an isolated entity) has cohesion 0. Below
    :data:`WEAK_COHESION` (0.4) a community is weak.

    Returns:
        Shape ``[C]`` (``C = max(membership) + 1``), in ``[0, 1]``.
    """
    m = np.asarray(membership, dtype=np.int64)
    k = int(m.max()) + 1 if len(m) else 0
    u, v, w = _edge_arrays(g)
    sampled = _sample_mask(m, sample, seed)
    same = m[u] == m[v]
    inside = np.zeros(k)
    degree = np.zeros(k)
    for a in (u, v):  # each endpoint in turn
        s = sampled[a]
        degree += np.bincount(m[a][s], weights=w[s], minlength=k)
        inside += np.bincount(m[a][s & same], weights=w[s & same], minlength=k)
    return np.divide(inside, degree, out=np.zeros(k), where=degree > 0)


def _terms(
    graph: KnowledgeGraph, entity_index: pd.Index
) -> tuple[IntArray, IntArray, npt.NDArray[np.object_]]:
    """Unique (entity, term) pairs from entity names and aspect names; terms sorted alphabetically."""
    names = pd.DataFrame({"entity": np.arange(len(graph.entities)), "text": graph.entities["name"]})
    asp_ent = entity_index.get_indexer(graph.aspects["entity_id"])
    aspects = pd.DataFrame({"entity": asp_ent, "text": graph.aspects["name"]})[asp_ent >= 0]
    text = pd.concat([names, aspects], ignore_index=True)
    tokens = text["text"].fillna("").str.lower().str.findall(r"[^\W_]+")
    pairs = pd.DataFrame({"entity": text["entity"], "term": tokens}).explode("term").dropna()
    pairs = pairs[(pairs["term"].str.len() >= 2) & ~pairs["term"].str.isdigit()].drop_duplicates()
    codes, vocab = pd.factorize(pairs["term"], sort=True)
    return (pairs["entity"].to_numpy(dtype=np.int64), codes.astype(np.int64),
            np.asarray(vocab, dtype=object))


def community_labels(
    graph: KnowledgeGraph, membership: npt.ArrayLike, terms: int = LABEL_TERMS
) -> tuple[str, ...]:
    """A short label per community: its ``terms`` most characteristic terms, joined by ``", "``.

    Terms are the lower-cased words of the members' names and aspect names. A term's score in
    community ``c`` is TF-IDF with entities as documents: ``tf = (members having the term) / size(c)``
    and ``idf = log(N / entities having the term)``; ties go alphabetically. A community whose members
    have no terms gets ``""``.
    """
    m = np.asarray(membership, dtype=np.int64)
    k = int(m.max()) + 1 if len(m) else 0
    n = len(m)
    ent, term, vocab = _terms(graph, pd.Index(graph.entities["id"]))
    if len(term) == 0:
        return ("",) * k
    n_terms = len(vocab)
    idf = np.log(n / np.bincount(term, minlength=n_terms))
    key, count = np.unique(m[ent] * n_terms + term, return_counts=True)
    comm, t = key // n_terms, key % n_terms
    sizes = np.bincount(m, minlength=k)
    score = count / sizes[comm] * idf[t]
    order = np.lexsort((t, -score, comm))
    comm, t = comm[order], t[order]
    rank = np.arange(len(comm)) - np.searchsorted(comm, comm, side="left")
    top = rank < terms
    words: list[list[str]] = [[] for _ in range(k)]
    for c, word in zip(comm[top].tolist(), vocab[t[top]].tolist(), strict=True):
        words[c].append(word)
    return tuple(", ".join(ws) for ws in words)


# ----------------------------------------------------------------------------------------------------
# Detection


def _validate(objective: str, backend: str, resolution: float, n_iterations: int) -> None:
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {', '.join(OBJECTIVES)}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if not isinstance(resolution, int | float) or not np.isfinite(resolution) or resolution <= 0:
        raise ValueError(f"resolution {resolution!r} must be a finite number > 0")
    if objective == "modularity" and resolution != 1.0:
        raise ValueError(
            f"resolution {resolution!r} applies to objectives 'rb' and 'cpm'; 'modularity' is resolution 1"
        )
    if not isinstance(n_iterations, int) or n_iterations == 0 or n_iterations < -1:
        raise ValueError(f"n_iterations {n_iterations!r} must be -1 (until stable) or a positive integer")


def _leiden(g: ig.Graph, objective: str, backend: str, resolution: float, seed: int,
            n_iterations: int) -> list[int]:
    if backend == "igraph":
        state = random.getstate()
        random.seed(seed)  # igraph draws from Python's `random`
        try:
            part = g.community_leiden(
                objective_function="CPM" if objective == "cpm" else "modularity",
                weights="weight", resolution=resolution, n_iterations=n_iterations,
            )
        finally:
            random.setstate(state)
        return list(part.membership)
    import leidenalg as la

    kwargs: dict[str, Any] = {"weights": "weight", "n_iterations": n_iterations, "seed": seed}
    if objective == "modularity":
        return list(la.find_partition(g, la.ModularityVertexPartition, **kwargs).membership)
    kind = la.RBConfigurationVertexPartition if objective == "rb" else la.CPMVertexPartition
    return list(la.find_partition(g, kind, resolution_parameter=resolution, **kwargs).membership)


def _renumber(raw: npt.ArrayLike) -> IntArray:
    """Communities numbered by size descending, ties by their first member's row."""
    raw = np.asarray(raw, dtype=np.int64)
    if len(raw) == 0:
        return raw
    uniq, first, inverse, counts = np.unique(raw, return_index=True, return_inverse=True, return_counts=True)
    order = np.lexsort((first, -counts))
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse.reshape(-1)]


def detect_communities(
    graph: KnowledgeGraph,
    objective: str = "modularity",
    resolution: float = 1.0,
    seed: int = 0,
    backend: str = DEFAULT_BACKEND,
    n_iterations: int = -1,
    *,
    community: ig.Graph | None = None,
) -> Communities:
    """Partition a graph's entities with Leiden.

    Args:
        graph: the knowledge graph (its names and aspect names feed the labels).
        objective: ``"modularity"`` (resolution 1), ``"rb"`` (Reichardt–Bornholdt configuration model
            with ``resolution``; larger gives smaller communities) or ``"cpm"`` (constant Potts model:
            ``resolution`` is the weighted density a community must exceed).
        resolution: > 0; must be 1 under ``"modularity"``.
        seed: seeds Leiden (igraph through a local ``random.seed``, the previous state restored;
            leidenalg through ``seed=``) and the cohesion sample. Same seed, same partition.
        backend: ``"igraph"`` (``Graph.community_leiden``) or ``"leidenalg"``.
        n_iterations: Leiden iterations; -1 runs until the partition is stable.
        community: the :func:`community_graph` of ``graph`` when already built.

    Returns:
        The :class:`Communities`.

    Raises:
        ValueError: an unknown objective or backend, a resolution that is not > 0 (or not 1 under
            ``"modularity"``), or a bad ``n_iterations``, naming the value.
    """
    _validate(objective, backend, resolution, n_iterations)
    g = community if community is not None else community_graph(graph)
    if g.vcount() != graph.num_entities:
        raise ValueError(f"community graph has {g.vcount()} vertices for {graph.num_entities} entities")
    start = time.perf_counter()
    raw = _leiden(g, objective, backend, float(resolution), int(seed), n_iterations) if g.vcount() else []
    seconds = time.perf_counter() - start
    membership = _renumber(raw)
    return Communities(
        entity_ids=graph.entities["id"].to_numpy(dtype=object),
        membership=membership,
        modularity=modularity(g, membership) if len(membership) else 0.0,
        cohesion=cohesion(g, membership, seed=seed),
        labels=community_labels(graph, membership),
        sizes=np.bincount(membership).astype(np.int64) if len(membership) else np.zeros(0, np.int64),
        seconds=seconds,
        objective=objective,
        backend=backend,
        resolution=float(resolution),
        seed=int(seed),
    )


def with_communities(graph: KnowledgeGraph, communities: Communities) -> KnowledgeGraph:
    """The graph with its ``communities`` and ``community_members`` tables filled (level 0).

    Community ``i`` (0-based, largest first) gets id :func:`community_id` (``com-0001``, ...), its size,
    cohesion and label; every entity becomes a member of its community. ``meta["modularity"]`` and
    ``meta["communities"]`` (objective, backend, resolution, seed, count) record the run, so
    :func:`~signet_rl.graph.store.write_graph` persists it all.

    Raises:
        ValueError: the communities were found on a graph with other entities.
    """
    ids = graph.entities["id"].to_numpy(dtype=object)
    if len(ids) != len(communities.entity_ids) or not (ids == communities.entity_ids).all():
        raise ValueError("communities were detected on a graph with other entities (ids or order differ)")
    k = communities.num_communities
    com_ids = np.array([community_id(i) for i in range(k)], dtype=object)
    table = pd.DataFrame({
        "id": com_ids,
        "label": list(communities.labels),
        "cohesion": communities.cohesion.astype(float),
        "size": communities.sizes.astype(np.int64),
        "level": np.zeros(k, dtype=np.int64),
    })
    members = pd.DataFrame({"community_id": com_ids[communities.membership], "entity_id": ids})
    out = graph.replace(communities=table, community_members=members)
    out.meta["modularity"] = float(communities.modularity)
    out.meta["communities"] = {
        "count": k,
        "objective": communities.objective,
        "backend": communities.backend,
        "resolution": communities.resolution,
        "seed": communities.seed,
        "structure": communities.structure,
    }
    return out


COMMUNITY_SOURCES = ("graph", "detect", "auto")


def entity_communities(graph: KnowledgeGraph, source: str = "auto", seed: int = 0) -> dict[str, str]:
    """Entity id -> community id, from the graph's own ``community_members`` (``graph``), from Leiden on
    the entity graph (``detect``: :func:`detect_communities` with ``seed``, ids ``leiden:<n>``), or the
    graph's when it has any and Leiden's otherwise (``auto``).

    What reads communities for issue 29 (principle detection, per-community health) reads them here, so a
    benchmark graph that carries no communities of its own (synthetic v2/v3, a store never run through
    ``python -m signet_rl.graph communities``) still has some under ``auto``; under ``graph`` it has none.

    Raises:
        ValueError: an unknown ``source``, naming it and the known ones.
    """
    if source not in COMMUNITY_SOURCES:
        raise ValueError(f"community_source must be 'graph', 'detect' or 'auto', got {source!r}")
    members = graph.community_members
    if source == "graph" or (source == "auto" and len(members)):
        return dict(zip(members["entity_id"], members["community_id"], strict=True))
    if not graph.num_entities:
        return {}
    found = detect_communities(graph, seed=seed)
    return {str(e): f"leiden:{int(c)}" for e, c in zip(found.entity_ids, found.membership, strict=True)}


# ----------------------------------------------------------------------------------------------------
# Recovery of planted communities


def nmi_ari(a: npt.ArrayLike, b: npt.ArrayLike) -> dict[str, float]:
    """Normalised mutual information (arithmetic normalisation) and adjusted Rand index of two labelings.

    Both are 1 for identical partitions (up to renaming); NMI is 0 for independent ones, ARI about 0.
    """
    x = pd.factorize(pd.Series(np.asarray(a)))[0]
    y = pd.factorize(pd.Series(np.asarray(b)))[0]
    n = len(x)
    if n != len(y):
        raise ValueError(f"labelings differ in length: {n} and {len(y)}")
    if n == 0:
        return {"nmi": 1.0, "ari": 1.0}
    _, joint = np.unique(x * (int(y.max()) + 1) + y, return_counts=True)
    px, py = np.bincount(x), np.bincount(y)

    def entropy(counts: npt.NDArray[Any]) -> float:
        p = counts[counts > 0] / n
        return float(-(p * np.log(p)).sum())

    hx, hy, hxy = entropy(px), entropy(py), entropy(joint)
    mi = hx + hy - hxy
    nmi = 1.0 if hx + hy == 0 else float(2 * mi / (hx + hy))

    def pairs(counts: npt.NDArray[Any]) -> float:
        return float((counts * (counts - 1) / 2).sum())

    sum_joint, sum_x, sum_y, total = pairs(joint), pairs(px), pairs(py), n * (n - 1) / 2
    expected = sum_x * sum_y / total if total else 0.0
    top = (sum_x + sum_y) / 2
    ari = 1.0 if top == expected else float((sum_joint - expected) / (top - expected))
    return {"nmi": max(0.0, min(1.0, nmi)), "ari": ari}


