"""Choose the learned scorer's settings over the hybrid entry on VALIDATION queries only (issue 24).

One bandit run of ``python -m signet_rl.train``'s configuration (the same Hydra config, overrides and all:
the hybrid entry's candidates and the residual over the floor by default), then the frozen policy and
``best_flat`` on the validation split (never the test split), with the paired difference learned −
best_flat and its 95% bootstrap interval, overall and per QA category (the category is read by the
evaluation harness only, never by the policy). Prints one JSON object.

    python experiments/hybrid_learned_validation.py dataset=locomo encoder=minilm scorer=linucb task.epochs=1
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.retrieval.flat import best_flat
from signet_rl.scorers import PRE_SWEEP_DEFAULTS
from signet_rl.tracking import project_root
from signet_rl.train import build_scorer, seed_everything, traversal_config


def paired(a: np.ndarray, b: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """Mean of ``a - b`` with a percentile bootstrap 95% interval over queries."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not len(d):
        return {"diff": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": 0}
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"diff": float(d.mean()), "lo": float(lo), "hi": float(hi), "n": int(len(d))}


def compose_config(argv: list[str]) -> DictConfig:
    """The run's config: ``conf/train.yaml`` with ``argv``, and the learned scorer's pre-sweep settings
    (``PRE_SWEEP_DEFAULTS``) for every key neither the command line nor a recipe sets."""
    with initialize_config_dir(config_dir=str(project_root() / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=argv)
    # the learned scorers' pre-sweep settings, unless given on the command line or by a recipe
    # (``+experiment=...``, whose own scorer block wins): this script's reported runs predate issue 25 §3's
    # sweep-tuned defaults
    given = {a.lstrip("+").split("=", 1)[0].removeprefix("scorer.") for a in argv if "scorer." in a}
    if not any(a.lstrip("+").startswith("experiment=") for a in argv):
        for key, value in PRE_SWEEP_DEFAULTS.get(str(cfg.scorer.name), {}).items():
            if key not in given:
                cfg.scorer[key] = value
    return cfg


def main(argv: list[str]) -> dict[str, Any]:
    cfg = compose_config(argv)
    torch.set_num_threads(1)
    seed = int(cfg.seed)
    traversal = traversal_config(cfg)
    task = {str(k): v for k, v in dict(OmegaConf.to_container(cfg.task, resolve=True)).items()}  # type: ignore[arg-type]
    task.pop("name", None)
    config = BanditConfig.from_dict(task)
    seed_everything(seed)
    scorer = build_scorer(cfg, traversal)
    seed_everything(seed)
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    ds = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.learning_split
    ds = ds.learning_split(
        k=int(split.k), fold=int(split.fold), seed=int(split.seed), group=split.get("group")
    )
    t0 = time.perf_counter()
    trainer = BanditTrainer(ds, scorer, config, traversal=traversal, seed=seed, encoder=str(cfg.encoder),
                            progress=False)  # fmt: skip
    untrained = trainer.frozen("untrained")
    trainer.run()
    seconds = time.perf_counter() - t0
    res = evaluate(
        ds, {"best_flat": best_flat(str(cfg.dataset.spec)), "untrained": untrained,
             "learned": trainer.frozen("learned")},
        split="validation", budget_chars=config.budget_chars, max_queries=config.max_val_queries, seed=seed,
        n_boot=1, progress=False,
    )  # fmt: skip
    rows = res.rows[res.rows["n_needed"] > 0]
    wide = rows.pivot_table(index="query_id", columns="retriever", values="needed_recall")
    out: dict[str, Any] = {
        "overrides": argv,
        "scorer": OmegaConf.to_container(cfg.scorer, resolve=True),
        "traversal": traversal,
        "interactions": trainer.step,
        "train_queries": len(trainer.train_queries),
        "train_seconds": seconds,
        "queries": int(len(wide)),
        "needed_recall": {r: float(wide[r].mean()) for r in wide.columns},
        "learned-best_flat": paired(wide["learned"].to_numpy(), wide["best_flat"].to_numpy()),
        "untrained-best_flat": paired(wide["untrained"].to_numpy(), wide["best_flat"].to_numpy()),
    }
    for col in ("walk_share", "floor_rest_share", "floor_deep_share", "precision", "recall@5"):
        if col in rows:
            out[col] = {str(r): float(v) for r, v in rows.groupby("retriever")[col].mean().items()}
    cat = "category" if "category" in rows else None
    if cat is not None:
        per = rows.pivot_table(index=[cat, "query_id"], columns="retriever", values="needed_recall")
        out["by_category"] = {
            str(c): {"n": int(len(g)), **{r: float(g[r].mean()) for r in g.columns}}
            for c, g in per.groupby(level=0)
        }
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1, default=float))
