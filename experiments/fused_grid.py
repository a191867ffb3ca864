"""Choose ``desire_fused``'s weights (:class:`signet_rl.scorers.fused.FusedScorer`) on VALIDATION queries.

The candidates of every validation query are walked once (the non-learned walk: no desire-path order) and
the standardised prior / PPR / flat columns computed once; every weight triple of a small grid then ranks
them, and the evaluation harness scores the slates at each budget. The triple with the best mean
validation nDCG@10 over the seeds and budgets wins; it is frozen in ``conf/scorer/fused.yaml`` and in
``DEFAULT_FUSED_WEIGHTS``. Test queries are never touched.

    python experiments/fused_grid.py --spec synthetic:medium --version 2 --seeds 0 1 --budgets 400 2000
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from signet_rl.core.types import Query, Unit
from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate, select_queries
from signet_rl.pipeline.desire import Candidates, DesirePathRetriever
from signet_rl.scorers import PRE_SWEEP_DEFAULTS
from signet_rl.scorers.fused import BaseScores

TRAVERSAL = {"max_branching": 4, "max_paths": 50, "max_depth": 2, "min_confidence": 0.5}
GRID = {"prior": (0.0, 0.1, 0.25, 0.5, 1.0), "ppr": (0.0, 1.0), "flat": (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)}


class _Precomputed:
    """A retriever over precomputed candidates and base columns, ranking by ``z @ w``."""

    def __init__(self, walker: DesirePathRetriever, cached: dict[str, tuple[Candidates, np.ndarray]],
                 weights: np.ndarray) -> None:  # fmt: skip
        self.walker, self.cached, self.weights, self.name = walker, cached, weights, "fused"

    def index(self, dataset: Any) -> None:
        return None

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        hit = self.cached.get(query.id)
        if hit is None:
            return []
        cands, z = hit
        scores = z @ self.weights
        scored = zip(cands.walk.paths, scores.tolist(), strict=True)
        return self.walker.slate(query, cands, scored, budget_chars)


def grid_search(spec: str, version: int, seeds: Sequence[int], budgets: Sequence[int],
                max_queries: int | None) -> list[dict[str, Any]]:  # fmt: skip
    rows: list[dict[str, Any]] = []
    triples = [t for t in itertools.product(*GRID.values()) if any(t)]
    for seed in seeds:
        ds = load_dataset(f"synthetic:{spec.split(':')[1]}:{seed}", options={"version": version})
        walker = DesirePathRetriever("prior", config=TRAVERSAL, encoder="hashing")
        walker.index(ds)
        base = BaseScores(**PRE_SWEEP_DEFAULTS["prior"])  # the 90-day prior column its grid was run with
        cached = {}
        for q in select_queries(ds, "validation", max_queries, seed):
            cands = walker.candidates(q)
            if cands is not None and cands.walk.paths:
                cached[q.id] = (cands, base.features(q, cands.walk.paths, cands.context).astype(np.float64))
        for t in triples:
            ret = _Precomputed(walker, cached, np.asarray(t))
            for budget in budgets:
                res = evaluate(ds, {"fused": ret}, split="validation", budget_chars=budget,
                               max_queries=max_queries, seed=seed, n_boot=1)  # fmt: skip
                r = res.rows[res.rows["n_needed"] > 0]
                rows.append({"seed": seed, "budget": budget, **dict(zip(GRID, t, strict=True)),
                             "ndcg@10": float(r["ndcg@10"].mean()),
                             "needed_recall": float(r["needed_recall"].mean())})  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="synthetic:medium")
    ap.add_argument("--version", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--budgets", type=int, nargs="+", default=[400, 2000])
    ap.add_argument("--max-queries", type=int, default=200)
    ap.add_argument("--out", default=None, help="write every grid row here (JSON)")
    args = ap.parse_args()
    import pandas as pd

    rows = grid_search(args.spec, args.version, args.seeds, args.budgets, args.max_queries)
    frame = pd.DataFrame(rows)
    mean = frame.groupby(list(GRID))[["ndcg@10", "needed_recall"]].mean().sort_values("ndcg@10")
    print(mean.tail(10).to_string())
    best = mean.index[-1]
    print("best (validation nDCG@10):", json.dumps(dict(zip(GRID, best, strict=True))))
    if args.out:
        frame.to_json(args.out, orient="records", indent=1)


if __name__ == "__main__":
    main()
