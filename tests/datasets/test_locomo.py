"""The LoCoMo loader: counts read independently from the files, evidence mapping, bad evidence."""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from signet_rl.core.paths import data_root
from signet_rl.datasets.base import DatasetNotFoundError
from signet_rl.datasets.locomo import CATEGORIES, extract_names, load_locomo, parse_evidence
from signet_rl.datasets.registry import load_dataset

_CANONICAL = re.compile(r"^D\d+:\d+$")


@functools.cache
def _load_observations():
    """LoCoMo's own observations and summaries are an option (issue 24: off by default)."""
    return load_locomo(data_root(), observations=True)


def _samples(folder: Path) -> list[dict]:
    out = []
    for f in sorted(folder.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        out.extend(data if isinstance(data, list) else [data])
    return out


@pytest.mark.data
def test_counts_match_the_files(require_data, real_dataset):
    folder = require_data("locomo")
    samples = _samples(folder)
    ds = real_dataset("locomo")
    assert ds.name == "locomo"
    assert sorted(ds.graphs) == sorted(s["sample_id"] for s in samples)
    assert len(ds.queries) == sum(len(s["qa"]) for s in samples)
    expected = Counter(CATEGORIES[qa["category"]] for s in samples for qa in s["qa"])
    assert Counter(ds.truth[q.id].category for q in ds.queries) == expected
    turns = {s["sample_id"]: sum(len(v) for k, v in s["conversation"].items()
                                 if re.fullmatch(r"session_\d+", k)) for s in samples}
    assert {sid: g.num_memories for sid, g in ds.graphs.items()} == turns
    assert {q.split for q in ds.queries} == {"test"}


@pytest.mark.data
def test_turns_become_ordered_memories_with_speakers(require_data, real_dataset):
    folder = require_data("locomo")
    ds = real_dataset("locomo")
    sample = _samples(folder)[0]
    g = ds.graphs[sample["sample_id"]]
    conv = sample["conversation"]
    first = conv["session_1"][0]
    m = g.memory(f"{sample['sample_id']}:{first['dia_id']}")
    assert m.source_id == first["dia_id"] and m.source_type == "locomo_turn"
    assert m.who == first["speaker"] and first["text"] in m.content
    start = pd.to_datetime(conv["session_1_date_time"], format="%I:%M %p on %d %B, %Y", utc=True)
    assert m.created_at == start
    session = g.memories[g.memories["tags"] == "session_1"]
    assert session["created_at"].is_monotonic_increasing
    assert session["created_at"].is_unique
    captioned = next(t for t in conv["session_1"] + conv["session_2"] if t.get("blip_caption"))
    captioned_id = f"{sample['sample_id']}:{captioned['dia_id']}"
    assert captioned["blip_caption"] in g.memory(captioned_id).content
    people = g.entities[g.entities["entity_type"] == "person"]
    assert {conv["speaker_a"], conv["speaker_b"]} <= set(people["name"])
    speakers = people[people["id"].isin([f"person:{conv[k].lower()}" for k in ("speaker_a", "speaker_b")])]
    assert set(speakers["name"]) == {conv["speaker_a"], conv["speaker_b"]}
    # Every turn mentions its speaker.
    spoke = g.mentions.merge(g.entities[["id", "name"]], left_on="entity_id", right_on="id")
    spoke = spoke.merge(g.memories[["id", "who"]], left_on="memory_id", right_on="id")
    assert set(g.memories["id"]) == set(spoke.loc[spoke["name"] == spoke["who"], "memory_id"])
    # extracted entities (issue 24): named ones by spaCy label, noun phrases as concepts, session nodes
    types = set(g.entities["entity_type"])
    assert {"person", "concept", "session"} <= types and "extracted" not in types
    assert g.entities["canonical_name"].is_unique
    sessions = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    assert (g.entities["entity_type"] == "session").sum() == len(sessions)
    assert len(g.dependencies) > g.num_entities  # co-mention makes a connected graph (0 before issue 24)


@pytest.mark.data
def test_observations_and_summaries_are_attributes_with_provenance(require_data, real_dataset):
    folder = require_data("locomo")
    ds = _load_observations()
    for sample in _samples(folder):
        g = ds.graphs[sample["sample_id"]]
        n_obs = sum(len(f) for per in sample["observation"].values() for f in per.values())
        n_sum = len(sample["session_summary"])
        n_events = sum(len(v) for ev in sample["event_summary"].values()
                       for k, v in ev.items() if k != "date")
        own = g.attributes[g.attributes["aspect_id"].str.endswith(
            ("/observations", "/events", "/session_summaries"))]
        assert len(own) == n_obs + n_sum + n_events
        assert g.attributes["aspect_id"].notna().all()
        assert g.attributes["memory_id"].notna().mean() > 0.99
        owners = g.attribute_entity_ids()
        assert owners.notna().all()
    # retrieval pools turns with observations; summaries and events are no evidence for a turn
    assert ds.meta["pool_attribute_aspects"] == ["observations"]
    assert "observations" in ds.meta["evidence_attribute_aspects"]
    assert not {"session_summaries", "events"} & set(ds.meta["evidence_attribute_aspects"])
    # off by default: no observations, nothing pooled, every attribute (turn text) is evidence for its turn
    default = real_dataset("locomo")
    assert default.meta["pool_attribute_aspects"] == [] and default.meta["evidence_attribute_aspects"] is None
    assert not any(g.aspects["name"].isin(["observations", "events", "session_summaries"]).any()
                   for g in default.graphs.values())
    aspects = {n for g in ds.graphs.values() for n in g.aspects["name"]}
    assert {"observations", "session_summaries", "events"} <= aspects


@pytest.mark.data
def test_evidence_maps_to_turn_memories(require_data, real_dataset):
    folder = require_data("locomo")
    ds = real_dataset("locomo")
    checked = 0
    for s in _samples(folder):
        g = ds.graphs[s["sample_id"]]
        last = g.memories["created_at"].max()
        for i, qa in enumerate(s["qa"]):
            q_id = f"{s['sample_id']}:q{i}"
            truth = ds.truth[q_id]
            ev = qa["evidence"]
            if all(_CANONICAL.match(e) for e in ev):
                expected = tuple(dict.fromkeys(
                    f"{s['sample_id']}:{e}" for e in ev if f"{s['sample_id']}:{e}" in
                    set(g.memories["id"])))
                assert truth.needed == expected
                checked += 1
            answer = qa.get("answer", qa.get("adversarial_answer"))
            assert truth.answers == (() if answer is None else (str(answer),))
        assert all(q.timestamp > last for q in ds.queries if q.graph_id == s["sample_id"])
    assert checked > 0
    if "conv-26" in ds.graphs:  # known: "When did Caroline go to the LGBTQ support group?"
        assert ds.truth["conv-26:q0"].needed == ("conv-26:D1:3",)
        assert ds.truth["conv-26:q0"].category == "temporal"


@pytest.mark.data
def test_odd_evidence_in_the_files_is_reported(require_data, real_dataset):
    folder = require_data("locomo")
    ds = real_dataset("locomo")
    reported = {m.row for m in ds.report.malformed}
    odd = 0
    for s in _samples(folder):
        turn_ids = {t["dia_id"] for k, v in s["conversation"].items()
                    if re.fullmatch(r"session_\d+", k) for t in v}
        for i, qa in enumerate(s["qa"]):
            for e in qa["evidence"]:
                if not _CANONICAL.match(e) or e not in turn_ids:
                    odd += 1
                    assert any(r.startswith(f"{s['sample_id']} qa[{i}] evidence") and
                               (repr(e) in r or any(repr(x) in r for x in parse_evidence(e)[0]))
                               for r in reported), (s["sample_id"], i, e)
    assert odd > 0


def test_malformed_evidence_reported_and_recovered(tmp_path):
    sample = {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1",
                 "text": "Hi Bo! I met Jane Doe at the Louvre."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice, Ann.", "blip_caption": "a cat"},
            ],
            "session_2_date_time": "9:00 am on 9 May, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Back again."}],
        },
        "observation": {"session_1_observation": {"Ann": [["Ann met Jane Doe.", "D1:1"]]}},
        "session_summary": {"session_1_summary": "They talked."},
        "event_summary": {"events_session_1": {"Ann": ["Ann visits a museum."], "Bo": [],
                                               "date": "8 May, 2023"}},
        "qa": [
            {"question": "Who?", "answer": "Jane Doe", "evidence": ["D1:1; D1:2"], "category": 4},
            {"question": "Where?", "answer": 2023, "evidence": ["D:2:1", "D"], "category": 2},
            {"question": "Cat?", "adversarial_answer": "a dog", "evidence": ["D9:9"],
             "category": 5},
        ],
    }
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "any_name.json").write_text(json.dumps([sample]), encoding="utf-8")
    ds = load_locomo(tmp_path, observations=True)
    assert ds.truth["tiny-1:q0"].needed == ("tiny-1:D1:1", "tiny-1:D1:2")
    assert ds.truth["tiny-1:q1"].needed == ("tiny-1:D2:1",)
    assert ds.truth["tiny-1:q1"].answers == ("2023",)
    assert ds.truth["tiny-1:q2"].needed == () and ds.truth["tiny-1:q2"].answers == ("a dog",)
    rows = {(m.row, m.problem) for m in ds.report.malformed}
    assert ("tiny-1 qa[0] evidence 'D1:1; D1:2'", "evidence id written oddly") in rows
    assert ("tiny-1 qa[1] evidence 'D:2:1'", "evidence id written oddly") in rows
    assert ("tiny-1 qa[1] evidence 'D'", "unreadable evidence id") in rows
    assert ("tiny-1 qa[2] evidence 'D9:9'", "evidence id points at no turn") in rows
    assert all(m.file.endswith("any_name.json") for m in ds.report.malformed)
    g = ds.graphs["tiny-1"]
    assert "[shares an image: a cat]" in g.memory("tiny-1:D1:2").content
    assert g.memory("tiny-1:D2:1").created_at == pd.Timestamp("2023-05-09 09:00", tz="UTC")
    names = set(g.entities["name"])
    assert {"Ann", "Bo", "Jane Doe", "Louvre"} <= names
    obs = g.attributes[g.attributes["content"] == "Ann met Jane Doe."].iloc[0]
    assert obs["memory_id"] == "tiny-1:D1:1" and obs["aspect_id"] == "person:ann/observations"
    # the session DAG over the turns; the turn text is an attribute of the session and of Jane Doe
    assert list(g.entities.loc[g.entities["entity_type"] == "session", "id"]) == ["session:1", "session:2"]
    jane = g.entities.loc[g.entities["name"] == "Jane Doe"].iloc[0]
    assert jane["entity_type"] == "person"
    jane_attrs = g.attributes[g.attributes["id"].str.startswith(f"attr:{jane['id']}:")]
    assert jane_attrs["content"].tolist() == ["Ann: Hi Bo! I met Jane Doe at the Louvre."]
    # the old loader (issue 24's "before"): capitalised-name heuristic, no dependencies, no sessions
    old = load_locomo(tmp_path, extract=False, observations=True).graphs["tiny-1"]
    assert set(old.entities.loc[old.entities["entity_type"] == "extracted", "name"]) == {"Jane Doe", "Louvre"}
    assert len(old.dependencies) == 0 and "session" not in set(old.entities["entity_type"])


def test_extract_names_heuristic():
    assert extract_names("Yesterday I went to the Museum of Modern Art with John.") == [
        "Museum of Modern Art", "John"]
    assert extract_names("Paris is lovely. Hey, I'm fine!") == []
    assert extract_names("We saw Ed Sheeran's show on Friday") == ["Ed Sheeran"]


def test_parse_evidence():
    assert parse_evidence("D8:6; D9:17") == (["D8:6", "D9:17"], True)
    assert parse_evidence("D:11:26") == (["D11:26"], True)
    assert parse_evidence("D1:3") == (["D1:3"], False)
    assert parse_evidence("D") == ([], True)


def test_missing_folder_hints_env_var(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="SIGNET_RL_DATA") as err:
        load_locomo(tmp_path)
    assert str(tmp_path / "locomo") in str(err.value)


# -- malformed files and samples (issue 31): each names the file and the sample ------------------------------


def _mini(sid: str = "mini-1", **changes) -> dict:
    sample = {
        "sample_id": sid,
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I met Jane Doe at the Louvre."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "She paints."},
            ],
        },
        "qa": [{"question": "Who paints?", "answer": "Jane Doe", "evidence": ["D1:3"], "category": 4}],
    }
    sample.update(changes)
    return sample


def _write(tmp_path, samples, name="any_name.json") -> Path:
    (tmp_path / "locomo").mkdir(exist_ok=True)
    path = tmp_path / "locomo" / name
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_a_bare_string_evidence_id_is_one_id_not_characters(tmp_path):
    qa = [{"question": "Who paints?", "answer": "Jane Doe", "evidence": "D1:3", "category": 4}]
    ds = load_locomo(_write(tmp_path, [_mini(qa=qa)]).parent.parent)
    assert ds.truth["mini-1:q0"].needed == ("mini-1:D1:3",)
    rows = {(m.row, m.problem, m.action) for m in ds.report.malformed}
    assert rows == {("mini-1 qa[0] evidence 'D1:3'", "evidence is a string, not a list",
                     "read as one evidence entry")}


def test_a_truncated_file_names_the_file_and_the_way_out(tmp_path):
    path = _write(tmp_path, [_mini()])
    path.write_text(path.read_text(encoding="utf-8")[:300], encoding="utf-8")
    with pytest.raises(ValueError) as err:
        load_locomo(tmp_path)
    assert str(err.value) == (
        f"locomo: {path} is not valid JSON (Unterminated string starting at: line 1 column 297 (char 296)); "
        f"a truncated or partial copy? Replace it, or move it out of {path.parent}"
    )


def test_a_file_that_is_not_utf8_names_the_file(tmp_path):
    path = _write(tmp_path, [_mini()])
    path.write_bytes(path.read_bytes().replace(b"Louvre", b"Louvr\xe9"))
    with pytest.raises(ValueError, match=re.escape(f"locomo: {path} is not UTF-8 text (byte 0xe9 at offset")):
        load_locomo(tmp_path)


def test_qa_as_a_string_is_reported_and_the_conversation_kept(tmp_path):
    ds = load_locomo(_write(tmp_path, [_mini(qa="Who paints?"), _mini("mini-2")]).parent.parent)
    assert set(ds.graphs) == {"mini-1", "mini-2"} and [q.id for q in ds.queries] == ["mini-2:q0"]
    [m] = ds.report.malformed
    assert (Path(m.file).name, m.row, m.problem, m.action) == (
        "any_name.json", "sample[0] mini-1 qa 'Who paints?'", "qa is a str, not a list of QA items",
        "kept without queries",
    )


def test_a_qa_item_that_is_not_an_object_is_skipped(tmp_path):
    qa = ["Who paints?", _mini()["qa"][0]]
    ds = load_locomo(_write(tmp_path, [_mini(qa=qa)]).parent.parent)
    assert [q.id for q in ds.queries] == ["mini-1:q1"]
    assert [(m.row, m.problem) for m in ds.report.malformed] == [
        ("mini-1 qa[0] 'Who paints?'", "QA item is a str, not an object")
    ]


def test_a_null_conversation_skips_the_sample_and_says_so(tmp_path):
    ds = load_locomo(_write(tmp_path, [_mini(conversation=None), _mini("mini-2")]).parent.parent)
    assert set(ds.graphs) == {"mini-2"} and [q.id for q in ds.queries] == ["mini-2:q0"]
    [m] = ds.report.malformed
    assert (m.row, m.problem, m.action) == (
        "sample[0] mini-1 conversation None", "conversation is null, not an object of sessions", "skipped"
    )


def test_no_usable_sample_is_an_error_naming_the_files(tmp_path):
    path = _write(tmp_path, [_mini(conversation=None)])
    with pytest.raises(ValueError) as err:
        load_locomo(tmp_path)
    assert str(err.value) == (
        f"locomo: no usable conversation in {path.parent} (1 file); "
        f"{path}: sample[0] mini-1 conversation None: conversation is null, not an object of sessions"
    )


def _two_sessions() -> dict:
    """``_mini`` with a second session, its observation and summary, and a question citing it."""
    sample = _mini()
    sample["conversation"]["session_2_date_time"] = "2:00 pm on 9 May, 2023"
    sample["conversation"]["session_2"] = [
        {"speaker": "Bo", "dia_id": "D2:1", "text": "I moved to Oslo."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Cold."},
    ]
    sample["observation"] = {
        "session_1_observation": {"Ann": [["Ann met Jane Doe.", "D1:1"]]},
        "session_2_observation": {"Bo": [["Bo moved to Oslo.", "D2:1"]]},
    }
    sample["session_summary"] = {"session_1_summary": "Ann met Jane.", "session_2_summary": "Bo moved."}
    sample["qa"] += [
        {"question": "Where did Bo move?", "answer": "Oslo", "evidence": ["D2:1"], "category": 4},
        {"question": "Who paints, and where did Bo move?", "answer": "Jane; Oslo",
         "evidence": ["D1:3", "D2:1"], "category": 1},
    ]  # fmt: skip
    return sample


def test_max_sessions_keeps_the_first_sessions_and_the_questions_they_answer(tmp_path):
    root = _write(tmp_path, [_two_sessions()]).parent.parent
    full = load_locomo(root)
    # observations on, so the cut's facts are LoCoMo's own (session 1's observation and summary)
    cut = load_dataset("locomo", root=root, options={"max_sessions": 1, "observations": True})
    assert full.graphs["mini-1"].num_memories == 5 and cut.graphs["mini-1"].num_memories == 3
    assert [q.id for q in full.queries] == ["mini-1:q0", "mini-1:q1", "mini-1:q2"]
    assert [q.id for q in cut.queries] == ["mini-1:q0"]  # q1 and q2 cite session 2
    facts = set(cut.graphs["mini-1"].attributes["content"])
    assert {"Ann met Jane Doe.", "Ann met Jane."} <= facts  # session 1's observation and summary stay
    assert not facts & {"Bo moved to Oslo.", "Bo moved."}  # session 2's are gone
    assert cut.meta["max_sessions"] == 1 and "max_sessions" not in full.meta
    assert load_locomo(root, max_sessions=2).graphs["mini-1"].num_memories == 5
    with pytest.raises(ValueError) as err:
        load_locomo(root, max_sessions=0)
    assert str(err.value) == "locomo: max_sessions=0 must be a positive integer (or null for every session)"
