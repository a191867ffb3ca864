"""``python -m signet_rl.train``: learn desire paths from ratings, evaluate against flat retrieval, log it.

A thin ``@hydra.main`` over :func:`train`, which returns the metric a sweeper optimises (a validation
metric, ``cfg.optimized_metric``; never a test one). ``task=bandit`` (the default) runs the bandit loop of
:mod:`signet_rl.learning.trainer` for the scorer ``scorer=<gnn|linucb|...>`` on ``dataset=<...>``;
``task=kg`` runs knowledge-graph path reasoning (:func:`signet_rl.kg.train.train_kg`).

    python -m signet_rl.train                                   # GNN scorer on synthetic:small
    python -m signet_rl.train scorer=linucb dataset=locomo
    python -m signet_rl.train -m traversal.max_branching=2,4,8 traversal.max_depth=2,3
    python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:kinship dataset.path_length=2

A run keeps its checkpoint in ``run_dir`` (by default derived from the command-line overrides, so the same
command finds it again): rerunning a killed command resumes where its last checkpoint stopped, and the
resumed run ends with the same metrics as an uninterrupted one. ``fresh=true`` starts over.

The bandit run logs to MLflow: the flattened config; over interactions the running mean rating, cumulative
regret against the oracle slate, explorer share and hit rate, validation recall / precision / F1 / nDCG (per
intent) and latency; at the end the test comparison against the flat baseline and the non-learned scorers
at the same budget (``test/<retriever>/<metric>``), off-policy estimates of the final policy
(``ope/<ips|snips|dr>``), and artifacts: the config, the checkpoint, the saved policy, the learning curve
(CSV and PNG), the comparison table and the feedback log (Parquet).
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from signet_rl import smoke
from signet_rl.datasets import load_dataset
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.learning.trainer import CHECKPOINT, BanditConfig, BanditTrainer, learning_curve_png
from signet_rl.retrieval.desire import DesirePathRetriever
from signet_rl.retrieval.flat import UNCAPPED, flat_variant
from signet_rl.scorers import make_scorer
from signet_rl.tracking import project_root

__all__ = ["build_scorer", "main", "train", "train_bandit", "traversal_config"]

TEST_METRICS = ("needed_recall", "precision", "f1", "ndcg@10", "mrr", "tokens", "zero_injection")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)  # libraries that still read the global stream
    torch.manual_seed(seed)


def traversal_config(cfg: DictConfig) -> dict[str, Any]:
    """The dataset's ``traversal`` block with the non-null ``traversal.*`` overrides on top."""
    def plain(node: Any) -> Any:
        return OmegaConf.to_container(node, resolve=True) if node is not None else {}

    base = plain(cfg.dataset.get("traversal"))
    over = plain(cfg.get("traversal"))
    assert isinstance(base, dict) and isinstance(over, dict)
    out = dict(base)
    out.update({k: v for k, v in over.items() if v is not None})
    return out


def build_scorer(cfg: DictConfig) -> Any:
    """The scorer ``cfg.scorer`` names (``name`` plus its constructor arguments)."""
    node = {str(k): v for k, v in dict(OmegaConf.to_container(cfg.scorer, resolve=True)).items()}  # type: ignore[arg-type]
    name = node.pop("name")
    return make_scorer(str(name), **node)


def run_dir(cfg: DictConfig) -> Path:
    path = Path(str(cfg.run_dir))
    return path if path.is_absolute() else project_root() / path


def train(cfg: DictConfig) -> float:
    """Train, evaluate and log the run ``cfg`` describes; returns ``cfg.optimized_metric`` (validation)."""
    if smoke.enabled():  # SIGNET_RL_SMOKE=1: the same code path in seconds (signet_rl.smoke)
        smoke.shrink_train(cfg)
    if str(cfg.task.get("name", "bandit")) == "kg":
        from signet_rl.kg.train import train_kg

        return float(train_kg(cfg))
    return train_bandit(cfg)


def train_bandit(cfg: DictConfig) -> float:
    """The bandit loop (see :mod:`signet_rl.learning.trainer`) with evaluation, MLflow and artifacts."""
    t0 = time.perf_counter()
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG
    seed = int(cfg.seed)
    seed_everything(seed)
    torch.set_num_threads(int(cfg.get("threads") or torch.get_num_threads()))
    out = run_dir(cfg)
    if cfg.get("fresh") and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    dataset = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.get("learning_split")
    if split is not None:  # datasets that ship every query as test: learn on some folds, test on another
        dataset = dataset.learning_split(
            k=int(split.k),
            fold=int(split.get("fold", 0)),
            seed=int(split.get("seed", 0)),
            group=split.get("group"),
        )
    if not dataset.queries:
        raise ValueError(f"dataset {dataset.name!r} has no queries; the bandit loop needs rated queries")
    traversal = traversal_config(cfg)
    task = {str(k): v for k, v in dict(OmegaConf.to_container(cfg.task, resolve=True)).items()}  # type: ignore[arg-type]
    task.pop("name", None)
    config = BanditConfig.from_dict(task)
    scorer = build_scorer(cfg)

    tracker = None
    mlcfg = cfg.get("mlflow") or {}
    if mlcfg.get("enabled", False):
        from signet_rl.tracking import TrainingRun, sweep_job

        id_file = out / "mlflow_run_id"
        resume_id = id_file.read_text().strip() if id_file.exists() and (out / CHECKPOINT).exists() else None
        job = sweep_job()  # a sweep's jobs are named by the overrides they sweep
        tracker = TrainingRun(
            cfg, experiment=mlcfg.get("experiment") or "signet_rl-train",
            tracking_uri=mlcfg.get("tracking_uri"), run_name=mlcfg.get("run_name") or
            (job.name if job else f"{scorer.name}-{dataset.name}-seed{seed}"), run_id=resume_id,
            sweep=job.dir if job else None,
            tags={"dataset": dataset.name, "scorer": scorer.name, "task": "bandit"},
        )  # fmt: skip
        id_file.write_text(tracker.run_id)

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        if tracker is not None:
            tracker.log_metrics(metrics, step)

    trainer = BanditTrainer(
        dataset, scorer, config, traversal=traversal, seed=seed, run_dir=out, encoder=str(cfg.encoder),
        on_eval=on_eval, progress=bool(cfg.get("progress", True)),
    )  # fmt: skip
    stop_after = cfg.get("stop_after")
    curve = trainer.run(stop_after=None if stop_after is None else int(stop_after))
    if trainer.step < len(trainer.schedule()):  # stopped early on purpose (stop_after): resume later
        if tracker is not None:
            tracker.finish("KILLED")
        print(f"stopped after {trainer.step} interactions; rerun the same command to resume from {out}")
        return math.nan

    # The final comparison on test queries, frozen policy, same budget, same queries.
    flat = flat_variant("flat_signet", encoder=str(cfg.encoder), **UNCAPPED)
    flat.name = "flat_signet_uncapped"
    extra: dict[str, Any] = {"flat_signet_uncapped": flat}
    for name in cfg.get("baselines") or []:
        extra[f"desire_{name}"] = DesirePathRetriever(
            name, config=traversal, encoder=str(cfg.encoder), name=f"desire_{name}"
        )
    if cfg.get("ceiling", True):
        extra["candidate_ceiling"] = DesirePathRetriever(
            OracleScorer(dataset), config=traversal, encoder=str(cfg.encoder), name="candidate_ceiling"
        )
    result = trainer.evaluate(
        "test", extra, n_boot=int(cfg.get("bootstrap", 1000)), max_queries=config.max_test_queries
    )
    print(result.table())
    summary = result.rows.groupby("retriever")[[m for m in TEST_METRICS if m in result.rows]].mean()
    final: dict[str, float] = {}
    for retriever, row in summary.iterrows():
        for metric, value in row.items():
            final[f"test/{retriever}/{metric}"] = float(value)
    final.update(trainer.ope())
    final.update({k: v for k, v in trainer.running_metrics().items()})
    final["seconds"] = time.perf_counter() - t0

    # Artifacts.
    art = out / "artifacts"
    art.mkdir(exist_ok=True)
    (art / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    import pandas as pd

    pd.DataFrame(curve).to_csv(art / "learning_curve.csv", index=False)
    flat_val = _flat_validation(trainer, flat)
    learning_curve_png(curve, art / "learning_curve.png", baselines=flat_val)
    (art / "table.txt").write_text(result.table() + "\n")
    (art / "per_intent.md").write_text(result.intent_tables()["md"])
    result.rows.to_csv(art / "per_query.csv", index=False)
    (art / "final_metrics.json").write_text(json.dumps(final, indent=2, sort_keys=True))
    save = getattr(scorer, "save", None)
    if save is not None:  # with the traversal it was trained with, which loading it restores
        save(art / "policy", traversal=traversal)
    if tracker is not None:
        tracker.log_metrics(final, trainer.step)
        tracker.log_artifacts(art)
        tracker.finish()
        print(f"MLflow run {tracker.run_id} in {tracker.uri}")
    name = str(cfg.get("optimized_metric") or "val/needed_recall")
    last = curve[-1] if curve else {}
    if name not in last:
        raise KeyError(f"optimized_metric {name!r} was not computed; have {sorted(last)}")
    print(f"{name} = {last[name]:.4f}; artifacts in {art}; {final['seconds']:.0f} s")
    return float(last[name])


def _flat_validation(trainer: BanditTrainer, flat: Any) -> dict[str, float]:
    """Flat retrieval's validation needed-recall, drawn as a reference line on the learning curve."""
    if not trainer.dataset.split("validation"):
        return {}
    from signet_rl.evaluation.harness import evaluate

    res = evaluate(
        trainer.dataset,
        {"flat": flat},
        split="validation",
        budget_chars=trainer.config.budget_chars,
        max_queries=trainer.config.max_val_queries,
        seed=trainer.seed,
        n_boot=1,
    )
    rows = res.rows[res.rows["n_needed"] > 0]
    return {"flat (validation)": float(rows["needed_recall"].mean())}


@hydra.main(config_path="../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> float:
    """Hydra entry point; returns ``cfg.optimized_metric`` (validation) for sweepers."""
    return train(cfg)


if __name__ == "__main__":
    main()
