"""The MINERVA-layout KG loader: exact counts on real benchmarks, layout rules on tiny folders."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pytest

from signet_rl.core.paths import data_root
from signet_rl.datasets.base import DatasetNotFoundError
from signet_rl.datasets.kg import SPECIAL_TOKENS, load_kg
from signet_rl.datasets.registry import load_dataset
from signet_rl.evaluation.describe import describe, format_description
from signet_rl.graph.confidence import Reason


@functools.cache
def _load(folder: str, inverse: bool | None = None):
    return load_kg(folder, root=data_root(), inverse=inverse)


def _splits(ds) -> tuple[int, int, int]:
    return tuple(len(ds.split(s)) for s in ("train", "validation", "test"))


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


# -- real benchmarks -----------------------------------------------------------------------------


@pytest.mark.data
def test_kinship_counts_and_edges(require_data):
    require_data("kg/kinship")
    ds = load_dataset("kg:kinship")
    assert ds.name == "kg:kinship"
    g = ds.graph
    assert g.num_entities == 104
    assert _splits(ds) == (8544, 1068, 1074)
    assert len(g.dependencies) == 17088
    deps = g.dependencies
    assert set(deps["reason"]) == {Reason.USER_ASSERTED.value}
    assert (deps["confidence"] == 1.0).all() and (deps["strength"] == 1.0).all()
    assert ds.meta["inverses_added"] is False and ds.meta["inverse_convention"] == "_"
    assert not set(ds.meta["relations"]) & SPECIAL_TOKENS
    assert len(ds.report.malformed) == 0
    assert g.entities["name"].is_unique
    assert set(g.entities["entity_type"]) == {"unknown"}


@pytest.mark.data
def test_kinship_queries_and_filtered_answers(require_data):
    path = require_data("kg/kinship")
    ds = _load("kinship")
    head, rel, tail = (path / "test.txt").read_text().splitlines()[0].split("\t")
    q = ds.split("test")[0]
    assert q.id == "test:0" and q.graph_id == "main"
    assert q.text == f"{head} {rel} ?" and dict(q.meta) == {"head": head, "relation": rel}
    truth = ds.truth[q.id]
    assert truth.needed == (tail,) and truth.needed_kind == "entity"
    # Every known tail of (head, rel) in any file is an answer (filtered ranking).
    known = {
        t for f in ("train.txt", "dev.txt", "test.txt", "graph.txt")
        for h, r, t in (line.split("\t") for line in (path / f).read_text().splitlines())
        if h == head and r == rel
    }
    assert set(truth.answers) == known
    for q in ds.queries:
        assert ds.truth[q.id].needed[0] in ds.truth[q.id].answers


@pytest.mark.data
def test_kinship_inverse_options(require_data):
    require_data("kg/kinship")
    # The file already holds every inverse: adding finds none missing; False keeps base edges.
    assert len(_load("kinship", True).graph.dependencies) == 17088
    base = _load("kinship", False).graph.dependencies
    assert len(base) == 8544 and not base["dependency_type"].str.startswith("_").any()


@pytest.mark.data
def test_umls_graph_and_inverse_folder(require_data):
    require_data("kg/umls")
    umls = _load("umls")
    assert umls.graph.num_entities == 135
    assert len(umls.graph.dependencies) == 5216
    inv = _load("umls/umls_inv")
    assert inv.name == "kg:umls/umls_inv"
    assert len(inv.graph.dependencies) == 10432
    assert inv.graph.num_entities == 135
    # umls_inv holds only graph.txt + vocab: its splits come from the parent folder.
    assert _splits(inv) == _splits(umls) == (5216, 652, 661)
    # Adding inverses to umls gives the umls_inv edge set, named with the folder's `_` convention.
    added = _load("umls", True).graph.dependencies
    cols = ["source_entity_id", "dependency_type", "target_entity_id"]
    as_set = lambda d: set(map(tuple, d[cols].to_numpy().tolist()))  # noqa: E731
    assert as_set(added) == as_set(inv.graph.dependencies)


@pytest.mark.data
@pytest.mark.parametrize("folder", ["countries_S1", "countries_S2", "countries_S3",
                                    "countries_S1/conve"])
def test_countries(require_data, folder):
    path = require_data(f"kg/{folder}")
    ds = _load(folder)
    vocab_dir = path / "vocab" if (path / "vocab").is_dir() else path.parent / "vocab"
    vocab = set(json.loads((vocab_dir / "entity_vocab.json").read_text())) - SPECIAL_TOKENS
    assert ds.graph.num_entities == 271 == len(vocab)
    if folder == "countries_S1":
        assert set(ds.graph.entities["id"]) == vocab
        assert _splits(ds) == (1111, 24, 24)
    graph_file = path / "graph.txt" if (path / "graph.txt").exists() else path / "train.txt"
    lines = graph_file.read_text().splitlines()
    # a repeated line is one edge, not two parallel ones, and the load report names each repeat
    assert len(ds.graph.dependencies) == len(set(lines))
    repeats = [m for m in ds.report.malformed if m.problem.startswith("duplicate triple (first on line")]
    assert len(repeats) == len(lines) - len(set(lines))


@pytest.mark.data
def test_nell_995_follows_minerva_nell_setting(require_data):
    path = require_data("kg/nell-995")
    t0 = time.perf_counter()
    ds = load_dataset("kg:nell-995")
    seconds = time.perf_counter() - t0
    g = ds.graph
    assert ds.meta["layout"] == "nell" and ds.meta["inverses_added"] is True
    assert len(g.dependencies) == 300_442
    assert ds.meta["counts"]["graph_file_edges"] == 150_221
    assert _splits(ds) == (8747, 543, 2818)
    assert g.dependencies["dependency_type"].str.endswith("_inv").sum() == 150_221
    vocab = set(json.loads((path / "vocab/entity_vocab.json").read_text())) - SPECIAL_TOKENS
    assert set(g.entities["id"]) >= vocab
    types = g.entities.set_index("id")["entity_type"]
    assert types["concept_city_sydney"] == "city"
    assert ds.report.counts().get("query head entity not in the graph", 0) == 0
    assert seconds < 30, f"NELL-995 took {seconds:.1f}s to load"


def test_bad_folder_names_path_and_existing_folders(tmp_path):
    _write(tmp_path / "kg" / "tiny" / "train.txt", ["a\tr\tb"])
    with pytest.raises(DatasetNotFoundError) as err:
        load_kg("nope", root=tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "kg" / "nope") in msg and "tiny" in msg


def test_missing_data_root_hints_env_var(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="SIGNET_RL_DATA"):
        load_dataset("kg:kinship", root=tmp_path)


# -- layout rules on tiny folders ----------------------------------------------------------------


def test_malformed_lines_reported_with_file_and_line(tmp_path):
    folder = tmp_path / "kg" / "tiny"
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc", "broken line", "c\t\td", "c\tr\td\textra"])
    _write(folder / "train.txt", ["a\tr\tb"])
    _write(folder / "dev.txt", ["b\tr\tc"])
    _write(folder / "test.txt", ["a\tr\tz", "x\tr"])
    ds = load_kg("tiny", root=tmp_path)
    assert len(ds.graph.dependencies) == 2
    bad = [(Path(m.file).name, m.row.split(":")[0], m.problem) for m in ds.report.malformed]
    assert ("graph.txt", "line 3", "expected 3 tab-separated fields, found 1") in bad
    assert ("graph.txt", "line 4", "empty field") in bad
    assert ("graph.txt", "line 5", "expected 3 tab-separated fields, found 4") in bad
    assert ("test.txt", "line 2", "expected 3 tab-separated fields, found 2") in bad
    assert ("test.txt", "line 1", "query tail entity not in the graph") in bad
    assert _splits(ds) == (1, 1, 1)
    assert ds.truth["test:0"].answers == ("b", "z")  # a r b (graph) and a r z (test)


def test_split_files_inherit_from_parent_and_train_is_graph(tmp_path):
    parent = tmp_path / "kg" / "base"
    _write(parent / "train.txt", ["a\tr\tb", "b\tr\tc"])
    _write(parent / "valid.txt", ["a\tr\tc"])
    _write(parent / "test.txt", ["c\tr\ta"])
    _write(parent / "child" / "graph.txt", ["a\tr\tb", "b\tr\tc", "b\t_r\ta"])
    child = load_kg("base/child", root=tmp_path)
    assert _splits(child) == (2, 1, 1)
    assert len(child.graph.dependencies) == 3
    base = load_kg("base", root=tmp_path)  # no graph.txt: train is the graph
    assert len(base.graph.dependencies) == 2
    inv = load_kg("base", root=tmp_path, inverse=True).graph.dependencies
    assert sorted(inv["dependency_type"]) == ["r", "r", "r_inv", "r_inv"]
    inv_child = load_kg("base/child", root=tmp_path, inverse=True).graph.dependencies
    assert sorted(inv_child["dependency_type"]) == ["_r", "_r", "r", "r"]


def test_nell_layout_detected_generically(tmp_path):
    folder = tmp_path / "kg" / "some-kb"
    _write(folder / "full_kb" / "train.txt", ["concept_city_a\tconcept:in\tconcept_country_b"])
    _write(folder / "full_kb" / "valid.txt", ["concept_city_c\tconcept:in\tconcept_country_b"])
    _write(folder / "full_kb" / "test.txt", ["concept_city_a\tconcept:in\tconcept_country_d"])
    _write(folder / "nell" / "train.txt", ["concept_city_a\tconcept:in\tconcept_country_b"])
    _write(folder / "nell" / "dev.txt", ["concept_city_c\tconcept:in\tconcept_country_b"])
    _write(folder / "nell" / "test.txt", ["concept_city_a\tconcept:in\tconcept_country_d"])
    ds = load_kg("some-kb", root=tmp_path)
    deps = ds.graph.dependencies
    assert len(deps) == 4 and (deps["dependency_type"] == "concept:in_inv").sum() == 2
    assert ds.truth["test:0"].answers == ("concept_country_b", "concept_country_d")
    types = ds.graph.entities.set_index("id")["entity_type"]
    assert types["concept_city_a"] == "city" and types["concept_country_d"] == "country"
    assert len(load_kg("some-kb", root=tmp_path, inverse=False).graph.dependencies) == 2


def test_describe_counts_a_malformed_row_once_when_train_is_also_the_graph(tmp_path):
    # no graph.txt: train.txt is the walking graph and the training split, read once
    folder = tmp_path / "kg" / "nograph"
    _write(folder / "train.txt", ["a\tr\tb", "a r c", "b\tr\tc"])
    _write(folder / "dev.txt", ["b\tr\tc"])
    _write(folder / "test.txt", ["a\tr\tc"])
    ds = load_kg("nograph", root=tmp_path)
    assert [(Path(m.file).name, m.row) for m in ds.report.malformed] == [("train.txt", "line 2: 'a r c'")]
    d = describe(ds)
    assert d["malformed"]["malformed_total"] == 1 and d["dependencies"] == 2
    assert "malformed rows: 1" in format_description(d)


def test_duplicate_triples_are_reported_and_do_not_become_parallel_edges(tmp_path):
    folder = tmp_path / "kg" / "dups"
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc", "a\tr\tb", "c\tr\ta"])
    _write(folder / "train.txt", ["a\tr\tc", "a\tr\tc"])
    _write(folder / "dev.txt", ["b\tr\ta"])
    _write(folder / "test.txt", ["c\tr\tb"])
    ds = load_kg("dups", root=tmp_path, inverse=True)
    deps = ds.graph.dependencies
    # three distinct edges and their three inverses; the repeat on line 3 is neither an edge nor an inverse
    assert len(deps) == 6
    assert not deps.duplicated(["source_entity_id", "dependency_type", "target_entity_id"]).any()
    rows = [(Path(m.file).name, m.row, m.problem, m.action) for m in ds.report.malformed]
    assert rows == [
        ("graph.txt", "line 3: a\tr\tb", "duplicate triple (first on line 1)", "dropped"),
        ("train.txt", "line 2: a\tr\tc", "duplicate triple", "kept"),
    ]
    assert _splits(ds) == (2, 1, 1)  # the repeated training query is still asked twice
    assert describe(ds)["malformed"]["malformed_by_problem"] == {
        "duplicate triple (first on line 1)": 1,
        "duplicate triple": 1,
    }


def test_a_kg_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    folder = tmp_path / "kg" / "latin"
    folder.mkdir(parents=True)
    (folder / "graph.txt").write_text("a\tr\tb\nb\tr\tc\n")
    (folder / "train.txt").write_bytes("a\tr\tb\nb\tr\tcaf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError) as err:
        load_kg("latin", root=tmp_path)
    assert str(err.value) == (
        f"{folder / 'train.txt'}: line 2 is not UTF-8 (byte 0xe9 at offset 13: invalid continuation byte); "
        "KG files are read as UTF-8: re-encode it (e.g. iconv -f latin1 -t utf-8)"
    )


# -- leaks: split triples that are edges of the walking graph --------------------------------------


def test_a_test_triple_in_the_graph_is_counted_reported_and_warned(tmp_path, caplog):
    folder = tmp_path / "kg" / "leaky"
    # graph: a -r-> b is also a test triple; c -r_inv-> a is the inverse of test triple a -r-> c
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc", "c\tr_inv\ta", "c\ts\td"])
    _write(folder / "train.txt", ["b\tr\tc"])
    _write(folder / "dev.txt", ["c\ts\td"])
    _write(folder / "test.txt", ["a\tr\tb", "a\tr\tc", "d\ts\tc"])
    with caplog.at_level("INFO", logger="signet_rl.datasets.kg"):
        ds = load_kg("leaky", root=tmp_path)
    counts = ds.meta["counts"]
    assert (counts["test_triples_in_graph"], counts["test_inverse_in_graph"]) == (1, 1)
    assert (counts["validation_triples_in_graph"], counts["validation_inverse_in_graph"]) == (1, 0)
    problem = ("1 of 3 test triples are edges of the walking graph (1 more as their inverse edge): "
               "a walker can read these answers off the graph")
    assert not [m for m in ds.report.malformed if "off the graph" in m.problem]  # not a malformed row
    levels = {r.levelname for r in caplog.records if "off the graph" in r.getMessage()}
    assert levels == {"WARNING", "INFO"}
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [f"kg:leaky: {problem}"]


def test_a_clean_folder_reports_no_leak(tmp_path, caplog):
    folder = tmp_path / "kg" / "clean"
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc"])
    _write(folder / "train.txt", ["a\tr\tb"])
    _write(folder / "dev.txt", ["b\tr\ta"])
    _write(folder / "test.txt", ["a\tr\tc"])
    with caplog.at_level("INFO", logger="signet_rl.datasets.kg"):
        ds = load_kg("clean", root=tmp_path)
    assert ds.meta["counts"]["test_triples_in_graph"] == 0
    assert not [r for r in caplog.records if "off the graph" in r.getMessage()]


@pytest.mark.data
def test_real_benchmarks_hold_no_test_triple_in_their_walking_graph(require_data):
    require_data("kg/umls")
    for folder, inverse in (("umls", None), ("umls", True), ("kinship", None)):
        counts = _load(folder, inverse).meta["counts"]
        assert (counts["test_triples_in_graph"], counts["test_inverse_in_graph"]) == (0, 0), folder
