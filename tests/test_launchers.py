"""Sweeps on the three launchers: Hydra's basic one, ``local_joblib`` and ``local_ray`` (a local Ray started
by the command: 2 CPUs, the smallest object store, no dashboard); ``tests/test_optuna_sweeper.py`` runs the
Optuna sweeper on the basic one. Each runs a tiny sweep of the sweep test app (``tests/fixtures/sweep_app``)
that logs through ``signet_rl.tracking`` like ``python -m signet_rl.train``: one MLflow parent run per
sweep, one child per job, and on the parent the sweep summary table and its parallel-coordinates plot. The
joblib and Ray launchers come with extras (``.[sweep]``, ``.[distributed]``); their tests skip, naming the
extra, only where it is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from fork_runner import run_forked

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "fixtures" / "sweep_app" / "app.py"


def _needs(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install -e '.[{extra}]' runs this launcher's sweep")


def _sweep(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "HYDRA_FULL_ERROR": "0",
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    cmd = [
        sys.executable, str(APP), "-m", f"--config-dir={ROOT / 'conf'}", "x=0.2,0.6", "depth=2",
        f"log={tmp_path / 'trials.log'}", f"hydra.sweep.dir={tmp_path / 'sweep'}", "mlflow.enabled=true",
        f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        "+hydra.callbacks.mlflow_runs._target_=signet_rl.tracking.SweepCallback", *overrides,
    ]  # fmt: skip
    if "hydra/launcher=local_ray" in overrides:  # Ray's cluster starts from a fresh interpreter
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return run_forked(cmd, cwd=ROOT, env=env, timeout=600)


def _check_mlflow(tmp_path: Path) -> None:
    """One FINISHED parent with two FINISHED children (x=0.2, x=0.6), and the summary on the parent."""
    from mlflow.tracking import MlflowClient

    with warnings.catch_warnings():  # MLflow's SQLAlchemy store warns about its own loader options
        warnings.simplefilter("ignore")
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        exp = client.get_experiment_by_name("sweep_app")
        runs = client.search_runs([exp.experiment_id])
        parents = [r for r in runs if "sweep_parent" in r.data.tags]
        children = [r for r in runs if "sweep_parent" not in r.data.tags]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        parent = parents[0]
        assert sorted(r.info.run_name for r in children) == ["x=0.2", "x=0.6"]
        assert all(r.info.status == "FINISHED" for r in children)
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
        local = Path(client.download_artifacts(parent.info.run_id, "", str(tmp_path / "parent")))
    summary = pd.read_csv(local / "sweep_summary.csv")
    expected = sorted(((-((x - 0.3) ** 2) - 0.1, x) for x in (0.2, 0.6)), reverse=True)  # no tie
    assert list(summary.columns) == ["run", "x", "val/objective"]
    assert summary["x"].tolist() == [x for _, x in expected]  # best first
    assert summary["val/objective"].tolist() == pytest.approx([v for v, _ in expected], abs=1e-12)
    assert parent.data.metrics["best/val/objective"] == pytest.approx(expected[0][0], abs=1e-12)
    png = (local / "sweep_parallel_coordinates.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_the_basic_launcher_sweep_logs_a_parent_a_child_per_job_and_the_summary(tmp_path):
    done = _sweep(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    _check_mlflow(tmp_path)


def test_the_joblib_launcher_runs_a_sweep(tmp_path):
    _needs("hydra_plugins.hydra_joblib_launcher", "sweep")
    done = _sweep(tmp_path, "hydra/launcher=local_joblib")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Joblib.Parallel(n_jobs=2" in done.stdout + done.stderr
    _check_mlflow(tmp_path)


def test_the_ray_launcher_runs_a_sweep_on_a_local_ray(tmp_path):
    _needs("hydra_plugins.hydra_ray_launcher", "distributed")
    done = _sweep(tmp_path, "hydra/launcher=local_ray")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert "Ray Launcher is launching 2 jobs" in out and "'num_cpus': 2" in out
    _check_mlflow(tmp_path)


def test_a_resumed_sweep_reopens_its_parent_and_marks_runs_its_killed_jobs_left_running(tmp_path):
    """A sweep killed mid-job leaves its parent and that job's run RUNNING; starting the multirun again in the
    same folder (a resumed Optuna sweep) keeps the one parent and marks the dead job's run KILLED."""
    from mlflow.tracking import MlflowClient
    from omegaconf import OmegaConf

    from signet_rl.tracking import SweepCallback

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = str(tmp_path / "sweep")
    config = OmegaConf.create(
        {"mlflow": {"enabled": True, "tracking_uri": uri, "experiment": "resumed"},
         "hydra": {"sweep": {"dir": sweep}, "runtime": {"cwd": str(tmp_path)}}}
    )  # fmt: skip
    with warnings.catch_warnings():  # MLflow's SQLAlchemy store warns about its own loader options
        warnings.simplefilter("ignore")
        callback = SweepCallback()
        callback.on_multirun_start(config)  # the first session opens the parent before any job
        client = MlflowClient(tracking_uri=uri)
        exp = client.get_experiment_by_name("resumed").experiment_id
        (parent,) = client.search_runs([exp])
        tags = {"sweep": sweep, "mlflow.parentRunId": parent.info.run_id}
        done = client.create_run(exp, tags=tags, run_name="x=0.1")
        client.set_terminated(done.info.run_id, "FINISHED")
        dead = client.create_run(exp, tags=tags, run_name="x=0.5")  # killed with the sweep: RUNNING forever
        callback.on_multirun_start(config)  # the next session resumes the sweep
        runs = {r.info.run_name: r.info.status for r in client.search_runs([exp])}
    assert runs == {f"sweep {Path(sweep).name}": "RUNNING", "x=0.1": "FINISHED", "x=0.5": "KILLED"}
    assert dead.info.run_id != parent.info.run_id
