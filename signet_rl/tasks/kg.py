"""``python -m signet_rl.train task=kg``: the KG path-reasoning task, from a Hydra config to printed results.

The library (:mod:`signet_rl.kg`) knows nothing of Hydra or MLflow; this module is the layer between:

* :func:`kg_config` turns ``cfg.task`` / ``cfg.dataset`` / ``cfg.seed`` / ``cfg.threads`` into a validated
  :class:`~signet_rl.kg.config.KGConfig` (bad values are named before any data loads);
* :func:`run_kg` honours ``fresh=true`` (removing only the files a KG run writes), runs
  :class:`~signet_rl.kg.trainer.KGTrainer` in ``cfg.run_dir`` and logs the run to MLflow through
  :class:`signet_rl.tracking.TrainingRun` when ``cfg.mlflow.enabled``;
* :func:`train_kg` does that, prints the validation and test table beside the in-run anchors, the MLflow run
  and where the results and the checkpoint are, and returns ``cfg.optimized_metric``'s validation value
  (default ``val/kg_walk/mrr``; test figures are reported, never optimised).

    python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:kinship dataset.path_length=2
    python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:umls +experiment=kg/regularised_sum
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from signet_rl.kg.config import KGConfig
from signet_rl.kg.trainer import CHECKPOINT, CONFIG, RESULTS, KGTrainer, clear_run

__all__ = [
    "DEFAULT_METRIC",
    "METRICS",
    "flat_metrics",
    "format_results",
    "kg_config",
    "metric_names",
    "optimized_value",
    "run_kg",
    "train_kg",
]

#: What :func:`train_kg` returns when ``cfg.optimized_metric`` is null.
DEFAULT_METRIC = "val/kg_walk/mrr"
#: The figures each ranked model gets on a split.
METRICS = ("hits@1", "hits@3", "hits@10", "mrr", "n", "misses")


def _plain(node: Any) -> dict[str, Any]:
    if node is None:
        return {}
    out = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


def kg_config(cfg: DictConfig) -> KGConfig:
    """The :class:`KGConfig` of ``cfg`` (``task``, ``dataset``, ``seed``, ``threads``); raises ``ValueError``
    naming a bad key or value."""
    return KGConfig.from_dicts(
        _plain(cfg.task), _plain(cfg.dataset), int(cfg.get("seed") or 0), cfg.get("threads")
    )


def metric_names(config: KGConfig) -> list[str]:
    """Every name ``optimized_metric`` may take for this run: ``val/<model>/<metric>`` for the walker
    (``kg_walk``) and each in-run anchor (``anchor_<name>``)."""
    models = ["kg_walk", *(f"anchor_{a}" for a in config.task.anchors)]
    return [f"val/{model}/{m}" for model in models for m in METRICS]


def _metric_name(cfg: DictConfig, config: KGConfig) -> str:
    name = str(cfg.get("optimized_metric") or DEFAULT_METRIC)
    if name.startswith("validation/"):  # the MLflow spelling
        name = "val/" + name[len("validation/") :]
    names = metric_names(config)
    if name not in names:
        raise ValueError(
            f"optimized_metric={cfg.get('optimized_metric')!r} is not a metric of task=kg; available: "
            f"{', '.join(names)}"
        )
    return name


def optimized_value(results: Mapping[str, Any], name: str) -> float:
    """The validation figure ``name`` (``val/<model>/<metric>``) of ``results``; NaN when the dataset has no
    validation split."""
    return float((results.get("validation") or {}).get(name[len("val/") :], math.nan))


def _run_dir(cfg: DictConfig) -> Path | None:
    """The run folder, resolved by the entry point's rule (``signet_rl.train.run_dir``: the one every task
    shares, relative paths anchored at the project root); None when ``cfg.run_dir`` is null."""
    if not cfg.get("run_dir"):
        return None
    from signet_rl.train import run_dir

    return run_dir(cfg)


def run_kg(cfg: DictConfig, on_batch: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train and evaluate the walker ``cfg`` describes; return its results (see
    :meth:`KGTrainer.run <signet_rl.kg.trainer.KGTrainer.run>`), plus ``results["mlflow"]`` (run id, name,
    tracking URI) when the run was logged.

    ``cfg.run_dir`` (may be null: no files) holds the checkpoint, anchors, ``config.yaml`` and
    ``results.json``; the same command resumes from it, ``fresh=true`` starts over (deleting only those
    files). ``on_batch`` is called with the batches done after each batch.
    """
    config = kg_config(cfg)
    run_dir = _run_dir(cfg)
    if cfg.get("fresh") and run_dir is not None:
        removed = clear_run(run_dir)
        if removed:
            print(f"fresh=true: removed {len(removed)} files of the earlier run in {run_dir}")
    record = _plain(cfg)
    results = KGTrainer(config, run_dir, record, on_batch).run()
    mlflow = cfg.get("mlflow")
    if mlflow is not None and bool(mlflow.get("enabled", False)):
        results["mlflow"] = log_results(results, cfg)
    return results


def train_kg(cfg: DictConfig) -> float:
    """:func:`run_kg`, then print the results table, the MLflow run and the run folder; returns
    ``cfg.optimized_metric``'s validation value (checked against the available names before training)."""
    name = _metric_name(cfg, kg_config(cfg))
    results = run_kg(cfg)
    print(format_results(results))
    logged = results.get("mlflow")
    if logged:
        print(f"MLflow run {logged['run_id']} ({logged['run_name']}) in {logged['tracking_uri']}")
    folder = _run_dir(cfg)
    if folder is not None:
        print(f"run folder {folder}: {RESULTS}, {CHECKPOINT} (the same command resumes it), {CONFIG}")
    value = optimized_value(results, name)
    print(f"{name} = {value:.4f}")
    return value


def format_results(results: Mapping[str, Any]) -> str:
    """What the run did (batches, what stopped it, which weights were tested) and a table of filtered
    Hits@1/3/10 and MRR (×100) per split, the walker beside each in-run anchor."""
    tr = results.get("train") or {}
    stop = {
        "batches": "its batch budget",
        "time_budget_s": "the time budget",
        "patience": "patience (no new best validation MRR)",
    }.get(str(tr.get("stopped_by")), str(tr.get("stopped_by")))
    lines = [
        f"{results['dataset']} seed {results['seed']}: {tr.get('batches', 0):,} of "
        f"{tr.get('total_batches', 0):,} batches in {tr.get('seconds', 0.0):.0f} s of training, "
        f"ended by {stop}; "
        f"tested the weights of batch {tr.get('selected_batch', 0):,}",
        f"{'split':<11} {'model':<18} {'n':>6} {'misses':>6} {'H@1':>6} {'H@3':>6} {'H@10':>6} {'MRR':>6}",
    ]
    for split in ("validation", "test"):
        metrics = results.get(split) or {}
        if split == "test" and not metrics:
            lines.append(f"{split:<11} not ranked (a probe run: task.rank_test=false)")
        models = sorted({k.split("/", 1)[0] for k in metrics}, key=lambda m: (m != "kg_walk", m))
        for model in models:
            m = {k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith(f"{model}/")}
            lines.append(
                f"{split:<11} {model:<18} {int(m.get('n', 0)):>6} {int(m.get('misses', 0)):>6} "
                + " ".join(f"{100 * m[k]:>6.1f}" for k in ("hits@1", "hits@3", "hits@10", "mrr"))
            )
    return "\n".join(lines)


def flat_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """``<split>/<model>/<metric>`` for every finite evaluation figure, plus ``train/...`` figures."""
    out: dict[str, float] = {}
    for split in ("validation", "test"):
        for k, v in (results.get(split) or {}).items():
            if isinstance(v, int | float) and math.isfinite(v):
                out[f"{split}/{k}"] = float(v)
    for k, v in (results.get("train") or {}).items():
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[f"train/{k}"] = float(v)
    return out


def log_results(results: Mapping[str, Any], cfg: DictConfig) -> dict[str, str]:
    """Log one finished run to MLflow: the flattened config as params, :func:`flat_metrics` at step 0, the
    validation curve by batch (``curve/validation/kg_walk/<mrr|hits@1>``), ``results.json`` and
    ``config.yaml`` as artifacts, tags ``dataset``/``task``/``git_commit``. Returns the run's id, name and
    tracking URI."""
    from signet_rl.tracking import TrainingRun

    ml = cfg.mlflow
    name = str(ml.get("run_name") or f"kg_walk-{results['dataset']}-seed{results['seed']}")
    run = TrainingRun(
        cfg,
        experiment=str(ml.get("experiment") or "signet_rl-kg"),
        tracking_uri=ml.get("tracking_uri"),
        run_name=name,
        tags={"dataset": str(results["dataset"]), "task": "kg"},
    )
    try:
        run.log_metrics(flat_metrics(results), 0)
        run.log_history(
            (int(point["batch"]), {f"curve/validation/kg_walk/{k}": point[k] for k in ("mrr", "hits@1")})
            for point in results.get("curve") or []
        )
        with tempfile.TemporaryDirectory(prefix="signet_rl-kg-") as tmp:
            kept = {k: v for k, v in results.items() if k != "mlflow"}
            Path(tmp, RESULTS).write_text(json.dumps(kept, indent=2, default=float))
            Path(tmp, CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
            run.log_artifacts(tmp)
    except BaseException:
        run.finish("FAILED")
        raise
    run.finish()
    return {"run_id": run.run_id, "run_name": name, "tracking_uri": run.uri}
