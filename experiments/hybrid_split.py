"""Choose the hybrid entry's candidate bounds and its floor/walk budget split on VALIDATION (issue 24).

Two choices, both on the validation fold of the dataset's learning split (k=5, fold 0, seed 0: the fold
``best_flat`` was chosen on; never the test fold), in one run with ``best_flat`` on the same queries:

1. **the candidate bounds** (``--pools``): for each named setting of :data:`POOLS` (how many of the 50
   candidate slots go to the floor, the session steps and the entity walks), the candidate ceiling — the
   pool ranked by an oracle that reads ground truth (evaluation only). The setting with the highest
   ceiling wins (ties: the earlier one).
2. **the budget split** (``--shares``): for each ``floor_share`` (the share of the budget the floor is
   guaranteed in flat's order; the rest goes to every remaining candidate in the scorer's order), the
   non-learned desire retriever (``prior``) on the chosen pool. The share with the highest needed recall
   wins (ties: the larger share, i.e. the one closer to flat).

It prints the figures and the chosen setting as the ``hybrid`` block of ``conf/dataset/<kind>.yaml``
(which ``experiments/desire_report.py`` reads); it writes nothing.

    python experiments/hybrid_split.py --dataset locomo --encoder minilm --budget 2000 --max-queries 120
    python experiments/hybrid_split.py --dataset musique --encoder minilm --budget 2000
"""

from __future__ import annotations

import argparse
import json
import time

from signet_rl.datasets.registry import load_test_data
from signet_rl.evaluation.harness import evaluate
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import BEST_FLAT, flat_variant
from signet_rl.scorers import PRE_SWEEP_DEFAULTS, make_scorer

#: The hybrid pieces switched on (the issue's *full* ablation without the graph walk, which adds
#: aspect/attribute paths only).
PIECES = {"floor": True, "session": True, "entity_walks": True, "graph_walk": False}

#: Candidate bounds tried for the ceiling (each within max_paths <= 50 and 10 budgets of text).
POOLS: dict[str, dict] = {
    "default": {},
    "walk24": {"max_floor_paths": 16, "session_paths": 10, "walk_paths": 24},
    "walk24m5": {"max_floor_paths": 16, "session_paths": 10, "walk_paths": 24, "walk_memories_per_entity": 5},
    "sess20": {"max_floor_paths": 16, "session_paths": 20, "walk_paths": 14},
    "anchors8": {"max_floor_paths": 16, "session_paths": 16, "walk_paths": 18, "session_anchors": 8,
                 "session_window": 2},
    "deep": {"max_floor_paths": 30, "floor_budget_factor": 3.0, "session_paths": 10, "walk_paths": 10},
    "deep_w1": {"max_floor_paths": 30, "floor_budget_factor": 3.0, "session_paths": 8, "walk_paths": 12,
                "walk_memories_per_entity": 1},
    "deep_walk15": {"max_floor_paths": 30, "floor_budget_factor": 3.0, "session_paths": 5, "walk_paths": 15},
    "deeper": {"max_floor_paths": 36, "floor_budget_factor": 4.0, "session_paths": 7, "walk_paths": 7},
}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--pools", nargs="+", default=list(POOLS), choices=list(POOLS))
    ap.add_argument("--shares", nargs="*", type=float, default=[1.0, 0.8, 0.6, 0.4])
    ap.add_argument("--n-boot", type=int, default=200)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    ds = load_test_data(args.dataset)
    floor = flat_variant(BEST_FLAT)
    named: dict = {"best_flat": floor}
    for name in args.pools:
        cfg = {**PIECES, **POOLS[name]}
        named[f"ceiling[{name}]"] = DesirePathRetriever(
            OracleScorer(ds), config=cfg, encoder=args.encoder, flat=floor, name=f"ceiling[{name}]"
        )
    res = evaluate(ds, named, split="validation", budget_chars=args.budget, max_queries=args.max_queries,
                   n_boot=args.n_boot)
    summ = res.summary()
    print(res.table())
    ceilings = {n: float(summ.loc[f"ceiling[{n}]", "needed_recall"]) for n in args.pools}
    pool = max(args.pools, key=lambda n: (ceilings[n], -args.pools.index(n)))
    print(f"ceilings {json.dumps(ceilings)} -> pool {pool}", flush=True)
    if not args.shares:
        print("hybrid:", json.dumps(POOLS[pool]), f"({time.perf_counter() - t0:.0f} s)")
        return dict(POOLS[pool])
    named = {"best_flat": floor}
    for share in args.shares:
        cfg = {**PIECES, **POOLS[pool], "floor_share": share}
        named[f"desire_prior[share={share:g}]"] = DesirePathRetriever(
            make_scorer("prior", **PRE_SWEEP_DEFAULTS["prior"]),  # as its choice was made: the 90-day prior
            config=cfg, encoder=args.encoder, flat=floor, name=f"desire_prior[share={share:g}]",
        )
    res = evaluate(ds, named, split="validation", budget_chars=args.budget, max_queries=args.max_queries,
                   n_boot=args.n_boot)
    summ = res.summary()
    print(res.table())
    recall = {s: float(summ.loc[f"desire_prior[share={s:g}]", "needed_recall"]) for s in args.shares}
    share = max(args.shares, key=lambda s: (recall[s], s))
    chosen = {**POOLS[pool], "floor_share": share}
    print(f"recall by share {json.dumps({f'{k:g}': v for k, v in recall.items()})} -> floor_share {share:g}")
    print("hybrid:", json.dumps(chosen), f"({time.perf_counter() - t0:.0f} s)")
    return chosen


if __name__ == "__main__":
    main()
