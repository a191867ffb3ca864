"""experiments/kg_leak_check.py and experiments/kg_split_gap.py on hand-built folders (issue 30): the audit
counts split triples in each walking graph, and the split comparison measures reachability with each query's
own edge masked, isolated heads and a model-free prior, per split."""

from __future__ import annotations

from pathlib import Path

import pytest
from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    return load_experiment(name)


def _folder(root: Path, name: str, files: dict[str, list[str]]) -> None:
    folder = root / "kg" / name
    folder.mkdir(parents=True)
    for file, lines in files.items():
        (folder / f"{file}.txt").write_text("".join(f"{line}\n" for line in lines))


def test_leak_check_counts_each_folder_in_both_settings(tmp_path, caplog):
    # leaky: test triple a -r-> b is a graph edge; clean: no split triple is
    _folder(
        tmp_path,
        "leaky",
        {
            "graph": ["a\tr\tb", "b\tr\tc"],
            "train": ["b\tr\tc"],
            "dev": ["b\tr\tc"],
            "test": ["a\tr\tb", "c\tr\ta"],
        },
    )
    _folder(
        tmp_path,
        "clean",
        {"graph": ["a\tr\tb", "b\tr\tc"], "train": ["a\tr\tb"], "dev": ["c\tr\ta"], "test": ["a\tr\tc"]},
    )
    lc = _load("kg_leak_check")
    with caplog.at_level("WARNING", logger="signet_rl.datasets.kg"):
        rows = lc.check(tmp_path)
    got = {
        (r["folder"], r["setting"].split()[0]): (
            r["validation_triples"],
            r["validation_inverse"],
            r["test_triples"],
            r["test_inverse"],
        )
        for r in rows
    }
    # with inverses added, b -r_inv-> a and c -r_inv-> b appear: the inverses of test a -r-> b and of
    # validation b -r-> c are then edges too; clean's test a -r-> c has no inverse edge c -> a in either
    assert got == {
        ("clean", "minerva"): (0, 0, 0, 0),
        ("clean", "multihopkg"): (0, 0, 0, 0),
        ("leaky", "minerva"): (1, 0, 1, 0),
        ("leaky", "multihopkg"): (1, 1, 1, 1),
    }
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    problem = "test triples are edges of the walking graph ({} more as their inverse edge): a walker can read"
    assert warned == [
        f"kg:leaky: 1 of 2 {problem.format(0)} these answers off the graph",
        f"kg:leaky: 1 of 2 {problem.format(1)} these answers off the graph",
    ]


@pytest.fixture()
def gap_root(tmp_path):
    # validation a -r-> b is a graph edge; masked, b is still 2 steps away (a -s-> c -s-> b).
    # test d -r-> b: d -s-> e -s-> c -s-> b, 3 steps. test f -r-> b: f has no out-edge (isolated head).
    # r's tails in the graph: c twice (h, i), b once, so the prior ranks b second for every query.
    graph = ["a\tr\tb", "a\ts\tc", "c\ts\tb", "d\ts\te", "e\ts\tc", "g\ts\tf", "h\tr\tc", "i\tr\tc"]
    _folder(
        tmp_path,
        "tiny",
        {"graph": graph, "train": ["a\ts\tc"], "dev": ["a\tr\tb"], "test": ["d\tr\tb", "f\tr\tb"]},
    )
    return tmp_path


def test_split_gap_masks_the_own_edge_and_measures_reach_per_split(gap_root):
    sg = _load("kg_split_gap")
    a = sg.analyse("tiny", "minerva", root=gap_root)
    assert (a["path_length"], a["max_actions"], a["capped_edges"]) == (3, 200, 0)  # a generic folder
    v, t = a["splits"]["validation"]["all"], a["splits"]["test"]["all"]
    assert v == {
        "queries": 1,
        "reach@1": 0.0,
        "reach@2": 1.0,
        "reach@3": 1.0,
        "own_edge_in_graph": 1.0,
        "isolated_head": 0.0,
        "answer_degree_median": 1.0,
        "prior_mrr": 0.5,
    }
    assert t == {
        "queries": 2,
        "reach@1": 0.0,
        "reach@2": 0.0,
        "reach@3": 0.5,
        "own_edge_in_graph": 0.0,
        "isolated_head": 0.5,
        "answer_degree_median": 2.0,
        "prior_mrr": 0.5,
    }
    assert set(a["splits"]["test"]["per_relation"]) == {"r"}
    table = sg.render(a)
    assert "| validation | 1 | 100.0 % | 0.0 % | 100.0 % | 100.0 % | 0.0 % | 1 | 50.0 |" in table
    assert "| test | 2 | 0.0 % | 0.0 % | 0.0 % | 50.0 % | 50.0 % | 2 | 50.0 |" in table


def test_split_gap_within_a_shorter_path_length(gap_root):
    sg = _load("kg_split_gap")
    task_like = sg.load_kg("tiny", root=gap_root, inverse=None)
    walk = sg.WalkTask.from_dataset(task_like, max_actions=None)
    steps = sg.reach_steps(walk.walker, walk.queries("test"), 2)
    assert steps.tolist() == [3, 3]  # 3 = path length + 1: neither answer is within 2 steps
    assert sg.reach_steps(walk.walker, walk.queries("validation"), 1).tolist() == [2]  # own edge masked
