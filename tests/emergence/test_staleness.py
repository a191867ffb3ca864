"""Staleness on a hand-made timeline: repeating sessions raise the explorer share, unpaid exploration
lowers it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from signet_rl.emergence.staleness import ExplorerRegulator, regulated_slots, session_signals
from signet_rl.learning.feedback_log import FeedbackRecord

T0 = pd.Timestamp("2026-01-05 08:00", tz="UTC")


def session(day: int, paths: list[str], explorer: dict[str, float | None] | None = None,
            ratings: float = 1) -> FeedbackRecord:
    """One record per session: ``paths`` rated ``ratings``, then explorer items with their ratings."""
    explorer = explorer or {}
    cands = [*paths, *explorer]
    n = len(cands)
    return FeedbackRecord(
        run_id="r", step=day, query_id=f"q{day}", timestamp=T0 + pd.Timedelta(days=day), session=f"s{day}",
        intent="what", context={"entries": ["e0"], "graph_id": "g"}, candidates=cands,
        candidate_scores=[0.5] * n, shown=list(range(n)), positions=list(range(n)), pscores=[1.0] * n,
        ratings=[ratings] * len(paths) + list(explorer.values()),
        explorer=[False] * len(paths) + [True] * len(explorer), policy_version="v0")


ROUTINE = ["E:e0>D+:d1>E:e1", "E:e0>D+:d2>E:e2"]


def timeline() -> list[FeedbackRecord]:
    return [
        session(0, ROUTINE, {"E:e5": 1}),
        session(1, ["E:e3>D+:d3>E:e4", ROUTINE[0]], {"E:e6": 1}),  # new entities and an edge
        session(2, ROUTINE, {"E:e5": 1}),                           # nothing new, all repeats
        session(3, ROUTINE, {"E:e6": -1}),
        session(4, ROUTINE, {"E:e5": -1}),                          # explorer hits falling
        session(5, ROUTINE, {"E:e6": -1}),
        session(6, ROUTINE, {"E:e5": -1, "E:e6": -1}),             # exploration stopped paying
    ]


def test_signals_on_a_hand_made_timeline() -> None:
    sig = session_signals(list(reversed(timeline())), window=2).set_index("session")  # order from time
    assert list(sig.index) == [f"s{i}" for i in range(7)]
    assert sig.loc["s1", "repeat_share"] == pytest.approx(1 / 3)  # 1 of its 3 shown paths seen before
    assert sig.loc["s1", "new_items"] == 4  # E:e3, D:d3, E:e4 and the explorer's E:e6
    assert sig.loc["s2", ["repeat_share", "new_items"]].tolist() == [1.0, 0]
    assert math.isclose(sig.loc["s3", "explorer_hit_rate"], 0.5)  # s2 +1, s3 -1
    # s6: 0 of 3 against 0 of 2 before: flat at zero, not falling
    assert sig["hit_rate_falling"].tolist() == [False, False, False, True, True, True, False]
    assert sig["staleness"].tolist() == pytest.approx([0.0, 0.0, 2 / 3, 1.0, 1.0, 1.0, 2 / 3])


def test_regulator_raises_the_share_when_stale_and_lowers_it_when_exploration_does_not_pay() -> None:
    sig = session_signals(timeline(), window=2).set_index("session")
    reg = ExplorerRegulator(min_explorer_rated=3)
    assert reg.slots(sig.loc["s1"], slate_size=10) == 1  # fresh: the base quota
    assert reg.slots(sig.loc["s2"], slate_size=10) == 3  # stale: 30% of a 10-item slate
    assert reg.slots(sig.loc["s2"], slate_size=5) == 2  # never fewer than max_slots when stale
    assert reg.slots(sig.loc["s3"], slate_size=10) == 3  # 1 hit in 2 rated: not enough to judge yet
    assert reg.paying(sig.loc["s5"]) is True  # 0 hits, but only 2 rated explorer items in the window
    assert reg.paying(sig.loc["s6"]) is False  # 0 hits in 3: exploration stopped paying
    assert sig.loc["s6", "staleness"] >= reg.stale_at and reg.slots(sig.loc["s6"], slate_size=10) == 1
    quota = reg.quota(sig.loc["s2"], slate_size=10)
    assert (quota.per_session, quota.available("next")) == (3, 3)


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match=r"window must be an integer >= 1, got 0"):
        session_signals(timeline(), window=0)
    with pytest.raises(ValueError, match=r"need 0 <= min_slots <= max_slots, got 3 and 2"):
        ExplorerRegulator(min_slots=3)
    with pytest.raises(ValueError, match=r"slate_size must be an integer >= 1, got 0"):
        ExplorerRegulator().slots(session_signals(timeline()).iloc[0], 0)


def drifting() -> list[FeedbackRecord]:
    """Fresh sessions (new entities every time) whose routine ratings turn from +1 to -1 at session 4."""
    return [session(d, [f"E:a{d}>D+:b{d}>E:c{d}"], ratings=1 if d < 4 else -1) for d in range(8)]


def test_routine_drop_reads_the_fall_of_the_routine_ratings() -> None:
    sig = session_signals(drifting(), window=2).set_index("session")
    assert sig["staleness"].max() <= 1 / 3  # new entities every session: never stale by the three signs
    assert sig["routine_rating"].tolist() == [1, 1, 1, 1, 0, -1, -1, -1]
    assert sig["routine_drop"].isna().tolist() == [True, True, False, False, False, False, False, False]
    assert sig.loc[["s3", "s4", "s5", "s6"], "routine_drop"].tolist() == [0, 1, 2, 1]
    assert sig["slots"].tolist() == [1] * 8
    reg = ExplorerRegulator(drop_at=0.5)
    assert [reg.slots(sig.loc[f"s{d}"], 10) for d in range(8)] == [1, 1, 1, 1, 3, 3, 3, 1]
    assert ExplorerRegulator().slots(sig.loc["s5"], 10) == 1  # without drop_at the fall is not read
    with pytest.raises(ValueError, match=r"ExplorerRegulator.drop_at must be in \(0, 2\] or None, got 0"):
        ExplorerRegulator(drop_at=0)


def test_regulated_slots_is_the_trainers_hook() -> None:
    slots = regulated_slots(window=2, history=4, drop_at=0.5)
    log = drifting()
    assert slots([], 3) == 1  # no feedback yet: the base quota
    assert slots(log[:4], 3) == 1
    # 30% of the slots the last session showed (1 here), never fewer than max_slots: 2
    assert slots(log[:5], 3) == 2
    big = [session(d, [f"E:a{d}>D+:b{d}>E:c{d}{j}" for j in range(10)], ratings=1 if d < 4 else -1)
           for d in range(6)]
    assert slots(big, 3) == 3  # 30% of 10 shown slots
    assert slots(log, 3) == 1  # s7: the window's ratings no longer fall
    with pytest.raises(ValueError, match=r"task.regulator: unknown key 'drop'; known: window, "
                                         r"repeat_threshold, history, min_slots"):
        regulated_slots(drop=0.1)
    with pytest.raises(ValueError, match=r"task.regulator.history must be an integer >= 2 \* window = 6, "
                                         r"got 4"):
        regulated_slots(history=4)
