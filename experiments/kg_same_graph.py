"""Whether a KG folder's two protocol settings walk the same graph, action for action (issue 30).

``experiments/kg_protocol.py`` runs each dataset in two settings: ``minerva`` (the graph as the folder's
files define it, ``dataset.inverse=null``) and ``multihopkg`` (every inverse edge added,
``dataset.inverse=true``). Where the folder's graph already holds every inverse edge (Kinship's
``graph.txt``) or the loader adds them in both settings (NELL-995's layout, as MINERVA's ``nell`` setting
does), the two settings are one walking graph. This script loads the folder both ways and compares
everything a run is built from: the entity and relation ids, the graph's triples in order, the action
table the walker samples from (``max_actions`` cap drawn with the same seed), the inverse-relation map,
the rewarded training facts, and every split's queries and filtered answers. When all of them match, a
run of one setting is the run of the other (same seed, same recipe), and the protocol's ledger may
record the second setting as the first's runs (``frozen.json``: ``same_runs_as``).

    python experiments/kg_same_graph.py kinship nell-995 [--max-actions 200] [--seed 10]

Prints one line per folder and exits 1 when any folder's two settings differ.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

#: the two settings of experiments/kg_protocol.py, as ``load_kg``'s ``inverse`` argument
SETTINGS = {"minerva": None, "multihopkg": True}
SPLITS = ("train", "validation", "test")


def _task(folder: str, root: Path, inverse: bool | None, max_actions: int | None, seed: int):
    from signet_rl.datasets.kg import load_kg
    from signet_rl.kg.walk_task import WalkTask

    ds = load_kg(folder, root=root, inverse=inverse)
    return WalkTask.from_dataset(ds, max_actions=max_actions, seed=seed)


def _fingerprint(task) -> dict[str, object]:
    """Every array a run reads from its task, by name (numpy arrays or tuples, compared exactly)."""
    w, ix = task.walker, task.index
    out: dict[str, object] = {
        "entities": ix.entities,
        "relations": ix.relations,
        "graph_triples": ix.graph_triples,
        "actions.next_entity": w.next_entity,
        "actions.relation": w.relation,
        "actions.mask": w.mask,
        "actions.inverse_of": w.inverse_of,
        "actions.dropped_edges": w.dropped_edges,
        "train_facts": task.train_facts,
    }
    for split in SPLITS:
        q = task.queries(split)
        out[f"{split}.heads"], out[f"{split}.relations"], out[f"{split}.tails"] = (
            q.heads,
            q.relations,
            q.tails,
        )
        out[f"{split}.known"] = tuple(tuple(k) for k in q.known)
    return out


def _equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    return a == b


def compare(folder: str, root: Path, max_actions: int | None = None, seed: int = 0) -> dict:
    """Load ``folder`` in both settings and compare what a run is built from.

    Returns:
        ``{"folder", "edges": {setting: n}, "differs": [names of the parts that differ], "identical": bool}``.
        ``identical`` means the two settings' runs with one seed and recipe read the same inputs.
    """
    a, b = (_task(folder, root, inv, max_actions, seed) for inv in SETTINGS.values())
    fa, fb = _fingerprint(a), _fingerprint(b)
    differs = [name for name in fa if not _equal(fa[name], fb[name])]
    return {
        "folder": folder,
        "edges": {s: int(len(t.index.graph_triples)) for s, t in zip(SETTINGS, (a, b), strict=True)},
        "differs": differs,
        "identical": not differs,
    }


def main(argv: list[str] | None = None) -> int:
    from signet_rl.core.paths import data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", help="KG folders under <data root>/kg (kinship, nell-995, ...)")
    ap.add_argument("--data-root", type=Path, default=None)
    ap.add_argument("--max-actions", type=int, default=None, help="the action cap (NELL-995's: 200)")
    ap.add_argument("--seed", type=int, default=0, help="the seed that draws the capped actions")
    args = ap.parse_args(argv)
    root = args.data_root or data_root()
    bad = 0
    for folder in args.folders:
        r = compare(folder, root, args.max_actions, args.seed)
        edges = ", ".join(f"{s} {n:,}" for s, n in r["edges"].items())
        verdict = (
            "identical walking graph and inputs" if r["identical"] else f"DIFFER: {', '.join(r['differs'])}"
        )
        print(f"{folder}: edges {edges}; {verdict}", flush=True)
        bad += not r["identical"]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
