"""Foundation benchmark: generate, store, the in-memory arrays and PyG conversion, per preset.

For each synthetic preset (``tiny``, ``small``, ``medium``, ``xl``) a fresh subprocess, pinned to
``--cores`` CPUs, measures wall time and peak memory of:

* ``generate``: :func:`signet_rl.datasets.synthetic.generate` (the graph is ``dataset.graph``);
* ``arrays``: :meth:`signet_rl.graph.arrays.GraphArrays.from_graph`, the first (cold) call;
  ``arrays_warm``: the best of three more;
* ``csr_only``: ``from_graph`` on the entities and dependencies alone (entity index + two-way CSR),
  the like-for-like rival of the baseline;
* ``baseline_dict``: the same two-way, score-ordered adjacency as Python dict-of-lists built from
  the dependency frame (what the CSR replaces), measured in the same run;
* ``lookup_csr`` / ``lookup_dict``: the best ``--branching`` neighbours of every entity, through the
  CSR as one frontier (:meth:`GraphArrays.frontier_slots`) and through the dict entity by entity;
* ``store_write`` / ``store_read``: :func:`~signet_rl.graph.store.write_graph` and
  :func:`~signet_rl.graph.store.read_graph` on a temp file;
* ``import_pyg``, ``to_pyg``, ``to_hetero``: importing torch_geometric, then the two conversions.

Peak memory is the process's resident-set high-water mark: per stage (reset before each stage
through ``/proc/self/clear_refs`` on Linux, read from ``VmHWM``), and for the whole process. Where
the reset is not available, stage peaks are the running ``ru_maxrss``.

The ``xl`` target: generate + build the in-memory view in under 60 s and under 4 GiB on 2 cores.
PASS/MISS is printed, never asserted.

    python benchmarks/bench_foundation.py                       # tiny, small, medium, xl
    python benchmarks/bench_foundation.py --presets tiny small  # a subset
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

PRESETS: tuple[str, ...] = ("tiny", "small", "medium", "xl")
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "foundation.json"
#: The ``xl`` target: generate + GraphArrays.from_graph.
TARGET = {"preset": "xl", "seconds": 60.0, "peak_gib": 4.0, "cores": 2}
MIB = 1024 * 1024
STAGES: tuple[str, ...] = (
    "generate", "arrays", "arrays_warm", "csr_only", "baseline_dict", "lookup_csr", "lookup_dict",
    "store_write", "store_read", "import_pyg", "to_pyg", "to_hetero",
)


# ----------------------------------------------------------------------------------------------
# Memory


def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` field in KiB, or None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakMeter:
    """Resident-set high-water mark per stage, and for the process as a whole.

    On Linux the kernel's high-water mark is reset before each stage (``clear_refs`` 5). That also
    resets ``ru_maxrss``, so the process peak is kept here as the maximum over stages.
    """

    def __init__(self) -> None:
        self.resettable = self._reset()
        self.process_peak_mib = self.current_peak_mib()

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            return True
        except OSError:
            return False

    @staticmethod
    def rss_mib() -> float:
        kib = _status_kib("VmRSS")
        return kib / 1024 if kib is not None else float("nan")

    @staticmethod
    def current_peak_mib() -> float:
        kib = _status_kib("VmHWM")
        if kib is not None:
            return kib / 1024
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (MIB if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB on Linux

    def start(self) -> None:
        self.process_peak_mib = max(self.process_peak_mib, self.current_peak_mib())
        if self.resettable:
            self._reset()

    def stop(self) -> float:
        peak = self.current_peak_mib()
        self.process_peak_mib = max(self.process_peak_mib, peak)
        return peak


@dataclass
class StageResult:
    """One measured stage: wall seconds, resident memory at its start and end, and its peak."""

    seconds: float
    rss_start_mib: float
    rss_end_mib: float
    peak_mib: float


def measure(meter: PeakMeter, fn: Callable[[], Any]) -> tuple[Any, StageResult]:
    """Run ``fn`` once and measure it (after a garbage collection)."""
    gc.collect()
    rss0 = meter.rss_mib()
    meter.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    peak = meter.stop()
    return out, StageResult(seconds, rss0, meter.rss_mib(), peak)


# ----------------------------------------------------------------------------------------------
# The baseline: what the CSR replaces


def dict_adjacency(dependencies: Any) -> dict[str, list[tuple[float, int, int, str]]]:
    """Entity id -> ``[(-score, edge row, direction key, neighbour id), ...]``, both directions,
    sorted by confidence × strength descending (ties by edge row, outgoing first): the CSR's content
    and order as Python objects."""
    adj: dict[str, list[tuple[float, int, int, str]]] = {}
    rows = zip(dependencies["source_entity_id"].tolist(), dependencies["target_entity_id"].tolist(),
               dependencies["confidence"].tolist(), dependencies["strength"].tolist(), strict=True)
    for row, (src, dst, confidence, strength) in enumerate(rows):
        score = -confidence * strength
        adj.setdefault(src, []).append((score, row, -1, dst))
        adj.setdefault(dst, []).append((score, row, 1, src))
    for slots in adj.values():
        slots.sort()
    return adj


def lookup_csr(arrays: Any, k: int) -> int:
    """The best ``k`` neighbours of every entity through the CSR, as one frontier (vectorised);
    returns how many were seen."""
    slots, _ = arrays.frontier_slots(np.arange(arrays.num_entities), k)
    return len(arrays.dep_neighbor[slots])


def lookup_dict(adj: dict[str, list[tuple[float, int, int, str]]], entity_ids: list[str],
                k: int) -> int:
    """The best ``k`` neighbours of every entity through the dict; returns how many were seen."""
    seen = 0
    empty: list[tuple[float, int, int, str]] = []
    for eid in entity_ids:
        seen += len([slot[3] for slot in adj.get(eid, empty)[:k]])
    return seen


# ----------------------------------------------------------------------------------------------
# One preset, in its own process


def machine_info() -> dict[str, Any]:
    """CPU count, the CPUs this process may use, and library versions."""
    import pandas

    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pandas.__version__,
    }
    try:
        from importlib.metadata import version

        info["torch"] = version("torch")
        info["torch_geometric"] = version("torch_geometric")
    except Exception:  # a missing optional package is recorded, not fatal
        info.setdefault("torch", None)
    return info


def run_preset(preset: str, seed: int, branching: int) -> dict[str, Any]:
    """Measure every stage for one preset in this process."""
    from signet_rl.datasets.synthetic import generate
    from signet_rl.graph.arrays import GraphArrays
    from signet_rl.graph.model import KnowledgeGraph
    from signet_rl.graph.store import read_graph, write_graph

    meter = PeakMeter()
    stages: dict[str, StageResult] = {}
    dataset, stages["generate"] = measure(meter, lambda: generate(preset, seed=seed))
    graph = dataset.graph
    arrays, stages["arrays"] = measure(meter, lambda: GraphArrays.from_graph(graph))
    # The target is read here: generation and the in-memory view only.
    target_seconds = stages["generate"].seconds + stages["arrays"].seconds
    target_peak_mib = meter.process_peak_mib

    def best_of(n: int, fn: Callable[[], Any]) -> Callable[[], float]:
        def run() -> float:
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return min(times)
        return run

    best, stages["arrays_warm"] = measure(meter, best_of(3, lambda: GraphArrays.from_graph(graph)))
    stages["arrays_warm"].seconds = best
    deps_only = KnowledgeGraph.from_frames(  # aspect_id dropped: no aspects in this graph
        entities=graph.entities, dependencies=graph.dependencies.assign(aspect_id=None),
        validate=False)
    _, stages["csr_only"] = measure(meter, partial(GraphArrays.from_graph, deps_only))
    adj, stages["baseline_dict"] = measure(meter, lambda: dict_adjacency(graph.dependencies))
    seen_csr, stages["lookup_csr"] = measure(meter, lambda: lookup_csr(arrays, branching))
    entity_ids = graph.entities["id"].tolist()
    seen_dict, stages["lookup_dict"] = measure(
        meter, lambda: lookup_dict(adj, entity_ids, branching))
    if seen_csr != seen_dict:
        raise RuntimeError(f"lookups disagree: CSR saw {seen_csr} neighbours, dict {seen_dict}")
    adj.clear()  # free the baseline before the next stages
    with tempfile.TemporaryDirectory(prefix="bench_foundation_") as tmp:
        path = Path(tmp) / f"{preset}.db"
        _, stages["store_write"] = measure(meter, lambda: write_graph(graph, path))
        store_bytes = path.stat().st_size
        back, stages["store_read"] = measure(meter, lambda: read_graph(path))
    round_trip = len(back.entities) == len(graph.entities) and len(back.attributes) == len(
        graph.attributes)
    del back

    def import_pyg() -> None:
        import torch_geometric.data  # noqa: F401

    _, stages["import_pyg"] = measure(meter, import_pyg)
    data, stages["to_pyg"] = measure(meter, arrays.to_pyg)
    hetero, stages["to_hetero"] = measure(meter, arrays.to_hetero)
    valid = bool(data.validate(raise_on_error=False)) and bool(
        hetero.validate(raise_on_error=False))

    arrays_bytes = sum(v.nbytes for v in vars(arrays).values() if hasattr(v, "nbytes"))
    return {
        "preset": preset,
        "seed": seed,
        "sizes": {
            "entities": arrays.num_entities, "dependencies": arrays.num_dependencies,
            "aspects": arrays.num_aspects, "attributes": arrays.num_attributes,
            "memories": arrays.num_memories, "mentions": arrays.num_mentions,
            "queries": len(dataset.queries),
        },
        "stages": {name: asdict(result) for name, result in stages.items()},
        "arrays_nbytes": arrays_bytes,
        "store_bytes": store_bytes,
        "store_round_trip_counts_equal": round_trip,
        "pyg_valid": valid,
        "lookup_branching": branching,
        "process_peak_mib": meter.process_peak_mib,
        "peak_reset_per_stage": meter.resettable,
        "target_seconds": target_seconds,
        "target_peak_mib": target_peak_mib,
        "machine": machine_info(),
    }


# ----------------------------------------------------------------------------------------------
# Driver


def _pin(cores: int) -> list[int] | None:
    """Restrict this process to ``cores`` CPUs (Linux); returns the CPUs used."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    os.sched_setaffinity(0, cpus)
    return cpus


def spawn(preset: str, seed: int, cores: int, branching: int, timeout: float) -> dict[str, Any]:
    """Run one preset in a fresh interpreter limited to ``cores`` CPUs and threads."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "NUMEXPR_NUM_THREADS"):
        env[var] = str(cores)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", preset, "--seed", str(seed),
           "--cores", str(cores), "--branching", str(branching)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"preset": preset, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        return {"preset": preset, "error": f"worker exited with {proc.returncode}:\n{tail}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def target_verdict(result: dict[str, Any]) -> str:
    """PASS or MISS against :data:`TARGET`, with the figures."""
    seconds, peak_gib = result["target_seconds"], result["target_peak_mib"] / 1024
    ok = seconds < TARGET["seconds"] and peak_gib < TARGET["peak_gib"]
    cores = result.get("cores")
    note = "" if cores == TARGET["cores"] else f" (measured on {cores} cores, target is 2)"
    return (f"{'PASS' if ok else 'MISS'}: {TARGET['preset']} generate + arrays "
            f"{seconds:.1f} s (< {TARGET['seconds']:.0f} s), peak {peak_gib:.2f} GiB "
            f"(< {TARGET['peak_gib']:.0f} GiB){note}")


def _ratio(result: dict[str, Any], slow: str, fast: str) -> float:
    """How many times longer stage ``slow`` took than stage ``fast``."""
    stages = result["stages"]
    return float(stages[slow]["seconds"]) / max(float(stages[fast]["seconds"]), 1e-9)


def print_tables(results: list[dict[str, Any]]) -> None:
    """Stage x preset tables of seconds and peak MiB, then sizes and the target."""
    ok = [r for r in results if "error" not in r]
    names = [r["preset"] for r in ok]
    if not ok:
        for r in results:
            print(f"{r['preset']}: ERROR {r['error']}")
        return
    width = max(11, *(len(n) + 2 for n in names)) if names else 11

    def row(label: str, cells: list[str]) -> str:
        return f"{label:<18}" + "".join(f"{c:>{width}}" for c in cells)

    print()
    print(row("sizes", names))
    for key in ("entities", "dependencies", "aspects", "attributes", "memories", "mentions"):
        print(row(f"  {key}", [f"{r['sizes'][key]:,}" for r in ok]))
    tables: list[tuple[str, Callable[[dict[str, float]], str]]] = [
        ("seconds", lambda st: f"{st['seconds']:.3f}"),
        ("peak RSS MiB", lambda st: f"{st['peak_mib']:.0f}"),
        ("peak - start MiB", lambda st: f"{st['peak_mib'] - st['rss_start_mib']:.0f}"),
    ]
    for title, cell in tables:
        print()
        print(row(title, names))
        for stage in STAGES:
            print(row(f"  {stage}", [cell(r["stages"][stage]) for r in ok]))
    print()
    print(row("arrays MiB", [f"{r['arrays_nbytes'] / MIB:.1f}" for r in ok]))
    print(row("store MiB", [f"{r['store_bytes'] / MIB:.1f}" for r in ok]))
    print(row("process peak", [f"{r['process_peak_mib']:.0f}" for r in ok]))
    print(row("dict/csr build", [f"{_ratio(r, 'baseline_dict', 'csr_only'):.1f}x" for r in ok]))
    print(row("dict/csr lookup", [f"{_ratio(r, 'lookup_dict', 'lookup_csr'):.1f}x" for r in ok]))
    print()
    for r in results:
        if "error" in r:
            print(f"{r['preset']}: ERROR {r['error']}")
    xl = [r for r in ok if r["preset"] == TARGET["preset"]]
    print(target_verdict(xl[0]) if xl else f"target: {TARGET['preset']} not run, not checked")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cores", type=int, default=TARGET["cores"],
                        help="CPUs (and BLAS/OpenMP threads) each preset's process may use")
    parser.add_argument("--branching", type=int, default=4, help="neighbours per entity in lookup")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per preset")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help="JSON file; results for presets not run are kept")
    parser.add_argument("--worker", choices=PRESETS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        cpus = _pin(args.cores)
        result = run_preset(args.worker, args.seed, args.branching)
        result["cores"] = len(cpus) if cpus is not None else os.cpu_count()
        print(json.dumps(result))
        return 0

    results = []
    for preset in args.presets:
        print(f"[{preset}] running ...", flush=True)
        t0 = time.perf_counter()
        result = spawn(preset, args.seed, args.cores, args.branching, args.timeout)
        status = "failed" if "error" in result else "done"
        print(f"[{preset}] {status} in {time.perf_counter() - t0:.1f} s", flush=True)
        results.append(result)
    print_tables(results)

    args.output.parent.mkdir(parents=True, exist_ok=True)
    previous: dict[str, Any] = {}
    if args.output.exists():
        try:
            previous = json.loads(args.output.read_text()).get("presets", {})
        except (json.JSONDecodeError, AttributeError):
            previous = {}
    previous.update({r["preset"]: r for r in results})
    xl = previous.get(TARGET["preset"])
    report = {
        "benchmark": "foundation",
        "machine": machine_info(),
        "target": {**TARGET, "verdict": target_verdict(xl) if xl and "error" not in xl else None},
        "presets": previous,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
