"""Rank a finished (or interrupted) KG run's walker again, on the graph it was trained on.

The command line over :func:`signet_rl.kg.rerank.evaluate_run`; only the evaluation-time keys
(:data:`~signet_rl.kg.rerank.EVAL_TIME_KEYS`: beam width and pooling, the query-edge mask, the chunk
size, the data root) may change. A bad folder, override or split exits 2 with the error named::

    python -m signet_rl.tasks.kg_rerank runs/report-kg/umls-regularised-s0 --set task.beam_pool=sum
    python -m signet_rl.tasks.kg_rerank runs/report-kg/kinship-shaped-s1 --splits validation --weights last
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from signet_rl.kg.rerank import EVAL_TIME_KEYS, SPLITS, WEIGHTS, evaluate_run

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    """Parse ``argv``, re-rank, print one row per split; returns the figures."""
    ap = argparse.ArgumentParser(
        prog="python -m signet_rl.tasks.kg_rerank", description=__doc__.splitlines()[0]
    )
    ap.add_argument("run_dir")
    ap.add_argument(
        "--set", dest="overrides", nargs="*", default=[], help=f"key=value; one of {EVAL_TIME_KEYS}"
    )
    ap.add_argument("--splits", nargs="*", default=list(SPLITS), choices=SPLITS)
    ap.add_argument("--weights", default="selected", choices=WEIGHTS)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    try:
        out = evaluate_run(args.run_dir, args.overrides, args.splits, args.weights)
    except (FileNotFoundError, ValueError) as err:  # a bad folder or override: say which, no traceback
        ap.exit(2, f"{ap.prog}: error: {err}\n")
    print(f"{'split':<11} {'n':>6} {'misses':>6} {'H@1':>6} {'H@3':>6} {'H@10':>6} {'MRR':>6}")
    for split, m in out.items():
        print(
            f"{split:<11} {int(m['kg_walk/n']):>6} {int(m['kg_walk/misses']):>6} "
            + " ".join(f"{100 * m[f'kg_walk/{k}']:>6.1f}" for k in ("hits@1", "hits@3", "hits@10", "mrr"))
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
