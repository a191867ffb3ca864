"""Slate selection with exact propensities, per-session explorer quotas, and speculative candidates.

A *slate* is an ordered choice of ``k`` of a query's ``n`` scored candidates. Every shown item carries its
**propensity**: the marginal probability that it is in the slate at all under the policy that chose it (its
*inclusion probability*), which is what the per-item off-policy estimators in :mod:`signet_rl.learning.ope`
divide by. :func:`inclusion_probabilities` gives it for every candidate; :func:`select_slate` draws a slate
and returns the shown items' entries. Ties in ``scores`` always break by index (a stable sort), so "rank"
below means position in ``argsort(-scores, kind="stable")``.

Strategies, with ``k' = min(k, n)``:

``greedy``
    The top ``k'``. Inclusion 1 for them, 0 for the rest.

``epsilon``
    Slots are filled one at a time; each independently takes, with probability ``ε``, a uniformly random
    candidate among those not yet chosen, and otherwise the best-ranked one not yet chosen. The inclusion
    probabilities are exact (:func:`epsilon_greedy_inclusion`): after ``t`` slots the chosen set is a
    *prefix* of ranks ``0..p-1`` plus ``m = t - p`` "extras" that, given ``p``, are uniformly spread over
    ranks ``p+1..n-1`` (rank ``p`` itself is not chosen). A slot takes rank ``p`` with probability
    ``α = 1 - ε + ε / (n - t)``; the prefix then grows past the ``L`` extras that directly follow it, where
    ``P(L ≥ l) = m^(l) / (n - 1 - p)^(l)`` (falling factorials). Otherwise ``p`` stays. So ``p`` is a Markov
    chain with ``O(k²)`` states and transitions, and at the end a candidate of rank ``r`` is included with
    probability ``Σ_p P(p) · [r < p  or  (r > p) · (k' - p) / (n - 1 - p)]``.

``softmax``
    Plackett-Luce sampling without replacement at ``temperature`` ``T``: slot after slot, a remaining
    candidate ``j`` is drawn with probability proportional to ``w_j = exp(s_j / T)`` (drawn as Gumbel-top-k:
    the ``k'`` largest ``s_j / T + G_j``, ``G_j`` standard Gumbel). For ``k' = 1`` the inclusion is
    ``w_i / Σ w``; for ``k' > 1`` it has no closed form, so :func:`plackett_luce_inclusion` integrates it
    numerically (deterministic, no random draws): Plackett-Luce order is the arrival order of independent
    exponential clocks ``E_j ~ Exp(w_j)``, so

    .. math::

        P(i \\in \\text{slate}) = \\int_0^\\infty w_i e^{-w_i t}\\,
            P\\big(\\#\\{j \\ne i : E_j < t\\} < k'\\big)\\,dt,

    where the count is Poisson-binomial with ``P(E_j < t) = 1 - e^{-w_j t}``. With ``t = e^u`` the
    integrand is a smooth bump in ``u`` and the rectangle rule on a lattice of step 0.25 (over the windows
    where any bump is non-negligible) is accurate to about ``1e-9``; the Poisson-binomial terms without
    item ``i`` come from prefix and suffix convolutions truncated at ``k'`` counts, ``O(G n k')`` for ``G``
    grid points.

``thompson``
    Thompson sampling over ``S`` posterior draws of the scores, ``samples`` ``[S, n]``: one draw (row) is
    picked uniformly and its top ``k'`` are shown. Inclusion of a candidate is the share of rows whose top
    ``k'`` holds it: exact for this policy, and a Monte Carlo estimate (from the ``S`` draws the caller
    made) of the inclusion under the continuous posterior. A shown item's propensity is at least ``1/S``.

:class:`ExplorerQuota` counts explorer slots per timeline session, and :func:`speculative_candidates`
picks which candidates are worth an explorer slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from signet_rl.core.checks import check_integer, check_probability
from signet_rl.graph.arrays import GraphArrays
from signet_rl.learning.reinforcement import EdgeStats, path_edges
from signet_rl.traversal.path import Path

__all__ = [
    "STRATEGIES",
    "ExplorerQuota",
    "Slate",
    "Strategy",
    "epsilon_greedy_inclusion",
    "inclusion_probabilities",
    "plackett_luce_inclusion",
    "select_slate",
    "speculative_candidates",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

Strategy = Literal["greedy", "epsilon", "softmax", "thompson"]
STRATEGIES: tuple[str, ...] = ("greedy", "epsilon", "softmax", "thompson")

# Plackett-Luce quadrature: lattice step in u = log t, and how far below/above each bump's centre it reaches
# (a_i = w_i e^u runs from e^-25 to e^5 there; outside, the integrand is below 1e-10).
_PL_STEP = 0.25
_PL_BELOW = 25.0
_PL_ABOVE = 5.0
# Elements per intermediate array in a chunk of rows (bounds memory for batched calls).
_PL_CHUNK = 1 << 21


@dataclass(frozen=True)
class Slate:
    """A chosen slate.

    Attributes:
        indices: the chosen candidates, in slate order. Shape ``[k']``, int64.
        propensities: each chosen candidate's marginal probability of being in the slate under the policy
            that chose it. Shape ``[k']``, float64, in ``(0, 1]``.
        explored: True where the slot was filled by a uniformly random pick (only ``epsilon`` makes them).
            Shape ``[k']``, bool.
    """

    indices: IntArray
    propensities: FloatArray
    explored: BoolArray

    def __len__(self) -> int:
        return len(self.indices)


# -- validation ------------------------------------------------------------------------------------------


def _check_scores(scores: npt.ArrayLike) -> FloatArray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional [n], got shape {s.shape}")
    if not np.isfinite(s).all():
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise ValueError(f"scores[{bad}] is {float(s[bad])!r}; scores must be finite")
    return s


def _check_k(k: int) -> int:
    return check_integer("k", k, 0)


def _check_epsilon(epsilon: float) -> float:
    return check_probability("epsilon", epsilon)


def _check_temperature(temperature: float) -> float:
    if not (temperature > 0.0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    return float(temperature)


def _check_samples(samples: npt.ArrayLike | None, n: int) -> FloatArray:
    if samples is None:
        raise ValueError("strategy 'thompson' needs samples: posterior draws of the scores, shape [S, n]")
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != n or x.shape[0] < 1:
        raise ValueError(f"samples must have shape [S >= 1, n = {n}], got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("samples must be finite")
    return x


def _rank_order(scores: FloatArray) -> IntArray:
    """Candidates best first; ties by index."""
    return np.argsort(-scores, kind="stable").astype(np.int64)


# -- inclusion probabilities -----------------------------------------------------------------------------


def epsilon_greedy_inclusion(scores: npt.ArrayLike, k: int, epsilon: float) -> FloatArray:
    """Exact inclusion probabilities of slot-wise epsilon-greedy (see the module docstring).

    Args:
        scores: one score per candidate. Shape ``[n]``.
        k: slate size (``min(k, n)`` slots are filled).
        epsilon: each slot's probability of a uniformly random pick, in ``[0, 1]``.

    Returns:
        The probability that each candidate is in the slate. Shape ``[n]``; sums to ``min(k, n)``.

    >>> epsilon_greedy_inclusion([3.0, 2.0, 1.0], 1, 0.3).round(3).tolist()
    [0.8, 0.1, 0.1]
    """
    s = _check_scores(scores)
    k, eps = _check_k(k), _check_epsilon(epsilon)
    n = len(s)
    kk = min(k, n)
    if kk == n:
        return np.ones(n)
    prob = np.zeros(kk + 1)  # prob[p]: P(prefix length p) after t slots
    prob[0] = 1.0
    for t in range(kk):
        nxt = np.zeros(kk + 1)
        alpha = 1.0 - eps + eps / (n - t)
        for p in range(t + 1):
            if prob[p] == 0.0:
                continue
            m, free = t - p, n - 1 - p  # extras, and the ranks above p they are spread over
            nxt[p] += prob[p] * (1.0 - alpha)
            # P(L >= l) = m(m-1)..(m-l+1) / free(free-1)..(free-l+1), l = 0..m
            ge = np.cumprod(np.concatenate(([1.0], (m - np.arange(m)) / (free - np.arange(m)))))
            eq = ge - np.append(ge[1:], 0.0)
            nxt[p + 1 : p + 2 + m] += prob[p] * alpha * eq
        prob = nxt
    ranks = np.arange(n)[:, None]
    prefix = np.arange(kk + 1)[None, :]
    above = n - 1 - prefix
    extra = np.where(above > 0, (kk - prefix) / np.maximum(above, 1), 0.0)
    share = np.where(ranks < prefix, 1.0, np.where(ranks > prefix, extra, 0.0))
    by_rank = (prob[None, :] * share).sum(axis=1)
    out = np.empty(n)
    out[_rank_order(s)] = np.clip(by_rank, 0.0, 1.0)
    return out


def plackett_luce_inclusion(logits: npt.ArrayLike, k: int) -> FloatArray:
    """Inclusion probabilities of Plackett-Luce sampling of ``k`` without replacement (numerical, exact to
    about ``1e-9``; see the module docstring).

    Args:
        logits: ``s / T`` per candidate; one row ``[n]`` or a batch of rows ``[B, n]`` (each its own query).
        k: slate size.

    Returns:
        Same shape as ``logits``: each candidate's probability of being among the ``min(k, n)`` drawn.

    >>> plackett_luce_inclusion([0.0, 0.0, 0.0], 2).round(6).tolist()
    [0.666667, 0.666667, 0.666667]
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim not in (1, 2):
        raise ValueError(f"logits must have shape [n] or [B, n], got {z.shape}")
    if z.size and not np.isfinite(z).all():
        raise ValueError("logits must be finite")
    k = _check_k(k)
    rows = np.atleast_2d(z)
    b, n = rows.shape
    kk = min(k, n)
    if kk == 0:
        out = np.zeros_like(rows)
    elif kk == n:
        out = np.ones_like(rows)
    elif kk == 1:
        w = np.exp(rows - rows.max(axis=1, keepdims=True))
        out = w / w.sum(axis=1, keepdims=True)
    else:
        out = np.empty_like(rows)
        gaps = rows.max(axis=1, keepdims=True) - rows  # >= 0: bump of item i centred at u = gap_i
        grid = _pl_grid(gaps)
        chunk = max(1, _PL_CHUNK // (len(grid) * (n + 1) * kk))  # keeps [n + 1, k, chunk * G] bounded
        for start in range(0, b, chunk):
            out[start : start + chunk] = _pl_chunk(gaps[start : start + chunk], kk, grid)
    return out.reshape(z.shape) if z.ndim == 1 else out


def _pl_grid(gaps: FloatArray) -> FloatArray:
    """Lattice points ``u = j * step`` covering every item's window ``[gap - below, gap + above]``."""
    g = np.sort(gaps.ravel())
    lo = np.floor((g - _PL_BELOW) / _PL_STEP).astype(np.int64)
    hi = np.ceil((g + _PL_ABOVE) / _PL_STEP).astype(np.int64)
    # Merge the windows into disjoint runs of lattice points (a run starts where the windows so far end).
    starts = np.flatnonzero(np.concatenate(([True], lo[1:] > np.maximum.accumulate(hi)[:-1] + 1)))
    run_lo = lo[starts]
    run_hi = np.maximum.accumulate(hi)[np.append(starts[1:], len(hi)) - 1]
    count = run_hi - run_lo + 1
    first = np.repeat(run_lo - (np.cumsum(count) - count), count)
    return (first + np.arange(int(count.sum()))).astype(np.float64) * _PL_STEP


def _pl_chunk(gaps: FloatArray, k: int, u: FloatArray) -> FloatArray:
    """The quadrature for rows ``gaps`` ``[b, n]`` on grid ``u`` ``[G]``."""
    b, n = gaps.shape
    a = np.exp(u[None, None, :] - gaps.T[:, :, None]).reshape(n, -1)  # [n, b*G]: w_j t, with max w = 1
    q = np.exp(-a)  # P(clock j has not rung by t)
    p = -np.expm1(-a)
    # pre[j, c] = P(c of items 0..j-1 rang by t), c < k; suf[j, c] the same for items j..n-1.
    pre = np.zeros((n + 1, k, a.shape[1]))
    pre[0, 0] = 1.0
    for j in range(n):
        np.multiply(pre[j], q[j], out=pre[j + 1])
        pre[j + 1, 1:] += pre[j, :-1] * p[j]
    suf = np.zeros((n + 1, k, a.shape[1]))
    suf[n, 0] = 1.0
    for j in range(n - 1, -1, -1):
        np.multiply(suf[j + 1], q[j], out=suf[j])
        suf[j, 1:] += suf[j + 1, :-1] * p[j]
    at_most = suf[1:]  # turned in place into at_most[i, c] = P(<= c of the items after i rang)
    for c in range(1, k):
        at_most[:, c] += at_most[:, c - 1]
    fewer = pre[:n, 0] * at_most[:, k - 1]  # P(fewer than k others rang by t), item i left out
    for c in range(1, k):
        fewer += pre[:n, c] * at_most[:, k - 1 - c]
    out = _PL_STEP * (a * q * fewer).reshape(n, b, len(u)).sum(axis=2).T
    return np.clip(out, 0.0, 1.0)


def inclusion_probabilities(
    scores: npt.ArrayLike,
    k: int,
    strategy: Strategy | str,
    *,
    epsilon: float = 0.1,
    temperature: float = 1.0,
    samples: npt.ArrayLike | None = None,
) -> FloatArray:
    """Every candidate's probability of being in the slate under a strategy (see the module docstring).

    This is the single source of the propensities :func:`select_slate` logs, and of a *target* policy's
    inclusion probabilities for off-policy evaluation.

    Args:
        scores: one score per candidate (higher is better). Shape ``[n]``.
        k: slate size.
        strategy: ``greedy``, ``epsilon``, ``softmax`` or ``thompson``.
        epsilon: ``epsilon``'s random-slot probability.
        temperature: ``softmax``'s temperature.
        samples: ``thompson``'s posterior draws of the scores, ``[S, n]``.

    Returns:
        Shape ``[n]``, float64, summing to ``min(k, n)``.

    Raises:
        ValueError: an unknown strategy, bad ``k``/``epsilon``/``temperature``/``samples``, or non-finite
            scores (the message names the value).
    """
    s = _check_scores(scores)
    k = _check_k(k)
    n = len(s)
    kk = min(k, n)
    if strategy == "greedy":
        out = np.zeros(n)
        out[_rank_order(s)[:kk]] = 1.0
        return out
    if strategy == "epsilon":
        return epsilon_greedy_inclusion(s, k, epsilon)
    if strategy == "softmax":
        return plackett_luce_inclusion(s / _check_temperature(temperature), k)
    if strategy == "thompson":
        x = _check_samples(samples, n)
        top = np.argsort(-x, axis=1, kind="stable")[:, :kk]
        return np.bincount(top.ravel(), minlength=n) / x.shape[0]
    raise ValueError(f"unknown strategy {strategy!r}; known strategies: {', '.join(STRATEGIES)}")


# -- drawing a slate -------------------------------------------------------------------------------------


def select_slate(
    scores: npt.ArrayLike,
    k: int,
    strategy: Strategy | str,
    rng: np.random.Generator,
    *,
    epsilon: float = 0.1,
    temperature: float = 1.0,
    samples: npt.ArrayLike | None = None,
) -> Slate:
    """Draw a slate of ``min(k, n)`` candidates with the shown items' propensities.

    Randomness comes only from ``rng`` (``greedy`` draws nothing; ``epsilon`` one uniform per slot, plus one
    integer per random slot; ``softmax`` ``n`` Gumbels; ``thompson`` one integer); propensities are computed
    without random draws, so they never perturb the stream.

    Args:
        scores: one score per candidate (higher is better). Shape ``[n]``.
        k: slate size.
        strategy: ``greedy``, ``epsilon``, ``softmax`` or ``thompson``.
        rng: the generator to draw from.
        epsilon: ``epsilon``'s random-slot probability, in ``[0, 1]``.
        temperature: ``softmax``'s temperature, ``> 0``.
        samples: ``thompson``'s posterior draws of the scores, ``[S, n]``.

    Returns:
        The :class:`Slate`.

    >>> rng = np.random.default_rng(0)
    >>> s = select_slate(np.array([0.1, 0.9, 0.5]), 2, "greedy", rng)
    >>> s.indices.tolist(), s.propensities.tolist()
    ([1, 2], [1.0, 1.0])
    """
    s = _check_scores(scores)
    k = _check_k(k)
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known strategies: {', '.join(STRATEGIES)}")
    n = len(s)
    kk = min(k, n)
    explored = np.zeros(kk, dtype=np.bool_)
    if strategy == "greedy":
        idx = _rank_order(s)[:kk]
    elif strategy == "epsilon":
        eps = _check_epsilon(epsilon)
        order = _rank_order(s)
        remaining = np.ones(n, dtype=np.bool_)  # by rank
        chosen = np.empty(kk, dtype=np.int64)
        for t in range(kk):
            free = np.flatnonzero(remaining)
            if rng.random() < eps:
                r = int(free[rng.integers(len(free))])
                explored[t] = True
            else:
                r = int(free[0])
            remaining[r] = False
            chosen[t] = order[r]
        idx = chosen
    elif strategy == "softmax":
        keys = s / _check_temperature(temperature) + rng.gumbel(size=n)
        idx = np.argsort(-keys, kind="stable")[:kk].astype(np.int64)
    else:
        x = _check_samples(samples, n)
        idx = _rank_order(x[int(rng.integers(x.shape[0]))])[:kk]
    incl = inclusion_probabilities(s, k, strategy, epsilon=epsilon, temperature=temperature, samples=samples)
    # A drawn item has positive probability; the quadrature can round a vanishing one to 0.
    pscores = np.clip(incl[idx], np.finfo(np.float64).tiny, 1.0)
    return Slate(indices=idx, propensities=pscores, explored=explored)


# -- explorer quota --------------------------------------------------------------------------------------


@dataclass
class ExplorerQuota:
    """How many explorer slots each timeline session may still fill.

    Each session gets ``per_session`` explorer slots in all (not per query); :meth:`use` spends them.

    Args:
        per_session: explorer slots per session, in ``[0, max_per_session]``.
        max_per_session: the cap ``per_session`` is validated against (>= 0).

    >>> q = ExplorerQuota(per_session=1)
    >>> q.available("s1"), q.use("s1"), q.available("s1"), q.available("s2")
    (1, None, 0, 1)
    """

    per_session: int = 1
    max_per_session: int = 2
    _used: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        check_integer("max_per_session", self.max_per_session, 0)
        check_integer("per_session", self.per_session, 0, self.max_per_session)

    def used(self, session_id: str) -> int:
        """Explorer slots ``session_id`` has filled so far."""
        return self._used.get(session_id, 0)

    def available(self, session_id: str) -> int:
        """Explorer slots ``session_id`` may still fill (0 when spent)."""
        return max(0, self.per_session - self.used(session_id))

    def use(self, session_id: str, n: int = 1) -> None:
        """Spend ``n`` of ``session_id``'s explorer slots.

        Raises:
            ValueError: ``n`` negative, or more than :meth:`available`.
        """
        check_integer("n", n, 0)
        left = self.available(session_id)
        if n > left:
            raise ValueError(f"session {session_id!r} has {left} explorer slot(s) left, asked for {n}")
        self._used[session_id] = self.used(session_id) + n

    def reset(self, session_id: str | None = None) -> None:
        """Give a session (or every session, when None) its full quota back."""
        if session_id is None:
            self._used.clear()
        else:
            self._used.pop(session_id, None)


# -- speculative candidates ------------------------------------------------------------------------------


def _near_entries(arrays: GraphArrays, entries: Sequence[str]) -> BoolArray:
    """Entities within one hop of an entry entity (the entries included). Shape ``[N]``."""
    near = np.zeros(arrays.num_entities, dtype=np.bool_)
    idx = np.fromiter((arrays.entity_index[e] for e in entries if e in arrays.entity_index), np.int64)
    if len(idx):
        near[idx] = True
        slots, _ = arrays.frontier_slots(idx)
        near[arrays.dep_neighbor[slots]] = True
    return near


def speculative_candidates(
    paths: Sequence[Path],
    arrays: GraphArrays,
    edge_stats: EdgeStats | None,
    query_vec: npt.ArrayLike | None,
    entity_vectors: npt.ArrayLike | None,
    entries: Sequence[str],
    k: int,
) -> IntArray:
    """The candidates most worth an explorer slot: uncertain routes, or semantically close but graph-far ends.

    Each path ``p`` gets a speculation score, the sum of two terms in ``[0, 1]``:

    * **uncertain edges**: ``max over p's dependency edges e of max(1 - c_e, 1 / (1 + n_e))``, where ``c_e``
      is the edge's confidence and ``n_e`` how often it was walked (``edge_stats.walks``; 0 when
      ``edge_stats`` is None). A path with no dependency edge scores 0 here.
    * **close but far**: ``max(0, cos(query_vec, v_end))`` for the entity ``end`` the path ends in, when
      ``end`` is at hop distance >= 2 from every entry entity (neither an entry nor a neighbour of one);
      otherwise 0. Skipped (0) when ``query_vec`` or ``entity_vectors`` is None.

    The ``k`` highest-scoring paths with a positive score are returned, best first (ties: the closer end
    to the query, then the lower index).

    Args:
        paths: the query's candidate paths.
        arrays: the graph they were walked on.
        edge_stats: learned edge statistics (walk counts), or None.
        query_vec: the query embedding ``[d]``, or None.
        entity_vectors: one embedding per entity, rows aligned with ``arrays.entity_ids`` ``[N, d]``, or None.
        entries: the query's entry entity ids (unknown ids are ignored).
        k: how many to return at most.

    Returns:
        Indices into ``paths``, best first. Shape ``[<= k]``, int64.
    """
    k = _check_k(k)
    num = len(paths)
    if num == 0 or k == 0:
        return np.zeros(0, dtype=np.int64)
    # Uncertain edges, vectorised over the concatenated edges of all paths.
    edges, owner = path_edges(paths, arrays)
    walks = edge_stats.walks[edges] if edge_stats is not None else np.zeros(len(edges))
    per_edge = np.maximum(1.0 - arrays.edge_confidence[edges].astype(np.float64), 1.0 / (1.0 + walks))
    uncertain = np.zeros(num)
    np.maximum.at(uncertain, owner, per_edge)
    # Close in meaning, far in the graph.
    close = np.zeros(num)
    if query_vec is not None and entity_vectors is not None:
        vecs = np.asarray(entity_vectors, dtype=np.float64)
        q = np.asarray(query_vec, dtype=np.float64).reshape(-1)
        if vecs.shape != (arrays.num_entities, len(q)):
            raise ValueError(
                f"entity_vectors must have shape [{arrays.num_entities}, {len(q)}], got {vecs.shape}"
            )
        # a path with no entity (the hybrid entry's floor and session steps: memories only) is never
        # "close in meaning, far in the graph": it keeps close = 0
        ends = np.fromiter(
            (arrays.entity_index[p.entities[-1]] if p.entities else -1 for p in paths), np.int64, num
        )
        has = ends >= 0
        v = vecs[np.where(has, ends, 0)]
        denom = np.linalg.norm(v, axis=1) * np.linalg.norm(q)
        cos = np.divide(v @ q, denom, out=np.zeros(num), where=denom > 0)
        far = has & ~_near_entries(arrays, entries)[np.where(has, ends, 0)]
        close = np.where(far, np.clip(cos, 0.0, 1.0), 0.0)
    score = uncertain + close
    order = np.lexsort((np.arange(num), -close, -score))
    order = order[score[order] > 0]
    return order[:k].astype(np.int64)
