"""``python -m signet_rl.evaluate``: the real config composes, runs on synthetic:tiny, logs one MLflow run;
bad inputs name the bad value; every config under conf/ composes and instantiates."""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from fork_runner import run_forked
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

from signet_rl.datasets.registry import parse_spec
from signet_rl.evaluate import evaluate_from_config
from signet_rl.retrieval.base import Retriever

CONF = Path(__file__).resolve().parents[1] / "conf"
ROOT = CONF.parent
TINY = ["dataset.spec=synthetic:tiny", "bootstrap=100"]


def _cfg(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("evaluate", overrides=list(overrides))


HEADLINE = (
    "best_flat", "flat_signet_uncapped", "desire_prior", "desire_ppr", "desire_random", "candidate_ceiling",
    "flat_signet",
)  # fmt: skip


def test_evaluate_from_config_shows_the_headline_table_on_tiny(capsys):
    """best_flat, flat_signet, the non-learned desire scorers and the ceiling, same queries; best_flat is the
    logged flat baseline."""
    cfg = _cfg(*TINY, "mlflow.enabled=false")
    metrics = evaluate_from_config(cfg)
    out = capsys.readouterr().out
    for name in HEADLINE:
        assert name in out
        assert f"retrieval/{name}/f1" in metrics
    assert "synthetic:tiny:0 [test] 16 queries" in out
    assert re.search(r"flat_signet +none", out)  # the own-caps variant is marked, not paired
    assert metrics[cfg.optimized_metric] == metrics["retrieval/best_flat/f1"] == metrics["baseline_flat/f1"]
    assert "retrieval/desire_ppr/vs_baseline/f1_low" in metrics
    assert not any(k.startswith("retrieval/flat_signet/vs_baseline") for k in metrics)


def test_hydra_entry_point_logs_one_mlflow_run_anchored_at_the_project(tmp_path):
    """``python -m signet_rl.evaluate`` from ``tmp_path`` (the "project"), with Hydra changing into its run
    directory: the relative tracking URI still lands in ``tmp_path``, and the run holds the prefixed
    metrics, the params, the artifacts and the tags."""
    from mlflow.tracking import MlflowClient

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = run_forked(
        # generator v1: its 8 test queries include non-queries, so zero_injection_accuracy is logged
        [sys.executable, "-m", "signet_rl.evaluate", *TINY, "dataset.options.version=1", "max_queries=8",
         "mlflow.experiment=test-eval",
         "mlflow.tracking_uri=sqlite:///mlflow.db", "hydra.job.chdir=true", "hydra.run.dir=outputs/run"],
        cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "best_flat" in proc.stdout and "8 queries" in proc.stdout
    db = tmp_path / "mlflow.db"
    assert db.exists() and not (tmp_path / "outputs" / "run" / "mlflow.db").exists()
    assert (tmp_path / "outputs" / "run" / ".hydra" / "config.yaml").exists()

    with warnings.catch_warnings():  # MLflow's sqlite store trips SQLAlchemy 2.1 deprecations
        warnings.simplefilter("ignore", DeprecationWarning)
        client = MlflowClient(tracking_uri=f"sqlite:///{db}")
        exp = client.get_experiment_by_name("test-eval")
    assert exp is not None and exp.artifact_location == (tmp_path / "mlruns").as_uri()
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    logged = run.data.metrics
    for name in HEADLINE:
        for metric in (
            "needed_recall",
            "f1",
            "ndcg_at_10",
            "mrr",
            "zero_injection_accuracy",
            "latency_p95_ms",
        ):
            assert f"retrieval/{name}/{metric}" in logged
    assert logged["baseline_flat/f1"] == logged["retrieval/best_flat/f1"]
    assert "retrieval/flat_signet_uncapped/vs_baseline/f1_low" in logged
    assert "retrieval/best_flat/intent/changed/needed_recall" in logged
    params = run.data.params
    assert params["dataset.spec"] == "synthetic:tiny"
    assert params["budget_chars"] == "2000" and params["max_queries"] == "8"
    assert params["retrievers.flat_signet_uncapped.name"] == "flat_signet_uncapped"
    assert re.fullmatch(r"[0-9a-f]{16}", params["dataset_hash"])
    tags = run.data.tags
    assert tags["dataset"] == "synthetic:tiny:0" and tags["split"] == "test"
    assert tags["git_commit"] == "unknown"  # tmp_path is no git checkout
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"per_intent.csv", "per_intent.md", "config.yaml", "per_query.csv"} <= artifacts
    local = Path(client.download_artifacts(run.info.run_id, "config.yaml", str(tmp_path)))
    assert "spec: synthetic:tiny" in local.read_text()
    per_intent = (tmp_path / "mlruns").rglob("per_intent.md")
    assert next(per_intent).read_text().startswith("| retriever | intent | budget |")


def test_tracking_uri_is_absolute_and_anchored(tmp_path, monkeypatch):
    from signet_rl.tracking import default_tracking_uri, flatten_config, git_commit, resolve_tracking_uri

    monkeypatch.chdir(tmp_path)
    assert default_tracking_uri() == f"sqlite:///{tmp_path}/mlflow.db"
    assert resolve_tracking_uri(None) == f"sqlite:///{tmp_path}/mlflow.db"
    assert resolve_tracking_uri("sqlite:///runs/m.db") == f"sqlite:///{tmp_path}/runs/m.db"
    assert resolve_tracking_uri("store") == f"sqlite:///{tmp_path}/store/mlflow.db"
    assert resolve_tracking_uri("/abs/x.db") == "sqlite:////abs/x.db"
    assert resolve_tracking_uri("http://localhost:5000") == "http://localhost:5000"
    assert git_commit(tmp_path) == "unknown"
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", git_commit(ROOT))
    flat = flatten_config(OmegaConf.create({"a": {"b": 1, "c": [5, 10], "d": None, "e": {}}}))
    assert flat == {"a.b": "1", "a.c": "[5, 10]", "a.d": "null", "a.e": "{}"}


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        (
            ["budget_chars=0"],
            ValueError,
            "budget_chars must be a positive number of characters or null, got 0",
        ),
        (["budget_chars=-100"], ValueError, "got -100"),
        (["dataset.spec=nope"], ValueError, "unknown dataset 'nope'"),
        (["dataset.spec=synthetic:huge"], ValueError, "huge"),
        (["retrievers.flat_signet_uncapped.name=flat_nope"], ValueError, "flat_nope"),
        (["split=dev"], ValueError, "unknown split 'dev'"),
        (["baseline=flat_nope"], ValueError, "baseline 'flat_nope' is not among"),
        (["~retrievers", "~own_caps"], ValueError, "no retrievers to evaluate"),
        (["ks=[0]"], ValueError, "ks must be positive integers, got [0]"),
    ],
)
def test_bad_inputs_name_the_value(overrides, error, message):
    cfg = _cfg(*TINY, "mlflow.enabled=false", *overrides)
    with pytest.raises(error, match=re.escape(message)):
        evaluate_from_config(cfg)


def test_unknown_retriever_error_names_the_config_key():
    cfg = _cfg(*TINY, "mlflow.enabled=false", "retrievers.flat_signet_uncapped.name=flat_nope")
    with pytest.raises(ValueError, match=r"retrievers\.flat_signet_uncapped: cannot build retriever"):
        evaluate_from_config(cfg)


# ----------------------------------------------------------------------------------------------------
# Every config composes and instantiates: a broken YAML cannot land.


def _targets(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """The outermost ``_target_`` nodes of a config."""
    if isinstance(node, DictConfig):
        if "_target_" in node:
            return [(path, node)]
        return [hit for k, v in node.items_ex(resolve=False) for hit in _targets(v, f"{path}.{k}".strip("."))]
    if isinstance(node, ListConfig):
        return [hit for i, v in enumerate(node) for hit in _targets(v, f"{path}[{i}]")]
    return []


def _check(cfg: DictConfig) -> None:
    if "dataset" in cfg and not OmegaConf.is_missing(cfg.dataset, "spec"):
        parse_spec(cfg.dataset.spec)
    for path, node in _targets(cfg):
        obj = instantiate(node)
        assert obj is not None, path
        if path.startswith(("retrievers.", "own_caps.")):
            assert isinstance(obj, Retriever), path


PRIMARY = sorted(p.stem for p in CONF.glob("*.yaml"))
GROUPS = sorted(
    (d.name, p.stem) for d in CONF.iterdir() if d.is_dir() and d.name != "hydra" for p in d.glob("*.yaml")
)


@pytest.mark.parametrize("name", PRIMARY)
def test_every_primary_config_composes_and_instantiates(name, monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        _check(compose(name))


@pytest.mark.parametrize(("group", "option"), GROUPS)
def test_every_config_group_composes_into_evaluate_and_instantiates(group, option, monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        plus = "" if group in compose("evaluate") else "+"
        cfg = compose("evaluate", overrides=[f"{plus}{group}={option}"])
    _check(cfg)


def test_desire_vs_flat_experiment_runs_on_tiny(capsys):
    cfg = _cfg(*TINY, "+experiment=desire_vs_flat", "mlflow.enabled=false")
    metrics = evaluate_from_config(cfg)
    out = capsys.readouterr().out
    for name in ("desire_prior", "desire_ppr", "desire_random", "flat_signet_uncapped"):
        assert f"retrieval/{name}/needed_recall" in metrics and name in out
    # the dataset's traversal overrides reach the retriever
    from hydra.utils import instantiate

    r = instantiate(cfg.retrievers.desire_prior)
    assert r.config.max_depth == cfg.dataset.traversal.max_depth == 2


@pytest.mark.parametrize("ablation", ["floor", "walks"])
def test_hybrid_entry_ablations_run_with_hipporag_ppr_and_report_the_walk_share(ablation, capsys):
    cfg = _cfg(*TINY, f"+experiment=hybrid/{ablation}", "mlflow.enabled=false", "ceiling=false")
    metrics = evaluate_from_config(cfg)
    out = capsys.readouterr().out
    assert "retrieval/hipporag_ppr/needed_recall" in metrics and "walk_share" in out and "pool" in out
    from hydra.utils import instantiate

    r = instantiate(cfg.retrievers.desire_prior)
    assert r.config.floor and r.config.entity_walks == (ablation == "walks") and not r.config.graph_walk


KG_REFUSAL = (
    "dataset 'kg:kinship' is a knowledge-graph reasoning benchmark: it has no memories for evaluate's "
    "retrievers to retrieve, so every score would be 0. Train and evaluate a walker on it with the KG task: "
    "python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:kinship"
)


@pytest.mark.parametrize("group", ["kg", "kinship"])
def test_a_kg_dataset_is_refused_before_it_loads(group, tmp_path, monkeypatch):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))  # empty: the refusal must come before any loading
    with pytest.raises(ValueError, match=re.escape(KG_REFUSAL)):
        evaluate_from_config(_cfg(f"dataset={group}", "dataset.spec=kg:kinship", "mlflow.enabled=false"))


def test_evaluate_on_a_kg_dataset_exits_non_zero_pointing_at_task_kg(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIGNET_RL_DATA": str(tmp_path)}
    proc = run_forked(
        [sys.executable, "-m", "signet_rl.evaluate", "dataset=kg", "dataset.spec=kg:kinship",
         "mlflow.enabled=false", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert KG_REFUSAL in proc.stderr
    assert "needed_recall" not in proc.stdout  # no all-zero table


def test_a_signet_spec_without_its_config_says_so(tmp_path):
    db = tmp_path / "memories.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = run_forked(
        [sys.executable, "-m", "signet_rl.evaluate", f"dataset.spec=signet:{db}", "mlflow.enabled=false",
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert (
        f"dataset 'signet:{db}' takes the options ['extract', 'extract_encoder', 'timeout'], "
        "not ['drift', 'version']; those come from another "
        "dataset's config: on the command line pass the dataset's own config with its spec, "
        f"dataset=signet dataset.spec=signet:{db}"
    ) in proc.stderr


def test_a_dataset_with_a_learning_split_is_evaluated_on_its_test_fold(real_dataset, capsys):
    """LoCoMo ships every question as test; evaluate scores the learning split's test fold only, never the
    validation fold best_flat was chosen on (learning_split=false: every question). One cheap retriever and
    no candidate ceiling (a desire-path walk per query): only which queries are scored is under test."""
    full = real_dataset("locomo")
    fold = full.learning_split(k=5, fold=0, seed=0, group="graph")
    n_test = len(fold.split("test"))
    assert 0 < n_test < len(full.queries)
    only = ["dataset=locomo", "~retrievers", "~own_caps", "+retrievers.flat_bm25_open={_target_: "
            "signet_rl.retrieval.flat.flat_variant, name: flat_bm25_open}", "ceiling=false", "baseline=null",
            "bootstrap=10", "mlflow.enabled=false"]  # fmt: skip
    evaluate_from_config(_cfg(*only))
    assert f"locomo [test] {n_test} queries" in capsys.readouterr().out
    evaluate_from_config(_cfg(*only, "learning_split=false"))
    assert f"locomo [test] {len(full.queries)} queries" in capsys.readouterr().out
