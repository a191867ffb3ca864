"""``python -m signet_rl.serve``: serve an exported policy over a Signet store.

* ``python -m signet_rl.serve --db PATH --policy DIR [--host 127.0.0.1] [--port 3850] [--state FILE]
  [--hybrid]``: the HTTP service (:mod:`signet_rl.serving.app`): recall, feedback, expand, impact, health,
  status. Binding anything but loopback needs a bearer token (``--token`` or ``SIGNET_RL_SERVE_TOKEN``).
* ``python -m signet_rl.serve report --db PATH [--state FILE]``: the online comparison against flat recall
  from the service's log (win rate with its interval, IPS / SNIPS / DR of the desire policy).
* ``python -m signet_rl.serve sidecar --db PATH [--policy DIR]``: Signet's predictor protocol
  (newline-delimited JSON-RPC 2.0 on stdin/stdout, :mod:`signet_rl.serving.sidecar`), so Signet's daemon can
  run it in place of its own predictor (``predictor.binaryPath``); it accepts the daemon's ``--native-dim``
  and ``--checkpoint`` flags.
* ``python -m signet_rl.serve store DATASET --out FILE``: write a dataset's graph as a Signet v30 store, to
  serve a policy on.
* ``python -m signet_rl.serve describe --db PATH --policy DIR --emergence LIST [--state FILE] [--json]
  [--picture OUT.png OUT.html]``: the service's issue 29 state (principles, bridges, the last health snapshot
  and pruning plan, explorer slots) as ``describe`` prints an emergence block (``GET /api/emergence`` while
  it runs), and with ``--picture`` the constellation of the served graph with them overlaid.

Nothing here imports torch.

``sidecar`` speaks Signet's predictor protocol (newline-delimited JSON-RPC 2.0 on stdin/stdout, see
:mod:`signet_rl.serving.sidecar`) over a Signet store, so that Signet's daemon can run it in place of its own
predictor (``predictor.binaryPath``); it accepts the daemon's ``--native-dim`` and ``--checkpoint`` flags.
Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _prewarm(args: argparse.Namespace) -> object:
    """``--prewarm``: the pre-warm settings (defaults), else None (off)."""
    if not args.prewarm:
        return None
    from signet_rl.emergence.prewarm import PrewarmConfig

    return PrewarmConfig()


def _http(argv: list[str]) -> int:
    import os

    parser = argparse.ArgumentParser(prog="python -m signet_rl.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="the Signet store (memories.db), opened read-only")
    parser.add_argument("--policy", required=True, help="a policy artifact (python -m signet_rl.export)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3850)
    parser.add_argument("--state", help="the service's own SQLite file (default: beside the store)")
    parser.add_argument("--token", default=os.environ.get("SIGNET_RL_SERVE_TOKEN"),
                        help="bearer token (required when --host is not loopback)")
    parser.add_argument("--k", type=int, default=5, help="results per recall")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prewarm", action="store_true",
                        help="temporal pre-warm at POST /api/session/start (off by default; issue 29)")
    parser.add_argument("--emergence", default="",
                        help="issue 29's mechanisms to switch on, comma-separated: bridges, principles, "
                             "health, explorer (a speculative result per session), regulation (explorer "
                             "slots set per session by the staleness signal) (all off by default; their "
                             "state lives in the --state file). The offline cold tier and pre-warm (use "
                             "--prewarm) are refused here")
    parser.add_argument("--hybrid", action="store_true",
                        help="the hybrid entry on top of the policy's traversal: flat's hits as the floor, "
                             "session-DAG steps and entity walks")  # fmt: skip
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.token:
        print(f"error: binding {args.host} exposes the memory store beyond this machine; give a bearer token "
              "(--token or SIGNET_RL_SERVE_TOKEN)", file=sys.stderr)
        return 2
    import uvicorn

    from signet_rl.serving.app import HYBRID, Service, create_app

    try:
        switches = [s.strip() for s in args.emergence.split(",") if s.strip()]
        service = Service(args.db, args.policy, args.state, k=args.k, seed=args.seed, prewarm=_prewarm(args),
                          emergence={s: True for s in switches},
                          traversal=HYBRID if args.hybrid else None)  # fmt: skip
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"signet_rl serve: {service.policy.name} policy over {args.db} ({service.graph.num_entities} "
          f"entities, {service.graph.num_memories} memories, {service.replayed} ratings replayed); state "
          f"{service.state.path}; http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    uvicorn.run(create_app(service, token=args.token), host=args.host, port=args.port, log_level="warning")
    return 0


def _report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m signet_rl.serve report")
    parser.add_argument("--db", help="the store the service served (its state file sits beside it)")
    parser.add_argument("--state", help="the service's state file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from signet_rl.serving.app import default_state_path, report

    if not (args.state or args.db):
        parser.error("give --db or --state")
    path = args.state or default_state_path(args.db)
    from pathlib import Path

    if not Path(path).exists():
        print(f"error: no service state at {path}", file=sys.stderr)
        return 2
    r = report(path, seed=args.seed)
    lo, hi = r["ci95"]
    print(f"recalls {r['recalls']:,}, rated {r['rated']:,}: desire wins {r['wins']:,}, "
          f"flat wins {r['losses']:,}, ties {r['ties']:,}")
    print(f"desire win rate {r['win_rate']:.3f} (95% interval {lo:.3f}-{hi:.3f})")
    for name, e in (r.get("ope") or {}).items():
        print(f"{name.upper():>6} value of the desire policy's slate: {e['value']:.3f} "
              f"({e['ci95'][0]:.3f}-{e['ci95'][1]:.3f})")
    return 0


def _describe(argv: list[str]) -> int:
    """``serve describe``: the service's issue 29 state (principles, bridges, health and the last pruning
    plan, explorer slots), as the running service would have it, in ``describe``'s emergence block."""
    import json

    parser = argparse.ArgumentParser(prog="python -m signet_rl.serve describe")
    parser.add_argument("--db", required=True, help="the Signet store the service serves (read-only)")
    parser.add_argument("--policy", required=True, help="the policy artifact it serves")
    parser.add_argument("--state", help="the service's state file (default: beside the store)")
    parser.add_argument("--emergence", default="", help="the switches the service runs with (as serve's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--picture", nargs="+", metavar="OUT",
                        help="also draw the constellation of the served graph (.png and/or .html): the "
                             "service's learned desire paths, principles as stars, promoted bridges, each "
                             "entity's health")
    args = parser.parse_args(argv)
    from pathlib import Path

    from signet_rl.evaluation.describe import emergence_lines
    from signet_rl.serving.app import Service, default_state_path

    state = Path(args.state) if args.state else default_state_path(args.db)
    if not state.exists():
        print(f"error: no service state at {state}", file=sys.stderr)
        return 2
    switches = [s.strip() for s in args.emergence.split(",") if s.strip()]
    if not switches:
        print("error: give the --emergence switches the service runs with (e.g. principles,health)",
              file=sys.stderr)
        return 2
    try:
        service = Service(args.db, args.policy, state, emergence={s: True for s in switches})
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        overview = service.emergence_overview()
        if args.picture:
            from signet_rl.viz.constellation import build_constellation, overlay_emergence, render

            con = build_constellation(service.graph, service.stats, title=(
                f"signet_rl serve over {args.db}: {service.graph.num_entities:,} entities, "
                f"{service.replayed:,} ratings"))
            em = service.emergence
            if em is not None:
                rated = [(service.state.result(fb.result_id), fb) for fb in service.state.feedback()]
                con = overlay_emergence(con, em.outcome(rated))
            for out in render(con, args.picture):
                print(f"wrote {out}", file=sys.stderr)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        service.state.close()
    print(json.dumps(overview, indent=2, default=str) if args.json else "\n".join(emergence_lines(overview)))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return _report(argv[1:])
    if argv[:1] == ["describe"]:
        return _describe(argv[1:])
    if argv[:1] == ["store"]:
        p = argparse.ArgumentParser(prog="python -m signet_rl.serve store")
        p.add_argument("dataset", help="a dataset spec, e.g. synthetic:small:0 (its first graph)")
        p.add_argument("--out", required=True, help="the store file to write (refused if it exists)")
        a = p.parse_args(argv[1:])
        return _store(a.dataset, a.out)
    if argv[:1] != ["sidecar"]:
        return _http(argv)
    parser = argparse.ArgumentParser(
        prog="python -m signet_rl.serve sidecar", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--db", required=True, help="the Signet store (memories.db), opened read-only")
    parser.add_argument("--policy", help="a policy artifact (python -m signet_rl.export); default: the prior")
    parser.add_argument("--native-dim", type=int, default=768, help="the daemon's embedding dimension")
    parser.add_argument("--checkpoint", help="where save_checkpoint writes, and a start resumes from")
    args = parser.parse_args(argv[1:])
    from signet_rl.serving.sidecar import Sidecar, serve

    try:
        sidecar = Sidecar(args.db, args.policy, native_dim=args.native_dim, checkpoint=args.checkpoint)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"signet_rl sidecar: {sidecar.policy.name} policy over {args.db} "
          f"({sidecar.arrays.num_entities} entities, {sidecar.arrays.num_memories} memories); ready",
          file=sys.stderr, flush=True)  # fmt: skip
    return serve(sidecar)


def _store(spec: str, out: str) -> int:
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.store import write_graph

    try:
        graph = next(iter(load_dataset(spec).graphs.values()))
        path = write_graph(graph, out)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path}: {graph.num_entities} entities, {graph.num_memories} memories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
