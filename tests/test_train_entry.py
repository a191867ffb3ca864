"""python -m signet_rl.train: every config group instantiates, a multirun groups its jobs in MLflow, bad input
fails clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from fork_runner import run_forked
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from signet_rl.learning.trainer import BanditConfig
from signet_rl.train import build_scorer, traversal_config
from signet_rl.traversal.config import TraversalConfig

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SCORERS = sorted(p.stem for p in (CONF / "scorer").glob("*.yaml"))
DATASETS = sorted(p.stem for p in (CONF / "dataset").glob("*.yaml") if p.stem != "signet")


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=list(overrides))


@pytest.mark.parametrize("scorer", SCORERS)
def test_every_scorer_config_instantiates(scorer):
    cfg = _compose(f"scorer={scorer}")
    assert build_scorer(cfg).name == scorer
    assert BanditConfig.from_dict({k: v for k, v in cfg.task.items() if k != "name"}).slate_size == 3


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_dataset_composes_with_the_bandit_task(dataset):
    cfg = _compose(f"dataset={dataset}", "traversal.max_branching=2")
    merged = TraversalConfig.from_dict(traversal_config(cfg))
    assert merged.max_branching == 2  # the command line wins over the dataset's block


def test_locomo_trains_over_the_hybrid_entry_with_the_floor_residual_by_default():
    cfg = _compose("dataset=locomo", "scorer=linucb")
    traversal = traversal_config(cfg)
    bounds = {k: v for k, v in cfg.dataset.hybrid.items()}
    assert traversal == {"floor": True, "session": True, "entity_walks": True, "graph_walk": False, **bounds}
    assert build_scorer(cfg, traversal).floor_prior == cfg.floor_prior > 0
    # the command line wins: a traversal override, the scorer's own non-zero floor_prior, the top-level 0
    cfg = _compose("dataset=locomo", "scorer=gnn", "traversal.max_paths=20", "scorer.floor_prior=0.3")
    traversal = traversal_config(cfg)
    assert traversal["max_paths"] == 20 and build_scorer(cfg, traversal).floor_prior == 0.3
    cfg = _compose("dataset=locomo", "scorer=gnn", "floor_prior=0")
    assert build_scorer(cfg, traversal_config(cfg)).floor_prior == 0
    cfg = _compose("dataset=locomo", "scorer=linucb", "hybrid=false")
    assert "floor" not in traversal_config(cfg) and build_scorer(cfg, traversal_config(cfg)).floor_prior == 0
    cfg = _compose("scorer=linucb")  # synthetic: no hybrid block, the walk as before
    assert "floor" not in traversal_config(cfg) and build_scorer(cfg, traversal_config(cfg)).floor_prior == 0


def test_the_floor_only_ablation_keeps_the_recipe_and_drops_walks_and_session_steps():
    """Issue 24's floor-only ablation: the frozen LoCoMo recipe (flat's head kept at 0.5, ten rated units)
    with the session and walk pieces switched off from the command line, so the learner reorders the rest
    of best_flat's floor and nothing else."""
    cfg = _compose("+experiment=learning/locomo-linucb", "++dataset.hybrid.session=false",
                   "++dataset.hybrid.entity_walks=false")  # fmt: skip
    merged = TraversalConfig.from_dict(traversal_config(cfg))
    pieces = (merged.floor, merged.session, merged.entity_walks, merged.graph_walk)
    assert pieces == (True, False, False, False)
    assert (merged.floor_keep, merged.max_floor_paths, cfg.task.slate_size) == (0.5, 30, 10)


def test_any_kg_folder_composes_with_the_kg_task():
    cfg = _compose("task=kg", "dataset=kg", "dataset.spec=kg:umls", "dataset.path_length=2")
    assert cfg.task.name == "kg" and cfg.dataset.spec == "kg:umls" and cfg.dataset.path_length == 2


def _sweep(tmp_path: Path, name: str, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_RL_DATA": os.environ.get("SIGNET_RL_DATA", str(tmp_path))}
    cmd = [
        sys.executable, "-m", "signet_rl.train", "-m", *overrides,
        "dataset.spec=synthetic:tiny:0", "scorer=linucb", "task.max_interactions=6", "task.eval_every=0",
        "task.max_val_queries=5", "task.max_test_queries=8", "baselines=[]", "ceiling=false", "bootstrap=10",
        "progress=false", f"mlflow.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}",
        f"hydra.sweep.dir={tmp_path / name}", f"run_dir={tmp_path}/{name}-runs/${{hydra:job.num}}",
    ]  # fmt: skip
    return run_forked(cmd, cwd=ROOT, env=env, timeout=600)


def test_multirun_sweeps_traversal_with_one_mlflow_run_per_job_ended_and_named_by_its_overrides(tmp_path):
    done = _sweep(tmp_path, "sweep", "traversal.max_branching=2,4")
    assert done.returncode == 0, done.stderr[-3000:]
    # a sweep whose jobs fail (an unknown encoder, after their MLflow runs started)
    failed = _sweep(tmp_path, "failing", "encoder=bogus1,bogus2")
    assert failed.returncode == 1 and "unknown encoder 'bogus1'" in failed.stderr
    with warnings.catch_warnings():  # MLflow's SQLAlchemy store warns about its own loader options
        warnings.simplefilter("ignore")
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        exp = client.get_experiment_by_name("signet_rl-train")
        runs = client.search_runs([exp.experiment_id])
    by_sweep = {
        name: [r for r in runs if r.data.tags.get("sweep") == str(tmp_path / name)]
        for name in ("sweep", "failing")
    }
    parents = [r for r in by_sweep["sweep"] if "sweep_parent" in r.data.tags]
    jobs = [r for r in by_sweep["sweep"] if "sweep_parent" not in r.data.tags]
    assert len(parents) == 1 and len(jobs) == 2
    assert parents[0].info.status == "FINISHED"  # not RUNNING forever
    assert {r.data.tags["mlflow.parentRunId"] for r in jobs} == {parents[0].info.run_id}
    assert sorted(r.data.params["traversal.max_branching"] for r in jobs) == ["2", "4"]
    assert sorted(r.info.run_name for r in jobs) == ["traversal.max_branching=2", "traversal.max_branching=4"]
    assert all(r.info.status == "FINISHED" and "test/learned/needed_recall" in r.data.metrics for r in jobs)
    statuses = {r.info.run_name: r.info.status for r in by_sweep["failing"]}
    assert statuses == {"sweep failing": "FAILED", "encoder=bogus1": "FAILED", "encoder=bogus2": "FAILED"}


def test_a_dataset_without_queries_is_refused(tmp_path, signet_schema_path):
    import sqlite3

    db = tmp_path / "store.db"
    con = sqlite3.connect(db)
    con.executescript(Path(signet_schema_path).read_text())
    con.close()
    cfg = _compose(
        "dataset=signet", f"dataset.spec=signet:{db}", f"run_dir={tmp_path / 'run'}", "mlflow.enabled=false"
    )
    from signet_rl.train import train

    with pytest.raises(ValueError, match=r"has no queries; the bandit loop needs rated queries"):
        train(cfg)


def test_a_sweep_trial_with_test_table_off_evaluates_nothing_on_test(tmp_path):
    done = _sweep(tmp_path, "notest", "test_table=false", "traversal.max_branching=2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[test]" not in done.stdout and "needed_recall" not in done.stdout.split("val/")[0]
    final = json.loads(next((tmp_path / "notest-runs").glob("*/artifacts/final_metrics.json")).read_text())
    assert final and not [k for k in final if k.startswith(("test/", "baseline_flat/"))]
    assert not list((tmp_path / "notest-runs").glob("*/artifacts/table.txt"))


def test_fold_all_trains_on_every_query_then_evaluate_scores_the_policy_on_data_it_never_saw(tmp_path):
    """Issue 24 §3: for data the framework has never seen, the policy trains on all of the dev data
    (``learning_split.fold=all``: no validation, no test table); ``evaluate policy=`` scores it elsewhere."""
    env = {**os.environ, "SIGNET_RL_DATA": os.environ.get("SIGNET_RL_DATA", str(tmp_path))}
    run = tmp_path / "all"
    train = run_forked(
        [sys.executable, "-m", "signet_rl.train", "dataset.spec=synthetic:tiny:0", "scorer=linucb",
         "+dataset.learning_split={k: 3, fold: all, seed: 0, group: null}", "task.max_interactions=6",
         "task.eval_every=0", "baselines=[]", "ceiling=false", "progress=false", "mlflow.enabled=false",
         f"run_dir={run}"],
        cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr[-3000:]
    out = train.stdout
    assert "no test queries: synthetic:tiny:0 trained on every query (learning_split.fold=all)" in out
    hint = "dataset=synthetic dataset.spec=synthetic:tiny:0 dataset.data_root=<new data> learning_split=false"
    assert f"{hint} policy={run}" in out
    assert not (run / "artifacts" / "table.txt").exists() and (run / "checkpoint.pkl").exists()
    final = json.loads((run / "artifacts" / "final_metrics.json").read_text())
    assert not [k for k in final if k.startswith("test/")]
    evaluated = run_forked(
        [sys.executable, "-m", "signet_rl.evaluate", "dataset.spec=synthetic:tiny:1", f"policy={run}",
         "progress=false", "bootstrap=10", "max_queries=8"],
        cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert any(line.split()[:1] == ["learned"] for line in evaluated.stdout.splitlines()), evaluated.stdout
