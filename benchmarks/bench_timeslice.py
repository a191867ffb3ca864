"""Per-query cost of seeing only the past: each scorer and index on the whole timeline against the same
component restricted to the rows that existed at the query time, on the same queries in the same run.

"whole" is what every component did before issue 23 (part 4): PPR, path features and GNN node states over
every edge, degree and community; BM25/FTS5 with the statistics of every row. "sliced" is what they do now
(:class:`~signet_rl.graph.timeslice.TimeSlices`, masked BM25 statistics, FTS5 holding the past rows). The
share of edges in a query's future is printed too. Prints a table and writes
``benchmarks/results/timeslice.json``; nothing is asserted.

    python benchmarks/bench_timeslice.py                       # synthetic:medium, 100 test queries
    python benchmarks/bench_timeslice.py --preset small --queries 50
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from signet_rl.datasets.synthetic import generate
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import UNCAPPED, flat_variant
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.features import PathFeaturizer
from signet_rl.scorers.gnn import GNNPathScorer
from signet_rl.scorers.prior import PPRScorer


def _p50(ms: list[float]) -> float:
    return round(float(np.percentile(np.asarray(ms), 50)), 3) if ms else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--output", default=str(Path(__file__).parent / "results" / "timeslice.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    ds = generate(args.preset, seed=0)
    r = DesirePathRetriever("prior")
    r.index(ds)
    state = r._state("main")
    g, a = state.graph, state.arrays
    slices = TimeSlices(a)
    train = ds.split("train")
    future = [1.0 - float(slices.edge_mask(q.timestamp).mean()) for q in train]
    print(f"{ds.name}: {a.num_entities:,} entities, {a.num_dependencies:,} edges; edges in a training "
          f"query's future: mean {np.mean(future):.1%}, median {np.median(future):.1%}")  # fmt: skip

    cases = []
    for q in ds.split("test"):
        cands = r.candidates(q)
        if cands is not None and cands.walk.paths:
            cases.append((q, list(cands.walk.paths), cands.entries))
        if len(cases) >= args.queries:
            break

    ppr, feat = PPRScorer(), PathFeaturizer(g, a)
    gnn = GNNPathScorer(seed=0)
    flats = {v: flat_variant(v, encoder="hashing", **UNCAPPED) for v in ("flat_signet", "flat_bm25")}
    for f in flats.values():
        f.index(ds)

    def ctx(entries: list[str], t: float | None) -> ScoringContext:
        return ScoringContext(g, a, entries, t)

    def timed(fn: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1000

    rows: dict[str, dict[str, list[float]]] = {}

    def run(q, paths, entries, mode: str | None) -> None:
        """Time every component on one query on the whole timeline or the slice (``None``: warm-up)."""
        sliced = mode == "sliced"
        t = q.timestamp.timestamp() if sliced else None
        qq = q if sliced else dataclasses.replace(q, timestamp=None)
        c = ctx(entries, t)
        steps: list[tuple[str, Callable[[], object]]] = [
            ("ppr score", lambda: ppr.score(q, paths, c)),
            ("path features", lambda: feat.features(paths, c)),
            ("gnn score", lambda: gnn.score(q, paths, c)),
            ("gnn inputs (training)", lambda: gnn._inputs(gnn._state(g, a), [(q, paths, c)], train=True)),
            ("entry search", lambda: state.entry.search(q.text, k=2, timestamp=qq.timestamp)),
        ]
        for name, f in flats.items():
            label = f"{name} (fts5)" if name == "flat_signet" else f"{name} (bm25s)"
            steps.append((label, lambda f=f: f.retrieve(qq)))
        for name, fn in steps:
            ms = timed(fn)
            if mode is not None:
                rows.setdefault(name, {"whole": [], "sliced": []})[mode].append(ms)

    gnn.node_states(g, a)  # the whole-timeline cache is built once, as before
    for mode in (None, "whole", "sliced"):  # a warm-up pass (encoders, lazy vectors), then each in turn
        for q, paths, entries in cases:
            run(q, paths, entries, mode)

    out = {
        "dataset": ds.name,
        "queries": len(cases),
        "cpus": os.cpu_count(),
        "future_edge_share_train": {"mean": round(float(np.mean(future)), 4),
                                    "median": round(float(np.median(future)), 4)},
        "p50_ms": {k: {"whole": _p50(v["whole"]), "sliced": _p50(v["sliced"])} for k, v in rows.items()},
    }  # fmt: skip
    print(f"{'per query':<26}{'whole p50 ms':>14}{'sliced p50 ms':>15}")
    for k, v in out["p50_ms"].items():
        print(f"{k:<26}{v['whole']:>14.2f}{v['sliced']:>15.2f}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
