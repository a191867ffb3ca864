from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph
from signet_rl.learning.reinforcement import EdgeStats, path_edges
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import Hop, Path
from signet_rl.traversal.walk import Traverser

E = 5
F32 = np.float32

# One step of a rating history: which edges a path walked, the rating, the intent and bucket, and whether
# the step then cools the edges it did not walk.
step_st = st.tuples(
    st.lists(st.integers(0, E - 1), min_size=1, max_size=4),
    st.one_of(st.sampled_from([-1.0, 0.0, 1.0]), st.floats(-1, 1)),
    st.sampled_from(["what", "relate", "action", "changed"]),
    st.integers(0, 3),
    st.booleans(),
)


def run(stats: EdgeStats, history) -> EdgeStats:
    for edges, rating, intent, bucket, cool in history:
        stats.reinforce(np.array(edges), intent, bucket, rating)
        if cool:
            stats.cool(np.array(edges))
    return stats


@settings(max_examples=40, deadline=None)
@given(history=st.lists(step_st, max_size=40), lr=st.floats(0.01, 2.0))
def test_weights_stay_within_floor_and_ceiling(history, lr):
    stats = run(EdgeStats(E, lr=lr), history)
    assert (stats.weights >= F32(stats.floor)).all() and (stats.weights <= F32(stats.ceiling)).all()


@settings(max_examples=40, deadline=None)
@given(history=st.lists(step_st, max_size=30), edges=st.lists(st.integers(0, E - 1), min_size=1, max_size=3))
def test_one_bad_rating_never_switches_an_edge_off(history, edges):
    stats = run(EdgeStats(E), history)
    before = stats.weights.copy()
    stats.reinforce(np.array(edges), "relate", 2, -1)
    e = np.unique(edges)
    after, old = stats.weights[e, 1, 2].astype(float), before[e, 1, 2].astype(float)
    assert (after >= stats.floor * (1 - 1e-7)).all()
    assert (after >= old * math.exp(-stats.lr) * (1 - 1e-6)).all()
    untouched = np.ones_like(before, dtype=bool)
    untouched[e, 1, 2] = False
    np.testing.assert_array_equal(stats.weights[untouched], before[untouched])


@settings(max_examples=40, deadline=None)
@given(
    history=st.lists(step_st, max_size=30),
    walked=st.lists(st.integers(0, E - 1), max_size=3),
    cool=st.floats(0, 1),
    steps=st.integers(0, 50),
)
def test_unwalked_edges_relax_toward_init_without_crossing(history, walked, cool, steps):
    stats = run(EdgeStats(E, cool=cool), history)
    before = stats.weights.copy().astype(float)
    stats.cool(np.array(walked, dtype=np.int64))
    stats.decay(steps)
    after = stats.weights.astype(float)
    init = float(F32(stats.init))
    mask = np.ones(E, dtype=bool)
    mask[walked] = False
    b, a = before[mask], after[mask]
    assert (np.abs(a - init) <= np.abs(b - init)).all()  # toward init
    assert ((a - init) * (b - init) >= 0).all()  # never across it
    if walked and steps == 0:
        np.testing.assert_array_equal(after[~mask], before[~mask])


def test_cooling_is_slow_and_closed_form():
    stats = EdgeStats(2, cool=0.1)
    stats.reinforce(np.array([0]), "what", 0, 1)
    w0 = float(stats.weights[0, 0, 0])
    stats.cool()
    assert stats.weights[0, 0, 0] == pytest.approx(1 + 0.9 * (w0 - 1), rel=1e-6)
    stats.decay(10)
    assert stats.weights[0, 0, 0] == pytest.approx(1 + 0.9**11 * (w0 - 1), rel=1e-6)
    assert stats.step == 11
    stats.cool(np.array([0]))
    assert stats.weights[0, 0, 0] == pytest.approx(1 + 0.9**11 * (w0 - 1), rel=1e-6)  # walked: kept


def test_update_rule_and_duplicates_count_once():
    stats = EdgeStats(4, lr=0.5)
    stats.reinforce(np.array([1, 1, 3]), "action", 1, 1)
    assert stats.weights[1, 2, 1] == pytest.approx(math.exp(0.5), rel=1e-6)
    assert stats.weights[3, 2, 1] == pytest.approx(math.exp(0.5), rel=1e-6)
    assert stats.walks.tolist() == [0, 1, 0, 1]
    assert (stats.weights[[0, 2]] == 1).all() and (stats.weights[1, :2] == 1).all()
    for _ in range(20):
        stats.reinforce(np.array([1]), "action", 1, 1)
    assert stats.weights[1, 2, 1] == F32(3.0)
    for _ in range(20):
        stats.reinforce(np.array([1]), "action", 1, -1)
    assert stats.weights[1, 2, 1] == F32(0.2)


@pytest.mark.parametrize(
    ("rating", "message"),
    [
        (2, "rating must be a number in [-1, 1], got 2"),
        (float("nan"), "rating must be a number in [-1, 1], got nan"),
        (-1.5, "rating must be a number in [-1, 1], got -1.5"),
        (None, "rating must be a number in [-1, 1], got None"),
        (True, "rating must be a number in [-1, 1], got True"),
    ],
)
def test_invalid_rating_is_named(rating, message):
    stats = EdgeStats(3)
    with pytest.raises(ValueError) as err:
        stats.reinforce(np.array([0]), "what", 0, rating)
    assert str(err.value) == message
    assert (stats.weights == 1).all()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda s: s.reinforce(np.array([0]), "gossip", 0, 1),
            "unknown intent 'gossip'; known intents: what, relate, action, changed",
        ),
        (lambda s: s.weight(np.array([0]), "gossip"), "unknown intent 'gossip'"),
        (lambda s: s.edge_weight_fn("none"), "unknown intent 'none'"),
        (lambda s: s.reinforce(np.array([0]), "what", 4, 1), "bucket must be an integer in [0, 3], got 4"),
        (lambda s: s.reinforce(np.array([3]), "what", 0, 1), "edge index 3 outside [0, 3)"),
        (lambda s: s.reinforce(np.array([0.5]), "what", 0, 1), "edge_idx must be a 1-d integer array"),
        (lambda s: s.decay(-1), "steps must be an integer >= 0, got -1"),
    ],
)
def test_bad_calls_are_named(call, message):
    with pytest.raises(ValueError) as err:
        call(EdgeStats(3))
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_edges": -1}, "num_edges must be an integer >= 0, got -1"),
        ({"intents": ()}, "intents must be distinct strings, at least one, got ()"),
        ({"intents": ("a", "a")}, "intents must be distinct strings"),
        ({"time_buckets": 0}, "time_buckets must be an integer in [1, 24], got 0"),
        ({"lr": 0.0}, "lr must be a finite number > 0, got 0.0"),
        ({"floor": 0.0}, "floor must be a finite number > 0, got 0.0"),
        ({"ceiling": 0.1}, "ceiling must be a finite number >= floor (0.2), got 0.1"),
        ({"init": 5.0}, "init must be in [floor, ceiling] = [0.2, 3.0], got 5.0"),
        ({"cool": 1.5}, "cool must be a number in [0, 1], got 1.5"),
    ],
)
def test_constructor_validation(kwargs, message):
    with pytest.raises(ValueError) as err:
        EdgeStats(**{"num_edges": 3, **kwargs})
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("ts", "bucket"),
    [
        (None, 0),
        (pd.NaT, 0),
        (pd.Timestamp("2026-01-01 00:00"), 0),
        (pd.Timestamp("2026-01-01 05:59"), 0),
        (pd.Timestamp("2026-01-01 06:00"), 1),
        (pd.Timestamp("2026-01-01 13:30"), 2),
        (pd.Timestamp("2026-01-01 23:59", tz="UTC"), 3),
        (pd.Timestamp("2026-01-01 20:00", tz="UTC").tz_convert("Asia/Tokyo"), 0),  # 05:00 local
        (pd.Timestamp("2026-01-01 13:00", tz="UTC").timestamp(), 2),  # epoch seconds are UTC
    ],
)
def test_time_bucket(ts, bucket):
    assert EdgeStats(1).time_bucket(ts) == bucket


def test_weight_means_and_features():
    stats = EdgeStats(3, intents=("a", "b"), time_buckets=2, lr=math.log(2))
    stats.reinforce(np.array([0]), "a", 1, 1)  # w[0, a, 1] = 2
    assert stats.weight(np.array([0]), "a", 1)[0] == pytest.approx(2)
    assert stats.weight(np.array([0]), "a")[0] == pytest.approx(1.5)
    assert stats.weight(np.array([0]), bucket=1)[0] == pytest.approx(1.5)
    assert stats.weight(np.array([0, 1]))[0] == pytest.approx(1.25)
    feats = stats.features(np.array([0, 1]))
    assert feats.shape == (2, 3) and feats.dtype == np.float32
    np.testing.assert_allclose(feats[0], [math.log(2) / 4, math.log(2), 1.0], rtol=1e-6)
    np.testing.assert_allclose(feats[1], [0, 0, 0])
    stats.cool(np.array([0]))
    assert stats.features(np.array([0]))[0, 2] == pytest.approx(0.5)


# --------------------------------------------------------------------------------------------------
# On a graph: paths -> edges, the traverser hook, feedback


@pytest.fixture(scope="module")
def star():
    """hub -> near (0.9 x 0.9) and hub -> far (0.9 x 0.5), each with one fact."""
    ents = [Entity(id=x, name=x) for x in ("hub", "near", "far")]
    asps = [Aspect(id=f"{x}-a", entity_id=x, name="notes", weight=0.5) for x in ("hub", "near", "far")]
    attrs = [Attribute(id=f"{x}-t", aspect_id=f"{x}-a", content=f"{x} fact") for x in ("hub", "near", "far")]
    deps = [
        Dependency(
            id="d-near",
            source_entity_id="hub",
            target_entity_id="near",
            dependency_type="uses",
            strength=0.9,
            confidence=0.9,
        ),
        Dependency(
            id="d-far",
            source_entity_id="hub",
            target_entity_id="far",
            dependency_type="uses",
            strength=0.5,
            confidence=0.9,
        ),
    ]
    g = KnowledgeGraph.from_records(entities=ents, aspects=asps, attributes=attrs, dependencies=deps)
    return g, GraphArrays.from_graph(g)


def to(dep: str, end: str, strategy: str = "relate") -> Path:
    return Path.of(Hop.entity("hub"), Hop.dependency(dep), Hop.entity(end), strategy=strategy)


def test_edges_of_maps_dependency_hops(star):
    _, arrays = star
    stats = EdgeStats(arrays.num_dependencies)
    far = arrays.edge_ids.tolist().index("d-far")
    assert stats.edges_of(to("d-far", "far"), arrays).tolist() == [far]
    assert stats.edges_of(Path.of(Hop.entity("hub")), arrays).tolist() == []
    edges, owner = path_edges([to("d-far", "far"), Path.of(Hop.entity("hub")), to("d-near", "near")], arrays)
    assert owner.tolist() == [0, 2] and edges[0] == far
    with pytest.raises(ValueError, match="dependency 'd-gone' of path 'E:hub>D\\+:d-gone>E:far' is not in"):
        stats.edges_of(to("d-gone", "far"), arrays)
    with pytest.raises(ValueError, match="graph has 2 dependencies but these EdgeStats hold 7"):
        EdgeStats(7).edges_of(to("d-far", "far"), arrays)


def test_edge_weight_fn_reorders_the_traversal(star):
    g, arrays = star
    stats = EdgeStats(arrays.num_dependencies)
    fn = stats.edge_weight_fn("relate", 0)
    slots = np.arange(len(arrays.dep_edge))
    np.testing.assert_allclose(fn(arrays, slots), arrays.dep_confidence * arrays.dep_strength)
    config = TraversalConfig(max_branching=1, min_path_length=1, max_depth=1)

    def reached() -> set[str]:
        walk = Traverser(arrays, g, config, edge_weight=fn).walk(["hub"], "relate")
        return {d for p in walk.paths for d in p.dependencies}

    assert reached() == {"d-near"}
    for _ in range(6):  # 0.45 x e^(0.2 x 6) = 1.49 > 0.81: the far edge now leads
        stats.reinforce(stats.edges_of(to("d-far", "far"), arrays), "relate", 0, 1)
    assert reached() == {"d-far"}  # the same function reads the live weights
    np.testing.assert_allclose(
        fn(arrays, slots),
        arrays.dep_confidence * arrays.dep_strength * stats.weights[arrays.dep_edge, 1, 0],
        rtol=1e-6,
    )


def test_apply_feedback_reinforces_by_strategy_and_query_time(star):
    g, arrays = star
    stats = EdgeStats(arrays.num_dependencies, cool=0.5)
    stats.weights[:] = 2.0
    query = Query(id="q", text="?", graph_id="g", split="train", timestamp=pd.Timestamp("2026-01-01 19:00"))
    fb = Feedback(
        query=query,
        paths=[to("d-near", "near", "what"), to("d-far", "far", "action")],
        context=ScoringContext(graph=g, arrays=arrays),
        shown=[1],
        ratings=[-1],
    )
    stats.apply([fb])
    far, near = (arrays.edge_ids.tolist().index(d) for d in ("d-far", "d-near"))
    assert stats.weights[far, 2, 3] == pytest.approx(2 * math.exp(-0.2), rel=1e-6)  # action, 19h -> bucket 3
    assert (np.delete(stats.weights[far].ravel(), 2 * 4 + 3) == 2).all()  # walked: not cooled
    assert (stats.weights[near] == 1.5).all()  # not walked: halfway back to init
    assert stats.walks[far] == 1 and stats.step == 1
    unrated = Feedback(query=query, paths=fb.paths, context=fb.context, shown=[0], ratings=[None])
    stats.apply([unrated], bucket=0)
    assert stats.walks[near] == 0 and stats.step == 2
    bad = Feedback(query=query, paths=[to("d-near", "near", "")], context=fb.context, shown=[0], ratings=[1])
    with pytest.raises(ValueError, match="unknown intent ''"):
        stats.apply([bad])


def test_state_dict_round_trip(tmp_path):
    stats = EdgeStats(4, intents=("what", "relate"), time_buckets=3, lr=0.3, floor=0.1, ceiling=4.0, cool=0.2)
    stats.reinforce(np.array([0, 2]), "relate", 2, 1)
    stats.cool(np.array([0]))
    np.savez(tmp_path / "edges.npz", **stats.state_dict())
    with np.load(tmp_path / "edges.npz", allow_pickle=False) as z:
        state = dict(z)
    again = EdgeStats.from_state_dict(state)
    assert repr(again) == repr(stats)
    for key in ("weights", "walks", "last_update"):
        np.testing.assert_array_equal(getattr(again, key), getattr(stats, key))
    assert again.step == stats.step == 1
    with pytest.raises(ValueError, match="state_dict intents \\('what', 'relate'\\) differ"):
        EdgeStats(4).load_state_dict(state)
    with pytest.raises(
        ValueError, match="state_dict weights have shape \\(4, 2, 3\\), expected \\(5, 2, 3\\)"
    ):
        EdgeStats(5, intents=("what", "relate"), time_buckets=3).load_state_dict(state)
    with pytest.raises(ValueError, match="state_dict has no 'walks'"):
        stats.load_state_dict({"weights": state["weights"]})


# --------------------------------------------------------------------------------------------------
# Bounds and all-or-nothing for any input (issue 31)

hyper_st = st.tuples(
    st.floats(0.01, 1.0), st.floats(1.0, 5.0), st.floats(0.0, 1.0), st.floats(0.01, 3.0), st.floats(0, 1)
).map(
    lambda t: {
        "floor": t[0],
        "ceiling": t[1],
        "init": min(t[0] + t[2] * (t[1] - t[0]), t[1]),
        "lr": t[3],
        "cool": t[4],
    }
)


@settings(max_examples=60, deadline=None)
@given(hyper=hyper_st, history=st.lists(step_st, max_size=40),
       decays=st.lists(st.integers(0, 99), max_size=3))
def test_weights_stay_within_their_bounds_for_any_hyperparameters_and_ratings(hyper, history, decays):
    stats = run(EdgeStats(E, **hyper), history)
    for steps in decays:
        stats.decay(steps)
    w = stats.weights
    assert np.isfinite(w).all()
    assert (w >= F32(stats.floor)).all() and (w <= F32(stats.ceiling)).all()


@settings(max_examples=30, deadline=None)
@given(
    ratings=st.lists(st.one_of(st.none(), st.sampled_from([-1, 0, 1])), min_size=1, max_size=6),
    bad_at=st.integers(0, 5),
    bad=st.sampled_from(["strategy", "dependency", "nan rating"]),
)
def test_apply_with_one_bad_feedback_in_a_batch_changes_nothing(star, ratings, bad_at, bad):
    g, arrays = star
    stats = EdgeStats(arrays.num_dependencies)
    query = Query(id="q", text="?", graph_id="g", split="train", timestamp=pd.Timestamp("2026-01-01 09:00"))
    ctx = ScoringContext(graph=g, arrays=arrays)
    batch = [Feedback(query, [to("d-near", "near", "what"), to("d-far", "far")], ctx, [i % 2], [r])
             for i, r in enumerate(ratings)]
    k = bad_at % len(batch)
    if bad == "strategy":  # a rated path walked for an intent the stats do not keep
        batch[k].paths, batch[k].ratings = [to("d-near", "near", "nowhere")] * 2, [1]
    elif bad == "dependency":
        batch[k].paths = [to("d-gone", "far")] * 2
    else:
        batch[k].ratings = [float("nan")]
    before = stats.state_dict()
    with pytest.raises(ValueError):
        stats.apply(batch)
    after = stats.state_dict()
    assert all(np.array_equal(before[key], after[key]) for key in before)  # nothing half-applied


def test_apply_counts_hybrid_entry_paths_as_walked_without_reinforcing_an_intent(star):
    # a dependency walk of the hybrid entry (strategy "dependency") used to raise "unknown intent"
    # mid-training
    g, arrays = star
    stats = EdgeStats(arrays.num_dependencies, cool=0.5)
    stats.weights[:] = 2.0
    query = Query(id="q", text="?", graph_id="g", split="train", timestamp=pd.Timestamp("2026-01-01 19:00"))
    fb = Feedback(query=query, paths=[to("d-far", "far", "dependency")],
                  context=ScoringContext(graph=g, arrays=arrays), shown=[0], ratings=[1])  # fmt: skip
    stats.apply([fb])
    far = arrays.edge_ids.tolist().index("d-far")
    near = arrays.edge_ids.tolist().index("d-near")
    assert stats.walks[far] == 0 and stats.step == 1  # no intent learned from it
    assert (stats.weights[far] == 2).all()  # walked, so not cooled
    assert (stats.weights[near] == 1.5).all()  # not walked: halfway back to init


def test_carry_over_moves_learning_by_edge_id_and_leaves_a_new_edge_at_its_start() -> None:
    old = EdgeStats(3)
    old.reinforce([0, 2], "what", 0, 1.0)
    old.reinforce([1], "what", 0, -1.0)
    new = EdgeStats(3)  # the re-indexed graph: d2 first, d0 second, d9 new; d1 is gone
    new.carry_over(old, {"d0": 0, "d1": 1, "d2": 2}, {"d2": 0, "d0": 1, "d9": 2})
    np.testing.assert_array_equal(new.weights[0], old.weights[2])
    np.testing.assert_array_equal(new.weights[1], old.weights[0])
    np.testing.assert_array_equal(new.walks[[0, 1]], old.walks[[2, 0]])
    np.testing.assert_array_equal(new.weights[2], EdgeStats(3).weights[2])  # d9: untouched
    assert new.step == old.step and float(new.weights[1].max()) > float(EdgeStats(1).weights.max())
