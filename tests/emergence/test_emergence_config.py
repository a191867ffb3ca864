"""Every emergent behaviour is off by default; a config mapping switches one on."""

from __future__ import annotations

import pytest

from signet_rl.emergence.config import EmergenceConfig


def test_all_off_by_default_and_switchable() -> None:
    assert EmergenceConfig().enabled == ()
    assert EmergenceConfig.from_mapping(None) == EmergenceConfig()
    cfg = EmergenceConfig.from_mapping({"bridges": True, "health": True,
                                        "health_thresholds": {"sick_share": 0.8},
                                        "prewarm_config": {"budget_chars": 300}})
    assert cfg.enabled == ("health", "bridges")
    assert cfg.health_thresholds.sick_share == 0.8 and cfg.prewarm_config.budget_chars == 300
    assert cfg.bridge.promote_after == 3


def test_bad_config_is_named() -> None:
    with pytest.raises(ValueError, match=r"emergence: unknown key 'bridge_promote'; known: health, bridges, "
                                         r"principles, prewarm, explorer, regulation, rediscovery, "
                                         r"health_thresholds, bridge, principle, prewarm_config, "
                                         r"exploration, rediscover$"):
        EmergenceConfig.from_mapping({"bridge_promote": 3})
    with pytest.raises(ValueError, match=r"emergence.bridges must be true or false, got 'yes'"):
        EmergenceConfig.from_mapping({"bridges": "yes"})
    with pytest.raises(ValueError, match=r"emergence.bridge: unknown key 'promote'; known: min_similarity"):
        EmergenceConfig.from_mapping({"bridge": {"promote": 3}})
    with pytest.raises(ValueError, match=r"HealthThresholds.min_ratings must be an integer >= 1, got 0"):
        EmergenceConfig.from_mapping({"health_thresholds": {"min_ratings": 0}})
    with pytest.raises(ValueError, match=r"^emergence.exploration.history must be an integer >= "
                                         r"2 \* window = 8, got 5$"):
        EmergenceConfig.from_mapping({"regulation": True, "exploration": {"window": 4, "history": 5}})
    with pytest.raises(ValueError, match=r"^ExplorerRegulator.stale_share must be in \[0, 1\], got 1.5$"):
        EmergenceConfig.from_mapping({"exploration": {"stale_share": 1.5}})


@pytest.mark.parametrize("key, value, message", [
    ("staleness", True,
     "emergence.staleness is not a switch: self-regulating exploration is task.explorer_regulation=true in "
     "the trainer (settings: task.regulator), and emergence.regulation=true in the service (settings: "
     "emergence.exploration)"),
    ("regulator", {"window": 3},
     "emergence.regulator is not read: the explorer regulator's settings are task.regulator (with "
     "task.explorer_regulation=true in the trainer), and emergence.exploration in the service (with "
     "emergence.regulation=true)"),
    ("cold_tier", True,
     "emergence.cold_tier is not a switch: rows move to the cold tier only offline, on a store copy "
     "(signet_rl.emergence.cold.move_to_cold, e.g. with the pruning plan that emergence.health=true writes "
     "to artifacts/emergence/pruning.json); nothing moves while training or serving"),
])
def test_switches_no_code_reads_are_refused_with_where_they_are(key, value, message) -> None:
    """Audit of issue 29: these keys were accepted and then read by nothing (a silent no-op)."""
    with pytest.raises(ValueError) as err:
        EmergenceConfig.from_mapping({key: value})
    assert str(err.value) == message
    assert not hasattr(EmergenceConfig(), key)


def test_the_v3_bridge_choice_is_a_recipe() -> None:
    """docs/results.md "Bridges on v3": the validation choice, as ``+experiment=emergence/bridges_v3``."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from signet_rl.emergence.config import BRIDGES_V3

    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("train", overrides=["+experiment=emergence/bridges_v3"])
    got = EmergenceConfig.from_mapping(OmegaConf.to_container(cfg.emergence, resolve=True))
    assert got.enabled == ("bridges",) and got.bridge == BRIDGES_V3 and cfg.encoder == "minilm"
    assert (BRIDGES_V3.min_similarity, BRIDGES_V3.min_lexical, BRIDGES_V3.mutual_top,
            BRIDGES_V3.promote_after) == (0.5, 0.0, 2, 3)
