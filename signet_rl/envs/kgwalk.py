"""``KGWalkEnv``: knowledge-graph path reasoning (MINERVA) as a Gymnasium environment.

One episode answers one query ``(e1, r, ?)`` drawn from a split with the environment's seeded
``np_random``. The agent starts at ``e1`` and takes exactly ``path_length`` steps; each step picks one
slot of the current entity's padded action space (:class:`~signet_rl.kg.walk_task.KGWalker`): slot 0 is the
``NO_OP`` self-loop (staying put, so shorter paths are possible), then the entity's out-edges. The
query's own edge ``(e1, r, e2)`` and its inverse are masked, as in MINERVA/MultiHopKG training.

* **Observation** (``Dict`` of fixed-shape integer arrays; ground truth is never in it):
  ``entity`` (where the walk is), ``start`` (``e1``), ``query_relation`` (``r``), ``step`` (steps taken),
  ``candidate_relations`` and ``candidate_entities`` (``[A]``: relation token and target of each slot;
  relation tokens ``0..R-1`` are the dataset's, ``R`` = NO_OP, ``R+2`` = PAD) and ``action_mask``
  (``int8 [A]``, also in ``info["action_mask"]``).
* **Action**: ``Discrete(A)``, a slot.
* **Reward**: on the last step, 1.0 when the final entity is a correct answer of ``(e1, r)``, else 0.0.
  On the ``train`` split "correct" means a training-time fact (graph edges and training queries), so dev
  and test answers stay hidden; on other splits every known answer counts.
* **Masked actions**: by default a masked slot acts as ``NO_OP`` and costs :data:`INVALID_ACTION_PENALTY`
  (-0.01) on top of that step's reward, so generic agents and ``check_env`` (which samples unmasked
  random actions) can run; ``strict=True`` raises ``ValueError`` naming the action and the mask instead.
* **Termination**: reaching ``path_length`` steps is ``terminated=True``; there is no truncation.
  Calling ``step`` after that raises ``RuntimeError`` until ``reset``.

``reset(options={"query_index": i})`` picks query ``i`` of the split instead of sampling (for evaluation
loops); ``info["query_id"]`` names the query.

    >>> env = KGWalkEnv("kg:kinship", split="train", path_length=2)  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step(0)  # NO_OP  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from signet_rl.datasets.base import Dataset
from signet_rl.kg.walk_task import WalkTask, fact_keys, sorted_contains

__all__ = ["INVALID_ACTION_PENALTY", "KGWalkEnv"]

#: Reward added for a masked action outside strict mode (the action is replaced by NO_OP).
INVALID_ACTION_PENALTY: float = -0.01


def _load(dataset: str | Dataset, inverse: bool | None, data_root: str | os.PathLike[str] | None) -> Dataset:
    if isinstance(dataset, Dataset):
        if inverse is not None:
            raise ValueError(
                "inverse= applies when the env loads the dataset from a spec; a Dataset object is used "
                f"as loaded ({dataset.name}), so pass inverse=None"
            )
        return dataset
    from signet_rl.core.paths import data_root as resolve_root
    from signet_rl.datasets.kg import load_kg
    from signet_rl.datasets.registry import parse_spec

    spec = parse_spec(dataset)
    if spec.kind != "kg":
        raise ValueError(f"KGWalkEnv needs a kg:<folder> dataset, got {dataset!r}")
    return load_kg(spec.arg or "", root=resolve_root(data_root), inverse=inverse)


class KGWalkEnv(gym.Env[dict[str, Any], np.int64]):
    """Walk a knowledge graph from a query's head entity for a fixed number of steps (module docstring).

    Args:
        dataset: a ``kg:<folder>`` spec or a loaded KG :class:`~signet_rl.datasets.base.Dataset`.
        split: the split whose queries episodes answer: ``train``, ``validation`` or ``test``.
        path_length: steps per episode, ``T >= 1``.
        inverse: with a spec, ``load_kg``'s ``inverse`` (``None`` keeps the graph file as it is,
            ``True`` adds inverse edges, ``False`` drops them).
        max_actions: cap on the action space per entity, ``NO_OP`` included (MINERVA: 200); ``None``
            keeps every edge.
        strict: raise on a masked action instead of treating it as a penalised ``NO_OP``.
        data_root: where ``kg/`` lives (default ``$SIGNET_RL_DATA``).

    Raises:
        ValueError: a bad split, ``path_length < 1``, a split without queries, or a non-``kg`` spec.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        dataset: str | Dataset = "kg:kinship",
        split: str = "train",
        path_length: int = 3,
        inverse: bool | None = None,
        max_actions: int | None = None,
        strict: bool = False,
        data_root: str | os.PathLike[str] | None = None,
    ) -> None:
        if split not in ("train", "validation", "test"):
            raise ValueError(f"split {split!r} is not one of 'train', 'validation', 'test'")
        if int(path_length) < 1:
            raise ValueError(f"path_length={path_length} must be >= 1")
        ds = _load(dataset, inverse, data_root)
        task = WalkTask.from_dataset(ds, max_actions=max_actions)
        batch = task.queries(split)
        if len(batch) == 0:
            raise ValueError(f"{ds.name}: split {split!r} has no queries")
        w = task.walker
        self.dataset_name = ds.name
        self.split = split
        self.path_length = int(path_length)
        self.strict = bool(strict)
        self.walker = w
        self.entities = task.index.entities
        self.relations = task.index.relations
        self.query_ids = batch.ids
        self.heads = batch.heads
        self.query_relations = batch.relations
        self.tails = batch.tails
        n, r = task.index.num_entities, task.index.num_relations
        if split == "train":
            self._answer_keys = task.train_facts
        else:
            lengths = [len(k) for k in batch.known]
            self._answer_keys = np.unique(
                fact_keys(
                    np.repeat(batch.heads, lengths),
                    np.repeat(batch.relations, lengths),
                    np.concatenate(batch.known),
                    n,
                    r,
                )
            )
        a = w.num_actions
        self.action_space = spaces.Discrete(a)
        self.observation_space = spaces.Dict(
            {
                "entity": spaces.Discrete(n),
                "start": spaces.Discrete(n),
                "query_relation": spaces.Discrete(r),
                "step": spaces.Discrete(self.path_length + 1),
                "candidate_relations": spaces.MultiDiscrete(
                    np.full(a, w.num_relation_tokens, dtype=np.int64)
                ),
                "candidate_entities": spaces.MultiDiscrete(np.full(a, n, dtype=np.int64)),
                "action_mask": spaces.MultiBinary(a),
            }
        )
        self._query = -1
        self._entity = -1
        self._t = 0
        self._done = True
        self._cand: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- helpers ----------------------------------------------------------------------------------

    def _refresh(self) -> None:
        q = self._query
        self._cand = self.walker.candidates_np(
            self._entity, int(self.heads[q]), int(self.query_relations[q]), int(self.tails[q])
        )

    def _obs(self) -> dict[str, Any]:
        assert self._cand is not None
        rels, ents, mask = self._cand
        q = self._query
        return {
            "entity": np.int64(self._entity),
            "start": np.int64(self.heads[q]),
            "query_relation": np.int64(self.query_relations[q]),
            "step": np.int64(self._t),
            "candidate_relations": rels,
            "candidate_entities": ents,
            "action_mask": mask.astype(np.int8),
        }

    def _info(self, obs: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "action_mask": obs["action_mask"].copy(),
            "query_id": self.query_ids[self._query],
            "query_index": self._query,
            **extra,
        }

    def is_answer(self, entity: int) -> bool:
        """Whether ``entity`` answers the current query (the reward rule; not exposed in observations)."""
        q = self._query
        key = fact_keys(
            self.heads[q : q + 1],
            self.query_relations[q : q + 1],
            np.array([entity]),
            len(self.entities),
            len(self.relations),
        )
        return bool(sorted_contains(self._answer_keys, key)[0])

    # -- gymnasium API --------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if options and options.get("query_index") is not None:
            q = int(options["query_index"])
            if not 0 <= q < len(self.query_ids):
                raise ValueError(f"query_index {q} is outside [0, {len(self.query_ids)})")
        else:
            q = int(self.np_random.integers(len(self.query_ids)))
        self._query = q
        self._entity = int(self.heads[q])
        self._t = 0
        self._done = False
        self._refresh()
        obs = self._obs()
        return obs, self._info(obs)

    def step(self, action: np.int64 | int) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError(
                "KGWalkEnv.step() called after the episode ended (terminated after "
                f"path_length={self.path_length} steps); call reset() first"
            )
        a = int(action)
        if not 0 <= a < self.walker.num_actions:
            raise ValueError(f"action {a} is outside the action space Discrete({self.walker.num_actions})")
        assert self._cand is not None
        rels, ents, mask = self._cand
        reward = 0.0
        invalid = not bool(mask[a])
        if invalid:
            if self.strict:
                raise ValueError(
                    f"action {a} is masked at step {self._t} (entity "
                    f"{self.entities[self._entity]!r}): action_mask="
                    f"{''.join('1' if m else '0' for m in mask)}"
                )
            a = 0
            reward += INVALID_ACTION_PENALTY
        relation = int(rels[a])
        self._entity = int(ents[a])
        self._t += 1
        terminated = self._t >= self.path_length
        hit = False
        if terminated:
            hit = self.is_answer(self._entity)
            reward += 1.0 if hit else 0.0
            self._done = True
        self._refresh()
        obs = self._obs()
        extra: dict[str, Any] = {"relation": relation, "invalid_action": invalid}
        if terminated:
            extra["hit"] = hit
        return obs, float(reward), terminated, False, self._info(obs, **extra)
