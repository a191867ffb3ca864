"""signet_rl.kg.rerank and python -m signet_rl.tasks.kg_rerank: a run's walker ranked again on its own graph,
from its own folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)
from omegaconf import OmegaConf
from test_kg_trainer import tiny_cfg, write_tiny  # tests/kg is on sys.path (no __init__.py)

from signet_rl.kg.rerank import evaluate_run
from signet_rl.kg.trainer import CONFIG
from signet_rl.tasks.kg import run_kg
from signet_rl.tasks.kg_rerank import main

ROOT = Path(__file__).resolve().parents[2]
TRAIN = (
    "a\tr3\tc\na\tr1\tb\nb\tr3\te\nd\tr3\ta\nc\tr3\tb\n",
    "d\tr3\te\na\tr3\tb\n",
    "b\tr3\tc\ne\tr3\tc\n",
)
EXTRA = (
    "task.max_batches=6",
    "task.batch_size=2",
    "task.num_rollouts=4",
    "task.eval_every=3",
    "task.dropout=0.2",
    "dataset.max_actions=2",  # a seeded subset of the crowded entities' edges: the run's seed matters
    "seed=3",
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("kgeval")
    root = write_tiny(base / "data", *TRAIN)
    run_dir = base / "run"
    return run_dir, run_kg(tiny_cfg(root, run_dir, *EXTRA))


def walker(split: dict) -> dict:
    return {k: v for k, v in split.items() if k.startswith("kg_walk/")}


def test_evaluate_run_gives_the_figures_the_run_reported(finished):
    run_dir, results = finished
    got = evaluate_run(run_dir)
    assert got["validation"] == walker(results["validation"])
    assert got["test"] == walker(results["test"])
    assert got["test"]["kg_walk/n"] == 2
    only_test = evaluate_run(run_dir, splits=["test"])
    assert list(only_test) == ["test"] and only_test["test"] == got["test"]


def test_evaluation_time_overrides_and_the_command_line(finished, tmp_path, capsys):
    run_dir, _ = finished
    narrow = evaluate_run(run_dir, ["task.beam_width=1"], splits=["test"])
    assert narrow == evaluate_run(run_dir, ["task.beam_width=1"], splits=["test"])
    out = tmp_path / "figures.json"
    printed = main([str(run_dir), "--set", "task.beam_width=1", "--splits", "test", "--json", str(out)])
    assert printed == narrow and json.loads(out.read_text()) == narrow
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["split", "n", "misses", "H@1", "H@3", "H@10", "MRR"]
    assert lines[1].split()[:2] == ["test", "2"]
    assert float(lines[1].split()[-1]) == pytest.approx(100 * narrow["test"]["kg_walk/mrr"], abs=0.05)


def test_bad_evaluation_requests_are_named(finished, tmp_path):
    run_dir, _ = finished
    with pytest.raises(
        ValueError, match=r"^task.lr cannot change at evaluation time \(it changes the policy"
    ):
        evaluate_run(run_dir, ["task.lr=0.1"])
    with pytest.raises(ValueError, match=r"^override 'task.beam_width' is not key=value$"):
        evaluate_run(run_dir, ["task.beam_width"])
    with pytest.raises(ValueError, match=r"^task.beam_pool='mean' is not one of \('max', 'sum'\)$"):
        evaluate_run(run_dir, ["task.beam_pool=mean"])
    with pytest.raises(ValueError, match=r"^weights='best' is not one of \('selected', 'last'\)$"):
        evaluate_run(run_dir, weights="best")
    with pytest.raises(ValueError, match=r"^split 'train' is not one of"):
        evaluate_run(run_dir, splits=["train"])
    # a config edited after the run no longer matches its checkpoint
    edited = tmp_path / "edited"
    shutil.copytree(run_dir, edited)
    cfg = OmegaConf.load(edited / CONFIG)
    cfg.seed = 4
    OmegaConf.save(cfg, edited / CONFIG)
    with pytest.raises(ValueError, match=r"config.yaml does not match .*last.pt \(fingerprint "):
        evaluate_run(edited)
    (edited / CONFIG).unlink()
    with pytest.raises(FileNotFoundError, match=r"config.yaml not found: evaluate_run needs the config"):
        evaluate_run(edited)


def test_the_command_line_names_a_bad_request_without_a_traceback(finished, tmp_path, capsys):
    run_dir, _ = finished
    with pytest.raises(SystemExit) as exited:
        main([str(run_dir), "--set", "task.lr=0.1"])
    assert exited.value.code == 2
    assert "error: task.lr cannot change at evaluation time" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "nowhere")])
    assert exited.value.code == 2
    assert f"error: {tmp_path / 'nowhere' / CONFIG} not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main([str(run_dir), "--splits", "valid"])
    assert exited.value.code == 2
    assert "argument --splits: invalid choice: 'valid'" in capsys.readouterr().err


def test_kg_gap_splits_the_walkers_loss_to_its_anchor_by_answer_frequency_and_relation(tmp_path, capsys):
    kg_gap = load_experiment("kg_gap")
    root = write_tiny(tmp_path / "data", *TRAIN)
    run_dir = tmp_path / "run"
    anchor = ("task.anchors=[distmult]", "+task.anchor.epochs=2", "+task.anchor.dim=4")
    results = run_kg(tiny_cfg(root, run_dir, *EXTRA, *anchor))
    got = kg_gap.main(
        [str(run_dir), "--split", "test", "--anchor", "distmult", "--output", str(tmp_path / "g.json")]
    )
    # the two test queries (b r3 c, e r3 c): c is r3's tail once among the training triples (a r3 c)
    buckets = got["by_answer_frequency"]
    assert [b["queries"] for b in buckets.values()] == [0, 2, 0, 0]
    assert list(buckets) == ["0", "1-2", "3-9", "10+"]
    assert got["walker_mrr"] == round(results["test"]["kg_walk/mrr"], 4)
    assert got["anchor_mrr"] == round(results["test"]["anchor_distmult/mrr"], 4)
    assert buckets["1-2"]["lost"] == got["lost"] == round(got["by_relation"]["r3"]["lost"], 2)
    assert buckets["1-2"]["lost"] == round(2 * (got["anchor_mrr"] - got["walker_mrr"]), 2)
    assert json.loads((tmp_path / "g.json").read_text()) == json.loads(json.dumps(got))
    assert "answer seen as the relation's tail in training" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match=r"complex.pt not found: the run kept anchors \['distmult'\]"):
        kg_gap.gap(run_dir, "test", "complex")


def test_a_run_folder_written_before_the_move_reranks_to_its_reported_figures(tmp_path):
    # tests/kg/fixtures/pre_move_run: a tiny run (config.yaml, checkpoints/last.pt, results.json) written by
    # signet_rl.kg.train.run_kg before kg/ was split into a library and signet_rl.tasks
    fixture = Path(__file__).parent / "fixtures" / "pre_move_run"
    reported = json.loads((fixture / "run" / "results.json").read_text())
    got = evaluate_run(fixture / "run", [f"dataset.data_root={fixture / 'data'}"])
    assert got == {split: walker(reported[split]) for split in ("validation", "test")}
    assert got["validation"]["kg_walk/mrr"] == pytest.approx(5 / 12)  # its two queries rank 2 and 3
