"""Rank a finished (or interrupted) KG run's walker again, on the graph it was trained on.

A run's walking graph depends on its config *and its seed*: ``dataset.max_actions`` keeps a seeded random
subset of a crowded entity's edges (NELL-995: 200). Evaluating a checkpoint under another seed walks another
graph and gives other numbers (NELL-995, one checkpoint: test MRR 0.688 under its own seed, 0.649 under
another). :func:`evaluate_run` rebuilds the task from the ``config.yaml`` that
:class:`~signet_rl.kg.trainer.KGTrainer` writes into every run folder, checks it against the checkpoint's
fingerprint, and changes only what may change at evaluation time (beam width, beam pooling, the query-edge
mask, chunk size, the data root). The command line is :mod:`signet_rl.tasks.kg_rerank`::

    python -m signet_rl.tasks.kg_rerank runs/report-kg/umls-regularised-s0 --set task.beam_pool=sum
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from signet_rl.kg.config import KGConfig
from signet_rl.kg.policy import KGPolicy
from signet_rl.kg.trainer import CHECKPOINT, CONFIG, build_policy, evaluate_policy, load_checkpoint, load_task
from signet_rl.kg.walk_task import WalkTask

__all__ = ["EVAL_TIME_KEYS", "SPLITS", "WEIGHTS", "evaluate_run", "load_run_config", "load_run_policy"]

#: The config keys an evaluation may change: none of them changes the policy or the graph it walks.
EVAL_TIME_KEYS = (
    "task.beam_width",
    "task.beam_pool",
    "task.eval_mask_query_edge",
    "task.eval_batch_size",
    "dataset.data_root",
)
WEIGHTS = ("selected", "last")
SPLITS = ("validation", "test")


def load_run_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> tuple[KGConfig, dict[str, Any]]:
    """The run's saved config with ``overrides`` (``key=value``, only :data:`EVAL_TIME_KEYS`) applied, and
    its checkpoint, after checking that the two belong together."""
    run_dir = Path(run_dir)
    config, ckpt = run_dir / CONFIG, run_dir / CHECKPOINT
    if not config.exists():
        raise FileNotFoundError(
            f"{config} not found: evaluate_run needs the config that the KG trainer writes into the run "
            "folder (runs started before it did so have none)"
        )
    if not ckpt.exists():
        raise FileNotFoundError(f"{ckpt} not found: the run has no checkpoint to evaluate")
    record = yaml.safe_load(config.read_text())
    if not isinstance(record, dict) or not isinstance(record.get("task"), dict):
        raise ValueError(f"{config} is not a KG run's config (no task block)")
    saved = KGConfig.from_dicts(record["task"], record.get("dataset") or {}, int(record.get("seed") or 0))
    state = load_checkpoint(ckpt)
    if state["fingerprint"] != saved.fingerprint:
        raise ValueError(
            f"{config} does not match {ckpt} (fingerprint {saved.fingerprint} against "
            f"{state['fingerprint']}): the config was edited or the checkpoint comes from another run"
        )
    changed = copy.deepcopy(record)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        if key not in EVAL_TIME_KEYS:
            raise ValueError(
                f"{key} cannot change at evaluation time (it changes the policy or the graph it walks); "
                f"these can: {', '.join(EVAL_TIME_KEYS)}"
            )
        block, name = key.split(".", 1)
        changed.setdefault(block, {})[name] = yaml.safe_load(value) if value else None
    cfg = KGConfig.from_dicts(changed["task"], changed.get("dataset") or {}, saved.seed, saved.threads)
    return cfg, state


def load_run_policy(
    run_dir: str | Path, overrides: Sequence[str] = (), weights: str = "selected"
) -> tuple[KGConfig, WalkTask, KGPolicy]:
    """A run's config (with evaluation-time ``overrides``), its task rebuilt on its own graph, and its
    walker with the ``weights`` :func:`evaluate_run` describes."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} is not one of {WEIGHTS}")
    cfg, state = load_run_config(run_dir, overrides)
    task = load_task(cfg)  # the run's seed draws the same max_actions subset
    policy = build_policy(task, cfg)
    best = state.get("best")
    use_best = weights == "selected" and best is not None and cfg.task.select_best
    if use_best and best is not None:
        policy.load_state_dict(best["model"])
    elif weights == "selected" and state.get("ema") is not None:  # what a run with task.ema_decay tests
        policy.load_state_dict({**state["model"], **state["ema"]})
    else:
        policy.load_state_dict(state["model"])
    policy.eval()
    return cfg, task, policy


def evaluate_run(
    run_dir: str | Path,
    overrides: Sequence[str] = (),
    splits: Sequence[str] = SPLITS,
    weights: str = "selected",
) -> dict[str, dict[str, float]]:
    """Filtered ``kg_walk/<metric>`` per split for a run's walker, ranked on the run's own graph.

    Args:
        run_dir: a KG run folder (``config.yaml`` and ``checkpoints/last.pt``).
        overrides: ``key=value`` changes, only :data:`EVAL_TIME_KEYS` (e.g. ``task.beam_pool=sum``).
        splits: any of ``validation`` and ``test``.
        weights: ``selected`` (the checkpoint the run kept by validation, as its results.json reports, or
            its last weights where it kept none, averaged where it ran with ``task.ema_decay``) or ``last``
            (the live weights at its last checkpoint).
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} is not one of {WEIGHTS}")
    for split in splits:
        if split not in SPLITS:
            raise ValueError(f"split {split!r} is not one of {SPLITS}")
    cfg, task, policy = load_run_policy(run_dir, overrides, weights)
    t = cfg.task
    out: dict[str, dict[str, float]] = {}
    for split in splits:
        got = evaluate_policy(
            policy,
            task,
            task.queries(split),
            cfg.path_length,
            t.beam_width,
            t.eval_batch_size,
            t.eval_mask_query_edge,
            t.beam_pool,
        )
        out[split] = {f"kg_walk/{k}": v for k, v in got.items()}
    return out
