"""Desire-path retrieval with each non-learned scorer against the flat baseline, with the candidate ceiling.

Same queries, same budget, one run: ``best_flat`` (the strongest flat retriever for the dataset's family,
frozen on validation in ``conf/best_flat.yaml``; never chosen here), ``flat_signet_uncapped`` (Signet's hybrid
recall, budget as the only cap), desire paths scored by ``prior``, ``ppr`` and ``random``, and the
**candidate ceiling** — the same traversal's candidates ranked by an oracle that reads ground truth
(evaluation only), so traversal misses and scorer misses can be told apart. ``flat_signet`` (Signet's own
caps, no shared budget) is a separate, unpaired row in every table, as in ``signet_rl.evaluate``'s
``own_caps``. Each ``--budgets`` value is a separate comparison (a tight budget is where scorers differ on
recall). Prints its section and writes it into ``docs/results.md`` between markers named after the dataset
(``desire:start``/``desire:end`` for the synthetic benchmark, ``desire-<kind>:start``/``:end`` otherwise)
through :func:`signet_rl.reporting.publish`: a rerun whose figures match the committed ones (timings and
date aside) changes nothing, and a run of another protocol (dataset, budgets, query subset, bootstrap
draws) goes to ``runs/scratch/results.md`` unless ``--replace``; ``--scratch`` sends any run there.

Only test queries are scored, as ``python -m signet_rl.evaluate`` scores them: the synthetic benchmark's test
split (generator version ``--synthetic-version``, default 2; v1 with ``--synthetic-version 1``), and for a
dataset whose config has a ``learning_split`` (LoCoMo, MuSiQue ship every query as test) that split's test
fold, never the validation fold ``best_flat`` was chosen on.

    python experiments/desire_report.py                           # synthetic:medium:0 (v2), test split
    python experiments/desire_report.py --dataset locomo --max-queries 300
    python experiments/desire_report.py --dataset musique --budgets 2000 800
    python experiments/desire_report.py --dataset locomo --split validation --encoder minilm \
        --ablations --budgets 2000 --scratch                 # the hybrid-entry ablations, dev figures

``--ablations`` adds, for each hybrid-entry ablation of :data:`ABLATIONS` (floor only, + session DAG,
+ entity walks, full), the non-learned desire retriever (``prior``, floor first) and its candidate ceiling,
plus ``hipporag_ppr`` (:class:`~signet_rl.retrieval.ppr.PPRRetriever`), all in the same run as
``best_flat``. Every desire row reports ``walk_share`` (the share of its injected characters that came from
walk or session units) and ``pool`` (candidates per query). ``--split validation`` evaluates the validation
fold of the dataset's learning split (k=5, fold 0, seed 0, grouped by graph when there are several: the
fold ``best_flat`` was chosen on); use it for anything that chooses, never the test fold.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import pandas as pd

from signet_rl import smoke
from signet_rl.datasets.registry import DATASET_CONF, REPORT_SYNTHETIC_VERSION, load_test_data
from signet_rl.evaluation.harness import EvaluationResult, evaluate, render_markdown
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.reporting import SCRATCH, Section, publish
from signet_rl.retrieval.flat import BEST_FLAT, UNCAPPED, flat_variant
from signet_rl.retrieval.ppr import PPRRetriever
from signet_rl.scorers import PRE_SWEEP_DEFAULTS, make_scorer

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["needed_recall", "precision", "f1", "ndcg@10", "mrr", "tokens", "misleading_items"]
# Kept for the synthetic section (and the tests that look for it).
START, END = "<!-- desire:start -->", "<!-- desire:end -->"
# Timings in the budget headings: a rerun with other timings and the same figures changes nothing.
SECONDS = re.compile(r", \d+ s\)")
#: The synthetic generator version every report uses by default (v1 stays selectable).
SYNTHETIC_VERSION = REPORT_SYNTHETIC_VERSION


def _reported_prior():
    """The prior of the reported tables: its 90-day half-life before issue 25 §3 tuned the default (not
    rerun since)."""
    return make_scorer("prior", **PRE_SWEEP_DEFAULTS["prior"])


def configured_traversal(dataset: str, conf_dir: str | Path | None = None) -> dict:
    """The ``hybrid`` block of ``conf/dataset/<kind>.yaml``: the hybrid entry's candidate bounds and
    ``floor_share`` chosen on validation by ``experiments/hybrid_split.py``, laid under the ablations'
    pieces (a block apart from ``dataset.traversal``, so runs trained under the old traversal still
    resume); ``{}`` when the file or the block is absent."""
    import yaml

    file = Path(conf_dir if conf_dir is not None else DATASET_CONF) / f"{dataset.split(':', 1)[0]}.yaml"
    if not file.is_file():
        return {}
    return dict((yaml.safe_load(file.read_text()) or {}).get("hybrid") or {})


def section_name(dataset: str) -> str:
    """The marker name of ``dataset``'s section in the results file."""
    kind = dataset.split(":", 1)[0]
    return "desire" if kind == "synthetic" else f"desire-{kind}"


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    """``frame`` (its index as columns) as a Markdown table."""
    return render_markdown(frame.reset_index(), digits)


#: The hybrid-entry ablations: traversal overrides on top of the dataset's traversal block.
ABLATIONS: dict[str, dict[str, bool]] = {
    "floor": {"floor": True, "session": False, "entity_walks": False, "graph_walk": False},
    "session": {"floor": True, "session": True, "entity_walks": False, "graph_walk": False},
    "walks": {"floor": True, "session": True, "entity_walks": True, "graph_walk": False},
    "full": {"floor": True, "session": True, "entity_walks": True, "graph_walk": True},
}


def ablation_retrievers(ds, traversal: dict | None, encoder: str) -> dict:
    """``best_flat``, ``hipporag_ppr`` and per ablation ``desire_prior[<ablation>]`` and
    ``candidate_ceiling[<ablation>]`` (one best_flat instance is the floor of all of them)."""
    floor = flat_variant(BEST_FLAT)
    out: dict = {"best_flat": floor, "hipporag_ppr": PPRRetriever(encoder=encoder)}
    for name, pieces in ABLATIONS.items():
        cfg = {**(traversal or {}), **pieces}
        out[f"desire_prior[{name}]"] = DesirePathRetriever(
            _reported_prior(), config=cfg, encoder=encoder, flat=floor, name=f"desire_prior[{name}]"
        )
        out[f"candidate_ceiling[{name}]"] = DesirePathRetriever(
            OracleScorer(ds), config=cfg, encoder=encoder, flat=floor, name=f"candidate_ceiling[{name}]"
        )
    return out


def retrievers(ds, traversal: dict | None) -> dict:
    """The budgeted comparison: every retriever here is cut to the same budget."""
    flat = flat_variant("flat_signet", encoder="hashing", **UNCAPPED)
    flat.name = "flat_signet_uncapped"
    return {
        "best_flat": flat_variant(BEST_FLAT),  # the frozen choice for ds's family, read when indexed
        "flat_signet_uncapped": flat,
        "desire_prior": DesirePathRetriever(_reported_prior(), config=traversal),
        "desire_ppr": DesirePathRetriever("ppr", config=traversal),
        "desire_random": DesirePathRetriever("random", config=traversal),
        "candidate_ceiling": DesirePathRetriever(
            OracleScorer(ds), config=traversal, name="candidate_ceiling"
        ),
    }


def own_caps(ds, n_boot: int, max_queries: int | None, split: str = "test") -> EvaluationResult:
    """``flat_signet`` under Signet's own caps and no shared budget: unpaired with the budgeted rows."""
    return evaluate(
        ds,
        {"flat_signet": flat_variant("flat_signet", encoder="hashing")},
        split=split,
        budget_chars=None,
        n_boot=n_boot,
        max_queries=max_queries,
        ks=(2, 5, 10),
    )


def section(
    ds,
    budget: int,
    n_boot: int,
    max_queries: int | None,
    traversal: dict | None,
    own: EvaluationResult,
    named: dict | None = None,
    split: str = "test",
) -> list[str]:
    t = time.perf_counter()
    shared = evaluate(
        ds,
        named if named is not None else retrievers(ds, traversal),
        split=split,
        budget_chars=budget,
        n_boot=n_boot,
        max_queries=max_queries,
        ks=(2, 5, 10),
    )
    secs = time.perf_counter() - t
    res = EvaluationResult.concat([shared, own])
    rows = res.rows
    lines = [
        f"#### Budget {budget} characters ({res.num_queries} {split} queries, {secs:.0f} s)",
        "",
        "```",
        res.table(),
        "```",
        "",
    ]
    if rows["intent"].notna().any() and rows["intent"].nunique() > 1:
        per_intent = rows.groupby(["intent", "retriever"], sort=True)[METRICS].mean()
        lines += ["Per intent (means):", "", table(per_intent), ""]
    answered = rows[rows["n_needed"] > 0]
    if answered["category"].notna().any():
        cols = ["needed_recall", "recall@2", "recall@5"]
        per_cat = answered.groupby(["category", "retriever"])[cols].mean()
        lines += [
            "Per query category (needed-recall; item recall@2 and @5 in ranked order):",
            "",
            table(per_cat),
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="synthetic:medium:0")
    ap.add_argument(
        "--synthetic-version",
        type=int,
        default=SYNTHETIC_VERSION,
        choices=(1, 2),
        help="the synthetic generator version (default 2)",
    )
    ap.add_argument(
        "--budgets",
        type=int,
        nargs="+",
        default=[2000, 400],
        help="character budgets, one comparison each (default: 2000 400)",
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--max-queries", type=int, default=None, help="a seeded subset of the test queries")
    ap.add_argument("--output", default=str(ROOT / "docs" / "results.md"))
    ap.add_argument("--replace", action="store_true", help="replace a committed section of another protocol")
    ap.add_argument(
        "--scratch", action="store_true", help=f"an exploratory run: write under {SCRATCH}/, not --output"
    )
    ap.add_argument("--scratch-dir", default=None, help=f"where refused and scratch runs go ({SCRATCH})")
    ap.add_argument("--split", choices=["test", "validation"], default="test",
                    help="validation: the learning split's validation fold (k=5, fold 0, seed 0)")
    ap.add_argument("--encoder", default="hashing", help="encoder of the desire and PPR retrievers")
    ap.add_argument("--ablations", action="store_true",
                    help="the hybrid-entry ablations (floor / +session / +entity walks / full) "
                    "and hipporag_ppr")
    args = ap.parse_args(argv)
    if smoke.enabled():  # SIGNET_RL_SMOKE=1: the tiny preset (or 20 queries), 20 draws; lands in scratch
        args.dataset = smoke.tiny_spec(args.dataset)
        args.n_boot = min(args.n_boot, 20)
        args.max_queries = None if args.dataset.startswith("synthetic:") else 20
    ds = load_test_data(args.dataset, args.synthetic_version)
    synthetic = args.dataset.startswith("synthetic:")
    fold = ds.meta.get("learning_split")
    traversal = ds.meta.get("traversal")  # none of the loaders set one today; dataset configs may
    if args.ablations:  # the hybrid bounds chosen on validation (conf/dataset/<kind>.yaml's hybrid block)
        traversal = {**configured_traversal(args.dataset), **(traversal or {})} or None
    subset = f" --max-queries {args.max_queries}" if args.max_queries else ""
    subset += f" --split {args.split}" if args.split != "test" else ""
    subset += f" --ablations --encoder {args.encoder}" if args.ablations else ""
    budgets = " ".join(str(b) for b in args.budgets)
    version = f" --synthetic-version {args.synthetic_version}" if synthetic else ""
    scored = (
        f"generator v{args.synthetic_version}, {args.split} split"
        if synthetic
        else f"{args.split} fold {fold['fold']} of the {fold['k']}-fold learning split"
        if fold
        else "test split"
    )
    lines = [
        f"_Written by `python experiments/desire_report.py --dataset {args.dataset}{version} --budgets "
        f"{budgets}{subset}` on {time.strftime('%Y-%m-%d')}; {args.n_boot} bootstrap draws._",
        "",
        f"### Desire paths vs flat retrieval on `{ds.name}` ({scored})",
        "",
        "Every retriever answers the same queries under the same budget. The desire-path pipeline "
        "predicts the intent with the rule classifier and lands on entities with entry search; neither "
        "reads ground truth. `candidate_ceiling` ranks the same traversal's candidates with an oracle "
        "that does. `best_flat` is the flat retriever frozen for this dataset family on validation "
        "(`conf/best_flat.yaml`). `flat_signet` runs under Signet's own caps with no shared budget "
        "(budget `none`): it is unpaired with the budgeted rows and the same in every table.",
        "",
    ]
    if args.ablations and traversal:
        lines += [f"Hybrid-entry settings (`hybrid` of `conf/dataset/{args.dataset.split(':', 1)[0]}.yaml`, "
                  f"chosen on validation by `experiments/hybrid_split.py`): `{json.dumps(traversal)}`.", ""]
    own = own_caps(ds, args.n_boot, args.max_queries, args.split)
    for budget in args.budgets:
        named = ablation_retrievers(ds, traversal, args.encoder) if args.ablations else None
        lines += section(ds, budget, args.n_boot, args.max_queries, traversal, own, named, args.split)
    body = "\n".join(lines)
    print(body)
    protocol: dict = {
        "dataset": args.dataset,
        **({"synthetic_version": args.synthetic_version} if synthetic else {}),
        **({"test_fold": fold} if fold else {}),
        "budgets": list(args.budgets),
        "max_queries": args.max_queries,
        "n_boot": args.n_boot,
        **({"split": args.split} if args.split != "test" else {}),
        **({"ablations": True, "encoder": args.encoder} if args.ablations else {}),
        **({"traversal": traversal} if args.ablations and traversal else {}),
    }
    publish(
        args.output,
        [Section(section_name(args.dataset), body, protocol=protocol, volatile=(SECONDS,))],
        "desire_report.py",
        replace=args.replace,
        scratch=args.scratch,
        scratch_dir=args.scratch_dir or ROOT / SCRATCH,
    )
    return body


if __name__ == "__main__":
    main()
