"""Temporal pre-warm inside the bandit trainer (``emergence.prewarm``): slates logged and rated like any."""

from __future__ import annotations

from omegaconf import OmegaConf

from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.prewarm import PREDICTED_BUDGET, TrainerPrewarm
from signet_rl.train import _emergence_prewarm

CFG = dict(max_interactions=40, slate_size=2, session_size=4)


def test_each_session_start_logs_a_rated_prewarm_slate_that_learns_from_earlier_ratings(tiny, prior_trainer):
    t = prior_trainer(tiny, **CFG)
    assert t.session_start is None  # off unless the entry layer sets it
    _emergence_prewarm(OmegaConf.create({"emergence": {"prewarm": True}}), t)
    assert isinstance(t.session_start, TrainerPrewarm)
    t.run()
    pre = [r for r in t.log if r.intent == "prewarm"]
    sessions = [r.session for r in t.log if r.intent != "prewarm"]
    assert pre, "no session start pre-warmed anything"
    assert len({r.session for r in pre}) == len(pre)  # at most one slate per session
    for r in pre:
        assert r.query_id == f"prewarm:{r.session}" and r.session in sessions
        assert len(r.ratings) == len(r.shown) == len(r.pscores) and all(0 < p <= 1 for p in r.pscores)
        assert any(x is not None for x in r.ratings) or len(r.shown) == 0
        first = next(x for x in t.log if x.session == r.session and x.intent != "prewarm")
        # pre-warmed from what was rated *before* the session: nothing from its own first query
        assert first.step >= r.step and first.timestamp == r.timestamp
    first_session = sessions[0]
    assert all(r.session != first_session for r in pre)  # nothing rated yet at the first start
    # the statistics hold every rating logged before the last session start, pre-warm slates' own included
    records = list(t.log.records)
    last = max(i for i, r in enumerate(records) if r.intent == "prewarm")
    rated = sum(x is not None for r in records[:last] for x in r.ratings)
    assert len(t.session_start.model) == rated > 0
    assert any(x is not None for r in pre[:-1] for x in r.ratings)  # ... and some of those were pre-warm's
    assert t.session_start.model.config.budget_chars == PREDICTED_BUDGET


def test_prewarm_is_off_by_default(tiny, prior_trainer):
    assert EmergenceConfig().prewarm is False
    t = prior_trainer(tiny, **CFG)
    _emergence_prewarm(OmegaConf.create({"emergence": {"bridges": False}}), t)
    assert t.session_start is None
    t.run()
    assert all(r.intent != "prewarm" for r in t.log)
