"""Sanity agents for the environments: a uniform random agent, a prior agent, and an episode runner.

Both agents act on the observation alone (plus its mask), so they run behind any wrapper:

* :class:`RandomAgent` — uniform over the valid actions. On PathBandit: a uniformly random valid path (a
  slate: distinct valid paths in random order); on EdgeWalk: any unmasked action, END included.
* :class:`PriorAgent` — the prior's choice. On PathBandit: the paths with the highest ``prior`` feature
  (:class:`~signet_rl.scorers.prior.PriorScorer`'s score with the feature's fixed 90-day half-life,
  ``PRIOR_FEATURE_HALF_LIFE_DAYS``, not the scorer's tuned default; ties by candidate order). On EdgeWalk:
  follow the valid edge with the highest ``continue_prior`` (the prior's score of the memory that following
  it and stopping would make) when that beats ``stop_prior`` (the score of stopping here), else STOP_PATH; a
  memory that would duplicate one already stopped counts as no option (edges leading to one are left out,
  unless none is left); when neither following nor stopping is an option, END.

:func:`run_agent` plays whole episodes and returns the mean return. Its ``seed`` seeds the environment's first
reset and the agent (``agent.reset(seed)``); with the same ``seed`` every agent meets the same queries (an
environment draws its queries at reset, from its own seeded generator, whatever the agent does).

    >>> env = EdgeWalkEnv("synthetic:small")  # doctest: +SKIP
    >>> random_mean = run_agent(env, RandomAgent(0), episodes=200, seed=0)  # doctest: +SKIP
    >>> prior_mean = run_agent(env, PriorAgent(), episodes=200, seed=0)  # 0.518 vs 0.145  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from signet_rl.core.checks import check_integer
from signet_rl.envs.edgewalk import EDGE_FEATURES, NODE_FEATURES
from signet_rl.scorers.features import PATH_FEATURES

__all__ = ["Agent", "PriorAgent", "RandomAgent", "episode_returns", "run_agent"]

_PRIOR = PATH_FEATURES.index("prior")
_STOP_PRIOR = NODE_FEATURES.index("stop_prior")
_STOP_DUP = NODE_FEATURES.index("stop_duplicate")
_CONT_PRIOR = EDGE_FEATURES.index("continue_prior")
_CONT_DUP = EDGE_FEATURES.index("duplicate")


class Agent(Protocol):
    """What :func:`run_agent` needs: ``reset`` at the start of a run and ``act`` on each observation."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> Any: ...


def _bandit_action(order: np.ndarray, k: int) -> Any:
    """The first ``k`` of ``order`` as an action (an int for k = 1; padded with repeats, which cost nothing
    once every candidate is shown)."""
    if k == 1:
        return int(order[0]) if len(order) else 0
    if not len(order):
        return np.zeros(k, dtype=np.int64)
    out = np.resize(order, k) if len(order) < k else order[:k]
    return np.asarray(out, dtype=np.int64)


class RandomAgent:
    """Uniform over the valid actions (see the module docstring).

    Args:
        seed: seeds the agent's generator (``reset(seed)`` reseeds it).
        slate_size: the bandit's slate size (1: a single path).
    """

    def __init__(self, seed: int | None = 0, slate_size: int = 1) -> None:
        self.slate_size = slate_size
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, obs: Mapping[str, np.ndarray], info: Mapping[str, Any] | None = None) -> Any:
        if "paths" in obs:  # PathBandit
            valid = np.flatnonzero(obs["mask"])
            return _bandit_action(self.rng.permutation(valid), self.slate_size)
        valid = np.flatnonzero(obs["action_mask"])
        return int(valid[int(self.rng.integers(len(valid)))])


class PriorAgent:
    """The 90-day prior's choice, from the observation's prior features (see the module docstring).

    Args:
        slate_size: the bandit's slate size (1: a single path).
    """

    def __init__(self, slate_size: int = 1) -> None:
        self.slate_size = slate_size

    def reset(self, seed: int | None = None) -> None:
        return None

    def act(self, obs: Mapping[str, np.ndarray], info: Mapping[str, Any] | None = None) -> Any:
        if "paths" in obs:  # PathBandit
            valid = np.flatnonzero(obs["mask"])
            prior = obs["paths"][valid, _PRIOR]
            return _bandit_action(valid[np.argsort(-prior, kind="stable")], self.slate_size)
        mask = obs["action_mask"]
        b = len(mask) - 2
        node, edges = obs["node"], obs["edges"]
        stop = -np.inf if (not mask[b] or node[_STOP_DUP]) else float(node[_STOP_PRIOR])
        follow = [i for i in range(b) if mask[i]]
        fresh = [i for i in follow if not edges[i, _CONT_DUP]]
        options = fresh or ([] if np.isfinite(stop) else follow)
        if options:
            best = max(options, key=lambda i: float(edges[i, _CONT_PRIOR]))
            if float(edges[best, _CONT_PRIOR]) > stop or not fresh:
                return best
        return b if np.isfinite(stop) else b + 1


def episode_returns(env: gym.Env[Any, Any], agent: Agent, episodes: int, seed: int | None = 0) -> list[float]:
    """The return of each of ``episodes`` episodes (the first reset seeded with ``seed``)."""
    check_integer("episodes", episodes, 1)
    agent.reset(seed)
    out = []
    for e in range(episodes):
        obs, info = env.reset(seed=seed if e == 0 else None)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            total += float(reward)
            done = bool(terminated or truncated)
        out.append(total)
    return out


def run_agent(env: gym.Env[Any, Any], agent: Agent, episodes: int, seed: int | None = 0) -> float:
    """The mean return of ``agent`` over ``episodes`` episodes of ``env`` (the first reset seeded)."""
    return float(np.mean(episode_returns(env, agent, episodes, seed)))
