"""Every dataset config composes with Hydra and names a spec the registry understands."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from signet_rl.datasets.registry import load_dataset, parse_spec

CONF = Path(__file__).resolve().parents[1] / "conf"
DATASETS = sorted(p.stem for p in (CONF / "dataset").glob("*.yaml"))


@pytest.mark.parametrize("name", DATASETS)
def test_dataset_config_composes(name, monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(overrides=[f"+dataset={name}"])
    assert cfg.dataset.data_root == str(tmp_path)
    if OmegaConf.is_missing(cfg.dataset, "spec"):
        assert name == "signet"  # the user must say which store
        return
    assert parse_spec(cfg.dataset.spec).kind in {"synthetic", "kg", "locomo", "musique"}


def test_synthetic_config_loads_through_the_registry():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(overrides=["+dataset=synthetic", "dataset.spec=synthetic:tiny:1"])
    ds = load_dataset(cfg.dataset.spec, root=cfg.dataset.data_root)
    assert ds.name == "synthetic:tiny:1" and ds.graph.num_entities == 60
