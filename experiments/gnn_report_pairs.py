"""Paired test intervals for the learned-scorer report's GNN runs (issue 25): the trained GNN of the
``medium-gnn`` / ``tight-gnn`` runs (``runs/report/``, ``python experiments/learning_report.py``) against
``desire_fused``, LinUCB, Signet's predictor (the same recipes' runs, same test queries and budget) and its
own ``layers=0`` ablation (the same recipe with ``scorer.layers=0``, run folders under ``--l0``), pooled over
run seeds; and sample efficiency: interactions until the validation curve first reaches 90% of its final
gain over the untrained policy. The untrained default GNN ranks exactly as ``desire_fused``
(``zero_residual``), so its validation value is desire_fused's on the same validation queries.

    python experiments/gnn_report_pairs.py --l0 runs/scratch/l25b
    python experiments/gnn_report_pairs.py --l0 runs/scratch/l25f --prior-half-life 1.9664395166409434
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gnn_targets import paired

ROOT = Path(__file__).resolve().parents[1]


def _rows(folder: Path, label: str, seed: int, keep: tuple[str, ...] | None = None) -> pd.DataFrame:
    r = pd.read_csv(folder / "artifacts" / "per_query.csv", dtype={"budget": str})
    if keep is not None:
        r = r[r["retriever"].isin(keep)]
    r = r.assign(seed=seed)
    r.loc[r["retriever"] == "learned", "retriever"] = label
    return r


def _fused_validation(folder: Path, seed: int) -> float:
    """desire_fused's validation nDCG@10 on the run's validation queries (its curve's callback)."""
    from omegaconf import OmegaConf

    from signet_rl.datasets import load_dataset
    from signet_rl.evaluation.harness import validation_callback
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.train import traversal_config

    cfg = yaml.safe_load((folder / "artifacts" / "config.yaml").read_text())
    ds = load_dataset(cfg["dataset"]["spec"], options=cfg["dataset"].get("options") or {})
    task = cfg["task"]
    validate = validation_callback(ds, task["budget_chars"], task["max_val_queries"], seed)
    traversal = traversal_config(OmegaConf.create(cfg))  # the run's own walk (issue 25 §3: traversal_best)
    return validate(DesirePathRetriever("fused", config=traversal, encoder="hashing"))["val/ndcg@10"]


def _prior_rows(folder: Path, seed: int, days: float) -> pd.DataFrame:
    """The non-learned prior at another half-life (``desire_prior_<days>d``) on the run's own test queries,
    budget and walk: a row the run did not print, evaluated as its closing comparison would have."""
    from omegaconf import OmegaConf

    from signet_rl.datasets import load_dataset
    from signet_rl.evaluation.harness import evaluate
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.scorers import make_scorer
    from signet_rl.train import traversal_config

    cfg = yaml.safe_load((folder / "artifacts" / "config.yaml").read_text())
    ds = load_dataset(cfg["dataset"]["spec"], options=cfg["dataset"].get("options") or {})
    task = cfg["task"]
    name = f"desire_prior_{days:g}d"
    retriever = DesirePathRetriever(make_scorer("prior", half_life_days=days),
                                    config=traversal_config(OmegaConf.create(cfg)),
                                    encoder=str(cfg["encoder"]), name=name)  # fmt: skip
    res = evaluate(ds, {name: retriever}, split="test", budget_chars=task["budget_chars"],
                   max_queries=task["max_test_queries"], seed=seed, n_boot=1)  # fmt: skip
    rows = res.rows.assign(seed=seed)
    rows["budget"] = rows["budget"].astype(str)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default=str(ROOT / "runs" / "report"))
    ap.add_argument("--l0", default=None, help="folder of the <prefix>-gnn-l0-s<seed> runs")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--prior-half-life", type=float, nargs="*", default=[],
                    help="also pair against the prior at these half-lives (days), on the same test queries")
    args = ap.parse_args()
    report = Path(args.report)
    out: dict[str, dict[str, object]] = {}
    for prefix, budget in (("medium", 2000), ("tight", 400)):
        done = [(report / f"{prefix}-gnn-s{s}" / "artifacts" / "per_query.csv").exists() for s in args.seeds]
        if not all(done):
            print(f"{prefix}: not every {prefix}-gnn run has finished; skipped", file=sys.stderr)
            continue
        frames = []
        for s in args.seeds:
            frames.append(_rows(report / f"{prefix}-gnn-s{s}", "gnn", s))
            for other in ("linucb", "signet_predictor"):
                if (report / f"{prefix}-{other}-s{s}").exists():
                    frames.append(_rows(report / f"{prefix}-{other}-s{s}", other, s, ("learned",)))
            if args.l0 and (Path(args.l0) / f"{prefix}-gnn-l0-s{s}").exists():
                frames.append(_rows(Path(args.l0) / f"{prefix}-gnn-l0-s{s}", "gnn_l0", s, ("learned",)))
            for days in args.prior_half_life:
                frames.append(_prior_rows(report / f"{prefix}-gnn-s{s}", s, days))
        rows = pd.concat(frames)
        real = rows[rows["n_needed"] > 0]
        res: dict[str, object] = {
            "means": real.groupby("retriever")[["ndcg@10", "needed_recall"]].mean().round(4).to_dict("index"),
        }
        # flat_signet_uncapped: Signet's own flat retriever at the same budget (flat_signet, under Signet's
        # own caps, has no budget to pair on; its mean is in "means")
        priors = [f"desire_prior_{d:g}d" for d in args.prior_half_life]
        for b in ("desire_fused", "desire_prior", *priors, "linucb", "signet_predictor", "gnn_l0",
                  "best_flat", "flat_signet_uncapped"):  # fmt: skip
            if b in set(rows["retriever"]):
                for metric in ("ndcg@10", "needed_recall"):
                    # every seed scores the same test queries of one dataset: each query counts once
                    pair = paired(rows, "gnn", b, metric, budget, same_queries=True)
                    res[f"gnn-{b} {metric}"] = {k: round(v, 4) for k, v in pair.items()}
        eff = {}
        for s in args.seeds:
            folder = report / f"{prefix}-gnn-s{s}"
            curve = pd.read_csv(folder / "artifacts" / "learning_curve.csv")
            start = _fused_validation(folder, s)
            pts = [(0.0, start), *zip(curve["interactions"], curve["val/ndcg@10"], strict=True)]
            gain = pts[-1][1] - start
            to90 = None if gain <= 0 else next(x for x, v in pts if v - start >= 0.9 * gain)
            eff[f"s{s}"] = {
                "val at 0 (= desire_fused)": round(start, 4), "curve": [round(v, 4) for _, v in pts[1:]],
                "final gain": round(gain, 4), "interactions to 90%": to90,
            }  # fmt: skip
        res["sample efficiency"] = eff
        out[f"{prefix} ({budget} chars)"] = res
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
