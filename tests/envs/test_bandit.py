"""PathBandit-v0: spaces, registration, rewards, determinism, pickling, vector envs and bad input."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import signet_rl.envs as envs
from signet_rl.datasets.base import Dataset, GroundTruth
from signet_rl.envs.bandit import PathBanditEnv
from signet_rl.envs.common import resolve_dataset
from signet_rl.scorers.features import PATH_FEATURES
from signet_rl.scorers.prior import PriorScorer

TINY = "synthetic:tiny"
EXACT: dict[str, Any] = {"noise_rate": 0.0, "rating_prob": 1.0}


@pytest.fixture(scope="module")
def env() -> PathBanditEnv:
    return PathBanditEnv(TINY, **EXACT)


def _first_valid(obs) -> int:
    return int(np.flatnonzero(obs["mask"])[0])


@pytest.mark.parametrize("slate_size", [1, 3])
def test_passes_the_gymnasium_checker(slate_size):
    check_env(PathBanditEnv(TINY, slate_size=slate_size), skip_render_check=True)


def test_registered_id_takes_dataset_and_config_through_make():
    env = gym.make("signet_rl/PathBandit-v0", dataset=TINY, slate_size=2, traversal={"max_paths": 10})
    assert env.observation_space["paths"].shape == (10, len(PATH_FEATURES) + 1)
    assert env.action_space == gym.spaces.MultiDiscrete([10, 10])
    obs, _info = env.reset(seed=0)
    assert obs["mask"].dtype == np.int8 and obs["mask"].sum() >= 1
    assert env.unwrapped.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    # the "module:id" form imports the registering module itself
    env2 = gym.make("signet_rl.envs:signet_rl/PathBandit-v0", dataset=TINY)
    assert isinstance(env2.unwrapped, PathBanditEnv)
    assert set(envs.ENV_IDS) <= set(gym.registry)


def test_observation_holds_candidates_in_walk_order_and_never_ground_truth(env):
    obs, info = env.reset(seed=0)
    cands = env.pipeline.candidates(env.pipeline.query(info["query_id"]))
    n = len(cands.paths)
    assert obs["mask"].tolist() == [1] * n + [0] * (env.config.max_paths - n)
    assert np.all(obs["paths"][n:] == 0)
    assert obs["paths"][:n, -1].tolist() == pytest.approx([i / env.config.max_paths for i in range(n)])
    # the observation's prior feature keeps its 90-day half-life (PRIOR_FEATURE_HALF_LIFE_DAYS)
    prior = PriorScorer(half_life_days=90.0).score(cands.query, cands.paths, cands.context)
    assert obs["paths"][:n, PATH_FEATURES.index("prior")] == pytest.approx(prior, rel=1e-5)
    # the same dataset with its ground truth emptied gives the same observations
    ds = env.pipeline.dataset
    blank = GroundTruth([dataclasses.replace(t, needed=(), misleading=()) for t in ds.truth.values()])
    other = PathBanditEnv(Dataset(ds.name, ds.graphs, ds.queries, blank), **EXACT)
    for seed in range(5):
        a, _ = env.reset(seed=seed)
        b, _ = other.reset(seed=seed)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_reward_is_the_rating_of_the_shown_path(env):
    for seed in range(8):
        obs, info = PathBanditEnv(TINY, oracle=True, **EXACT).reset(seed=seed)
        env.reset(seed=seed)
        i = _first_valid(obs)
        _, reward, terminated, truncated, step_info = env.step(i)
        assert terminated and not truncated
        assert reward == info["oracle"][i]
        assert step_info["shown"].tolist() == [i] and step_info["ratings"].tolist() == [reward]
        assert step_info["rated"].tolist() == [True] and step_info["penalty"] == 0.0
        assert "oracle" not in step_info  # oracle=False


def test_slate_sums_ratings_and_charges_only_for_fillable_slots():
    env = PathBanditEnv(TINY, slate_size=3, oracle=True, **EXACT)
    obs, info = env.reset(seed=1)
    valid = np.flatnonzero(obs["mask"])
    assert len(valid) >= 3
    a, b, c = valid[:3].tolist()
    _, reward, *_, step = env.step(np.array([a, b, c]))
    assert reward == sum(info["oracle"][[a, b, c]])
    env.reset(seed=1)
    _, reward, *_, step = env.step(np.array([a, a, 49]))  # a repeat and a masked index
    assert step["shown"].tolist() == [a, -1, -1]
    assert reward == pytest.approx(info["oracle"][a] - 0.2)
    assert step["penalty"] == pytest.approx(0.2)
    mean_env = PathBanditEnv(TINY, slate_size=3, reward="mean", **EXACT)
    mean_env.reset(seed=1)
    _, reward, *_ = mean_env.step(np.array([a, b, c]))
    assert reward == pytest.approx(sum(info["oracle"][[a, b, c]]) / 3)


def test_a_slate_larger_than_the_candidate_set_is_not_penalised():
    env = PathBanditEnv(TINY, slate_size=3, traversal={"max_paths": 3}, **EXACT)
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        valid = np.flatnonzero(obs["mask"])
        if len(valid) < 3:
            _, _, *_, step = env.step(np.resize(valid, 3))
            assert step["penalty"] == 0.0 and (step["shown"] >= 0).sum() == len(valid)
            return
    pytest.skip("every tiny query fills a slate of three")


def test_masked_action_shows_nothing_with_a_penalty_or_raises_in_strict_mode(env):
    obs, _ = env.reset(seed=0)
    masked = int(np.flatnonzero(obs["mask"] == 0)[0])
    _, reward, terminated, _, info = env.step(masked)
    assert terminated and reward == pytest.approx(-0.1) and info["shown"].tolist() == [-1]
    strict = PathBanditEnv(TINY, strict=True)
    obs, _ = strict.reset(seed=0)
    with pytest.raises(ValueError) as err:
        strict.step(masked)
    assert str(err.value) == (
        f"PathBandit (strict): action {masked} shows 0 distinct valid paths where 1 could be shown; "
        f"mask={obs['mask'].tolist()}"
    )


@pytest.mark.parametrize(
    ("kwargs", "action", "error", "message"),
    [
        ({}, 50, ValueError, "PathBandit: action 50 is outside the action space Discrete(50)"),
        ({}, -1, ValueError, "PathBandit: action -1 is outside the action space Discrete(50)"),
        ({}, 1.5, ValueError, "PathBandit: action 1.5 is not an integer of the action space Discrete(50)"),
        (
            {"slate_size": 2},
            np.array([0, 50]),
            ValueError,
            "PathBandit: action [0, 50] is outside the action space MultiDiscrete([50] * 2)",
        ),
        (
            {"slate_size": 2},
            np.array([0, 1, 2]),
            ValueError,
            "PathBandit: action [0, 1, 2] is not 2 integers of the action space MultiDiscrete([50] * 2)",
        ),
    ],
)
def test_actions_outside_the_space_are_refused(kwargs, action, error, message):
    env = PathBanditEnv(TINY, **kwargs)
    env.reset(seed=0)
    with pytest.raises(error) as err:
        env.step(action)
    assert str(err.value) == message


def test_step_after_the_episode_ended_is_a_clear_error(env):
    with pytest.raises(RuntimeError, match=r"^PathBandit: step\(\) called after the episode ended; "):
        PathBanditEnv(TINY).step(0)  # never reset
    obs, _ = env.reset(seed=0)
    env.step(_first_valid(obs))
    with pytest.raises(RuntimeError) as err:
        env.step(0)
    assert str(err.value) == "PathBandit: step() called after the episode ended; call reset() first"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"dataset": "nope"},
            "unknown dataset 'nope'; expected synthetic:<preset>[:seed], kg:<folder>, "
            "locomo, musique or signet:<path>",
        ),
        ({"slate_size": 0}, "slate_size must be an integer in [1, 50] (max_paths), got 0"),
        ({"reward": "max"}, "reward must be one of sum, mean, got 'max'"),
        ({"invalid_penalty": -1}, "invalid_penalty must be a number >= 0, got -1"),
        ({"order": "shuffled"}, "unknown order 'shuffled'; expected one of random, sequential"),
        ({"split": "dev"}, "unknown split 'dev'; expected one of train, validation, test, all"),
        ({"noise_rate": 2}, "noise_rate must be a number in [0, 1], got 2"),
        ({"traversal": {"max_pathz": 3}}, "TraversalConfig: unknown keys ['max_pathz']; known: "),
    ],
)
def test_bad_arguments_name_the_value(kwargs, message):
    with pytest.raises(ValueError) as err:
        gym.make("signet_rl/PathBandit-v0", **({"dataset": TINY} | kwargs))
    assert str(err.value).startswith(message)


def test_non_queries_are_skipped_or_served_with_an_empty_mask():
    ds = resolve_dataset(TINY)
    env = PathBanditEnv(ds, split="all", include_empty=True, order="sequential")
    non_query = next(q for q in ds.queries if env.pipeline.query_features.intent(q) == "none")
    obs, info = env.reset(options={"query_id": non_query.id})
    assert info["intent"] == "none" and obs["mask"].sum() == 0
    _, reward, terminated, _, step = env.step(0)
    assert terminated and reward == 0.0 and step["penalty"] == 0.0 and step["shown"].tolist() == [-1]
    default = PathBanditEnv(ds, split="all", order="sequential")
    for _ in range(len(ds.queries)):
        obs, info = default.reset()
        assert obs["mask"].sum() >= 1 and info["intent"] != "none"
    only_chat = Dataset(ds.name, ds.graphs, [non_query], ds.truth)
    with pytest.raises(ValueError) as err:
        PathBanditEnv(only_chat, split="all").reset(seed=0)
    assert str(err.value) == (
        "no query of split 'all' in 'synthetic:tiny:0' has candidates (1 queries: non-queries or no entry "
        "entity); pass include_empty=True to serve them anyway"
    )


def test_reset_options_are_checked(env):
    known = r"known: \['query_id'\]$"
    with pytest.raises(ValueError, match=r"^PathBandit.reset: unknown options \['query'\]; " + known):
        env.reset(options={"query": "q-00000"})
    with pytest.raises(ValueError, match=r"^query 'q-nope' is not in dataset 'synthetic:tiny:0'$"):
        env.reset(options={"query_id": "q-nope"})


def _rollout(env, episodes: int, seed: int) -> list:
    out: list[tuple[Any, ...]] = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        valid = np.flatnonzero(obs["mask"])
        action = int(valid[len(out) % len(valid)])
        _, reward, *_, info = env.step(action)
        out.append((info["query_id"], obs["paths"].sum(), reward))
        obs, _ = env.reset()
    return out


def test_same_seed_same_episodes_and_pickling_keeps_the_state():
    a = PathBanditEnv(TINY)
    b = PathBanditEnv(TINY)
    assert _rollout(a, 12, seed=3) == _rollout(b, 12, seed=3)
    assert _rollout(a, 12, seed=3) != _rollout(a, 12, seed=4)
    obs, _ = a.reset(seed=5)
    clone = pickle.loads(pickle.dumps(a))
    action = _first_valid(obs)
    assert clone.step(action)[1:3] == a.step(action)[1:3]
    assert _rollout(clone, 6, seed=9) == _rollout(a, 6, seed=9)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_autoreset_in_the_same_step(mode):
    envs_ = envs.make_vec("signet_rl/PathBandit-v0", 2, mode, dataset=TINY)
    try:
        assert envs_.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        obs, _ = envs_.reset(seed=0)
        assert obs["paths"].shape == (2, 50, len(PATH_FEATURES) + 1)
        for _ in range(3):
            actions = np.asarray([int(np.flatnonzero(m)[0]) for m in obs["mask"]])
            obs, _reward, terminated, truncated, info = envs_.step(actions)
            assert terminated.all() and not truncated.any()
            assert "final_obs" in info and obs["mask"].sum(axis=1).min() >= 1  # already the next query
    finally:
        envs_.close()


def test_make_vec_without_a_mode_uses_the_same_step_entry_point():
    envs_ = gym.make_vec("signet_rl/PathBandit-v0", num_envs=2, dataset=TINY)
    try:
        assert envs_.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        _obs, _ = envs_.reset(seed=0)
        _, _, terminated, _, info = envs_.step(np.zeros(2, dtype=np.int64))
        assert terminated.all() and "final_obs" in info
    finally:
        envs_.close()
