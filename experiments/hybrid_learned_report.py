"""Learned desire over the hybrid entry against ``best_flat`` with paired 95% intervals (issue 24).

Reads the finished ``experiments/learning_report.py`` runs ``runs/report/<prefix>-<scorer>-s<seed>`` (their
``artifacts/per_query.csv``: the test fold, read once at the end of each run) and prints, per scorer, needed
recall (overall and per QA category), recall@5, precision and walk share pooled over the distinct queries the
seeds drew (each query's learned figure the mean over the seeds that drew it; ``best_flat`` does not depend on
the seed), and the paired difference learned − ``best_flat`` with a 95% bootstrap interval over those queries.
The interval is conditional on the seeds' trained policies: it resamples queries, not training runs, so the
per-seed figures belong beside it. Markdown on stdout.

    python experiments/hybrid_learned_report.py --prefix locomo --scorers linucb gnn
    python experiments/hybrid_learned_report.py --prefix locomo --scorers linucb linucb_floor_only --shares \
        --versus linucb linucb_floor_only
    python experiments/hybrid_learned_report.py --prefix locomo --scorers linucb gnn --precision
    python experiments/hybrid_learned_report.py --prefix musique --scorers linucb gnn --multi 2hop --ppr
    python experiments/hybrid_learned_report.py --prefix locomo \
        --scorers linucb+linucb_fold2+linucb_fold3+linucb_fold4
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def paired(d: np.ndarray, n_boot: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``d`` and its percentile-bootstrap 95% interval over the rows."""
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(d.mean()), float(lo), float(hi)


def load(prefix: str, scorer: str, seeds: list[int]) -> pd.DataFrame:
    """The per-query rows of ``<prefix>-<scorer>-s<seed>`` over ``seeds``; ``scorer`` may join several run
    names with ``+`` (e.g. ``linucb+linucb_fold2``: one recipe tested on several folds, whose questions are
    disjoint), pooled as one."""
    if "+" in scorer:
        return pd.concat([load(prefix, part, seeds) for part in scorer.split("+")], ignore_index=True)
    frames = []
    for seed in seeds:
        path = ROOT / "runs" / "report" / f"{prefix}-{scorer}-s{seed}" / "artifacts" / "per_query.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run python experiments/learning_report.py --runs "
                                    f"{prefix}-{scorer}-s{seed} first")  # fmt: skip
        rows = pd.read_csv(path)
        frames.append(rows.assign(seed=seed))
    return pd.concat(frames, ignore_index=True)


def table(prefix: str, scorers: list[str], seeds: list[int], multi: str) -> str:
    lines = [
        f"| scorer | seeds | queries | learned | best_flat | learned − best_flat [95%] | {multi}: learned | "
        f"best_flat | difference [95%] | recall@5 learned / best_flat | precision learned / best_flat | "
        "walk share |",
        "|---|---|---:|---:|---:|---|---:|---:|---|---|---|---:|",
    ]
    for scorer in scorers:
        rows = load(prefix, scorer, seeds)
        rows = rows[rows["n_needed"] > 0]
        mean = rows.groupby(["retriever", "query_id"])[
            ["needed_recall", "recall@5", "precision", "walk_share"]
        ]
        per = mean.mean()
        learned, flat = per.loc["learned"], per.loc["best_flat"]
        flat = flat.reindex(learned.index)
        cat = rows.drop_duplicates("query_id").set_index("query_id")["category"].reindex(learned.index)
        d, lo, hi = paired((learned["needed_recall"] - flat["needed_recall"]).to_numpy())
        m = (cat == multi).to_numpy()
        md, mlo, mhi = paired((learned["needed_recall"] - flat["needed_recall"]).to_numpy()[m])
        lines.append(
            f"| {scorer} | {len(seeds)} | {len(learned)} | {learned['needed_recall'].mean():.3f} | "
            f"{flat['needed_recall'].mean():.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
            f"{learned['needed_recall'][m].mean():.3f} | {flat['needed_recall'][m].mean():.3f} | "
            f"{md:+.3f} [{mlo:+.3f}, {mhi:+.3f}] ({int(m.sum())}) | "
            f"{learned['recall@5'].mean():.3f} / {flat['recall@5'].mean():.3f} | "
            f"{learned['precision'].mean():.3f} / {flat['precision'].mean():.3f} | "
            f"{learned['walk_share'].mean():.3f} |"
        )
    return "\n".join(lines)


def shares(prefix: str, scorers: list[str], seeds: list[int]) -> str:
    """Where the learned slate's characters came from, per scorer, pooled as :func:`table` pools (each
    query's share the mean over the seeds that drew it): walk or session units, flat's floor outside the
    head ``floor_keep`` keeps (the scorer's re-ranking of flat's own ranking), and of that the floor units
    flat itself does not inject at the budget; the head is the rest. Runs from before the evaluation
    recorded the floor's parts have no such columns: their cells say so."""
    lines = [
        "| scorer | walk or session | floor beyond the head | of it, beyond flat's slate | head, the rest |",
        "|---|---:|---:|---:|---:|",
    ]
    for scorer in scorers:
        rows = load(prefix, scorer, seeds)
        rows = rows[(rows["n_needed"] > 0) & (rows["retriever"] == "learned")]
        if "floor_rest_share" not in rows or rows["floor_rest_share"].isna().all():
            lines.append(f"| {scorer} | {rows['walk_share'].mean():.3f} | not recorded | not recorded | – |")
            continue
        per = rows.groupby("query_id")[["walk_share", "floor_rest_share", "floor_deep_share"]].mean()
        walk, rest, deep = (float(per[c].mean()) for c in per.columns)
        lines.append(f"| {scorer} | {walk:.3f} | {rest:.3f} | {deep:.3f} | {1.0 - walk - rest:.3f} |")
    return "\n".join(lines)


def precision(prefix: str, scorers: list[str], seeds: list[int]) -> str:
    """Precision (the injected items that are needed) learned − ``best_flat``, paired per query as
    :func:`table` pairs recall: issue 24's "precision at least best_flat's" read on the interval's lower
    bound, not on the two means."""
    lines = ["| scorer | queries | precision learned | best_flat | learned − best_flat [95%] |",
             "|---|---:|---:|---:|---|"]  # fmt: skip
    for scorer in scorers:
        rows = load(prefix, scorer, seeds)
        rows = rows[rows["n_needed"] > 0]
        per = rows.groupby(["retriever", "query_id"])["precision"].mean()
        learned = per.loc["learned"]
        flat = per.loc["best_flat"].reindex(learned.index)
        d, lo, hi = paired((learned - flat).to_numpy())
        lines.append(f"| {scorer} | {len(learned)} | {learned.mean():.3f} | {flat.mean():.3f} | "
                     f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] |")  # fmt: skip
    return "\n".join(lines)


def against_ppr(prefix: str, scorers: list[str], seeds: list[int]) -> str:
    """Learned − ``hipporag_ppr`` on the same test questions, paired per query (needed recall and
    recall@5): the PPR retriever (:class:`~signet_rl.retrieval.ppr.PPRRetriever`, the settings of the desire
    report's row) runs here on the test fold the seed-``seeds[0]`` run read, its graph loaded with that
    run's dataset options and encoder."""
    import yaml

    from signet_rl.datasets.registry import load_dataset
    from signet_rl.evaluation.harness import evaluate
    from signet_rl.retrieval.ppr import PPRRetriever

    run = ROOT / "runs" / "report" / f"{prefix}-{scorers[0]}-s{seeds[0]}" / "artifacts" / "config.yaml"
    cfg = yaml.safe_load(run.read_text())
    ds_cfg, split = cfg["dataset"], cfg["dataset"]["learning_split"]
    dataset = load_dataset(ds_cfg["spec"], root=ds_cfg.get("data_root"), options=ds_cfg.get("options"))
    dataset = dataset.learning_split(
        k=split["k"], fold=split["fold"], seed=split["seed"], group=split["group"]
    )
    ppr = evaluate(dataset, {"hipporag_ppr": PPRRetriever(encoder=cfg["encoder"])}, split="test",
                   budget_chars=int(cfg["task"]["budget_chars"]), n_boot=1).rows  # fmt: skip
    ppr = ppr[ppr["n_needed"] > 0].set_index("query_id")
    lines = ["| scorer | queries | learned | hipporag_ppr | learned − PPR [95%] | recall@5 learned | PPR | "
             "recall@5 learned − PPR [95%] |", "|---|---:|---:|---:|---|---:|---:|---|"]  # fmt: skip
    for scorer in scorers:
        rows = load(prefix, scorer, seeds)
        rows = rows[(rows["n_needed"] > 0) & (rows["retriever"] == "learned")]
        per = rows.groupby("query_id")[["needed_recall", "recall@5"]].mean()
        other = ppr.reindex(per.index)
        if other["needed_recall"].isna().any():
            raise ValueError(f"{scorer}: the learned runs drew test questions PPR's test fold lacks")
        cells = []
        for metric in ("needed_recall", "recall@5"):
            d, lo, hi = paired((per[metric] - other[metric]).to_numpy())
            mine, theirs = per[metric].mean(), other[metric].mean()
            cells.append(f"{mine:.3f} | {theirs:.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        lines.append(f"| {scorer} | {len(per)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versus(prefix: str, a: str, b: str, seeds: list[int], multi: str) -> str:
    """Scorer ``a``'s learned rows against scorer ``b``'s (an ablation: the same recipe with a piece
    removed), paired per query as :func:`table` pairs learned with ``best_flat`` (each query's figure the
    mean over the seeds that drew it; only the queries both drew): ``a − b`` with its 95% interval,
    overall and on ``multi``."""
    per = {}
    for scorer in (a, b):
        rows = load(prefix, scorer, seeds)
        rows = rows[(rows["n_needed"] > 0) & (rows["retriever"] == "learned")]
        per[scorer] = rows.groupby("query_id")["needed_recall"].mean()
        cat = rows.drop_duplicates("query_id").set_index("query_id")["category"]
    both = per[a].index.intersection(per[b].index)
    d = (per[a].reindex(both) - per[b].reindex(both)).to_numpy()
    m = (cat.reindex(both) == multi).to_numpy()
    x, lo, hi = paired(d)
    mx, mlo, mhi = paired(d[m]) if m.any() else (float("nan"),) * 3
    return (f"{a} − {b}: {x:+.3f} [{lo:+.3f}, {hi:+.3f}] over {len(both)} queries; "
            f"{multi} {mx:+.3f} [{mlo:+.3f}, {mhi:+.3f}] ({int(m.sum())})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="locomo")
    ap.add_argument("--scorers", nargs="+", default=["linucb", "gnn"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--multi", default="multi-hop", help="the category reported on its own")
    ap.add_argument("--shares", action="store_true", help="also where the learned slate's text came from")
    ap.add_argument("--versus", nargs=2, metavar=("A", "B"), help="also scorer A's learned rows against B's")
    ap.add_argument("--precision", action="store_true", help="also precision against best_flat, paired")
    ap.add_argument("--ppr", action="store_true", help="also learned against hipporag_ppr, run here, paired")
    args = ap.parse_args()
    print(table(args.prefix, args.scorers, args.seeds, args.multi))
    if args.versus:
        print()
        print(versus(args.prefix, *args.versus, args.seeds, args.multi))
    if args.shares:
        print()
        print(shares(args.prefix, args.scorers, args.seeds))
    if args.precision:
        print()
        print(precision(args.prefix, args.scorers, args.seeds))
    if args.ppr:
        print()
        print(against_ppr(args.prefix, args.scorers, args.seeds))


if __name__ == "__main__":
    main()
