"""Leiden communities: igraph's built-in ``community_leiden`` vs ``leidenalg``, same objective (modularity).

Per dataset (``synthetic:medium``, ``synthetic:xl``; ``kg:kinship`` and ``musique`` when
``SIGNET_RL_DATA`` is set) it times the community-graph build (:func:`community_graph`, from the
``GraphArrays``), then each backend's Leiden run (seed 0, until stable) and reports the number of
communities, the weighted modularity, NMI/ARI against the planted communities (synthetic only) and the
NMI between the two backends' partitions. As a reference it also runs igraph under the RB objective at
``--rb-resolution`` (smaller communities; modularity's resolution limit merges planted ones on xl).

Prints a table and writes ``benchmarks/results/communities.json``. Never asserts timings.

    python benchmarks/bench_communities.py
    python benchmarks/bench_communities.py --datasets synthetic:medium
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from signet_rl.datasets.registry import load_dataset
from signet_rl.evaluation.audit import recovery
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.communities import DEFAULT_BACKEND, community_graph, detect_communities, nmi_ari

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "communities.json"


def bench(spec: str, seed: int, rb_resolution: float) -> dict[str, Any]:
    """Build the community graph of ``spec`` and run each backend on it."""
    start = time.perf_counter()
    dataset = load_dataset(spec)
    load = time.perf_counter() - start
    graph_id, graph = next(iter(dataset.graphs.items()))  # the first graph of multi-graph datasets
    start = time.perf_counter()
    arrays = GraphArrays.from_graph(graph)
    arrays_s = time.perf_counter() - start
    start = time.perf_counter()
    g = community_graph(arrays)
    build = time.perf_counter() - start
    planted = dataset.truth.labels.get("entities") is not None
    runs: dict[str, Any] = {}
    found = {}
    for name, backend, objective, resolution in (
        ("igraph", "igraph", "modularity", 1.0),
        ("leidenalg", "leidenalg", "modularity", 1.0),
        (f"igraph_rb{rb_resolution:g}", "igraph", "rb", rb_resolution),
    ):
        c = detect_communities(graph, objective=objective, resolution=resolution, seed=seed,
                               backend=backend, community=g)
        found[name] = c
        runs[name] = {
            "backend": backend, "objective": objective, "resolution": resolution,
            "seconds": round(c.seconds, 3), "communities": c.num_communities,
            "modularity": round(c.modularity, 4), "structure": c.structure,
            "weak": int(c.weak.sum()),
            **({k: round(v, 4) for k, v in recovery(dataset, c).items()} if planted else {}),
        }
        print(f"  {spec} {name}: {c.seconds:.2f} s, {c.num_communities} communities, "
              f"modularity {c.modularity:.4f}", flush=True)
    between = nmi_ari(found["igraph"].membership, found["leidenalg"].membership)
    return {
        "dataset": dataset.name, "graph": graph_id, "entities": g.vcount(), "edges": g.ecount(),
        "load_seconds": round(load, 3), "arrays_seconds": round(arrays_s, 3),
        "build_seconds": round(build, 3), "runs": runs,
        "backends_nmi": round(between["nmi"], 4), "backends_ari": round(between["ari"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rb-resolution", type=float, default=8.0)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    specs = args.datasets or (["synthetic:medium", "synthetic:xl"]
                              + (["kg:kinship", "musique"] if os.environ.get("SIGNET_RL_DATA") else []))
    results = []
    for spec in specs:
        print(f"{spec} ...", flush=True)
        results.append(bench(spec, args.seed, args.rb_resolution))

    header = (f"{'dataset':<18} {'run':<12} {'entities':>8} {'edges':>8} {'build s':>7} {'leiden s':>8} "
              f"{'comms':>6} {'modularity':>10} {'NMI':>6} {'ARI':>6} {'NMI ig~la':>9}")
    print("\n" + header + "\n" + "-" * len(header))
    for r in results:
        for name, run in r["runs"].items():
            nmi = f"{run['nmi']:.3f}" if "nmi" in run else "-"
            ari = f"{run['ari']:.3f}" if "ari" in run else "-"
            print(f"{r['dataset']:<18} {name:<12} {r['entities']:>8} {r['edges']:>8} "
                  f"{r['build_seconds']:>7.2f} {run['seconds']:>8.2f} {run['communities']:>6} "
                  f"{run['modularity']:>10.4f} {nmi:>6} {ari:>6} {r['backends_nmi']:>9.3f}")
    print(f"\ndefault backend: {DEFAULT_BACKEND} (same objective, same modularity and recovery, far faster)")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "seed": args.seed, "default_backend": DEFAULT_BACKEND, "results": results,
    }, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
