"""Shared fixtures of the emergence tests that drive the bandit trainer on ``synthetic:tiny:0``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from signet_rl.datasets import load_dataset
from signet_rl.datasets.base import Dataset
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.scorers import make_scorer


@pytest.fixture(scope="module")
def tiny() -> Dataset:
    return load_dataset("synthetic:tiny:0")


@pytest.fixture
def prior_trainer() -> Callable[..., BanditTrainer]:
    """A quiet prior-scorer trainer on a dataset, with a short walk, seed 3 and the given ``BanditConfig``
    fields (no evaluation, no checkpoints)."""

    def make(ds: Dataset, **config: Any) -> BanditTrainer:
        cfg = BanditConfig(epochs=1, eval_every=0, checkpoint_every=0, **config)
        scorer = make_scorer("prior")
        return BanditTrainer(ds, scorer, cfg, traversal={"max_depth": 2}, seed=3, progress=False)

    return make
