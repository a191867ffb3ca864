"""``python -m signet_rl.train``: learn desire paths from ratings, evaluate against flat retrieval, log it.

A thin ``@hydra.main`` over :func:`train`, which returns the metric a sweeper optimises (a validation
metric, ``cfg.optimized_metric``; never a test one). ``task=bandit`` (the default) runs the bandit loop of
:mod:`signet_rl.learning.trainer` for the scorer ``scorer=<gnn|linucb|...>`` on ``dataset=<...>``;
``task=kg`` runs knowledge-graph path reasoning (:func:`signet_rl.tasks.kg.train_kg`).

    python -m signet_rl.train                                   # GNN scorer on synthetic:small
    python -m signet_rl.train scorer=linucb dataset=locomo
    python -m signet_rl.train -m traversal.max_branching=2,4,8 traversal.max_depth=2,3
    python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:kinship dataset.path_length=2

A run keeps its checkpoint in ``run_dir``. By default that is ``runs/<task>/<scorer>-<dataset spec>-<hash>``,
the hash a short one of the sorted command-line overrides that change results (:func:`run_dir`), so the same
command finds its folder again however many overrides it has; the overrides are saved in the folder's run
marker. Rerunning a killed or interrupted command resumes where its last checkpoint stopped, and the
resumed run ends with the same metrics as an uninterrupted one, bit for bit. The folder is locked while a
run trains in it, and rerunning it with a different value of anything that changes results (seed, scorer
and its hyperparameters, dataset, traversal, task) is refused, naming the key and both values
(:mod:`signet_rl.core.run_folder`). ``fresh=true`` starts over, deleting only the previous run's own files,
and only in a folder holding a run marker. Ctrl-C checkpoints after the current interaction and prints the
command that resumes (exit status 130).

The bandit run logs to MLflow: the flattened config; over interactions the running mean rating, cumulative
regret against the oracle slate, explorer share and hit rate, validation recall / precision / F1 / nDCG (per
intent) and latency; at the end the test comparison at the same budget (``test/<retriever>/<metric>``)
against ``best_flat`` (frozen per dataset family in ``conf/best_flat.yaml``; also ``baseline_flat/<metric>``),
``flat_signet_uncapped``, the non-learned scorers and the candidate ceiling, with ``flat_signet`` under its
own caps beside them (unpaired), off-policy estimates of the final policy
(``ope/<ips|snips|dr>``), and artifacts: the config, the checkpoint, the saved policy, the learning curve
(CSV and PNG), the comparison table and the feedback log (Parquet).
"""

from __future__ import annotations

import json
import math
import random
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from signet_rl import smoke
from signet_rl.core.logs import quiet_libraries
from signet_rl.core.run_folder import RunFolder, run_name
from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import EvaluationResult, evaluate, validation_callback
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.learning.trainer import (
    CHECKPOINT,
    RUN_FILES,
    BanditConfig,
    BanditTrainer,
    learning_curve_png,
)
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import best_flat, flat_variant
from signet_rl.scorers import make_scorer
from signet_rl.tracking import project_root
from signet_rl.traversal.config import TraversalConfig

__all__ = [
    "RESULTS_NEUTRAL",
    "TrainingInterrupted",
    "build_scorer",
    "fingerprint",
    "main",
    "resume_command",
    "run_dir",
    "train",
    "train_bandit",
    "traversal_config",
]

#: Config keys (and key prefixes, ending in ``.``) that do not change a run's results: left out of the
#: fingerprint a run folder is checked against, and of the hash that names it.
RESULTS_NEUTRAL = (
    "fresh", "stop_after", "progress", "run_dir", "threads", "mlflow.", "hydra.", "dataset.data_root",
    "verbose",
)  # fmt: skip


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training; ``str()`` says where the checkpoint is and the command that resumes."""


TEST_METRICS = ("needed_recall", "precision", "f1", "ndcg@10", "mrr", "tokens", "zero_injection")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)  # libraries that still read the global stream
    torch.manual_seed(seed)


#: The hybrid entry's pieces when ``hybrid: true`` meets a dataset's ``hybrid:`` block (under that block,
#: the dataset's ``traversal`` block and the ``traversal.*`` overrides): the floor, session steps and entity
#: walks; the intent's graph walk adds no evidence on LoCoMo's extracted graphs (its candidate ceiling equals
#: the walks', docs/results.md) and lowers MuSiQue's.
HYBRID_PIECES: dict[str, bool] = {"floor": True, "session": True, "entity_walks": True, "graph_walk": False}

#: Learned scorers that take ``floor_prior`` (a residual over the hybrid entry's floor).
RESIDUAL_SCORERS = frozenset({"linucb", "gnn"})


def traversal_config(cfg: DictConfig) -> dict[str, Any]:
    """The dataset's ``traversal`` block with the non-null ``traversal.*`` overrides on top; with
    ``hybrid: true`` and a dataset ``hybrid:`` block, :data:`HYBRID_PIECES` and that block's bounds under
    both."""

    def plain(node: Any) -> Any:
        return OmegaConf.to_container(node, resolve=True) if node is not None else {}

    base = plain(cfg.dataset.get("traversal"))
    over = plain(cfg.get("traversal"))
    assert isinstance(base, dict) and isinstance(over, dict)
    out: dict[str, Any] = {}
    hybrid = cfg.dataset.get("hybrid")
    if bool(cfg.get("hybrid", False)) and hybrid is not None:
        out.update(HYBRID_PIECES)
        out.update(plain(hybrid))
    out.update(base)
    out.update({k: v for k, v in over.items() if v is not None})
    return out


def build_scorer(cfg: DictConfig, traversal: dict[str, Any] | None = None) -> Any:
    """The scorer ``cfg.scorer`` names (``name`` plus its constructor arguments). With the floor among the
    candidates (``traversal["floor"]``), a learned scorer of :data:`RESIDUAL_SCORERS` gets ``floor_prior`` =
    ``cfg.floor_prior`` unless ``cfg.scorer`` sets a non-zero one (its yaml's 0.0, the constructor's default,
    defers to the top-level key; ``floor_prior=0`` turns the residual off)."""
    plain = OmegaConf.to_container(cfg.scorer, resolve=True)
    node = {str(k): v for k, v in dict(plain).items()}  # type: ignore[arg-type]
    name = node.pop("name")
    if (traversal or {}).get("floor") and name in RESIDUAL_SCORERS and not node.get("floor_prior"):
        node["floor_prior"] = float(cfg.get("floor_prior", 0.0) or 0.0)
    return make_scorer(str(name), **node)


def baseline_scorers(cfg: DictConfig) -> dict[str, Any]:
    """The scorers of the non-learned rows ``cfg.baselines`` names, each built with its constructor arguments
    under ``cfg.baseline_options`` (its defaults when it has none there).

    Raises:
        ValueError: options for a scorer that is not among the baselines (naming it), or a bad argument (the
            scorer's own message).
    """
    names = [str(n) for n in cfg.get("baselines") or []]
    node = cfg.get("baseline_options")
    options = OmegaConf.to_container(node, resolve=True) if node is not None else {}
    if not isinstance(options, dict):
        raise ValueError(f"baseline_options must map a baseline's name to its arguments, got {options!r}")
    stray = sorted(str(k) for k in options if k not in names)
    if stray:
        raise ValueError(
            f"baseline_options has {', '.join(stray)}, which baselines "
            f"({', '.join(names) or 'empty'}) does not list: add it to baselines or drop its options"
        )
    return {name: make_scorer(name, **dict(options.get(name) or {})) for name in names}


def _neutral(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in RESULTS_NEUTRAL)


def fingerprint(cfg: DictConfig) -> dict[str, Any]:
    """Every config value that changes results, flattened to ``dotted.key -> value`` (resolved): the whole
    config but :data:`RESULTS_NEUTRAL`. A run folder refuses a command whose fingerprint differs."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(plain, dict)
    for key in [k for k in plain if _neutral(str(k))]:
        plain.pop(key)  # never resolved: run_dir may hold ${hydra:...}, which needs a Hydra app
    resolved = OmegaConf.to_container(OmegaConf.create(plain), resolve=True)
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(v, f"{prefix}{k}.")
        else:
            key = prefix[:-1]
            if not _neutral(key):
                out[key] = node

    walk(resolved, "")
    return dict(sorted(out.items()))


def _hydra_overrides() -> list[str] | None:
    """The command line's overrides under ``@hydra.main`` (None outside a Hydra app)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return None
        return [str(o) for o in HydraConfig.get().overrides.task]
    except (ImportError, ValueError):
        return None


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def run_dir(cfg: DictConfig) -> Path:
    """The run folder of ``cfg``: ``cfg.run_dir`` when set (relative to where the command started), else
    ``runs/<task>/<scorer>-<dataset spec>-<hash>`` (no scorer part for ``task=kg``), the hash over the sorted
    command-line overrides that change results (every override but :data:`RESULTS_NEUTRAL`; outside a Hydra
    app, over the :func:`fingerprint`). Short whatever the overrides, and the same for the same command."""
    given = cfg.get("run_dir")
    if given not in (None, ""):
        path = Path(str(given))
        return path if path.is_absolute() else project_root() / path
    task = str(cfg.task.get("name", "bandit"))
    overrides = _hydra_overrides()
    if overrides is None:
        items = [f"{k}={json.dumps(v, sort_keys=True, default=str)}" for k, v in fingerprint(cfg).items()]
    else:
        items = [o.lstrip("+") if not o.startswith("~") else o for o in overrides]
        items = [o for o in items if not _neutral(_override_key(o))]
    prefix = [] if task == "kg" else [str(cfg.scorer.get("name", ""))]
    prefix.append(str(cfg.dataset.get("spec", "")))
    return project_root() / "runs" / task / run_name(prefix, items)


def resume_command(cfg: DictConfig, folder: Path) -> str:
    """The command that resumes this run: the same overrides less ``fresh`` and ``stop_after`` (outside a
    Hydra app: ``run_dir`` pointed at ``folder``)."""
    overrides = _hydra_overrides()
    if overrides is None:
        overrides = [f"run_dir={folder}"]
    kept = [o for o in overrides if _override_key(o) not in ("fresh", "stop_after")]
    return " ".join(["python -m signet_rl.train", *(shlex.quote(o) for o in kept)])


def check_seed(cfg: DictConfig) -> int:
    """``cfg.seed`` as an int in [0, 2**32); else a ValueError naming it and the dataset spec."""
    seed = cfg.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        spec = cfg.dataset.get("spec") if cfg.get("dataset") is not None else None
        raise ValueError(f"seed={seed!r} (dataset {spec}) is not an integer in [0, 2**32); pass e.g. seed=0")
    return seed


def train(cfg: DictConfig) -> float:
    """Train, evaluate and log the run ``cfg`` describes; returns ``cfg.optimized_metric`` (validation).

    Raises:
        TrainingInterrupted: Ctrl-C (the bandit task checkpoints first; the message says how to resume).
    """
    quiet_libraries(bool(cfg.get("verbose", False)))  # library chatter (bm25s, faiss, MLflow) unless verbose
    if smoke.enabled():  # SIGNET_RL_SMOKE=1: the same code path in seconds (signet_rl.smoke)
        smoke.shrink_train(cfg)
    if str(cfg.task.get("name", "bandit")) == "kg":
        from signet_rl.tasks.kg import train_kg

        cfg = cfg.copy()
        with open_dict(cfg):
            cfg.run_dir = str(run_dir(cfg))  # the task reads a concrete folder
        return float(train_kg(cfg))
    return train_bandit(cfg)


class _StopOnSigint:
    """While active (main thread only), the first Ctrl-C asks the loop to stop after the current interaction
    and checkpoint; a second one raises :class:`KeyboardInterrupt` at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> _StopOnSigint:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print("\nCtrl-C: checkpointing after this interaction (press Ctrl-C again to stop at once)",
              file=sys.stderr, flush=True)  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def train_bandit(cfg: DictConfig) -> float:
    """The bandit loop (see :mod:`signet_rl.learning.trainer`) with evaluation, MLflow and artifacts.

    Every config error is raised before the dataset loads or the run folder is touched."""
    t0 = time.perf_counter()
    seed = check_seed(cfg)
    traversal = traversal_config(cfg)
    TraversalConfig.from_dict(traversal)  # validates
    task = {str(k): v for k, v in dict(OmegaConf.to_container(cfg.task, resolve=True)).items()}  # type: ignore[arg-type]
    task.pop("name", None)
    config = BanditConfig.from_dict(task)
    regulator = explorer_regulator(config)
    seed_everything(seed)
    scorer = build_scorer(cfg, traversal)
    baseline_scorers(cfg)  # a bad baseline option fails now, not after training
    seed_everything(seed)  # the dataset loads from a freshly seeded state, as it always has
    torch.set_num_threads(int(cfg.get("threads") or torch.get_num_threads()))
    out = run_dir(cfg)
    folder = RunFolder.open(
        out, fingerprint(cfg), RUN_FILES, fresh=bool(cfg.get("fresh")),
        overrides=_hydra_overrides() or [], command=resume_command(cfg, out),
    )  # fmt: skip
    try:
        return _train_bandit(cfg, t0, seed, traversal, config, scorer, folder, regulator)
    except TrainingInterrupted:
        raise
    except KeyboardInterrupt:  # while the dataset loads, or during the final evaluation
        there = "the last checkpoint" if (out / CHECKPOINT).exists() else "the start (no checkpoint yet)"
        raise TrainingInterrupted(
            f"interrupted; rerunning resumes from {there} in {out}:\n  {resume_command(cfg, out)}"
        ) from None
    finally:
        folder.close()


def explorer_regulator(config: BanditConfig) -> Any:
    """``task.explorer_regulation``: the staleness regulator that sets each session's explorer slots
    (:func:`signet_rl.emergence.staleness.regulated_slots` with ``task.regulator``; its base quota
    ``min_slots`` is ``task.explorer_per_session`` unless ``task.regulator`` sets it), else None.

    Raises:
        ValueError: a ``task.regulator`` setting the regulator refuses (before any data loads).
    """
    if not config.explorer_regulation:
        return None
    from signet_rl.emergence.staleness import regulated_slots

    return regulated_slots(**{"min_slots": config.explorer_per_session, **(config.regulator or {})})


def _train_bandit(
    cfg: DictConfig,
    t0: float,
    seed: int,
    traversal: dict[str, Any],
    config: BanditConfig,
    scorer: Any,
    folder: RunFolder,
    regulator: Any = None,
) -> float:
    out = folder.path
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    dataset = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.get("learning_split")
    if split is not None:  # datasets that ship every query as test: learn on some folds, test on another
        fold = split.get("fold", 0)
        dataset = dataset.learning_split(
            k=int(split.k),
            fold="all" if str(fold) == "all" else int(fold),  # all: every query trains (no val, no test)
            seed=int(split.get("seed", 0)),
            group=split.get("group"),
        )
    if not dataset.queries:
        raise ValueError(f"dataset {dataset.name!r} has no queries; the bandit loop needs rated queries")

    tracker = None
    mlcfg = cfg.get("mlflow") or {}
    if mlcfg.get("enabled", False):
        from signet_rl.tracking import TrainingRun, sweep_job

        id_file = out / "mlflow_run_id"
        resume_id = id_file.read_text().strip() if id_file.exists() and (out / CHECKPOINT).exists() else None
        job = sweep_job()  # a sweep's jobs are named by the overrides they sweep
        tracker = TrainingRun(
            cfg, experiment=mlcfg.get("experiment") or "signet_rl-train",
            tracking_uri=mlcfg.get("tracking_uri"), run_name=mlcfg.get("run_name") or
            (job.name if job else f"{scorer.name}-{dataset.name}-seed{seed}"), run_id=resume_id,
            sweep=job.dir if job else None,
            tags={"dataset": dataset.name, "scorer": scorer.name, "task": "bandit"},
        )  # fmt: skip
        id_file.write_text(tracker.run_id)

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        if tracker is not None:
            tracker.log_metrics(metrics, step)

    trainer = BanditTrainer(
        dataset, scorer, config, traversal=traversal, seed=seed, run_dir=folder, encoder=str(cfg.encoder),
        validate=(validation_callback(dataset, config.budget_chars, config.max_val_queries, seed)
                  if dataset.split("validation") else None),
        on_eval=on_eval, progress=bool(cfg.get("progress", True)),
    )  # fmt: skip
    trainer.explorer_regulator = regulator
    bridges = _emergence_bridge_targets(cfg, dataset, trainer)
    _emergence_prewarm(cfg, trainer)
    _emergence_rediscovery(cfg, dataset, trainer)
    stop_after = cfg.get("stop_after")
    resume = resume_command(cfg, out)
    try:
        with _StopOnSigint() as sigint:
            curve = trainer.run(
                stop_after=None if stop_after is None else int(stop_after),
                stop_requested=lambda: sigint.requested,
            )
    except KeyboardInterrupt:  # a second Ctrl-C, mid-interaction: the last periodic checkpoint stands
        if tracker is not None:
            tracker.finish("KILLED")
        done = (
            f"the last checkpoint in {out}"
            if (out / CHECKPOINT).exists()
            else "the start (no checkpoint yet)"
        )
        raise TrainingInterrupted(f"interrupted; rerunning resumes from {done}:\n  {resume}") from None
    total = len(trainer.schedule())
    if sigint.requested and trainer.step < total:
        if tracker is not None:
            tracker.finish("KILLED")
        raise TrainingInterrupted(
            f"interrupted after {trainer.step} of {total} interactions; checkpoint written to "
            f"{out / CHECKPOINT}. Resume with:\n  {resume}"
        )
    if trainer.step < total:  # stopped early on purpose (stop_after): resume later
        if tracker is not None:
            tracker.finish("KILLED")
        print(
            f"stopped after {trainer.step} interactions; rerun the same command to resume from {out}:"
            f"\n  {resume}"
        )
        return math.nan

    # The final comparison on test queries, frozen policy, same budget, same queries: best_flat (frozen per
    # dataset family in conf/best_flat.yaml, never chosen here), Signet's fusion uncapped, the non-learned
    # scorers and the ceiling; flat_signet under its own caps beside them, unpaired.
    flat = best_flat(str(cfg.dataset.spec))
    extra: dict[str, Any] = {
        "best_flat": flat,
        "flat_signet_uncapped": flat_variant("flat_signet_uncapped", encoder=str(cfg.encoder)),
    }
    for name, baseline in baseline_scorers(cfg).items():
        extra[f"desire_{name}"] = DesirePathRetriever(
            baseline, config=traversal, encoder=str(cfg.encoder), name=f"desire_{name}"
        )
    if cfg.get("ceiling", True):
        extra["candidate_ceiling"] = DesirePathRetriever(
            OracleScorer(dataset), config=traversal, encoder=str(cfg.encoder), name="candidate_ceiling"
        )
    test_table = bool(cfg.get("test_table", True))
    if test_table and not dataset.split("test"):  # learning_split.fold=all: every query trained the policy
        test_table = False
        print(
            f"no test queries: {dataset.name} trained on every query (learning_split.fold=all). Evaluate the "
            "saved policy on data it has never seen, e.g.:\n  python -m signet_rl.evaluate "
            f"{_dataset_args(str(cfg.dataset.spec))} dataset.data_root=<new data> learning_split=false "
            f"policy={shlex.quote(str(out))}"
        )
    if not test_table:  # a sweep trial: nothing on the test split is evaluated or printed
        extra = {}
    common: dict[str, Any] = {
        "split": "test", "max_queries": config.max_test_queries, "seed": seed,
        "n_boot": int(cfg.get("bootstrap", 1000)), "progress": bool(cfg.get("progress", True)),
    }  # fmt: skip
    result = None
    final: dict[str, float] = {}
    if test_table:
        result = EvaluationResult.concat([
            evaluate(dataset, {"learned": trainer.frozen("learned"), **extra},
                     budget_chars=config.budget_chars, **common),
            evaluate(dataset, {"flat_signet": flat_variant("flat_signet", encoder=str(cfg.encoder))},
                     budget_chars=None, **common),
        ])  # fmt: skip
        print(result.table())
    summary = None
    if result is not None:
        summary = result.rows.groupby("retriever")[[m for m in TEST_METRICS if m in result.rows]].mean()
    for retriever, row in ([] if summary is None else summary.iterrows()):
        for metric, value in row.items():
            final[f"test/{retriever}/{metric}"] = float(value)
            if retriever == "best_flat":  # MLflow's flat baseline is best_flat
                final[f"baseline_flat/{metric}"] = float(value)
    final.update(trainer.ope())
    final.update({k: v for k, v in trainer.running_metrics().items()})
    final["seconds"] = time.perf_counter() - t0

    # Artifacts.
    art = out / "artifacts"
    art.mkdir(exist_ok=True)
    (art / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    import pandas as pd

    pd.DataFrame(curve).to_csv(art / "learning_curve.csv", index=False)
    flat_val = _flat_validation(trainer, flat)
    learning_curve_png(curve, art / "learning_curve.png", baselines=flat_val)
    if result is not None:
        (art / "table.txt").write_text(result.table() + "\n")
        (art / "per_intent.md").write_text(result.intent_tables()["md"])
        result.rows.to_csv(art / "per_query.csv", index=False)
    (art / "final_metrics.json").write_text(json.dumps(final, indent=2, sort_keys=True))
    _emergence_after_training(cfg, dataset, trainer, art, bridges)
    save = getattr(scorer, "save", None)
    if save is not None:  # with the traversal it was trained with, which loading it restores
        save(art / "policy", traversal=traversal)
    if tracker is not None:
        tracker.log_metrics(final, trainer.step)
        tracker.log_artifacts(art)
        tracker.finish()
    name = str(cfg.get("optimized_metric") or "val/needed_recall")
    last = curve[-1] if curve else {}
    if not dataset.split("validation"):  # learning_split.fold=all: nothing was held out to validate on
        print(f"{name}: none (no validation queries); {final['seconds']:.0f} s")
        print(where_message(out, art, tracker, policy=save is not None, scorer=scorer.name))
        return math.nan
    if name not in last:
        raise KeyError(f"optimized_metric {name!r} was not computed; have {sorted(last)}")
    print(f"{name} = {last[name]:.4f}; {final['seconds']:.0f} s")
    print(where_message(out, art, tracker, policy=save is not None, scorer=scorer.name))
    return float(last[name])


def _emergence_config(cfg: DictConfig) -> Any:
    """``cfg.emergence`` as an :class:`~signet_rl.emergence.config.EmergenceConfig` (None when absent).

    Raises:
        ValueError: ``emergence.explorer`` or ``emergence.regulation`` on: the service's switches, which the
            trainer would silently ignore (its own are ``task.explorer_per_session`` and
            ``task.explorer_regulation``).
    """
    values = cfg.get("emergence")
    if values is None:
        return None
    from signet_rl.emergence.config import EmergenceConfig

    config = EmergenceConfig.from_mapping(OmegaConf.to_container(values, resolve=True))  # type: ignore[arg-type]
    for key, mine in (("explorer", "task.explorer_per_session"), ("regulation", "task.explorer_regulation")):
        if getattr(config, key):
            raise ValueError(f"emergence.{key} is the service's switch (python -m signet_rl.serve "
                             f"--emergence {key}); the trainer's is {mine}")
    return config


def _emergence_prewarm(cfg: DictConfig, trainer: BanditTrainer) -> None:
    """With ``emergence.prewarm`` on: temporal pre-warm at each training session's start
    (:class:`~signet_rl.emergence.prewarm.TrainerPrewarm`, settings ``emergence.prewarm_config``), its slate
    logged with propensities and rated like any other."""
    config = _emergence_config(cfg)
    if config is None or not config.prewarm:
        return
    from signet_rl.emergence.prewarm import TrainerPrewarm

    trainer.session_start = TrainerPrewarm(config.prewarm_config)


def _emergence_rediscovery(cfg: DictConfig, dataset: Any, trainer: BanditTrainer) -> None:
    """With ``emergence.rediscovery`` on: the entities of the pruning plan ``emergence.rediscover.plan``
    start in the cold tier (in memory: each graph's hot part is walked) and the explorer slot may step into
    it (:class:`~signet_rl.emergence.rediscovery.ColdExplorer`); a positively rated cold path brings its
    entity back. What came back is written to ``artifacts/emergence/rediscovery.json``."""
    config = _emergence_config(cfg)
    if config is None or not config.rediscovery:
        return
    from signet_rl.emergence.health import PruningPlan
    from signet_rl.emergence.rediscovery import ColdExplorer

    if config.rediscover.plan is None:
        raise ValueError("emergence.rediscovery=true needs emergence.rediscover.plan: a pruning plan "
                         "(artifacts/emergence/pruning.json of a run with emergence.health=true)")
    plan = PruningPlan.load(config.rediscover.plan)
    cold: dict[str, list[str]] = {}
    owner = {str(e): gid for gid, graph in dataset.graphs.items() for e in graph.entities["id"]}
    for eid in plan.entity_ids:
        if eid not in owner:
            raise ValueError(f"{config.rediscover.plan}: entity {eid!r} of the pruning plan is in no graph "
                             f"of {dataset.name}")
        cold.setdefault(owner[eid], []).append(eid)
    trainer.use_cold_explorer(ColdExplorer(dataset.graphs, cold, config.rediscover))


def _emergence_bridge_targets(cfg: DictConfig, dataset: Any, trainer: BanditTrainer) -> dict[str, Any] | None:
    """With ``emergence.bridges`` and ``emergence.bridge.target_explorers`` on: the bridge candidates of
    each graph, found at ingest (before the loop), and the trainer's explorer slot aimed at them
    (:class:`~signet_rl.emergence.components.BridgeTargets`). None otherwise."""
    config = _emergence_config(cfg)
    if config is None or not config.bridges or not config.bridge.target_explorers:
        return None
    from signet_rl.emergence.components import BridgeTargets, bridge_candidates
    from signet_rl.text.encoders import make_encoder

    encoder = make_encoder(str(cfg.encoder))
    found = {gid: bridge_candidates(graph, config.bridge, encoder) for gid, graph in dataset.graphs.items()}
    trainer.explorer_targets = BridgeTargets(dataset.graphs, found)
    return found


def _emergence_after_training(cfg: DictConfig, dataset: Any, trainer: BanditTrainer, art: Path,
                              bridges: dict[str, Any] | None = None) -> None:
    """Issue 29's bridges, principles and health over the run's graph and training feedback, when
    ``cfg.emergence`` switches any on (all off by default); written under ``artifacts/emergence/`` (per
    graph under ``artifacts/by_graph/<id>/emergence/`` when the dataset has several)."""
    values = cfg.get("emergence")
    if values is None:
        return
    ex = getattr(trainer, "cold_explorer", None)
    if ex is not None:
        folder = art / "emergence"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "rediscovery.json").write_text(json.dumps(
            {"initially_cold": ex.initial, "restored": ex.restored, "events": ex.events}, indent=1))
    from signet_rl.emergence.components import after_training
    from signet_rl.emergence.config import EmergenceConfig

    config = EmergenceConfig.from_mapping(OmegaConf.to_container(values, resolve=True))  # type: ignore[arg-type]
    if not {"bridges", "principles", "health"} & set(config.enabled):
        return
    from signet_rl.text.encoders import make_encoder

    encoder = make_encoder(str(cfg.encoder))
    until = max(q.timestamp for q in trainer.train_queries) if all(
        q.timestamp is not None for q in trainer.train_queries) else None
    for gid, graph in dataset.graphs.items():
        records = [r for r in trainer.log if r.context.get("graph_id") == gid]
        outcome = after_training(config, graph, records, until=until, encoder=encoder,
                                 bridges=None if bridges is None else bridges[gid])
        outcome.write(art if len(dataset.graphs) == 1 else art / "by_graph" / gid)


def where_message(out: Path, art: Path, tracker: Any, policy: bool, scorer: str) -> str:
    """Where a finished bandit run put things, and the one command that opens MLflow's UI on it."""
    lines = [f"run folder:      {out}"]
    if tracker is not None:
        lines.append(f"MLflow run:      {tracker.run_id} in {tracker.uri}")
    else:
        lines.append("MLflow run:      none (mlflow.enabled=false)")
    saved = str(art / "policy") if policy else f"none ({scorer} saves none)"
    lines.append(f"policy:          {saved}")
    lines.append(f"learning curve:  {art / 'learning_curve.png'}")
    if tracker is not None:
        # the experiment records where its artifacts are, so the store's URI is all the UI needs
        lines.append(f"open MLflow's UI: mlflow ui --backend-store-uri {shlex.quote(str(tracker.uri))}")
    return "\n".join(lines)


def _dataset_args(spec: str) -> str:
    """The evaluate entry's dataset overrides for ``spec`` (its config group; the spec when it differs)."""
    from signet_rl.datasets.registry import parse_spec

    kind = parse_spec(spec).kind
    return f"dataset={kind}" if spec == kind else f"dataset={kind} dataset.spec={shlex.quote(spec)}"


def _flat_validation(trainer: BanditTrainer, flat: Any) -> dict[str, float]:
    """best_flat's validation needed-recall, drawn as a reference line on the learning curve."""
    if not trainer.dataset.split("validation"):
        return {}
    res = evaluate(
        trainer.dataset,
        {"flat": flat},
        split="validation",
        budget_chars=trainer.config.budget_chars,
        max_queries=trainer.config.max_val_queries,
        seed=trainer.seed,
        n_boot=1,
    )
    rows = res.rows[res.rows["n_needed"] > 0]
    return {"best_flat (validation)": float(rows["needed_recall"].mean())}


@hydra.main(config_path="../conf", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> float:
    """Hydra entry point; returns ``cfg.optimized_metric`` (validation) for sweepers. Ctrl-C prints where
    the run stopped and how to resume (no traceback) and exits with status 130."""
    try:
        return train(cfg)
    except TrainingInterrupted as stop:
        print(str(stop), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("interrupted before the run folder was opened: nothing written", file=sys.stderr, flush=True)
    sys.exit(130)


if __name__ == "__main__":
    main()
