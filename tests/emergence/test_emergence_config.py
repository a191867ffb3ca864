"""Every emergent behaviour is off by default; a config mapping switches one on."""

from __future__ import annotations

import pytest

from signet_rl.emergence.config import EmergenceConfig


def test_all_off_by_default_and_switchable() -> None:
    assert EmergenceConfig().enabled == ()
    assert EmergenceConfig.from_mapping(None) == EmergenceConfig()
    cfg = EmergenceConfig.from_mapping({"bridges": True, "health": True,
                                        "health_thresholds": {"sick_share": 0.8},
                                        "regulator": {"stale_share": 0.25}})
    assert cfg.enabled == ("health", "bridges")
    assert cfg.health_thresholds.sick_share == 0.8 and cfg.regulator.stale_share == 0.25
    assert cfg.bridge.promote_after == 3


def test_bad_config_is_named() -> None:
    with pytest.raises(ValueError, match=r"emergence: unknown key 'bridge_promote'; known: cold_tier"):
        EmergenceConfig.from_mapping({"bridge_promote": 3})
    with pytest.raises(ValueError, match=r"emergence.bridges must be true or false, got 'yes'"):
        EmergenceConfig.from_mapping({"bridges": "yes"})
    with pytest.raises(ValueError, match=r"emergence.bridge: unknown key 'promote'; known: min_similarity"):
        EmergenceConfig.from_mapping({"bridge": {"promote": 3}})
    with pytest.raises(ValueError, match=r"HealthThresholds.min_ratings must be an integer >= 1, got 0"):
        EmergenceConfig.from_mapping({"health_thresholds": {"min_ratings": 0}})
