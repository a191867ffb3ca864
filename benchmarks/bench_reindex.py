"""The cost of a live graph change in the service (issue 29 §6): a principle verb or a bridge move re-indexes
the desire retriever under the service's lock (``Service._reindex``), so recalls wait that long.

On a Signet store written from a synthetic preset (v1, the served situation: a store is never the training
graph), with an exported policy artifact (``--policy DIR``), measured beside the service's whole start on
the same store in the same run (its baseline): start seconds, then ``--repeats`` re-indexes (min, median,
max), plain traversal and the hybrid entry (``serve --hybrid``). Prints a table with the load average and
writes ``benchmarks/results/reindex.json``; nothing is asserted.

    python benchmarks/bench_reindex.py --policy data/policies/gnn --preset medium
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy", required=True, help="an exported policy artifact")
    parser.add_argument("--preset", default="medium")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.store import write_graph
    from signet_rl.serving.app import HYBRID, Service

    graph = next(iter(load_dataset(f"synthetic:{args.preset}:{args.seed}").graphs.values()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = write_graph(graph, Path(tmp) / "memories.db")
        for name, traversal in (("plain", None), ("hybrid", HYBRID)):
            t0 = time.perf_counter()
            svc = Service(store, args.policy, Path(tmp) / f"{name}.sqlite", traversal=traversal)
            start = time.perf_counter() - t0
            times = [svc._reindex(svc.graph) for _ in range(args.repeats)]
            svc.state.close()
            rows.append({"traversal": name, "start_s": start, "reindex_min_s": min(times),
                         "reindex_median_s": float(np.median(times)), "reindex_max_s": max(times)})
    out = {"preset": args.preset, "seed": args.seed, "entities": graph.num_entities,
           "dependencies": len(graph.dependencies), "policy": str(args.policy), "repeats": args.repeats,
           "load_average": os.getloadavg(), "rows": rows}
    print(f"synthetic:{args.preset}:{args.seed}: {graph.num_entities:,} entities, "
          f"{len(graph.dependencies):,} dependencies; load average {out['load_average'][0]:.2f}")
    print(f"{'traversal':<10}{'start s':>10}{'reindex min':>14}{'median':>10}{'max':>10}")
    for r in rows:
        print(f"{r['traversal']:<10}{r['start_s']:>10.2f}{r['reindex_min_s']:>14.3f}"
              f"{r['reindex_median_s']:>10.3f}{r['reindex_max_s']:>10.3f}")
    path = ROOT / "benchmarks" / "results" / "reindex.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
