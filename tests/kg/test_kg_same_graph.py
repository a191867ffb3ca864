"""experiments/kg_same_graph.py: whether a folder's two protocol settings walk one graph, action for action
(issue 30: Kinship's and NELL-995's `minerva` and `multihopkg` rows may share runs only if they do)."""

from __future__ import annotations

from pathlib import Path

from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
SPLITS = {"train.txt": "a\tr1\tc\nb\tr2\td\n", "dev.txt": "c\tr1\ta\n", "test.txt": "d\tr2\ta\n"}


def _load():
    return load_experiment("kg_same_graph")


def _folder(root: Path, name: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / "kg" / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "kg" / name / rel).write_text(text)


def test_a_graph_holding_its_inverses_is_one_walking_graph_in_both_settings(tmp_path, capsys):
    ksg = _load()
    # Kinship's shape: graph.txt holds every inverse edge (`_r` names the inverse of `r`)
    closed = "a\tr1\tb\nb\t_r1\ta\nb\tr2\tc\nc\t_r2\tb\nc\tr1\td\nd\t_r1\tc\na\tr2\td\nd\t_r2\ta\n"
    _folder(tmp_path, "closed", {"graph.txt": closed, **SPLITS})
    # UMLS's shape: no inverse edge in the graph, so `multihopkg` adds four
    _folder(tmp_path, "open", {"graph.txt": "a\tr1\tb\nb\tr2\tc\nc\tr1\td\na\tr2\td\n", **SPLITS})
    # NELL-995's layout: the loader adds `<rel>_inv` edges in both settings, as MINERVA's `nell` setting does
    nell = {
        "full_kb/train.txt": "a\tr1\tb\nb\tr2\tc\nc\tr1\td\na\tr2\td\n",
        "full_kb/valid.txt": "c\tr1\ta\n",
    }
    _folder(tmp_path, "nellish", {**nell, **{f"nell/{k}": v for k, v in SPLITS.items()}})

    same = ksg.compare("closed", tmp_path, max_actions=2, seed=3)
    assert same == {
        "folder": "closed",
        "edges": {"minerva": 8, "multihopkg": 8},
        "differs": [],
        "identical": True,
    }
    assert ksg.compare("nellish", tmp_path)["identical"] is True
    assert ksg.compare("nellish", tmp_path)["edges"] == {"minerva": 10, "multihopkg": 10}
    other = ksg.compare("open", tmp_path)
    assert other["edges"] == {"minerva": 4, "multihopkg": 8}
    assert other["identical"] is False
    assert {"graph_triples", "actions.next_entity", "train_facts"} <= set(other["differs"])

    assert ksg.main(["closed", "nellish", "--data-root", str(tmp_path)]) == 0
    assert ksg.main(["open", "--data-root", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "closed: edges minerva 8, multihopkg 8; identical walking graph and inputs"
    assert out[2].startswith("open: edges minerva 4, multihopkg 8; DIFFER: relations, graph_triples, ")


def test_kinship_settings_share_one_walking_graph(require_data):
    """The real check behind the protocol ledger's `kinship@multihopkg` = `kinship@minerva` runs."""
    root = require_data("kg/kinship").parents[1]
    r = _load().compare("kinship", root, seed=10)
    assert r["edges"] == {"minerva": 17088, "multihopkg": 17088}
    assert r["differs"] == []
