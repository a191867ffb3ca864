"""Count the validation and test triples each KG folder's walking graph holds (issue 30).

A test triple ``(h, r, t)`` that is an edge of the walking graph, or whose inverse edge ``t -r^-1-> h`` is,
lets a walker read its answer off the graph. This walks every MINERVA-layout folder under
``<data root>/kg`` (whatever folders are there: nothing here names a benchmark), loads each in both
settings the results compare — the graph as its files define it (MINERVA's setting) and with every inverse
edge added (MultiHopKG's) — and prints the counts. The loader itself logs a WARNING whenever a test triple
is in the graph, so this script is the audit and the loader the guard.

    python experiments/kg_leak_check.py [--data-root PATH] [--out experiments/kg_runs/leaks.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from signet_rl.core.paths import data_root
from signet_rl.datasets.kg import _available, load_kg

SETTINGS = {"minerva (graph as given)": None, "multihopkg (inverses added)": True}


def check(root: Path) -> list[dict]:
    """One row per (folder, setting): the split triples found in the walking graph."""
    rows = []
    for folder in _available(root / "kg"):
        for setting, inverse in SETTINGS.items():
            counts = load_kg(folder, root=root, inverse=inverse).meta["counts"]
            rows.append(
                {
                    "folder": folder,
                    "setting": setting,
                    "edges": counts["dependencies"],
                    **{
                        f"{s}_{k}": counts.get(f"{s}_{k}_in_graph", 0)
                        for s in ("validation", "test")
                        for k in ("triples", "inverse")
                    },
                    "test_queries": counts["queries_test"],
                }
            )
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = check(args.data_root or data_root())
    print(
        f"{'folder':<22} {'setting':<28} {'edges':>8} {'val':>6} {'val inv':>8} {'test':>6} {'test inv':>9}"
    )
    for r in rows:
        print(
            f"{r['folder']:<22} {r['setting']:<28} {r['edges']:>8,} {r['validation_triples']:>6} "
            f"{r['validation_inverse']:>8} {r['test_triples']:>6} {r['test_inverse']:>9}"
        )
    leaked = [r for r in rows if r["test_triples"] or r["test_inverse"]]
    print(
        f"test triples in a walking graph: {sum(r['test_triples'] + r['test_inverse'] for r in rows)} "
        f"({len(leaked)} of {len(rows)} folder-settings)"
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
