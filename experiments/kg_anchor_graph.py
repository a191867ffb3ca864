"""The KG protocol's embedding baselines trained on the walking graph, beside the in-run anchors.

The in-run anchors of ``kg_protocol.py --final`` train on the train split's query triples alone
(``task.anchor.train_on=train``, the task's default). On Countries that is 118 ``locatedIn`` triples, and
no S2 or S3 test head is among them, so those anchors never train the embeddings of the entities they are
tested on: their test MRR (1.7 to 12.0) is that of an untrained model, not a baseline. NELL-995's recipe
already trains its anchor on the walking graph (``train_on=graph``) "so anchor vs walker compares models
that saw the same edges"; this script applies that rule to every frozen key of the protocol ledger, on the
same seeds (10-12), setting and test queries as the walker's final runs.

Nothing is chosen here: ``train_on=graph`` is the protocol's existing rule for the anchor, the other
anchor settings are ``conf/task/kg.yaml``'s, and the model list is the task's. (These figures were run after
the in-run anchors' test figures had been seen, which is why the rule is applied to every key, not only
where it helps.)

    python experiments/kg_anchor_graph.py            # every frozen key with final runs; prints the table
    python experiments/kg_anchor_graph.py --keys countries_S2@minerva --seeds 10

Writes ``experiments/kg_runs/anchors_graph.json`` (one entry per key, model and seed; resumable).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import kg_protocol  # noqa: E402

LEDGER_NAME = "anchors_graph.json"


def anchor_settings() -> tuple[list[str], dict]:
    """The task's anchor models and ``train_anchor`` keyword arguments (``conf/task/kg.yaml``)."""
    cfg = yaml.safe_load((ROOT / "conf" / "task" / "kg.yaml").read_text())
    return list(cfg["anchors"]), dict(cfg.get("anchor") or {})


def load(key: str):
    """The dataset of a ledger key (``<folder>@<setting>``), in that setting, as the walker saw it."""
    from signet_rl.core.paths import data_root
    from signet_rl.datasets.kg import load_kg

    dataset, setting = key.split("@")
    inverse = {"minerva": None, "multihopkg": True}[setting]
    return load_kg(dataset, data_root(), inverse=inverse)


def run(keys: list[str], seeds: list[int], ledger: Path) -> dict:
    from signet_rl.kg.kge import train_anchor

    models, kwargs = anchor_settings()
    kwargs["train_on"] = "graph"
    out = json.loads(ledger.read_text()) if ledger.exists() else {}
    for key in keys:
        ds = load(key)
        for model in models:
            for seed in seeds:
                name = f"{key}/{model}/s{seed}"
                if name in out:
                    continue
                t0 = time.perf_counter()
                _, report = train_anchor(ds, model=model, seed=seed, **kwargs)
                out[name] = {
                    "key": key, "model": model, "seed": seed, "train_on": "graph",
                    "train_triples": report["train_triples"], "leaked_dropped": report["leaked_dropped"],
                    "validation": {m: report["validation"][m] for m in kg_protocol.METRICS},
                    "test": {m: report["test"][m] for m in kg_protocol.METRICS},
                    "seconds": round(time.perf_counter() - t0, 1),
                }  # fmt: skip
                ledger.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
                print(f"{name}: validation MRR {100 * out[name]['validation']['mrr']:.1f}, "
                      f"test MRR {100 * out[name]['test']['mrr']:.1f}", flush=True)  # fmt: skip
    return out


def table(out: dict) -> str:
    """Markdown rows: key, model, seeds, test H@1/H@3/H@10/MRR as mean ± sd (×100), validation MRR."""
    import numpy as np

    groups: dict[tuple[str, str], list[dict]] = {}
    for entry in out.values():
        groups.setdefault((entry["key"], entry["model"]), []).append(entry)
    lines = ["| dataset | setting | model (trained on the walking graph) | seeds | H@1 | H@3 | H@10 | MRR | "
             "validation MRR | train triples |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for (key, model), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["seed"])
        cells = []
        for m in kg_protocol.METRICS:
            v = 100 * np.array([r["test"][m] for r in rows])
            cells.append(f"{v.mean():.1f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.1f}")
        val = 100 * np.mean([r["validation"]["mrr"] for r in rows])
        dataset, setting = key.split("@")
        lines.append(f"| {dataset} | {setting} | {model} | {', '.join(str(r['seed']) for r in rows)} | "
                     f"{' | '.join(cells)} | {val:.1f} | {rows[0]['train_triples']:,} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", nargs="*", help="ledger keys (default: every frozen key with final runs)")
    ap.add_argument("--seeds", nargs="*", type=int, default=list(kg_protocol.FINAL_SEEDS))
    ap.add_argument("--ledger", type=Path, default=kg_protocol.LEDGER)
    args = ap.parse_args(argv)
    final = kg_protocol._read(args.ledger, kg_protocol.FINAL)
    keys = args.keys or sorted({f"{e['dataset']}@{e['setting']}" for e in final.values()})
    if not keys:
        raise SystemExit(
            f"no final runs in {args.ledger / kg_protocol.FINAL}: run kg_protocol.py --final first"
        )
    out = run(keys, args.seeds, args.ledger / LEDGER_NAME)
    print(table(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
