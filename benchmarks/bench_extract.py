"""Graph extraction from raw text: the extracting LoCoMo/MuSiQue loader against the old one, same run.

Loads the dataset three ways, each in its own subprocess (so peaks and model loads are its own), pinned to
``--cores`` CPUs (default 2, OpenMP/BLAS threads to match):

* ``old``: the loader before issue 24 (LoCoMo: ``extract=False, observations=True``, the capitalised-name
  heuristic; MuSiQue: ``extract=False``, OpenIE triples alone);
* ``cold``: the extracting loader (the default) with empty extraction *and* embedding caches (a temporary
  ``$SIGNET_RL_CACHE_DIR``): spaCy, name resolution, dependencies, aspects, session DAG, MiniLM (or the
  hashing fallback) on names;
* ``warm``: the same again on the caches ``cold`` wrote.

For each it prints wall seconds, memories per second, the extractor's own seconds and memories per second
(``meta["extract"]``, summed over graphs: the spaCy model load included once), the same per CPU-second
of the process (what a busy machine distorts least), the process's peak resident
memory, and the graph's density (entities, dependencies per entity, the reachability ceiling of
:func:`signet_rl.evaluation.audit.reachability_ceiling`) -- before and after, side by side. The 1-minute load
average is printed with it: on a shared machine it explains slow figures. Target (issue 24): cold extraction
>= 50 turns/s on 2 cores. Nothing is asserted. Figures go to ``benchmarks/results/extract_<dataset>.json``.

    python benchmarks/bench_extract.py                         # LoCoMo, MiniLM names (hashing fallback)
    python benchmarks/bench_extract.py --dataset musique --encoder hashing
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
from signet_rl.datasets.registry import load_dataset
from signet_rl.evaluation.describe import density
spec, options = sys.argv[1], json.loads(sys.argv[2])
ds = load_dataset(spec, options=options)
wall = time.perf_counter() - t0
metas = [g.meta.get("extract") for g in ds.graphs.values() if g.meta.get("extract")]
memories = sum(g.num_memories for g in ds.graphs.values())
out = {"wall_s": wall, "memories": memories, "memories_per_s": memories / wall,
       "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if metas:
    secs = sum(m["seconds"] for m in metas)
    cpu = sum(m.get("cpu_seconds") or 0.0 for m in metas)
    out.update(extract_s=secs, extract_memories_per_s=memories / secs if secs else None,
               extract_cpu_s=cpu, extract_memories_per_cpu_s=memories / cpu if cpu else None,
               cache=sorted({m["cache"] for m in metas}), encoder=metas[0]["encoder"],
               encoder_fallback=metas[0]["encoder_fallback"])
ru = resource.getrusage(resource.RUSAGE_SELF)
out["cpu_s"] = ru.ru_utime + ru.ru_stime
out["density"] = density(ds)
out["loadavg_1m"] = os.getloadavg()[0]
print("RESULT " + json.dumps(out, default=str))
"""


def _run(spec: str, options: dict[str, object], cores: int, env: dict[str, str]) -> dict[str, object]:
    cmd = [sys.executable, "-c", _CHILD, spec, json.dumps(options)]
    if cores and hasattr(os, "sched_getaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:cores]
        cmd = ["taskset", "-c", ",".join(map(str, cpus)), *cmd]
    threads = str(cores or 1)
    env = {**env, "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"{spec} {options} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=["locomo", "musique"], default="locomo")
    ap.add_argument("--encoder", default="minilm", help="the extractor's name encoder (minilm or hashing)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    old_opts: dict[str, object] = {"extract": False}
    if args.dataset == "locomo":
        old_opts["observations"] = True
    new_opts: dict[str, object] = {"extract_encoder": args.encoder}
    env = dict(os.environ)
    root = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    rows: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_extract_") as cache:
        rows["old"] = _run(args.dataset, old_opts, args.cores, env)
        rows["cold"] = _run(args.dataset, new_opts, args.cores, {**env, "SIGNET_RL_CACHE_DIR": cache})
        rows["warm"] = _run(args.dataset, new_opts, args.cores, {**env, "SIGNET_RL_CACHE_DIR": cache})
    print(f"\n{args.dataset}: {rows['old']['memories']:,} memories, {args.cores} cores, name encoder "
          f"{rows['cold'].get('encoder')}" + (f" (fallback: {rows['cold']['encoder_fallback']})"
                                              if rows["cold"].get("encoder_fallback") else ""))
    head = (f"{'run':<6} {'wall s':>8} {'mem/s':>8} {'extract s':>10} {'extract mem/s':>14} "
            f"{'mem/cpu-s':>10} {'peak MiB':>9} "
            f"{'entities':>9} {'deps/ent':>9} {'ceiling':>8} {'reach':>7} {'load1':>6}")
    print(head)
    for name, r in rows.items():
        d = r["density"]
        reach = d.get("reachability", {})
        ex = f"{r['extract_s']:10.1f}" if "extract_s" in r else f"{'-':>10}"
        exs = f"{r['extract_memories_per_s']:14.1f}" if r.get("extract_memories_per_s") else f"{'-':>14}"
        cps = (f"{r['extract_memories_per_cpu_s']:10.1f}" if r.get("extract_memories_per_cpu_s")
               else f"{'-':>10}")
        ceiling = f"{reach['ceiling']:8.3f}" if reach else f"{'-':>8}"
        share = f"{reach['reach_share']:7.3f}" if reach else f"{'-':>7}"
        print(f"{name:<6} {r['wall_s']:8.1f} {r['memories_per_s']:8.1f} {ex} {exs} {cps} "
              f"{r['peak_rss_mib']:9.0f} {d['entities']:9,} {d['dependencies_per_entity']:9.2f} {ceiling} "
              f"{share} {r['loadavg_1m']:6.1f}")
    cold = rows["cold"].get("extract_memories_per_s") or 0.0
    cold_cpu = rows["cold"].get("extract_memories_per_cpu_s") or 0.0
    print(f"target: cold extraction >= 50 memories/s on {args.cores} cores: "
          f"{'PASS' if cold >= 50 else 'MISS'} ({cold:.1f}/s wall, {cold_cpu:.1f} per CPU-second; "
          f"1-minute load average {rows['cold']['loadavg_1m']:.1f} on {os.cpu_count()} CPUs: above the "
          "core count, wall time counts other processes' work)")
    out = Path(args.output or Path(__file__).parent / "results" / f"extract_{args.dataset}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    result = {"machine": machine, "dataset": args.dataset, "cores": args.cores, "encoder": args.encoder,
              "runs": rows}
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
