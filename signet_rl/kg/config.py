"""The KG walker's training configuration as typed data, validated once where it enters.

:class:`KGConfig` is what :class:`~signet_rl.kg.trainer.KGTrainer` runs: the task knobs
(:class:`KGTaskConfig`, one field per key of ``conf/task/kg.yaml``), the dataset knobs
(:class:`KGDataConfig`, the keys of ``conf/dataset/kg.yaml`` the walker reads), the seed and the thread
count. The entry layer (:mod:`signet_rl.tasks.kg`) builds it from Hydra's ``cfg.task`` / ``cfg.dataset``
with :meth:`KGConfig.from_dicts`; this package never sees Hydra.

The checkpoint fingerprint (:attr:`KGConfig.fingerprint`) is computed from the two plain dictionaries as
given, not from the dataclasses, so it is the same one run folders written before the dataclass existed
carry: a config key the dataclass fills with a default does not change it.

    >>> cfg = KGConfig.from_dicts({"anchors": [], "shaping": "none"}, {"spec": "kg:umls", "path_length": 2})
    >>> cfg.path_length, cfg.task.beam_width, cfg.use_entity_embeddings
    (2, 100, True)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from signet_rl.core.checks import check_known_keys
from signet_rl.kg.policy import ADVANTAGES, LAST_STEP_OBJECTIVES

__all__ = [
    "ADDED_DEFAULTS",
    "LAST_STEPS",
    "POOLS",
    "RESUME_FREE",
    "SHAPING",
    "KGConfig",
    "KGDataConfig",
    "KGTaskConfig",
    "fingerprint",
]

SHAPING = ("none", "complex", "distmult")
LAST_STEPS = ("sample", *LAST_STEP_OBJECTIVES)
POOLS = ("max", "sum")
#: Task knobs that may change between a run and its resumption without changing what it computes.
RESUME_FREE = (
    "time_budget_s",
    "epochs",
    "max_batches",
    "progress",
    "checkpoint_every",
    "beam_width",
    "eval_batch_size",
    "eval_mask_query_edge",
    "patience",
    "rank_test",
)
#: Knobs added after runs were checkpointed: at these values they are left out of the fingerprint, so a
#: run started before the knob existed still resumes.
ADDED_DEFAULTS: dict[str, Any] = {
    "train_entity_embeddings": True,
    "hide_query_relation": 0.0,
    "patience": None,
    "emb_dropout": 0.0,
    "reciprocal_queries": False,
    "init_from_anchor": None,
    "advantage": "normalised",
    "ema_decay": None,
    "history_layers": 1,
    "rank_test": True,
}


def fingerprint(task: Mapping[str, Any], dataset: Mapping[str, Any], seed: int) -> str:
    """16 hex digits identifying what a run computes: the task knobs (less :data:`RESUME_FREE` and the
    :data:`ADDED_DEFAULTS` at their defaults), the dataset block and the seed. A checkpoint stores it; a
    run resumes only a checkpoint with its own."""
    kept = {
        k: v
        for k, v in task.items()
        if k not in RESUME_FREE and not (k in ADDED_DEFAULTS and v == ADDED_DEFAULTS[k])
    }
    blob = json.dumps({"task": kept, "dataset": dict(dataset), "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KGTaskConfig:
    """The walker and its training, one field per key of ``conf/task/kg.yaml`` (whose comments say what
    each does and why it has its default). Validated on construction; errors name ``task.<key>``."""

    name: str = "kg"
    path_length: int | None = None
    # policy
    entity_dim: int = 200
    relation_dim: int = 200
    history_dim: int = 200
    hidden_dim: int = 400
    history_layers: int = 1
    use_entity_embeddings: bool | None = True
    train_entity_embeddings: bool = True
    dropout: float = 0.0
    emb_dropout: float = 0.0
    gnn: bool = False
    gnn_layers: int = 1
    # REINFORCE
    lr: float = 0.001
    weight_decay: float = 0.0
    grad_clip: float = 5.0
    beta: float = 0.1
    beta_decay: float = 1.0
    beta_decay_every: int = 200
    baseline_rate: float = 0.05
    advantage: str = "normalised"
    num_rollouts: int = 10
    batch_size: int = 128
    false_negative_mask: bool = True
    action_dropout: float = 0.0
    init_from_anchor: str | None = None
    reciprocal_queries: bool = False
    hide_query_relation: float = 0.0
    last_step: str = "expected"
    shaping: str = "complex"
    anchors: tuple[str, ...] = ("complex", "distmult")
    anchor: Mapping[str, Any] = field(default_factory=dict)
    # budget and selection
    epochs: int = 100
    max_batches: int | None = None
    time_budget_s: float | None = 240.0
    checkpoint_every: int = 50
    eval_every: int = 500
    eval_queries: int | None = 500
    eval_beam_width: int | None = None
    select_best: bool = True
    ema_decay: float | None = None
    patience: int | None = None
    # test-time beam search
    beam_width: int = 100
    beam_pool: str = "max"
    eval_batch_size: int | None = None
    eval_mask_query_edge: bool = True
    # false: a probe run: validation only, the test split is never ranked (walker and anchors alike)
    rank_test: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        if self.shaping not in SHAPING:
            raise ValueError(f"task.shaping={self.shaping!r} is not one of {SHAPING}")
        trained = list(self.anchors)
        for key, name in (
            ("shaping", None if self.shaping == "none" else self.shaping),
            ("init_from_anchor", self.init_from_anchor),
        ):
            if name is not None and name not in trained:
                raise ValueError(
                    f"task.{key}={name!r} needs that anchor trained in the run: add it to task.anchors "
                    f"(now {trained})"
                )
        if self.patience is not None and (self.patience < 1 or not self.eval_every):
            raise ValueError(
                f"task.patience={self.patience} needs to be >= 1 and task.eval_every > 0 "
                f"(now {self.eval_every})"
            )
        for key in ("beam_width", "num_rollouts", "batch_size", "checkpoint_every"):
            if getattr(self, key) < 1:
                raise ValueError(f"task.{key}={getattr(self, key)} must be >= 1")
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"task.advantage={self.advantage!r} is not one of {ADVANTAGES}")
        if self.last_step not in LAST_STEPS:
            raise ValueError(f"task.last_step={self.last_step!r} is not one of {LAST_STEPS}")
        if self.ema_decay is not None and not 0.0 < self.ema_decay < 1.0:
            raise ValueError(f"task.ema_decay={self.ema_decay} must be null or in (0, 1)")
        for key in ("action_dropout", "emb_dropout"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise ValueError(f"task.{key}={getattr(self, key)} must be in [0, 1)")
        if self.beam_pool not in POOLS:
            raise ValueError(f"task.beam_pool={self.beam_pool!r} is not one of {POOLS}")
        if self.time_budget_s is not None and self.time_budget_s < 0:
            raise ValueError(
                f"task.time_budget_s={self.time_budget_s} must be >= 0 (0 or null: no time limit)"
            )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> KGTaskConfig:
        """The config a plain ``task`` mapping describes; a key missing takes its default (run folders of
        older versions lack the knobs added since), an unknown key is an error that names it."""
        known = {f.name: f for f in fields(cls)}
        check_known_keys(values, known, "task=kg: unknown keys")
        kw: dict[str, Any] = {}
        for key, value in values.items():
            kw[key] = _coerce(f"task.{key}", value, known[key].type)
        return cls(**kw)

    @property
    def budget_s(self) -> float:
        """Seconds of policy training allowed (``inf`` without a time budget)."""
        return float(self.time_budget_s) if self.time_budget_s else math.inf


@dataclass(frozen=True)
class KGDataConfig:
    """The dataset keys the walker reads (``conf/dataset/kg.yaml``); other keys of the block are
    ignored here but still enter the fingerprint."""

    spec: str
    data_root: str | None = None
    path_length: int | None = None
    inverse: bool | None = True
    max_actions: int | None = None
    use_entity_embeddings: bool | None = None

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> KGDataConfig:
        if values.get("spec") is None:
            raise ValueError("task=kg needs dataset.spec=kg:<folder> (e.g. dataset=kg dataset.spec=kg:umls)")
        names = {f.name: f for f in fields(cls)}
        return cls(**{k: _coerce(f"dataset.{k}", v, names[k].type) for k, v in values.items() if k in names})


@dataclass(frozen=True)
class KGConfig:
    """One KG walker run: task, dataset, seed, threads and the checkpoint fingerprint.

    ``path_length`` and ``use_entity_embeddings`` are resolved: the task's value, else the dataset's.
    """

    task: KGTaskConfig
    data: KGDataConfig
    seed: int = 0
    threads: int | None = None
    fingerprint: str = ""
    path_length: int = 0
    use_entity_embeddings: bool = True

    @classmethod
    def from_dicts(
        cls,
        task: Mapping[str, Any],
        dataset: Mapping[str, Any],
        seed: int = 0,
        threads: int | None = None,
    ) -> KGConfig:
        """Validate plain ``task`` and ``dataset`` mappings (Hydra's ``cfg.task`` / ``cfg.dataset``, or a run
        folder's ``config.yaml``) into a config. Raises ``ValueError`` naming the bad key and value."""
        t = KGTaskConfig.from_dict(task)
        d = KGDataConfig.from_dict(dataset)
        length = t.path_length if t.path_length is not None else d.path_length
        if length is None or int(length) < 1:
            raise ValueError(
                f"path length {length!r}: set task.path_length or dataset.path_length to an integer >= 1"
            )
        use = t.use_entity_embeddings if t.use_entity_embeddings is not None else d.use_entity_embeddings
        return cls(
            task=t,
            data=d,
            seed=int(seed),
            threads=None if not threads else int(threads),
            fingerprint=fingerprint(task, dataset, int(seed)),
            path_length=int(length),
            use_entity_embeddings=True if use is None else bool(use),
        )


def _coerce(key: str, value: Any, annotation: Any) -> Any:
    """``value`` as the field's type (YAML and Hydra give ints for floats, lists for tuples)."""
    if value is None:
        return None
    kind = str(annotation)
    try:
        if kind.startswith("tuple"):
            return tuple(str(v) for v in value)
        if kind.startswith("Mapping"):
            return dict(value)
        if kind.startswith("bool"):
            if isinstance(value, bool) or value in (0, 1):
                return bool(value)
            raise ValueError
        if kind.startswith("int"):
            if isinstance(value, bool) or float(value) != int(value):
                raise ValueError
            return int(value)
        if kind.startswith("float"):
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind.startswith("str"):
            return str(value)
    except (TypeError, ValueError):
        want = {"bool": "true or false", "int": "an integer", "float": "a number"}.get(kind.split(" |")[0])
        raise ValueError(f"{key}={value!r} is not {want or kind}") from None
    return value
