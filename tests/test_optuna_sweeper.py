"""``hydra/sweeper=signet_optuna``: the best validation value, a killed sweep resuming without repeating
finished trials, one MLflow child per trial of ``python -m signet_rl.train``, and clear errors for a bad
search space.

The sweeper's own mechanics run on a tiny Hydra app with a known objective (``tests/fixtures/sweep_app``, a
real Hydra multirun in a subprocess); the MLflow test sweeps the real training entry point on a tiny dataset.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from fork_runner import run_forked
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "fixtures" / "sweep_app" / "app.py"


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "HYDRA_FULL_ERROR": "0"}


def _app(tmp_path: Path, *overrides: str, sleep: float = 0.0) -> list[str]:
    return [
        sys.executable, "-W", "error", str(APP), "-m", "hydra/sweeper=app_space",
        f"log={tmp_path / 'trials.log'}", f"hydra.sweep.dir={tmp_path / 'sweep'}", f"sleep={sleep}",
        f"hydra.sweeper.storage=sqlite:///{tmp_path / 'study.db'}", *overrides,
    ]  # fmt: skip


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)


def _log(tmp_path: Path) -> tuple[list[str], dict[str, float]]:
    """(parameters of every trial started, in order; parameters -> value of every trial that ended)."""
    started, ended = [], {}
    path = tmp_path / "trials.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        word, *rest = line.split()
        if word == "start":
            started.append(" ".join(rest))
        else:
            ended[" ".join(rest[:-1])] = float(rest[-1])
    return started, ended


def test_the_sweep_returns_the_best_value_of_its_trials(tmp_path):
    done = _run(_app(tmp_path, "hydra.sweeper.n_trials=5", "hydra.sweeper.n_jobs=2"))
    assert done.returncode == 0, done.stderr[-3000:]
    started, ended = _log(tmp_path)
    assert len(started) == len(ended) == 5
    result = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    best = max(ended.values())
    assert result.best_value == best and result.n_trials == 5
    p = result.best_params
    assert ended[f"{float(p.x)!r} {p.depth} {p.kind}"] == best
    assert f"best value {best:.4f}" in done.stdout


def test_a_killed_sweep_resumes_without_repeating_finished_trials(tmp_path):
    cmd = _app(tmp_path, "hydra.sweeper.n_trials=4", sleep=0.6)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill it while the second trial runs
            started, ended = _log(tmp_path)
            if len(ended) == 1 and len(started) == 2:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    started, ended = _log(tmp_path)
    assert (len(started), len(ended)) == (2, 1)
    killed = started[1]
    finished_before = dict(ended)

    resumed = _run(cmd)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "1 of 4 trials done, 1 interrupted trial(s) to rerun" in resumed.stdout
    started, ended = _log(tmp_path)
    rerun = started[2:]
    assert rerun[0] == killed  # the interrupted trial runs again first, with the same parameters
    assert not set(rerun) & set(finished_before)  # no finished trial runs twice
    assert len(ended) == 4 and len(rerun) == 3
    result = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert result.n_trials == 4 and result.best_value == max(ended.values())

    again = _run(cmd)  # a finished study: nothing left to run
    assert again.returncode == 0 and "4 of 4 trials done" in again.stdout
    assert len(_log(tmp_path)[0]) == 5


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+hydra.sweeper.params.dept='range(1,3)'",
         "signet_optuna: cannot search 'dept': the config has no such key (top-level keys are depth, kind, "
         "log, mlflow, optimized_metric, sleep, x); fix the name, or write '+dept' to add a new key"),
        ("hydra.sweeper.params.depth='range(4,4)'",
         "signet_optuna: params.depth: range(4, 4) is empty (stop is excluded); give start < stop"),
        ("+hydra.sweeper.params.sleep={type:float,low:1.0,high:0.5}",
         "signet_optuna: params.sleep: the range [1.0, 0.5] is empty; give low < high"),
        ("hydra.sweeper.params.kind=[]",
         "signet_optuna: params.kind: no choices to search; list at least one"),
        ("+hydra.sweeper.params.sleep={type:float,low:0.0,high:1.0,log:true}",
         "signet_optuna: params.sleep: a log scale needs low > 0, got low=0.0; raise it or drop log"),
        ("+hydra.sweeper.params.sleep={type:real,low:0.0,high:1.0}",
         "signet_optuna: params.sleep: type='real'; use one of ['float', 'int', 'categorical']"),
        ("+hydra.sweeper.params.sleep={type:float,low:0.0,hi:1.0}",
         "signet_optuna: params.sleep: unknown field 'hi'; the fields are "
         "['choices', 'high', 'log', 'low', 'step', 'type']"),
    ],
)  # fmt: skip
def test_a_bad_search_space_is_refused_naming_the_key_and_value(tmp_path, override, message):
    done = _run(_app(tmp_path, override))
    assert done.returncode == 1
    assert message in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "trials.log").exists()  # refused before any trial ran


def test_a_command_line_sweep_over_an_unknown_key_is_refused(tmp_path):
    done = _run(_app(tmp_path, "xx=interval(0,1)"))
    assert done.returncode == 1
    assert "cannot search 'xx': the config has no such key" in done.stderr, done.stderr[-2000:]


def test_a_resumed_study_must_search_the_same_space(tmp_path):
    first = _run(_app(tmp_path, "hydra.sweeper.n_trials=1"))
    assert first.returncode == 0, first.stderr[-2000:]
    changed = _run(_app(tmp_path, "hydra.sweeper.n_trials=2", "hydra.sweeper.params.depth='range(1,9)'"))
    assert changed.returncode == 1
    assert (
        "signet_optuna: study 'signet_rl' in sqlite:///" in changed.stderr
        and "searched a different space (depth: IntDistribution(high=5, log=False, low=1, step=1) before, "
        "IntDistribution(high=8, log=False, low=1, step=1) now); rerun with the same params to resume, or "
        "give a new hydra.sweeper.study_name"
        in changed.stderr
    ), changed.stderr[-2000:]


def _train_sweep(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "SIGNET_RL_DATA": os.environ.get("SIGNET_RL_DATA", str(tmp_path))}
    cmd = [
        sys.executable, "-m", "signet_rl.train", "-m", "hydra/sweeper=signet_optuna",
        "dataset.spec=synthetic:tiny:0", "scorer=linucb", "task.max_interactions=6", "task.eval_every=0",
        "task.max_val_queries=5", "task.max_test_queries=8", "baselines=[]", "ceiling=false", "bootstrap=10",
        "progress=false", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"hydra.sweep.dir={tmp_path / 'sweep'}", f"run_dir={tmp_path}/runs/${{hydra:job.num}}",
        f"hydra.sweeper.storage=sqlite:///{tmp_path / 'study.db'}", *overrides,
    ]  # fmt: skip
    return run_forked(cmd, cwd=ROOT, env=env, timeout=600)


def test_a_train_sweep_logs_one_mlflow_child_per_trial_and_returns_the_best_validation_value(tmp_path):
    from mlflow.tracking import MlflowClient

    done = _train_sweep(
        tmp_path,
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.n_jobs=2",
        "traversal.max_branching=choice(1,4)",
        "optimized_metric=val/ndcg@10",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with warnings.catch_warnings():  # MLflow's SQLAlchemy store warns about its own loader options
        warnings.simplefilter("ignore")
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        exp = client.get_experiment_by_name("signet_rl-train")
        runs = client.search_runs([exp.experiment_id])
        parents = [r for r in runs if "sweep_parent" in r.data.tags]
        children = [r for r in runs if "sweep_parent" not in r.data.tags]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        assert len(children) == 2
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
        assert sorted(r.info.run_name for r in children) == ["traversal.max_branching=1",
                                                             "traversal.max_branching=4"]  # fmt: skip
        values = [r.data.metrics["val/ndcg_10"] for r in children]  # MLflow's name for val/ndcg@10
        artifacts = {f.path for f in client.list_artifacts(parents[0].info.run_id)}
    result = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert result.best_value == pytest.approx(max(values), abs=1e-12)
    assert {"sweep_summary.csv", "sweep_summary.md", "sweep_parallel_coordinates.png"} <= artifacts
