"""The sweeper: asks Optuna for trials, runs them as launcher jobs, tells Optuna what they returned.

Resuming is the point of the persistent storage. The study holds every trial and its state; a rerun of the
same command (same ``storage`` and ``study_name``) loads it, marks the trials that were RUNNING when the
previous sweep died as FAIL and asks for them again with the same parameters (enqueued), then runs only as
many new trials as ``n_trials`` still lacks. A trial whose parameters equal a finished one's is told that
trial's value without running again (the task is deterministic for a seed). One sweep at a time may use a
study: a lock file beside an SQLite storage refuses a second one. Under ``SIGNET_RL_SMOKE=1`` (the project's
"same code path, in seconds" switch that the README test sets) a sweep runs at most
:data:`SMOKE_TRIALS` trials.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.signet_rl_optuna.space import SearchSpaceError, check_keys, describe, search_space

log = logging.getLogger(__name__)

DIRECTIONS = ("maximize", "minimize")
SMOKE_ENV = "SIGNET_RL_SMOKE"  # signet_rl.smoke.SMOKE_ENV; this plugin imports nothing of signet_rl
SMOKE_TRIALS = 2
SAMPLERS = ("tpe", "random")
_PLAIN = re.compile(r"^[\w.\-/:]+$")


def format_value(value: Any) -> str:
    """One trial value as Hydra override text (strings quoted unless plain)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def resolve_storage(storage: str | None, sweep_dir: str, cwd: str) -> str:
    """The storage URL: ``sqlite:///<sweep dir>/optuna.db`` for null; a relative SQLite path anchored at
    ``cwd`` (where the command started); any other URL as given."""
    if storage is None or not str(storage).strip():
        path = Path(sweep_dir)
        path = path if path.is_absolute() else Path(cwd) / path
        return f"sqlite:///{path.resolve() / 'optuna.db'}"
    storage = str(storage).strip()
    if storage.startswith("sqlite:///"):
        path = Path(storage[len("sqlite:///") :])
        return f"sqlite:///{(path if path.is_absolute() else Path(cwd) / path).resolve()}"
    return storage


class SignetOptunaSweeper(Sweeper):
    """A Hydra sweeper over an Optuna study in persistent storage (see the module docstring)."""

    def __init__(
        self,
        study_name: str,
        storage: str | None,
        direction: str,
        n_trials: int,
        n_jobs: int,
        sampler: str,
        seed: int,
        params: dict[str, Any] | None,
    ) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"signet_optuna: direction={direction!r}; use one of {list(DIRECTIONS)}")
        if sampler not in SAMPLERS:
            raise ValueError(f"signet_optuna: sampler={sampler!r}; use one of {list(SAMPLERS)}")
        for name, value in (("n_trials", n_trials), ("n_jobs", n_jobs)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"signet_optuna: {name}={value!r} must be a whole number of at least 1")
        if not re.match(r"^[\w.\-]+$", str(study_name)):
            raise ValueError(
                f"signet_optuna: study_name={study_name!r}; use letters, digits, '.', '-' and '_' only"
            )
        self.study_name = str(study_name)
        self.storage = storage
        self.direction = direction
        self.n_trials = n_trials
        self.n_jobs = n_jobs
        self.sampler = sampler
        self.seed = int(seed)
        self.params = params or {}
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Launcher | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    # ------------------------------------------------------------------------------------------------

    def sweep(self, arguments: list[str]) -> dict[str, Any]:
        """Run the study to ``n_trials`` completed trials; returns (and saves as ``optimization_results.yaml``
        in the sweep folder) the best value and parameters."""
        import optuna

        assert self.config is not None and self.launcher is not None and self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides(arguments)
        space = search_space(self.params, overrides)
        if not space:
            raise SearchSpaceError(
                "signet_optuna: nothing to search; give hydra.sweeper.params or a sweep override such as "
                "traversal.max_branching=range(2,9)"
            )
        check_keys(list(space), self.config)
        fixed = [
            f"{o.get_key_element()}={o.get_value_element_as_str()}"
            for o in overrides
            if not o.is_sweep_override()
        ]
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        cwd = str(OmegaConf.select(self.config, "hydra.runtime.cwd", default=None) or os.getcwd())
        url = resolve_storage(self.storage, str(sweep_dir), cwd)
        if url.startswith("sqlite:///"):
            Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with _study_lock(url, self.study_name):
            study = optuna.create_study(
                storage=url,
                study_name=self.study_name,
                load_if_exists=True,
                direction=optuna.study.StudyDirection.MAXIMIZE
                if self.direction == "maximize"
                else optuna.study.StudyDirection.MINIMIZE,
            )
            self._check_study(study, space, url)
            retried = self._recover(study)
            done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
            seed = self.seed + len(study.trials)  # a resumed sweep does not redraw the first trials
            study.sampler = (
                optuna.samplers.TPESampler(seed=seed)
                if self.sampler == "tpe"
                else optuna.samplers.RandomSampler(seed=seed)
            )
            log.info(
                f"signet_optuna: study {self.study_name!r} in {url}: {len(done)} of {self.n_trials} trials "
                f"done, {retried} interrupted trial(s) to rerun"
            )
            n_trials = min(self.n_trials, SMOKE_TRIALS) if os.environ.get(SMOKE_ENV) == "1" else self.n_trials
            while len(done) < n_trials:
                batch = self._ask(study, space, min(self.n_jobs, n_trials - len(done)))
                self._run(study, batch, fixed)
                done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
            best = study.best_trial
            result = {
                "name": "signet_optuna",
                "study_name": self.study_name,
                "storage": url,
                "direction": self.direction,
                "n_trials": len(done),
                "best_trial": best.number,
                "best_value": float(best.value),  # type: ignore[arg-type]
                "best_params": dict(best.params),
            }
        OmegaConf.save(OmegaConf.create(result), sweep_dir / "optimization_results.yaml")
        log.info(f"signet_optuna: best {result['best_value']:.4f} with {result['best_params']}")
        print(f"best value {result['best_value']:.4f} (trial {best.number}) with "
              f"{' '.join(f'{k}={format_value(v)}' for k, v in best.params.items())}; "
              f"study {self.study_name!r} in {url}")  # fmt: skip
        return result

    def _check_study(self, study: Any, space: dict[str, Any], url: str) -> None:
        """A resumed study must search the same space in the same direction."""
        wanted = describe(space)
        stored = study.user_attrs.get("search_space")
        if stored is None:
            study.set_user_attr("search_space", wanted)
            return
        if stored != wanted:
            changed = sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))
            raise SearchSpaceError(
                f"signet_optuna: study {self.study_name!r} in {url} searched a different space "
                f"({changed[0]}: {stored.get(changed[0])} before, {wanted.get(changed[0])} now); rerun with "
                "the same params to resume, or give a new hydra.sweeper.study_name"
            )
        if study.direction.name.lower() != self.direction:
            raise SearchSpaceError(
                f"signet_optuna: study {self.study_name!r} in {url} was created to "
                f"{study.direction.name.lower()}, not {self.direction}; give a new hydra.sweeper.study_name"
            )

    @staticmethod
    def _recover(study: Any) -> int:
        """Mark trials left RUNNING by a sweep that died as FAIL and enqueue their parameters again."""
        import optuna

        stale = [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
        for t in stale:
            study._storage.set_trial_user_attr(t._trial_id, "interrupted", True)
            study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)
            if t.params:
                study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
        return len(stale)

    @staticmethod
    def _ask(study: Any, space: dict[str, Any], n: int) -> list[Any]:
        return [study.ask(space) for _ in range(n)]

    def _run(self, study: Any, trials: Sequence[Any], fixed: list[str]) -> None:
        """Launch the trials that need running, tell every trial its value. A failed job fails its trial and
        then the sweep (after the whole batch is told), naming the trial."""
        import optuna

        assert self.launcher is not None
        finished = {_key(t.params): t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE}
        to_run = []
        for trial in trials:
            same = finished.get(_key(trial.params))
            if same is not None:  # the task is deterministic: the same parameters give the same value
                trial.set_user_attr("reused_trial", same.number)
                study.tell(trial, same.value)
                log.info(f"signet_optuna: trial {trial.number} repeats trial {same.number}; its value reused")
            else:
                to_run.append(trial)
        if not to_run:
            return
        unique: dict[str, Any] = {}  # two trials of one batch with the same parameters run once
        for trial in to_run:
            unique.setdefault(_key(trial.params), trial)
        launched = list(unique.values())
        jobs = [
            tuple(fixed) + tuple(f"{k}={format_value(v)}" for k, v in trial.params.items())
            for trial in launched
        ]
        self.validate_batch_is_legal(jobs)
        returns: Sequence[JobReturn] = self.launcher.launch(jobs, initial_job_idx=launched[0].number)
        by_key = dict(zip(unique, returns, strict=True))
        error: BaseException | None = None
        for trial in to_run:
            ret = by_key[_key(trial.params)]
            if trial is not unique[_key(trial.params)]:
                trial.set_user_attr("reused_trial", unique[_key(trial.params)].number)
            if ret.status == JobStatus.FAILED:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                error = error or ret._return_value
                continue
            value = ret.return_value
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                error = error or ValueError(
                    f"signet_optuna: trial {trial.number} ({_overrides(trial.params)}) returned "
                    f"{value!r}, not a finite number; the task must return its validation metric "
                    "(stop_after or a failed evaluation returns nan)"
                )
                continue
            study.tell(trial, float(value))
        if error is not None:
            raise error


def _overrides(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={format_value(v)}" for k, v in params.items())


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=repr)


class _study_lock:
    """An exclusive lock on ``<db>.<study>.lock`` beside an SQLite storage (no-op for other storages): two
    sweeps on one study would each rerun the other's running trials."""

    def __init__(self, url: str, study: str) -> None:
        self.path = Path(f"{url[len('sqlite:///') :]}.{study}.lock") if url.startswith("sqlite:///") else None
        self.fd: int | None = None

    def __enter__(self) -> _study_lock:
        if self.path is None:
            return self
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            raise RuntimeError(
                f"signet_optuna: another sweep is running this study (lock {self.path}); wait for it to end"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
