"""conf/scorer/*.yaml: every scorer's tunable constructor arguments are listed with their defaults, so a
sweep overrides them without ``+`` (issue 22 item 5)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from signet_rl.scorers import SCORERS
from signet_rl.train import build_scorer

CONF = Path(__file__).resolve().parents[1] / "conf"
#: Constructor arguments that are collaborators (objects), not hyperparameters: never in a config file.
COLLABORATORS = {"classifier", "edge_stats"}


@pytest.mark.parametrize("path", sorted((CONF / "scorer").glob("*.yaml")), ids=lambda p: p.stem)
def test_scorer_yaml_lists_exactly_the_tunable_constructor_arguments_with_their_defaults(path):
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert isinstance(node, dict)
    name = node.pop("name")
    assert name == path.stem
    params = inspect.signature(SCORERS[name]).parameters
    tunable = {k: p.default for k, p in params.items() if k not in COLLABORATORS}
    assert sorted(node) == sorted(tunable), f"{path.name}: keys differ from {SCORERS[name].__name__}'s"
    for key, default in tunable.items():
        assert node[key] == default and type(node[key]) is type(default), (
            f"{path.name}: {key}={node[key]!r}, the constructor's default is {default!r}"
        )


def test_scorer_hyperparameters_override_without_plus():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        gnn = compose("train", overrides=["scorer.lr=0.5", "scorer.hidden=8"])
        lin = compose("train", overrides=["scorer=linucb", "scorer.alpha=0.25"])
    assert build_scorer(gnn).config["lr"] == 0.5 and build_scorer(gnn).config["hidden"] == 8
    assert build_scorer(lin).alpha == 0.25
