"""python -m signet_rl.train killed or interrupted for real: a SIGKILL after the first checkpoint, then the
same command, ends with the numbers of a run that never stopped (GNN with path reinforcement, the case that
drifted); Ctrl-C checkpoints, prints the command that resumes and exits with 130, no traceback (issue 31
items 3 and 13)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fork_runner import run_forked
from hydra import compose, initialize_config_dir

from signet_rl.learning.trainer import CHECKPOINT
from signet_rl.train import train

ROOT = Path(__file__).resolve().parents[1]
TOTAL = 24
RUN = [
    "dataset.spec=synthetic:tiny:0", "scorer=gnn", "scorer.hidden=8", "scorer.n_heads=4",
    f"task.max_interactions={TOTAL}", "task.eval_every=12", "task.checkpoint_every=3",
    "task.max_val_queries=4", "task.max_test_queries=6", "baselines=[]", "ceiling=false", "bootstrap=10",
    "progress=false", "mlflow.enabled=false", "threads=1",
]  # fmt: skip


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _final(folder: Path) -> dict[str, float]:
    """final_metrics.json less wall-clock figures."""
    got = json.loads((folder / "artifacts" / "final_metrics.json").read_text())
    return {k: v for k, v in got.items() if k != "seconds" and "latency" not in k and not k.endswith("_ms")}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    folder = tmp_path_factory.mktemp("whole") / "run"
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[*RUN, f"run_dir={folder}"])
    train(cfg)
    return _final(folder)


def _start_and_wait_for_a_checkpoint(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "signet_rl.train", *RUN, f"run_dir={folder}"],
        cwd=folder.parent, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while not (folder / CHECKPOINT).exists():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 240 s"
        time.sleep(0.01)
    return proc


def _step(folder: Path) -> int:
    with open(folder / CHECKPOINT, "rb") as fh:
        return int(pickle.load(fh)["step"])


def test_sigkill_after_the_first_checkpoint_then_rerun_equals_the_uninterrupted_run(tmp_path, uninterrupted):
    folder = tmp_path / "run"
    proc = _start_and_wait_for_a_checkpoint(folder)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert 3 <= _step(folder) < TOTAL and not (folder / "artifacts").exists()  # it died mid-run
    again = run_forked(
        [sys.executable, "-m", "signet_rl.train", *RUN, f"run_dir={folder}"],
        cwd=tmp_path, env=_env(), timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert _final(folder) == uninterrupted


def test_ctrl_c_checkpoints_prints_the_resume_command_and_exits_130(tmp_path):
    """(That a checkpoint written at any step resumes exactly is the property test of
    tests/learning/test_resume_exact.py; the resume after a real kill is the test above.)"""
    folder = tmp_path / "run"
    proc = _start_and_wait_for_a_checkpoint(folder)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "Traceback" not in out
    match = re.search(
        rf"interrupted after (\d+) of {TOTAL} interactions; checkpoint written to "
        rf"{re.escape(str(folder / CHECKPOINT))}\. Resume with:\n  (python -m signet_rl\.train .*)\n",
        err,
    )
    assert match, err[-3000:]
    assert _step(folder) == int(match.group(1)) < TOTAL
    command = shlex.split(match.group(2))
    assert command[3:] == [*RUN, f"run_dir={folder}"]  # the same command: it finds the checkpoint
