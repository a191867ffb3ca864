"""KGWalkEnv: Gymnasium's checker, seeding, pickling, rewards, masked actions and their errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from signet_rl.datasets.kg import load_kg
from signet_rl.envs.kgwalk import INVALID_ACTION_PENALTY, KGWalkEnv


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, write_kg):
    """conftest's tiny KG (a -r1-> b -r2-> c, a -r2-> d -r1-> c, c -r1-> e), loaded with inverses."""
    tmp_path = tmp_path_factory.mktemp("kgwalk")
    write_kg(tmp_path)
    return load_kg("tiny", root=tmp_path, inverse=True)


def rollout(env: KGWalkEnv, seed: int, actions: list[int]) -> list:
    obs, _ = env.reset(seed=seed)
    trace = [obs]
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        trace.append((obs, reward, terminated, truncated))
    return trace


def same(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, tuple | list):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y, strict=True))
    return bool(np.array_equal(x, y))


def test_passes_gymnasium_check_env(tiny):
    check_env(KGWalkEnv(tiny, path_length=2), skip_render_check=True)
    check_env(KGWalkEnv(tiny, split="validation", path_length=3), skip_render_check=True)


def test_observation_is_small_fixed_shape_and_hides_the_answer(tiny):
    env = KGWalkEnv(tiny, path_length=2)
    obs, info = env.reset(seed=0)
    assert set(obs) == {
        "entity",
        "start",
        "query_relation",
        "step",
        "candidate_relations",
        "candidate_entities",
        "action_mask",
    }
    a = env.action_space.n
    assert a == 4  # NO_OP + max out-degree 3 (c: r1 e, r1_inv d, r2_inv b)
    assert obs["candidate_entities"].shape == (a,) and obs["action_mask"].dtype == np.int8
    assert np.array_equal(info["action_mask"], obs["action_mask"])
    assert "tail" not in info and "answers" not in info


def test_same_seed_same_episode_and_pickle_round_trip(tiny):
    env = KGWalkEnv(tiny, path_length=2)
    first = rollout(env, 7, [0, 0])
    assert same(first, rollout(env, 7, [0, 0]))
    clone = pickle.loads(pickle.dumps(env))
    assert same(first, rollout(clone, 7, [0, 0]))
    starts = {int(env.reset(seed=s)[0]["start"]) for s in range(20)}
    assert len(starts) > 1  # the seed picks the query


def test_reward_one_for_reaching_an_answer_and_terminated_at_path_length(tiny):
    env = KGWalkEnv(tiny, path_length=2)
    obs, _ = env.reset(options={"query_index": 0})  # (a, r3, ?) -> c
    assert env.entities[int(obs["start"])] == "a" and env.relations[int(obs["query_relation"])] == "r3"
    # slots sort by relation id (r1, r1_inv, r2, r2_inv, r3): at a: NO_OP, (r1, b), (r2, d)
    obs, reward, terminated, truncated, info = env.step(1)
    assert (reward, terminated, truncated, env.entities[int(obs["entity"])]) == (0.0, False, False, "b")
    obs, reward, terminated, truncated, info = env.step(2)  # at b: NO_OP, (r1_inv, a), (r2, c)
    assert env.entities[int(obs["entity"])] == "c"
    assert (reward, terminated, truncated, info["hit"]) == (1.0, True, False, True)
    env.reset(options={"query_index": 0})
    assert env.step(0)[1:3] == (0.0, False) and env.step(0)[1:3] == (0.0, True)  # stayed at a: a miss


def test_query_edge_is_masked(tiny):
    env = KGWalkEnv(tiny, path_length=2)
    obs, info = env.reset(options={"query_index": 1})  # training query (a, r1, b) is also a graph edge
    assert info["action_mask"].tolist() == [1, 0, 1, 0]
    obs, *_ = env.step(2)  # a -r2-> d
    assert env.entities[int(obs["entity"])] == "d"


def test_masked_action_is_a_penalised_no_op_by_default(tiny):
    env = KGWalkEnv(tiny, path_length=2)
    env.reset(options={"query_index": 0})
    obs, reward, terminated, _, info = env.step(3)  # slot 3 is padding at a
    assert env.entities[int(obs["entity"])] == "a" and reward == INVALID_ACTION_PENALTY == -0.01
    assert info["invalid_action"] and not terminated


def test_strict_masked_action_raises_naming_action_and_mask(tiny):
    env = KGWalkEnv(tiny, path_length=2, strict=True)
    env.reset(options={"query_index": 0})
    with pytest.raises(ValueError) as err:
        env.step(3)
    assert str(err.value) == "action 3 is masked at step 0 (entity 'a'): action_mask=1110"


def test_step_after_the_end_raises(tiny):
    env = KGWalkEnv(tiny, path_length=1)
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(RuntimeError) as err:
        env.step(0)
    assert str(err.value) == (
        "KGWalkEnv.step() called after the episode ended (terminated after path_length=1 steps); "
        "call reset() first"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"split": "dev"}, "split 'dev' is not one of 'train', 'validation', 'test'"),
        ({"path_length": 0}, "path_length=0 must be >= 1"),
        ({"inverse": True}, "inverse= applies when the env loads the dataset from a spec"),
    ],
)
def test_bad_arguments(tiny, kwargs, message):
    with pytest.raises(ValueError, match=message):
        KGWalkEnv(tiny, **kwargs)


def test_non_kg_spec_is_refused():
    with pytest.raises(ValueError, match="KGWalkEnv needs a kg:<folder> dataset, got 'synthetic:tiny'"):
        KGWalkEnv("synthetic:tiny")


@pytest.mark.data
def test_kinship_env_from_spec(require_data):
    root = require_data("kg/kinship").parents[1]
    env = KGWalkEnv("kg:kinship", split="test", path_length=2, data_root=root)
    obs, info = env.reset(seed=3)
    assert env.action_space.n == 175 and obs["candidate_relations"].shape == (175,)
    valid = np.flatnonzero(info["action_mask"])
    env.step(int(valid[-1]))
    assert env.step(0)[2]
