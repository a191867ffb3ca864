"""signet_rl.tasks.kg.run_kg logs one MLflow run (params, prefixed metrics, results.json) when
``mlflow.enabled``.

Separate from test_kg_trainer.py: creating MLflow's sqlite store alone takes ~15 s on a shared CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from signet_rl.tasks.kg import flat_metrics, train_kg

CONF = Path(__file__).resolve().parents[2] / "conf"


def test_run_is_logged_to_mlflow_and_named_in_what_train_prints(tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    folder = tmp_path / "kg" / "tiny"
    folder.mkdir(parents=True)
    (folder / "graph.txt").write_text("a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\n")
    (folder / "train.txt").write_text("a\tr3\tc\nb\tr3\td\n")
    (folder / "dev.txt").write_text("d\tr3\tc\n")
    (folder / "test.txt").write_text("b\tr3\tc\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            overrides=[
                "+task=kg",
                "+dataset=kg",
                "+seed=0",
                f"+run_dir={tmp_path / 'run'}",
                "+mlflow.enabled=true",
                f"+mlflow.tracking_uri={uri}",
                "+mlflow.experiment=kg-test",
                "dataset.spec=kg:tiny",
                f"dataset.data_root={tmp_path}",
                "dataset.inverse=true",
                "task.anchors=[]",
                "task.shaping=none",
                "task.progress=false",
                "task.max_batches=2",
                "task.eval_every=1",
                "task.beam_width=4",
            ]
        )
    mrr = train_kg(cfg)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert mrr == results["validation"]["kg_walk/mrr"]
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("kg-test").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["dataset"] == "kg:tiny"
    # MLflow names may not hold "@": hits@10 is logged as hits_10 (signet_rl.tracking's rule)
    expected = {k.replace("@", "_"): v for k, v in flat_metrics(results).items()}
    curve = {k: v for k, v in run.data.metrics.items() if k.startswith("curve/")}
    assert {k: v for k, v in run.data.metrics.items() if k not in curve} == pytest.approx(expected)
    # the validation curve is one metric history, stepped by batch
    history = client.get_metric_history(run.info.run_id, "curve/validation/kg_walk/mrr")
    assert [m.value for m in history] == pytest.approx([c["mrr"] for c in results["curve"]])
    assert [m.step for m in history] == [1, 2] and set(curve) == {
        "curve/validation/kg_walk/mrr",
        "curve/validation/kg_walk/hits_1",
    }
    assert {"validation/kg_walk/mrr", "test/kg_walk/hits_10", "train/batches"} <= set(run.data.metrics)
    assert run.data.params["task.beam_width"] == "4" and run.data.params["dataset.spec"] == "kg:tiny"
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"results.json", "config.yaml"}
    # what python -m signet_rl.train task=kg prints: the run, its name and its store
    printed = capsys.readouterr().out
    assert f"MLflow run {run.info.run_id} (kg_walk-kg:tiny-seed0) in {uri}\n" in printed
    assert run.info.run_name == "kg_walk-kg:tiny-seed0"
