"""Per-query latency of desire-path retrieval on a synthetic preset, beside the flat baseline, and Leiden.

Stages timed per query (same test queries, hashing encoder, one process): entry search, traversal, scoring
(prior and PPR), construction of the slate; the flat baseline (`flat_signet_uncapped`) on the same queries is
the yardstick. Leiden (igraph, modularity) is timed on the same graph. Issue 4's target: traversal + prior
scoring + construction p50 under 10 ms on 2 cores, Leiden under 10 s. Prints a table and writes
``benchmarks/results/desire.json``; nothing is asserted.

    python benchmarks/bench_desire.py                      # xl, 300 queries
    python benchmarks/bench_desire.py --preset small --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from signet_rl.datasets.synthetic import generate
from signet_rl.graph.communities import detect_communities
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import UNCAPPED, flat_variant
from signet_rl.scorers.base import ScoringContext
from signet_rl.traversal.construct import build_slate


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"p50_ms": round(float(np.percentile(a, 50)), 3), "p95_ms": round(float(np.percentile(a, 95)), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="xl")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--output", default=str(Path(__file__).parent / "results" / "desire.json"))
    args = ap.parse_args()
    ds = generate(args.preset, seed=0)
    queries = [q for q in ds.split("test")][: args.queries]
    g = ds.graph
    print(f"{ds.name}: {g.num_entities:,} entities, {g.num_memories:,} memories, {len(queries)} queries")

    t = time.perf_counter()
    com = detect_communities(ds.graph, objective="modularity", backend="igraph", seed=0)
    leiden_s = time.perf_counter() - t

    desire = {name: DesirePathRetriever(name) for name in ("prior", "ppr")}
    index_s = {}
    for name, r in desire.items():
        t = time.perf_counter()
        r.index(ds)
        index_s[name] = time.perf_counter() - t
    r = desire["prior"]
    state = r._state("main")
    stages: dict[str, list[float]] = {
        k: [] for k in ("entry", "walk", "prior", "ppr", "construct", "end_to_end")
    }
    for q in queries:
        t0 = time.perf_counter()
        intent = r.classifier.predict([q.text])[0]
        if intent == "none":
            continue
        entries = r.entries(q, intent)
        t1 = time.perf_counter()
        walk = state.traverser.walk(entries, intent, q.timestamp)
        t2 = time.perf_counter()
        ctx = ScoringContext(state.graph, state.arrays, entries, q.timestamp.timestamp())
        scores = desire["prior"].scorer.score(q, walk.paths, ctx)
        t3 = time.perf_counter()
        desire["ppr"].scorer.score(q, walk.paths, ScoringContext(state.graph, state.arrays, entries, None))
        t4 = time.perf_counter()
        build_slate(
            zip(walk.paths, scores.tolist(), strict=True),
            walk.constraints,
            2000,
            state.builder,
            at=q.timestamp,
        )
        t5 = time.perf_counter()
        for key, secs in (
            ("entry", t1 - t0),
            ("walk", t2 - t1),
            ("prior", t3 - t2),
            ("ppr", t4 - t3),
            ("construct", t5 - t4),
            ("end_to_end", (t5 - t4) + (t3 - t0)),
        ):
            stages[key].append(secs * 1000)
    core = [w + p + c for w, p, c in zip(stages["walk"], stages["prior"], stages["construct"], strict=True)]
    flat = flat_variant("flat_signet", encoder="hashing", **UNCAPPED)
    flat.index(ds)
    flat_ms = []
    for q in queries:
        t = time.perf_counter()
        flat.retrieve(q)
        flat_ms.append((time.perf_counter() - t) * 1000)
    out = {
        "dataset": ds.name,
        "queries": len(stages["walk"]),
        "cpus": os.cpu_count(),
        "leiden_s": round(leiden_s, 2),
        "communities": len(com.sizes),
        "modularity": round(com.modularity, 4),
        "index_s": {k: round(v, 2) for k, v in index_s.items()},
        "stages": {k: _stats(v) for k, v in stages.items()},
        "traversal_prior_construction": _stats(core),
        "flat_signet_uncapped": _stats(flat_ms),
    }
    print(f"{'stage':<34}{'p50 ms':>10}{'p95 ms':>10}")
    for k, v in out["stages"].items():
        print(f"{k:<34}{v['p50_ms']:>10.2f}{v['p95_ms']:>10.2f}")
    core_s = out["traversal_prior_construction"]
    print(
        f"{'traversal + prior + construction':<34}{core_s['p50_ms']:>10.2f}{core_s['p95_ms']:>10.2f}"
        f"   target p50 < 10 ms: {'PASS' if core_s['p50_ms'] < 10 else 'MISS'}"
    )
    f = out["flat_signet_uncapped"]
    print(f"{'flat_signet_uncapped (same queries)':<34}{f['p50_ms']:>10.2f}{f['p95_ms']:>10.2f}")
    print(
        f"Leiden (igraph, modularity): {leiden_s:.2f} s, {out['communities']} communities, modularity "
        f"{out['modularity']}   target < 10 s: {'PASS' if leiden_s < 10 else 'MISS'}"
    )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
