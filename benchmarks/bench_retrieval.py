"""Speed of entry search and the flat baseline on a synthetic preset (default ``xl``, ~40k memories).

Measures, in one run and on the same queries: index build time and per-query latency p50/p95 of entry-entity
search and of each flat-baseline variant (hashing encoder, exact vector search); the flat baseline is the
yardstick the entry search is read against. MiniLM encoding throughput is reported on its own (it needs the
``embed`` extra). Figures are printed and written to ``benchmarks/results/retrieval.json``; nothing is
asserted.

    python benchmarks/bench_retrieval.py                     # xl, 300 queries
    python benchmarks/bench_retrieval.py --preset small --queries 100 --no-minilm
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from signet_rl.datasets.synthetic import generate
from signet_rl.retrieval.entry import EntrySearch
from signet_rl.retrieval.flat import flat_variant

VARIANTS = ("flat_signet", "flat_signet_uncapped", "flat_hybrid_bm25s", "flat_vector", "flat_bm25")


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
    }


def _latencies(fn: Callable[[Any], object], items: Iterable[Any]) -> dict[str, float]:
    """p50/p95/mean milliseconds of ``fn(item)`` over ``items``, one call at a time."""
    seconds = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        seconds.append(time.perf_counter() - t)
    return _percentiles(seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="xl")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--no-minilm", action="store_true")
    ap.add_argument("--output", default=str(Path(__file__).parent / "results" / "retrieval.json"))
    args = ap.parse_args()

    t = time.perf_counter()
    ds = generate(args.preset, seed=args.seed)
    gen_s = time.perf_counter() - t
    queries = ds.split("test")[: args.queries]
    print(
        f"{ds.name}: {ds.graph.num_entities:,} entities, {ds.graph.num_memories:,} memories, "
        f"{len(queries)} test queries (generated in {gen_s:.1f} s)"
    )
    out: dict[str, object] = {
        "dataset": ds.name,
        "queries": len(queries),
        "entities": ds.graph.num_entities,
        "memories": ds.graph.num_memories,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "results": {},
    }
    results: dict[str, dict[str, float]] = out["results"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as cache:
        entry = EntrySearch(encoder="hashing")
        t = time.perf_counter()
        entry.index(ds.graph)
        build = time.perf_counter() - t
        lat = _latencies(lambda q: entry.search(q.text, k=10, timestamp=q.timestamp), queries)
        results["entry_search"] = {"build_s": round(build, 3), **lat}
        for name in VARIANTS:
            r = flat_variant(name, encoder="hashing", cache_dir=cache)
            t = time.perf_counter()
            r.index(ds)
            build = time.perf_counter() - t
            results[name] = {"build_s": round(build, 3), **_latencies(r.retrieve, queries)}
    print(f"{'':<24}{'build s':>10}{'p50 ms':>10}{'p95 ms':>10}")
    for name, r in results.items():
        print(f"{name:<24}{r['build_s']:>10.2f}{r['p50_ms']:>10.2f}{r['p95_ms']:>10.2f}")
    # HNSW against exact search on the same memory vectors (exact is what every evaluation uses).
    from signet_rl.retrieval.indexes import VectorIndex
    from signet_rl.text.encoders import HashingEncoder

    enc = HashingEncoder()
    vecs = enc.encode(ds.graph.memories["content"].tolist())
    qv = enc.encode([q.text for q in queries])
    hnsw_rows = []
    for ef in (64, 256):
        idx = VectorIndex(enc.dim, hnsw_above=0, ef_search=ef)
        t = time.perf_counter()
        idx.add(vecs)
        build = time.perf_counter() - t
        lat = _latencies(lambda row, idx=idx: idx.search(row[None, :], 20), qv)
        hnsw_rows.append(
            {
                "ef_search": ef,
                "build_s": round(build, 2),
                "recall@20": round(idx.recall_against_exact(qv, 20), 3),
                **lat,
            }
        )
    exact = VectorIndex(enc.dim)
    exact.add(vecs)
    out["hnsw"] = {"exact": _latencies(lambda row: exact.search(row[None, :], 20), qv), "hnsw": hnsw_rows}
    print(
        f"exact search p50 {out['hnsw']['exact']['p50_ms']:.2f} ms; HNSW (M=32): "
        + "; ".join(
            f"ef_search {r['ef_search']}: recall@20 {r['recall@20']:.3f}, p50 {r['p50_ms']:.2f} ms"
            for r in hnsw_rows
        )
    )
    if not args.no_minilm:
        try:
            from signet_rl.text.encoders import MiniLMEncoder

            enc = MiniLMEncoder()
            texts = ds.graph.memories["content"].tolist()[:1000]
            enc.encode(texts[:32])  # load and warm up
            t = time.perf_counter()
            enc.encode(texts)
            secs = time.perf_counter() - t
            out["minilm"] = {
                "texts": len(texts),
                "seconds": round(secs, 2),
                "texts_per_s": round(len(texts) / secs, 1),
            }
            print(f"MiniLM encoding: {len(texts)} memories in {secs:.1f} s ({len(texts) / secs:.0f}/s)")
        except ImportError as exc:
            print(f"MiniLM skipped: {exc}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
