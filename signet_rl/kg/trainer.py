"""Train and evaluate the KG walking policy (MINERVA / MultiHopKG) on one ``kg:`` dataset.

:class:`KGTrainer` runs one :class:`~signet_rl.kg.config.KGConfig` in five visible steps:

1. :meth:`~KGTrainer.setup`: load the dataset (``spec``, ``inverse``, ``max_actions``) and build the action
   space; train the in-run KG-embedding anchors (``task.anchors``, e.g. ``[complex, distmult]``), which are
   ranked on the same validation and test queries (paired baselines, ``anchor_<name>/...``) and one of which
   may shape the walker's reward (``task.shaping``); build the policy, its optimiser and REINFORCE; resume
   from ``<run_dir>/checkpoints/last.pt`` when there is one;
2. :meth:`~KGTrainer.train`: REINFORCE on the training queries (``num_rollouts`` walks per query) until
   ``epochs`` / ``max_batches``, ``time_budget_s`` or ``patience`` ends it, checkpointing every
   ``checkpoint_every`` batches;
3. :meth:`~KGTrainer.select`: the weights to test — the best validation checkpoint (every ``eval_every``
   batches; the final weights compete too) or the last, averaged when ``task.ema_decay`` is set;
4. :meth:`~KGTrainer.test`: rank validation and test queries by beam search and report filtered
   Hits@1/3/10 and MRR (``kg_walk/...``) beside the anchors';
5. :meth:`~KGTrainer.run` returns the results and writes ``<run_dir>/results.json``.

This module is library code: no Hydra, no MLflow. :mod:`signet_rl.tasks.kg` turns ``python -m
signet_rl.train task=kg`` into a :class:`KGConfig`, runs the trainer, logs and prints.

Resuming: a run started again with the same ``run_dir`` and the same config continues from the last
checkpoint (model, optimiser, baseline, entropy schedule, every random state, batch counter, time used) and
ends with the same numbers as a run that was never interrupted, as long as it stops on its batch budget
(a run that stops on ``time_budget_s`` stops wherever the clock says). Anchors are saved once trained and
reloaded on resume. Each checkpoint written keeps the one before it as ``checkpoints/previous.pt``, the way
back when the last one is damaged.

Seeding: ``seed`` seeds the model's initialisation, the data order (a fixed permutation per epoch), the
rollout sampler and the anchors. Results are reproducible on one machine and thread count.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ParamSpec

import numpy as np
import torch
import yaml
from tqdm.auto import tqdm

from signet_rl.kg.config import KGConfig
from signet_rl.kg.policy import (
    FULL_SCORING_RATIO,
    LAST_STEP_OBJECTIVES,
    KGPolicy,
    Reinforce,
    anchor_end_scores,
    beam_search,
    last_step_objective,
    rollout,
    shaped_rewards,
)
from signet_rl.kg.ranking import QueryBatch, evaluate_scores, filtered_ranks, ranking_metrics
from signet_rl.kg.walk_task import WalkTask

__all__ = [
    "CHECKPOINT",
    "CONFIG",
    "PREVIOUS",
    "RESULTS",
    "CheckpointError",
    "KGTrainer",
    "build_policy",
    "clear_run",
    "ema_update",
    "eval_chunk_size",
    "evaluate_policy",
    "load_checkpoint",
    "load_task",
    "policy_ranks",
    "run_kg",
]

#: Checkpoint file under ``<run_dir>``.
CHECKPOINT = "checkpoints/last.pt"
#: The checkpoint before the last one (kept so a damaged last one is not the end of the run).
PREVIOUS = "checkpoints/previous.pt"
#: The run's resolved config under ``<run_dir>`` (what :mod:`signet_rl.kg.rerank` rebuilds the run from).
CONFIG = "config.yaml"
#: The results file under ``<run_dir>``.
RESULTS = "results.json"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read (truncated, corrupt, not a checkpoint)."""


# -- data and model ------------------------------------------------------------------------------------


def load_task(config: KGConfig) -> WalkTask:
    """The dataset ``config.data`` names, indexed and with its action space built.

    Raises:
        ValueError: the spec is not ``kg:<folder>``, or the folder has no usable triple to walk or train
            on (naming the folder and how many rows were malformed).
    """
    from signet_rl.core.paths import data_root
    from signet_rl.datasets.kg import load_kg
    from signet_rl.datasets.registry import parse_spec

    spec = parse_spec(config.data.spec)
    if spec.kind != "kg":
        raise ValueError(f"task=kg needs a kg:<folder> dataset, got dataset.spec={config.data.spec!r}")
    ds = load_kg(spec.arg or "", root=data_root(config.data.data_root), inverse=config.data.inverse)
    _require_triples(ds)
    return WalkTask.from_dataset(ds, max_actions=config.data.max_actions, seed=config.seed)


def _require_triples(ds: Any) -> None:
    """Refuse a dataset whose graph or training split is empty: training on it would "finish" after zero
    walks. The message names the folder and the malformed rows that were skipped."""
    counts = ds.meta.get("counts", {})
    empty = [
        what
        for what, n in (
            ("graph edges", counts.get("dependencies", 0)),
            ("training triples", counts.get("queries_train", 0)),
        )
        if not n
    ]
    if not empty:
        return
    bad = ds.report.malformed
    first = f"; first: {bad[0].file} {bad[0].row}: {bad[0].problem}" if bad else ""
    raise ValueError(
        f"{ds.name}: no usable {' and no '.join(empty)} in {ds.meta.get('folder')} "
        f"({len(bad)} malformed rows skipped{first}); KG files hold one head<TAB>relation<TAB>tail "
        "triple per line"
    )


def build_policy(task: WalkTask, config: KGConfig) -> KGPolicy:
    """The policy ``config.task`` describes, sized for ``task``."""
    t = config.task
    return KGPolicy(
        task.index.num_entities,
        task.index.num_relations,
        entity_dim=t.entity_dim,
        relation_dim=t.relation_dim,
        history_dim=t.history_dim,
        history_layers=t.history_layers,
        hidden_dim=t.hidden_dim,
        use_entity_embeddings=config.use_entity_embeddings or t.gnn,
        train_entity_embeddings=t.train_entity_embeddings,
        dropout=t.dropout,
        emb_dropout=t.emb_dropout,
        gnn_layers=t.gnn_layers if t.gnn else 0,
        graph_triples=task.index.graph_triples if t.gnn else None,
    )


# -- evaluation ------------------------------------------------------------------------------------------


def eval_chunk_size(policy: KGPolicy, task: WalkTask, beam_width: int, budget: float = 2e7) -> int:
    """Queries per beam-search call so one step's tensors stay near ``budget`` floats (``[k, A]`` candidate
    arrays, plus ``[k, A, d]`` gathered vectors or ``[k, R + N]`` score rows, whichever the policy uses)."""
    a = task.walker.num_actions
    n = task.index.num_entities
    table = n if policy.entity_emb is not None else 0
    scoring = 0
    for rows, dim in ((policy.relation_emb.num_embeddings, policy.relation_dim), (table, policy.entity_dim)):
        if rows:
            scoring += rows if rows <= FULL_SCORING_RATIO * a else a * dim
    per_query = beam_width * (8 * a + scoring) + n
    return int(max(1, min(512, budget // per_query)))


def policy_ranks(
    policy: KGPolicy,
    task: WalkTask,
    batch: QueryBatch,
    path_length: int,
    beam_width: int,
    chunk: int | None = None,
    mask_query_edge: bool = True,
    pool: str = "max",
) -> np.ndarray:
    """The filtered rank of each query's target under the policy's beam search on ``batch`` (``inf``: never
    reached).

    ``mask_query_edge`` hides each query's own triple from the walk (MultiHopKG's test-time mask); the
    target is used for nothing else, and the mask changes nothing unless the triple is itself a graph edge.
    """
    was_training = policy.training
    policy.eval()
    chunk = chunk or eval_chunk_size(policy, task, beam_width)
    ranks = []
    try:
        for start in range(0, len(batch), chunk):
            sub = batch.take(slice(start, start + chunk))
            tails = torch.from_numpy(sub.tails) if mask_query_edge else None
            scores = beam_search(
                policy,
                task.walker,
                torch.from_numpy(sub.heads),
                torch.from_numpy(sub.relations),
                path_length,
                beam_width,
                tails,
                pool,
            )
            ranks.append(filtered_ranks(scores, sub))
    finally:
        policy.train(was_training)
    return np.concatenate(ranks)


_P = ParamSpec("_P")


def _metrics_of(ranks: Callable[_P, np.ndarray]) -> Callable[_P, dict[str, float]]:
    """``ranks`` (a function returning filtered ranks) made to return their Hits@1/3/10, MRR, ``n`` and
    ``misses`` instead."""

    def metrics(*args: _P.args, **kwargs: _P.kwargs) -> dict[str, float]:
        r = ranks(*args, **kwargs)
        return {**ranking_metrics(r), "n": len(r), "misses": int(np.isinf(r).sum())}

    return metrics


#: ``evaluate_policy(policy, task, batch, path_length, beam_width, chunk=None, mask_query_edge=True,
#: pool="max")``: filtered Hits@1/3/10, MRR, ``n`` and ``misses`` of the policy's beam search on ``batch``
#: (the arguments are :func:`policy_ranks`'s).
evaluate_policy = _metrics_of(policy_ranks)


# -- anchors and rewards ----------------------------------------------------------------------------------


def train_anchors(config: KGConfig, task: WalkTask, run_dir: Path | None) -> dict[str, Any]:
    """Train (or reload from ``run_dir/anchors``) every anchor ``config.task.anchors`` names."""
    names = list(config.task.anchors)
    if not names:
        return {}
    from signet_rl.kg import kge

    ds = task._dataset
    if ds is None:  # pragma: no cover - WalkTask.from_dataset always keeps it
        raise ValueError("anchors need the dataset the task was built from")
    kwargs = dict(config.task.anchor)
    out: dict[str, Any] = {}
    for name in names:
        path = run_dir / "anchors" / f"{name}.pt" if run_dir is not None else None
        if path is not None and path.exists():
            out[name] = kge.KGEAnchor.load(path)
            continue
        anchor, _report = kge.train_anchor(ds, model=name, seed=config.seed, index=task.index,
                                           rank_test=config.task.rank_test, **kwargs)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            anchor.save(path)
        out[name] = anchor
    return out


def _anchor_score_fn(anchor: Any) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def score(heads: torch.Tensor, relations: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.as_tensor(anchor.score_tails(heads, relations)).float()

    return score


def _end_rewards(
    task: WalkTask,
    heads: torch.Tensor,
    rels: torch.Tensor,
    tails: torch.Tensor,
    fn_mask: bool,
    shaper: Any,
    group: int,
    ends: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(hit, reward)`` of walks ending at ``ends`` (``[B]``, or ``[B, K]`` candidate ends per walk).

    A hit is the labelled answer (``fn_mask``, MINERVA's rule) or any training fact of ``(e1, r_q)``; the
    reward adds the shaping anchor's sigmoid score for misses (MultiHopKG) when ``shaper`` is set.
    """
    if fn_mask:
        hit = (ends == (tails if ends.dim() == 1 else tails[:, None])).float()
    else:
        wide = ends if ends.dim() == 2 else ends[:, None]
        k = wide.shape[1]
        fact = task.is_train_fact(heads.repeat_interleave(k), rels.repeat_interleave(k), wide.reshape(-1))
        hit = torch.from_numpy(fact).float().reshape(ends.shape)
    scores = None
    if shaper is not None:
        scores = anchor_end_scores(_anchor_score_fn(shaper), heads, rels, ends, group)
    return hit, shaped_rewards(hit, scores)


@torch.no_grad()
def ema_update(
    ema: dict[str, torch.Tensor], params: Iterable[tuple[str, torch.Tensor]], decay: float, step: int
) -> None:
    """Move the moving average ``ema`` towards ``params`` after batch ``step`` (1-based), in place.

    Each entry keeps ``min(decay, (1 + step) / (10 + step))`` of itself: the usual warm-up, so the average
    forgets the random start within tens of batches instead of ``1 / (1 - decay)``.
    """
    keep = min(float(decay), (1 + step) / (10 + step))
    for name, p in params:
        ema[name].lerp_(p.detach(), 1.0 - keep)


# -- checkpoint files -------------------------------------------------------------------------------------


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically; the checkpoint it replaces becomes ``previous.pt`` beside it
    (hard-linked, so ``path`` itself exists at every moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(dict(state), tmp)
    if path.exists():
        previous = path.with_name(Path(PREVIOUS).name)
        keep = path.with_suffix(".prev.tmp")
        keep.unlink(missing_ok=True)
        try:
            os.link(path, keep)
        except OSError:  # a file system without hard links
            shutil.copy2(path, keep)
        os.replace(keep, previous)
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint :func:`save_checkpoint` wrote.

    Raises:
        CheckpointError: the file cannot be read; the message names it and the two ways out (start over
            with ``fresh=true``, or resume from ``previous.pt`` when there is one).
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        if not isinstance(state, dict) or "fingerprint" not in state:
            raise ValueError("not a KG walker checkpoint")
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile) as err:
        previous = path.with_name(Path(PREVIOUS).name)
        back = (
            f", or resume from the checkpoint before it: cp {previous} {path}"
            if previous.exists() and previous != path
            else ""
        )
        raise CheckpointError(
            f"checkpoint {path} is unreadable (truncated or corrupt: {type(err).__name__}: {err}); "
            f"start the run over with fresh=true{back}"
        ) from err
    return state


def clear_run(run_dir: Path) -> list[Path]:
    """Delete the files a KG run writes into ``run_dir`` (checkpoints, anchors, results), and only those;
    return what was removed. Anything else in the folder stays."""
    removed: list[Path] = []
    files = [run_dir / CHECKPOINT, run_dir / PREVIOUS, run_dir / RESULTS]
    files += [run_dir / "checkpoints" / n for n in ("last.tmp", "last.prev.tmp")]
    anchors = run_dir / "anchors"
    files += sorted(anchors.glob("*.pt")) if anchors.is_dir() else []
    for path in files:
        if path.is_file():
            path.unlink()
            removed.append(path)
    for folder in (run_dir / "checkpoints", anchors):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed


# -- the trainer ------------------------------------------------------------------------------------------


class KGTrainer:
    """One run of the KG walker: :meth:`setup`, :meth:`train`, :meth:`select`, :meth:`test`, or all of
    them with :meth:`run`.

    Args:
        config: the run (:class:`~signet_rl.kg.config.KGConfig`).
        run_dir: folder for the checkpoint, anchors, ``config.yaml`` and ``results.json``; None: no files.
        record: the plain config written as ``<run_dir>/config.yaml`` (what :mod:`signet_rl.kg.rerank`
            rebuilds the run from); None writes none.
        on_batch: called with the number of batches done after each batch (tests use it to simulate a
            kill).
    """

    def __init__(
        self,
        config: KGConfig,
        run_dir: str | Path | None = None,
        record: Mapping[str, Any] | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self.config = config
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.record = record
        self.on_batch = on_batch
        self.step = 0
        self.elapsed = 0.0  # seconds of training (validation included), over every sitting
        self.reward_sum, self.reward_n = 0.0, 0
        # wall seconds of earlier sittings up to their last checkpoint (None: resumed from a checkpoint that
        # predates this count, so the run's whole wall time is unknown)
        self.earlier_wall: float | None = 0.0
        # model selection on validation (MultiHopKG keeps its best dev checkpoint)
        self.curve: list[dict[str, float]] = []
        self.best: dict[str, Any] | None = None
        self.stopped_by = "batches"
        self.selected = 0
        self.timing: dict[str, float] = {}
        self._t_start = time.perf_counter()

    @property
    def checkpoint_path(self) -> Path | None:
        return self.run_dir / CHECKPOINT if self.run_dir is not None else None

    # -- 1. setup --------------------------------------------------------------------------------------

    def setup(self) -> None:
        """Load the data, train or reload the anchors, build the policy and its optimiser, resume."""
        c, t = self.config, self.config.task
        if c.threads:  # two runs on two cores each wanting both ran 6x slower than one thread each
            torch.set_num_threads(c.threads)
        self._t_start = time.perf_counter()
        self.task = load_task(c)
        # the walker's training queries (with reciprocal head queries, if asked): checked before anchors
        self.train_batch = self.task.training_queries(reciprocal=t.reciprocal_queries)
        self.timing["load_s"] = round(time.perf_counter() - self._t_start, 3)

        t0 = time.perf_counter()
        self.anchors = train_anchors(c, self.task, self.run_dir)
        self.timing["anchors_s"] = round(time.perf_counter() - t0, 3)

        torch.manual_seed(c.seed)
        self.policy = build_policy(self.task, c)
        if t.init_from_anchor is not None:
            entity, relation = self.anchors[t.init_from_anchor].vectors()
            self.policy.warm_start(
                entity if self.policy.entity_emb is not None else None,
                relation,
                torch.Generator().manual_seed(c.seed),
            )
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=t.lr, weight_decay=t.weight_decay)
        self.pg = Reinforce(t.beta, t.beta_decay, t.beta_decay_every, t.baseline_rate, t.advantage)
        self.gen = torch.Generator().manual_seed(c.seed)
        self.per_epoch = max(1, math.ceil(len(self.train_batch) / t.batch_size))
        self.total = t.max_batches if t.max_batches is not None else t.epochs * self.per_epoch
        self.shaper = self.anchors.get(t.shaping) if t.shaping != "none" else None
        # an exponential moving average of the weights (Polyak averaging): validated, selected and tested in
        # place of the live weights, which go on training
        self.ema: dict[str, torch.Tensor] | None = None
        if t.ema_decay is not None:
            self.ema = {k: p.detach().clone() for k, p in self.policy.named_parameters()}
        self.select_batch = self.task.queries("validation")
        if t.eval_queries and len(self.select_batch) > t.eval_queries:
            self.select_batch = self.select_batch.take(slice(0, t.eval_queries))
        self._resume()
        if self.run_dir is not None:  # after the fingerprint check, so a mismatched run cannot overwrite it
            self.run_dir.mkdir(parents=True, exist_ok=True)
            if self.record is not None:
                text = yaml.safe_dump(dict(self.record), sort_keys=False, allow_unicode=True)
                (self.run_dir / CONFIG).write_text(text)

    def _resume(self) -> None:
        ckpt = self.checkpoint_path
        if ckpt is None or not ckpt.exists():
            return
        state = load_checkpoint(ckpt)
        if state["fingerprint"] != self.config.fingerprint:
            raise ValueError(
                f"{ckpt} was written by a run with another config (fingerprint {state['fingerprint']}, "
                f"this run {self.config.fingerprint}); use a fresh run_dir, fresh=true, or the same "
                "task/dataset/seed"
            )
        self.policy.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.pg.load_state_dict(state["reinforce"])
        self.gen.set_state(state["rng"]["generator"])
        torch.set_rng_state(state["rng"]["torch"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed"])
        self.reward_sum, self.reward_n = float(state["reward_sum"]), int(state["reward_n"])
        self.curve, self.best = list(state.get("curve", [])), state.get("best")
        if self.ema is not None:
            self.ema = state["ema"]
        self.earlier_wall = state.get("wall_s")

    def checkpoint(self) -> None:
        """Write everything a resumed run needs to ``<run_dir>/checkpoints/last.pt`` (no-op without one)."""
        ckpt = self.checkpoint_path
        if ckpt is None:
            return
        wall = None if self.earlier_wall is None else self.earlier_wall + time.perf_counter() - self._t_start
        save_checkpoint(
            ckpt,
            {
                "fingerprint": self.config.fingerprint,
                "step": self.step,
                "elapsed": self.elapsed,
                "wall_s": wall,
                "reward_sum": self.reward_sum,
                "reward_n": self.reward_n,
                "model": self.policy.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "reinforce": self.pg.state_dict(),
                "rng": {"generator": self.gen.get_state(), "torch": torch.get_rng_state()},
                "policy_config": self.policy.config,
                "curve": self.curve,
                "best": self.best,
                "ema": self.ema,
            },
        )

    # -- 2. training -----------------------------------------------------------------------------------

    def train(self) -> None:
        """REINFORCE until the batch budget, the time budget or patience ends it."""
        t = self.config.task
        budget = t.budget_s
        eval_every = t.eval_every or 0
        self.policy.train()
        bar = _ProgressBar(self, budget, enabled=t.progress)
        window: list[float] = []
        self.stopped_by = "batches"
        while self.step < self.total:
            if self.elapsed >= budget:
                self.stopped_by = "time_budget_s"
                break
            if self._out_of_patience():
                self.stopped_by = "patience"
                break
            tick = time.perf_counter()
            hit = self._batch()
            self.step += 1
            if self.ema is not None and t.ema_decay is not None:
                ema_update(self.ema, self.policy.named_parameters(), t.ema_decay, self.step)
            self.reward_sum += float(hit.sum())
            self.reward_n += hit.numel()
            window = ([*window, float(hit.mean())])[-50:]
            if eval_every and len(self.select_batch) and self.step % eval_every == 0:
                self.validate()
            self.elapsed += time.perf_counter() - tick
            bar.update(float(np.mean(window)))
            if self.step % t.checkpoint_every == 0 or self.step == self.total:
                self.checkpoint()
            if self.on_batch is not None:
                self.on_batch(self.step)
        bar.close(self.stopped_by)
        if self.stopped_by != "batches":
            self.checkpoint()

    def _out_of_patience(self) -> bool:
        patience = self.config.task.patience or 0
        best = self.best
        return (
            bool(patience)
            and best is not None
            and sum(c["batch"] > best["batch"] for c in self.curve) >= patience
        )

    def _batch(self) -> torch.Tensor:
        """One REINFORCE batch; returns the hits of its walks."""
        c, t = self.config, self.config.task
        train, bs, m = self.train_batch, t.batch_size, t.num_rollouts
        epoch, pos = divmod(self.step, self.per_epoch)
        order = np.random.default_rng([c.seed, epoch]).permutation(len(train))
        idx = order[pos * bs : (pos + 1) * bs]
        heads = torch.from_numpy(train.heads[idx]).repeat_interleave(m)
        rels = torch.from_numpy(train.relations[idx]).repeat_interleave(m)
        tails = torch.from_numpy(train.tails[idx]).repeat_interleave(m)
        fn_mask = t.false_negative_mask
        expected_last = t.last_step in LAST_STEP_OBJECTIVES
        end_rewards = partial(_end_rewards, self.task, heads, rels, tails, fn_mask, self.shaper, m)
        hide = None
        if t.hide_query_relation > 0.0:  # no draw when off, so runs without it keep their random stream
            hide = torch.rand(len(heads), generator=self.gen) < t.hide_query_relation
        ro = rollout(
            self.policy,
            self.task.walker,
            heads,
            rels,
            tails,
            c.path_length,
            self.gen,
            t.action_dropout,
            last_step_exclude=partial(self.task.other_train_answers, heads, rels, tails) if fn_mask else None,
            expected_last=expected_last,
            hide_query_relation=hide,
        )
        hit, reward = end_rewards(ro.final)
        if expected_last:
            assert ro.last_probs is not None and ro.last_entities is not None
            slot_rewards = end_rewards(ro.last_entities)[1]
            value = (ro.last_probs * slot_rewards).sum(dim=1)
            exact = last_step_objective(ro.last_probs, slot_rewards, t.last_step)
            loss = self.pg.loss(ro.log_probs[:, :-1], ro.entropies, value.detach(), exact=exact)
        else:
            loss = self.pg.loss(ro.log_probs, ro.entropies, reward)
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), t.grad_clip)
        self.optimizer.step()
        return hit

    # -- 3. validation and selection ---------------------------------------------------------------------

    def averaged(self) -> dict[str, torch.Tensor]:
        """The weights validation and test see: the live ones, or their moving average."""
        weights = {k: v.detach().clone() for k, v in self.policy.state_dict().items()}
        return weights if self.ema is None else {**weights, **{k: v.clone() for k, v in self.ema.items()}}

    def validate(self) -> None:
        """Append the validation MRR to the curve; keep the best weights so far."""
        t = self.config.task
        live = None
        if self.ema is not None:
            live = {k: v.detach().clone() for k, v in self.policy.state_dict().items()}
            self.policy.load_state_dict(self.averaged())
        got = evaluate_policy(
            self.policy,
            self.task,
            self.select_batch,
            self.config.path_length,
            t.eval_beam_width or t.beam_width,
            pool=t.beam_pool,
        )
        self.curve.append(
            {
                "batch": self.step,
                "seconds": round(self.elapsed, 3),
                "mrr": got["mrr"],
                "hits@1": got["hits@1"],
            }
        )
        if self.best is None or got["mrr"] > self.best["mrr"]:
            self.best = {"batch": self.step, "mrr": got["mrr"], "model": self.averaged()}
        if live is not None:
            self.policy.load_state_dict(live)

    def select(self) -> int:
        """Validate the final weights too (when validating at all), then load the weights to test; return
        the batch they come from."""
        t = self.config.task
        if (
            (t.eval_every or 0)
            and len(self.select_batch)
            and (not self.curve or self.curve[-1]["batch"] != self.step)
        ):
            self.validate()  # the final weights compete too
            self.checkpoint()  # with the selection it made, so a re-ranking finds the weights reported
        self.selected = self.step
        self.policy.load_state_dict(self.averaged())
        if self.best is not None and t.select_best:
            self.policy.load_state_dict(self.best["model"])
            self.selected = int(self.best["batch"])
        return self.selected

    # -- 4. test ---------------------------------------------------------------------------------------

    def test(self) -> dict[str, dict[str, float]]:
        """``kg_walk/<metric>`` and ``anchor_<name>/<metric>`` on the validation and test splits."""
        t = self.config.task
        t0 = time.perf_counter()
        out: dict[str, dict[str, float]] = {}
        for split in ("validation", "test") if t.rank_test else ("validation",):
            batch = self.task.queries(split)
            if len(batch) == 0:
                out[split] = {}
                continue
            got = evaluate_policy(
                self.policy,
                self.task,
                batch,
                self.config.path_length,
                t.beam_width,
                t.eval_batch_size,
                t.eval_mask_query_edge,
                t.beam_pool,
            )
            metrics = {f"kg_walk/{k}": v for k, v in got.items()}
            for name, anchor in self.anchors.items():
                am = evaluate_scores(anchor.score_tails, batch)
                metrics.update({f"anchor_{name}/{k}": v for k, v in am.items()})
            out[split] = metrics
        out.setdefault("test", {})  # a probe (task.rank_test=false) ranks validation only
        self.timing["eval_s"] = round(time.perf_counter() - t0, 3)
        return out

    # -- 5. the whole run --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Set up, train, select, test; return the results (also written to ``<run_dir>/results.json``).

        Returns:
            ``{"dataset", "seed", "path_length", "num_actions", "dropped_edges", "validation": {...},
            "test": {...}, "train": {...}, "curve": [...], "timing": {...}}`` where each split maps
            ``kg_walk/<metric>`` and ``anchor_<name>/<metric>`` to values.
        """
        self.setup()
        self.train()
        self.select()
        evaluated = self.test()
        elapsed, step = self.elapsed, self.step
        wall = time.perf_counter() - self._t_start
        results: dict[str, Any] = {
            "dataset": self.task.name,
            "seed": self.config.seed,
            "path_length": self.config.path_length,
            "num_actions": self.task.walker.num_actions,
            "dropped_edges": self.task.walker.dropped_edges,
            **evaluated,
            "train": {
                "batches": step,
                "total_batches": self.total,
                "stopped_by": self.stopped_by,
                "seconds": round(elapsed, 3),
                "walks": self.reward_n,
                "mean_hit": self.reward_sum / self.reward_n if self.reward_n else 0.0,
                "batches_per_s": step / elapsed if elapsed > 0 else 0.0,
                "selected_batch": self.selected,
            },
            "curve": self.curve,
            "timing": {
                "load_s": self.timing["load_s"],
                "anchors_s": self.timing["anchors_s"],
                "train_s": round(elapsed, 3),
                "eval_s": self.timing["eval_s"],
                "total_s": round(wall, 3),
                # every sitting's wall time (a resumed run's total_s is its last sitting's alone); None when
                # the run resumed from a checkpoint written before this was counted
                "wall_s": None if self.earlier_wall is None else round(self.earlier_wall + wall, 3),
            },
        }
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / RESULTS).write_text(json.dumps(results, indent=2, default=float) + "\n")
        return results


def run_kg(
    config: KGConfig,
    run_dir: str | Path | None = None,
    record: Mapping[str, Any] | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """``KGTrainer(config, run_dir, record, on_batch).run()``: train, select, test; the results."""
    return KGTrainer(config, run_dir, record, on_batch).run()


class _ProgressBar:
    """Training progress against what will end it: seconds of the time budget when there is one (so a run
    the budget ends finishes at 100%, not at some share of its batch cap), batches otherwise; the postfix
    shows batches done, the recent hit rate, the entropy weight and the last validation MRR."""

    def __init__(self, trainer: KGTrainer, budget: float, enabled: bool) -> None:
        self.trainer = trainer
        self.timed = math.isfinite(budget)
        self.budget = budget
        desc = f"kg_walk {trainer.task.name}"
        if self.timed:
            self.bar = tqdm(
                total=budget,
                initial=min(trainer.elapsed, budget),
                desc=f"{desc} (time budget)",
                unit="s",
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}{postfix}]",
                disable=not enabled,
                dynamic_ncols=True,
            )
        else:
            self.bar = tqdm(
                total=trainer.total, initial=trainer.step, desc=desc, unit="batch", disable=not enabled,
                dynamic_ncols=True,
            )  # fmt: skip

    def update(self, hit_rate: float) -> None:
        tr = self.trainer
        if self.timed:
            self.bar.update(min(tr.elapsed, self.budget) - self.bar.n)
        else:
            self.bar.update(1)
        post = {"batch": f"{tr.step}/{tr.total}", "hit": f"{hit_rate:.3f}", "beta": f"{tr.pg.beta:.4f}"}
        if tr.curve:
            post["val_mrr"] = f"{tr.curve[-1]['mrr']:.3f}"
        self.bar.set_postfix(post, refresh=False)

    def close(self, stopped_by: str) -> None:
        if self.timed and stopped_by == "time_budget_s":
            self.bar.update(self.budget - self.bar.n)
        self.bar.close()
