from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from signet_rl.traversal.config import TraversalConfig

CONF = Path(__file__).resolve().parents[2] / "conf"


def test_defaults_match_the_design():
    cfg = TraversalConfig()
    assert (
        cfg.max_branching,
        cfg.max_paths,
        cfg.min_path_length,
        cfg.min_confidence,
        cfg.max_depth,
        cfg.constraint_budget_chars,
    ) == (4, 50, 2, 0.5, 3, 1000)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_branching": 0}, r"^TraversalConfig.max_branching must be an integer >= 1, got 0"),
        ({"max_paths": -1}, r"^TraversalConfig.max_paths must be an integer >= 1, got -1"),
        ({"min_confidence": -0.1}, r"^TraversalConfig.min_confidence must be a number in \[0, 1\], got -0.1"),
        ({"min_confidence": 1.5}, r"min_confidence .* got 1.5"),
        ({"min_confidence": float("nan")}, r"min_confidence .* got nan"),
        ({"max_depth": -1}, r"^TraversalConfig.max_depth must be an integer in \[0, 10\], got -1"),
        ({"max_depth": 11}, r"^TraversalConfig.max_depth must be an integer in \[0, 10\], got 11"),
        ({"min_path_length": -2}, r"^TraversalConfig.min_path_length must be an integer >= 0"),
        (
            {"constraint_budget_chars": -5},
            r"^TraversalConfig.constraint_budget_chars must be an integer >= 0",
        ),
        ({"max_branching": 2.5}, r"^TraversalConfig.max_branching must be an integer >= 1, got 2.5$"),
        ({"max_aspects": 0}, r"^TraversalConfig.max_aspects must be an integer >= 1"),
    ],
)
def test_bad_values_name_the_value_and_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TraversalConfig(**kwargs)


def test_dict_round_trip_and_unknown_keys():
    cfg = TraversalConfig(max_branching=2, min_confidence=0.25)
    assert TraversalConfig.from_dict(cfg.to_dict()) == cfg
    assert TraversalConfig.from_dict(None) == TraversalConfig()
    assert TraversalConfig.from_dict({"min_confidence": 1}).min_confidence == 1.0
    with pytest.raises(ValueError, match=r"unknown keys \['branching'\]"):
        TraversalConfig.from_dict({"branching": 3})


@pytest.mark.parametrize("name", ["synthetic", "kinship"])
def test_dataset_overrides_parse(name, monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(overrides=[f"+dataset={name}"])
    block = OmegaConf.to_container(cfg.dataset.traversal, resolve=True)
    assert isinstance(block, dict) and block
    tc = TraversalConfig.from_dict(block)  # type: ignore[arg-type]
    for key, value in block.items():
        assert getattr(tc, str(key)) == value
