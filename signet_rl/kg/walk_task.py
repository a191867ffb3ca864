"""The padded action space of a KG path walker (MINERVA semantics), batched over queries.

Every entity ``e`` gets one row of ``A`` candidate actions: slot 0 is the ``NO_OP`` self-loop
``(NO_OP, e)`` (it lets a walk stop early by staying put), slots ``1..d`` hold its out-edges
``(relation, target)`` sorted by relation then target, and the rest is padding (relation ``PAD``,
target ``e`` itself, masked). Entities with more than ``max_actions - 1`` out-edges keep a
deterministic random subset (MINERVA caps the action space at 200 per entity; it keeps the first
200 in file order, we subsample with a fixed seed so the cap does not depend on line order).

Query-edge masking (MINERVA / MultiHopKG training): a walk answering ``(e1, r, ?)`` whose labelled
answer is ``e2`` may not take the edge ``(e1, r, e2)`` itself, nor its inverse ``(e2, r⁻¹, e1)``
when the graph holds one (the policy has to find another path to the answer). With ``tail = -1``
nothing is masked. MultiHopKG applies the same mask at test time with the test triple; since a test
triple is not a graph edge this only matters when the triple is also a training fact, where masking
it is exactly what keeps the lookup from being trivial.

Relation token ids: ``0..R-1`` are the dataset's relations (the order of
:attr:`KGIndex.relations <signet_rl.kg.ranking.KGIndex>`), then ``NO_OP = R``,
``START = R + 1`` (the dummy relation a path begins with) and ``PAD = R + 2``.

    >>> import numpy as np
    >>> w = KGWalker.from_triples(np.array([[0, 0, 1], [1, 0, 2]]), num_entities=3, num_relations=1)
    >>> w.relation.tolist(), w.next_entity.tolist(), w.mask.tolist()
    ([[1, 0], [1, 0], [1, 3]], [[0, 1], [1, 2], [2, 2]], [[True, True], [True, True], [True, False]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from signet_rl.kg.ranking import KGIndex, QueryBatch

if TYPE_CHECKING:
    from signet_rl.datasets.base import Dataset

__all__ = ["KGWalker", "WalkTask", "fact_keys", "inverse_relations", "sorted_contains"]


def inverse_relations(relations: Sequence[str], convention: str = "_inv") -> np.ndarray:
    """For each relation the id of its inverse relation in ``relations``, or -1 when there is none.

    Args:
        relations: relation names in id order.
        convention: ``"_"`` when an inverse is named with a leading underscore (``_term6`` for
            ``term6``: kinship, umls), ``"_inv"`` when it carries an ``_inv`` suffix (NELL); the
            dataset's ``meta["inverse_convention"]`` says which.

    Returns:
        ``int64 [R]``; the map is symmetric (``inv[inv[r]] == r`` where defined).

    >>> inverse_relations(["a", "_a", "b"], "_").tolist()
    [1, 0, -1]
    """
    if convention not in ("_", "_inv"):
        raise ValueError(f"inverse convention {convention!r} is not one of '_', '_inv'")
    index = {r: i for i, r in enumerate(relations)}
    out = np.full(len(relations), -1, dtype=np.int64)
    for i, r in enumerate(relations):
        if convention == "_":
            other = r[1:] if r.startswith("_") and r[1:] in index else "_" + r
        else:
            other = r[:-4] if r.endswith("_inv") and r[:-4] in index else r + "_inv"
        j = index.get(other, -1)
        if j >= 0 and j != i:
            out[i], out[j] = j, i
    return out


@dataclass(frozen=True, eq=False)
class KGWalker:
    """The padded per-entity action space and the query-edge mask, as numpy arrays (torch views on
    demand: :meth:`candidates` works on torch tensors, :meth:`candidates_np` on one numpy query).

    Attributes:
        next_entity: target of each action slot; padding points back at the entity. ``int32 [N, A]``.
        relation: relation token of each slot (``NO_OP`` at slot 0, ``PAD`` for padding). ``int32 [N, A]``.
        mask: whether a slot is a real action. ``bool [N, A]``.
        inverse_of: inverse relation id of each dataset relation, -1 when none. ``int64 [R]``.
        num_entities: ``N``.
        num_relations: ``R``, the dataset relations (tokens ``NO_OP``, ``START``, ``PAD`` follow).
        dropped_edges: out-edges left out by the ``max_actions`` cap (0 when nothing was capped).
    """

    next_entity: np.ndarray
    relation: np.ndarray
    mask: np.ndarray
    inverse_of: np.ndarray
    num_entities: int
    num_relations: int
    dropped_edges: int = 0

    @property
    def no_op(self) -> int:
        """Relation token of the self-loop at slot 0."""
        return self.num_relations

    @property
    def start(self) -> int:
        """Relation token a path's history begins with (MINERVA's ``DUMMY_START_RELATION``)."""
        return self.num_relations + 1

    @property
    def pad(self) -> int:
        """Relation token of padding slots."""
        return self.num_relations + 2

    @property
    def num_relation_tokens(self) -> int:
        """``R + 3``: dataset relations plus ``NO_OP``, ``START`` and ``PAD``."""
        return self.num_relations + 3

    @property
    def num_actions(self) -> int:
        """``A``, the width of the padded action space."""
        return int(self.mask.shape[1])

    @classmethod
    def from_triples(
        cls,
        triples: np.ndarray,
        num_entities: int,
        num_relations: int,
        inverse_of: np.ndarray | None = None,
        max_actions: int | None = None,
        seed: int = 0,
    ) -> KGWalker:
        """Build the action space from graph triples.

        Args:
            triples: ``(head, relation, tail)`` ids, ``int [E, 3]``; duplicates are dropped.
            num_entities: ``N`` (ids are ``0..N-1``).
            num_relations: ``R`` (ids are ``0..R-1``).
            inverse_of: see :func:`inverse_relations`; ``None`` means no relation has an inverse.
            max_actions: cap on ``A`` including the ``NO_OP`` slot (MINERVA: 200); ``None`` keeps every
                edge. Entities over the cap keep a random subset of ``max_actions - 1`` edges drawn with
                ``seed`` (in sorted order).
            seed: seed of that subsampling.

        Raises:
            ValueError: a bad shape, an id out of range or ``max_actions < 2``, naming the value.
        """
        t = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        if max_actions is not None and max_actions < 2:
            raise ValueError(f"max_actions={max_actions} must be >= 2 (NO_OP plus one edge) or None")
        if t.size and (t[:, [0, 2]].min() < 0 or t[:, [0, 2]].max() >= num_entities):
            raise ValueError(f"an entity id in triples is outside [0, {num_entities})")
        if t.size and (t[:, 1].min() < 0 or t[:, 1].max() >= num_relations):
            raise ValueError(f"a relation id in triples is outside [0, {num_relations})")
        inv = (
            np.full(num_relations, -1, dtype=np.int64)
            if inverse_of is None
            else np.asarray(inverse_of, dtype=np.int64)
        )
        if inv.shape != (num_relations,):
            raise ValueError(f"inverse_of has shape {inv.shape}, expected ({num_relations},)")
        t = np.unique(t, axis=0)  # sorted by head, relation, tail
        head = t[:, 0]
        degree = np.bincount(head, minlength=num_entities)
        dropped = 0
        if max_actions is not None and degree.size and degree.max() > max_actions - 1:
            keep = np.ones(len(t), dtype=bool)
            start = np.concatenate([[0], np.cumsum(degree)])
            rng = np.random.default_rng(seed)
            for e in np.flatnonzero(degree > max_actions - 1):
                lo, hi = start[e], start[e + 1]
                chosen = rng.choice(hi - lo, size=max_actions - 1, replace=False)
                drop = np.ones(hi - lo, dtype=bool)
                drop[chosen] = False
                keep[lo:hi][drop] = False
            dropped = int((~keep).sum())
            t, head = t[keep], t[keep][:, 0]
            degree = np.bincount(head, minlength=num_entities)
        width = 1 + (int(degree.max()) if degree.size else 0)
        idx_dtype = np.int32 if max(num_entities, num_relations + 3) < 2**31 else np.int64
        ents = np.arange(num_entities, dtype=idx_dtype)
        next_entity = np.repeat(ents[:, None], width, axis=1)
        relation = np.full((num_entities, width), num_relations + 2, dtype=idx_dtype)
        relation[:, 0] = num_relations
        mask = np.zeros((num_entities, width), dtype=bool)
        mask[:, 0] = True
        start = np.concatenate([[0], np.cumsum(degree)[:-1]])
        slot = np.arange(len(t)) - start[head] + 1
        next_entity[head, slot] = t[:, 2]
        relation[head, slot] = t[:, 1]
        mask[head, slot] = True
        return cls(next_entity, relation, mask, inv, int(num_entities), int(num_relations), dropped)

    # -- torch, batched -------------------------------------------------------------------------

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``next_entity, relation, mask, inverse_of`` as torch tensors sharing memory with the arrays."""
        return (
            torch.from_numpy(self.next_entity),
            torch.from_numpy(self.relation),
            torch.from_numpy(self.mask),
            torch.from_numpy(self.inverse_of),
        )

    def candidates(
        self,
        current: torch.Tensor,
        head: torch.Tensor,
        relation: torch.Tensor,
        tail: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The actions available to a batch of walks, with the query edge masked.

        Args:
            current: where each walk is. ``int64 [B]``.
            head: each walk's query entity ``e1``. ``int64 [B]``.
            relation: each walk's query relation ``r`` (a dataset relation id). ``int64 [B]``.
            tail: each walk's labelled answer ``e2`` whose edge is masked, -1 for none; ``None`` masks
                nothing.

        Returns:
            ``(relations, entities, mask)``, each ``[B, A]`` (``int64``, ``int64``, ``bool``).
        """
        next_e, rel_t, mask_t, inv_t = self.tensors()
        ents = next_e[current].long()
        rels = rel_t[current].long()
        mask = mask_t[current]
        if tail is not None:
            hit = (current == head)[:, None] & (rels == relation[:, None]) & (ents == tail[:, None])
            inv = inv_t[relation]
            hit |= (
                (current == tail)[:, None]
                & (rels == inv[:, None])
                & (ents == head[:, None])
                & (inv >= 0)[:, None]
            )
            mask = mask & ~hit
        return rels, ents, mask

    # -- numpy, one walk --------------------------------------------------------------------------

    def candidates_np(
        self,
        current: int,
        head: int,
        relation: int,
        tail: int = -1,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`candidates` for one walk, on numpy (fresh arrays, safe to modify)."""
        rels = self.relation[current].astype(np.int64)
        ents = self.next_entity[current].astype(np.int64)
        mask = self.mask[current].copy()
        if tail >= 0:
            if current == head:
                mask &= ~((rels == relation) & (ents == tail))
            inv = int(self.inverse_of[relation])
            if current == tail and inv >= 0:
                mask &= ~((rels == inv) & (ents == head))
        return rels, ents, mask


def fact_keys(
    heads: np.ndarray, relations: np.ndarray, tails: np.ndarray, num_entities: int, num_relations: int
) -> np.ndarray:
    """One int64 key per triple, ``(h * R + r) * N + t``, for fast set membership (``np.isin``)."""
    h = np.asarray(heads, dtype=np.int64)
    r = np.asarray(relations, dtype=np.int64)
    return (h * num_relations + r) * num_entities + np.asarray(tails, dtype=np.int64)


def sorted_contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.isin(keys, sorted_keys)`` for an already sorted ``sorted_keys``, by binary search."""
    keys = np.asarray(keys, dtype=np.int64)
    if sorted_keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return np.asarray(sorted_keys[pos] == keys)


@dataclass(frozen=True, eq=False)
class WalkTask:
    """A KG dataset as integers, ready to walk: its index, its action space and the facts a trainer
    may reward.

    Attributes:
        name: the dataset name (``kg:kinship``).
        index: ids of entities and relations (:class:`~signet_rl.kg.ranking.KGIndex`).
        walker: the padded action space over ``index.graph_triples``.
        train_facts: sorted keys (:func:`fact_keys`) of every triple known at training time: the walking
            graph plus the training queries. A training walk is rewarded for ending at any tail ``t`` with
            ``(e1, r, t)`` among them (dev and test answers stay unseen).
    """

    name: str
    index: KGIndex
    walker: KGWalker
    train_facts: np.ndarray
    _splits: dict[str, QueryBatch] = field(default_factory=dict, repr=False)
    _dataset: Dataset | None = field(default=None, repr=False)
    _facts_t: torch.Tensor | None = field(default=None, repr=False)

    @classmethod
    def from_dataset(cls, ds: Dataset, max_actions: int | None = None, seed: int = 0) -> WalkTask:
        """Index ``ds`` (a ``kg:`` dataset) and build its action space (see :meth:`KGWalker.from_triples`)."""
        index = KGIndex.from_dataset(ds)
        inv = inverse_relations(index.relations, index.inverse_convention)
        walker = KGWalker.from_triples(
            index.graph_triples,
            index.num_entities,
            index.num_relations,
            inverse_of=inv,
            max_actions=max_actions,
            seed=seed,
        )
        train = index.queries(ds, "train")
        g = index.graph_triples
        keys = np.concatenate(
            [
                fact_keys(g[:, 0], g[:, 1], g[:, 2], index.num_entities, index.num_relations),
                fact_keys(train.heads, train.relations, train.tails, index.num_entities, index.num_relations),
            ]
        )
        task = cls(ds.name, index, walker, np.unique(keys), {"train": train}, ds)
        return task

    def queries(self, split: str) -> QueryBatch:
        """The split's queries (cached); ``known`` are all known answers, for filtered ranking."""
        if split not in self._splits:
            if self._dataset is None:
                raise ValueError(f"{self.name}: split {split!r} was not loaded")
            self._splits[split] = self.index.queries(self._dataset, split)
        return self._splits[split]

    def training_queries(self, reciprocal: bool = False) -> QueryBatch:
        """The training split's tail queries, and with ``reciprocal`` also one head query
        ``(t, r⁻¹, ?) -> h`` per training triple ``(h, r, t)`` (ids ``<id>:reciprocal``, after the
        originals): the reciprocal training a KG-embedding model gets, given to the walker. Only
        ``heads``, ``relations`` and ``tails`` drive training; a reciprocal query's ``known`` holds its
        target alone.

        Raises:
            ValueError: ``reciprocal`` while a training relation has no inverse in the walking graph,
                naming it (load the dataset with ``inverse=True``).
        """
        train = self.queries("train")
        if not reciprocal:
            return train
        inv = self.walker.inverse_of[train.relations]
        if len(inv) and inv.min() < 0:
            missing = self.index.relations[int(train.relations[int(np.argmin(inv))])]
            raise ValueError(
                f"reciprocal training queries need the inverse of every training relation in the graph; "
                f"{missing!r} has none (set dataset.inverse=true)"
            )
        return QueryBatch(
            ids=train.ids + tuple(f"{i}:reciprocal" for i in train.ids),
            heads=np.concatenate([train.heads, train.tails]),
            relations=np.concatenate([train.relations, inv]),
            tails=np.concatenate([train.tails, train.heads]),
            known=train.known + tuple(np.empty(0, dtype=np.int64) for _ in train.ids),
            num_entities=train.num_entities,
        )

    def other_train_answers(
        self, heads: torch.Tensor, relations: torch.Tensor, tails: torch.Tensor, candidates: torch.Tensor
    ) -> torch.Tensor:
        """Whether each candidate entity is a training-time answer of its walk's ``(e1, r)`` other than the
        labelled ``e2``: MINERVA's last-step mask. ``heads, relations, tails [B]``, ``candidates [B, A]``
        -> ``bool [B, A]``."""
        if self._facts_t is None:
            object.__setattr__(self, "_facts_t", torch.from_numpy(self.train_facts))
        facts = self._facts_t
        assert facts is not None
        n, r = self.index.num_entities, self.index.num_relations
        keys = (heads[:, None] * r + relations[:, None]) * n + candidates
        pos = torch.searchsorted(facts, keys).clamp_(max=max(len(facts) - 1, 0))
        known = facts[pos] == keys if len(facts) else torch.zeros_like(keys, dtype=torch.bool)
        return known & (candidates != tails[:, None])

    def is_train_fact(
        self,
        heads: np.ndarray | torch.Tensor,
        relations: np.ndarray | torch.Tensor,
        tails: np.ndarray | torch.Tensor,
    ) -> np.ndarray:
        """Whether each ``(h, r, t)`` is a training-time fact. ``bool [B]``."""
        h, r, t = (
            x.cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
            for x in (heads, relations, tails)
        )
        keys = fact_keys(h, r, t, self.index.num_entities, self.index.num_relations)
        return sorted_contains(self.train_facts, keys)
