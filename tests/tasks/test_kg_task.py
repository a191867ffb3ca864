"""signet_rl.tasks.kg, the KG task's entry layer: optimized_metric, fresh=true, damaged checkpoints, folders
without usable triples, and what ``python -m signet_rl.train task=kg`` prints."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import torch
from fork_runner import run_forked

from signet_rl.kg.trainer import CHECKPOINT, PREVIOUS, RESULTS
from signet_rl.tasks.kg import run_kg, train_kg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kg"))
from test_kg_trainer import tiny_cfg, write_tiny

ROOT = Path(__file__).resolve().parents[2]
SPLITS = ("a\tr3\tc\na\tr1\tb\nb\tr3\te\nd\tr3\ta\nc\tr3\tb\n", "d\tr3\te\n", "b\tr3\tc\n")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("kgtask"), *SPLITS)


def test_optimized_metric_returns_that_validation_figure_and_a_wrong_name_lists_the_others(root, tmp_path):
    cfg = tiny_cfg(root, tmp_path / "run", "task.max_batches=2", "+optimized_metric=val/kg_walk/hits@10")
    value = train_kg(cfg)
    results = run_kg(cfg)  # finished: re-evaluated, same figures
    assert value == results["validation"]["kg_walk/hits@10"]
    cfg.optimized_metric = None  # the task's default: the walker's validation MRR
    assert train_kg(cfg) == results["validation"]["kg_walk/mrr"]
    cfg.optimized_metric = "val/needed_recall"  # the bandit task's metric
    (tmp_path / "run" / RESULTS).unlink()
    with pytest.raises(ValueError) as err:
        train_kg(cfg)
    assert str(err.value).startswith(
        "optimized_metric='val/needed_recall' is not a metric of task=kg; available: val/kg_walk/hits@1, "
        "val/kg_walk/hits@3, val/kg_walk/hits@10, val/kg_walk/mrr, val/kg_walk/n, val/kg_walk/misses"
    )
    assert not (tmp_path / "run" / RESULTS).exists()  # refused before training


def test_fresh_starts_over_and_removes_only_the_runs_own_files(root, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine")
    batches: list[int] = []
    run_kg(tiny_cfg(root, run_dir, "task.max_batches=4"), on_batch=batches.append)
    assert batches == [1, 2, 3, 4]
    # a finished run reruns without training; fresh=true trains it again from batch 0
    again: list[int] = []
    run_kg(tiny_cfg(root, run_dir, "task.max_batches=4"), on_batch=again.append)
    assert again == []
    fresh = tiny_cfg(root, run_dir, "task.max_batches=4", "task.dropout=0.1", "+fresh=true")
    with pytest.raises(ValueError, match="was written by a run with another config"):
        run_kg(tiny_cfg(root, run_dir, "task.max_batches=4", "task.dropout=0.1"))
    restarted: list[int] = []
    run_kg(fresh, on_batch=restarted.append)
    assert restarted == [1, 2, 3, 4]
    assert (run_dir / "notes.txt").read_text() == "mine"
    assert torch.load(run_dir / CHECKPOINT, weights_only=False)["step"] == 4


def test_a_truncated_checkpoint_names_its_path_and_both_ways_out(root, tmp_path):
    run_dir = tmp_path / "run"
    extra = ("task.max_batches=6", "task.checkpoint_every=2")
    whole = run_kg(tiny_cfg(root, tmp_path / "whole", *extra))

    def kill_at_5(step: int) -> None:
        if step == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_kg(tiny_cfg(root, run_dir, *extra), on_batch=kill_at_5)
    last, previous = run_dir / CHECKPOINT, run_dir / PREVIOUS
    # the checkpoint before the last one is kept
    assert torch.load(last, weights_only=False)["step"] == 4
    assert torch.load(previous, weights_only=False)["step"] == 2
    with last.open("r+b") as fh:  # truncate -s to half its size
        fh.truncate(last.stat().st_size // 2)
    with pytest.raises(ValueError) as err:
        run_kg(tiny_cfg(root, run_dir, *extra))
    message = str(err.value)
    assert message.startswith(f"checkpoint {last} is unreadable (truncated or corrupt: ")
    assert message.endswith(
        f"start the run over with fresh=true, or resume from the checkpoint before it: cp {previous} {last}"
    )
    # the second way out: resume from the previous checkpoint, to the uninterrupted run's numbers
    last.write_bytes(previous.read_bytes())
    resumed = run_kg(tiny_cfg(root, run_dir, *extra))
    assert resumed["test"] == whole["test"] and resumed["train"]["batches"] == 6
    # the first: start over
    last.write_bytes(b"not a checkpoint")
    assert run_kg(tiny_cfg(root, run_dir, *extra, "+fresh=true"))["test"] == whole["test"]


def test_training_on_a_folder_without_usable_triples_refuses(tmp_path):
    folder = tmp_path / "kg" / "spaces"
    folder.mkdir(parents=True)
    for name in ("train", "dev", "test"):  # space-separated: no line is a tab-separated triple
        (folder / f"{name}.txt").write_text("a r b\nb r c\n")
    cfg = tiny_cfg(tmp_path, tmp_path / "run", "task.max_batches=2")
    cfg.dataset.spec = "kg:spaces"
    with pytest.raises(ValueError) as err:
        run_kg(cfg)
    assert str(err.value) == (
        f"kg:spaces: no usable graph edges and no training triples in {folder} (6 malformed rows skipped; "
        f"first: {folder / 'train.txt'} line 1: 'a r b': expected 3 tab-separated fields, found 1); KG "
        "files hold one head<TAB>relation<TAB>tail triple per line"
    )
    assert not (tmp_path / "run" / RESULTS).exists()


def test_the_train_command_prints_the_table_and_where_the_files_are(root, tmp_path):
    # (the MLflow line it prints: tests/kg/test_kg_tracking.py, where creating the store is paid once)
    run_dir = tmp_path / "run"
    command = [
        sys.executable, "-m", "signet_rl.train", "task=kg", "dataset=kg", "dataset.spec=kg:tiny",
        f"dataset.data_root={root}", "dataset.inverse=true", "task.anchors=[distmult]", "task.shaping=none",
        "+task.anchor.epochs=2", "+task.anchor.dim=4", "task.entity_dim=8", "task.relation_dim=8",
        "task.history_dim=8", "task.hidden_dim=16", "task.beam_width=8", "task.max_batches=100000",
        "task.time_budget_s=2", f"run_dir={run_dir}", "mlflow.enabled=false",
        f"hydra.run.dir={tmp_path / 'hydra'}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = run_forked(command, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # ended by the time budget, and the progress bar says so: 100% of the budget's seconds
    assert re.search(
        r"kg:tiny seed 0: [\d,]+ of 100,000 batches in \d+ s of training, ended by the time budget", out
    )
    assert re.search(r"kg_walk kg:tiny \(time budget\): 100%\|.*\| 2/2 s", done.stderr)
    table = [line.split() for line in out.splitlines() if line.startswith(("validation ", "test "))]
    assert [row[:3] for row in table] == [
        ["validation", "kg_walk", "1"], ["validation", "anchor_distmult", "1"],
        ["test", "kg_walk", "1"], ["test", "anchor_distmult", "1"],
    ]  # fmt: skip
    assert "MLflow run" not in out
    assert f"run folder {run_dir}: {RESULTS}, {CHECKPOINT} (the same command resumes it)" in out
    assert re.search(r"^val/kg_walk/mrr = \d\.\d{4}$", out, re.M)
