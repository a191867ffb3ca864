"""``python -m signet_rl.evaluate ... ray=true``: the queries of one evaluation sharded over Ray tasks and
merged before the bootstrap print the single-process table (timings apart). The merge itself is checked
without Ray; the Ray run skips, naming the extra, only where Ray is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from signet_rl.evaluate import _prepare, evaluate_from_config
from signet_rl.evaluation.harness import EvaluationResult, evaluate, shard_positions

ROOT = Path(__file__).resolve().parents[1]
# tiny, no MiniLM (best_flat loads it): the hashing retrievers, the ceiling and flat_signet under its own caps
TINY = ["dataset.spec=synthetic:tiny", "bootstrap=200", "mlflow.enabled=false", "~retrievers.best_flat",
        "baseline=flat_signet_uncapped"]  # fmt: skip
TIMING = ["latency_s", "latency_p50_ms", "latency_p95_ms"]


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("evaluate", overrides=[*TINY, *overrides])


def _without_timings(table: str) -> list[str]:
    """The table's lines less their last two columns (p50_ms, p95_ms: wall-clock measurements)."""
    return [line.rsplit(maxsplit=2)[0].rstrip() for line in table.strip().splitlines() if line.strip()]


def test_shard_positions_cover_every_query_once_in_order():
    parts = [list(shard_positions(10, i, 3)) for i in range(3)]
    assert parts == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [list(shard_positions(2, i, 3)) for i in range(3)] == [[0], [1], []]
    with pytest.raises(
        ValueError, match=r"^shard \(3, 3\) is not one of 3 shards; give 0 <= index < shards$"
    ):
        shard_positions(10, 3, 3)


def test_merged_shards_equal_the_single_process_result():
    dataset, shared, _ = _prepare(_cfg())
    whole = evaluate(dataset, shared, budget_chars=2000, n_boot=200)
    parts = [evaluate(dataset, shared, budget_chars=2000, n_boot=200, shard=(i, 3)) for i in range(3)]
    assert sorted(len(p.rows) for p in parts) == [25, 25, 30]  # 16 queries x 5 retrievers in 6/5/5
    merged = EvaluationResult.merge_shards(parts)
    pd.testing.assert_frame_equal(merged.rows.drop(columns="latency_s"), whole.rows.drop(columns="latency_s"))
    keep = [c for c in whole.summary().columns if c not in TIMING]
    pd.testing.assert_frame_equal(merged.summary()[keep], whole.summary()[keep])
    assert merged.flat_metrics()["retrieval/desire_ppr/vs_baseline/f1_low"] == pytest.approx(
        whole.flat_metrics()["retrieval/desire_ppr/vs_baseline/f1_low"], abs=0
    )
    assert _without_timings(merged.table()) == _without_timings(whole.table())


def test_ray_true_prints_the_single_process_table(tmp_path, capsys):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed: pip install -e '.[distributed]' runs evaluate ray=true")
    evaluate_from_config(_cfg())
    alone = capsys.readouterr().out.split("\nevaluated ")[0]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "signet_rl.evaluate", *TINY, "ray=true", "ray_init.num_cpus=2",
         f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "evaluated 16 queries x 6 retrievers" in done.stdout
    sharded = done.stdout.split("\nevaluated ")[0]
    assert _without_timings(sharded) == _without_timings(alone)
    assert "desire_ppr" in sharded and "candidate_ceiling" in sharded
