"""``signet_rl/PathBandit-v0``: the contextual bandit over one query's candidate paths.

An episode is one query (docs/design.md §1, contextual bandit): the environment runs the desire-path pipeline
(predicted intent, searched entry entities, bounded walk: :class:`~signet_rl.envs.common.CandidatePipeline`)
and shows the candidates' features; the agent picks one path (or a slate of ``slate_size`` distinct paths);
each chosen path becomes a constructed memory (:meth:`MemoryBuilder.construct`) that the simulated rater
rates; the episode ends after that one step.

Observation (``Dict`` of fixed-shape arrays; never ground truth):

==========  ==============================  ==========================================================
``query``   ``float32 [Dq]``                :class:`~signet_rl.scorers.features.QueryFeaturizer`:
                                            embedding, predicted intent one-hot, hour/weekday sin/cos
``paths``   ``float32 [max_paths, F]``      :class:`~signet_rl.scorers.features.PathFeaturizer` rows of
                                            the candidates in the order the walk found them, plus a last
                                            column ``walk_rank`` (position / ``max_paths``: the intent's
                                            strategy lists its surest paths first); zeros below the last
                                            candidate; values clipped to ``[-1e3, 1e3]``
``mask``    ``int8 [max_paths]``            1 for a real candidate
==========  ==============================  ==========================================================

``max_paths`` is the traversal config's (50 by default); ``info["action_mask"]`` repeats ``mask``.

Action: ``Discrete(max_paths)`` — the index of the path to show — or, with ``slate_size=k > 1``,
``MultiDiscrete([max_paths] * k)``: the slate in order.

Reward (``reward="sum"``, the default)::

    r = sum_{shown paths p} rating(p)  -  invalid_penalty * (min(k, n_valid) - n_shown)

where ``rating(p)`` is the simulated rater's -1 / 0 / +1 for the constructed memory of ``p`` (an unrated
memory, ``None``, counts 0), ``n_shown`` is the number of distinct valid indices in the action, and
``n_valid`` the number of candidates. So an index that is masked or repeats an earlier slot shows nothing
and costs ``invalid_penalty`` (default 0.1) — but only for slots that could have been filled.
``reward="mean"`` divides the first term by ``n_shown`` (0 when nothing is shown). ``strict=True`` raises
``ValueError`` (naming the action and the mask) wherever the default charges the penalty.

``info``: ``query_id``, ``intent``, ``action_mask``; after the step also ``shown`` (``int64 [k]``: the
candidate shown by each slot, -1 for a slot that showed nothing), ``ratings`` (``int8 [k]``: each slot's
rating, 0 when unrated or empty), ``rated`` (``bool [k]``: whether the slot's memory was rated) and
``penalty``. With ``oracle=True`` (evaluation only) every info also has ``oracle``: ``float32 [max_paths]``,
the noiseless rating of every candidate (0 below the last) — never in the observation.

Queries with no candidate (non-queries, intent ``none``: nothing should be injected; or no entry entity
found) are left out of the episode schedule by default. With ``include_empty=True`` they are served with
an all-zero mask; any action then shows nothing and earns 0, without penalty (injecting nothing is the
right answer for a non-query). ``reset(options={"query_id": ...})`` serves that query whatever its
candidates.

    >>> import gymnasium as gym, signet_rl.envs  # doctest: +SKIP
    >>> env = gym.make("signet_rl/PathBandit-v0", dataset="synthetic:small", slate_size=2)  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> obs["paths"].shape, env.action_space  # doctest: +SKIP
    ((50, 29), MultiDiscrete([50 50]))

``env.feature_names`` names the ``paths`` columns.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from signet_rl.core.checks import check_range
from signet_rl.core.types import Query
from signet_rl.envs.common import CandidatePipeline, DatasetLike, QueryEpisodeEnv, action_index
from signet_rl.retrieval.flat import BEST_FLAT
from signet_rl.scorers.features import PathFeaturizer
from signet_rl.traversal.config import TraversalConfig

__all__ = ["FEATURE_BOUND", "REWARDS", "PathBanditEnv"]

#: Path features are clipped to ``[-FEATURE_BOUND, FEATURE_BOUND]`` (a finite Box).
FEATURE_BOUND = 1e3
#: How the ratings of a slate add up.
REWARDS: tuple[str, ...] = ("sum", "mean")


@dataclass
class _Shown:
    """One query's candidate data, computed once: features, validity, and what each memory holds."""

    paths: npt.NDArray[np.float32]  # [max_paths, F]
    mask: npt.NDArray[np.int8]  # [max_paths]
    items: list[list[str]]  # per candidate: the truth-kind items of its constructed memory
    query_vec: npt.NDArray[np.float32]  # [Dq]
    intent: str


class PathBanditEnv(QueryEpisodeEnv):
    """One query per episode; the action shows one path (or a slate). See the module docstring.

    Args:
        dataset: a dataset spec (``synthetic:small``, ``kg:kinship``, ...) or a loaded dataset.
        split: the split episodes draw queries from (``train``, ``validation``, ``test``, ``all``).
        traversal: traversal budgets or overrides (``max_paths`` sets the action space).
        slate_size: paths shown per query (1: ``Discrete``; more: ``MultiDiscrete``), in
            ``[1, max_paths]``.
        reward: ``sum`` or ``mean`` of the shown paths' ratings.
        order: ``random`` or ``sequential`` query order.
        include_empty: serve queries with no candidate (all-zero mask) instead of skipping them.
        invalid_penalty: cost of a slot that shows nothing though a candidate was left, >= 0.
        strict: raise ``ValueError`` instead of charging ``invalid_penalty``.
        oracle: add the noiseless per-candidate ratings to ``info["oracle"]`` (evaluation only).
        noise_rate: the simulated rater's label-flip probability.
        rating_prob: the probability that the rater rates a memory at all.
        encoder: the encoder of entry search, attribute relevance and features.
        seed: seeds the environment when given (as ``reset(seed=...)`` would).
        flat: the flat variant whose hits are the hybrid entry's floor (traversal ``floor`` / ``session``
            / ``entity_walks``; default ``best_flat``, frozen per dataset family).

    Raises:
        ValueError: a bad argument (naming it and the allowed values), or an unknown dataset spec
            (the registry's message).
    """

    env_name = "PathBandit"

    def __init__(
        self,
        dataset: DatasetLike = "synthetic:small",
        split: str = "train",
        traversal: TraversalConfig | Mapping[str, Any] | None = None,
        slate_size: int = 1,
        reward: str = "sum",
        order: str = "random",
        include_empty: bool = False,
        invalid_penalty: float = 0.1,
        strict: bool = False,
        oracle: bool = False,
        noise_rate: float = 0.05,
        rating_prob: float = 0.8,
        encoder: str = "hashing",
        seed: int | None = None,
        flat: str = BEST_FLAT,
    ) -> None:
        self._init_args: dict[str, Any] = {k: v for k, v in locals().items() if k != "self"}
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        check_range("invalid_penalty", invalid_penalty, 0)
        self.pipeline = CandidatePipeline.shared(dataset, traversal, encoder, flat=flat)
        self.config = self.pipeline.config
        n = self.config.max_paths
        if isinstance(slate_size, bool) or not isinstance(slate_size, int) or not 1 <= slate_size <= n:
            raise ValueError(f"slate_size must be an integer in [1, {n}] (max_paths), got {slate_size!r}")
        self.slate_size = slate_size
        self.reward_mode = reward
        self.include_empty = bool(include_empty)
        self.invalid_penalty = float(invalid_penalty)
        self.strict = bool(strict)
        self.oracle = bool(oracle)
        self._episodes(split, order, noise_rate, rating_prob)
        self._featurizers: dict[str, PathFeaturizer] = {}
        graph_id = next(iter(self.pipeline.dataset.graphs))
        self.feature_names: tuple[str, ...] = (*self._featurizer(graph_id).names, "walk_rank")
        qdim = self.pipeline.query_features.dim
        self.observation_space = spaces.Dict(
            {
                "query": spaces.Box(-1.0, 1.0, (qdim,), np.float32),
                "paths": spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, (n, len(self.feature_names)), np.float32),
                "mask": spaces.MultiBinary(n),
            }
        )
        self.action_space: spaces.Space[Any] = (
            spaces.Discrete(n) if slate_size == 1 else spaces.MultiDiscrete([n] * slate_size)
        )
        self._shown: OrderedDict[str, _Shown] = OrderedDict()
        self._query_id: str | None = None
        self._done = True
        if seed is not None:
            self.reset(seed=seed)

    # -- gymnasium API ---------------------------------------------------------------------------------

    def _begin(self, query: Query) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start the episode of ``query`` (:meth:`QueryEpisodeEnv.reset`): its candidates, shown."""
        self._query_id = query.id
        self._done = False
        shown = self._data(self._query_id)
        return self._obs(shown), self._info(shown)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Show the chosen path(s), rate them, end the episode.

        Raises:
            RuntimeError: the episode has ended (or never started): call ``reset()``.
            ValueError: an action outside the action space; in strict mode a masked or repeated index.
        """
        if self._done or self._query_id is None:
            raise RuntimeError("PathBandit: step() called after the episode ended; call reset() first")
        shown = self._data(self._query_id)
        slots = self._slots(action)
        n_valid = int(shown.mask.sum())
        k = self.slate_size
        picked = np.full(k, -1, dtype=np.int64)
        ratings = np.zeros(k, dtype=np.int8)
        rated = np.zeros(k, dtype=bool)
        seen: set[int] = set()
        for j, i in enumerate(slots):
            if shown.mask[i] and i not in seen and len(seen) < n_valid:
                seen.add(i)
                picked[j] = i
        n_shown = len(seen)
        missed = min(k, n_valid) - n_shown
        if missed and self.strict:
            raise ValueError(
                f"PathBandit (strict): action {self._action_repr(action)} shows {n_shown} distinct valid "
                f"paths where {min(k, n_valid)} could be shown; mask={shown.mask.tolist()}"
            )
        query = self.pipeline.query(self._query_id)
        for j in range(k):
            if picked[j] >= 0:
                r = self.rating.rate(query, shown.items[int(picked[j])])
                if r is not None:
                    ratings[j], rated[j] = r, True
        total = float(ratings.sum())
        if self.reward_mode == "mean":
            total = total / n_shown if n_shown else 0.0
        penalty = self.invalid_penalty * missed
        self._done = True
        info = self._info(shown)
        info.update(shown=picked, ratings=ratings, rated=rated, penalty=penalty)
        return self._obs(shown), total - penalty, True, False, info

    # -- internals -------------------------------------------------------------------------------------

    def _featurizer(self, graph_id: str) -> PathFeaturizer:
        if graph_id not in self._featurizers:
            state = self.pipeline.state(graph_id)
            self._featurizers[graph_id] = PathFeaturizer(state.graph, state.arrays, encoder=state.encoder)
        return self._featurizers[graph_id]

    def _usable(self, query: Query) -> bool:
        return self.include_empty or bool(self.pipeline.candidates(query).paths)

    def _data(self, query_id: str) -> _Shown:
        hit = self._shown.get(query_id)
        if hit is not None:
            return hit
        query = self.pipeline.query(query_id)
        cands = self.pipeline.candidates(query)
        n = self.config.max_paths
        dim = len(self.feature_names)
        feats = np.zeros((n, dim), dtype=np.float32)
        mask = np.zeros(n, dtype=np.int8)
        items: list[list[str]] = []
        paths = cands.paths[:n]
        if paths:
            f = self._featurizer(query.graph_id).features(paths, cands.context, cands.query_vec, cands.intent)
            feats[: len(paths), :-1] = np.clip(np.nan_to_num(f), -FEATURE_BOUND, FEATURE_BOUND)
            feats[: len(paths), -1] = np.arange(len(paths)) / n
            mask[: len(paths)] = 1
            builder = self.pipeline.state(query.graph_id).builder
            for p in paths:
                unit = builder.construct(p, at=query.timestamp)
                items.append(self.rating.items(query, unit.items, p.entities[1:], text=unit.text))
        qv = self.pipeline.query_features.features(query, intent=cands.intent)
        out = _Shown(feats, mask, items, np.clip(qv, -1.0, 1.0).astype(np.float32), cands.intent)
        self._shown[query_id] = out
        while len(self._shown) > CandidatePipeline.CACHE_SIZE:
            self._shown.popitem(last=False)
        return out

    def _obs(self, shown: _Shown) -> dict[str, np.ndarray]:
        return {"query": shown.query_vec.copy(), "paths": shown.paths.copy(), "mask": shown.mask.copy()}

    def _info(self, shown: _Shown) -> dict[str, Any]:
        info: dict[str, Any] = {
            "query_id": self._query_id,
            "intent": shown.intent,
            "action_mask": shown.mask.copy(),
        }
        if self.oracle:
            query = self.pipeline.query(str(self._query_id))
            oracle = np.zeros(self.config.max_paths, dtype=np.float32)
            for i, items in enumerate(shown.items):
                oracle[i] = self.rating.true_rating(query, items)
            info["oracle"] = oracle
        return info

    def _slots(self, action: Any) -> list[int]:
        n, k = self.config.max_paths, self.slate_size
        if k == 1:
            return [action_index(action, n, "PathBandit")]
        arr = np.asarray(action)
        if arr.shape != (k,) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"PathBandit: action {self._action_repr(action)} is not {k} integers of the action space "
                f"MultiDiscrete([{n}] * {k})"
            )
        if (arr < 0).any() or (arr >= n).any():
            raise ValueError(
                f"PathBandit: action {self._action_repr(action)} is outside the action space "
                f"MultiDiscrete([{n}] * {k})"
            )
        return [int(i) for i in arr.tolist()]

    @staticmethod
    def _action_repr(action: Any) -> str:
        arr = np.asarray(action)
        return str(arr.tolist()) if arr.ndim else repr(action)

    # -- pickling (QueryEpisodeEnv): the query and whether it was answered ------------------------------

    def _episode_state(self) -> dict[str, Any]:
        return {"query_id": self._query_id, "done": self._done}

    def _restore_episode(self, state: dict[str, Any]) -> None:
        self._query_id, self._done = state["query_id"], state["done"]
