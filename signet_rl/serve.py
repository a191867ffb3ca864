"""``python -m signet_rl.serve sidecar --db PATH [--policy DIR]``: serve an exported policy.

``sidecar`` speaks Signet's predictor protocol (newline-delimited JSON-RPC 2.0 on stdin/stdout, see
:mod:`signet_rl.serving.sidecar`) over a Signet store, so that Signet's daemon can run it in place of its own
predictor (``predictor.binaryPath``); it accepts the daemon's ``--native-dim`` and ``--checkpoint`` flags.
Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m signet_rl.serve", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    side = sub.add_parser("sidecar", help="Signet's predictor protocol on stdin/stdout")
    side.add_argument("--db", required=True, help="the Signet store (memories.db), opened read-only")
    side.add_argument("--policy", help="a policy artifact (python -m signet_rl.export); default: the prior")
    side.add_argument("--native-dim", type=int, default=768, help="the daemon's embedding dimension")
    side.add_argument("--checkpoint", help="where save_checkpoint writes, and a start resumes from")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
