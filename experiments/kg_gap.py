"""Where a KG walker loses to its run's own KG-embedding anchor (issue 7).

Ranks one split with a finished KG run's walker (the weights it reported) and with one of its
in-run anchors, query by query, and splits the difference of their reciprocal ranks two ways:

- by how often the query's answer is a tail of the query relation among the *training* triples (never
  seen, 1-2, 3-9, 10 or more): a walker whose last step learns a per-relation prior over tails ranks the
  rare ones low;
- by query relation, the relations that lose most first.

    python experiments/kg_gap.py runs/report-kg/umls-regularised_sum-s0
    python experiments/kg_gap.py runs/report-kg/kinship-warm_dropout-s0 --anchor complex --split test

Prints both tables and writes them to ``runs/kg_gap/<run folder name>-<split>.json``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUCKETS = ((0, 0), (1, 2), (3, 9), (10, None))


def gap(run_dir: str | Path, split: str = "validation", anchor: str = "complex") -> dict[str, Any]:
    """The walker's and the anchor's filtered reciprocal ranks on ``split``, summed per bucket and relation.

    Raises:
        FileNotFoundError: the run kept no such anchor (``<run_dir>/anchors/<anchor>.pt``).
    """
    from signet_rl.kg.kge import KGEAnchor
    from signet_rl.kg.ranking import filtered_ranks
    from signet_rl.kg.rerank import load_run_policy
    from signet_rl.kg.trainer import policy_ranks

    path = Path(run_dir) / "anchors" / f"{anchor}.pt"
    if not path.exists():
        kept = sorted(p.stem for p in path.parent.glob("*.pt"))
        raise FileNotFoundError(f"{path} not found: the run kept anchors {kept}; pass --anchor one of them")
    cfg, task, policy = load_run_policy(run_dir)
    t = cfg.task
    batch = task.queries(split)
    walker = policy_ranks(
        policy,
        task,
        batch,
        cfg.path_length,
        t.beam_width,
        None,
        t.eval_mask_query_edge,
        t.beam_pool,
    )
    model = KGEAnchor.load(path)
    anchor_rr = 1.0 / np.asarray(filtered_ranks(model.score_tails(batch.heads, batch.relations), batch))
    walker_rr = 1.0 / np.asarray(walker)
    train = task.queries("train")
    seen = Counter(zip(train.relations.tolist(), train.tails.tolist(), strict=True))
    freq = np.array([seen[(int(r), int(e))] for r, e in zip(batch.relations, batch.tails, strict=True)])
    total = float((anchor_rr - walker_rr).sum())

    def summary(mask: np.ndarray) -> dict[str, Any]:
        lost = float((anchor_rr[mask] - walker_rr[mask]).sum())
        return {
            "queries": int(mask.sum()),
            "walker_mrr": round(float(walker_rr[mask].mean()), 4) if mask.any() else None,
            "anchor_mrr": round(float(anchor_rr[mask].mean()), 4) if mask.any() else None,
            "lost": round(lost, 2),
            "share": round(lost / total, 3) if total else None,
        }

    buckets = {}
    for lo, hi in BUCKETS:
        mask = (freq >= lo) & (freq <= (hi if hi is not None else np.inf))
        buckets[f"{lo}" if lo == hi else f"{lo}+" if hi is None else f"{lo}-{hi}"] = summary(mask)
    relations = {
        task.index.relations[int(r)]: summary(batch.relations == r) for r in np.unique(batch.relations)
    }
    ordered = dict(sorted(relations.items(), key=lambda kv: -kv[1]["lost"]))
    return {
        "run": str(run_dir),
        "split": split,
        "anchor": anchor,
        "walker_mrr": round(float(walker_rr.mean()), 4),
        "anchor_mrr": round(float(anchor_rr.mean()), 4),
        "lost": round(total, 2),
        "by_answer_frequency": buckets,
        "by_relation": ordered,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--split", default="validation", choices=("validation", "test"))
    p.add_argument("--anchor", default="complex")
    p.add_argument("--top", type=int, default=8, help="relations to print")
    p.add_argument("--output", type=Path, default=None, help="default: runs/kg_gap/<run>-<split>.json")
    args = p.parse_args(argv)
    got = gap(args.run_dir, args.split, args.anchor)
    print(
        f"{args.run_dir} [{args.split}]: walker MRR {got['walker_mrr']:.3f}, {args.anchor} "
        f"{got['anchor_mrr']:.3f}; summed reciprocal ranks lost {got['lost']:.1f}"
    )

    def line(name: str, row: dict[str, Any]) -> str:
        cells = (row["queries"], row["walker_mrr"], row["anchor_mrr"], row["lost"], row["share"])
        return "  " + " | ".join([name, *map(str, cells)])

    print("answer seen as the relation's tail in training | queries | walker | anchor | lost | share")
    for name, row in got["by_answer_frequency"].items():
        print(line(f"{name} times", row))
    print(f"relations losing most (of {len(got['by_relation'])}) | queries | walker | anchor | lost | share")
    for name, row in list(got["by_relation"].items())[: args.top]:
        print(line(name, row))
    out = args.output or ROOT / "runs" / "kg_gap" / f"{Path(args.run_dir).name}-{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(got, indent=1) + "\n")
    print(f"wrote {out}")
    return got


if __name__ == "__main__":
    main()
