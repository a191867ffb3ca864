"""``python -m signet_rl.datasets describe NAME [--json]`` — look at any dataset.

NAME is a dataset spec: ``synthetic:<preset>[:seed]``, ``kg:<folder>``, ``locomo``, ``musique`` or
``signet:<path to .db>``. Real data is read from ``--data-root`` or ``$SIGNET_RL_DATA``.
"""

from __future__ import annotations

import argparse
import json
import sys

from signet_rl.datasets.registry import load_dataset
from signet_rl.evaluation.describe import describe, format_description


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m signet_rl.datasets", description="Look at a signet_rl dataset."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("describe", help="print counts for a dataset")
    p.add_argument(
        "name",
        help="dataset spec, e.g. synthetic:small, kg:kinship, locomo, musique, signet:/path/memories.db",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument(
        "--data-root",
        default=None,
        help="folder holding kg/, locomo/, hipporag/ (default: $SIGNET_RL_DATA, else ./data)",
    )
    p.add_argument("--no-signals", action="store_true", help="skip the cheap-signal AUCs")
    args = parser.parse_args(argv)
    try:
        dataset = load_dataset(args.name, root=args.data_root)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    d = describe(dataset, signals=not args.no_signals)
    print(json.dumps(d, indent=2, default=str) if args.json else format_description(d))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
