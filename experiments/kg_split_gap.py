"""Why a KG folder's validation and test figures differ: a model-free comparison of the two splits (issue 30).

On NELL-995 every walker run scores validation MRR ~0.65 against test ~0.74. MINERVA's ``nell`` walking graph
is ``full_kb`` train + valid, so it holds all 543 validation triples (and their inverses) and none of the
test triples (``experiments/kg_leak_check.py``). The walker masks each query's own edge when it ranks, so a
validation query is not handed its answer; what else differs between the splits is measured here, on the
action table the walker really walks (the dataset's path length and action cap from
``experiments/kg_protocol.py``, the cap's subsample drawn with ``--cap-seed``), with each query's own edge
``head -relation-> answer`` removed exactly as the walker's mask removes it:

* ``reach@k``: the share of queries whose answer is reachable from the head within ``k`` steps (``NO_OP``
  lets a walk stop early), ``k = 1 .. path length``. ``reach@L`` bounds any walker's hits@k from above.
* ``isolated head``: the head has no edge left once its own edge is masked (a walk cannot leave it).
* ``answer degree``: edges into the answer other than the query's own, median.
* ``prior MRR``: a model-free ranker that ranks every entity by how often it is a tail of the query relation
  in the walking graph (filtered ranks), per split and per relation: how hard each split is without any
  learning.
* the committed walker runs of the folder (``experiments/kg_runs/runs.json``): validation and test MRR and
  the share of queries whose answer the beam never reached (``misses``), beside ``reach@L``.

Nothing here names a benchmark: any MINERVA-layout folder runs.

    python experiments/kg_split_gap.py nell-995 [--setting minerva] [--cap-seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kg_protocol import LEDGER, SETTINGS, structure

from signet_rl.core.paths import data_root
from signet_rl.datasets.kg import load_kg
from signet_rl.kg.ranking import QueryBatch, filtered_ranks, ranking_metrics
from signet_rl.kg.walk_task import KGWalker, WalkTask

SPLITS = ("validation", "test")


def _dataset_settings(dataset: str, setting: str) -> tuple[bool | None, int, int | None]:
    """``(inverse, path_length, max_actions)`` of ``dataset`` in ``setting``, as the protocol runs it."""
    found = {"inverse": None, "path_length": 3, "max_actions": None}
    for o in [*structure(dataset), *SETTINGS[setting]]:
        key, _, value = o.partition("=")
        if key.startswith("dataset."):
            name = key.removeprefix("dataset.")
            found[name] = (
                None if value == "null" else (value == "true" if value in ("true", "false") else int(value))
            )
    return found["inverse"], int(found["path_length"]), found["max_actions"]


def _predecessors(walker: KGWalker) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every action-table edge grouped by its target: ``(start, source, relation)`` in CSR form (the edges
    into entity ``e`` are ``source[start[e]:start[e + 1]]``); ``NO_OP`` and padding are left out."""
    real = walker.mask & (walker.relation < walker.num_relations)
    src = np.nonzero(real)[0]
    dst, rel = walker.next_entity[real].astype(np.int64), walker.relation[real].astype(np.int64)
    order = np.argsort(dst, kind="stable")
    start = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=walker.num_entities))])
    return start, src[order], rel[order]


def reach_steps(walker: KGWalker, batch: QueryBatch, path_length: int) -> np.ndarray:
    """The fewest steps from each query's head to its answer (``path_length + 1``: not within reach).

    Each query's own edge ``head -relation-> tail`` is left out, as the walker's evaluation mask leaves it
    out (its inverse ``tail -> head`` only leads back to the head, so it changes no distance to the answer).
    Walks forward ``path_length - 1`` steps, then asks whether any edge into the answer starts from a
    reached entity (so the last, widest frontier is never built).
    """
    nxt, rel, mask = walker.next_entity, walker.relation, walker.mask
    start, src, srel = _predecessors(walker)
    out = np.full(len(batch), path_length + 1, dtype=np.int64)
    seen = np.zeros(walker.num_entities, dtype=bool)
    for i, (h, r, t) in enumerate(zip(batch.heads, batch.relations, batch.tails, strict=True)):
        if h == t:
            out[i] = 0
            continue
        lo, hi = start[t], start[t + 1]
        into = src[lo:hi][~((src[lo:hi] == h) & (srel[lo:hi] == r))]  # the own edge masked
        seen[:] = False
        seen[h] = True
        frontier = np.asarray([h])
        for step in range(1, path_length + 1):
            if seen[into].any():  # an edge from a reached entity into the answer: one more step
                out[i] = step
                break
            if step == path_length:
                break
            rows_n, rows_r, rows_m = nxt[frontier], rel[frontier], mask[frontier]
            own = (frontier == h)[:, None] & (rows_r == r) & (rows_n == t)
            frontier = np.unique(rows_n[rows_m & ~own])
            frontier = frontier[~seen[frontier]]
            if frontier.size == 0:
                break
            seen[frontier] = True
    return out


def prior_ranks(walker: KGWalker, batch: QueryBatch) -> np.ndarray:
    """Filtered ranks of a ranker that scores an entity by how often it is a tail of the query relation
    among the walking graph's edges (no learning, no head)."""
    real = walker.mask & (walker.relation < walker.num_relations)
    rel, tail = walker.relation[real].astype(np.int64), walker.next_entity[real].astype(np.int64)
    ranks = np.empty(len(batch), dtype=np.float64)
    for r in np.unique(batch.relations):
        scores = np.bincount(tail[rel == r], minlength=walker.num_entities).astype(
            np.float64
        )  # ties: filtered_ranks' half rank
        where = np.flatnonzero(batch.relations == r)
        for lo in range(0, len(where), 256):
            sub = where[lo : lo + 256]
            picked = batch.take(sub)
            ranks[sub] = filtered_ranks(np.broadcast_to(scores, (len(sub), scores.size)), picked)
    return ranks


def split_report(walker: KGWalker, batch: QueryBatch, relations: tuple[str, ...], path_length: int) -> dict:
    """The structural figures of one split (see the module docstring), overall and per relation."""
    steps = reach_steps(walker, batch, path_length)
    prior = prior_ranks(walker, batch)
    nxt, rel, mask = walker.next_entity, walker.relation, walker.mask
    left = np.asarray(
        [
            int((mask[h] & ~((rel[h] == r) & (nxt[h] == t))).sum()) - 1  # minus NO_OP
            for h, r, t in zip(batch.heads, batch.relations, batch.tails, strict=True)
        ]
    )
    into = np.bincount(nxt[mask][rel[mask] < walker.num_relations], minlength=walker.num_entities)
    own = np.asarray(
        [
            bool(((rel[h] == r) & (nxt[h] == t) & mask[h]).any())
            for h, r, t in zip(batch.heads, batch.relations, batch.tails, strict=True)
        ]
    )

    def figures(sel: np.ndarray) -> dict:
        return {
            "queries": int(sel.sum()),
            **{f"reach@{k}": float(np.mean(steps[sel] <= k)) for k in range(1, path_length + 1)},
            "own_edge_in_graph": float(own[sel].mean()),
            "isolated_head": float(np.mean(left[sel] == 0)),
            "answer_degree_median": float(np.median(into[batch.tails[sel]] - own[sel])),
            "prior_mrr": ranking_metrics(prior[sel])["mrr"],
        }

    per_relation = {relations[r]: figures(batch.relations == r) for r in np.unique(batch.relations).tolist()}
    return {"all": figures(np.ones(len(batch), dtype=bool)), "per_relation": per_relation}


def walker_runs(dataset: str, ledger: Path = LEDGER) -> list[dict]:
    """The committed walker runs of ``dataset`` with both splits ranked: MRR and never-reached share."""
    rows = []
    for name, e in sorted(json.loads((ledger / "runs.json").read_text()).items()):
        if e.get("dataset") != dataset or not e.get("test") or not e.get("validation"):
            continue
        row = {"run": name}
        for split in SPLITS:
            m = e[split]
            row[f"{split}_mrr"] = m["kg_walk/mrr"]
            row[f"{split}_misses"] = m["kg_walk/misses"] / m["kg_walk/n"]
            row[f"{split}_n"] = int(m["kg_walk/n"])
        rows.append(row)
    return rows


def analyse(dataset: str, setting: str = "minerva", cap_seed: int = 0, root: Path | None = None) -> dict:
    inverse, path_length, max_actions = _dataset_settings(dataset, setting)
    ds = load_kg(dataset, root=root or data_root(), inverse=inverse)
    task = WalkTask.from_dataset(ds, max_actions=max_actions, seed=cap_seed)
    splits = {
        s: split_report(task.walker, task.queries(s), task.index.relations, path_length) for s in SPLITS
    }
    return {
        "dataset": dataset,
        "setting": setting,
        "path_length": path_length,
        "max_actions": max_actions,
        "cap_seed": cap_seed,
        "capped_edges": task.walker.dropped_edges,
        "splits": splits,
        "walker_runs": walker_runs(dataset),
    }


def render(a: dict) -> str:
    L = a["path_length"]
    head = [
        "split",
        "queries",
        "own edge in graph",
        *[f"reach@{k}" for k in range(1, L + 1)],
        "isolated head",
        "answer in-degree (median)",
        "prior MRR",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for split, rep in a["splits"].items():
        f = rep["all"]
        cells = [
            split,
            f"{f['queries']:,}",
            f"{100 * f['own_edge_in_graph']:.1f} %",
            *[f"{100 * f[f'reach@{k}']:.1f} %" for k in range(1, L + 1)],
            f"{100 * f['isolated_head']:.1f} %",
            f"{f['answer_degree_median']:.0f}",
            f"{100 * f['prior_mrr']:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"| relation | validation queries | test queries | validation reach@{L} | test reach@{L} | "
        "validation prior MRR | test prior MRR |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    v, t = a["splits"]["validation"]["per_relation"], a["splits"]["test"]["per_relation"]
    for r in sorted(set(v) | set(t)):
        fv, ft = v.get(r), t.get(r)

        def cell(f: dict | None, key: str, scale: float = 100.0) -> str:
            return "–" if f is None else f"{scale * f[key]:.1f}"

        lines.append(
            f"| {r} | {fv['queries'] if fv else 0} | {ft['queries'] if ft else 0} | "
            f"{cell(fv, f'reach@{L}')} | {cell(ft, f'reach@{L}')} | "
            f"{cell(fv, 'prior_mrr')} | {cell(ft, 'prior_mrr')} |"
        )
    if a["walker_runs"]:
        lines += [
            "",
            "| committed walker run | validation queries | validation MRR | test MRR | "
            "validation never reached | test never reached |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in a["walker_runs"]:
            lines.append(
                f"| {r['run']} | {r['validation_n']:,} | {100 * r['validation_mrr']:.1f} | "
                f"{100 * r['test_mrr']:.1f} | "
                f"{100 * r['validation_misses']:.1f} % | {100 * r['test_misses']:.1f} % |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", help="a KG folder under <data root>/kg")
    ap.add_argument("--setting", default="minerva", choices=sorted(SETTINGS))
    ap.add_argument("--cap-seed", type=int, default=0, help="seed of the action cap's subsample")
    ap.add_argument("--data-root", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    a = analyse(args.dataset, args.setting, args.cap_seed, args.data_root)
    print(
        f"kg:{a['dataset']} ({a['setting']} setting, path length {a['path_length']}, action cap "
        f"{a['max_actions']}, cap seed {a['cap_seed']}: {a['capped_edges']:,} edges left out)"
    )
    print(render(a))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(a, indent=1, sort_keys=True) + "\n")
    return a


if __name__ == "__main__":
    main()
