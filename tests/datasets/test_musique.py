"""The MuSiQue + OpenIE loader: counts, supporting passages, provenance and malformed triples."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from signet_rl.datasets.base import DatasetNotFoundError
from signet_rl.datasets.musique import load_musique, normalise_entity
from signet_rl.graph.confidence import Reason


@pytest.mark.data
def test_counts_and_supporting_passages(real_dataset):
    ds = real_dataset("musique")
    assert ds.name == "musique"
    g = ds.graph
    assert g.num_memories == 1890
    assert len(ds.queries) == 100 and {q.split for q in ds.queries} == {"test"}
    for q in ds.queries:
        truth = ds.truth[q.id]
        assert truth.needed_kind == "memory" and 2 <= len(truth.needed) <= 4
        assert truth.category == q.id.split("__")[0]
        assert truth.hops == int(truth.category[0])
    assert Counter(ds.truth[q.id].hops for q in ds.queries) == {2: 68, 3: 27, 4: 5}


@pytest.mark.data
def test_supporting_passages_match_by_title_and_text(require_data, real_dataset):
    folder = require_data("hipporag")
    ds = real_dataset("musique")
    questions = json.loads(next(folder.glob("musique_train.json")).read_text())
    q = questions[0]
    truth = ds.truth[q["id"]]
    support = [p for p in q["paragraphs"] if p["is_supporting"]]
    contents = [ds.graph.memory(m).content for m in truth.needed]
    assert contents == [f"{p['title']}\n{p['paragraph_text']}" for p in support]
    assert truth.answers == (q["answer"], *q["answer_aliases"])


@pytest.mark.data
def test_triples_become_pattern_matched_dependencies_with_provenance(require_data, real_dataset):
    folder = require_data("hipporag")
    ds = real_dataset("musique")
    g = ds.graph
    openie = json.loads(next(folder.glob("openie_*.json")).read_text())
    arity = Counter(len(t) for d in openie["docs"] for t in d["extracted_triples"])
    # the OpenIE triples come first (ids d<j>); the extractor's co-mention dependencies follow (issue 24)
    deps = g.dependencies[g.dependencies["id"].str.fullmatch(r"d\d+")]
    assert len(deps) == arity[3] and (g.dependencies.index[: len(deps)] == deps.index).all()
    assert len(g.dependencies) > len(deps)
    assert set(deps["reason"]) == {Reason.PATTERN_MATCHED.value}
    assert (deps["confidence"] == 0.5).all() and (deps["strength"] == 0.5).all()
    openie_entities = g.entities[g.entities["id"].str.fullmatch(r"e\d+")]
    assert openie_entities["name"].is_unique
    assert (openie_entities["name"] == openie_entities["name"].map(normalise_entity)).all()
    # Provenance: the passage each dependency came from mentions both of its entities.
    source = g.meta["dependency_memory"]
    assert len(source) == len(g.dependencies)  # one entry per dependency, None for extracted co-mentions
    source_of = dict(zip(g.dependencies["id"], source, strict=True))
    source = [source_of[d] for d in deps["id"]]
    mentioned = set(zip(g.mentions["memory_id"], g.mentions["entity_id"], strict=True))
    for mid, a, b in zip(source, deps["source_entity_id"], deps["target_entity_id"], strict=True):
        assert (mid, a) in mentioned and (mid, b) in mentioned
    first = openie["docs"][0]["extracted_triples"][0]
    d0 = deps.iloc[0]
    names = g.entities.set_index("id")["name"]
    assert (names[d0["source_entity_id"]], d0["dependency_type"], names[d0["target_entity_id"]]) \
        == (normalise_entity(first[0]), first[1], normalise_entity(first[2]))


@pytest.mark.data
def test_malformed_triples_and_bare_nan_reported(require_data, real_dataset):
    folder = require_data("hipporag")
    ds = real_dataset("musique")
    openie = json.loads(next(folder.glob("openie_*.json")).read_text())
    wrong_arity = sum(len(t) != 3 for d in openie["docs"] for t in d["extracted_triples"])
    counts = ds.report.counts()
    assert sum(v for k, v in counts.items() if k.startswith("triple of arity")) == wrong_arity
    nans = [k for k, v in openie.items() if isinstance(v, float) and math.isnan(v)]
    assert nans
    reported = {m.row for m in ds.report.malformed if m.problem == "bare NaN (not strict JSON)"}
    assert reported == {f"$.{k}" for k in nans}


def test_bad_triples_on_a_tiny_set(tmp_path):
    folder = tmp_path / "hipporag"
    folder.mkdir()
    corpus = [{"title": "A", "text": "A is in B."}, {"title": "C", "text": "C met D."}]
    (folder / "x_corpus.json").write_text(json.dumps(corpus))
    docs = [dict(corpus[0], extracted_entities=["A", " b "],
                 extracted_triples=[["A", "is in", "B"], ["A", "is"], ["A", float("nan"), "B"]]),
            dict(corpus[1], extracted_entities=["C", ""],
                 extracted_triples=[["C", "met", "D"], ["C", "met", "  "], ["C", 3, "D"]])]
    (folder / "openie_x.json").write_text(json.dumps({"docs": docs, "avg": float("nan")}))
    paragraphs = [
        {"idx": 0, "title": "A", "paragraph_text": "A is in B.", "is_supporting": True},
        {"idx": 1, "title": "Z", "paragraph_text": "gone", "is_supporting": True},
        {"idx": 2, "title": "C", "paragraph_text": "C met D.", "is_supporting": False}]
    questions = [{"id": "2hop__1_2", "question": "Where is A?", "answer": "B",
                  "answer_aliases": ["b"], "paragraphs": paragraphs}]
    (folder / "musique_x.json").write_text(json.dumps(questions))
    ds = load_musique(tmp_path)
    assert len(ds.graph.dependencies) == 2
    assert ds.report.counts() == {
        "bare NaN (not strict JSON)": 1, "triple of arity 2": 1, "triple part is NaN": 1,
        "entity is empty": 1, "triple part is empty": 1, "triple part is non-string (int)": 1,
        "supporting paragraph matches no corpus passage": 1}
    truth = ds.truth["2hop__1_2"]
    assert truth.needed == ("p0",) and truth.answers == ("B", "b") and truth.hops == 2
    assert set(ds.graph.entities["name"]) == {"a", "b", "c", "d"}


def test_missing_folder_hints_env_var(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="SIGNET_RL_DATA") as err:
        load_musique(tmp_path)
    assert str(tmp_path / "hipporag") in str(err.value)
