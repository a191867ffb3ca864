from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from signet_rl.learning.exploration import plackett_luce_inclusion
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.learning.ope import (
    LoggedBandit,
    OPEEstimate,
    doubly_robust,
    estimate_all,
    ips,
    logged_from_records,
    snips,
    target_policy,
)

# --------------------------------------------------------------------------------------------------
# A synthetic contextual bandit with a known answer


@pytest.fixture(scope="module")
def bandit() -> dict[str, Any]:
    """5,000 interactions of 8 candidates with known mean rewards μ ∈ [-1, 1]; ratings in {-1, 0, +1} with
    mean μ. A scorer believes s = 2μ + noise; the logging policy shows a Plackett-Luce (softmax) slate of 2
    at temperature 1, the target policy at temperature 0.2 (much greedier)."""
    rng = np.random.default_rng(2026)
    n, c, k = 5000, 8, 2
    mu = rng.uniform(-1, 1, (n, c))
    s = 2 * mu + rng.normal(0, 0.5, (n, c))
    logging, target = plackett_luce_inclusion(s, k), plackett_luce_inclusion(s / 0.2, k)
    shown = np.argsort(-(s + rng.gumbel(size=(n, c))), axis=1, kind="stable")[:, :k]  # Gumbel-top-k
    m = np.take_along_axis(mu, shown, axis=1)
    u = rng.random((n, k))
    ratings = np.where(u < np.maximum(m, 0), 1.0, np.where(u < np.abs(m), -1.0, 0.0))
    data = LoggedBandit(
        shown=shown,
        reward=ratings,
        pscore=np.take_along_axis(logging, shown, axis=1),
        target=target,
        reward_hat=mu,
    )
    return {
        "data": data,
        "true": float((target * mu).sum(axis=1).mean()),  # V(π) = mean_i Σ_a π(a|x_i) μ(x_i, a), exactly
        "logging_value": float((logging * mu).sum(axis=1).mean()),
        "estimates": estimate_all(data, n_boot=400, seed=0),
    }


def test_target_differs_from_logging(bandit):
    assert bandit["true"] - bandit["logging_value"] > 0.3  # so matching the target is not trivial
    assert bandit["data"].weights().max() > 2


@pytest.mark.parametrize("name", ["ips", "snips", "dr"])
def test_estimators_recover_the_true_value(bandit, name):
    est: OPEEstimate = bandit["estimates"][name]
    true = bandit["true"]
    assert est.n == 5000
    assert abs(est.value - true) < 0.05  # about 3.5 bootstrap standard errors
    assert est.ci_low - 0.01 <= true <= est.ci_high + 0.01
    assert est.ci_low < est.value < est.ci_high
    assert est.ci_high - est.ci_low < 0.1


def test_dr_with_a_correct_reward_model_is_tighter_than_ips(bandit):
    width = {name: e.ci_high - e.ci_low for name, e in bandit["estimates"].items()}
    assert width["dr"] < 0.9 * width["ips"]


def test_on_policy_ips_is_the_observed_mean():
    rng = np.random.default_rng(0)
    shown = np.array([[0, 2], [1, -1], [3, 0]])
    reward = rng.normal(size=(3, 2))
    pscore = np.array([[0.5, 0.25], [0.8, 1.0], [0.1, 0.9]])
    target = np.zeros((3, 4))
    np.put_along_axis(target, np.maximum(shown, 0), np.where(shown >= 0, pscore, 0.0), axis=1)
    target[1, 1] = 0.8
    data = LoggedBandit(shown=shown, reward=reward, pscore=pscore, target=target)
    observed = np.where(shown >= 0, reward, 0.0).sum(axis=1).mean()
    assert ips(data, n_boot=50).value == pytest.approx(observed)
    # SNIPS: Σw r / Σw scaled by the target's mean slate size.
    k_bar = target.sum(axis=1).mean()
    assert snips(data, n_boot=50).value == pytest.approx(k_bar * np.where(shown >= 0, reward, 0).sum() / 5)


def test_dr_hand_computed():
    data = LoggedBandit(
        shown=np.array([[1]]),
        reward=np.array([[1.0]]),
        pscore=np.array([[0.5]]),
        target=np.array([[0.25, 0.75]]),
        reward_hat=np.array([[0.2, 0.6]]),
    )
    # direct 0.25*0.2 + 0.75*0.6 = 0.5, correction 1.5 * (1 - 0.6) = 0.6
    est = doubly_robust(data, n_boot=20)
    assert est.value == pytest.approx(1.1)
    assert est.ci_low == est.ci_high == pytest.approx(1.1)  # one interaction: every resample is the same


def test_bootstrap_is_seeded(bandit):
    data = bandit["data"]
    assert ips(data, n_boot=50, seed=3) == ips(data, n_boot=50, seed=3)
    assert ips(data, n_boot=50, seed=3).ci_low != ips(data, n_boot=50, seed=4).ci_low


def test_metrics_are_prefixed(bandit):
    m = bandit["estimates"]["snips"].metrics("snips")
    assert set(m) == {"ope/snips", "ope/snips_ci_low", "ope/snips_ci_high"}


# --------------------------------------------------------------------------------------------------
# Nonsense in, a clear error out


def arrays(**over: Any) -> dict[str, Any]:
    base = {
        "shown": np.array([[0, 1], [2, -1]]),
        "reward": np.array([[1.0, 0.0], [-1.0, 0.0]]),
        "pscore": np.array([[0.5, 0.5], [0.9, 1.0]]),
        "target": np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]),
    }
    return {**base, **over}


def test_zero_propensity_for_a_shown_item_is_rejected():
    with pytest.raises(ValueError) as err:
        LoggedBandit(**arrays(pscore=np.array([[0.5, 0.0], [0.9, 1.0]])))
    assert str(err.value) == (
        "LoggedBandit: pscore[0, 1] = 0.0 for a shown item; logging propensities must be in (0, 1]"
    )


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"pscore": np.array([[0.5, 1.5], [0.9, 1.0]])}, "LoggedBandit: pscore[0, 1] = 1.5 for a shown item"),
        (
            {"pscore": np.array([[0.5, 0.5], [np.nan, 1.0]])},
            "LoggedBandit: pscore[1, 0] = nan for a shown item",
        ),
        (
            {"reward": np.array([[1.0, np.inf], [0.0, 0.0]])},
            "LoggedBandit: reward[0, 1] = inf for a shown item",
        ),
        (
            {"target": np.array([[0.5, 0.5, 0.0], [0.0, -0.1, 1.0]])},
            "LoggedBandit: target[1, 1] = -0.1 is outside [0, 1]",
        ),
        (
            {"shown": np.array([[0, 3], [2, -1]])},
            "LoggedBandit: shown[0, 1] = 3 is not a candidate index in [-1, 3)",
        ),
        ({"shown": np.array([[1, 1], [2, -1]])}, "LoggedBandit: shown[0] repeats a candidate: [1, 1]"),
        ({"reward": np.zeros((2, 3))}, "LoggedBandit: reward has shape (2, 3), expected (2, 2)"),
        ({"target": np.zeros((3, 3))}, "LoggedBandit: target has shape (3, 3), expected (2, C)"),
        ({"shown": np.array([0, 1])}, "LoggedBandit: shown must have shape [n, K], got (2,)"),
        ({"reward_hat": np.zeros((2, 2))}, "LoggedBandit: reward_hat has shape (2, 2), expected (2, 3)"),
    ],
)
def test_bad_arrays_are_named(over, message):
    with pytest.raises(ValueError) as err:
        LoggedBandit(**arrays(**over))
    assert str(err.value).startswith(message)


def test_padding_is_ignored_and_estimator_arguments_checked():
    data = LoggedBandit(
        **arrays(pscore=np.array([[0.5, 0.5], [0.9, 0.0]]), reward=np.array([[1, 0], [0, np.nan]]))
    )
    assert ips(data, n_boot=10).value == pytest.approx((1.0 + 0.0) / 2)
    with pytest.raises(ValueError, match=re.escape("doubly_robust needs LoggedBandit.reward_hat")):
        doubly_robust(data)
    with pytest.raises(ValueError, match="n_boot must be an integer >= 1, got 0"):
        ips(data, n_boot=0)
    with pytest.raises(ValueError, match=re.escape("alpha must be a number in (0, 1), got 1.5")):
        snips(data, alpha=1.5)
    assert set(estimate_all(data, n_boot=5)) == {"ips", "snips"}


# --------------------------------------------------------------------------------------------------
# From feedback records


def rec(
    step: int, scores: list[float], shown: list[int], pscores: list[float], ratings: list[Any]
) -> FeedbackRecord:
    n = len(shown)
    return FeedbackRecord(
        run_id="r",
        step=step,
        query_id=f"q{step}",
        timestamp=pd.Timestamp("2026-01-01", tz="UTC"),
        session="s",
        intent="what",
        context={"entries": [], "graph_id": "g"},
        candidates=[f"E:c{j}" for j in range(len(scores))],
        candidate_scores=scores,
        shown=shown,
        positions=list(range(n)),
        pscores=pscores,
        ratings=ratings,
        explorer=[False] * n,
        policy_version="v0",
    )


def test_logged_from_records_pads_and_evaluates():
    records = [
        rec(0, [0.9, 0.1, 0.5], [0, 2], [0.8, 0.5], [1, None]),
        rec(1, [0.2, 0.7], [1], [0.6], [-1]),
    ]
    target = target_policy(lambda r: r.candidate_scores, k=1, strategy="greedy")
    data = logged_from_records(records, target, reward_model=lambda r: np.full(len(r.candidates), 0.5))
    assert data.shown.tolist() == [[0, 2], [1, -1]]
    assert data.reward.tolist() == [[1.0, 0.0], [-1.0, 0.0]]  # unrated -> 0
    assert data.target.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    # Greedy target: interaction 0 keeps item 0 (w = 1/0.8), interaction 1 keeps item 1 (w = 1/0.6).
    assert ips(data, n_boot=10).value == pytest.approx((1 / 0.8 - 1 / 0.6) / 2)
    assert doubly_robust(data, n_boot=10).value == pytest.approx((0.5 + 0.5 / 0.8 + 0.5 + (-1.5) / 0.6) / 2)
    assert logged_from_records(records, target, unrated=-1.0).reward[0, 1] == -1.0
    with pytest.raises(
        ValueError, match="record run='r' step=1 query='q1': target gave shape \\(3,\\), expected"
    ):
        logged_from_records(records, lambda r: np.zeros(3))
