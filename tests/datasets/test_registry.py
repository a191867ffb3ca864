from __future__ import annotations

import re

import pytest

from signet_rl.datasets.__main__ import main
from signet_rl.datasets.registry import (
    REPORT_SYNTHETIC_VERSION,
    DatasetSpec,
    configured_learning_split,
    load_dataset,
    load_test_data,
    parse_spec,
)


@pytest.mark.parametrize(("spec", "expected"), [
    ("synthetic:small", DatasetSpec("synthetic", "small", None)),
    ("synthetic:xl:7", DatasetSpec("synthetic", "xl", 7)),
    ("kg:kinship", DatasetSpec("kg", "kinship")),
    ("kg:umls/umls_inv", DatasetSpec("kg", "umls/umls_inv")),
    ("locomo", DatasetSpec("locomo")),
    ("musique", DatasetSpec("musique")),
    ("signet:/tmp/a:b.db", DatasetSpec("signet", "/tmp/a:b.db")),
])
def test_parse(spec, expected):
    assert parse_spec(spec) == expected
    assert str(parse_spec(spec)) == spec


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty dataset spec ''"),
    ("wikidata", "unknown dataset 'wikidata'; expected synthetic:<preset>"),
    ("synthetic", "dataset spec 'synthetic' names no preset, e.g. synthetic:small"),
    ("synthetic:small:x", "dataset spec 'synthetic:small:x': seed 'x' is not an integer"),
    ("kg", "dataset spec 'kg' needs an argument, e.g. kg:kinship"),
    ("locomo:conv-26", "dataset spec 'locomo:conv-26': locomo takes no argument"),
])
def test_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_spec(spec)


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="unknown synthetic preset 'huge'"):
        load_dataset("synthetic:huge")


def test_describe_cli_prints_counts_and_hash(capsys):
    assert main(["describe", "synthetic:tiny", "--no-signals"]) == 0
    out = capsys.readouterr().out
    ds = load_dataset("synthetic:tiny", options={"version": 2})  # describe builds v2, as the reports do
    assert f"generator synthetic v2, config hash {ds.meta['config_hash']}" in out
    lines = {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1] for line in out.splitlines()
             if line and not line.startswith(" ") and len(line.split()) >= 2}
    assert lines["entities"] == f"{ds.graph.num_entities:,}"
    assert lines["attributes"] == f"{len(ds.graph.attributes):,}"
    assert lines["superseded attributes"] == f"{(ds.graph.attributes['status'] == 'superseded').sum():,}"
    assert lines["queries"] == f"{len(ds.queries):,}"


def test_describe_cli_json_and_errors(capsys):
    import json

    assert main(["describe", "synthetic:tiny", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    ds = load_dataset("synthetic:tiny", options={"version": 2})
    assert d["generator_version"] == 2
    assert d["entities"] == ds.graph.num_entities and d["attributes"] == len(ds.graph.attributes)
    assert sum(d["queries_by_split"].values()) == len(ds.queries)
    assert set(d["signal_auc"]) >= {"attribute_importance", "recency", "dependency_confidence"}
    assert main(["describe", "synthetic:nope"]) == 2
    assert "unknown synthetic preset 'nope'" in capsys.readouterr().err


def test_describe_a_signet_store(tmp_path, capsys):
    from signet_rl.graph.store import write_graph

    ds = load_dataset("synthetic:tiny")
    path = write_graph(ds.graph, tmp_path / "memories.db")
    assert main(["describe", f"signet:{path}", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["entities"] == 60 and d["dependencies"] == len(ds.graph.dependencies)
    assert d["queries"] == 0 and d["memories"] == ds.graph.num_memories
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("hello")
    assert main(["describe", f"signet:{not_sqlite}"]) == 2
    assert f"{not_sqlite} is not a SQLite database" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        (
            "signet:/nowhere/memories.db", {"drift": False},
            "dataset 'signet:/nowhere/memories.db' takes the options "
            "['extract', 'extract_encoder', 'timeout'], not ['drift']; those come "
            "from another dataset's config: on the command line pass the dataset's own config with its spec, "
            "dataset=signet dataset.spec=signet:/nowhere/memories.db",
        ),
        (
            "locomo", {"drift": True, "n_queries": 5},
            "dataset 'locomo' takes the options "
            "['extract', 'extract_encoder', 'max_sessions', 'observations'], not ['drift', 'n_queries']; "
            "those come from another "
            "dataset's config: on the command line pass the dataset's own config with its spec, "
            "dataset=locomo dataset.spec=locomo",
        ),
    ],
)
def test_options_of_another_datasets_config_are_named_with_the_way_out(spec, options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        load_dataset(spec, options=options)


def test_describe_cli_builds_v2_by_default_v1_on_request_and_prints_the_version(capsys):
    assert main(["describe", "synthetic:tiny", "--no-signals", "--option", "version=2"]) == 0
    out = capsys.readouterr().out
    ds = load_dataset("synthetic:tiny", options={"version": 2})
    assert f"generator synthetic v2, config hash {ds.meta['config_hash']}" in out
    assert main(["describe", "synthetic:tiny", "--no-signals"]) == 0  # no option: v2, the reports' version
    assert f"generator synthetic v2, config hash {ds.meta['config_hash']}" in capsys.readouterr().out
    # v1 stays loadable by option, under the config hash a plain load_dataset gives it
    assert main(["describe", "synthetic:tiny", "--no-signals", "--option", "version=1"]) == 0
    out = capsys.readouterr().out
    v1 = load_dataset("synthetic:tiny")
    assert v1.meta["config_hash"] != ds.meta["config_hash"]
    assert f"generator synthetic v1, config hash {v1.meta['config_hash']}" in out
    lines = {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1] for line in out.splitlines()
             if line and not line.startswith(" ") and len(line.split()) >= 2}
    assert lines["entities"] == "60"
    # a spec of another kind gets no synthetic version added
    assert main(["describe", "kg:nowhere-at-all", "--data-root", "/nonexistent-root"]) == 2
    assert "version" not in capsys.readouterr().err
    assert main(["describe", "synthetic:tiny", "--no-signals", "--option", "version=7"]) == 2
    err = capsys.readouterr().err
    assert "error: unknown synthetic generator version 7; expected one of [1, 2, 3, 4]" in err
    assert main(["describe", "synthetic:tiny", "--option", "version"]) == 2
    assert "error: --option 'version' is not KEY=VALUE (e.g. --option version=2)" in capsys.readouterr().err


def test_the_learning_split_comes_from_the_dataset_config(tmp_path):
    assert configured_learning_split("locomo") == {"k": 5, "fold": 0, "seed": 0, "group": "graph"}
    assert configured_learning_split("musique") == {"k": 5, "fold": 0, "seed": 0, "group": None}
    assert configured_learning_split("synthetic") is None  # its queries carry their own splits
    assert configured_learning_split("nowhere") is None
    (tmp_path / "odd.yaml").write_text("learning_split: [5, 0]\n")
    with pytest.raises(ValueError) as err:
        configured_learning_split("odd", tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'odd.yaml'}: learning_split must be a mapping with an integer k (and fold, seed, group)"
    )


def test_reports_load_synthetic_v2_by_default_and_v1_on_request():
    assert REPORT_SYNTHETIC_VERSION == 2
    v2, v1 = load_test_data("synthetic:tiny:0"), load_test_data("synthetic:tiny:0", synthetic_version=1)
    assert v2.meta["generator_version"] == 2 and "generator_version" not in v1.meta  # v1 predates the key
    # v1 stays loadable under its config hash: the same dataset a plain load builds
    assert v1.meta["config_hash"] == load_dataset("synthetic:tiny:0").meta["config_hash"]
    assert v2.meta["config_hash"] != v1.meta["config_hash"]
    assert [q.split for q in v2.queries] == [
        q.split for q in load_dataset("synthetic:tiny:0", options={"version": 2}).queries
    ]


@pytest.mark.data
def test_reports_score_the_test_fold_never_best_flats_validation_fold(require_data, real_dataset):
    """LoCoMo and MuSiQue ship every question as test: the reports cut them into the learning split, so the
    test split is the test fold, disjoint from the validation fold best_flat was chosen on."""
    from signet_rl.retrieval.flat import best_flat_choice

    require_data("hipporag")
    ds = load_test_data("musique")
    test = {q.id for q in ds.split("test")}
    validation = {q.id for q in ds.split("validation")}
    assert len(test) == 20 and len(validation) == 20 and not test & validation
    assert best_flat_choice("musique")["queries"] == len(validation)
    assert ds.meta["learning_split"] == configured_learning_split("musique")
    assert len(real_dataset("musique").split("test")) == 100  # without the cut every question is test
