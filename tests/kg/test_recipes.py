"""The KG recipes are config files (conf/experiment/kg/<recipe>.yaml) that compose to exactly the configs the
reported runs had.

fixtures/recipe_configs.json was computed from the Python override lists experiments/kg_report.py held
before the recipes became files: per recipe (``+experiment=kg/<recipe>`` on ``dataset.spec=kg:umls``) and
per report job (every ledger run, and every dataset of SETTINGS with every recipe), the checkpoint
fingerprint a run resumes by and a digest of the whole effective task, dataset and seed. A recipe file that
drifts from the runs it reported fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from signet_rl.tasks.kg import kg_config

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
FROZEN = json.loads((Path(__file__).parent / "fixtures" / "recipe_configs.json").read_text())
DATA_ROOT = "dataset.data_root=/data"  # the data root enters the fingerprint: fix it


def _report():
    return load_experiment("kg_report")


#: Task keys added after the digests were frozen, at the value that changes nothing the runs computed
#: (``rank_test``: true ranks the test split as every reported run did; false is a probe).
ADDED_AFTER_FREEZE = {"rank_test": True}


def _digest(cfg: DictConfig) -> dict[str, str]:
    task = OmegaConf.to_container(cfg.task, resolve=True)
    for key, value in ADDED_AFTER_FREEZE.items():
        if task.get(key) == value:
            task.pop(key)
    blob = json.dumps(
        {
            "task": task,
            "dataset": OmegaConf.to_container(cfg.dataset, resolve=True),
            "seed": cfg.seed,
        },
        sort_keys=True,
        default=str,
    )
    return {
        "config": hashlib.sha256(blob.encode()).hexdigest()[:16],
        "fingerprint": kg_config(cfg).fingerprint,
    }


def test_every_recipe_the_ledger_names_has_a_config_file():
    ledger = ROOT / "experiments" / "kg_runs"
    named = {entry["recipe"] for entry in json.loads((ledger / "runs.json").read_text()).values()}
    kept = json.loads((ledger / "before_ledger.json").read_text())["rows"]
    named |= {row["key"].split(":", 1)[1] for row in kept if row["key"].startswith("kg_walk:")}
    files = {p.stem for p in (CONF / "experiment" / "kg").glob("*.yaml")}
    assert named and named <= files, sorted(named - files)
    assert files == set(FROZEN["recipes"])  # a new recipe file gets its frozen config too


@pytest.mark.parametrize("recipe", sorted(FROZEN["recipes"]))
def test_each_recipe_composes_to_the_config_it_reported(recipe):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=[
                "task=kg",
                "dataset=kg",
                "dataset.spec=kg:umls",
                DATA_ROOT,
                f"+experiment=kg/{recipe}",
            ],
        )
    assert _digest(cfg) == FROZEN["recipes"][recipe]


def test_every_report_job_composes_to_the_config_of_its_runs(tmp_path):
    # the ledger's runs; among them NELL-995's likelihood_relations, whose recipe and dataset SETTINGS set one
    # key two ways (the recipe, applied after, wins: task.eval_queries=null over NELL's 200). fixtures/
    # recipe_configs.json also holds every recipe on every SETTINGS dataset, seed 0, for a wider check.
    report = _report()
    ledger = json.loads((ROOT / "experiments" / "kg_runs" / "runs.json").read_text())
    runs = [run for run in FROZEN["runs"] if run in ledger]
    assert len(runs) == len(ledger) and "nell-995-likelihood_relations-s3" in runs
    got = {}
    with initialize_config_dir(str(CONF), version_base="1.3"):
        for run in runs:
            stem, seed = run.rsplit("-s", 1)
            name, recipe = next((stem[: -len(r) - 1], r) for r in report.RECIPES if stem.endswith(f"-{r}"))
            overrides = report.job_overrides(name, recipe, int(seed), 1200, tmp_path / run)
            got[run] = _digest(compose("train", overrides=[*overrides, DATA_ROOT]))
    assert got == {run: FROZEN["runs"][run] for run in runs}


def test_a_missing_or_malformed_recipe_is_named(tmp_path):
    report = _report()
    with pytest.raises(FileNotFoundError, match=r"recipe 'nope': no .*nope.yaml; recipes: gnn, likelihood"):
        report.recipe_overrides("nope")
    (tmp_path / "bad.yaml").write_text("# @package _global_\nseed: 3\ntask:\n  lr: 0.1\n")
    with pytest.raises(ValueError, match=r"bad.yaml: a KG recipe overrides task keys only, not \['seed'\]"):
        report.recipe_overrides("bad", tmp_path)
    (tmp_path / "nested.yaml").write_text(
        "task:\n  anchors: [complex]\n  anchor:\n    dim: 8\n  patience: null\n"
    )
    assert report.recipe_overrides("nested", tmp_path) == [
        "task.anchors=[complex]",
        "task.anchor.dim=8",
        "task.patience=null",
    ]
