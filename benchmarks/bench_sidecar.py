"""The predictor sidecar's ``score`` latency: 100 candidates on a ``synthetic:xl`` Signet store.

Writes the synthetic graph as a Signet store and, without ``--policy``, trains and exports the default GNN
(a smoke-sized ``python -m signet_rl.train`` run: the default architecture, whose cost per call does not
depend on how long it trained), both cached under ``data/bench/``. Then starts ``python -m signet_rl.serve
sidecar --db ... --policy DIR`` as a subprocess, as Signet's daemon does, and times ``--calls`` round trips
of a ``score`` call over 100 memories drawn at random (seeded) — the JSON encoding, the pipe and the scoring,
which is what Signet's 120 ms timeout covers. Prints p50/p95/max, the sidecar's CPU time per call (what a
call costs on an idle core: on a loaded machine wall time also counts waiting for a core) and the load
average before and after; writes ``benchmarks/results/sidecar.json``. Never asserts timings.

    python benchmarks/bench_sidecar.py                                   # the default GNN, synthetic:xl
    python benchmarks/bench_sidecar.py --policy data/policies/gnn        # an exported policy
    python benchmarks/bench_sidecar.py --policy prior --spec synthetic:medium --calls 50
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = ROOT / "benchmarks" / "results" / "sidecar.json"


def store_for(spec: str) -> Path:
    """The Signet store of ``spec``'s first graph (written once, then reused)."""
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.store import write_graph

    path = ROOT / "data" / "bench" / f"{spec.replace(':', '_')}.db"
    if not path.exists():
        ds = load_dataset(spec)
        write_graph(next(iter(ds.graphs.values())), path)
    return path


def default_policy() -> Path:
    """The default GNN trained smoke-sized and exported (once, then reused): ``data/bench/policies/gnn``."""
    out = ROOT / "data" / "bench" / "policies" / "gnn"
    if (out / "manifest.json").exists():
        return out
    run = ROOT / "data" / "bench" / "runs" / "gnn"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIGNET_RL_SMOKE": "1"}
    print("training and exporting the default GNN (smoke-sized) once ...", flush=True)
    subprocess.run([sys.executable, "-m", "signet_rl.train", f"run_dir={run}", "mlflow.enabled=false",
                    "progress=false"], check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)  # fmt: skip
    subprocess.run([sys.executable, "-m", "signet_rl.export", str(run), "--out", str(out)], check=True,
                   cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return out


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default="synthetic:xl")
    parser.add_argument("--policy", help="an artifact, or 'prior' (default: the default GNN, built once)")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    from signet_rl import smoke

    if smoke.enabled():  # SIGNET_RL_SMOKE=1 (the README test): the same path on the tiny preset
        args.spec, args.calls = smoke.tiny_spec(args.spec), min(args.calls, 5)
    load_before = os.getloadavg()
    db = store_for(args.spec)
    if args.policy is None:
        args.policy = str(default_policy())
    elif args.policy == "prior":
        args.policy = None
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY id")]
    args.candidates = min(args.candidates, len(ids))
    cmd = [sys.executable, "-m", "signet_rl.serve", "sidecar", "--db", str(db), "--native-dim", "768"]
    if args.policy:
        cmd += ["--policy", args.policy]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    rng = np.random.default_rng(args.seed)
    context = rng.standard_normal(768).round(4).tolist()
    times = []
    cpu_start: float | None = None
    for i in range(args.calls + 1):
        cands = [ids[j] for j in rng.choice(len(ids), size=args.candidates, replace=False)]
        line = json.dumps({"jsonrpc": "2.0", "id": i, "method": "score",
                           "params": {"context_embedding": context, "candidate_ids": cands}})  # fmt: skip
        t0 = time.perf_counter()
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        elapsed = time.perf_counter() - t0
        if "error" in reply:
            raise SystemExit(f"score failed: {reply['error']}")
        if i == 0:
            startup = time.perf_counter() - start  # load + first call (cold caches)
            cpu_start = cpu_seconds(proc.pid)
        else:
            times.append(elapsed * 1000)
    cpu_end = cpu_seconds(proc.pid)
    cpu_ms = None if cpu_start is None or cpu_end is None else (cpu_end - cpu_start) * 1000 / args.calls
    load_after = os.getloadavg()
    proc.stdin.close()
    proc.wait(timeout=60)
    ms = np.asarray(times)
    result = {
        "spec": args.spec, "policy": args.policy or "prior", "candidates": args.candidates,
        "calls": args.calls, "startup_s": round(startup, 2), "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2), "max_ms": round(float(ms.max()), 2),
        "cpu_ms_per_call": None if cpu_ms is None else round(cpu_ms, 2),
        "load_before": round(load_before[0], 2), "load_after": round(load_after[0], 2),
        "memories": len(ids), "machine": f"{platform.machine()} {os.cpu_count()} cpus",
    }  # fmt: skip
    cpu = "" if cpu_ms is None else f"; sidecar CPU {cpu_ms:.1f} ms per call"
    print(f"sidecar score, {args.candidates} candidates, {args.spec} ({len(ids)} memories), "
          f"policy {result['policy']}: startup+first call {startup:.1f} s; p50 {result['p50_ms']} ms, "
          f"p95 {result['p95_ms']} ms, max {result['max_ms']} ms over {args.calls} calls{cpu}; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
          f"({os.cpu_count()} cpus)")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing[f"{args.spec}|{result['policy'] if not args.policy else Path(args.policy).name}"] = result
    args.out.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
