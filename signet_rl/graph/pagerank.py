"""Personalised PageRank by local forward push (Andersen, Chung and Lang, FOCS 2006), on a CSR graph.

The personalised PageRank ``p`` of an undirected graph with edge weights ``w``, damping ``d`` and reset
distribution ``s`` (the seeds, a seed listed twice counting twice) solves

.. math:: p = (1 - d)\\, s + d\\, p\\, P, \\qquad P_{uv} = w_{uv} / \\deg_w(u),

where a walker at a vertex without weighted edges (dangling) jumps back to ``s``: igraph's
``personalized_pagerank`` definition, which sums to 1. Its power iteration (or igraph's PRPACK solve)
touches the whole graph per query; a query's candidates lie a few hops from its seeds, where almost all
the mass is.

Forward push keeps an estimate ``p`` and a residual ``r`` (``r = s`` at the start) with the invariant
``PPR(s) = p + PPR(r)``: pushing a vertex ``u`` moves ``(1 - d) r_u`` into ``p_u`` and spreads ``d r_u``
over its neighbours by weight (a dangling vertex sends it back to the seeds). It stops once every
residual is below ``tol`` times its vertex's weighted degree (``tol`` for a dangling vertex), so each
vertex's estimate is below the exact value by at most ``tol * max(deg_w(v), 1)`` (the ACL bound, which the
tests check on graphs whose seeds have edges; residual that a dangling vertex sends back to the seeds can add
about ``tol`` times ``v``'s PageRank from the seeds, so at most 1e-6 at the default), and the work is
bounded by ``1 / ((1 - d) tol)`` weighted-degree units whatever the graph's size. Here every vertex over
its threshold is pushed at once per round (the invariant holds for any push order), so a round is a few
array operations over the active vertices' CSR rows.

:func:`csr_graph` builds the undirected CSR once per graph (or time slice); :func:`push_pagerank` solves
one reset set. :data:`DEFAULT_TOL` was chosen by the ranking agreement with igraph's solve on the served
candidates (``benchmarks/bench_ppr.py``; ``docs/results.md``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_TOL", "CSRGraph", "csr_graph", "push_pagerank"]

#: The residual tolerance per unit of weighted degree (see the module docstring).
DEFAULT_TOL = 1e-6


@dataclass(frozen=True)
class CSRGraph:
    """An undirected weighted graph in CSR form: vertex ``u``'s neighbours are
    ``indices[indptr[u]:indptr[u + 1]]`` with weights ``weights[...]`` (an edge appears in both rows; a
    parallel edge is kept as a second entry), ``order[...]`` each entry's edge order key (see
    :func:`csr_graph`), and ``degree[u]`` the sum of its row's weights."""

    indptr: np.ndarray  # int64 [n + 1]
    indices: np.ndarray  # int64 [2m]
    weights: np.ndarray  # float64 [2m]
    order: np.ndarray  # int64 [2m]
    degree: np.ndarray  # float64 [n]

    @property
    def num_vertices(self) -> int:
        return len(self.degree)

    @functools.cached_property
    def push_scale(self) -> np.ndarray:
        """``float64 [n]``: each vertex's stopping threshold per unit of ``tol`` (its weighted degree, 1 for
        a dangling vertex), computed once per graph."""
        return np.where(self.degree > 0, self.degree, 1.0)

    def rows(self, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The CSR positions of ``vertices``' entries, row after row, and each row's entry count."""
        starts = self.indptr[vertices]
        counts = self.indptr[vertices + 1] - starts
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        return offsets, counts


def csr_graph(
    n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, order: np.ndarray | None = None
) -> CSRGraph:
    """The undirected CSR graph of ``n`` vertices and edges ``src[i] - dst[i]`` of weight ``weight[i]``
    (edges of weight <= 0 are dropped: they carry no rank). ``order[i]`` is edge ``i``'s key for
    :func:`push_pagerank`'s ``before`` (e.g. its rank in creation order; default ``i``).

    Raises:
        ValueError: the edge arrays differ in length, or a vertex index is outside ``[0, n)``.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    order = np.arange(len(src)) if order is None else np.asarray(order, dtype=np.int64)
    if not (len(src) == len(dst) == len(weight) == len(order)):
        raise ValueError(
            f"csr_graph: src, dst, weight and order must have one entry per edge; got {len(src)}, "
            f"{len(dst)}, {len(weight)} and {len(order)}"
        )
    for name, ends in (("src", src), ("dst", dst)):
        if len(ends) and (ends.min() < 0 or ends.max() >= n):
            raise ValueError(f"csr_graph: {name} holds vertex {int(ends[(ends < 0) | (ends >= n)][0])}, "
                             f"outside [0, {n}); pass n = the vertex count")  # fmt: skip
    kept = weight > 0
    src, dst, weight, order = src[kept], dst[kept], weight[kept], order[kept]
    rows = np.concatenate([src, dst])
    by_row = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    w = np.concatenate([weight, weight])
    return CSRGraph(
        indptr=indptr,
        indices=np.concatenate([dst, src])[by_row],
        weights=w[by_row],
        order=np.concatenate([order, order])[by_row],
        degree=np.bincount(rows, weights=w, minlength=n).astype(np.float64),
    )


def push_pagerank(
    graph: CSRGraph,
    seeds: np.ndarray | list[int],
    damping: float,
    tol: float = DEFAULT_TOL,
    before: int | None = None,
) -> np.ndarray:
    """``float64 [n]``: the personalised PageRank of ``graph`` reset at ``seeds`` (see the module
    docstring), each vertex at most about ``tol * max(deg_w(v), 1)`` below the exact value (unreached
    vertices 0).

    ``before``: the PageRank of the graph of the edges whose order key is below it (a time slice, when the
    keys are the edges' ranks in creation order), with no per-slice array over the whole graph: the pushed
    and touched rows' entries are masked, and their weighted degrees summed over the visible ones, as the
    push reads them. ``None``: every edge.

    Raises:
        ValueError: no seeds, a seed outside the graph, ``damping`` outside (0, 1) or ``tol`` <= 0.
    """
    n = graph.num_vertices
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    if not len(seeds):
        raise ValueError("push_pagerank: no seeds; pass at least one vertex to reset at")
    if seeds.min() < 0 or seeds.max() >= n:
        raise ValueError(f"push_pagerank: seed {int(seeds[(seeds < 0) | (seeds >= n)][0])} is outside the "
                         f"graph's {n} vertices")  # fmt: skip
    if not 0 < damping < 1:
        raise ValueError(f"push_pagerank: damping {damping} is outside (0, 1)")
    if not tol > 0:
        raise ValueError(f"push_pagerank: tol {tol} must be > 0")
    seed_rows, seed_counts = np.unique(seeds, return_counts=True)
    reset = seed_counts / len(seeds)
    indices, weights = graph.indices, graph.weights
    # a slice's weighted degrees are summed for each vertex the first time the push reads it (-1: not yet)
    degree = graph.degree if before is None else np.full(n, -1.0)

    def degree_of(vertices: np.ndarray) -> np.ndarray:
        if before is not None:
            need = vertices[degree[vertices] < 0]
            if len(need):
                offsets, counts = graph.rows(need)
                w = np.where(graph.order[offsets] < before, weights[offsets], 0.0)
                degree[need] = np.bincount(np.repeat(np.arange(len(need)), counts), weights=w,
                                           minlength=len(need))  # fmt: skip
        return degree[vertices]

    p = np.zeros(n)
    r = np.zeros(n)
    r[seed_rows] = reset
    # each round's pushes are summed per neighbour into ``acc`` (zeros between rounds) in the order of
    # ``nbr``, as a bincount over it would sum them, and the neighbours listed once, ascending
    acc = np.zeros(n)
    active = seed_rows
    while len(active):
        mass = r[active]
        r[active] = 0.0
        p[active] += (1.0 - damping) * mass
        spread = damping * mass
        deg = degree_of(active)
        dangling = deg <= 0
        touched = [seed_rows] if dangling.any() else []
        if dangling.any():  # a walker with nowhere to go jumps back to the reset distribution
            r[seed_rows] += spread[dangling].sum() * reset
        live = ~dangling
        if live.any():
            rows, share = active[live], spread[live] / deg[live]
            offsets, counts = graph.rows(rows)
            nbr, moved = indices[offsets], np.repeat(share, counts) * weights[offsets]
            if before is not None:  # the slice's edges only (a later edge moves nothing)
                visible = graph.order[offsets] < before
                nbr, moved = nbr[visible], moved[visible]
            if 8 * len(nbr) > n:  # a large front: one dense scatter beats sorting it
                add = np.bincount(nbr, weights=moved, minlength=n)
                r += add
                uniq = np.flatnonzero(add)
            else:
                np.add.at(acc, nbr, moved)
                uniq = np.sort(nbr)
                if len(uniq) > 1:
                    uniq = uniq[np.concatenate(([True], uniq[1:] != uniq[:-1]))]
                r[uniq] += acc[uniq]
                acc[uniq] = 0.0
            touched.append(uniq)
        if not touched:
            break
        cand = np.unique(np.concatenate(touched)) if len(touched) > 1 else touched[0]
        if before is None:
            active = cand[r[cand] >= tol * graph.push_scale[cand]]
        else:
            deg = degree_of(cand)
            active = cand[r[cand] >= tol * np.where(deg > 0, deg, 1.0)]
    return p
