"""Train and evaluate the KG walking policy (MINERVA / MultiHopKG) on one ``kg:`` dataset.

:func:`train_kg` is the plain ``train(cfg) -> metric`` function ``python -m signet_rl.train task=kg`` calls:

1. load the dataset (``cfg.dataset.spec``, ``inverse``, ``max_actions``) and build the action space;
2. train the in-run KG-embedding anchors (``cfg.task.anchors``, e.g. ``[complex, distmult]``): they are
   ranked on the same validation and test queries (paired baselines, ``anchor_<name>/...``) and one of
   them may shape the walker's reward (``cfg.task.shaping``);
3. train the policy with REINFORCE on the training queries (``num_rollouts`` walks per query) until
   ``epochs`` / ``max_batches`` or ``time_budget_s`` runs out, checkpointing every ``checkpoint_every``
   batches to ``<run_dir>/checkpoints/last.pt``;
4. rank validation and test queries by beam search and report filtered Hits@1/3/10 and MRR
   (``kg_walk/...``); write ``<run_dir>/results.json``; log to MLflow when ``cfg.mlflow.enabled``.

It returns the **validation** MRR of the walker (what a sweeper optimises; test figures are reported, never
optimised).

Resuming: a run started again with the same ``run_dir`` and the same config continues from the last
checkpoint (model, optimiser, baseline, entropy schedule, every random state, batch counter, time used) and
ends with the same numbers as a run that was never interrupted, as long as it stops on its batch budget
(a run that stops on ``time_budget_s`` stops wherever the clock says). Anchors are saved once trained and
reloaded on resume.

Seeding: ``cfg.seed`` seeds the model's initialisation, the data order (a fixed permutation per epoch),
the rollout sampler and the anchors. Results are reproducible on one machine and thread count.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from signet_rl.kg.policy import (
    ADVANTAGES,
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
from signet_rl.kg.walk import WalkTask

__all__ = [
    "CHECKPOINT",
    "CONFIG",
    "ema_update",
    "eval_chunk_size",
    "evaluate_policy",
    "policy_ranks",
    "run_kg",
    "train_kg",
]

#: Checkpoint file under ``<run_dir>``.
CHECKPOINT = "checkpoints/last.pt"
#: The run's resolved config under ``<run_dir>`` (what ``signet_rl.kg.evaluate`` rebuilds the run from).
CONFIG = "config.yaml"
_SHAPING = ("none", "complex", "distmult")
# Knobs that may change between a run and its resumption without changing what it computes.
_RESUME_FREE = (
    "time_budget_s",
    "epochs",
    "max_batches",
    "progress",
    "checkpoint_every",
    "beam_width",
    "eval_batch_size",
    "eval_mask_query_edge",
    "patience",
)

_LAST_STEPS = ("sample", *LAST_STEP_OBJECTIVES)
# Knobs added after runs were checkpointed: at these values they are left out of the fingerprint, so a run
# started before the knob existed still resumes.
_ADDED_DEFAULTS = {
    "train_entity_embeddings": True,
    "hide_query_relation": 0.0,
    "patience": None,
    "emb_dropout": 0.0,
    "reciprocal_queries": False,
    "init_from_anchor": None,
    "advantage": "normalised",
    "ema_decay": None,
    "history_layers": 1,
}


def _task_cfg(cfg: DictConfig) -> DictConfig:
    t = cfg.task
    if t.shaping not in _SHAPING:
        raise ValueError(f"task.shaping={t.shaping!r} is not one of {_SHAPING}")
    trained = list(t.anchors or [])
    for key, name in (
        ("shaping", None if t.shaping == "none" else t.shaping),
        ("init_from_anchor", t.get("init_from_anchor")),
    ):
        if name is not None and str(name) not in [str(a) for a in trained]:
            raise ValueError(
                f"task.{key}={name!r} needs that anchor trained in the run: add it to task.anchors "
                f"(now {trained})"
            )
    if t.get("patience") is not None and (int(t.patience) < 1 or not int(t.get("eval_every") or 0)):
        raise ValueError(
            f"task.patience={t.patience} needs to be >= 1 and task.eval_every > 0 (now {t.get('eval_every')})"
        )
    for key, low in (("beam_width", 1), ("num_rollouts", 1), ("batch_size", 1), ("checkpoint_every", 1)):
        if int(t[key]) < low:
            raise ValueError(f"task.{key}={t[key]} must be >= {low}")
    if str(t.get("advantage", "normalised")) not in ADVANTAGES:
        raise ValueError(f"task.advantage={t.advantage!r} is not one of {ADVANTAGES}")
    if str(t.get("last_step", "sample")) not in _LAST_STEPS:
        raise ValueError(f"task.last_step={t.last_step!r} is not one of {_LAST_STEPS}")
    ema = t.get("ema_decay")
    if ema is not None and not 0.0 < float(ema) < 1.0:
        raise ValueError(f"task.ema_decay={ema} must be null or in (0, 1)")
    for key in ("action_dropout", "emb_dropout"):
        if not 0.0 <= float(t.get(key, 0.0)) < 1.0:
            raise ValueError(f"task.{key}={t[key]} must be in [0, 1)")
    return t


def path_length_of(cfg: DictConfig) -> int:
    """``task.path_length``, or the dataset config's when that is null."""
    value = _from_task_or_dataset(cfg, "path_length", None)
    if value is None or int(value) < 1:
        raise ValueError(
            f"path length {value!r}: set task.path_length or dataset.path_length to an integer >= 1"
        )
    return int(value)


def _fingerprint(cfg: DictConfig) -> str:
    task = {
        k: v
        for k, v in OmegaConf.to_container(cfg.task, resolve=True).items()  # type: ignore[union-attr]
        if k not in _RESUME_FREE and not (k in _ADDED_DEFAULTS and v == _ADDED_DEFAULTS[k])
    }
    data = OmegaConf.to_container(cfg.dataset, resolve=True)
    blob = json.dumps({"task": task, "dataset": data, "seed": cfg.seed}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _load_task(cfg: DictConfig) -> WalkTask:
    from signet_rl.core.paths import data_root
    from signet_rl.datasets.kg import load_kg
    from signet_rl.datasets.registry import parse_spec

    spec = parse_spec(str(cfg.dataset.spec))
    if spec.kind != "kg":
        raise ValueError(f"task=kg needs a kg:<folder> dataset, got dataset.spec={cfg.dataset.spec!r}")
    inverse = cfg.dataset.get("inverse")
    ds = load_kg(spec.arg or "", root=data_root(cfg.dataset.get("data_root")), inverse=inverse)
    max_actions = cfg.dataset.get("max_actions")
    return WalkTask.from_dataset(
        ds, max_actions=None if max_actions is None else int(max_actions), seed=int(cfg.seed)
    )


def _from_task_or_dataset(cfg: DictConfig, key: str, default: Any) -> Any:
    value = cfg.task.get(key)
    if value is None:
        value = cfg.dataset.get(key)
    return default if value is None else value


def build_policy(task: WalkTask, cfg: DictConfig) -> KGPolicy:
    """The policy ``cfg.task`` describes (``use_entity_embeddings: null`` takes the dataset config's,
    default true), sized for ``task``."""
    t = cfg.task
    use_entities = bool(_from_task_or_dataset(cfg, "use_entity_embeddings", True))
    return KGPolicy(
        task.index.num_entities,
        task.index.num_relations,
        entity_dim=int(t.entity_dim),
        relation_dim=int(t.relation_dim),
        history_dim=int(t.history_dim),
        history_layers=int(t.get("history_layers", 1)),
        hidden_dim=int(t.hidden_dim),
        use_entity_embeddings=use_entities or bool(t.gnn),
        train_entity_embeddings=bool(t.get("train_entity_embeddings", True)),
        dropout=float(t.dropout),
        emb_dropout=float(t.get("emb_dropout", 0.0)),
        gnn_layers=int(t.gnn_layers) if t.gnn else 0,
        graph_triples=task.index.graph_triples if t.gnn else None,
    )


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


def evaluate_policy(
    policy: KGPolicy,
    task: WalkTask,
    batch: QueryBatch,
    path_length: int,
    beam_width: int,
    chunk: int | None = None,
    mask_query_edge: bool = True,
    pool: str = "max",
) -> dict[str, float]:
    """Filtered Hits@1/3/10, MRR, ``n`` and ``misses`` of the policy's beam search on ``batch``.

    ``mask_query_edge`` hides each query's own triple from the walk (MultiHopKG's test-time mask); the
    target is used for nothing else, and the mask changes nothing unless the triple is itself a graph edge.
    """
    r = policy_ranks(policy, task, batch, path_length, beam_width, chunk, mask_query_edge, pool)
    return {**ranking_metrics(r), "n": len(r), "misses": int(np.isinf(r).sum())}


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
    """The filtered rank of each query's target under the policy's beam search (``inf``: never reached);
    the arguments are :func:`evaluate_policy`'s."""
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


# -- anchors -------------------------------------------------------------------------------------------


def _train_anchors(cfg: DictConfig, task: WalkTask, run_dir: Path | None) -> dict[str, Any]:
    """Train (or reload from ``run_dir/anchors``) every anchor ``cfg.task.anchors`` names."""
    names = [str(n) for n in (cfg.task.anchors or [])]
    if not names:
        return {}
    from signet_rl.kg import kge

    ds = task._dataset
    if ds is None:  # pragma: no cover - WalkTask.from_dataset always keeps it
        raise ValueError("anchors need the dataset the task was built from")
    kwargs = dict(OmegaConf.to_container(cfg.task.get("anchor") or {}, resolve=True))  # type: ignore[arg-type]
    out: dict[str, Any] = {}
    for name in names:
        path = run_dir / "anchors" / f"{name}.pt" if run_dir is not None else None
        if path is not None and path.exists():
            out[name] = kge.KGEAnchor.load(path)
            continue
        anchor, _report = kge.train_anchor(ds, model=name, seed=int(cfg.seed), index=task.index, **kwargs)
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


# -- checkpoints ---------------------------------------------------------------------------------------


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


def _save(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _rng_state(gen: torch.Generator) -> dict[str, Any]:
    return {"generator": gen.get_state(), "torch": torch.get_rng_state()}


# -- the run ---------------------------------------------------------------------------------------------


def run_kg(cfg: DictConfig, on_batch: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train and evaluate; return the results dictionary (also written to ``<run_dir>/results.json``).

    Args:
        cfg: ``task`` (policy and training knobs, ``conf/task/kg.yaml``), ``dataset`` (``spec``,
            ``path_length``, ``inverse``, ``max_actions``, ``data_root``), ``seed``, ``run_dir`` (may be
            null: no checkpoints, no files) and ``mlflow`` (``enabled``, ``tracking_uri``, ``experiment``).
        on_batch: called with the number of batches done after each batch (tests use it to simulate a
            kill).

    Returns:
        ``{"dataset", "seed", "path_length", "validation": {...}, "test": {...}, "train": {...}}`` where
        each split maps ``kg_walk/<metric>`` and ``anchor_<name>/<metric>`` to values.
    """
    t = _task_cfg(cfg)
    seed = int(cfg.seed)
    if cfg.get("threads"):  # two runs on two cores each wanting both ran 6x slower than one thread each
        torch.set_num_threads(int(cfg.threads))
    run_dir = Path(str(cfg.run_dir)) if cfg.get("run_dir") else None
    t_start = time.perf_counter()
    task = _load_task(cfg)
    path_length = path_length_of(cfg)
    # the walker's training queries (with reciprocal head queries, if asked): checked before anchors train
    train = task.training_queries(reciprocal=bool(t.get("reciprocal_queries", False)))
    load_s = time.perf_counter() - t_start

    t0 = time.perf_counter()
    anchors = _train_anchors(cfg, task, run_dir)
    anchor_s = time.perf_counter() - t0

    torch.manual_seed(seed)
    policy = build_policy(task, cfg)
    if t.get("init_from_anchor") is not None:
        entity, relation = anchors[str(t.init_from_anchor)].vectors()
        policy.warm_start(
            entity if policy.entity_emb is not None else None,
            relation,
            torch.Generator().manual_seed(seed),
        )
    optimizer = torch.optim.Adam(policy.parameters(), lr=float(t.lr), weight_decay=float(t.weight_decay))
    pg = Reinforce(
        float(t.beta),
        float(t.beta_decay),
        int(t.beta_decay_every),
        float(t.baseline_rate),
        str(t.get("advantage", "normalised")),
    )
    gen = torch.Generator().manual_seed(seed)
    n_train = len(train)
    bs = int(t.batch_size)
    per_epoch = max(1, math.ceil(n_train / bs))
    total = int(t.max_batches) if t.get("max_batches") is not None else int(t.epochs) * per_epoch
    shaper = anchors.get(str(t.shaping)) if t.shaping != "none" else None
    fingerprint = _fingerprint(cfg)

    step, elapsed, reward_sum, reward_n = 0, 0.0, 0.0, 0
    # wall seconds of earlier sittings up to their last checkpoint (None: resumed from a checkpoint that
    # predates this count, so the run's whole wall time is unknown)
    earlier_wall: float | None = 0.0
    # model selection on validation (MultiHopKG keeps its best dev checkpoint): every eval_every batches
    curve: list[dict[str, float]] = []
    best: dict[str, Any] | None = None
    # an exponential moving average of the weights (Polyak averaging): validated, selected and tested in
    # place of the live weights, which go on training
    ema_decay = None if t.get("ema_decay") is None else float(t.ema_decay)
    ema: dict[str, torch.Tensor] | None = None
    if ema_decay is not None:
        ema = {k: p.detach().clone() for k, p in policy.named_parameters()}
    ckpt = run_dir / CHECKPOINT if run_dir is not None else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
        if state["fingerprint"] != fingerprint:
            raise ValueError(
                f"{ckpt} was written by a run with another config (fingerprint {state['fingerprint']}, "
                f"this run {fingerprint}); use a fresh run_dir or the same task/dataset/seed"
            )
        policy.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        pg.load_state_dict(state["reinforce"])
        gen.set_state(state["rng"]["generator"])
        torch.set_rng_state(state["rng"]["torch"])
        step, elapsed = int(state["step"]), float(state["elapsed"])
        reward_sum, reward_n = float(state["reward_sum"]), int(state["reward_n"])
        curve, best = list(state.get("curve", [])), state.get("best")
        if ema is not None:
            ema = state["ema"]
        earlier_wall = state.get("wall_s")
    if run_dir is not None:  # after the fingerprint check, so a mismatched run cannot overwrite it
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))

    def checkpoint() -> None:
        if ckpt is None:
            return
        _save(
            ckpt,
            {
                "fingerprint": fingerprint,
                "step": step,
                "elapsed": elapsed,
                "wall_s": None if earlier_wall is None else earlier_wall + time.perf_counter() - t_start,
                "reward_sum": reward_sum,
                "reward_n": reward_n,
                "model": policy.state_dict(),
                "optimizer": optimizer.state_dict(),
                "reinforce": pg.state_dict(),
                "rng": _rng_state(gen),
                "policy_config": policy.config,
                "curve": curve,
                "best": best,
                "ema": ema,
            },
        )

    budget = float(t.time_budget_s) if t.get("time_budget_s") else math.inf
    m = int(t.num_rollouts)
    fn_mask = bool(t.get("false_negative_mask", True))
    last_step = str(t.get("last_step", "sample"))
    expected_last = last_step in LAST_STEP_OBJECTIVES
    hide_p = float(t.get("hide_query_relation") or 0.0)
    policy.train()
    bar = tqdm(
        total=total,
        initial=step,
        desc=f"kg_walk {task.name}",
        disable=not bool(t.progress),
        dynamic_ncols=True,
    )
    stopped_by = "batches"
    window: list[float] = []
    eval_every = int(t.get("eval_every") or 0)
    select_batch = task.queries("validation")
    if t.get("eval_queries") and len(select_batch) > int(t.eval_queries):
        select_batch = select_batch.take(slice(0, int(t.eval_queries)))

    def averaged() -> dict[str, torch.Tensor]:
        """The weights validation and test see: the live ones, or their moving average."""
        weights = {k: v.detach().clone() for k, v in policy.state_dict().items()}
        return weights if ema is None else {**weights, **{k: v.clone() for k, v in ema.items()}}

    def validate() -> None:
        """Append the validation MRR to ``curve``; keep the best weights so far in ``best``."""
        nonlocal best
        live = None
        if ema is not None:
            live = {k: v.detach().clone() for k, v in policy.state_dict().items()}
            policy.load_state_dict(averaged())
        got = evaluate_policy(
            policy,
            task,
            select_batch,
            path_length,
            int(t.get("eval_beam_width") or t.beam_width),
            pool=str(t.get("beam_pool", "max")),
        )
        curve.append(
            {"batch": step, "seconds": round(elapsed, 3), "mrr": got["mrr"], "hits@1": got["hits@1"]}
        )
        if best is None or got["mrr"] > best["mrr"]:
            best = {"batch": step, "mrr": got["mrr"], "model": averaged()}
        if live is not None:
            policy.load_state_dict(live)

    patience = int(t.get("patience") or 0)
    while step < total:
        if elapsed >= budget:
            stopped_by = "time_budget_s"
            break
        if patience and best is not None and sum(c["batch"] > best["batch"] for c in curve) >= patience:
            stopped_by = "patience"
            break
        tick = time.perf_counter()
        epoch, pos = divmod(step, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(n_train)
        idx = order[pos * bs : (pos + 1) * bs]
        heads = torch.from_numpy(train.heads[idx]).repeat_interleave(m)
        rels = torch.from_numpy(train.relations[idx]).repeat_interleave(m)
        tails = torch.from_numpy(train.tails[idx]).repeat_interleave(m)

        end_rewards = partial(_end_rewards, task, heads, rels, tails, fn_mask, shaper, m)
        hide = None
        if hide_p > 0.0:  # no draw when off, so runs without it keep their random stream
            hide = torch.rand(len(heads), generator=gen) < hide_p
        ro = rollout(
            policy,
            task.walker,
            heads,
            rels,
            tails,
            path_length,
            gen,
            float(t.action_dropout),
            last_step_exclude=partial(task.other_train_answers, heads, rels, tails) if fn_mask else None,
            expected_last=expected_last,
            hide_query_relation=hide,
        )
        hit, reward = end_rewards(ro.final)
        if expected_last:
            assert ro.last_probs is not None and ro.last_entities is not None
            slot_rewards = end_rewards(ro.last_entities)[1]
            value = (ro.last_probs * slot_rewards).sum(dim=1)
            exact = last_step_objective(ro.last_probs, slot_rewards, last_step)
            loss = pg.loss(ro.log_probs[:, :-1], ro.entropies, value.detach(), exact=exact)
        else:
            loss = pg.loss(ro.log_probs, ro.entropies, reward)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), float(t.grad_clip))
        optimizer.step()
        step += 1
        if ema is not None and ema_decay is not None:
            ema_update(ema, policy.named_parameters(), ema_decay, step)
        reward_sum += float(hit.sum())
        reward_n += hit.numel()
        window = ([*window, float(hit.mean())])[-50:]
        if eval_every and len(select_batch) and step % eval_every == 0:
            validate()
        elapsed += time.perf_counter() - tick
        bar.update(1)
        post = {"hit": f"{np.mean(window):.3f}", "beta": f"{pg.beta:.4f}"}
        if curve:
            post["val_mrr"] = f"{curve[-1]['mrr']:.3f}"
        bar.set_postfix(post, refresh=False)
        if step % int(t.checkpoint_every) == 0 or step == total:
            checkpoint()
        if on_batch is not None:
            on_batch(step)
    bar.close()
    if stopped_by != "batches":
        checkpoint()
    if eval_every and len(select_batch) and (not curve or curve[-1]["batch"] != step):
        validate()  # the final weights compete too
        checkpoint()  # with the selection it made, so signet_rl.kg.evaluate finds the weights reported
    selected = step
    policy.load_state_dict(averaged())
    if best is not None and bool(t.get("select_best", True)):
        policy.load_state_dict(best["model"])
        selected = int(best["batch"])

    t0 = time.perf_counter()
    beam = int(t.beam_width)
    chunk = int(t.eval_batch_size) if t.get("eval_batch_size") else None
    mask_edge = bool(t.get("eval_mask_query_edge", True))
    results: dict[str, Any] = {
        "dataset": task.name,
        "seed": seed,
        "path_length": path_length,
        "num_actions": task.walker.num_actions,
        "dropped_edges": task.walker.dropped_edges,
    }
    for split in ("validation", "test"):
        batch = task.queries(split)
        if len(batch) == 0:
            results[split] = {}
            continue
        metrics = {
            f"kg_walk/{k}": v
            for k, v in evaluate_policy(
                policy, task, batch, path_length, beam, chunk, mask_edge, str(t.get("beam_pool", "max"))
            ).items()
        }
        for name, anchor in anchors.items():
            am = evaluate_scores(anchor.score_tails, batch)
            metrics.update({f"anchor_{name}/{k}": v for k, v in am.items()})
        results[split] = metrics
    eval_s = time.perf_counter() - t0
    results["train"] = {
        "batches": step,
        "total_batches": total,
        "stopped_by": stopped_by,
        "seconds": round(elapsed, 3),
        "walks": reward_n,
        "mean_hit": reward_sum / reward_n if reward_n else 0.0,
        "batches_per_s": step / elapsed if elapsed > 0 else 0.0,
        "selected_batch": selected,
    }
    results["curve"] = curve
    results["timing"] = {
        "load_s": round(load_s, 3),
        "anchors_s": round(anchor_s, 3),
        "train_s": round(elapsed, 3),
        "eval_s": round(eval_s, 3),
        "total_s": round(time.perf_counter() - t_start, 3),
        # every sitting's wall time (a resumed run's total_s is its last sitting's alone); None when the
        # run resumed from a checkpoint written before this was counted
        "wall_s": None if earlier_wall is None else round(earlier_wall + time.perf_counter() - t_start, 3),
    }
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "results.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    if cfg.get("mlflow") is not None and bool(cfg.mlflow.get("enabled", False)):
        log_results(results, cfg)
    return results


def train_kg(cfg: DictConfig) -> float:
    """Train and evaluate (see :func:`run_kg`); return the walker's validation MRR for sweepers."""
    results = run_kg(cfg)
    return float(results["validation"].get("kg_walk/mrr", float("nan")))


# -- MLflow --------------------------------------------------------------------------------------------


def flat_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """``<split>/<model>/<metric>`` for every finite evaluation figure, plus ``train/...`` figures."""
    out: dict[str, float] = {}
    for split in ("validation", "test"):
        for k, v in (results.get(split) or {}).items():
            if isinstance(v, int | float) and math.isfinite(v):
                out[f"{split}/{k}"] = float(v)
    for k, v in (results.get("train") or {}).items():
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[f"train/{k}"] = float(v)
    return out


def log_results(results: Mapping[str, Any], cfg: DictConfig) -> str:
    """Log one run to MLflow: flattened config as params, :func:`flat_metrics` as metrics,
    ``results.json`` and ``config.yaml`` as artifacts, tags ``dataset``/``git_commit``. Returns the run id."""
    import tempfile

    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    from signet_rl import tracking

    uri = tracking.resolve_tracking_uri(cfg.mlflow.get("tracking_uri"))
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    experiment = str(cfg.mlflow.get("experiment") or "signet_rl-kg")
    with tracking._quiet_backend():
        client = MlflowClient(tracking_uri=uri)
        exp_id = tracking._experiment_id(client, experiment, uri)
        commit = tracking.git_commit()
        run = client.create_run(
            exp_id,
            tags={"dataset": str(results["dataset"]), "task": "kg", "git_commit": commit},
            run_name=f"kg_walk-{results['dataset']}-seed{results['seed']}",
        )
        run_id = str(run.info.run_id)
        try:
            now = int(time.time() * 1000)
            params = tracking.flatten_config(cfg)
            curve = [
                Metric(
                    tracking._name(f"curve/validation/kg_walk/{k}"), float(point[k]), now, int(point["batch"])
                )
                for point in results.get("curve") or []
                for k in ("mrr", "hits@1")
            ]
            client.log_batch(
                run_id,
                metrics=[Metric(tracking._name(k), v, now, 0) for k, v in flat_metrics(results).items()]
                + curve,
                params=[Param(tracking._name(k), str(v)[:MAX_PARAM_VAL_LENGTH]) for k, v in params.items()],
            )
            with tempfile.TemporaryDirectory(prefix="signet_rl-kg-") as tmp:
                Path(tmp, "results.json").write_text(json.dumps(results, indent=2, default=float))
                Path(tmp, "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
                client.log_artifacts(run_id, tmp)
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
    return run_id
