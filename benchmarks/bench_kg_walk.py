"""Training-batch speed of the KG walker: walks sharing a prefix computed once vs every walk on its own.

One training batch is a rollout of ``--batch`` queries x ``--rollouts`` walks
(``signet_rl.kg.policy.rollout``) plus the REINFORCE backward pass, with the default policy of
``conf/task/kg.yaml`` (200-dim vectors, LSTM 200, MLP 400). ``share_prefixes=True`` (the trainer's path)
computes each distinct (query, actions so far) once; the baseline measured in the same run,
``share_prefixes=False``, computes all ``batch x rollouts`` walks. Both are timed on the same seeded
batches, twice: on the untrained policy (diffuse: the fewest walks share a prefix) and after ``--train``
batches of REINFORCE (0/1 reward), when the walks of one query concentrate. One torch thread. Prints a
table and writes ``benchmarks/results/kg_walk.json``; nothing is asserted.

    python benchmarks/bench_kg_walk.py                        # kinship, path length 2
    python benchmarks/bench_kg_walk.py --dataset umls --batches 20 --train 300
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from signet_rl.core.paths import data_root
from signet_rl.datasets.kg import load_kg
from signet_rl.kg.policy import KGPolicy, Reinforce, rollout
from signet_rl.kg.walk_task import WalkTask

ROOT = Path(__file__).resolve().parents[1]


def batch_queries(task: WalkTask, batch: int, rollouts: int, seed: int) -> tuple[torch.Tensor, ...]:
    q = task.queries("train")
    idx = np.random.default_rng(seed).choice(len(q), size=min(batch, len(q)), replace=False)
    return tuple(
        torch.from_numpy(a[idx]).repeat_interleave(rollouts) for a in (q.heads, q.relations, q.tails)
    )


def train_step(policy, opt, pg, task, queries, length, gen, share: bool) -> tuple[float, int]:
    """One REINFORCE batch (0/1 reward); returns (seconds, distinct first-step prefixes)."""
    heads, rels, tails = queries
    t = time.perf_counter()
    ro = rollout(policy, task.walker, heads, rels, tails, length, gen, share_prefixes=share)
    loss = pg.loss(ro.log_probs, ro.entropies, (ro.final == tails).float())
    opt.zero_grad()
    loss.backward()
    opt.step()
    seconds = time.perf_counter() - t
    distinct = len(
        set(
            zip(
                heads.tolist(),
                rels.tolist(),
                ro.relations[:, 0].tolist(),
                ro.entities[:, 1].tolist(),
                strict=True,
            )
        )
    )
    return seconds, distinct


def measure(policy, task, args, phase: str) -> dict[str, Any]:
    """Seconds per batch both ways on the same batches; the weights are restored after each way."""
    saved = {k: v.clone() for k, v in policy.state_dict().items()}
    out: dict[str, Any] = {}
    for share in (False, True):
        policy.load_state_dict(saved)
        opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
        pg = Reinforce(beta=0.1, beta_decay=1.0)
        gen = torch.Generator().manual_seed(args.seed)
        times, distinct = [], []
        for i in range(args.batches):
            queries = batch_queries(task, args.batch, args.rollouts, args.seed * 1000 + i)
            s, d = train_step(policy, opt, pg, task, queries, args.path_length, gen, share)
            times.append(s)
            distinct.append(d)
        key = "shared" if share else "per_walk"
        out[key] = {"median_s": float(np.median(times)), "mean_s": float(np.mean(times))}
        out["distinct_first_prefixes"] = float(np.mean(distinct))
    policy.load_state_dict(saved)
    out["speedup"] = out["per_walk"]["median_s"] / out["shared"]["median_s"]
    print(
        f"{phase:<10} per walk {out['per_walk']['median_s'] * 1e3:8.1f} ms   "
        f"shared {out['shared']['median_s'] * 1e3:8.1f} ms"
        f"   x{out['speedup']:.2f}   distinct first steps {out['distinct_first_prefixes']:.0f} of "
        f"{args.batch * args.rollouts} walks",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="kinship", help="a folder under <data root>/kg")
    ap.add_argument("--path-length", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rollouts", type=int, default=10)
    ap.add_argument("--batches", type=int, default=15, help="timed batches per way and phase")
    ap.add_argument("--train", type=int, default=400, help="REINFORCE batches between the two phases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "kg_walk.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = data_root(None)
    if not (root / "kg" / args.dataset).is_dir():
        print(f"skipped: no {root / 'kg' / args.dataset} (set SIGNET_RL_DATA to the data root)")
        return
    task = WalkTask.from_dataset(load_kg(args.dataset, root=root, inverse=None), seed=args.seed)
    torch.manual_seed(args.seed)
    policy = KGPolicy(task.index.num_entities, task.index.num_relations, 200, 200, 200, 400)
    print(
        f"{args.dataset}: {task.index.num_entities} entities, {task.walker.num_actions} action slots, "
        f"path length {args.path_length}, {args.batch} queries x {args.rollouts} walks per batch"
    )
    results: dict[str, Any] = {"untrained": measure(policy, task, args, "untrained")}
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    pg = Reinforce(beta=0.1, beta_decay=1.0)
    gen = torch.Generator().manual_seed(args.seed)
    t = time.perf_counter()
    for i in range(args.train):
        queries = batch_queries(task, args.batch, args.rollouts, 10**6 + i)
        train_step(policy, opt, pg, task, queries, args.path_length, gen, True)
    print(f"trained {args.train} batches in {time.perf_counter() - t:.0f} s")
    results[f"after_{args.train}"] = measure(policy, task, args, "trained")
    record = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "threads": 1},
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
