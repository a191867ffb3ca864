"""EdgeWalk-v0: candidate edges, exact rewards, budgets, determinism, pickling, vector envs and bad input."""

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
from signet_rl.envs.edgewalk import EDGE_FEATURES, NODE_FEATURES, EdgeWalkEnv
from signet_rl.rating.rater import SimulatedRater
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.prior import PriorScorer

TINY = "synthetic:tiny"
SMALL = "synthetic:small"
EXACT: dict[str, Any] = {"noise_rate": 0.0, "rating_prob": 1.0}
COL = {name: i for i, name in enumerate(EDGE_FEATURES)}
NODE = {name: i for i, name in enumerate(NODE_FEATURES)}


def _reset_with_edges(env: EdgeWalkEnv, seeds=range(200)):
    """Reset until the entry's first candidate edge leads to an entity with facts to show."""
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        if obs["action_mask"][0] and obs["edges"][0, COL["end_attributes"]] > 0:
            return obs, info
    pytest.fail("no query with a candidate edge")


def _truth_rating(env: EdgeWalkEnv, query_id: str, memory) -> int:
    rater = SimulatedRater(env.pipeline.dataset.truth, 0.0, 1.0)
    return int(rater.true_rating(query_id, memory.items))


def test_passes_the_gymnasium_checker():
    check_env(EdgeWalkEnv(TINY), skip_render_check=True)


def test_registered_id_takes_dataset_and_config_through_make():
    env = gym.make("signet_rl/EdgeWalk-v0", dataset=TINY, traversal={"max_branching": 3}, path_budget=2)
    assert env.action_space == gym.spaces.Discrete(5)
    assert env.observation_space["edges"].shape == (3, len(EDGE_FEATURES))
    obs, info = env.reset(seed=0)
    assert obs["action_mask"].tolist() == info["action_mask"].tolist()
    assert obs["budgets"].tolist() == [3.0, 2.0]
    assert env.unwrapped.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP


def test_candidate_edges_follow_the_csr_order_confidence_and_time():
    env = EdgeWalkEnv(SMALL, **EXACT)
    obs, info = _reset_with_edges(env)
    query = env.pipeline.query(info["query_id"])
    a = env.pipeline.state(query.graph_id).arrays
    entry = a.entity_index[env.pipeline.entries(query)[1][0]]
    lo, hi = a.dep_indptr[entry], a.dep_indptr[entry + 1]
    t = query.timestamp.timestamp()
    slots = [s for s in range(lo, hi) if a.dep_confidence[s] >= 0.5 and a.edge_created[a.dep_edge[s]] <= t]
    slots = slots[: env.n_branch]
    n = len(slots)
    assert obs["action_mask"].tolist() == [1] * n + [0] * (env.n_branch - n) + [1, 1]
    np.testing.assert_allclose(obs["edges"][:n, COL["confidence"]], a.dep_confidence[slots])
    np.testing.assert_allclose(obs["edges"][:n, COL["strength"]], a.dep_strength[slots])
    np.testing.assert_array_equal(obs["edges"][:n, COL["direction"]], a.dep_direction[slots])
    assert np.all(obs["edges"][n:] == 0)
    cs = obs["edges"][:n, COL["cs"]]
    assert np.all(np.diff(cs) <= 1e-7)  # best first


def test_rewards_follow_the_documented_definition_exactly():
    env = EdgeWalkEnv(SMALL, path_budget=3, **EXACT)
    obs, info = _reset_with_edges(env)
    qid = info["query_id"]
    # follow: the step cost
    obs, reward, terminated, _, info = env.step(0)
    assert reward == pytest.approx(-0.01) and not terminated and not info["stopped"]
    assert obs["path"][0] == pytest.approx(1 / 3) and obs["budgets"].tolist() == [2.0, 3.0]
    # STOP_PATH: the rating of the constructed memory, exactly what the rater says of it
    obs, reward, terminated, _, info = env.step(env.STOP)
    memory = env.memories()[-1]
    assert info["stopped"] and info["rated"] and not info["duplicate"]
    assert reward == info["rating"] == _truth_rating(env, qid, memory)
    assert env.stopped_paths()[-1].length >= 2 and memory.items  # entity, edge, entity, aspect, attributes
    assert obs["budgets"].tolist() == [3.0, 2.0] and obs["path"][0] == 0.0  # back at an entry
    # the same memory again: a duplicate, rated 0 without asking the rater
    env.step(0)
    obs, reward, terminated, _, info = env.step(env.STOP)
    assert info["duplicate"] and reward == 0.0 and not info["rated"] and not terminated
    # the third stop spends the path budget
    obs, reward, terminated, truncated, info = env.step(env.STOP)
    assert terminated and not truncated and obs["action_mask"].tolist() == [0] * env.n_branch + [0, 1]
    assert env.stopped_ratings()[1] == 0


def test_running_out_of_depth_stops_the_path_and_end_ends_the_episode():
    env = EdgeWalkEnv(SMALL, traversal={"max_depth": 1}, **EXACT)
    _obs, info = _reset_with_edges(env)
    _, reward, terminated, _, info = env.step(0)
    memory = env.memories()[-1]
    assert info["stopped"] and not terminated
    assert reward == pytest.approx(-0.01 + _truth_rating(env, info["query_id"], memory))
    _, reward, terminated, truncated, info = env.step(env.END)
    assert terminated and not truncated and reward == 0.0 and not info["stopped"]


def test_priors_in_the_observation_are_the_prior_scorers():
    env = EdgeWalkEnv(SMALL, **EXACT)
    obs, info = _reset_with_edges(env)
    query = env.pipeline.query(info["query_id"])
    state = env.pipeline.state(query.graph_id)
    ctx = ScoringContext(state.graph, state.arrays, (), query.timestamp.timestamp())
    scorer = PriorScorer(half_life_days=90.0)  # the env's priors keep their 90-day half-life
    continue_prior = obs["edges"][0, COL["continue_prior"]]
    env.step(0)
    obs, *_ = env.step(env.STOP)
    path = env.stopped_paths()[-1]
    assert continue_prior == pytest.approx(scorer.score(query, [path], ctx)[0], rel=1e-5)
    stop_prior = obs["node"][NODE["stop_prior"]]  # back at the entry
    env.step(env.STOP)
    assert stop_prior == pytest.approx(scorer.score(query, [env.stopped_paths()[-1]], ctx)[0], rel=1e-5)


def test_a_stopped_path_ends_in_the_most_query_relevant_aspect():
    env = EdgeWalkEnv(SMALL, **EXACT)
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        env.step(env.STOP)
        path = env.stopped_paths()[-1]
        if not path.attributes:
            continue
        query = env.pipeline.query(info["query_id"])
        state = env.pipeline.state(query.graph_id)
        a = state.arrays
        rel = {
            str(a.attribute_ids[i]): float(v)
            for i, v in enumerate(state.attr_vectors @ env.pipeline.entries(query)[2])
        }
        ids = [rel[t] for t in path.attributes]
        assert ids == sorted(ids, reverse=True)  # most relevant first
        assert obs["node"][NODE["relevance"]] == pytest.approx(ids[0], abs=1e-5)


def test_masked_action_stops_with_a_penalty_or_raises_in_strict_mode():
    env = EdgeWalkEnv(SMALL, **EXACT)
    obs, _info = env.reset(seed=0)
    masked = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    _, reward, _, _, step = env.step(masked)
    assert step["stopped"] and step["penalty"] == 0.1
    assert reward == pytest.approx(step["rating"] - 0.1)
    strict = EdgeWalkEnv(SMALL, strict=True)
    obs, _ = strict.reset(seed=0)
    with pytest.raises(ValueError) as err:
        strict.step(masked)
    assert str(err.value) == (
        f"EdgeWalk (strict): action {masked} is masked; action_mask={obs['action_mask'].tolist()} "
        "(0..3 follow an edge, 4 STOP_PATH, 5 END)"
    )


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (6, "EdgeWalk: action 6 is outside the action space Discrete(6)"),
        (-1, "EdgeWalk: action -1 is outside the action space Discrete(6)"),
        ("stop", "EdgeWalk: action 'stop' is not an integer of the action space Discrete(6)"),
        (True, "EdgeWalk: action True is not an integer of the action space Discrete(6)"),
    ],
)
def test_actions_outside_the_space_are_refused(action, message):
    env = EdgeWalkEnv(TINY)
    env.reset(seed=0)
    with pytest.raises(ValueError) as err:
        env.step(action)
    assert str(err.value) == message


def test_step_after_the_episode_ended_is_a_clear_error():
    env = EdgeWalkEnv(TINY)
    with pytest.raises(RuntimeError, match=r"^EdgeWalk: step\(\) called after the episode ended"):
        env.step(0)
    env.reset(seed=0)
    env.step(env.END)
    with pytest.raises(RuntimeError) as err:
        env.step(env.STOP)
    assert str(err.value) == "EdgeWalk: step() called after the episode ended; call reset() first"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dataset": "kg:"}, "dataset spec 'kg:' needs an argument, e.g. kg:kinship"),
        ({"path_budget": 0}, "path_budget must be an integer >= 1, got 0"),
        ({"step_cost": -0.5}, "step_cost must be a number >= 0, got -0.5"),
        ({"traversal": {"max_depth": 11}}, "TraversalConfig.max_depth must be an integer in [0, 10], got 11"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, message):
    with pytest.raises(ValueError) as err:
        gym.make("signet_rl/EdgeWalk-v0", **({"dataset": TINY} | kwargs))
    assert str(err.value) == message


def test_entries_without_edges_leave_stop_and_end_and_non_queries_only_end():
    no_edges = EdgeWalkEnv(TINY, traversal={"min_confidence": 1.0})
    obs, _ = no_edges.reset(seed=0)
    assert obs["action_mask"].tolist() == [0, 0, 0, 0, 1, 1]
    env = EdgeWalkEnv(TINY, split="all", include_empty=True)
    chat = next(q for q in env.pipeline.dataset.queries if env.pipeline.query_features.intent(q) == "none")
    obs, info = env.reset(options={"query_id": chat.id})
    assert obs["action_mask"].tolist() == [0, 0, 0, 0, 0, 1] and np.all(obs["node"] == 0)
    _, reward, terminated, _, info = env.step(env.STOP)  # masked: acts as END here
    assert terminated and reward == pytest.approx(-0.1) and not info["stopped"]
    default = EdgeWalkEnv(TINY, split="all", order="sequential")
    for _ in range(len(default.pipeline.dataset.queries)):
        obs, info = default.reset()
        assert obs["action_mask"][env.STOP] == 1


def _rollout(env: EdgeWalkEnv, steps: int, seed: int) -> list:
    out: list[tuple[Any, ...]] = []
    obs, _ = env.reset(seed=seed)
    for k in range(steps):
        valid = np.flatnonzero(obs["action_mask"])
        obs, reward, terminated, _, info = env.step(int(valid[k % len(valid)]))
        out.append((info["query_id"], float(obs["edges"].sum() + obs["node"].sum()), reward, terminated))
        if terminated:
            obs, _ = env.reset()
    return out


def test_same_seed_same_walks_and_pickling_keeps_the_episode():
    a, b = EdgeWalkEnv(TINY), EdgeWalkEnv(TINY)
    assert _rollout(a, 40, seed=2) == _rollout(b, 40, seed=2)
    assert _rollout(a, 40, seed=2) != _rollout(a, 40, seed=5)
    _obs, _ = _reset_with_edges(a)
    a.step(0)
    clone = pickle.loads(pickle.dumps(a))
    assert clone.step(a.STOP)[1:4] == a.step(a.STOP)[1:4]
    assert _rollout(clone, 20, seed=7) == _rollout(a, 20, seed=7)


def test_ground_truth_never_reaches_the_observation():
    env = EdgeWalkEnv(TINY)
    ds = env.pipeline.dataset
    blank = GroundTruth([dataclasses.replace(t, needed=(), misleading=()) for t in ds.truth.values()])
    other = EdgeWalkEnv(Dataset(ds.name, ds.graphs, ds.queries, blank))
    for env_ in (env, other):
        env_.reset(seed=1)
    for k in range(30):
        oa, _, ta, _, _ = env.step(k % 3)
        ob, _, tb, _, _ = other.step(k % 3)
        for key in oa:
            np.testing.assert_array_equal(oa[key], ob[key])
        assert ta == tb
        if ta:
            env.reset()
            other.reset()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_autoreset_in_the_same_step(mode):
    envs_ = envs.make_vec("signet_rl/EdgeWalk-v0", 2, mode, dataset=TINY, path_budget=1)
    try:
        obs, _ = envs_.reset(seed=0)
        assert obs["edges"].shape == (2, 4, len(EDGE_FEATURES))
        obs, _reward, terminated, truncated, info = envs_.step(np.full(2, 4))  # STOP: budget spent
        assert terminated.all() and not truncated.any() and "final_obs" in info
        assert obs["action_mask"][:, 4].tolist() == [1, 1]  # the next episode's first observation
    finally:
        envs_.close()


def test_plain_make_vec_with_next_step_autoreset_runs_on_the_masks():
    envs_ = gym.make_vec("signet_rl/EdgeWalk-v0", 2, vectorization_mode="sync", dataset=TINY, path_budget=1)
    try:
        assert envs_.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        obs, _ = envs_.reset(seed=0)
        for _ in range(6):
            assert obs["action_mask"].sum(axis=1).min() >= 1  # a terminal observation keeps END
            obs, *_ = envs_.step(np.full(2, 4))
    finally:
        envs_.close()
