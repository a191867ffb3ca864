"""SIGNET_RL_SMOKE shrinks the README's long commands: the same code path, less data (signet_rl/smoke.py)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir

from signet_rl import smoke

CONF = Path(__file__).resolve().parents[1] / "conf"


def _compose(name: str, overrides: list[str]):
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose(name, overrides=overrides)


def test_a_smoke_run_on_locomo_keeps_its_first_sessions_only(monkeypatch, tmp_path):
    # a LoCoMo train or evaluate run indexes every conversation with MiniLM (best_flat): the first sessions
    # of each keep the code path and drop the two minutes of embedding
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    cfg = _compose("train", ["scorer=linucb", "dataset=locomo"])
    smoke.shrink_train(cfg)
    assert cfg.dataset.spec == "locomo" and dict(cfg.dataset.options) == {
        "extract": True, "observations": False, "extract_encoder": "minilm",
        "max_sessions": smoke.LOCOMO_SESSIONS,
    }  # the dataset config's own options are kept
    assert cfg.task.max_test_queries == smoke.BANDIT["max_test_queries"]
    cfg = _compose("evaluate", ["dataset=locomo"])
    smoke.shrink_evaluate(cfg)
    assert cfg.dataset.options.max_sessions == smoke.LOCOMO_SESSIONS and cfg.max_queries == 20


def test_a_smoke_run_on_synthetic_data_takes_the_tiny_preset_and_keeps_its_options(monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    cfg = _compose("train", ["dataset.spec=synthetic:medium:1", "dataset.options.version=2"])
    smoke.shrink_train(cfg)
    assert cfg.dataset.spec == "synthetic:tiny:1"
    assert dict(cfg.dataset.options) == {"drift": False, "version": 2}
