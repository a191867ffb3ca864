"""A query-bootstrap 95% interval for the KG protocol's test MRR, beside the seed sd (issue 30).

The protocol table's ``± sd`` is the spread over the three final seeds: it says how much the recipe's
outcome moves with the seed, not how much it would move on another draw of test queries of the same kind.
On small test splits (Countries: 24 queries, one query moves H@1 by 4.2 points) the second is the larger
uncertainty. This script ranks the test split again with each final run's selected walker (the weights its
``results.json`` reports, on the graph its own seed built: :func:`signet_rl.kg.rerank.load_run_policy`),
checks that the ranks give the ledger's test MRR, keeps them in ``experiments/kg_runs/test_ranks.json`` and
writes, per key, a percentile interval of the **mean over seeds** of the MRR under resampling of test
queries: each of ``B`` resamples draws the split's queries with replacement, the same draw for every seed
(the seeds answer the same queries), and takes the mean over seeds of the resample's MRR. The interval is
the 2.5th and 97.5th percentiles (``experiments/kg_runs/bootstrap.json``). ``kg_protocol.py`` prints it as
a column beside the seed sd. Nothing is chosen here: the runs are final, ranked once more.

    python experiments/kg_bootstrap.py                 # every key with three final seeds
    python experiments/kg_bootstrap.py --keys umls@minerva
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import kg_protocol  # noqa: E402

RANKS, BOOT = "test_ranks.json", kg_protocol.BOOTSTRAP
RESAMPLES = 2000


def _dump(path: Path, data: dict) -> None:
    """Write ``data`` as JSON through a temporary file, so a reader never sees half a ledger."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(sorted(data.items())), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def run_ranks(run_dir: Path) -> np.ndarray:
    """Filtered test ranks of a final run's selected walker, ranked on the run's own graph."""
    from signet_rl.kg.rerank import load_run_policy
    from signet_rl.kg.trainer import policy_ranks

    cfg, task, policy = load_run_policy(run_dir)
    t = cfg.task
    return policy_ranks(
        policy, task, task.queries("test"), cfg.path_length, t.beam_width, t.eval_batch_size,
        t.eval_mask_query_edge, t.beam_pool,
    )  # fmt: skip


def interval(ranks: list[np.ndarray], resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean over seeds of the MRR under a query bootstrap.

    Args:
        ranks: one array of filtered ranks per seed, all over the same queries in the same order (``inf``
            for a miss).
        resamples: bootstrap draws.
        seed: the draws' seed.

    Raises:
        ValueError: no ranks, or seeds ranked different numbers of queries.
    """
    if not ranks:
        raise ValueError("interval needs the ranks of at least one seed")
    sizes = {len(r) for r in ranks}
    if len(sizes) != 1:
        raise ValueError(f"every seed must rank the same queries; got {sorted(sizes)} queries")
    recip = np.stack([1.0 / np.asarray(r, dtype=np.float64) for r in ranks])  # [seeds, queries]
    n = recip.shape[1]
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    means = recip.mean(axis=0)[draws].mean(axis=1)  # mean over seeds commutes with the query mean
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def run(keys: list[str] | None, ledger: Path, runs: Path) -> dict:
    """Rank every final run of ``keys`` (default: every key with final runs) and write both ledgers."""
    final = kg_protocol._read(ledger, kg_protocol.FINAL)
    stored = kg_protocol._read(ledger, RANKS)
    groups: dict[str, list[str]] = {}
    for name, e in sorted(final.items()):
        groups.setdefault(f"{e['dataset']}@{e['setting']}", []).append(name)
    boot = kg_protocol._read(ledger, BOOT)
    for key in keys or sorted(groups):
        if key not in groups:
            raise ValueError(f"{key}: no final runs in {ledger / kg_protocol.FINAL}")
        per_seed = []
        for name in groups[key]:
            if name not in stored:
                ranks = run_ranks(runs / name)
                want = final[name]["test"]["kg_walk/mrr"]
                got = float(np.mean(1.0 / ranks))
                if abs(got - want) > 1e-6:
                    raise ValueError(
                        f"{runs / name}: ranked again, test MRR {got:.6f} differs from the ledger's "
                        f"{want:.6f}; the run folder does not hold the run the ledger copied"
                    )
                stored[name] = [None if np.isinf(r) else float(r) for r in ranks]
                _dump(ledger / RANKS, stored)
            per_seed.append(np.array([np.inf if r is None else r for r in stored[name]]))
        lo, hi = interval(per_seed)
        boot[key] = {
            "mrr_mean": float(np.mean([np.mean(1.0 / r) for r in per_seed])),
            "ci95": [lo, hi],
            "resamples": RESAMPLES,
            "queries": len(per_seed[0]),
            "runs": groups[key],
        }
        _dump(ledger / BOOT, boot)
        print(f"{key}: test MRR {100 * boot[key]['mrr_mean']:.1f}, query-bootstrap 95% interval "
              f"[{100 * lo:.1f}, {100 * hi:.1f}] over {len(per_seed[0])} queries, {len(per_seed)} seeds",
              flush=True)  # fmt: skip
    return boot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", nargs="*", help="ledger keys (default: every key with final runs)")
    ap.add_argument("--ledger", type=Path, default=kg_protocol.LEDGER)
    ap.add_argument("--runs", type=Path, default=kg_protocol.RUNS / "final-kg")
    args = ap.parse_args(argv)
    run(args.keys, args.ledger, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
