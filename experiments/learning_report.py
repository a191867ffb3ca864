"""The learned scorers against flat retrieval and the non-learned scorers: the issue-6 results, resumably.

Every run is one ``signet_rl.train`` job, a recipe ``conf/experiment/learning/<recipe>.yaml`` at one seed
(``python -m signet_rl.train +experiment=learning/<recipe> seed=<seed>``), in its own folder under
``runs/report/<name>``. A finished run leaves ``artifacts/final_metrics.json`` and is skipped
next time; an interrupted one resumes from its checkpoint. So the script can run across several sittings and
picks up where it stopped; ``--groups`` runs a subset. It then builds its section (markers
``learning:start``/``learning:end``) from whatever runs have finished and writes it into ``docs/results.md``
through :func:`signet_rl.reporting.publish`: only a section built from every group's finished runs replaces
the committed one (a clean checkout has none: ``--report-only`` there leaves the file as it is and writes
``runs/scratch/results.md``), unless ``--replace``; ``--scratch`` sends any run to the scratch file.

    python experiments/learning_report.py                         # every group
    python experiments/learning_report.py --groups main ablation  # a subset
    python experiments/learning_report.py --report-only           # rebuild the section from finished runs
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl import smoke
from signet_rl.evaluation.harness import render_markdown
from signet_rl.reporting import SCRATCH, Section, publish

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- learning:start -->", "<!-- learning:end -->"
SEEDS = (0, 1, 2)
METRICS = ("needed_recall", "precision", "f1", "ndcg@10", "recall@5", "recall@10", "silenced", "answered")

# The equal tuning budget: three values of each scorer's main knob (its default among them).
TUNING = (("gnn", "lr", ("0.001", "0.003", "0.01")), ("linucb", "alpha", ("0.25", "1.0", "4.0")),
          ("prior", "half_life_days", ("30", "90", "365")))  # fmt: skip
ABLATIONS = ("no_reinforcement", "no_explorer", "no_edge_features", "no_communities", "no_time_features")

#: Every reported recipe, ``conf/experiment/learning/<recipe>.yaml``, with its group (``--groups``) and the
#: seeds it runs at: run ``<recipe>-s<seed>`` for several seeds, ``<recipe>`` for seed 0 alone. Each file
#: names the docs/results.md table and rows it produced.
RECIPES: dict[str, tuple[str, tuple[int, ...]]] = {
    "medium-gnn": ("main", SEEDS),
    "medium-linucb": ("main", SEEDS),
    **{f"medium-gnn-{ablation}": ("ablation", (0,)) for ablation in ABLATIONS},
    "tight-gnn": ("tight", SEEDS),  # a budget that binds: here scorers differ on recall, not only order
    "tight-linucb": ("tight", SEEDS),
    **{f"tune-{scorer}-{knob}-{v}": ("tuning", (0,)) for scorer, knob, values in TUNING for v in values},
    "drift-gnn": ("drift", (0,)),
    "drift-linucb": ("drift", (0,)),
    "locomo-gnn": ("locomo", SEEDS),
    "locomo-linucb": ("locomo", SEEDS),
    "musique-gnn": ("musique", SEEDS),
    "musique-linucb": ("musique", SEEDS),
    # Signet's own predictor, the learned baseline (issue 25): a row in every learned table
    "medium-signet_predictor": ("main", SEEDS),
    "tight-signet_predictor": ("tight", SEEDS),
    "locomo-signet_predictor": ("locomo", SEEDS),
    "musique-signet_predictor": ("musique", SEEDS),
}
#: The learned scorers of the comparison tables, in row order.
LEARNED = ("gnn", "linucb", "signet_predictor")


def runs() -> dict[str, tuple[str, list[str]]]:
    """name -> (group, overrides): a recipe's config at one seed."""
    out: dict[str, tuple[str, list[str]]] = {}
    for recipe, (group, seeds) in RECIPES.items():
        for seed in seeds:
            name = f"{recipe}-s{seed}" if len(seeds) > 1 else recipe
            out[name] = (group, [f"+experiment=learning/{recipe}", f"seed={seed}"])
    return out


#: Runs that are the same job as another: once the source has finished, the copy is its folder, copied, so
#: the job runs once; :func:`run_one` checks that both compose to the same config first. None now: the
#: tuning run at LinUCB's old default alpha (``tune-linucb-alpha-1.0``) was ``tight-linucb-s0`` until issue 25
#: §3 gave ``tight-linucb`` the sweep-tuned alpha, lam and traversal.
SAME_JOB: dict[str, str] = {}


def _compose(overrides: Sequence[str], folder: Path | str) -> Any:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose(
            "train", overrides=[*overrides, f"run_dir={folder}", "progress=false", "bootstrap=200"]
        )


def same_job(name: str) -> str | None:
    """The finished run ``name`` is the same job as (:data:`SAME_JOB`), if both compose to the same config
    (their run folders aside); ``None`` otherwise."""
    from omegaconf import OmegaConf

    source = SAME_JOB.get(name)
    if source is None:
        return None
    every = runs()
    configs = [OmegaConf.to_container(_compose(every[n][1], "x"), resolve=True) for n in (name, source)]
    return source if configs[0] == configs[1] else None


def run_one(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    import shutil

    from signet_rl.train import train

    # SIGNET_RL_SMOKE=1 shrinks the run (signet_rl.smoke, inside train) and keeps it out of runs/report/
    base = ROOT / (SCRATCH / "report" if smoke.enabled() else Path("runs") / "report")
    folder = base / name
    done = folder / "artifacts" / "final_metrics.json"
    if done.exists():
        return json.loads(done.read_text())
    source = same_job(name)
    if (
        source is not None
        and (base / source / "artifacts" / "final_metrics.json").exists()
        and not folder.exists()
    ):
        shutil.copytree(base / source, folder)
        print(f"[{name}] the same job as {source}: its finished folder copied", flush=True)
        return json.loads(done.read_text())
    cfg = _compose(overrides, folder)
    t = time.perf_counter()
    train(cfg)
    print(f"[{name}] finished in {time.perf_counter() - t:.0f} s", flush=True)
    return json.loads(done.read_text())


def _finished(name: str) -> tuple[dict[str, float], pd.DataFrame] | None:
    art = ROOT / "runs" / "report" / name / "artifacts"
    if not (art / "final_metrics.json").exists():
        return None
    return json.loads((art / "final_metrics.json").read_text()), pd.read_csv(art / "learning_curve.csv")


def _fmt(values: Sequence[float]) -> str:
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if len(v) == 0:
        return "–"
    return f"{v.mean():.3f}" if len(v) == 1 else f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"


def per_retriever(name: str) -> dict[str, dict[str, float]]:
    """A finished run's test figures per retriever, from its per-query rows: the means over answerable
    queries, ``silenced`` (share of non-queries given nothing) and ``answered`` (share of real queries
    given something)."""
    rows = pd.read_csv(ROOT / "runs" / "report" / name / "artifacts" / "per_query.csv")
    out: dict[str, dict[str, float]] = {}
    for retriever, g in rows.groupby("retriever"):
        real, none = g[g["n_needed"] > 0], g[g["n_needed"] == 0]
        fig = {m: float(real[m].mean()) for m in METRICS[:6]}
        fig["silenced"] = float(none["zero_injection"].mean()) if len(none) else math.nan
        fig["answered"] = float(1 - real["zero_injection"].mean()) if len(real) else math.nan
        out[str(retriever)] = fig
    return out


#: The order of a comparison's rows: the flat retrievers, the non-learned scorers, the learned ones, the
#: ceiling, and last ``flat_signet`` under Signet's own caps (no shared budget: unpaired with the rows above).
ROW_ORDER = ("best_flat", "flat_signet_uncapped", "desire_prior", "desire_ppr", "desire_random",
             "desire_fused", "trained gnn", "trained linucb", "trained signet_predictor", "candidate_ceiling",
             "flat_signet")  # fmt: skip
UNPAIRED = {"flat_signet": "flat_signet (own caps, no shared budget: unpaired)"}


def comparison(prefix: str, scorers: Sequence[str]) -> tuple[str, list[int]]:
    """Mean ± sd over seeds of each retriever's test metrics, from the runs ``<prefix>-<scorer>-s<seed>``:
    ``best_flat``, ``flat_signet_uncapped``, the non-learned scorers, the learned ones and the ceiling on the
    same test queries at the same budget, and ``flat_signet`` under its own caps, labelled unpaired."""
    rows: dict[str, dict[str, list[float]]] = {}
    seeds: list[int] = []
    for scorer in scorers:
        for seed in SEEDS:
            if _finished(f"{prefix}-{scorer}-s{seed}") is None:
                continue
            shared = seed not in seeds  # the shared baselines once per seed, from its first finished run
            seeds.append(seed)
            for name, figures in per_retriever(f"{prefix}-{scorer}-s{seed}").items():
                retriever = f"trained {scorer}" if name == "learned" else name
                if retriever != f"trained {scorer}" and not shared:
                    continue
                for metric, value in figures.items():
                    rows.setdefault(retriever, {}).setdefault(metric, []).append(value)
    if not rows:
        return "_no finished runs yet_", []
    lines = ["| retriever | " + " | ".join(METRICS) + " |", "|---|" + "---:|" * len(METRICS)]
    rank = {name: i for i, name in enumerate(ROW_ORDER)}
    for retriever in sorted(rows, key=lambda r: (rank.get(r, len(rank)), r)):
        metrics = rows[retriever]
        label = UNPAIRED.get(retriever, retriever)
        lines.append(f"| {label} | " + " | ".join(_fmt(metrics.get(m, [])) for m in METRICS) + " |")
    return "\n".join(lines), sorted(set(seeds))


def to_90(curve: pd.DataFrame, metric: str = "val/ndcg@10") -> float:
    """Rated interactions until the validation metric first reaches 90% of its final value."""
    if metric not in curve or curve[metric].isna().all():
        return math.nan
    final = float(curve[metric].iloc[-1])
    hit = curve[curve[metric] >= 0.9 * final]
    return float(hit["interactions"].iloc[0]) if len(hit) else math.nan


#: The rows beside the tuned scorers' test figures: the flat baselines (``best_flat`` frozen on validation,
#: ``flat_signet`` unpaired) and the knob-free scorers, from a tuning run's test queries (the same in each).
TUNING_BESIDE = ("best_flat", "flat_signet_uncapped", "desire_ppr", "candidate_ceiling", "flat_signet")


def tuning_tables(frame: pd.DataFrame) -> list[str]:
    """The equal-tuning-budget tables: every setting's *validation* figures, from which each scorer's
    setting is chosen (highest validation needed-recall; no test figure is shown beside the choice), then
    the chosen settings' test figures beside ``best_flat``, ``flat_signet`` and the knob-free scorers on the
    same test queries at the same 400-character budget."""
    best = frame.loc[frame.groupby("scorer")["val needed_recall"].idxmax()]
    chosen = best[["scorer", "setting", "test needed_recall", "test ndcg@10"]].rename(
        columns={"scorer": "retriever"}
    )
    chosen["retriever"] = "tuned " + chosen["retriever"]
    source = next(
        (f"tune-{s}-{k}-{v}" for s, k, vs in TUNING for v in vs if _finished(f"tune-{s}-{k}-{v}")), None
    )
    beside = []
    figures = per_retriever(source) if source is not None else {}
    for name in TUNING_BESIDE:
        if name in figures:
            setting = "frozen on validation" if name == "best_flat" else "–"
            beside.append({"retriever": UNPAIRED.get(name, name), "setting": setting,
                           "test needed_recall": figures[name]["needed_recall"],
                           "test ndcg@10": figures[name]["ndcg@10"]})  # fmt: skip
    table = pd.concat([chosen, pd.DataFrame(beside)], ignore_index=True) if beside else chosen
    return [
        "#### Equal tuning budget (3 settings each, 400 characters, seed 0; chosen on validation)", "",
        "Every setting, validation only (the choice: highest validation needed-recall):", "",
        render_markdown(frame[["scorer", "setting", "val needed_recall", "val ndcg@10"]], 3), "",
        "The chosen settings on the test queries, beside `best_flat` (frozen on validation, "
        "`conf/best_flat.yaml`), `flat_signet` and the knob-free scorers on the same queries and budget:", "",
        render_markdown(table, 3), "",
    ]  # fmt: skip


def report() -> str:
    lines = [
        f"_Written by `python experiments/learning_report.py` on {time.strftime('%Y-%m-%d')} from the "
        "finished runs under `runs/report/` (each a `python -m signet_rl.train` job; mean ± sd over seeds)._",
        "",
        "Every comparison shows `best_flat`, the flat retriever frozen per dataset family on validation "
        "(`conf/best_flat.yaml`; no run chooses again), beside `flat_signet` under Signet's own caps (no "
        "shared budget, so unpaired with the budgeted rows), on the same test queries.",
        "",
        "Settings (issue 25 §3): the `medium-*` and `tight-*` runs of the GNN, LinUCB and Signet's predictor "
        "use the sweep-tuned scorer defaults and walk the tuned traversal (`sweep/traversal_best`: branching "
        "3, paths 90, depth 3, min_confidence 0.788), shared by every row of their tables; the `locomo-*` "
        "runs use the sweep-tuned scorer defaults too (rerun in session 7) and walk LoCoMo's traversal; "
        "every other run (ablations, tuning, drift, MuSiQue) pins its scorer's pre-sweep settings and walks "
        "its dataset's traversal, as reported before.",
        "",
    ]
    for title, prefix in (("synthetic:medium (generator v2), 2,000 characters", "medium"),
                          ("synthetic:medium (generator v2), 400 characters", "tight"),
                          ("LoCoMo (by conversation, test fold 0), 2,000 characters", "locomo"),
                          ("MuSiQue (5-fold, test fold 0), 2,000 characters", "musique")):  # fmt: skip
        table, seeds = comparison(prefix, LEARNED)
        lines += [f"#### {title}: test queries, seeds {seeds}", "", table, ""]
    missing = [name for name in runs() if _finished(name) is None]
    if missing:
        lines += [f"**Not rerun** under the current code (best_flat, the credit rule, time slicing, "
                  f"generator v2), so absent from every table here: {', '.join(sorted(missing))}.",
                  ""]  # fmt: skip
    tuned = []
    for scorer, knob, values in TUNING:
        for value in values:
            got = _finished(f"tune-{scorer}-{knob}-{value}")
            if got is None:
                continue
            final, curve = got
            tuned.append({
                "scorer": scorer, "setting": f"{knob}={value}",
                "val needed_recall": float(curve["val/needed_recall"].iloc[-1]),
                "val ndcg@10": float(curve["val/ndcg@10"].iloc[-1]),
                "test needed_recall": final.get("test/learned/needed_recall", math.nan),
                "test ndcg@10": final.get("test/learned/ndcg@10", math.nan),
            })  # fmt: skip
    if tuned:
        lines += tuning_tables(pd.DataFrame(tuned))
    transfer = ROOT / "runs" / "report" / "transfer" / "figures.json"
    if transfer.exists():
        figures = json.loads(transfer.read_text())
        table = render_markdown(pd.DataFrame(figures).T.reset_index(names="retriever"), 3)
        title = "#### Transfer: the seed-0 GNN of `synthetic:medium:0`, tested on `synthetic:medium:1` (v2)"
        lines += [title, "", table, ""]
    curves = []
    for name in sorted(runs()):
        got = _finished(name)
        if got is None:
            continue
        final, curve = got
        curves.append({
            "run": name,
            "interactions": int(curve["interactions"].iloc[-1]) if len(curve) else 0,
            "val needed_recall": float(curve["val/needed_recall"].iloc[-1])
            if "val/needed_recall" in curve
            else math.nan,
            "val ndcg@10": float(curve["val/ndcg@10"].iloc[-1]) if "val/ndcg@10" in curve else math.nan,
            "ndcg to 90% of final": to_90(curve),
            "mean rating": final.get("train/mean_rating", math.nan),
            "regret": final.get("train/cumulative_regret", math.nan),
            "explorer share": final.get("train/explorer_share", math.nan),
            "explorer hit rate": final.get("train/explorer_hit_rate", math.nan),
            "ope snips": final.get("ope/snips", math.nan),
            "test recall": final.get("test/learned/needed_recall", math.nan),
            "test ndcg@10": final.get("test/learned/ndcg@10", math.nan),
            "minutes": final.get("seconds", math.nan) / 60,
        })  # fmt: skip
    if curves:
        frame = pd.DataFrame(curves)
        lines += ["#### Every run: learning, exploration, off-policy estimate, test", "",
                  render_markdown(frame, 3), ""]  # fmt: skip
    return "\n".join(lines)


def run_transfer() -> None:
    """Evaluate the saved seed-0 GNN policy (no trainer, no edge statistics) on an unseen synthetic seed."""
    out = ROOT / "runs" / "report" / "transfer" / "figures.json"
    policy = ROOT / "runs" / "report" / "medium-gnn-s0" / "artifacts" / "policy"
    if out.exists() or not policy.exists():
        return
    from omegaconf import OmegaConf

    from signet_rl.datasets import load_dataset
    from signet_rl.evaluation.harness import EvaluationResult, evaluate
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.retrieval.flat import BEST_FLAT, UNCAPPED, flat_variant
    from signet_rl.scorers import PRE_SWEEP_DEFAULTS, make_scorer
    from signet_rl.scorers.gnn import GNNPathScorer
    from signet_rl.train import traversal_config

    ds = load_dataset("synthetic:medium:1", options={"version": 2})
    # the walk the policy was trained on (since issue 25 §3 the tuned traversal_best, shared by every row)
    trained = OmegaConf.load(policy.parent / "config.yaml")
    traversal = traversal_config(trained)
    flat = flat_variant("flat_signet", encoder="hashing", **UNCAPPED)
    flat.name = "flat_signet_uncapped"
    retrievers = {
        "trained gnn (seed-0 graph)": DesirePathRetriever(GNNPathScorer.load(policy), config=traversal),
        # the 90-day prior of the reported transfer table (issue 25 §3 moved the default; not rerun)
        "desire_prior": DesirePathRetriever(
            make_scorer("prior", **PRE_SWEEP_DEFAULTS["prior"]), config=traversal
        ),
        "desire_ppr": DesirePathRetriever("ppr", config=traversal),
        "best_flat": flat_variant(BEST_FLAT),
        "flat_signet_uncapped": flat,
    }
    res = EvaluationResult.concat([
        evaluate(ds, retrievers, split="test", budget_chars=2000, n_boot=1),
        evaluate(ds, {UNPAIRED["flat_signet"]: flat_variant("flat_signet", encoder="hashing")}, split="test",
                 budget_chars=None, n_boot=1),
    ])  # fmt: skip
    real = res.rows[res.rows["n_needed"] > 0]
    figures = {
        str(r): {m: float(g[m].mean()) for m in ("needed_recall", "precision", "f1", "ndcg@10")}
        for r, g in real.groupby("retriever")
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))


GROUPS = ("main", "ablation", "tight", "tuning", "drift", "transfer", "locomo", "musique")


def complete_groups() -> list[str]:
    """The groups whose every run has finished locally (``transfer``: its figures exist): the protocol of
    the section this checkout can write. A clean checkout has none."""
    done = []
    by_group: dict[str, list[str]] = {}
    for name, (group, _) in runs().items():
        by_group.setdefault(group, []).append(name)
    for group in GROUPS:
        if group == "transfer":
            if (ROOT / "runs" / "report" / "transfer" / "figures.json").exists():
                done.append(group)
        elif by_group.get(group) and all(_finished(n) is not None for n in by_group[group]):
            done.append(group)
    return done


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", nargs="*", default=None, help=" ".join(GROUPS))
    ap.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        default=None,
        help="run only these seeds' runs (a recipe of one seed runs at seed 0); default: all",
    )
    ap.add_argument(
        "--runs",
        nargs="*",
        default=None,
        help="run only these runs, by name (e.g. medium-linucb-s1 tune-prior-half_life_days-30), in order",
    )
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "docs" / "results.md"))
    ap.add_argument("--replace", action="store_true", help="replace a committed section of another protocol")
    ap.add_argument(
        "--scratch", action="store_true", help=f"an exploratory run: write under {SCRATCH}/, not --output"
    )
    ap.add_argument("--scratch-dir", default=None, help=f"where refused and scratch runs go ({SCRATCH})")
    args = ap.parse_args(argv)
    if not args.report_only:
        chosen = [(n, g, o) for n, (g, o) in runs().items() if not args.groups or g in args.groups]
        if args.seeds is not None:
            chosen = [(n, g, o) for n, g, o in chosen if int(o[-1].split("=", 1)[1]) in args.seeds]
        if args.runs is not None:
            unknown = sorted(set(args.runs) - set(runs()))
            if unknown:
                ap.error(f"unknown runs {unknown}; the runs are: {', '.join(sorted(runs()))}")
            order = {name: i for i, name in enumerate(args.runs)}
            chosen = sorted([c for c in chosen if c[0] in order], key=lambda c: order[c[0]])
        if smoke.enabled():  # SIGNET_RL_SMOKE=1: the first run only, tiny, under runs/scratch/
            chosen = chosen[:1]
        for name, _group, overrides in chosen:
            try:
                run_one(name, overrides)
            except Exception as exc:  # one failed run must not lose the others; it is reported
                print(f"[{name}] FAILED: {type(exc).__name__}: {exc}", flush=True)
                if smoke.enabled():  # a smoke run is there to show that every step runs
                    raise
        if not args.groups or "transfer" in args.groups:
            run_transfer()
    body = report()
    print(body)
    # The committed section holds every group; one built from fewer finished runs (a clean checkout, a
    # subset) would delete its tables or rows of other seeds: publish refuses it and writes scratch instead.
    section = Section(
        "learning", body,
        protocol={"complete groups": complete_groups(),
                  "finished runs": sum(_finished(name) is not None for name in runs())},
        heading="## Learned scorers (issue 6)",
    )  # fmt: skip
    publish(
        args.output, [section], "learning_report.py", replace=args.replace, scratch=args.scratch,
        scratch_dir=args.scratch_dir or ROOT / SCRATCH,
    )  # fmt: skip
    return body


if __name__ == "__main__":
    main()
