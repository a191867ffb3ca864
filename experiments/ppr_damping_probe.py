"""Why PPR's damping moved nothing in the equal-tuning sweep (issue 25 §3): on validation queries only, under
the tuned traversal (``conf/experiment/learning/sweep/traversal_best.yaml``), how many candidates a query has,
how many entities each touches, how many distinct PPR scores they get, whether their order changes between
two dampings, and the validation nDCG@10 at three dampings.

    python experiments/ppr_damping_probe.py                      # synthetic:small:0 v2, 400 characters
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import spearmanr

from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers.prior import PPRScorer

ROOT = Path(__file__).resolve().parents[1]
DAMPINGS = (0.15, 0.5, 0.9)


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="synthetic:small:0")
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--max-queries", type=int, default=60, help="validation queries evaluated")
    ap.add_argument("--probe", type=int, default=15, help="validation queries whose scores are compared")
    args = ap.parse_args(argv)
    best = yaml.safe_load((ROOT / "conf/experiment/learning/sweep/traversal_best.yaml").read_text())
    trav = best["traversal"]
    ds = load_dataset(args.spec, options={"version": 2})
    rets = {f"d{d}": DesirePathRetriever(PPRScorer(damping=d), config=trav, name=f"d{d}") for d in DAMPINGS}
    res = evaluate(ds, rets, split="validation", budget_chars=args.budget, max_queries=args.max_queries,
                   n_boot=1, progress=False)  # fmt: skip
    rows = res.rows[res.rows["n_needed"] > 0].pivot(index="query_id", columns="retriever", values="ndcg@10")
    lo, hi = f"d{DAMPINGS[0]}", f"d{DAMPINGS[-1]}"
    out: dict[str, object] = {
        "val ndcg@10": {k: round(float(v), 4) for k, v in rows.mean().items()},
        "queries whose ndcg@10 differs (lowest vs highest damping)": int(
            (~np.isclose(rows[lo], rows[hi])).sum()
        ),
        "queries": len(rows),
    }
    walker = rets[f"d{DAMPINGS[1]}"]
    walker.index(ds)
    a_s, b_s = PPRScorer(damping=DAMPINGS[0]), PPRScorer(damping=DAMPINGS[-1])
    probe = []
    for q in [q for q in ds.queries if q.split == "validation"][: args.probe]:
        c = walker.candidates(q)
        if c is None or not c.walk.paths:
            probe.append({"query": q.id, "candidates": 0})
            continue
        a = a_s.score(q, c.walk.paths, c.context)
        b = b_s.score(q, c.walk.paths, c.context)
        same = bool((np.argsort(-a, kind="stable") == np.argsort(-b, kind="stable")).all())
        distinct = len(set(np.round(a, 12)))
        probe.append({
            "query": q.id, "candidates": len(c.walk.paths),
            "entities touched": sorted({len(p.entities) for p in c.walk.paths}),
            "distinct scores": distinct, "same order": same,
            "spearman": round(float(spearmanr(a, b).correlation), 4) if distinct > 1 else None,
        })  # fmt: skip
    out["probe"] = probe
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
