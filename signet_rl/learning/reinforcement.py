"""Path reinforcement: bounded multiplicative edge weights learned from ratings (the desire paths).

:class:`EdgeStats` keeps one weight per dependency edge, intent and time-of-day bucket,
``w[e, intent, bucket]``, starting at ``init`` (1.0). A rating ``r ∈ [-1, 1]`` of a shown path updates
every edge on it once (an edge walked twice in one path counts once):

.. math::

    w \\leftarrow \\operatorname{clip}\\big(w \\cdot e^{\\,\\mathrm{lr} \\cdot r},\\ \\mathrm{floor},\\
        \\mathrm{ceiling}\\big)

so a weight never leaves ``[floor, ceiling]``, and because ``floor > 0`` one bad rating never switches an
edge off: after a ``-1`` it is ``max(floor, w · e^{-lr})``. Edges that go unwalked *cool*: each step
(:meth:`EdgeStats.cool`) every edge not walked in it relaxes toward ``init``,

.. math::

    w \\leftarrow \\mathrm{init} + (1 - \\mathrm{cool})\\,(w - \\mathrm{init}),

which moves it toward ``init`` without crossing it, so bright routes fade and dim ones recover slowly when
nobody walks them. The step clock also dates each edge's last reinforcement (for the recency feature).

The weights feed back into traversal through :meth:`EdgeStats.edge_weight_fn`, a
:data:`~signet_rl.traversal.walk.EdgeWeight` for :class:`~signet_rl.traversal.walk.Traverser` that orders
each entity's edges by ``confidence × strength × w``, and into scorers through :meth:`EdgeStats.features`.

    >>> stats = EdgeStats(num_edges=3)
    >>> stats.reinforce(np.array([0, 2, 2]), "what", 0, +1)
    >>> stats.weight(np.array([0, 1, 2]), "what", 0).astype(float).round(4).tolist()
    [1.2214, 1.0, 1.2214]
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.core.checks import check_integer, check_probability, check_range
from signet_rl.graph.arrays import GraphArrays
from signet_rl.traversal.path import Path
from signet_rl.traversal.walk import EdgeWeight

if TYPE_CHECKING:  # the scorers package imports igraph; only the type is needed here
    from signet_rl.scorers.base import Feedback

__all__ = ["DEFAULT_INTENTS", "EdgeStats", "edge_index", "path_edges"]

#: Path strategies of the hybrid entry (:mod:`signet_rl.pipeline.hybrid`): not intents, never reinforced
#: per intent (floor: flat's hits; turn/session/next/previous: session steps; mention/dependency: walks).
HYBRID_STRATEGIES: frozenset[str] = frozenset(
    {"floor", "turn", "session", "next", "previous", "mention", "dependency"}
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

#: The traversal strategies that walk edges (``none`` walks nothing).
DEFAULT_INTENTS: tuple[str, ...] = ("what", "relate", "action", "changed")

_INDEX_CACHE: weakref.WeakKeyDictionary[GraphArrays, dict[str, int]] = weakref.WeakKeyDictionary()


def edge_index(arrays: GraphArrays) -> Mapping[str, int]:
    """Dependency store id -> edge index (row of ``arrays.edge_ids``); built once per snapshot, cached."""
    index = _INDEX_CACHE.get(arrays)
    if index is None:
        index = {str(d): i for i, d in enumerate(arrays.edge_ids.tolist())}
        _INDEX_CACHE[arrays] = index
    return index


def path_edges(paths: Sequence[Path], arrays: GraphArrays) -> tuple[IntArray, IntArray]:
    """The dependency edges of many paths, concatenated.

    Returns:
        ``(edges, owner)``: edge indices in hop order, path by path, and the position in ``paths`` of each.
        Shapes ``[M]`` and ``[M]``, int64.

    Raises:
        ValueError: a dependency id not in ``arrays``, naming it and its path.
    """
    index = edge_index(arrays)
    ids = [p.dependencies for p in paths]
    counts = np.fromiter((len(d) for d in ids), np.int64, len(ids))
    flat = [d for deps in ids for d in deps]
    try:
        edges = np.fromiter((index[d] for d in flat), np.int64, len(flat))
    except KeyError as err:
        owner = next(i for i, deps in enumerate(ids) if err.args[0] in deps)
        raise ValueError(
            f"dependency {err.args[0]!r} of path {paths[owner].serialise()!r} is not in this graph"
        ) from None
    return edges, np.repeat(np.arange(len(ids), dtype=np.int64), counts)


class EdgeStats:
    """Learned desire-path weights per edge, intent and time bucket, with walk counts and recency.

    Args:
        num_edges: ``E``, the graph's dependency count (``arrays.num_dependencies``).
        intents: the intents weights are kept for (the traversal strategies).
        time_buckets: ``B``, hour-of-day buckets (:meth:`time_bucket`).
        lr: step size of the multiplicative update, ``> 0``.
        floor: lowest weight, ``> 0``.
        ceiling: highest weight, ``>= floor``.
        cool: share of the distance to ``init`` an unwalked edge recovers per step, in ``[0, 1]``; kept as
            :attr:`cool_rate` (:meth:`cool` is the step).
        init: starting weight, in ``[floor, ceiling]``.

    Attributes:
        weights: ``w``. Shape ``[E, len(intents), B]``, float32.
        walks: how many rated paths walked each edge. Shape ``[E]``, int64.
        last_update: the step of each edge's last reinforcement, ``-1`` for never. Shape ``[E]``, int64.
        step: the step clock (advanced by :meth:`cool` and :meth:`decay`).

    Raises:
        ValueError: a hyperparameter out of range, naming it and the range.
    """

    def __init__(
        self,
        num_edges: int,
        intents: Sequence[str] = DEFAULT_INTENTS,
        time_buckets: int = 4,
        lr: float = 0.2,
        floor: float = 0.2,
        ceiling: float = 3.0,
        cool: float = 0.01,
        init: float = 1.0,
    ) -> None:
        check_integer("num_edges", num_edges, 0)
        intents = tuple(intents)
        if not intents or len(set(intents)) != len(intents) or not all(isinstance(i, str) for i in intents):
            raise ValueError(f"intents must be distinct strings, at least one, got {intents!r}")
        check_integer("time_buckets", time_buckets, 1, 24)
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
        if not (math.isfinite(floor) and floor > 0):
            raise ValueError(f"floor must be a finite number > 0, got {floor!r}")
        if not (math.isfinite(ceiling) and ceiling >= floor):
            raise ValueError(f"ceiling must be a finite number >= floor ({floor!r}), got {ceiling!r}")
        if not floor <= init <= ceiling:
            raise ValueError(f"init must be in [floor, ceiling] = [{floor!r}, {ceiling!r}], got {init!r}")
        check_probability("cool", cool)
        self.num_edges = int(num_edges)
        self.intents = intents
        self.time_buckets = time_buckets
        self.lr = float(lr)
        self.floor = float(floor)
        self.ceiling = float(ceiling)
        self.cool_rate = float(cool)
        self.init = float(init)
        self._intent = {name: i for i, name in enumerate(intents)}
        self.weights: FloatArray = np.full((self.num_edges, len(intents), time_buckets), init, np.float32)
        self.walks: IntArray = np.zeros(self.num_edges, dtype=np.int64)
        self.last_update: IntArray = np.full(self.num_edges, -1, dtype=np.int64)
        self.step = 0

    def __repr__(self) -> str:
        return (
            f"EdgeStats(num_edges={self.num_edges}, intents={self.intents!r}, "
            f"time_buckets={self.time_buckets}, lr={self.lr}, floor={self.floor}, ceiling={self.ceiling}, "
            f"cool={self.cool_rate}, init={self.init})"
        )

    # -- indexing helpers ------------------------------------------------------------------------------

    def _intent_index(self, intent: str) -> int:
        if intent not in self._intent:
            raise ValueError(f"unknown intent {intent!r}; known intents: {', '.join(self.intents)}")
        return self._intent[intent]

    def _bucket(self, bucket: int) -> int:
        return check_integer("bucket", bucket, 0, self.time_buckets - 1)

    def _edges(self, edge_idx: npt.ArrayLike) -> IntArray:
        e = np.asarray(edge_idx)
        if e.size == 0:
            return np.zeros(0, dtype=np.int64)
        if e.ndim != 1 or not np.issubdtype(e.dtype, np.integer):
            raise ValueError(f"edge_idx must be a 1-d integer array, got dtype {e.dtype} shape {e.shape}")
        if e.min() < 0 or e.max() >= self.num_edges:
            bad = e[(e < 0) | (e >= self.num_edges)][0]
            raise ValueError(f"edge index {int(bad)} outside [0, {self.num_edges})")
        return e.astype(np.int64, copy=False)

    def _check_arrays(self, arrays: GraphArrays) -> None:
        if arrays.num_dependencies != self.num_edges:
            raise ValueError(
                f"graph has {arrays.num_dependencies} dependencies but these EdgeStats hold {self.num_edges}"
            )

    def time_bucket(self, ts: pd.Timestamp | float | None) -> int:
        """The hour-of-day bucket of a time: ``floor(hour * B / 24)``.

        The hour is the timestamp's own wall-clock hour (its time zone when tz-aware; UTC for naive ones and
        for epoch seconds). ``None`` or ``NaT`` (an undated query) is bucket 0.

        >>> EdgeStats(1, time_buckets=4).time_bucket(pd.Timestamp("2026-01-01 13:30"))
        2
        """
        if ts is None or (not isinstance(ts, int | float) and pd.isna(ts)):
            return 0
        if isinstance(ts, int | float | np.integer | np.floating):
            if not math.isfinite(float(ts)):
                return 0
            ts = pd.Timestamp(float(ts), unit="s", tz="UTC")
        return int(pd.Timestamp(ts).hour * self.time_buckets // 24)

    # -- updates ---------------------------------------------------------------------------------------

    def reinforce(self, edge_idx: npt.ArrayLike, intent: str, bucket: int, rating: float) -> None:
        """Apply one rating to the edges of one path: ``w <- clip(w * exp(lr * rating), floor, ceiling)``.

        Args:
            edge_idx: the path's edge indices (duplicates are updated once).
            intent: which intent's weights to update.
            bucket: which time bucket's weights to update.
            rating: in ``[-1, 1]`` (the rater gives -1, 0 or +1).

        Raises:
            ValueError: a rating outside ``[-1, 1]`` or NaN, an unknown intent, a bad bucket or edge index.
        """
        check_range("rating", rating, -1, 1)
        i, b = self._intent_index(intent), self._bucket(bucket)
        e = np.unique(self._edges(edge_idx))
        factor = np.float32(math.exp(self.lr * float(rating)))
        w = self.weights[e, i, b] * factor
        self.weights[e, i, b] = np.clip(w, np.float32(self.floor), np.float32(self.ceiling))
        self.walks[e] += 1
        self.last_update[e] = self.step

    def _relax(self, mask: npt.NDArray[np.bool_] | slice, steps: int) -> None:
        w = self.weights[mask]
        init = np.float32(self.init)
        new = (self.init + (1.0 - self.cool_rate) ** steps * (w.astype(np.float64) - self.init)).astype(
            np.float32
        )
        # Rounding must never carry a weight past init, nor away from it.
        self.weights[mask] = np.clip(new, np.minimum(w, init), np.maximum(w, init))

    def cool(self, step_edges: npt.ArrayLike | None = None) -> None:
        """End a step: each edge *not* in ``step_edges`` relaxes toward ``init`` by ``cool``; the clock ticks.

        Args:
            step_edges: the edges walked in this step (they keep their weight); None or empty: all cool.
        """
        walked = np.zeros(self.num_edges, dtype=np.bool_)
        if step_edges is not None:
            walked[self._edges(step_edges)] = True
        self._relax(~walked, 1)
        self.step += 1

    def decay(self, steps: int = 1) -> None:
        """Let ``steps`` steps pass with nothing walked: ``w <- init + (1 - cool)^steps (w - init)``."""
        check_integer("steps", steps, 0)
        self._relax(slice(None), steps)
        self.step += steps

    def apply(self, feedback: Sequence[Feedback], bucket: int | None = None) -> None:
        """One step of path reinforcement from a batch of rated interactions.

        Every shown path with a rating is reinforced in its own ``path.strategy`` (the intent it was walked
        for) and the time bucket of its query (``bucket`` overrides); then :meth:`cool` runs once with the
        edges of every shown path (rated or not) as this step's walked edges.

        All or nothing: every item is checked before any weight changes.

        Raises:
            ValueError: a bad Feedback (:func:`~signet_rl.scorers.base.check_feedback`, run again here since
                a Feedback can be changed after it was built), a rated path whose strategy is not one of
                :attr:`intents`, a bad ``bucket``, or a dependency not in the graph.
        """
        from signet_rl.scorers.base import check_feedback  # here: the scorers package imports igraph

        for fb in feedback:
            check_feedback(fb)
        # Resolve and check everything first, then update: a bad item anywhere changes nothing.
        walked: list[IntArray] = []
        updates: list[tuple[IntArray, str, int, float]] = []
        for fb in feedback:
            self._check_arrays(fb.context.arrays)
            when: Any = fb.context.timestamp if fb.context.timestamp is not None else fb.query.timestamp
            b = self.time_bucket(when) if bucket is None else self._bucket(bucket)
            for j, rating in zip(fb.shown, fb.ratings, strict=True):
                path = fb.paths[j]
                edges = self.edges_of(path, fb.context.arrays)
                walked.append(edges)
                if rating is not None and path.strategy in HYBRID_STRATEGIES:
                    # the hybrid entry's floor, session steps and entity walks follow no intent's strategy:
                    # their edges count as walked, but no intent's weights learn from them
                    continue
                if rating is not None:
                    self._intent_index(path.strategy)
                    updates.append((edges, path.strategy, b, rating))
        for edges, intent, b, rating in updates:
            self.reinforce(edges, intent, b, rating)
        self.cool(np.concatenate(walked) if walked else None)

    # -- reads -----------------------------------------------------------------------------------------

    def weight(
        self, edge_idx: npt.ArrayLike, intent: str | None = None, bucket: int | None = None
    ) -> FloatArray:
        """Weights of some edges for one intent and bucket; ``None`` averages over that axis.

        Returns:
            Shape ``[len(edge_idx)]``, float32.
        """
        w = self.weights[self._edges(edge_idx)]
        w = w[:, [self._intent_index(intent)]] if intent is not None else w
        w = w[:, :, [self._bucket(bucket)]] if bucket is not None else w
        return w.mean(axis=(1, 2), dtype=np.float64).astype(np.float32)

    def edge_weight_fn(self, intent: str | None = None, bucket: int | None = None) -> EdgeWeight:
        """A :data:`~signet_rl.traversal.walk.EdgeWeight` for the traverser: per CSR slot,
        ``dep_confidence × dep_strength × w[dep_edge]`` for this intent and bucket (None: averaged).

        The function reads the live weights, so later updates take effect without rebuilding it.

        >>> # Traverser(arrays, graph, edge_weight=stats.edge_weight_fn("what", 0))
        """
        if intent is not None:
            self._intent_index(intent)
        if bucket is not None:
            self._bucket(bucket)

        def edge_weight(arrays: GraphArrays, slots: IntArray) -> FloatArray:
            self._check_arrays(arrays)
            w = self.weight(arrays.dep_edge[slots], intent, bucket)
            return arrays.dep_confidence[slots] * arrays.dep_strength[slots] * w

        return edge_weight

    def features(self, edge_idx: npt.ArrayLike) -> FloatArray:
        """Per-edge features for scorers: mean log weight, ``log1p(walks)``, recency.

        Recency is ``1 / (1 + step - last_update)`` (1 when reinforced this step, falling with age), 0 for an
        edge never reinforced.

        Returns:
            Shape ``[len(edge_idx), 3]``, float32.
        """
        e = self._edges(edge_idx)
        logw = np.log(self.weights[e].astype(np.float64)).mean(axis=(1, 2))
        last = self.last_update[e]
        recency = np.where(last >= 0, 1.0 / (1.0 + self.step - np.maximum(last, 0)), 0.0)
        return np.stack([logw, np.log1p(self.walks[e]), recency], axis=1).astype(np.float32)

    def edges_of(self, path: Path, arrays: GraphArrays) -> IntArray:
        """The edge indices of a path's dependency hops, in hop order (the id -> index map is cached)."""
        self._check_arrays(arrays)
        return path_edges([path], arrays)[0]

    def edges_of_paths(self, paths: Sequence[Path], arrays: GraphArrays) -> tuple[IntArray, IntArray]:
        """:func:`path_edges` for many paths: ``(edges, owner)``."""
        self._check_arrays(arrays)
        return path_edges(paths, arrays)

    # -- checkpoints -----------------------------------------------------------------------------------

    def carry_over(self, old: EdgeStats, old_index: Mapping[str, int], new_index: Mapping[str, int]) -> None:
        """Take ``old``'s learning onto these statistics of a re-indexed graph: for every edge both
        indexes hold (dependency id -> edge row), its weights, walks and last update; and ``old``'s step.
        An edge only this graph has keeps what it starts with here."""
        pairs = np.asarray([(i, new_index[e]) for e, i in old_index.items() if e in new_index],
                           dtype=np.int64)
        if len(pairs):
            self.weights[pairs[:, 1]] = old.weights[pairs[:, 0]]
            self.walks[pairs[:, 1]] = old.walks[pairs[:, 0]]
            self.last_update[pairs[:, 1]] = old.last_update[pairs[:, 0]]
        self.step = old.step

    def state_dict(self) -> dict[str, np.ndarray]:
        """The learned state and the hyperparameters, as numpy arrays (``np.savez`` them, no pickle)."""
        return {
            "weights": self.weights.copy(),
            "walks": self.walks.copy(),
            "last_update": self.last_update.copy(),
            "step": np.asarray(self.step, dtype=np.int64),
            "intents": np.asarray(self.intents, dtype=np.str_),
            "hyper": np.asarray([self.lr, self.floor, self.ceiling, self.cool_rate, self.init]),
        }

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        """Load learned state saved by :meth:`state_dict` (hyperparameters stay this object's own).

        Raises:
            ValueError: a missing key, or a shape or intent list that does not match this object.
        """
        for key in ("weights", "walks", "last_update", "step", "intents"):
            if key not in state:
                raise ValueError(f"state_dict has no {key!r}")
        intents = tuple(str(i) for i in np.asarray(state["intents"]).tolist())
        if intents != self.intents:
            raise ValueError(f"state_dict intents {intents!r} differ from {self.intents!r}")
        weights = np.asarray(state["weights"], dtype=np.float32)
        if weights.shape != self.weights.shape:
            raise ValueError(f"state_dict weights have shape {weights.shape}, expected {self.weights.shape}")
        for key in ("walks", "last_update"):
            if np.shape(state[key]) != (self.num_edges,):
                raise ValueError(
                    f"state_dict {key} have shape {np.shape(state[key])}, expected ({self.num_edges},)"
                )
        self.weights = weights.copy()
        self.walks = np.asarray(state["walks"], dtype=np.int64).copy()
        self.last_update = np.asarray(state["last_update"], dtype=np.int64).copy()
        self.step = int(state["step"])

    @classmethod
    def from_state_dict(cls, state: Mapping[str, np.ndarray]) -> EdgeStats:
        """Rebuild an :class:`EdgeStats`, hyperparameters included, from :meth:`state_dict`."""
        weights = np.asarray(state["weights"])
        lr, floor, ceiling, cool, init = (float(x) for x in np.asarray(state["hyper"]).tolist())
        intents = tuple(str(i) for i in np.asarray(state["intents"]).tolist())
        stats = cls(weights.shape[0], intents, weights.shape[2], lr, floor, ceiling, cool, init)
        stats.load_state_dict(state)
        return stats
