"""``experiments/equal_tuning.py`` on real Optuna studies in a temporary SQLite file: the calibrated
exploration it writes from a study's best trial, and the default trial it enqueues (once only)."""

from __future__ import annotations

import optuna
import pytest
from experiment_script import load_experiment
from omegaconf import OmegaConf

equal_tuning = load_experiment("equal_tuning")

SPACE = {
    "task.exploration": optuna.distributions.CategoricalDistribution(["epsilon", "softmax", "thompson"]),
    "task.epsilon": optuna.distributions.FloatDistribution(0.01, 0.3, log=True),
    "task.temperature": optuna.distributions.FloatDistribution(0.05, 2.0, log=True),
}


def _study(storage, recipe, trials):
    """``learning-<recipe>`` in ``storage`` holding ``trials``: (exploration, epsilon, temperature, value)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=f"learning-{recipe}", storage=f"sqlite:///{storage}",
                                direction="maximize")  # fmt: skip
    for exploration, epsilon, temperature, value in trials:
        params = {"task.exploration": exploration, "task.epsilon": epsilon, "task.temperature": temperature}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=value))
    return study


@pytest.mark.parametrize(
    ("best", "written"),
    [
        (("softmax", 0.2, 0.07, 0.30), {"exploration": "softmax", "temperature": 0.07}),
        (("epsilon", 0.142, 1.5, 0.30), {"exploration": "epsilon", "epsilon": 0.142}),
        (("thompson", 0.2, 0.07, 0.30), {"exploration": "thompson"}),
    ],
)
def test_write_exploration_best_writes_the_best_trials_strategy_and_only_the_parameter_it_reads(
    tmp_path, best, written
):
    storage = tmp_path / "learning.db"
    _study(storage, "exploration-gnn", [("epsilon", 0.1, 0.5, 0.28), best, ("softmax", 0.05, 0.3, 0.25)])
    assert equal_tuning.write_exploration_best("exploration-gnn", storage, tmp_path) == written
    path = tmp_path / "exploration_best-gnn.yaml"
    assert OmegaConf.to_container(OmegaConf.load(path)) == {"task": written}
    text = path.read_text()
    assert text.startswith("# @package _global_\n")
    assert "(study learning-exploration-gnn, 3 completed trials: trial 1, validation nDCG@10 0.3000)" in text


def test_enqueue_defaults_enqueues_the_recipes_own_values_once(tmp_path):
    storage = tmp_path / "learning.db"
    _study(storage, "exploration-linucb", [("thompson", 0.2, 0.07, 0.27), ("softmax", 0.05, 0.3, 0.25)])
    params = equal_tuning.enqueue_defaults("exploration-linucb", storage)
    # conf/task/bandit.yaml's epsilon 0.1, the values the study's draws replace
    assert params == {"task.epsilon": 0.1, "task.exploration": "epsilon", "task.temperature": 0.5}
    study = equal_tuning.load("exploration-linucb", storage)
    waiting = [t for t in study.trials if t.state == optuna.trial.TrialState.WAITING]
    # a waiting trial holds its enqueued values as fixed parameters until it runs
    assert [(t.number, t.system_attrs["fixed_params"], t.user_attrs) for t in waiting] == [
        (2, params, {"defaults": True})
    ]
    with pytest.raises(SystemExit, match=r"^learning-exploration-linucb already holds its default trial "
                       r"\(trial 2, waiting\); not enqueued again$"):  # fmt: skip
        equal_tuning.enqueue_defaults("exploration-linucb", storage)
    assert len(equal_tuning.load("exploration-linucb", storage).trials) == 3


def test_a_missing_study_is_named(tmp_path):
    storage = tmp_path / "learning.db"
    _study(storage, "exploration-gnn", [("epsilon", 0.1, 0.5, 0.28)])
    with pytest.raises(SystemExit, match=r"no study learning-exploration-linucb in .*learning\.db "
                       r"\(have \['learning-exploration-gnn'\]\)"):  # fmt: skip
        equal_tuning.enqueue_defaults("exploration-linucb", storage)
