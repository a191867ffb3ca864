"""Paired test intervals for the LoCoMo learned runs (issue 25, session 7): the trained GNN, LinUCB and
Signet's predictor of the ``locomo-<scorer>`` recipes (``runs/report/locomo-<scorer>-s<seed>``, each a
``python -m signet_rl.train +experiment=learning/locomo-<scorer> seed=S`` job on the sweep-tuned defaults)
against each other, ``best_flat`` and ``flat_signet_uncapped`` (Signet's own flat retriever at the same
budget), read from the runs' ``artifacts/per_query.csv``. The runs print no non-learned desire rows
(``baselines: []``: over the hybrid entry they inject best_flat's slate); ``--nonlearned`` measures that
instead of assuming it: it evaluates ``desire_{prior,ppr,random,fused}`` as train's closing comparison builds
them (the run's own walk, encoder, budget and test draw) and pairs the learned scorers against them (it found
``desire_fused`` left out of the scorers that rank the floor first, since fixed).

Means: each seed's mean over its test queries, averaged over the seeds (as the "Learned scorers" tables).
Intervals: each seed draws its own 300 test questions of one fold, so a query's difference is averaged over
the seeds that scored both rows and the distinct queries are resampled (``gnn_targets.paired`` with
``same_queries=True``, 2,000 resamples); conditional on the seeds' trained policies. Settings are frozen in
the recipes; this script chooses nothing.

    python experiments/locomo_learned_pairs.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gnn_targets import paired

ROOT = Path(__file__).resolve().parents[1]
LEARNED = ("gnn", "linucb", "signet_predictor")
#: (a, b): the paired differences a - b reported.
PAIRS = (
    ("gnn", "linucb"), ("gnn", "signet_predictor"), ("gnn", "best_flat"), ("linucb", "best_flat"),
    ("signet_predictor", "best_flat"), ("gnn", "flat_signet_uncapped"),
)  # fmt: skip
FLAT = ("best_flat", "flat_signet_uncapped", "flat_signet")
METRICS = ("ndcg@10", "needed_recall")


def _rows(folder: Path, label: str, seed: int, keep: tuple[str, ...]) -> pd.DataFrame:
    r = pd.read_csv(folder / "artifacts" / "per_query.csv", dtype={"budget": str})
    r = r[r["retriever"].isin(keep)].assign(seed=seed)
    r.loc[r["retriever"] == "learned", "retriever"] = label
    return r


def collect(report: Path, seeds: list[int], prefix: str = "locomo") -> pd.DataFrame:
    """Every finished run's learned rows (named by scorer) and, once per seed, the flat rows (the first
    finished scorer's: they do not depend on the scorer; a difference is reported on stderr)."""
    frames = []
    for s in seeds:
        flat = None
        for scorer in LEARNED:
            folder = report / f"{prefix}-{scorer}-s{s}"
            if not (folder / "artifacts" / "per_query.csv").exists():
                print(f"{folder.name}: not finished; left out", file=sys.stderr)
                continue
            frames.append(_rows(folder, scorer, s, ("learned",)))
            here = _rows(folder, scorer, s, FLAT).sort_values(["retriever", "query_id"])
            here = here.reset_index(drop=True)
            if flat is None:
                flat = here
                frames.append(here)
            else:
                cols = ["retriever", "query_id", *METRICS]
                if not flat[cols].equals(here[cols]):  # reported, not fatal: the first run's rows are used
                    print(f"{folder.name}: flat rows differ from the seed's first run", file=sys.stderr)
    if not frames:
        raise SystemExit(f"no finished {prefix}-<scorer>-s<seed> run under {report}")
    return pd.concat(frames, ignore_index=True)


NONLEARNED = ("prior", "ppr", "random", "fused")


def nonlearned_rows(folder: Path, seed: int) -> pd.DataFrame:
    """``desire_<name>`` for every non-learned scorer, as ``python -m signet_rl.train``'s closing comparison
    builds its ``baselines`` rows: the run's walk (hybrid entry included), encoder, budget, test fold and the
    seed's draw of test questions."""
    import yaml
    from omegaconf import OmegaConf

    from signet_rl.datasets import load_dataset
    from signet_rl.evaluation.harness import evaluate
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.train import traversal_config

    cfg = yaml.safe_load((folder / "artifacts" / "config.yaml").read_text())
    ds = load_dataset(cfg["dataset"]["spec"], options=cfg["dataset"].get("options") or {})
    split = cfg["dataset"]["learning_split"]
    ds = ds.learning_split(k=int(split["k"]), fold=int(split.get("fold", 0)), seed=int(split.get("seed", 0)),
                           group=split.get("group"))  # fmt: skip
    walk = traversal_config(OmegaConf.create(cfg))
    encoder = str(cfg["encoder"])
    named = {f"desire_{n}": DesirePathRetriever(n, config=walk, encoder=encoder, name=f"desire_{n}")
             for n in NONLEARNED}  # fmt: skip
    task = cfg["task"]
    res = evaluate(ds, named, split="test", budget_chars=task["budget_chars"],
                   max_queries=task["max_test_queries"], seed=int(cfg["seed"]), n_boot=1)  # fmt: skip
    rows = res.rows.assign(seed=seed)
    rows["budget"] = rows["budget"].astype(str)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default=str(ROOT / "runs" / "report"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--nonlearned", action="store_true",
                    help="also evaluate and pair the non-learned desire rows (as train builds them)")
    args = ap.parse_args(argv)
    rows = collect(Path(args.report), args.seeds)
    pairs = list(PAIRS)
    if args.nonlearned:
        extra = [nonlearned_rows(Path(args.report) / f"locomo-gnn-s{s}", s) for s in args.seeds]
        rows = pd.concat([rows, *extra], ignore_index=True)
        for name in NONLEARNED:
            pairs += [("gnn", f"desire_{name}"), ("linucb", f"desire_{name}")]
    real = rows[(rows["n_needed"] > 0) & (rows["budget"] == str(args.budget))]
    per_seed = real.groupby(["retriever", "seed"])[list(METRICS)].mean()
    out: dict[str, object] = {
        "seeds": {r: sorted(g["seed"].unique().tolist()) for r, g in real.groupby("retriever")},
        "per seed": {
            f"{r} s{s}": {m: round(float(v[m]), 4) for m in METRICS} for (r, s), v in per_seed.iterrows()
        },
        "mean over seeds": {
            r: {m: round(float(v[m]), 4) for m in METRICS}
            for r, v in per_seed.groupby(level="retriever").mean().iterrows()
        },
    }
    present = set(real["retriever"])
    for a, b in pairs:
        if a in present and b in present:
            for metric in METRICS:
                pair = paired(rows, a, b, metric, args.budget, same_queries=True)
                out[f"{a}-{b} {metric}"] = {k: round(v, 4) for k, v in pair.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
