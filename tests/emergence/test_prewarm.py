"""Temporal pre-warm on a hand-made timeline: morning paths at a weekday morning, evening paths at a weekend
evening, packed into Signet's 600 characters and logged with propensities; Signet's own session-start
candidates for comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Unit
from signet_rl.emergence.prewarm import (
    PrewarmConfig,
    TemporalPrewarm,
    prewarm_record,
    prewarm_slate,
    signet_session_start,
)
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.exploration import inclusion_probabilities
from signet_rl.learning.feedback_log import FeedbackLog, FeedbackRecord

MONDAY = pd.Timestamp("2026-01-05", tz="UTC")  # a Monday
MORNING = ["E:infra>D+:d1>E:db", "E:infra>D+:d2>E:ci"]
EVENING = ["E:me>D+:d3>E:gym"]
NEVER = "E:bad>D+:d4>E:worse"


def rated(at: pd.Timestamp, paths: list[str], rating: float = 1, step: int = 0) -> FeedbackRecord:
    n = len(paths)
    return FeedbackRecord(
        run_id="r", step=step, query_id=f"q{step}", timestamp=at, session=at.date().isoformat(),
        intent="what",
        context={"entries": ["e"], "graph_id": "g"}, candidates=paths, candidate_scores=[0.0] * n,
        shown=list(range(n)), positions=list(range(n)), pscores=[1.0] * n, ratings=[rating] * n,
        explorer=[False] * n, policy_version="v")  # fmt: skip


def timeline() -> list[FeedbackRecord]:
    """Two weeks: weekday mornings at 9:00 rate the morning paths +1; weekend evenings at 20:30 the evening
    path; a path rated -1 every morning at 9:15."""
    out = []
    for day in range(14):
        d = MONDAY + pd.Timedelta(days=day)
        if d.day_of_week < 5:
            out.append(rated(d + pd.Timedelta(hours=9), MORNING, step=len(out)))
            out.append(rated(d + pd.Timedelta(hours=9.25), [NEVER], rating=-1, step=len(out)))
        else:
            out.append(rated(d + pd.Timedelta(hours=20.5), EVENING, step=len(out)))
    return out


def construct(path) -> Unit:
    text = f"memory of {path.entities[-1]}: " + "x" * 200
    return Unit(text=text, items=(path.entities[-1],), kind="constructed")


@pytest.fixture(scope="module")
def model() -> TemporalPrewarm:
    m = TemporalPrewarm()
    assert m.observe(timeline()) == 10 * 3 + 4
    return m


def test_the_clock_picks_the_paths(model):
    monday_9 = MONDAY + pd.Timedelta(days=14, hours=9)
    saturday_20 = MONDAY + pd.Timedelta(days=19, hours=20)
    morning = model.scores(monday_9)
    assert sorted(morning.index[:2]) == sorted(MORNING) and NEVER not in morning.index
    assert morning[MORNING[0]] > 100 * morning.get(EVENING[0], 0.0)
    evening = model.scores(saturday_20)
    assert evening.index[0] == EVENING[0]
    # only ratings before the session start count
    assert model.scores(MONDAY + pd.Timedelta(hours=8)).empty
    assert list(model.scores(MONDAY + pd.Timedelta(hours=10)).index) == MORNING
    timeless = TemporalPrewarm(PrewarmConfig(hour_width=1e6, other_day_weight=1.0))
    timeless.observe(timeline())
    assert timeless.scores(saturday_20).index[0] != EVENING[0]  # without the clock, the morning routine wins


def test_the_slate_fits_the_budget_and_is_logged_with_propensities(model, tmp_path):
    at = MONDAY + pd.Timedelta(days=14, hours=9)
    slate = prewarm_slate(model, at, construct, np.random.default_rng(0))
    assert slate.chars <= 600 and len(slate.units) == 2  # three 214-character memories: two fit
    assert [slate.candidates[i] for i in slate.shown] == MORNING and slate.pscores == [1.0, 1.0]
    eps = PrewarmConfig(strategy="epsilon", epsilon=0.5, max_paths=3)
    drawn = prewarm_slate(model, at, construct, np.random.default_rng(1), eps)
    incl = inclusion_probabilities(np.asarray(drawn.scores), len(drawn.candidates), "epsilon", epsilon=0.5)
    assert drawn.pscores == pytest.approx(incl[drawn.shown].tolist())
    rec = prewarm_record(slate, at=at, session="s-next", graph_id="g", run_id="r", step=99, ratings=[1, None])
    FeedbackLog([rec]).write(tmp_path / "log.parquet")
    back = FeedbackLog.read(tmp_path / "log.parquet").records[0]
    assert back == rec and back.intent == "prewarm" and back.query_id == "prewarm:s-next"
    before = model.scores(at + pd.Timedelta(days=1))[MORNING[0]]
    grown = TemporalPrewarm()
    grown.observe([*timeline(), rec])  # the session's rating of a pre-warmed memory feeds the statistics
    assert grown.scores(at + pd.Timedelta(days=1))[MORNING[0]] > before
    small = prewarm_slate(model, at, construct, np.random.default_rng(0), PrewarmConfig(budget_chars=100))
    assert small.units == [] and small.shown == []  # nothing fits: nothing is cut


def test_signets_session_start_candidates():
    t0 = pd.Timestamp("2026-03-01", tz="UTC")
    g = KnowledgeGraph.from_frames(memories=pd.DataFrame({
        "id": ["old", "new", "pin", "future", "gone"],
        "content": ["o" * 250, "n" * 250, "p" * 250, "f" * 10, "g" * 10],
        "importance": [0.9, 0.5, 0.1, 1.0, 1.0],
        "created_at": [t0 - pd.Timedelta(days=30), t0 - pd.Timedelta(days=1), t0 - pd.Timedelta(days=90),
                       t0 + pd.Timedelta(days=1), t0 - pd.Timedelta(days=1)],
        "pinned": [False, False, True, False, False],
        "is_deleted": [False, False, False, False, True],
    }))  # fmt: skip
    unit = signet_session_start(g, t0)
    # pinned first; then 0.5 * 0.95 = 0.475 beats 0.9 * 0.95^30 = 0.19; the third 250 does not fit in 600
    assert unit.items == ("pin", "new") and len(unit.text) == 501
    assert signet_session_start(g, t0, budget_chars=1000).items == ("pin", "new", "old")


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match=r"^prewarm.hour_width must be a finite number > 0, got 0$"):
        PrewarmConfig(hour_width=0)
    bad_strategy = r"^prewarm.strategy must be greedy, epsilon or softmax, got 'thompson'$"
    with pytest.raises(ValueError, match=bad_strategy):
        PrewarmConfig(strategy="thompson")
    with pytest.raises(ValueError, match=r"^prewarm: unknown key 'budget'; known: hour_width"):
        PrewarmConfig.from_mapping({"budget": 600})
    with pytest.raises(ValueError, match=r"^pre-warm needs a session start time, got None$"):
        TemporalPrewarm().scores(None)
