"""Tune a learned scorer on VALIDATION queries only: one bandit run, then the frozen policy and the
non-learned scorers on the validation split at each budget (never the test split).

Prints one JSON object: the run's settings, the learning curve (validation nDCG@10 / recall by interactions)
and, per retriever and budget, validation nDCG@10 and needed recall. Used to choose the defaults in
``conf/scorer/gnn.yaml`` and ``conf/scorer/linucb.yaml`` (docs/results.md, "Learned scorer: tuning").

    python experiments/learned_validation.py --spec synthetic:small:0 --scorer gnn --set lr=0.003

``--template-holdout`` runs on :func:`~signet_rl.datasets.synthetic_v2.template_holdout`'s inner split instead
(test queries dropped): training on the kept templates' training queries, ``val`` on the held-out template
family, ``in_family`` on the kept templates' validation queries, and paired learned − desire_fused intervals
on both (what a template shift costs, measured without the test split).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch
import yaml

from signet_rl.datasets import load_dataset
from signet_rl.datasets.synthetic_v2 import template_holdout
from signet_rl.evaluation.harness import evaluate, validation_callback
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers import PRE_SWEEP_DEFAULTS, make_scorer
from signet_rl.tracking import project_root

TRAVERSAL = {"max_branching": 4, "max_paths": 50, "max_depth": 2, "min_confidence": 0.5}


def _value(text: str) -> Any:
    return yaml.safe_load(text)


def run(spec: str, version: int, scorer_name: str, overrides: dict[str, Any], task: dict[str, Any],
        budgets: list[int], baselines: list[str], seed: int,
        holdout: bool = False) -> dict[str, Any]:  # fmt: skip
    torch.set_num_threads(1)
    conf = yaml.safe_load((project_root() / "conf" / "scorer" / f"{scorer_name}.yaml").read_text())
    conf.pop("name")
    conf.update(PRE_SWEEP_DEFAULTS.get(scorer_name, {}))  # its reported runs predate issue 25 §3's defaults
    conf.update(overrides)
    ds = load_dataset(spec, options={"version": version})
    if holdout:
        ds = template_holdout(ds)
    torch.manual_seed(seed)
    scorer = make_scorer(scorer_name, **conf)
    bandit = yaml.safe_load((project_root() / "conf" / "task" / "bandit.yaml").read_text())
    bandit.pop("name")
    bandit.update(task)
    config = BanditConfig.from_dict(bandit)
    t0 = time.perf_counter()
    trainer = BanditTrainer(
        ds, scorer, config, traversal=TRAVERSAL, seed=seed, progress=False,
        validate=validation_callback(ds, config.budget_chars, config.max_val_queries, seed),
    )  # fmt: skip
    curve = trainer.run()
    seconds = time.perf_counter() - t0
    named: dict[str, Any] = {"learned": trainer.frozen("learned")}
    for name in baselines:
        # an oracle: evaluation only; the others as reported (the 90-day prior of PRE_SWEEP_DEFAULTS)
        scorer_or_name: Any = (OracleScorer(ds) if name == "ceiling"
                               else make_scorer(name, **PRE_SWEEP_DEFAULTS.get(name, {})))  # fmt: skip
        named[f"desire_{name}"] = DesirePathRetriever(scorer_or_name, config=TRAVERSAL, encoder="hashing")
    out: dict[str, Any] = {"spec": spec, "version": version, "scorer": scorer_name, "overrides": overrides,
                           "task": task, "seed": seed, "train_seconds": round(seconds, 1),
                           "curve": [{k: round(v, 4) for k, v in row.items()
                                      if k in ("interactions", "val/ndcg@10", "val/needed_recall")}
                                     for row in curve], "val": {}}  # fmt: skip
    splits = {"val": "validation", **({"in_family": "test"} if holdout else {})}
    for key, split in splits.items():
        out.setdefault(key, {})
        for budget in budgets:
            res = evaluate(ds, named, split=split, budget_chars=budget, max_queries=config.max_val_queries,
                           seed=seed, n_boot=1)  # fmt: skip
            rows = res.rows[res.rows["n_needed"] > 0]
            for name, g in rows.groupby("retriever"):
                out[key][f"{name}@{budget}"] = {
                    "ndcg@10": round(float(g["ndcg@10"].mean()), 4),
                    "needed_recall": round(float(g["needed_recall"].mean()), 4),
                }
            if "desire_fused" in named:
                from gnn_targets import paired  # this script's folder is on sys.path when run as a file

                p = paired(res.rows.assign(seed=seed, budget=str(budget)), "learned", "desire_fused",
                           "ndcg@10", budget)  # fmt: skip
                out[key][f"learned-fused@{budget}"] = {k: round(v, 4) for k, v in p.items()}
                # a time-shift check without the test split: the earlier and the later half of these
                # queries by timestamp (test lies later still)
                when = {q.id: q.timestamp for q in ds.split(split)}
                wide = rows.pivot(index="query_id", columns="retriever", values="ndcg@10")
                order = sorted(wide.index, key=lambda qid: when[qid])
                half = len(order) // 2
                for part, ids in (("early", order[:half]), ("late", order[half:])):
                    diff = wide.loc[ids, "learned"] - wide.loc[ids, "desire_fused"]
                    out[key][f"learned-fused@{budget}:{part}"] = round(float(diff.mean()), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="synthetic:small:0")
    ap.add_argument("--version", type=int, default=2)
    ap.add_argument("--scorer", default="gnn")
    ap.add_argument("--set", nargs="*", default=[], help="scorer overrides key=value")
    ap.add_argument("--task", nargs="*", default=[], help="bandit overrides key=value")
    ap.add_argument("--budgets", type=int, nargs="+", default=[400, 2000])
    ap.add_argument("--baselines", nargs="*", default=["prior", "ppr", "fused", "ceiling"],
                    help="non-learned scorers (and 'ceiling', the oracle over the candidates)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--template-holdout", action="store_true",
                    help="train and validate on the inner template-shift split (no test queries)")
    args = ap.parse_args()
    over = {k: _value(v) for k, v in (s.split("=", 1) for s in args.set)}
    task = {k: _value(v) for k, v in (s.split("=", 1) for s in args.task)}
    print(json.dumps(run(args.spec, args.version, args.scorer, over, task, args.budgets, args.baselines,
                         args.seed, args.template_holdout)))  # fmt: skip


if __name__ == "__main__":
    main()
