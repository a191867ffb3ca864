"""Local push PageRank against igraph's whole-graph solve on real candidate sets: agreement and CPU time.

For each validation query of a synthetic preset (default ``synthetic:medium:0`` v2, the training set of the
default GNN, and ``synthetic:xl:0``, the serving store), the desire pipeline's candidate paths (the dataset's
traversal block, the ``prior`` scorer's walk) are scored by :class:`~signet_rl.scorers.prior.PPRScorer`
twice: exactly (``tol=None``, igraph's PRPACK over the whole graph) and by local forward push at each
``--tols`` value. Per tolerance, over the queries with at least two candidates: Kendall's tau-b between
the two score vectors (mean and minimum), how often the top candidate is the same, the mean share of
push's top 3 that is in the exact top 3 (ties included), the largest difference of the GNN's standardised
PPR column (what the net reads), and the CPU time per query's scoring (``time.process_time``, not wall
time: the machine may be shared). Prints a table with the load average and writes
``benchmarks/results/ppr.json``; nothing is asserted.

    python benchmarks/bench_ppr.py                                  # medium v2 and xl, 300 queries each
    python benchmarks/bench_ppr.py --presets small --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from signet_rl.datasets.synthetic import generate
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers.fused import standardise
from signet_rl.scorers.prior import PPRScorer

ROOT = Path(__file__).resolve().parents[1]
#: The traversal of ``conf/dataset/synthetic.yaml`` (the training runs' walk).
TRAVERSAL = {"max_depth": 2, "max_branching": 4, "max_paths": 50, "min_confidence": 0.5}


def _cpu_ms(fn: Any) -> tuple[Any, float]:
    t = time.process_time()
    out = fn()
    return out, 1000 * (time.process_time() - t)


def measure(preset: str, version: int, n_queries: int, tols: list[float]) -> dict[str, Any]:
    """The agreement and timing rows of one preset (see the module docstring)."""
    ds = generate(preset, seed=0, version=version)
    retriever = DesirePathRetriever("prior", config=TRAVERSAL)
    retriever.index(ds)
    state = retriever._state("main")
    queries = ds.split("validation")[:n_queries]
    exact = PPRScorer(tol=None)
    pushes = {tol: PPRScorer(tol=tol) for tol in tols}
    for s in (exact, *pushes.values()):
        s.prepare(state.graph, state.arrays)
    rows: dict[float, dict[str, list[float]]] = {
        tol: {"tau": [], "top1": [], "top3": [], "z": [], "ms": []} for tol in tols
    }
    exact_ms: list[float] = []
    used = 0
    for q in queries:
        cands = retriever.candidates(q)
        if cands is None or len(cands.walk.paths) < 2:
            continue
        paths, ctx = cands.walk.paths, cands.context
        exact._ranks.clear()  # time the solve, not the per-entry-set cache
        ref, ms = _cpu_ms(lambda q=q, paths=paths, ctx=ctx: exact.score(q, paths, ctx))
        exact_ms.append(ms)
        if np.ptp(ref) == 0:
            continue
        used += 1
        z_ref = standardise(ref.reshape(-1, 1))[:, 0]
        third = np.sort(ref)[-min(3, len(ref))]  # a push top-3 member agrees if it ties into exact's top 3
        for tol, scorer in pushes.items():
            ctx.cache.clear()
            scorer._ranks.clear()
            got, ms = _cpu_ms(lambda s=scorer, q=q, paths=paths, ctx=ctx: s.score(q, paths, ctx))
            r = rows[tol]
            r["ms"].append(ms)
            tau = kendalltau(ref, got).statistic
            r["tau"].append(1.0 if np.isnan(tau) else float(tau))
            r["top1"].append(float(np.argmax(ref) == np.argmax(got)))
            picked = np.argsort(-got, kind="stable")[:3]
            r["top3"].append(float(np.mean(ref[picked] >= third - 1e-12 * abs(third))))
            r["z"].append(float(np.abs(standardise(got.reshape(-1, 1))[:, 0] - z_ref).max()))
        ctx.cache.clear()
    out: dict[str, Any] = {"dataset": ds.name, "entities": int(ds.graph.num_entities), "queries": used,
                           "exact_cpu_ms_p50": round(float(np.median(exact_ms)), 3), "tols": {}}  # fmt: skip
    for tol, r in rows.items():
        out["tols"][str(tol)] = {
            "kendall_tau_mean": round(float(np.mean(r["tau"])), 5),
            "kendall_tau_min": round(float(np.min(r["tau"])), 5),
            "top1_same": round(float(np.mean(r["top1"])), 4),
            "top3_overlap": round(float(np.mean(r["top3"])), 4),
            "max_abs_z_diff": float(np.max(r["z"])),
            "cpu_ms_p50": round(float(np.median(r["ms"])), 3),
            "cpu_ms_p95": round(float(np.percentile(r["ms"], 95)), 3),
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["medium:2", "xl:1"],
                    help="preset:generator_version pairs")  # fmt: skip
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--tols", type=float, nargs="+", default=[1e-4, 1e-5, 1e-6, 1e-7])
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "ppr.json"))
    args = ap.parse_args(argv)
    load_before = [round(x, 2) for x in os.getloadavg()]
    results = []
    for spec in args.presets:
        preset, _, version = spec.partition(":")
        res = measure(preset, int(version or 2), args.queries, args.tols)
        results.append(res)
        print(f"{res['dataset']} ({res['entities']:,} entities, {res['queries']} validation queries with "
              f"candidates): igraph exact CPU p50 {res['exact_cpu_ms_p50']:.2f} ms")  # fmt: skip
        print(f"  {'tol':>8} {'tau mean':>9} {'tau min':>8} {'top1':>6} {'top3':>6} {'max|dz|':>9} "
              f"{'cpu p50':>8} {'cpu p95':>8}")  # fmt: skip
        for tol, r in res["tols"].items():
            print(f"  {float(tol):>8.0e} {r['kendall_tau_mean']:>9.5f} {r['kendall_tau_min']:>8.4f} "
                  f"{r['top1_same']:>6.3f} {r['top3_overlap']:>6.3f} {r['max_abs_z_diff']:>9.2e} "
                  f"{r['cpu_ms_p50']:>8.3f} {r['cpu_ms_p95']:>8.3f}")  # fmt: skip
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {load_before} -> {load_after}")
    out = {"results": results, "load_avg": [load_before, load_after], "cpu_count": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M")}  # fmt: skip
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.output}")
    return out


if __name__ == "__main__":
    main()
