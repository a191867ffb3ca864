"""The equal-tuning sweep recipes (``conf/experiment/learning/sweep/``): each composes with
``hydra/sweeper=signet_optuna``, searches keys the config has over ranges that are not empty, on synthetic v2
medium validation, and every scorer gets the same number of trials (at least 16) on the one shared traversal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hydra_plugins.signet_rl_optuna.space import check_keys, search_space

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "conf" / "experiment" / "learning" / "sweep"
# included by the recipes, not recipes of their own
SHARED = {"base", "traversal_best", "exploration_best-gnn", "exploration_best-linucb",
          "exploration_best-signet_predictor"}  # fmt: skip
RECIPES = sorted(p.stem for p in SWEEPS.glob("*.yaml") if p.stem not in SHARED)
SCORERS = {
    "traversal": "prior", "gnn": "gnn", "linucb": "linucb", "prior": "prior", "ppr": "ppr", "fused": "fused",
    "signet_predictor": "signet_predictor", "signet_predictor-base": "signet_predictor",
    "exploration-gnn": "gnn", "exploration-linucb": "linucb",
    "exploration-signet_predictor": "signet_predictor",
    "exploration-linucb-thompson": "linucb",
}  # fmt: skip
#: The calibrated-exploration studies (issue 25 §1): the task's exploration, one study per learned scorer.
EXPLORATION = ("exploration-gnn", "exploration-linucb", "exploration-signet_predictor")


def _compose(recipe: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=[f"+experiment=learning/sweep/{recipe}"], return_hydra_config=True)


def test_there_is_a_traversal_sweep_and_one_per_scorer():
    assert sorted(SCORERS) == RECIPES


@pytest.mark.parametrize("recipe", RECIPES)
def test_each_sweep_recipe_composes_to_a_valid_search(recipe):
    cfg = _compose(recipe)
    assert cfg.test_table is False  # a trial never evaluates, prints or logs a test figure
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_ == "hydra_plugins.signet_rl_optuna.sweeper.SignetOptunaSweeper"
    assert (
        sweeper.study_name == f"learning-{recipe}" and sweeper.storage == "sqlite:///data/sweeps/learning.db"
    )
    assert sweeper.n_trials == 16 and sweeper.direction == "maximize"
    assert cfg.hydra.sweep.dir == f"multirun/sweeps/learning-{recipe}"
    assert cfg.scorer.name == SCORERS[recipe]
    assert cfg.dataset.spec == "synthetic:medium:0" and cfg.dataset.options.version == 2
    assert cfg.optimized_metric.startswith("val/") and cfg.task.budget_chars == 400
    space = search_space(OmegaConf.to_container(sweeper.params), [])
    check_keys(list(space), cfg)  # raises on a key the config lacks
    expected = {"traversal": "traversal.", **dict.fromkeys(EXPLORATION, "task.")}.get(recipe, "scorer.")
    assert space and all(k.startswith(expected) for k in space)


def test_every_learned_scorer_gets_the_same_exploration_search():
    """The same keys, ranges and trial count for the GNN, LinUCB and Signet's predictor; the predictor's
    strategies lack only thompson, which it cannot run (no sample_scores)."""
    spaces = {}
    for recipe in EXPLORATION:
        sweeper = _compose(recipe).hydra.sweeper
        assert sweeper.n_trials == 16
        spaces[recipe] = search_space(OmegaConf.to_container(sweeper.params), [])
    gnn, linucb, predictor = (spaces[r] for r in EXPLORATION)
    assert gnn == linucb and set(predictor) == set(gnn) == {
        "task.exploration",
        "task.epsilon",
        "task.temperature",
    }
    assert gnn["task.exploration"].choices == ("epsilon", "softmax", "thompson")
    assert predictor["task.exploration"].choices == ("epsilon", "softmax")
    assert (
        predictor["task.epsilon"] == gnn["task.epsilon"]
        and predictor["task.temperature"] == gnn["task.temperature"]
    )
    assert (gnn["task.epsilon"].low, gnn["task.epsilon"].high, gnn["task.epsilon"].log) == (0.01, 0.3, True)


def test_every_scorer_sweep_shares_the_one_traversal():
    shared = OmegaConf.load(SWEEPS / "traversal_best.yaml").traversal
    for recipe in RECIPES:
        if recipe == "traversal":
            continue
        traversal = _compose(recipe).traversal
        assert {k: traversal[k] for k in shared} == dict(shared), recipe


def test_each_scorers_tuned_exploration_sets_the_strategy_and_only_the_parameter_it_reads():
    """``sweep/exploration_best-<scorer>.yaml`` (written from the study's best trial by
    ``experiments/equal_tuning.py --exploration-best``): a strategy the scorer can run and its one parameter,
    inside the searched range; the task's shared default stays epsilon 0.1 for every run not rerun."""
    reads = {"epsilon": {"epsilon"}, "softmax": {"temperature"}, "thompson": set()}
    for recipe in EXPLORATION:
        scorer = recipe.removeprefix("exploration-")
        task = OmegaConf.to_container(OmegaConf.load(SWEEPS / f"exploration_best-{scorer}.yaml"))["task"]
        space = search_space(OmegaConf.to_container(_compose(recipe).hydra.sweeper.params), [])
        assert task["exploration"] in space["task.exploration"].choices, scorer
        assert set(task) == {"exploration"} | reads[task["exploration"]], scorer
        for key in set(task) - {"exploration"}:
            dist = space[f"task.{key}"]
            assert dist.low <= task[key] <= dist.high, (scorer, key)
    bandit = OmegaConf.load(ROOT / "conf" / "task" / "bandit.yaml")
    assert (bandit.exploration, bandit.epsilon) == ("epsilon", 0.1)


def test_the_predictor_studies_differ_only_in_the_base_scores():
    """sweep/signet_predictor reruns session 4's study of Signet's 17-feature network (base_scores pinned
    false, whatever the scorer's default); sweep/signet_predictor-base searches the same space, on the same
    base, traversal and exploration, for the network with the 3 base scores as inputs."""
    old, new = _compose("signet_predictor"), _compose("signet_predictor-base")
    assert old.scorer.base_scores is False and new.scorer.base_scores is True
    assert old.hydra.sweeper.params == new.hydra.sweeper.params
    assert (old.task.exploration, old.task.epsilon) == ("epsilon", 0.1)
    strip = ("hydra", "scorer")
    assert {k: v for k, v in old.items() if k not in strip} == {
        k: v for k, v in new.items() if k not in strip
    }
    assert {k: v for k, v in old.scorer.items() if k != "base_scores"} == {
        k: v for k, v in new.scorer.items() if k != "base_scores"
    }


def test_linucbs_thompson_study_searches_only_sigma_under_thompson_as_its_exploration_study_ran():
    """LinUCB's sigma is read only by Thompson draws: its study runs thompson and searches sigma alone, on the
    same base, traversal, prior and trial count as LinUCB's exploration study it is compared with."""
    cfg, explored = _compose("exploration-linucb-thompson"), _compose("exploration-linucb")
    space = search_space(OmegaConf.to_container(cfg.hydra.sweeper.params), [])
    sigma = space["scorer.sigma"]
    assert list(space) == ["scorer.sigma"] and (sigma.low, sigma.high, sigma.log) == (0.01, 4.0, True)
    assert cfg.task.exploration == "thompson"
    assert cfg.hydra.sweeper.n_trials == explored.hydra.sweeper.n_trials
    assert cfg.traversal == explored.traversal and explored.scorer.sigma == 0.5  # as its thompson trials ran
    assert {k: v for k, v in cfg.scorer.items() if k != "sigma"} == {
        k: v for k, v in explored.scorer.items() if k != "sigma"
    }
