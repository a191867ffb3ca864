from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph
from signet_rl.learning.exploration import (
    STRATEGIES,
    ExplorerQuota,
    epsilon_greedy_inclusion,
    inclusion_probabilities,
    plackett_luce_inclusion,
    select_slate,
    speculative_candidates,
)
from signet_rl.learning.reinforcement import EdgeStats
from signet_rl.traversal.path import Hop, Path

# --------------------------------------------------------------------------------------------------
# Brute-force references


def pl_exact(z: np.ndarray, k: int) -> np.ndarray:
    """Plackett-Luce inclusion by enumerating every ordered k-prefix."""
    w = np.exp(z - z.max())
    out = np.zeros(len(z))
    for perm in itertools.permutations(range(len(z)), k):
        pr, used = 1.0, list[int]()
        for i in perm:
            pr *= w[i] / np.delete(w, used).sum()
            used.append(i)
        out[list(perm)] += pr
    return out


def eps_exact(scores: np.ndarray, k: int, eps: float) -> np.ndarray:
    """Slot-wise epsilon-greedy inclusion by enumerating every sequence of picks."""
    order = list(np.argsort(-scores, kind="stable"))
    out = np.zeros(len(scores))

    def rec(remaining: list[int], chosen: list[int], pr: float) -> None:
        if len(chosen) == min(k, len(scores)):
            out[chosen] += pr
            return
        for r in remaining:
            p = eps / len(remaining) + (1 - eps) * (r == remaining[0])
            if p > 0:
                rec([x for x in remaining if x != r], [*chosen, r], pr * p)

    rec(order, [], 1.0)
    return out


scores_st = st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=6).map(np.array)


# --------------------------------------------------------------------------------------------------
# Inclusion probabilities


@settings(max_examples=30, deadline=None)
@given(scores=scores_st, k=st.integers(0, 7), eps=st.floats(0, 1), scale=st.sampled_from([0.1, 1.0, 20.0]))
def test_inclusion_matches_brute_force(scores, k, eps, scale):
    kk = min(k, len(scores))
    np.testing.assert_allclose(
        epsilon_greedy_inclusion(scores, k, eps), eps_exact(scores, k, eps), atol=1e-12
    )
    z = scores * scale
    np.testing.assert_allclose(plackett_luce_inclusion(z, k), pl_exact(z, kk), atol=1e-8)


def test_epsilon_closed_form_special_cases():
    s = np.array([0.2, 0.9, 0.5, 0.1, 0.7])
    np.testing.assert_allclose(epsilon_greedy_inclusion(s, 2, 0.0), [0, 1, 0, 0, 1])
    np.testing.assert_allclose(epsilon_greedy_inclusion(s, 2, 1.0), np.full(5, 2 / 5))
    np.testing.assert_allclose(epsilon_greedy_inclusion(s, 1, 0.5), [0.1, 0.6, 0.1, 0.1, 0.1])
    assert epsilon_greedy_inclusion(s, 9, 0.3).tolist() == [1.0] * 5


def test_plackett_luce_closed_form_and_batch():
    rng = np.random.default_rng(3)
    z = rng.normal(0, 2, (7, 9))
    w = np.exp(z)
    np.testing.assert_allclose(plackett_luce_inclusion(z, 1), w / w.sum(axis=1, keepdims=True), rtol=1e-12)
    batch = plackett_luce_inclusion(z, 3)
    np.testing.assert_allclose(batch, np.stack([plackett_luce_inclusion(row, 3) for row in z]), atol=1e-12)
    np.testing.assert_allclose(batch.sum(axis=1), 3.0, atol=1e-8)
    # Far-apart logits: the forced picks of tiny-weight items stay exact.
    far = np.array([0.0, -300.0, -600.0, -5.0])
    np.testing.assert_allclose(plackett_luce_inclusion(far, 3), [1, 1, 0, 1], atol=1e-9)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("k", [0, 1, 3, 8])
def test_inclusion_sums_to_slate_size(strategy, k):
    rng = np.random.default_rng(0)
    s = rng.normal(size=6)
    incl = inclusion_probabilities(
        s, k, strategy, epsilon=0.2, temperature=0.5, samples=rng.normal(size=(50, 6))
    )
    assert incl.shape == (6,)
    assert ((incl >= 0) & (incl <= 1)).all()
    assert incl.sum() == pytest.approx(min(k, 6), abs=1e-8)


# --------------------------------------------------------------------------------------------------
# Drawing slates


def test_greedy_takes_the_top_with_ties_by_index_and_draws_nothing():
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    slate = select_slate(np.array([0.5, 0.9, 0.5, 0.1]), 3, "greedy", rng)
    assert slate.indices.tolist() == [1, 0, 2]
    assert slate.propensities.tolist() == [1.0, 1.0, 1.0]
    assert not slate.explored.any() and len(slate) == 3
    assert rng.bit_generator.state == state


def test_softmax_uses_exactly_n_gumbels_of_the_stream():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    select_slate(np.arange(7.0), 3, "softmax", a)
    b.gumbel(size=7)
    assert a.random() == b.random()


@pytest.mark.parametrize(
    ("strategy", "kwargs"),
    [("epsilon", {"epsilon": 0.3}), ("softmax", {"temperature": 0.7}), ("thompson", {})],
)
def test_logged_propensities_match_empirical_frequencies(strategy, kwargs):
    rng = np.random.default_rng(11)
    s = np.array([1.0, 0.2, -0.5, 0.8, 0.0, -1.0])
    if strategy == "thompson":
        kwargs = {"samples": s + rng.normal(0, 0.7, size=(40, 6))}
    incl = inclusion_probabilities(s, 3, strategy, **kwargs)
    draws = 1200
    counts = np.zeros(6)
    for _ in range(draws):
        slate = select_slate(s, 3, strategy, rng, **kwargs)
        assert len(np.unique(slate.indices)) == 3
        np.testing.assert_array_equal(slate.propensities, incl[slate.indices])
        counts[slate.indices] += 1
    se = np.sqrt(incl * (1 - incl) / draws) + 1e-9
    assert (np.abs(counts / draws - incl) <= 4.5 * se + 1e-3).all()


def test_epsilon_marks_random_slots():
    rng = np.random.default_rng(2)
    flags = np.concatenate(
        [select_slate(np.arange(10.0), 2, "epsilon", rng, epsilon=0.5).explored for _ in range(400)]
    )
    assert 0.4 < flags.mean() < 0.6
    assert not select_slate(np.arange(10.0), 2, "epsilon", rng, epsilon=0.0).explored.any()


def test_thompson_propensity_is_the_share_of_draws():
    samples = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [2.0, 3.0, 1.0]])
    np.testing.assert_allclose(
        inclusion_probabilities(np.zeros(3), 1, "thompson", samples=samples), [0.5, 0.25, 0.25]
    )
    slate = select_slate(np.zeros(3), 1, "thompson", np.random.default_rng(0), samples=samples)
    assert slate.propensities[0] in (0.5, 0.25)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((np.ones(3), 1, "boltzmann"), {}, "unknown strategy 'boltzmann'; known strategies: greedy, epsilon"),
        ((np.ones(3), -1, "greedy"), {}, "k must be an integer >= 0, got -1"),
        ((np.ones(3), 1.5, "greedy"), {}, "k must be an integer >= 0, got 1.5"),
        ((np.ones(3), 1, "epsilon"), {"epsilon": 1.5}, "epsilon must be a number in [0, 1], got 1.5"),
        (
            (np.ones(3), 1, "softmax"),
            {"temperature": 0.0},
            "temperature must be a finite number > 0, got 0.0",
        ),
        ((np.array([1.0, np.nan]), 1, "greedy"), {}, "scores[1] is nan; scores must be finite"),
        ((np.ones((2, 2)), 1, "greedy"), {}, "scores must be one-dimensional [n], got shape (2, 2)"),
        ((np.ones(3), 1, "thompson"), {}, "strategy 'thompson' needs samples"),
        (
            (np.ones(3), 1, "thompson"),
            {"samples": np.ones((4, 2))},
            "samples must have shape [S >= 1, n = 3]",
        ),
    ],
)
def test_invalid_arguments_name_the_value(args, kwargs, message):
    with pytest.raises(ValueError, match=None) as err:
        select_slate(*args, np.random.default_rng(0), **kwargs)
    assert message in str(err.value)


# --------------------------------------------------------------------------------------------------
# Explorer quota


def test_explorer_quota_counts_per_session():
    q = ExplorerQuota(per_session=2)
    assert q.available("s1") == 2
    q.use("s1")
    assert (q.available("s1"), q.used("s1"), q.available("s2")) == (1, 1, 2)
    q.use("s1", 1)
    assert q.available("s1") == 0
    with pytest.raises(ValueError, match="session 's1' has 0 explorer slot\\(s\\) left, asked for 1"):
        q.use("s1")
    q.reset("s1")
    assert q.available("s1") == 2
    q.use("s2", 2)
    q.reset()
    assert q.available("s2") == 2
    assert ExplorerQuota(per_session=0).available("s") == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"per_session": 3}, "per_session must be an integer in [0, 2], got 3"),
        ({"per_session": -1}, "per_session must be an integer in [0, 2], got -1"),
        ({"per_session": 1.0}, "per_session must be an integer in [0, 2], got 1.0"),
        ({"per_session": 2, "max_per_session": 1}, "per_session must be an integer in [0, 1], got 2"),
        ({"max_per_session": -2}, "max_per_session must be an integer >= 0, got -2"),
    ],
)
def test_explorer_quota_validation(kwargs, message):
    with pytest.raises(ValueError) as err:
        ExplorerQuota(**kwargs)
    assert str(err.value) == message


def test_explorer_quota_rejects_negative_use():
    with pytest.raises(ValueError, match="n must be an integer >= 0, got -1"):
        ExplorerQuota().use("s", -1)


# --------------------------------------------------------------------------------------------------
# Speculative candidates


@pytest.fixture(scope="module")
def chain():
    """a -d0- b -d1- c -d2- d, and c -d3- e; entry a (so a and b are near, c, d, e far)."""
    ents = [Entity(id=x, name=x) for x in "abcde"]
    spec = [("d0", "a", "b", 0.9), ("d1", "b", "c", 0.9), ("d2", "c", "d", 0.3), ("d3", "c", "e", 0.9)]
    deps = [
        Dependency(
            id=i, source_entity_id=s, target_entity_id=t, dependency_type="uses", strength=1.0, confidence=c
        )
        for i, s, t, c in spec
    ]
    arrays = GraphArrays.from_graph(KnowledgeGraph.from_records(entities=ents, dependencies=deps))

    def walk(*ids: str) -> Path:
        hops = [Hop.entity("a")]
        ends = {"d0": "b", "d1": "c", "d2": "d", "d3": "e"}
        for d in ids:
            hops += [Hop.dependency(d), Hop.entity(ends[d])]
        return Path.of(*hops)

    paths = [walk(), walk("d0"), walk("d0", "d1"), walk("d0", "d1", "d2"), walk("d0", "d1", "d3")]
    stats = EdgeStats(arrays.num_dependencies)
    for _ in range(20):  # d0, d1, d2 well walked; d3 never
        stats.reinforce(stats.edges_of(paths[3], arrays), "what", 0, 0)
    vectors = {"a": [1, 0], "b": [1, 0], "c": [0, 1], "d": [-1, 0], "e": [1, 0]}
    ent_vec = np.array([vectors[e] for e in arrays.entity_ids], dtype=float)
    return arrays, paths, stats, ent_vec


def test_speculative_prefers_uncertain_edges_and_close_far_ends(chain):
    arrays, paths, stats, ent_vec = chain
    q = np.array([1.0, 0.0])
    # p4: unwalked d3 (1.0) + end e close and 2 hops away (1.0); p3: d2 confidence 0.3 (0.7), end d opposite;
    # p1, p2: only confident, well-walked edges (0.1); p0: no edges, end a is an entry (0, dropped).
    assert speculative_candidates(paths, arrays, stats, q, ent_vec, ["a"], 10).tolist() == [4, 3, 1, 2]
    assert speculative_candidates(paths, arrays, stats, q, ent_vec, ["a"], 2).tolist() == [4, 3]
    # c pointing at the query makes p2 a close-but-far candidate, ahead of the low-confidence p3.
    ent_c = ent_vec.copy()
    ent_c[arrays.entity_index["c"]] = [1.0, 0.0]
    assert speculative_candidates(paths, arrays, stats, q, ent_c, ["a"], 3).tolist() == [4, 2, 3]
    # Nearness is to the entries: from entry c, b, d and e are neighbours and only a (p0's end) is far.
    assert speculative_candidates(paths, arrays, stats, q, ent_c, ["c"], 3).tolist() == [0, 4, 3]


def test_speculative_without_vectors_or_stats(chain):
    arrays, paths, stats, _ = chain
    assert speculative_candidates(paths, arrays, stats, None, None, ["a"], 3).tolist() == [4, 3, 1]
    # Nothing walked yet: every path with an edge is maximally uncertain (ties by index).
    assert speculative_candidates(paths, arrays, None, None, None, ["a"], 9).tolist() == [1, 2, 3, 4]
    assert speculative_candidates([], arrays, stats, None, None, ["a"], 3).tolist() == []
    with pytest.raises(ValueError, match=r"entity_vectors must have shape \[5, 2\], got \(5, 3\)"):
        speculative_candidates(paths, arrays, stats, np.ones(2), np.ones((5, 3)), ["a"], 3)


def test_speculative_skips_the_hybrid_entrys_memory_only_paths(chain):
    # the floor and session steps are memories only (no entity): they used to raise IndexError mid-training
    arrays, paths, stats, ent_vec = chain
    memory_only = [Path.of(Hop.memory("m1")), Path.of(Hop.memory("m1"), Hop.memory("m2"))]
    q = np.array([1.0, 0.0])
    got = speculative_candidates([*memory_only, *paths], arrays, stats, q, ent_vec, ["a"], 10).tolist()
    assert got == [6, 5, 3, 4]  # the same order as without them, shifted by two; they are never chosen
