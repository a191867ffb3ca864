"""The sweeper's config schema, registered as ``hydra/sweeper=signet_optuna`` (Hydra imports every module
under ``hydra_plugins`` when it starts, which runs the registration below). No ``from __future__ import
annotations`` here: Hydra executes plugin modules outside ``sys.modules``, where a dataclass cannot resolve
string annotations."""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional  # noqa: UP035 - OmegaConf reads these annotations

from hydra.core.config_store import ConfigStore


@dataclass
class SignetOptunaConf:
    """``hydra.sweeper.*`` for ``hydra/sweeper=signet_optuna``.

    Attributes:
        study_name: the Optuna study (one per storage); resuming needs the same name.
        storage: an SQLAlchemy URL; a relative ``sqlite:///`` path is anchored where the command started.
            null: ``sqlite:///<hydra.sweep.dir>/optuna.db``.
        direction: ``maximize`` (validation metrics) or ``minimize``.
        n_trials: completed trials the study should hold; a resumed sweep runs only the rest.
        n_jobs: trials launched together (one launcher batch; the joblib and ray launchers run them in
            parallel).
        sampler: ``tpe`` or ``random``.
        seed: seeds the sampler (offset by the trials already in the study, so a resumed sweep does not
            draw the first trials' parameters again).
        params: ``key -> search range`` (see :mod:`hydra_plugins.signet_rl_optuna.space`).
    """

    _target_: str = "hydra_plugins.signet_rl_optuna.sweeper.SignetOptunaSweeper"
    study_name: str = "signet_rl"
    storage: Optional[str] = None  # noqa: UP045
    direction: str = "maximize"
    n_trials: int = 16
    n_jobs: int = 1
    sampler: str = "tpe"
    seed: int = 0
    params: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006


ConfigStore.instance().store(
    group="hydra/sweeper", name="signet_optuna", node=SignetOptunaConf, provider="signet_rl"
)
