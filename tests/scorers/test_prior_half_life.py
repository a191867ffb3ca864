"""The prior's half-life comes from its study (issue 25 §3), reaches every scorer that reads the prior, and
what was saved or reported under the old 90 days still loads and reruns as it was."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from bandit_task import ROUTES, T0, A, D, E, T, build_graph, make_queries
from omegaconf import OmegaConf

from signet_rl.graph.arrays import GraphArrays
from signet_rl.scorers import PRE_SWEEP_DEFAULTS, LinUCBScorer, PriorScorer, make_scorer
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.fused import BaseScores, FusedScorer
from signet_rl.scorers.prior import PRIOR_HALF_LIFE_DAYS
from signet_rl.traversal.path import Path

#: Trial 0 of study learning-prior: the best of its trials by the worse of synthetic and LoCoMo validation
#: (experiments/prior_half_life.py; docs/results.md).
CHOSEN = 27.2652561911619


def test_the_default_is_the_committed_choice_among_the_studys_trials():
    """experiments/choices/learning-prior.json is what experiments/prior_half_life.py printed and chose: the
    default is its chosen trial, and the rule picks that trial again from the committed scores."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    table = json.loads((root / "experiments" / "choices" / "learning-prior.json").read_text())
    sys.path.insert(0, str(root / "experiments"))
    try:
        from prior_half_life import choose
    finally:
        sys.path.remove(str(root / "experiments"))
    assert table["study"] == "learning-prior" and len(table["trials"]) == 16
    assert choose([dict(t) for t in table["trials"]])["number"] == table["chosen"]["number"] == 0
    assert PRIOR_HALF_LIFE_DAYS == table["chosen"]["half_life_days"] == CHOSEN


def test_the_prior_scorer_takes_the_chosen_trial_and_the_learned_scorers_the_column_they_were_tuned_with():
    assert PRIOR_HALF_LIFE_DAYS == CHOSEN
    assert PriorScorer().half_life_days == CHOSEN
    assert BaseScores().prior.half_life_days == CHOSEN
    # desire_fused's column: its study's chosen trial (16, PPR alone) ran at 90 days; the learned scorers'
    # column: every study of theirs ran at 90 days (at 27 each lost on validation: docs/results.md)
    assert FusedScorer().base.prior.half_life_days == 90.0
    for name in ("gnn", "linucb", "signet_predictor"):
        scorer = make_scorer(name)
        assert scorer.config["prior_half_life_days"] == 90.0, name
        assert scorer.base.prior.half_life_days == 90.0, name
    assert PRE_SWEEP_DEFAULTS["prior"] == {"half_life_days": 90.0}


def test_the_learned_scorers_read_the_half_life_they_are_given():
    for name in ("gnn", "linucb", "signet_predictor"):
        assert make_scorer(name, prior_half_life_days=90.0).base.prior.half_life_days == 90.0, name
        assert make_scorer(name, prior_half_life_days=None).base.prior.half_life_days is None, name
    # the predictor's prior baseline ranking reads it too (the pre-sweep predictor fused with the prior)
    predictor = make_scorer("signet_predictor", baseline="prior", prior_half_life_days=90.0)
    assert predictor.baseline.half_life_days == 90.0
    with pytest.raises(ValueError, match=r"prior_half_life_days must be .*> 0.*got -1"):
        make_scorer("linucb", prior_half_life_days=-1.0)


def test_the_tuned_half_life_changes_the_prior_column_on_aged_facts():
    """27 days against ninety, on facts 10 days old and one 5 days old: the log prior of the route to the
    younger fact gains 5 * (1/27 - 1/90) * ln 2 over the others, so the setting is not a no-op."""
    graph = build_graph()
    at = (T0 + pd.Timedelta(days=10)).timestamp()
    ctx = ScoringContext(graph, GraphArrays.from_graph(graph), ("hub",), at)
    routes = [*ROUTES, Path.of(E("hub"), D("hb"), E("b"), A("asp-b"), T("tb2"), strategy="what")]
    q = make_queries(1)[0]
    gain = BaseScores().raw(q, routes, ctx)[:, 0] - BaseScores(half_life_days=90.0).raw(q, routes, ctx)[:, 0]
    expected = 5 * (1 / CHOSEN - 1 / 90) * np.log(2)
    assert gain[-1] - gain[0] == pytest.approx(expected)
    assert gain[:-1] == pytest.approx(np.full(len(ROUTES), gain[0]))


def _linucb_artifact(tmp_path, config: dict) -> dict:
    trained = LinUCBScorer(**{**config})
    np.savez(tmp_path / "linucb.npz", A_inv=trained.A_inv, b=trained.b, updates=np.asarray(0))
    manifest = {"scorer": {"name": "linucb", "kind": "linucb", "config": config}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_a_linucb_saved_without_the_key_loads_with_the_ninety_days_it_was_trained_with(tmp_path):
    from signet_rl.serving.policy import LOADERS

    old = {"alpha": 1.0, "lam": 1.0, "sigma": 0.5, "importance_weighted": False,
           "max_importance_weight": 10.0, "intent_interactions": True, "base_scores": True,
           "encoder": "hashing"}  # fmt: skip
    manifest = _linucb_artifact(tmp_path, {**old, "prior_half_life_days": 90.0})
    manifest["scorer"]["config"] = old  # an artifact exported before the key existed
    served = LOADERS["linucb"](tmp_path, manifest)
    assert served.base.prior.half_life_days == 90.0
    assert served.config["prior_half_life_days"] == 90.0


def test_a_linucb_state_of_another_half_life_is_refused_naming_the_key():
    saved = LinUCBScorer(prior_half_life_days=90.0).state_dict()
    with pytest.raises(ValueError) as err:
        LinUCBScorer(prior_half_life_days=CHOSEN).load_state_dict(saved)
    assert str(err.value) == (
        f"state was built with prior_half_life_days=90.0, this scorer with {CHOSEN!r} "
        "(set scorer.prior_half_life_days=90.0)"
    )
    old = dict(saved)
    old["config"] = {k: v for k, v in saved["config"].items() if k != "prior_half_life_days"}
    LinUCBScorer(prior_half_life_days=90.0).load_state_dict(old)  # saved before the key: 90 days


def test_a_gnn_saved_without_the_key_loads_with_ninety_days(tmp_path):
    import torch

    from signet_rl.scorers.gnn import GNNPathScorer

    path = GNNPathScorer(hidden=8, n_heads=2, prior_half_life_days=90.0).save(tmp_path / "policy")
    blob = torch.load(path, weights_only=True)
    blob["config"].pop("prior_half_life_days")  # a policy saved before the key
    torch.save(blob, path)
    loaded = GNNPathScorer.load(path)
    assert loaded.base.prior.half_life_days == 90.0 and loaded.config["prior_half_life_days"] == 90.0
    # its checkpoint resumes into a 90-day scorer only; without base scores the half-life is not read
    state = loaded.state_dict()
    state["config"].pop("prior_half_life_days")
    refused = r"^checkpoint was built with other arguments: prior_half_life_days$"
    with pytest.raises(ValueError, match=refused):
        GNNPathScorer(hidden=8, n_heads=2, prior_half_life_days=CHOSEN).load_state_dict(state)
    unread = GNNPathScorer(hidden=8, n_heads=2, base_scores=False, prior_half_life_days=90.0).state_dict()
    GNNPathScorer(hidden=8, n_heads=2, base_scores=False, prior_half_life_days=CHOSEN).load_state_dict(unread)


def test_a_predictor_checkpoint_without_the_key_is_a_ninety_day_one():
    saved = make_scorer("signet_predictor", prior_half_life_days=90.0).state_dict()
    saved["config"].pop("prior_half_life_days")
    make_scorer("signet_predictor", prior_half_life_days=90.0).load_state_dict(saved)
    refused = r"^checkpoint was built with other arguments: prior_half_life_days$"
    with pytest.raises(ValueError, match=refused):
        make_scorer("signet_predictor", prior_half_life_days=CHOSEN).load_state_dict(saved)
    # a predictor that reads no prior (Signet's 17 features, PPR baseline) loads it whatever its half-life
    unread = make_scorer("signet_predictor", base_scores=False, baseline="ppr", prior_half_life_days=90.0)
    other = make_scorer("signet_predictor", base_scores=False, baseline="ppr", prior_half_life_days=CHOSEN)
    other.load_state_dict(unread.state_dict())


def test_baseline_rows_take_their_options_and_a_stray_option_is_refused():
    from signet_rl.train import baseline_scorers

    cfg = OmegaConf.create(
        {"baselines": ["prior", "ppr"], "baseline_options": {"prior": {"half_life_days": 90.0}}}
    )
    built = baseline_scorers(cfg)
    assert list(built) == ["prior", "ppr"] and built["prior"].half_life_days == 90.0
    assert baseline_scorers(OmegaConf.create({"baselines": ["prior"]}))["prior"].half_life_days == CHOSEN
    bad = OmegaConf.create({"baselines": ["ppr"], "baseline_options": {"prior": {"half_life_days": 90.0}}})
    with pytest.raises(ValueError) as err:
        baseline_scorers(bad)
    assert str(err.value) == (
        "baseline_options has prior, which baselines (ppr) does not list: add it to baselines or drop its "
        "options"
    )
