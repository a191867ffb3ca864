"""Serving latency: in-process recall with an exported policy beside flat recall, and an HTTP load run.

On a Signet store written from a synthetic preset (default ``synthetic:xl:0``, 43,520 entities), with an
exported policy artifact (``--policy DIR``; without one, a LinUCB policy is trained in smoke mode on
``synthetic:tiny:0`` and exported: a store is never the training graph, so this is the served situation):

1. **In process** (same queries, one process, warm): the desire retriever's end to end — query encoding,
   entry search, traversal, scoring with all inputs, construction — against the flat recall the service
   mixes in (``flat_signet``), p50 / p95 per query; and the whole recall request the service answers
   (desire + flat + the mixed slate + logging to the state file).
2. **HTTP** (``--clients`` threads on loopback against a real uvicorn process): requests per second,
   p50 / p95 and errors, for recall alone.

Prints a table and writes ``benchmarks/results/serve.json``; nothing is asserted (issue 27's target:
in-process desire p50 <= 10 ms and <= 2x flat).

    python benchmarks/bench_serve.py                          # xl, 300 queries, 8 clients x 50 requests
    python benchmarks/bench_serve.py --preset small --queries 100 --policy artifacts/gnn
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _stats(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
        "n": int(a.size),
    }


def _policy(work: Path) -> Path:
    from signet_rl.export import export_run

    run = work / "run"
    env = {**os.environ, "SIGNET_RL_SMOKE": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "signet_rl.train", "scorer=linucb", "dataset.spec=synthetic:tiny:0",
                    f"run_dir={run}", "mlflow.enabled=false"], cwd=work, env=env, check=True,
                   capture_output=True)  # fmt: skip
    return export_run(run, work / "artifact")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="xl")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--policy", default=None, help="an exported artifact (default: a smoke-trained LinUCB)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=50, help="HTTP requests per client")
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "serve.json"))
    args = ap.parse_args()
    from signet_rl import smoke

    if smoke.enabled():  # SIGNET_RL_SMOKE=1 (the README test): the same path, tiny
        args.preset, args.queries, args.clients, args.requests = "tiny", 10, 2, 3
        args.output = str(Path(tempfile.mkdtemp(prefix="bench_serve-")) / "serve.json")

    from signet_rl.core.types import Query
    from signet_rl.datasets.synthetic import generate
    from signet_rl.graph.store import write_graph
    from signet_rl.serving.app import RecallBody, Service

    work = Path(tempfile.mkdtemp(prefix="bench_serve-"))
    ds = generate(args.preset, seed=0)
    queries = ds.split("test")[: args.queries]
    t = time.perf_counter()
    store = write_graph(ds.graph, work / "memories.db")
    write_s = time.perf_counter() - t
    policy = Path(args.policy) if args.policy else _policy(work)
    t = time.perf_counter()
    svc = Service(store, policy, work / "state.sqlite")
    load_s = time.perf_counter() - t
    print(
        f"{ds.name}: {ds.graph.num_entities:,} entities, {ds.graph.num_memories:,} memories; policy "
        f"{svc.policy.name}; store written in {write_s:.1f} s, service loaded in {load_s:.1f} s"
    )

    def q(text: str, i: int) -> Query:
        return Query(id=f"b{i}", text=text, graph_id="main", split="test")

    for i, query in enumerate(queries[:5]):  # warm caches (encoder, scorer state)
        svc.desire.retrieve(q(query.text, i), 2000)
        svc.flat.retrieve(q(query.text, i), None)
    desire_ms, flat_ms, request_ms = [], [], []
    for i, query in enumerate(queries):
        t = time.perf_counter()
        svc.desire.retrieve(q(query.text, i), 2000)
        desire_ms.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        svc.flat.retrieve(q(query.text, i), None)
        flat_ms.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        svc.recall(RecallBody(query=query.text, sessionKey=f"s{i % 20}"))
        request_ms.append(1000 * (time.perf_counter() - t))
    inproc = {"desire": _stats(desire_ms), "flat": _stats(flat_ms), "recall_request": _stats(request_ms)}
    ratio = inproc["desire"]["p50_ms"] / max(inproc["flat"]["p50_ms"], 1e-9)
    svc.state.close()

    # HTTP: a real uvicorn process on loopback
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (work / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "signet_rl.serve",
            "--db",
            str(store),
            "--policy",
            str(policy),
            "--state",
            str(work / "state_http.sqlite"),
            "--port",
            str(port),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()

    def client(c: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=url, timeout=60) as http:
            for i in range(args.requests):
                text = queries[(c * args.requests + i) % len(queries)].text
                t0 = time.perf_counter()
                try:
                    ok = http.post("/api/memory/recall", json={"query": text}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    lat.append(1000 * (time.perf_counter() - t0))
                    errors += 0 if ok else 1

    t = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    proc.kill()
    proc.wait()
    log.close()
    http = {**_stats(lat), "requests_per_s": round(len(lat) / wall, 1), "errors": errors,
            "clients": args.clients}  # fmt: skip

    print(f"{'in process (ms)':<26} {'p50':>8} {'p95':>8}")
    for name, s in inproc.items():
        print(f"  {name:<24} {s['p50_ms']:>8.2f} {s['p95_ms']:>8.2f}")
    print(f"  desire p50 / flat p50    {ratio:>8.2f}x   (target <= 10 ms and <= 2x)")
    print(
        f"HTTP recall, {args.clients} clients: {http['requests_per_s']} req/s, p50 {http['p50_ms']:.1f} ms, "
        f"p95 {http['p95_ms']:.1f} ms, errors {errors}"
    )
    out = {"dataset": ds.name, "entities": int(ds.graph.num_entities), "memories": int(ds.graph.num_memories),
           "policy": svc.policy.name, "queries": len(queries), "in_process": inproc, "desire_over_flat_p50": ratio,
           "http": http, "cpu_count": os.cpu_count(), "load_s": round(load_s, 2)}  # fmt: skip
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
