"""experiments/kg_anchor_graph.py: the KG protocol's embedding baselines trained on the walking graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parents[2]


def _load():
    return load_experiment("kg_anchor_graph")


def _entry(key: str, model: str, seed: int, mrr: float) -> dict:
    test = {"hits@1": mrr - 0.1, "hits@3": mrr, "hits@10": 1.0, "mrr": mrr}
    return {"key": key, "model": model, "seed": seed, "train_on": "graph", "train_triples": 2098,
            "leaked_dropped": 0, "validation": dict(test), "test": test, "seconds": 1.0}  # fmt: skip


def test_the_table_gives_mean_and_sd_over_seeds_per_key_and_model():
    mod = _load()
    out = {f"c@minerva/complex/s{s}": _entry("c@minerva", "complex", s, m) for s, m in ((10, 0.8), (11, 0.9))}
    out["c@minerva/distmult/s10"] = _entry("c@minerva", "distmult", 10, 0.5)
    rows = mod.table(out).splitlines()
    assert rows[2] == ("| c | minerva | complex | 10, 11 | 75.0 ± 7.1 | 85.0 ± 7.1 | 100.0 ± 0.0 | "
                       "85.0 ± 7.1 | 85.0 | 2,098 |")  # fmt: skip
    assert rows[3].startswith("| c | minerva | distmult | 10 | 40.0 ± 0.0 |")


def test_the_anchor_settings_are_the_tasks_and_train_on_the_graph(tmp_path):
    mod = _load()
    models, kwargs = mod.anchor_settings()
    assert models == ["complex", "distmult"] and "train_on" not in kwargs
    with pytest.raises(SystemExit, match="no final runs in"):
        mod.main(["--ledger", str(tmp_path)])
