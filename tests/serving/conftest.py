"""A trained, exported policy and a Signet v30 store of its graph, built once per session for the serving
tests (a real `python -m signet_rl.train` run in smoke mode, then `signet_rl.export.export_run`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.export import export_run
    from signet_rl.graph.store import write_graph

    base = tmp_path_factory.mktemp("served")
    run_dir = base / "run"
    env = {**os.environ, "SIGNET_RL_SMOKE": "1", "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{base}/ml.db"}
    cmd = [sys.executable, "-m", "signet_rl.train", "scorer=linucb", "dataset.spec=synthetic:tiny:0",
           f"run_dir={run_dir}", "mlflow.enabled=false"]
    done = subprocess.run(cmd, cwd=base, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    artifact = export_run(run_dir, base / "artifact")
    ds = load_dataset("synthetic:tiny:0")
    store = write_graph(ds.graphs[next(iter(ds.graphs))], base / "memories.db")
    return {"artifact": artifact, "store": store, "base": base}
