"""``python -m signet_rl.datasets describe NAME [--json]`` — look at any dataset.

NAME is a dataset spec: ``synthetic:<preset>[:seed]``, ``kg:<folder>``, ``locomo``, ``musique`` or
``signet:<path to .db>``. Real data is read from ``--data-root`` or ``$SIGNET_RL_DATA``. A synthetic spec is
built by generator v2, the version every report uses (:data:`REPORT_SYNTHETIC_VERSION`), unless
``--option version=1`` asks for v1, which stays loadable under its config hash.
"""

from __future__ import annotations

import argparse
import json
import sys

from signet_rl import smoke
from signet_rl.datasets.registry import REPORT_SYNTHETIC_VERSION, load_dataset, parse_spec
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
    p.add_argument("--no-signals", action="store_true", help="skip the cheap-signal AUCs and the audit")
    p.add_argument("--run", default=None, metavar="FOLDER",
                   help="also show a bandit run's emergence outcome (health, pruning plan, bridges, "
                        "principles: its artifacts/emergence/, written when the run switched emergence.* on)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a generator option (repeatable; VALUE is JSON, else a string), e.g. --option version=1 "
        f"(a synthetic spec is built by generator v{REPORT_SYNTHETIC_VERSION} unless told otherwise)",
    )
    args = parser.parse_args(argv)
    try:
        options = dict(_option(o) for o in args.option)
        kind = parse_spec(args.name).kind
        if kind == "synthetic":  # the reports' version, not load_dataset's v1
            options.setdefault("version", REPORT_SYNTHETIC_VERSION)
        if kind == "locomo" and smoke.enabled():  # a smoke run (the README test): LoCoMo's first sessions
            options.setdefault("max_sessions", smoke.LOCOMO_SESSIONS)
        dataset = load_dataset(args.name, root=args.data_root, options=options or None)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    d = describe(dataset, signals=not args.no_signals)
    if args.run is not None:
        from pathlib import Path

        from signet_rl.emergence.components import FOLDER, read_outcome

        art = Path(args.run) / "artifacts"
        got = read_outcome(art if (art / FOLDER).is_dir() else Path(args.run))
        if not got:
            print(f"error: {args.run} has no {FOLDER}/ (in artifacts/ or itself): train with an emergence.* "
                  "switch on (e.g. emergence.health=true)", file=sys.stderr)
            return 2
        d["emergence"] = {**d.get("emergence", {}), **got}
    print(json.dumps(d, indent=2, default=str) if args.json else format_description(d))
    return 0


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--option {text!r} is not KEY=VALUE (e.g. --option version=2)")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


if __name__ == "__main__":
    raise SystemExit(main())
