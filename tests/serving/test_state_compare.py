"""The service's own state file (idempotent, transactional feedback; replay) and the online comparison
(mixed slates with exact propensities, the win rate, off-policy estimates)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from signet_rl.serving.compare import RRF_K, compare_report, mix, wilson
from signet_rl.serving.state import IssuedResult, ServiceState, StateError, UnknownIdError


def _result(rid: str, memories=("m1",), session="s1") -> IssuedResult:
    return IssuedResult(
        rid,
        session,
        "where does alice work",
        "main",
        "desire",
        0,
        0.5,
        "what",
        1,
        memories,
        {"entities": ["e1"], "memory_ids": list(memories)},
        ("d1", "d2"),
        0.9,
    )


def test_feedback_is_idempotent_transactional_and_replayable(tmp_path):
    state = ServiceState(tmp_path / "state.sqlite", store=tmp_path / "memories.db")
    state.issue([_result("r1", ("m1", "m2")), _result("r2", ("m2",))])
    row, new = state.record("k1", "r1", 1.0, session_key="s1")
    again, new_again = state.record("k1", "r1", 1.0, session_key="s1")
    assert new and not new_again and again.seq == row.seq
    with pytest.raises(
        StateError,
        match=r"idempotency key 'k1' already recorded rate 1 for result 'r1'; "
        r"a different rating needs a new key",
    ):
        state.record("k1", "r1", -1.0)
    with pytest.raises(UnknownIdError, match=r"unknown result id 'nope': this service never issued it"):
        state.record("k2", "nope", 1.0)
    with pytest.raises(StateError, match=r"rating must be a number in \[-1, 1\], got 2"):
        state.record("k3", "r1", 2)
    with pytest.raises(StateError, match=r"unknown verb 'boost'; expected one of: rate, confirm, correct"):
        state.record("k4", "r1", 1.0, verb="boost")
    assert state.counts() == {"recalls": 0, "results": 2, "feedback": 1}  # the refused ones wrote nothing
    state.record("k5", "r2", -0.5, verb="reject")
    assert (
        state.latest_result_for_memory("m2", "s1") == "r2"
        and state.latest_result_for_memory("m9", None) is None
    )
    seen = []
    assert state.replay(lambda res, fb: seen.append((res.result_id, fb.rating, fb.verb))) == 2
    assert seen == [("r1", 1.0, "rate"), ("r2", -0.5, "reject")]
    assert state.integrity_check() == "ok"
    state.close()
    reopened = ServiceState(tmp_path / "state.sqlite", store=tmp_path / "memories.db")
    assert [f.idempotency_key for f in reopened.feedback()] == ["k1", "k5"]
    with pytest.raises(
        StateError,
        match=r"is the state of store .*memories.db, not of .*other.db; give this "
        r"store its own --state file",
    ):
        ServiceState(tmp_path / "state.sqlite", store=tmp_path / "other.db")


def test_mixed_slate_scores_and_propensities_by_hand():
    slate = mix(["a", "b"], ["b", "c"], 2, np.random.default_rng(0), alpha=0.5, temperature=0.02)
    assert slate.keys == ("a", "b", "c")
    # a: desire rank 0; b: desire rank 1 and flat rank 0; c: flat rank 1
    expected = [0.5 / (RRF_K + 1), 0.5 / (RRF_K + 2) + 0.5 / (RRF_K + 1), 0.5 / (RRF_K + 2)]
    assert np.allclose(slate.fused, expected)
    assert slate.systems == ("desire", "flat", "flat")
    assert math.isclose(sum(slate.inclusion), 2.0) and all(0 < p <= 1 for p in slate.inclusion)
    assert slate.pscores == tuple(slate.inclusion[i] for i in slate.shown)
    with pytest.raises(ValueError, match=r"the flat ranking repeats key 'c'"):
        mix(["a"], ["c", "c"], 2, np.random.default_rng(0))


def test_wilson_interval_by_hand():
    lo, hi = wilson(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)


def test_a_better_desire_side_wins_and_snips_recovers_its_value():
    rng = np.random.default_rng(3)
    quality = {**{f"d{i}": 0.8 if i < 3 else 0.6 for i in range(10)}, **{f"f{i}": 0.3 for i in range(10)}}
    slates, ratings = [], []
    for _ in range(800):
        s = mix([f"d{i}" for i in range(10)], [f"f{i}" for i in range(10)], 5, rng)
        slates.append(s)
        ratings.append([float(rng.random() < quality[s.keys[j]]) for j in s.shown])
    report = compare_report(slates, ratings, k=5, seed=0, bootstrap=200)
    assert report["ci95"][0] > 0.5
    on_policy = 3 * 0.8 + 2 * 0.6  # the desire top 5's expected summed rating
    assert abs(report["ope"]["snips"]["value"] - on_policy) / 5 < 0.05
    assert report["ope"]["dr"]["ci95"][0] <= on_policy <= report["ope"]["dr"]["ci95"][1]
