from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Entity, KnowledgeGraph
from signet_rl.learning.feedback_log import SCHEMA, FeedbackLog, FeedbackRecord
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.traversal.path import Hop, Path


def record(**over: Any) -> FeedbackRecord:
    base: dict[str, Any] = {
        "run_id": "r",
        "step": 3,
        "query_id": "q1",
        "timestamp": pd.Timestamp("2026-01-02 10:00:00.123456789", tz="UTC"),
        "session": "s1",
        "intent": "relate",
        "context": {"entries": ["e1", "e2"], "graph_id": "g"},
        "candidates": ["E:e1>D+:d1>E:e2", "E:e1>A:a1>T:t1", "E:e2"],
        "candidate_scores": [0.5, -1.25, 3.0],
        "shown": [2, 0],
        "positions": [0, 1],
        "pscores": [0.75, 1.0],
        "ratings": [1, None],
        "explorer": [False, True],
        "policy_version": "v1",
    }
    return FeedbackRecord(**{**base, **over})


def test_round_trip_is_exact(tmp_path):
    records = [
        record(),
        record(step=4, timestamp=None, ratings=[None, -1], extra={"note": "ünïcode", "k": [1, 2]}),
        record(step=5, shown=[], positions=[], pscores=[], ratings=[], explorer=[], session="s2"),
        record(
            step=6,
            candidates=["E:solo"],
            candidate_scores=[0.0],
            shown=[0],
            positions=[3],
            pscores=[1e-9],
            ratings=[0],
            explorer=[False],
            context={"entries": [], "graph_id": "h"},
        ),
    ]
    log = FeedbackLog(records)
    path = log.write(tmp_path / "logs" / "feedback.parquet")
    again = FeedbackLog.read(path)
    assert len(again) == 4
    assert again.records == records
    assert again[1].ratings == [None, -1.0] and again[1].timestamp is None
    assert again[0].timestamp == pd.Timestamp("2026-01-02 10:00:00.123456789", tz="UTC")
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["feedback.parquet"]  # no temp file left
    assert pq.read_schema(path).names == SCHEMA.names


def test_frame_has_one_row_per_record_with_list_columns():
    frame = FeedbackLog([record(), record(step=4)]).to_frame()
    assert frame.shape == (2, len(SCHEMA))
    assert frame["step"].tolist() == [3, 4]
    assert list(frame["shown"].iloc[0]) == [2, 0]
    assert np.isnan(frame["ratings"].iloc[0][1])


def test_write_is_atomic(tmp_path, monkeypatch):
    path = FeedbackLog([record()]).write(tmp_path / "f.parquet")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        FeedbackLog([record(), record(step=9)]).write(path)
    monkeypatch.undo()
    assert len(FeedbackLog.read(path)) == 1  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["f.parquet"]


def test_timestamps_are_normalised_to_utc():
    assert record(timestamp=pd.Timestamp("2026-01-01 12:00")).timestamp == pd.Timestamp("2026-01-01 12:00Z")
    tokyo = pd.Timestamp("2026-01-01 21:00", tz="Asia/Tokyo")
    assert str(record(timestamp=tokyo).timestamp) == "2026-01-01 12:00:00+00:00"
    assert record(timestamp=0.0).timestamp == pd.Timestamp("1970-01-01", tz="UTC")
    assert record(timestamp=pd.NaT).timestamp is None


WHO = "FeedbackRecord run='r' step=3 query='q1': "


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"ratings": [2, None]}, "field 'ratings' [0] = 2 is not -1, 0, +1 or None"),
        ({"ratings": [1, float("nan")]}, "field 'ratings' [1] = nan is not -1, 0, +1 or None"),
        ({"pscores": [0.0, 1.0]}, "field 'pscores' [0] = 0.0 is outside (0, 1]"),
        ({"pscores": [0.5, 1.5]}, "field 'pscores' [1] = 1.5 is outside (0, 1]"),
        ({"pscores": [0.5]}, "field 'pscores' has 1 entries for 2 shown items"),
        ({"ratings": [1]}, "field 'ratings' has 1 entries for 2 shown items"),
        ({"explorer": []}, "field 'explorer' has 0 entries for 2 shown items"),
        ({"positions": [0, 1, 2]}, "field 'positions' has 3 entries for 2 shown items"),
        ({"candidate_scores": [1.0]}, "field 'candidate_scores' has 1 entries for 3 candidates"),
        ({"shown": [3, 0]}, "field 'shown' [0] = 3 is outside [0, 3)"),
        ({"shown": [1, 1]}, "field 'shown' repeats a candidate: [1, 1]"),
        ({"positions": [0, -1]}, "field 'positions' [1] = -1 is outside >= 0"),
        ({"explorer": [0, 1]}, "field 'explorer' [0] must be a bool, got 0"),
        ({"candidates": ["a", "", "c"]}, "field 'candidates' [1] must be a non-empty string, got ''"),
        ({"candidate_scores": [1.0, float("nan"), 0.0]}, "field 'candidate_scores' [1] is NaN"),
        ({"context": {"entries": ["e1"]}}, "field 'context' needs 'graph_id', a string, got None"),
        ({"context": {"entries": "e1", "graph_id": "g"}}, "field 'context' needs 'entries'"),
        (
            {"context": {"entries": [], "graph_id": "g", "x": object()}},
            "field 'context' is not JSON-serialisable",
        ),
        ({"session": None}, "field 'session' must be a string, got None"),
        ({"timestamp": "not a time"}, "field 'timestamp' is not a time: 'not a time'"),
    ],
)
def test_bad_records_name_the_field_and_record(over, message):
    with pytest.raises(ValueError) as err:
        record(**over)
    assert str(err.value).startswith(WHO + message)


def test_bad_step_is_named():
    with pytest.raises(ValueError, match="FeedbackRecord run='r' step=-1 query='q1': field 'step' must be"):
        record(step=-1)


def test_read_rejects_a_foreign_file(tmp_path):
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="is not a feedback log: missing columns \\['run_id'"):
        FeedbackLog.read(tmp_path / "x.parquet")
    with pytest.raises(TypeError, match="expected a FeedbackRecord, got dict"):
        FeedbackLog().append({})


def test_from_feedback():
    g = KnowledgeGraph.from_records(entities=[Entity(id="e1", name="e1"), Entity(id="e2", name="e2")])
    paths = [Path.of(Hop.entity("e1")), Path.of(Hop.entity("e2"))]
    query = Query(id="q9", text="?", graph_id="g", split="test", timestamp=pd.Timestamp("2026-03-01"))
    fb = Feedback(
        query=query,
        paths=paths,
        context=ScoringContext(graph=g, arrays=GraphArrays.from_graph(g), entries=["e1"]),
        shown=[1],
        ratings=[-1],
        pscores=[0.4],
    )
    rec = FeedbackRecord.from_feedback(
        fb, run_id="r", step=0, session="s", intent="what", candidate_scores=[0.1, 0.2], policy_version="v"
    )
    assert rec.candidates == ["E:e1", "E:e2"] and rec.shown == [1] and rec.positions == [0]
    assert rec.pscores == [0.4] and rec.ratings == [-1.0] and rec.explorer == [False]
    assert rec.context == {"entries": ["e1"], "graph_id": "g"}
    assert rec.timestamp == pd.Timestamp("2026-03-01", tz="UTC")
    assert Path.parse(rec.candidates[1]) == paths[1]
    no_pscores = Feedback(query=query, paths=paths, context=fb.context, shown=[0], ratings=[1])
    with pytest.raises(ValueError, match="field 'pscores' has 0 entries for 1 shown items"):
        FeedbackRecord.from_feedback(
            no_pscores,
            run_id="r",
            step=0,
            session="s",
            intent="what",
            candidate_scores=[0.1, 0.2],
            policy_version="v",
        )
