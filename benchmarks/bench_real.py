"""Latency of desire-path retrieval with the hybrid entry against best_flat, on LoCoMo, in the same run.

Per query, desire paths are timed end to end (``retrieve``) and stage by stage — **query encoding** (the
desire encoder's query vector), **entry search with flat hits** (intent, entry entities plus best_flat's
ranked units), **traversal** (the graph walk and the hybrid pool: floor, session-DAG steps, entity walks,
bounds), **scoring** (the scoring context and the scorer's scores, floor first) and **construction** (the
slate fitted to the budget). The stages are read from the pipeline's own stage timer
(:mod:`signet_rl.core.timing`) during the timed ``retrieve`` itself, so they cannot drift from the real
path. best_flat is timed end to end on the same queries in the same process, alternating with desire so
that a shared machine's load drifts onto both. Wall and CPU (this thread's) time are both reported. Every
query-vector memo of the process (:func:`~signet_rl.text.encoders.forget_query_vectors`: the shared query
vectors and the MiniLM encoder's one-text memo) is cleared before every timed call, so each retrieval
encodes its query; before session 4 only the first was, and the desire row read the vector the best_flat
row had just encoded (its floor's MiniLM call was a memo hit), which understated the ratio.

The encoder is MiniLM when its model is available offline (``pip install signet-rl[embed]`` and a cached
model), else the hashing encoder; the output says which. Issue 24's target: learned desire p50 <= 2 x
best_flat's p50 in the same run (the ``prior`` scorer stands in for the learned one: a learned scorer adds
its feature and forward pass to the scoring stage). Prints p50/p95 per stage and writes
``benchmarks/results/real.json``; nothing is asserted.

    python benchmarks/bench_real.py                       # 200 LoCoMo queries, 2,000 characters
    python benchmarks/bench_real.py --queries 50 --encoder hashing
    python benchmarks/bench_real.py --policy runs/report/locomo-linucb-s0   # a trained policy, timed

``--policy`` times a saved policy (an exported artifact or a training run's folder, as ``python -m
signet_rl.evaluate policy=...`` loads it) instead of the ``prior`` stand-in: the learned scorer's features
and forward pass over its own trained traversal (the recipe's hybrid bounds and ``floor_keep``), the row
``desire_learned``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from signet_rl.core.timing import DESIRE_STAGES as STAGES
from signet_rl.core.timing import StageTimer
from signet_rl.datasets import load_dataset
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import best_flat
from signet_rl.text.encoders import forget_query_vectors, make_encoder

ROOT = Path(__file__).resolve().parents[1]
FULL = {"floor": True, "session": True, "entity_walks": True, "graph_walk": True}


def pick_encoder(wanted: str) -> tuple[str, str]:
    """``(encoder name, note)``: MiniLM when it loads offline, else hashing (and why)."""
    if wanted == "hashing":
        return "hashing", "hashing (asked for)"
    try:
        make_encoder("minilm").encode(["probe"])
        return "minilm", "MiniLM (cached model)"
    except Exception as exc:  # no sentence-transformers or no cached model: say so and fall back
        return "hashing", f"hashing: MiniLM unavailable ({type(exc).__name__}: {exc})"


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000.0
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "mean_ms": float(ms.mean())}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--encoder", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "real.json"))
    ap.add_argument("--policy", default=None, help="a saved policy (artifact or run folder) to time")
    args = ap.parse_args(argv)
    encoder, note = pick_encoder(args.encoder)
    print(f"encoder: {note}")
    t = time.perf_counter()
    ds = load_dataset(args.dataset)
    load_s = time.perf_counter() - t
    overrides = {} if encoder == "minilm" else {"encoder": "hashing"}
    flat = best_flat(ds.name, **overrides)
    if args.policy:
        from signet_rl.evaluate import policy_retriever

        label = "desire_learned"
        desire = policy_retriever(args.policy, name=label)
        desire.flat_spec = flat  # the same best_flat instance as the flat row (its own encoder choice)
    else:
        label = "desire_prior"
        desire = DesirePathRetriever("prior", config=FULL, encoder=encoder, flat=flat, name=label)
    t = time.perf_counter()
    desire.index(ds)  # indexes the shared best_flat too (the desire retriever's floor)
    desire_index_s = time.perf_counter() - t
    rng = np.random.default_rng(args.seed)
    queries = list(ds.queries)
    picked = rng.choice(len(queries), min(args.queries, len(queries)), replace=False)
    queries = [queries[i] for i in sorted(picked)]
    for q in queries[:5]:  # warm caches (the encoder's first call, lazy vectors)
        desire.retrieve(q, args.budget)
        flat.retrieve(q, args.budget)
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    stages_cpu: dict[str, list[float]] = {s: [] for s in STAGES}
    desire_total: list[float] = []
    flat_total: list[float] = []
    cpu_total: dict[str, list[float]] = {"best_flat": [], label: []}
    cands: list[float] = []
    timer = StageTimer()  # the pipeline's own stage timer: the stages of the timed retrieve() itself
    desire.timer = timer
    for q in queries:
        forget_query_vectors()
        t, c = time.perf_counter(), time.thread_time()
        flat.retrieve(q, args.budget)
        flat_total.append(time.perf_counter() - t)
        cpu_total["best_flat"].append(time.thread_time() - c)
        forget_query_vectors()
        timer.clear()
        t, c = time.perf_counter(), time.thread_time()
        desire.retrieve(q, args.budget)
        desire_total.append(time.perf_counter() - t)
        cpu_total[label].append(time.thread_time() - c)
        for k in STAGES:
            stages[k].append(timer.wall.get(k, 0.0))
            stages_cpu[k].append(timer.cpu.get(k, 0.0))
        cands.append(float(timer.counts.get("candidates", 0)))
    desire.timer = None
    result: dict[str, Any] = {
        "dataset": ds.name, "queries": len(queries), "budget_chars": args.budget, "encoder": encoder,
        "encoder_note": note, "load_s": load_s, "desire_index_s": desire_index_s,
        "mean_candidates": float(np.mean(cands)),
        "desire": label, "policy": args.policy,
        "best_flat": percentiles(flat_total), label: percentiles(desire_total),
        "desire_stages": {k: percentiles(v) for k, v in stages.items()},
        "cpu": {k: percentiles(v) for k, v in cpu_total.items()},
        "desire_stages_cpu": {k: percentiles(v) for k, v in stages_cpu.items()},
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(), "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }  # fmt: skip
    ratio = result[label]["p50_ms"] / result["best_flat"]["p50_ms"]
    result["p50_ratio_desire_over_best_flat"] = ratio
    print(f"{ds.name}: {len(queries)} queries, {args.budget} characters, {result['mean_candidates']:.1f} "
          f"candidates per query; load {load_s:.1f} s, index (desire with best_flat) "
          f"{desire_index_s:.1f} s")  # fmt: skip
    print(f"{'':28s}{'p50 ms':>10s}{'p95 ms':>10s}{'cpu p50':>10s}{'cpu p95':>10s}   load average "
          f"{result['load_avg']}")  # fmt: skip
    stage_rows = [(f"  desire: {k}", v, result["desire_stages_cpu"][k])
                  for k, v in result["desire_stages"].items()]  # fmt: skip
    for name, p, c in [("best_flat (end to end)", result["best_flat"], result["cpu"]["best_flat"]),
                       (f"{label} (end to end)", result[label], result["cpu"][label]),
                       *stage_rows]:  # fmt: skip
        print(f"{name:28s}{p['p50_ms']:10.2f}{p['p95_ms']:10.2f}{c['p50_ms']:10.2f}{c['p95_ms']:10.2f}")
    print(f"desire p50 / best_flat p50 = {ratio:.2f} (target <= 2)")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
