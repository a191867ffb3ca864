"""Choose ``best_flat`` per dataset family on validation only, and freeze it in ``conf/best_flat.yaml``.

The strongest flat retriever is chosen once, here, before any comparison; ``evaluate`` and ``train`` read the
frozen choice (:func:`signet_rl.retrieval.flat.best_flat`) and never choose again. Every trial runs on the
*validation* queries only — the dataset is cut to them before any retriever sees a query, so no test figure
can be computed, let alone printed:

* ``synthetic``: the generator's validation split of ``--synthetic`` (default ``synthetic:medium:0``) built
  by generator version ``--synthetic-version`` (default 2, the version every report uses; recorded in the
  frozen entry's ``options``);
* ``locomo`` and ``musique``: the validation fold of the learning split ``conf/dataset/<family>.yaml`` names
  (``learning_split``: fold f is test, fold f+1 validation), the folds ``python -m signet_rl.train`` uses.

The search space (:func:`trials`), the same for every family except window expansion, which only LoCoMo's
ordered turns get: for each encoder (hashing, MiniLM) Signet's fusion uncapped (``flat_signet_uncapped``),
the same without its 0.4 gate, with its step 4 and constraints section (``flat_signet_full``), dense alone
without the gate (``flat_dense``), min-max linear fusion with alpha 0.1, 0.3, 0.5, 0.7, 0.9
(``flat_minmax``), reciprocal-rank fusion with k 10, 30, 60 (``flat_rrf``); and BM25 alone
(``flat_bm25_open``): 25 trials, times 3 on LoCoMo (window 0, 1, 2 neighbouring turns each side) = 75. The
desire scorers' tuning gets 3 settings each (``experiments/learning_report.py``) and the documented traversal
sweep 6 (``conf/train.yaml``), so flat gets more trials than any of them.

The objective per family: ``needed_recall@2000`` (needed-item recall within 2,000 characters, the headline
tables' budget; over validation queries that need something) for synthetic and LoCoMo; ``passage_recall@5``
(supporting-passage recall over the first 5 units, the published MuSiQue figure) for MuSiQue. Ties go to
the earlier trial.

    python experiments/best_flat.py                      # every family; writes conf/best_flat.yaml
    python experiments/best_flat.py --families locomo    # one family; the others are kept as frozen
    python experiments/best_flat.py --check              # rerun each frozen choice: do its figures match?
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from signet_rl.datasets import load_dataset
from signet_rl.datasets.base import Dataset, GroundTruth
from signet_rl.datasets.registry import configured_learning_split
from signet_rl.evaluation.harness import dataset_hash, evaluate, recall_at_k_units
from signet_rl.retrieval.flat import BEST_FLAT_FILE, best_flat, flat_variant, load_best_flat

ROOT = Path(__file__).resolve().parents[1]
#: Bumped whenever the search space, the objectives or the validation data change (2: synthetic v2).
SCRIPT_VERSION = 2
#: The synthetic generator version chosen on by default: v2, the default of every report script.
SYNTHETIC_VERSION = 2
BUDGET = 2000
ENCODERS = ("hashing", "minilm")
ALPHAS = (0.1, 0.3, 0.5, 0.7, 0.9)
RRF_KS = (10, 30, 60)
DECIMALS = 4


@dataclass(frozen=True)
class Family:
    """One dataset family: its default spec, the objective, and the windows its memories allow."""

    spec: str
    metric: str
    windows: tuple[int, ...] = (0,)


FAMILIES: dict[str, Family] = {
    "synthetic": Family("synthetic:medium:0", "needed_recall@2000"),
    "locomo": Family("locomo", "needed_recall@2000", windows=(0, 1, 2)),
    "musique": Family("musique", "passage_recall@5"),
}


# -- the validation data ----------------------------------------------------------------------------------
def learning_split(family: str) -> dict[str, Any] | None:
    """The ``learning_split`` block of ``conf/dataset/<family>.yaml`` (``None``: the dataset's own splits)."""
    return configured_learning_split(family, ROOT / "conf" / "dataset")


def validation_only(dataset: Dataset, split: dict[str, Any] | None) -> Dataset:
    """``dataset`` (after ``split``'s learning folds, when given) cut to its validation queries and the graphs
    they ask: nothing else can be evaluated."""
    if split is not None:
        dataset = dataset.learning_split(
            k=int(split["k"]), fold=int(split.get("fold", 0)), seed=int(split.get("seed", 0)),
            group=split.get("group"),
        )  # fmt: skip
    queries = [q for q in dataset.queries if q.split == "validation"]
    if not queries:
        raise ValueError(f"dataset {dataset.name!r} has no validation queries to choose best_flat on")
    graphs = {gid: g for gid, g in dataset.graphs.items() if gid in {q.graph_id for q in queries}}
    truth = GroundTruth([dataset.truth[q.id] for q in queries], dataset.truth.labels)
    return Dataset(dataset.name, graphs, queries, truth, dataset.report, dataset.meta)


# -- the search space -------------------------------------------------------------------------------------
def trials(encoders: Sequence[str], windows: Sequence[int]) -> list[tuple[str, dict[str, Any]]]:
    """Every (variant, knobs) tried, in order (ties go to the earlier)."""
    base: list[tuple[str, dict[str, Any]]] = []
    for enc in encoders:
        base += [
            ("flat_signet_uncapped", {"encoder": enc}),
            ("flat_signet_uncapped", {"encoder": enc, "gate": None}),
            ("flat_signet_full", {"encoder": enc}),
            ("flat_dense", {"encoder": enc}),
        ]
        base += [("flat_minmax", {"encoder": enc, "alpha": a}) for a in ALPHAS]
        base += [("flat_rrf", {"encoder": enc, "rrf_k": k}) for k in RRF_KS]
    base.append(("flat_bm25_open", {}))
    return [(v, {**p, "window": w} if w else dict(p)) for w in windows for v, p in base]


def label(variant: str, params: dict[str, Any]) -> str:
    return variant + ("[" + ", ".join(f"{k}={v}" for k, v in params.items()) + "]" if params else "")


# -- the objective ----------------------------------------------------------------------------------------
def figures(dataset: Dataset, retriever: Any, metric: str) -> dict[str, float]:
    """``metric`` and its companions on ``dataset`` (already cut to validation), rounded."""
    if metric == "needed_recall@2000":
        res = evaluate(dataset, {"r": retriever}, split="validation", budget_chars=BUDGET, n_boot=1)
        rows = res.rows[res.rows["n_needed"] > 0]
        out = {
            "needed_recall@2000": rows["needed_recall"].mean(),
            "f1@2000": rows["f1"].mean(),
            "ndcg@10@2000": rows["ndcg@10"].mean(),
        }
    elif metric == "passage_recall@5":
        frame = recall_at_k_units(dataset, {"r": retriever}, ks=(2, 5), split="validation")
        mean = frame.groupby("k")["recall"].mean()
        out = {"passage_recall@5": mean[5], "passage_recall@2": mean[2]}
    else:
        raise ValueError(f"unknown objective {metric!r}; known: needed_recall@2000, passage_recall@5")
    return {k: round(float(v), DECIMALS) for k, v in out.items()}


def choose(
    family: str,
    spec: str,
    encoders: Sequence[str],
    windows: Sequence[int] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every trial for ``family`` on validation, print each figure, return the frozen entry.
    ``options``: the dataset's generator options (synthetic: ``{"version": 2}``), recorded in the entry."""
    fam = FAMILIES[family]
    split = learning_split(family)
    data = validation_only(load_dataset(spec, options=options), split)
    runs = trials(encoders, fam.windows if windows is None else windows)
    print(f"== {family}: {spec}, validation only: {len(data.queries)} queries on {len(data.graphs)} "
          f"graph(s); {len(runs)} trials; objective {fam.metric}", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    results = []
    for i, (variant, params) in enumerate(runs):
        t = time.perf_counter()
        fig = figures(data, flat_variant(variant, **params), fam.metric)
        results.append((variant, params, fig))
        extra = "  ".join(f"{k} {v:.4f}" for k, v in fig.items() if k != fam.metric)
        print(f"  [{i + 1:>2}/{len(runs)}] {fam.metric} {fig[fam.metric]:.4f}  {extra}  "
              f"{label(variant, params)}  ({time.perf_counter() - t:.1f} s)", flush=True)  # fmt: skip
    best = max(range(len(results)), key=lambda i: (results[i][2][fam.metric], -i))
    variant, params, fig = results[best]
    references = [("flat_signet_uncapped", {"encoder": e}) for e in encoders]
    references += [("flat_dense", {"encoder": "minilm"})] if "minilm" in encoders else []
    refs = {label(v, p): f[fam.metric] for v, p, f in results if (v, p) in references}
    seconds = time.perf_counter() - t0
    print(f"-> best_flat[{family}] = {label(variant, params)}: validation {fam.metric} {fig[fam.metric]:.4f}"
          f" ({seconds:.0f} s)", flush=True)  # fmt: skip
    for name, value in refs.items():
        print(f"   reference {name}: validation {fam.metric} {value:.4f}")
    return {
        "variant": variant,
        "params": params,
        "dataset": spec,
        **({"options": dict(options)} if options else {}),
        "learning_split": split,
        "split": "validation",
        "queries": len(data.queries),
        "dataset_hash": dataset_hash(data),
        "objective": fam.metric,
        "validation": fig,
        "references": refs,
        "trials": len(runs),
        "seconds": round(seconds, 1),
    }


def check(path: Path, families: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    """Rerun every frozen choice (or ``families``) on its validation data and compare its figures.

    Raises:
        ValueError: a figure that does not match the file (naming the family, the figure and both values),
            or a family the file does not hold.
    """
    data = load_best_flat(path)
    frozen = data["families"]
    out = {}
    for family in families or list(frozen):
        if family not in frozen:
            raise ValueError(f"{path}: no frozen choice for family {family!r}; frozen: {', '.join(frozen)}")
        entry = frozen[family]
        split = entry.get("learning_split")
        options = entry.get("options")  # absent: frozen before options were recorded (generator v1)
        data = load_dataset(str(entry["dataset"]), options=dict(options) if options else None)
        ds = validation_only(data, dict(split) if split else None)
        got = figures(ds, best_flat(family, path), str(entry["objective"]))
        for name, value in dict(entry["validation"]).items():
            if not math.isclose(got.get(name, math.nan), float(value), abs_tol=10**-DECIMALS / 2):
                raise ValueError(
                    f"{path}: families.{family}.validation.{name} is {value} but a rerun of "
                    f"{label(entry['variant'], dict(entry['params']))} on {entry['dataset']} validation "
                    f"gives {got.get(name)}; the data or the code changed since it was frozen: rerun "
                    f"python experiments/best_flat.py --families {family} and commit the new choice"
                )
        print(f"{family}: {label(entry['variant'], dict(entry['params']))} validation "
              f"{entry['objective']} {got[entry['objective']]:.4f} matches the frozen figures")  # fmt: skip
        out[family] = got
    return out


def write(path: Path, chosen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Merge ``chosen`` into the choice file at ``path`` (other families kept) and write it."""
    old = load_best_flat(path)["families"] if path.is_file() else {}
    body = {
        "script": "experiments/best_flat.py",
        "script_version": SCRIPT_VERSION,
        "date": dt.date.today().isoformat(),
        "families": {**old, **chosen},
    }
    head = (
        "# best_flat per dataset family, chosen on VALIDATION only by experiments/best_flat.py; frozen.\n"
        "# Never edited by hand; evaluate and train read it (signet_rl.retrieval.flat.best_flat) and never\n"
        "# choose again. Rerun: python experiments/best_flat.py [--families F]; verify: --check.\n"
    )
    path.write_text(head + yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=100))
    return body


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="*", default=None, choices=list(FAMILIES), help="default: all")
    ap.add_argument("--synthetic", default=FAMILIES["synthetic"].spec, help="the synthetic spec to choose on")
    ap.add_argument(
        "--synthetic-version",
        type=int,
        default=SYNTHETIC_VERSION,
        choices=(1, 2),
        help="the synthetic generator version (default 2)",
    )
    ap.add_argument("--encoders", nargs="*", default=list(ENCODERS), choices=list(ENCODERS))
    ap.add_argument("--windows", nargs="*", type=int, default=None, help="override the families' windows")
    ap.add_argument("--output", type=Path, default=BEST_FLAT_FILE, help="the choice file")
    ap.add_argument("--check", action="store_true", help="rerun the frozen choices, compare; write nothing")
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if args.check:
        return check(args.output, args.families)
    t0 = time.perf_counter()
    chosen = {}
    for family in args.families or list(FAMILIES):
        spec = args.synthetic if family == "synthetic" else FAMILIES[family].spec
        options = {"version": args.synthetic_version} if family == "synthetic" else None
        chosen[family] = choose(family, spec, args.encoders, args.windows, options)
    body = write(args.output, chosen)
    print(f"wrote {args.output} ({time.perf_counter() - t0:.0f} s in all)")
    return body


if __name__ == "__main__":
    try:
        main()
    except ValueError as exc:
        sys.exit(f"error: {exc}")
