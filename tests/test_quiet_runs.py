"""Quality of life: a run prints its own progress and results, not its libraries' chatter, and says where
its MLflow run, policy and learning curve are."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from signet_rl.core.logs import MLFLOW_LEVEL, NOISY_LIBRARIES, quiet_libraries

ROOT = Path(__file__).resolve().parents[1]
#: Lines a default run printed before logs were quieted (bm25s at DEBUG, faiss.loader and MLflow at INFO).
CHATTER = re.compile(r"bm25s|faiss\.loader|\bDEBUG\b|INFO mlflow|\[mlflow[^\]]*\]\[INFO\]|alembic")


def test_train_is_quiet_by_default_and_prints_where_its_outputs_are(tmp_path: Path) -> None:
    run, db = tmp_path / "run", tmp_path / "mlflow.db"
    env = {**os.environ, "SIGNET_RL_SMOKE": "1", "PYTHONPATH": str(ROOT)}
    env.pop(MLFLOW_LEVEL, None)
    cmd = [sys.executable, "-m", "signet_rl.train", "dataset.spec=synthetic:tiny:0", "scorer=gnn",
           f"run_dir={run}", f"mlflow.tracking_uri=sqlite:///{db}"]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    noisy = [line for line in (done.stdout + done.stderr).splitlines() if CHATTER.search(line)]
    assert not noisy, noisy[:5]
    out = done.stdout
    assert f"run folder:      {run}\n" in out
    run_id = (run / "mlflow_run_id").read_text().strip()
    assert f"MLflow run:      {run_id} in sqlite:///{db}\n" in out
    assert f"policy:          {run / 'artifacts' / 'policy'}\n" in out
    assert f"learning curve:  {run / 'artifacts' / 'learning_curve.png'}\n" in out
    assert f"open MLflow's UI: mlflow ui --backend-store-uri sqlite:///{db}\n" in out
    assert (run / "artifacts" / "policy").exists() and (run / "artifacts" / "learning_curve.png").exists()


@pytest.mark.parametrize("verbose", [False, True])
def test_library_loggers_are_quiet_unless_verbose(verbose: bool) -> None:
    """A real import of faiss under DEBUG logging: its loader's INFO lines show only with verbose."""
    code = (
        "import logging, sys; logging.basicConfig(level=logging.DEBUG, stream=sys.stderr); "
        f"from signet_rl.core.logs import quiet_libraries; quiet_libraries({verbose}); import faiss; "
        "import mlflow; logging.getLogger('bm25s').debug('bm25s says hello')"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(MLFLOW_LEVEL, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ("faiss.loader" in done.stderr) is verbose
    assert ("bm25s says hello" in done.stderr) is verbose


def test_quiet_libraries_sets_and_restores_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MLFLOW_LEVEL, raising=False)
    before = {name: logging.getLogger(name).level for name in NOISY_LIBRARIES}
    try:
        quiet_libraries()
        assert {logging.getLogger(n).level for n in NOISY_LIBRARIES} == {logging.WARNING}
        assert os.environ[MLFLOW_LEVEL] == "WARNING"
        quiet_libraries(verbose=True)
        assert {logging.getLogger(n).level for n in NOISY_LIBRARIES} == {logging.NOTSET}
        assert MLFLOW_LEVEL not in os.environ
        monkeypatch.setenv(MLFLOW_LEVEL, "DEBUG")  # a user's own setting is left alone
        quiet_libraries()
        assert os.environ[MLFLOW_LEVEL] == "DEBUG"
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
