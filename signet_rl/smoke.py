"""``SIGNET_RL_SMOKE=1``: every long command of the README shrunk to seconds, to check that it runs.

The README test (``tests/test_readme.py``) runs each README command with this variable set. The entry points
then keep their code path and shrink only the work: ``python -m signet_rl.train`` and
``python -m signet_rl.evaluate`` take the ``tiny`` preset of a synthetic dataset, the first sessions of
each LoCoMo conversation (:data:`LOCOMO_SESSIONS`: a flat retriever with MiniLM would embed every turn and
observation, two minutes of a smoke run; ``python -m signet_rl.datasets describe locomo`` keeps them too), a
few interactions and test queries, a few bootstrap draws, no KGE
anchors and a one-second KG budget; the report scripts under
``experiments/`` shrink their runs the same way (their figures are not the committed ones, so they land in
``runs/scratch/``, never in ``docs/results.md``). Figures of a smoke run mean nothing.

This module imports nothing from the rest of ``signet_rl``.
"""

from __future__ import annotations

import os
import re

from omegaconf import DictConfig, open_dict

__all__ = ["SMOKE_ENV", "enabled", "shrink_evaluate", "shrink_train", "tiny_spec"]

SMOKE_ENV = "SIGNET_RL_SMOKE"

# The bandit task's knobs in a smoke run (conf/task/bandit.yaml).
BANDIT = {"max_interactions": 6, "eval_every": 0, "max_val_queries": 5, "max_test_queries": 8}
# The KG task's knobs in a smoke run (conf/task/kg.yaml): no anchors, one second of training, a narrow beam.
KG = {"time_budget_s": 1, "anchors": [], "shaping": "none", "init_from_anchor": None, "eval_queries": 20,
      "beam_width": 8, "eval_every": 10, "progress": False}  # fmt: skip


#: LoCoMo sessions kept per conversation in a smoke run (dataset option ``max_sessions``).
LOCOMO_SESSIONS = 2


def enabled() -> bool:
    """Whether ``SIGNET_RL_SMOKE`` is set to ``1``."""
    return os.environ.get(SMOKE_ENV) == "1"


def tiny_spec(spec: str) -> str:
    """A synthetic spec with its preset swapped for ``tiny`` (``synthetic:medium:1`` -> ``synthetic:tiny:1``);
    any other spec as given."""
    return re.sub(r"^synthetic:[^:]+", "synthetic:tiny", spec)


def _shrink_data(cfg: DictConfig) -> None:
    """The smoke run's dataset: the tiny preset of a synthetic spec, LoCoMo's first sessions."""
    cfg.dataset.spec = tiny_spec(str(cfg.dataset.spec))
    if str(cfg.dataset.spec).strip() == "locomo":
        if cfg.dataset.get("options") is None:
            cfg.dataset.options = {}
        cfg.dataset.options.max_sessions = LOCOMO_SESSIONS


def shrink_train(cfg: DictConfig) -> None:
    """Shrink a ``python -m signet_rl.train`` config in place (see the module docstring)."""
    with open_dict(cfg):
        _shrink_data(cfg)
        if str(cfg.task.get("name", "bandit")) == "kg":
            for key, value in KG.items():
                if key in cfg.task:
                    cfg.task[key] = value
            if "anchor" in cfg.task:
                cfg.task.anchor.time_budget_s = 1
            return
        for key, value in BANDIT.items():
            cfg.task[key] = value
        cfg.bootstrap = 10
        cfg.baselines = []
        cfg.ceiling = False
        cfg.progress = False


def shrink_evaluate(cfg: DictConfig) -> None:
    """Shrink a ``python -m signet_rl.evaluate`` config in place (see the module docstring)."""
    with open_dict(cfg):
        _shrink_data(cfg)
        cfg.max_queries = 20
        cfg.bootstrap = 10
