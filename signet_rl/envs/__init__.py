"""Gymnasium environments over the desire-path graph (docs/design.md §3), registered on import.

================================  ==============================================  ==========================
id                                what an episode is                              class
================================  ==============================================  ==========================
``signet_rl/PathBandit-v0``       one query; pick a path (or a slate) among the   :class:`PathBanditEnv`
                                  pipeline's candidates; rated once
``signet_rl/EdgeWalk-v0``         one query; walk edge by edge, stop paths into   :class:`EdgeWalkEnv`
                                  rated memories, under depth and path budgets
``signet_rl/KGWalk-v0``           knowledge-graph path reasoning ``(e, r, ?)``    ``signet_rl.envs.kgwalk``
================================  ==============================================  ==========================

Every keyword of the environment's constructor passes through ``gymnasium.make`` (``dataset``, ``split``,
``traversal``, ``slate_size``, ``path_budget``, ``seed``, ...)::

    import gymnasium as gym
    import signet_rl.envs  # registers the ids

    env = gym.make("signet_rl/PathBandit-v0", dataset="synthetic:small", slate_size=3)
    env = gym.make("signet_rl/EdgeWalk-v0", dataset="synthetic:small", traversal={"max_depth": 2})
    # or, without the import: gym.make("signet_rl.envs:signet_rl/EdgeWalk-v0", ...)

Vector environments: ``gym.make_vec(id, num_envs)`` without a mode builds a synchronous vector env with
same-step autoreset (``AutoresetMode.SAME_STEP``, the environments' ``metadata["autoreset_mode"]``: the
observation after a terminal step is already the next episode's, so no step is spent on a reset). With an
explicit ``vectorization_mode="sync"`` or ``"async"`` Gymnasium defaults to next-step autoreset; pass
``vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}``, or use :func:`make_vec` here, which does.
Environments in one process share one indexed pipeline per dataset and configuration.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode, VectorEnv

from signet_rl.envs.bandit import PathBanditEnv
from signet_rl.envs.edgewalk import EdgeWalkEnv

__all__ = ["ENV_IDS", "EdgeWalkEnv", "PathBanditEnv", "make_vec"]

PATH_BANDIT = "signet_rl/PathBandit-v0"
EDGE_WALK = "signet_rl/EdgeWalk-v0"
KG_WALK = "signet_rl/KGWalk-v0"
#: Every registered id.
ENV_IDS: tuple[str, ...] = (PATH_BANDIT, EDGE_WALK, KG_WALK)


def _same_step_vector(env_id: str) -> Any:
    """A ``vector_entry_point`` for ``env_id``: a sync vector env with same-step autoreset."""

    def create(num_envs: int, **kwargs: Any) -> VectorEnv:
        return gym.vector.SyncVectorEnv(
            [lambda: gym.make(env_id, **kwargs) for _ in range(num_envs)],
            autoreset_mode=AutoresetMode.SAME_STEP,
        )

    return create


def make_vec(
    env_id: str,
    num_envs: int,
    vectorization_mode: str = "sync",
    autoreset_mode: AutoresetMode | None = None,
    **kwargs: Any,
) -> VectorEnv:
    """``gymnasium.make_vec`` with the environment's own autoreset mode (same-step for these envs).

    Args:
        env_id: a registered id.
        num_envs: number of copies.
        vectorization_mode: ``sync`` or ``async``.
        autoreset_mode: overrides the environment's ``metadata["autoreset_mode"]``.
        **kwargs: the environment's constructor arguments.

    Example:
        >>> envs = make_vec("signet_rl/EdgeWalk-v0", 2, "async", dataset="synthetic:tiny")  # doctest: +SKIP
    """
    if autoreset_mode is None:
        spec = gym.spec(env_id)
        entry = spec.entry_point
        cls = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
        autoreset_mode = getattr(cls, "metadata", {}).get("autoreset_mode", AutoresetMode.NEXT_STEP)
    return gym.make_vec(
        env_id,
        num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs={"autoreset_mode": autoreset_mode},
        **kwargs,
    )


def _register() -> None:
    if PATH_BANDIT not in gym.registry:
        gym.register(
            id=PATH_BANDIT,
            entry_point="signet_rl.envs.bandit:PathBanditEnv",
            vector_entry_point=_same_step_vector(PATH_BANDIT),
        )
    if EDGE_WALK not in gym.registry:
        gym.register(
            id=EDGE_WALK,
            entry_point="signet_rl.envs.edgewalk:EdgeWalkEnv",
            vector_entry_point=_same_step_vector(EDGE_WALK),
        )
    if KG_WALK not in gym.registry:
        gym.register(id=KG_WALK, entry_point="signet_rl.envs.kgwalk:KGWalkEnv")


_register()
