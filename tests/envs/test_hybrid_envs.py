"""The environments on LoCoMo with the hybrid entry: best_flat's floor and session-DAG steps are actions."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from signet_rl.envs.bandit import PathBanditEnv
from signet_rl.envs.edgewalk import EdgeWalkEnv
from signet_rl.scorers.features import PATH_FEATURES

HYBRID = {"floor": True, "session": True, "entity_walks": True, "graph_walk": True, "max_paths": 30}


@pytest.mark.slow
def test_path_bandit_on_locomo_shows_the_floor_and_session_steps(require_data):
    require_data("locomo")
    env = PathBanditEnv("locomo", traversal=HYBRID, split="test", order="sequential")
    check_env(env, skip_render_check=True)
    col = {n: j for j, n in enumerate(env.feature_names)}
    obs, _ = env.reset(seed=0)
    n = int(obs["mask"].sum())
    assert 0 < n <= 30 and obs["paths"].shape == (30, len(PATH_FEATURES) + 1)
    paths = obs["paths"][:n]
    floor = paths[:, col["type_floor"]] == 1
    assert floor[0], "best_flat's top hit is the first candidate"
    assert paths[floor, col["flat_fused"]].min() > 0 and paths[~floor, col["flat_fused"]].max() == 0
    assert (paths[:, col["type_session"]] == 1).any(), "session-DAG steps are candidates"
    ranks = paths[floor, col["floor_rank_inv"]]
    assert np.all(np.diff(ranks) < 0), "the floor keeps best_flat's ranking"
    _, reward, terminated, _, _ = env.step(0)
    assert terminated and reward in (-1.0, 0.0, 1.0)


@pytest.mark.slow
def test_edge_walk_on_locomo_passes_the_checker(require_data):
    require_data("locomo")
    check_env(EdgeWalkEnv("locomo", traversal=HYBRID, split="test"), skip_render_check=True)
