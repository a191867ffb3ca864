"""Desire paths learned online on held-out conversations (issue 24): a prequential evaluation.

Every system answers each held-out conversation's questions in one seeded order, 2,000 characters, and the
learning ones learn from the simulated rater's ratings of what they injected before the next question
(:func:`signet_rl.evaluation.online.prequential`). The systems, all in one run:

* ``best_flat`` — frozen, the yardstick;
* ``flat_feedback`` — ``best_flat``'s deeper ranking re-ranked by the ratings of its own units
  (:class:`signet_rl.learning.desire_edges.FlatFeedback`: memory-level or nearest-neighbour, chosen on
  validation);
* ``learned_frozen`` — the saved LinUCB policy over the hybrid entry, frozen (today's row);
* ``learned_online`` — the same policy plus desire edges (entry entity -> memory) and its dependency-edge
  statistics learned from the ratings, scorer weights frozen
  (:class:`~signet_rl.learning.desire_edges.OnlineDesire`);
* ``online_memory`` — ``learned_online`` with the desire statistic unconditioned (memory level).

Settings come from ``conf/online/<dataset>.yaml`` (chosen on the validation fold with ``--grid``; committed
before the test fold was run). On ``--split test`` the policy of order seed ``s`` is ``--policy`` with
``{seed}`` replaced by ``s``; on ``--split validation`` every order seed uses the policy of
``--validation-policy-seed`` (default 0: the choice was made with ``locomo-linucb-s0`` alone).

The test read is guarded (:func:`guard_test_read`): the recipe must be tracked by git, unchanged since its
last commit and free of a ``PROVISIONAL`` marker; its commit hash goes into every saved row
(``recipe_commit``) and the output; an existing test parquet is overwritten only with ``--force``.

    python experiments/online_desire.py --split validation --grid first --seeds 0 1   # the choice
    python experiments/online_desire.py --split validation --grid refine --seeds 0 1
    python experiments/online_desire.py --split test --seeds 0 1 2                  # the test read, once

Per-question rows go to ``runs/online_desire/<dataset>-<split>[-grid].parquet`` (ignored); the tables are
printed (Markdown).
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from signet_rl.datasets.registry import DATASET_CONF, load_test_data
from signet_rl.evaluate import policy_retriever
from signet_rl.evaluation.metrics import paired_bootstrap_ci
from signet_rl.evaluation.online import OnlineSystem, prequential
from signet_rl.learning.desire_edges import FlatFeedback, OnlineDesire
from signet_rl.retrieval.flat import BEST_FLAT, flat_variant

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "online"
MULTI = "multi-hop"

#: The validation grids (small on purpose: two cores shared): ``first``, then ``refine`` around the first's
#: best desire setting, which sat at the smallest beta and lr of the first (and separates the shortcuts
#: joining the pool, ``max_paths``, from the boost alone).
GRIDS: dict[str, tuple[dict[str, list], dict[str, list]]] = {
    "first": (
        {"variant": ["memory", "knn"], "beta": [0.5, 1.0, 2.0], "keep": [0.0, 0.5]},
        {"beta": [0.5, 1.0, 2.0], "lr": [0.2, 0.5], "idf": ["none", "df"], "max_paths": [10]},
    ),
    # after the test read of the chosen recipe: the desire conditioned on the query itself (knn) rather
    # than its entries, over the frozen policy (validation only; adopted only if it beat the choice there)
    "knn": (
        {"variant": ["knn"], "beta": [1.0], "keep": [0.5]},
        {"beta": [0.5, 1.0], "lr": [0.2], "idf": ["none"], "max_paths": [10], "knn": [10]},
    ),
    "refine": (
        {"variant": ["knn"], "beta": [1.0], "keep": [0.5]},
        {"beta": [0.25, 0.5], "lr": [0.1, 0.2], "idf": ["none"], "max_paths": [0, 10]},
    ),
}


#: The rater's settings: the bandit task's (``conf/task/bandit.yaml``), never a recipe's.
RATER_KEYS = ("rater_noise", "rater_prob")


def recipe(dataset: str, conf_dir: Path = CONF) -> dict[str, Any]:
    """``<conf_dir>/<dataset>.yaml``, with the bandit task's rater (``rater_noise``, ``rater_prob``).

    Raises:
        FileNotFoundError: the recipe is missing.
        ValueError: the recipe sets a rater key (the rater is shared with the bandit task, so a recipe
            must not tune it), naming the file and the keys.
    """
    file = conf_dir / f"{dataset}.yaml"
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing: choose the settings on validation (--grid) and write it")
    conf = yaml.safe_load(file.read_text()) or {}
    bad = [k for k in RATER_KEYS if k in conf]
    if bad:
        raise ValueError(
            f"{file} sets {', '.join(bad)}: the rater is the bandit task's (conf/task/bandit.yaml); "
            "remove the key from the recipe"
        )
    task = yaml.safe_load((ROOT / "conf" / "task" / "bandit.yaml").read_text())
    return {"rater_noise": task["rater_noise"], "rater_prob": task["rater_prob"], **conf}


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def recipe_commit(file: Path) -> str:
    """The commit hash of the last change to the recipe ``file``, which the test read is bound to.

    Raises:
        ValueError: the file is not tracked by git, has uncommitted changes, or carries a ``PROVISIONAL``
            marker, naming the file and the way out.
    """
    file = Path(file).resolve()
    if "PROVISIONAL" in file.read_text():
        raise ValueError(
            f"{file} is marked PROVISIONAL: finish the choice on validation, remove the marker and commit "
            "the recipe before the test read"
        )
    if _git(file.parent, "ls-files", "--error-unmatch", file.name).returncode != 0:
        raise ValueError(f"{file} is not tracked by git: commit the recipe before the test read")
    if _git(file.parent, "status", "--porcelain", "--", file.name).stdout.strip():
        raise ValueError(f"{file} has uncommitted changes: commit the recipe before the test read")
    return _git(file.parent, "log", "-1", "--format=%H", "--", file.name).stdout.strip()


def guard_test_read(dataset: str, out: Path, force: bool, conf_dir: Path = CONF) -> str:
    """Refuse a test read unless the recipe is committed (:func:`recipe_commit`) and ``out`` is new (or
    ``force``); returns the recipe's commit hash.

    Raises:
        ValueError: naming the file and the way out.
    """
    commit = recipe_commit(conf_dir / f"{dataset}.yaml")
    if Path(out).exists() and not force:
        raise ValueError(f"{out} exists: the test fold is read once; pass --force to overwrite it")
    return commit


def depth(dataset: str) -> dict[str, Any]:
    """The hybrid floor's depth (``max_floor_paths``, ``floor_budget_factor``) of the dataset config, the
    depth ``flat_feedback`` re-ranks."""
    block = (yaml.safe_load((Path(DATASET_CONF) / f"{dataset}.yaml").read_text()) or {}).get("hybrid") or {}
    return {
        "depth": int(block.get("max_floor_paths", 30)),
        "depth_budgets": float(block.get("floor_budget_factor", 3.0)),
    }


def online(policy: str, name: str, flat: Any, **desire: Any) -> OnlineSystem:
    ret = policy_retriever(policy, name=name)
    ret.flat_spec = flat
    od = OnlineDesire(**desire)
    od.attach(ret)
    return OnlineSystem(ret, od.learn)


def systems_for(dataset: str, conf: dict, policy: str, grid: str | None) -> dict[str, OnlineSystem]:
    flat = flat_variant(BEST_FLAT)
    d = depth(dataset)
    out: dict[str, OnlineSystem] = {"best_flat": OnlineSystem(flat)}
    if grid:
        grid_flat, grid_desire = GRIDS[grid]
        for v, b, k in itertools.product(*grid_flat.values()):
            ff = FlatFeedback(beta=b, variant=v, keep=k, flat=flat, **d)
            out[f"flat_feedback[{v},b={b},keep={k}]"] = OnlineSystem(ff, ff.feedback)
        frozen = policy_retriever(policy, name="learned_frozen")
        frozen.flat_spec = flat
        out["learned_frozen"] = OnlineSystem(frozen)
        for b, lr, idf, mp, *knn in itertools.product(*grid_desire.values()):
            common = {"beta": b, "lr": lr, "idf": idf, "max_paths": mp, "knn": knn[0] if knn else 0}
            tag = f"b={b},lr={lr},idf={idf},paths={mp}" + (f",knn={knn[0]}" if knn else "")
            out[f"learned_online[{tag}]"] = online(policy, "learned_online", flat, **common)
            if idf == "none" and mp > 0 and not knn:
                out[f"online_memory[{tag}]"] = online(
                    policy, "online_memory", flat, conditioned=False, **common
                )
        return out
    ff = FlatFeedback(flat=flat, **d, **conf["flat_feedback"])
    out["flat_feedback"] = OnlineSystem(ff, ff.feedback)
    frozen = policy_retriever(policy, name="learned_frozen")
    frozen.flat_spec = flat
    out["learned_frozen"] = OnlineSystem(frozen)
    out["learned_online"] = online(policy, "learned_online", flat, **conf["desire"])
    out["online_memory"] = online(policy, "online_memory", flat, **{**conf["desire"], "conditioned": False})
    return out


def per_question(rows: pd.DataFrame, metric: str = "needed_recall") -> pd.DataFrame:
    """system x question: the metric averaged over the seeds (each seed answers every question)."""
    rows = rows[rows["n_needed"] > 0]
    table = rows.groupby(["query_id", "system"])[metric].mean().unstack("system")
    return table.reindex(columns=list(dict.fromkeys(rows["system"])))


def summary(rows: pd.DataFrame) -> str:
    if "recall_rated" not in rows:  # rows written before the column existed
        rows = rows.assign(recall_rated=float("nan"))
    rows = rows[rows["n_needed"] > 0]
    cat = rows.drop_duplicates("query_id").set_index("query_id")["category"]
    lines = [
        "| system | recall | multi-hop | precision | recall, first time needed | needed before | "
        "rated helpful before | walk share | desire share | helpful ratings / question |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, g in rows.groupby("system", sort=False):
        q = g.groupby("query_id")[
            [
                "needed_recall",
                "precision",
                "recall_new",
                "recall_seen",
                "recall_rated",
                "walk_share",
                "desire_share",
                "rated_helpful",
            ]
        ].mean()
        m = cat.reindex(q.index) == MULTI
        lines.append(
            f"| {name} | {q['needed_recall'].mean():.3f} | {q['needed_recall'][m].mean():.3f} | "
            f"{q['precision'].mean():.3f} | {q['recall_new'].mean():.3f} | {q['recall_seen'].mean():.3f} | "
            f"{q['recall_rated'].mean():.3f} | {q['walk_share'].mean():.3f} | "
            f"{q['desire_share'].mean():.3f} | {q['rated_helpful'].mean():.2f} |"
        )
    n_m = int((cat == MULTI).sum())
    lines.append(f"\n{len(cat)} questions ({n_m} {MULTI}), {rows['seed'].nunique()} seed(s).")

    return "\n".join(lines)


def pairs(
    rows: pd.DataFrame, a: str, others: list[str], contrasts: list[tuple[str, str, str, str]] = ()
) -> str:
    """Paired differences per question (mean over seeds), with 95% bootstrap intervals: ``a − b`` for each
    of ``others``, and for each ``(d, c, b, a)`` of ``contrasts`` the clean contrast ``(d − c) − (b − a)``
    (what online learning adds to the learned system beyond what it adds to flat)."""
    per = per_question(rows)
    new = per_question(rows, "recall_new")
    seen = per_question(rows, "recall_seen")
    cat = rows.drop_duplicates("query_id").set_index("query_id")["category"].reindex(per.index)
    m = (cat == MULTI).to_numpy()
    lines = [
        f"| pair | overall [95%] | {MULTI} [95%] | first time needed | needed before |",
        "|---|---|---|---|---|",
    ]

    def ci(x: pd.Series, y: pd.Series) -> str:
        ok = x.notna() & y.notna()
        xa, ya = x[ok].to_numpy(), y[ok].to_numpy()
        if not len(xa):
            return "– (0)"
        lo, hi = paired_bootstrap_ci(xa, ya, n_boot=10_000)
        return f"{(xa - ya).mean():+.3f} [{lo:+.3f}, {hi:+.3f}] ({int(ok.sum())})"

    for b in others:
        lines.append(
            f"| {a} − {b} | {ci(per[a], per[b])} | {ci(per[a][m], per[b][m])} | "
            f"{ci(new[a], new[b])} | {ci(seen[a], seen[b])} |"
        )
    for d, c, b, a0 in contrasts:
        cells = [
            ci(t[d] - t[c], t[b] - t[a0]) for t in (per, per.loc[m] if m.any() else per.iloc[:0], new, seen)
        ]
        lines.append(f"| ({d} − {c}) − ({b} − {a0}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread(rows: pd.DataFrame, a: str, b: str) -> str:
    """``a − b`` (mean needed recall) per conversation × seed: the spread the question-level interval does
    not show (a seed moves the policy, the question order and the rater together)."""
    rows = rows[rows["n_needed"] > 0]
    cell = rows.groupby(["graph_id", "seed", "system"])["needed_recall"].mean().unstack("system")
    diff = (cell[a] - cell[b]).dropna()
    lines = [f"| conversation | seed | {a} − {b} |", "|---|---:|---:|"]
    lines += [f"| {g} | {s} | {v:+.3f} |" for (g, s), v in diff.items()]
    lines.append(
        f"\n{a} − {b} by conversation × seed: {diff.min():+.3f} to {diff.max():+.3f} ({len(diff)} cells)."
    )
    return "\n".join(lines)


def curve(rows: pd.DataFrame, bins: tuple[int, ...] = (0, 25, 50, 100, 150, 10_000)) -> str:
    rows = rows[rows["n_needed"] > 0].copy()
    rows["bin"] = pd.cut(rows["position"], bins=list(bins), right=False)
    tab = rows.pivot_table(
        index="bin", columns="system", values="needed_recall", aggfunc="mean", observed=True
    )
    n = rows[rows["system"] == rows["system"].iloc[0]].groupby("bin", observed=True).size()
    lines = [
        "| question position | answers (question × seed) | " + " | ".join(tab.columns) + " |",
        "|---|---:|" + "---:|" * len(tab.columns),
    ]
    for b, r in tab.iterrows():
        lines.append(
            f"| {b.left}–{b.right - 1} | {n.get(b, 0)} | " + " | ".join(f"{v:.3f}" for v in r) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--split", default="validation", choices=["validation", "test"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument(
        "--policy",
        default="runs/report/locomo-linucb-s{seed}",
        help="the saved policy of each seed ({seed} is replaced)",
    )
    ap.add_argument(
        "--validation-policy-seed",
        type=int,
        default=0,
        help="on validation, every order seed uses this seed's policy",
    )
    ap.add_argument(
        "--grid", choices=sorted(GRIDS), default=None, help="every setting of a validation grid (validation)"
    )
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--out", default=None)
    ap.add_argument("--rows", default=None, help="print the tables of saved rows (a parquet) and exit")
    ap.add_argument("--force", action="store_true", help="overwrite an existing test parquet")
    args = ap.parse_args()
    if args.rows:
        report(pd.read_parquet(args.rows), grid=False)
        return
    if args.grid and args.split != "validation":
        sys.exit("--grid chooses settings: validation only")
    out = (
        Path(args.out)
        if args.out
        else ROOT
        / "runs"
        / "online_desire"
        / (f"{args.dataset}-{args.split}{'-grid-' + args.grid if args.grid else ''}.parquet")
    )
    try:
        conf = recipe(args.dataset)
        commit = guard_test_read(args.dataset, out, args.force) if args.split == "test" else ""
    except ValueError as e:
        sys.exit(str(e))
    if commit:
        print(f"recipe {CONF / args.dataset}.yaml at commit {commit}", file=sys.stderr)
    ds = load_test_data(args.dataset)
    queries = ds.split(args.split)
    if args.max_queries:
        queries = queries[: args.max_queries]
    frames = []
    for seed in args.seeds:
        pseed = args.validation_policy_seed if args.split == "validation" else seed
        policy = args.policy.format(seed=pseed)
        systems = systems_for(args.dataset, conf, policy, args.grid)
        t0 = time.time()
        for s in systems.values():
            s.retriever.index(ds)
        print(
            f"seed {seed}: policy {policy}, {len(systems)} systems indexed in {time.time() - t0:.0f} s",
            file=sys.stderr,
            flush=True,
        )

        def tick(i: int, n: int, seed: int = seed) -> None:
            if i % 50 == 0 or i == n:
                print(f"seed {seed}: {i}/{n} questions", file=sys.stderr, flush=True)

        frames.append(
            prequential(
                ds,
                systems,
                queries,
                seed=seed,
                budget_chars=args.budget,
                rater_noise=conf["rater_noise"],
                rater_prob=conf["rater_prob"],
                progress=tick,
            )
        )
        del systems
    rows = pd.concat(frames, ignore_index=True)
    if commit:
        rows["recipe_commit"] = commit
    out.parent.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(out)
    print(f"rows: {out}", file=sys.stderr)
    report(rows, grid=bool(args.grid))


def report(rows: pd.DataFrame, grid: bool) -> None:
    """Print the tables of prequential rows (the summary; without ``grid`` also the pairs and the curve)."""
    if "recipe_commit" in rows:
        print(f"recipe commit: {', '.join(sorted(set(rows['recipe_commit'])))}\n")
    print(summary(rows))
    if not grid:
        print()
        print(
            pairs(
                rows,
                "learned_online",
                ["best_flat", "flat_feedback", "learned_frozen", "online_memory"],
                [("learned_online", "learned_frozen", "flat_feedback", "best_flat")],
            )
        )
        print()
        print(pairs(rows, "flat_feedback", ["best_flat"]))
        print()
        print(spread(rows, "learned_online", "learned_frozen"))
        print()
        print(curve(rows))


if __name__ == "__main__":
    main()
