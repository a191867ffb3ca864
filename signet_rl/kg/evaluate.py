"""Rank a finished (or interrupted) KG run's walker again, on the graph it was trained on.

A run's walking graph depends on its config *and its seed*: ``dataset.max_actions`` keeps a seeded random
subset of a crowded entity's edges (NELL-995: 200). Evaluating a checkpoint under another seed walks another
graph and gives other numbers (NELL-995, one checkpoint: test MRR 0.688 under its own seed, 0.649 under
another). :func:`evaluate_run` rebuilds the task from the ``config.yaml`` that
:func:`~signet_rl.kg.train.run_kg` writes into every run folder, checks it against the checkpoint's
fingerprint, and changes only what may change at evaluation time (beam width, beam pooling, the query-edge
mask, chunk size, the data root)::

    python -m signet_rl.kg.evaluate runs/report-kg/umls-regularised-s0 --set task.beam_pool=sum
    python -m signet_rl.kg.evaluate runs/report-kg/kinship-shaped-s1 --splits validation --weights last
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from signet_rl.kg.policy import KGPolicy
from signet_rl.kg.train import (
    CHECKPOINT,
    CONFIG,
    _fingerprint,
    _load_task,
    build_policy,
    evaluate_policy,
    path_length_of,
)
from signet_rl.kg.walk import WalkTask

__all__ = ["EVAL_TIME_KEYS", "evaluate_run", "load_run_policy", "main"]

#: The config keys an evaluation may change: none of them changes the policy or the graph it walks.
EVAL_TIME_KEYS = (
    "task.beam_width",
    "task.beam_pool",
    "task.eval_mask_query_edge",
    "task.eval_batch_size",
    "dataset.data_root",
)
_WEIGHTS = ("selected", "last")
_POOLS = ("max", "sum")


def load_run_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> tuple[DictConfig, dict[str, Any]]:
    """The run's saved config with ``overrides`` (``key=value``, only :data:`EVAL_TIME_KEYS`) applied, and
    its checkpoint, after checking that the two belong together."""
    run_dir = Path(run_dir)
    config, ckpt = run_dir / CONFIG, run_dir / CHECKPOINT
    if not config.exists():
        raise FileNotFoundError(
            f"{config} not found: evaluate_run needs the config that run_kg writes into the run folder "
            "(runs started before it did so have none)"
        )
    if not ckpt.exists():
        raise FileNotFoundError(f"{ckpt} not found: the run has no checkpoint to evaluate")
    cfg = OmegaConf.load(config)
    assert isinstance(cfg, DictConfig)
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    if state["fingerprint"] != (mine := _fingerprint(cfg)):
        raise ValueError(
            f"{config} does not match {ckpt} (fingerprint {mine} against {state['fingerprint']}): the config"
            " was edited or the checkpoint comes from another run"
        )
    for item in overrides:
        key, sep, _ = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        if key not in EVAL_TIME_KEYS:
            raise ValueError(
                f"{key} cannot change at evaluation time (it changes the policy or the graph it walks); "
                f"these can: {', '.join(EVAL_TIME_KEYS)}"
            )
    cfg.merge_with(OmegaConf.from_dotlist(list(overrides)))
    if str(cfg.task.get("beam_pool", "max")) not in _POOLS:
        raise ValueError(f"task.beam_pool={cfg.task.beam_pool!r} is not one of {_POOLS}")
    if int(cfg.task.beam_width) < 1:
        raise ValueError(f"task.beam_width={cfg.task.beam_width} must be >= 1")
    return cfg, state


def evaluate_run(
    run_dir: str | Path,
    overrides: Sequence[str] = (),
    splits: Sequence[str] = ("validation", "test"),
    weights: str = "selected",
) -> dict[str, dict[str, float]]:
    """Filtered ``kg_walk/<metric>`` per split for a run's walker, ranked on the run's own graph.

    Args:
        run_dir: a ``run_kg`` run folder (``config.yaml`` and ``checkpoints/last.pt``).
        overrides: ``key=value`` changes, only :data:`EVAL_TIME_KEYS` (e.g. ``task.beam_pool=sum``).
        splits: any of ``validation`` and ``test``.
        weights: ``selected`` (the checkpoint the run kept by validation, as its results.json reports, or
            its last weights where it kept none, averaged where it ran with ``task.ema_decay``) or ``last``
            (the live weights at its last checkpoint).
    """
    if weights not in _WEIGHTS:
        raise ValueError(f"weights={weights!r} is not one of {_WEIGHTS}")
    for split in splits:
        if split not in ("validation", "test"):
            raise ValueError(f"split {split!r} is not one of ('validation', 'test')")
    cfg, task, policy = load_run_policy(run_dir, overrides, weights)
    t = cfg.task
    chunk = int(t.eval_batch_size) if t.get("eval_batch_size") else None
    out: dict[str, dict[str, float]] = {}
    for split in splits:
        batch = task.queries(split)
        got = evaluate_policy(
            policy,
            task,
            batch,
            path_length_of(cfg),
            int(t.beam_width),
            chunk,
            bool(t.get("eval_mask_query_edge", True)),
            str(t.get("beam_pool", "max")),
        )
        out[split] = {f"kg_walk/{k}": v for k, v in got.items()}
    return out


def load_run_policy(
    run_dir: str | Path, overrides: Sequence[str] = (), weights: str = "selected"
) -> tuple[DictConfig, WalkTask, KGPolicy]:
    """A run's config (with evaluation-time ``overrides``), its task rebuilt on its own graph, and its
    walker with the ``weights`` :func:`evaluate_run` describes."""
    if weights not in _WEIGHTS:
        raise ValueError(f"weights={weights!r} is not one of {_WEIGHTS}")
    cfg, state = load_run_config(run_dir, overrides)
    task = _load_task(cfg)  # the run's seed draws the same max_actions subset
    policy = build_policy(task, cfg)
    best = state.get("best")
    use_best = weights == "selected" and best is not None and bool(cfg.task.get("select_best", True))
    if use_best and best is not None:
        policy.load_state_dict(best["model"])
    elif weights == "selected" and state.get("ema") is not None:  # what a run with task.ema_decay tests
        policy.load_state_dict({**state["model"], **state["ema"]})
    else:
        policy.load_state_dict(state["model"])
    policy.eval()
    return cfg, task, policy


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument(
        "--set", dest="overrides", nargs="*", default=[], help=f"key=value; one of {EVAL_TIME_KEYS}"
    )
    ap.add_argument("--splits", nargs="*", default=["validation", "test"], choices=("validation", "test"))
    ap.add_argument("--weights", default="selected", choices=_WEIGHTS)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    try:
        out = evaluate_run(args.run_dir, args.overrides, args.splits, args.weights)
    except (FileNotFoundError, ValueError) as err:  # a bad folder or override: say which, no traceback
        ap.exit(2, f"{ap.prog}: error: {err}\n")
    print(f"{'split':<11} {'n':>6} {'misses':>6} {'H@1':>6} {'H@3':>6} {'H@10':>6} {'MRR':>6}")
    for split, m in out.items():
        print(
            f"{split:<11} {int(m['kg_walk/n']):>6} {int(m['kg_walk/misses']):>6} "
            + " ".join(f"{100 * m[f'kg_walk/{k}']:>6.1f}" for k in ("hits@1", "hits@3", "hits@10", "mrr"))
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
