"""Filtered ranking for (head, relation, ?) tail queries: the one evaluator every KG model is ranked by.

A model answers a query ``(h, r, ?)`` with one score per entity (higher is better). The target tail's
**filtered rank** ignores the other known correct tails of ``(h, r)`` (Bordes et al. 2013), so a model is not
punished for ranking another right answer first:

.. math::

    \\mathrm{rank}_i = 1 + \\#\\{e \\notin K_i : s_{ie} > s_{it}\\}
        + \\tfrac{1}{2}\\,\\#\\{e \\notin K_i : s_{ie} = s_{it}\\}

where ``t`` is the target and ``K_i`` the known correct tails of the query (``t`` included). Ties count half:
this is the target's *expected* rank when ties are broken uniformly at random (the ``1 + g + k/2`` mean rank
of a target tied with ``k`` others), so a model that gives every entity the same score gets the rank of a
random guess rather than rank 1 (optimistic) or rank N (pessimistic). A rank may therefore be a half-integer;
``hits@k`` counts ``rank <= k`` (a target tied with one other entity for the top has rank 1.5: not a hit@1,
a hit@3).

A score of ``-inf`` means "never reached" (a walk that never ends at that entity). A target scored ``-inf`` is
a **miss**: its rank is ``inf``, it counts for no ``hits@k`` and adds ``1/inf = 0`` to the MRR. Entities
scored ``-inf`` other than the target never outrank it.

Ground truth enters here **only** as the filter set: :attr:`QueryBatch.known` comes from
``truth.answers`` and is used to drop other correct answers from the count. It never reaches a policy or a
score function: :func:`evaluate_scores` hands ``score_fn`` heads and relations only.

    >>> import numpy as np
    >>> batch = QueryBatch(ids=("q0",), heads=np.array([0]), relations=np.array([0]),
    ...                    tails=np.array([2]), known=(np.array([1, 2]),))
    >>> # entity 1 (another correct tail) outranks the target: filtered out; entity 3 ties: +0.5
    >>> filtered_ranks(np.array([[0.1, 0.9, 0.5, 0.5]]), batch).tolist()
    [1.5]
    >>> ranking_metrics(np.array([1.0, 2.0, np.inf, 4.0]))["mrr"]
    0.4375
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

if TYPE_CHECKING:
    from signet_rl.datasets.base import Dataset

__all__ = ["HITS_AT", "KGIndex", "QueryBatch", "evaluate_scores", "filtered_ranks", "ranking_metrics"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: The ``k`` of the ``hits@k`` metrics :func:`ranking_metrics` reports.
HITS_AT: tuple[int, ...] = (1, 3, 10)


def _int_array(name: str, values: object) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


@dataclass(frozen=True, eq=False)
class QueryBatch:
    """Tail queries ``(head, relation, ?)`` as integer arrays, with their filter sets.

    Attributes:
        ids: query ids, in dataset order. Length ``B``.
        heads: head entity indices. Shape ``[B]``, int64.
        relations: relation indices. Shape ``[B]``, int64.
        tails: the target tail of each query. Shape ``[B]``, int64.
        known: per query, every correct tail of ``(head, relation)`` (sorted, unique, int64), its own
            tail included (added if missing). Used only to filter ranks.
        num_entities: the number of entities ``N`` scores must cover, when known (set by
            :meth:`KGIndex.queries`); :func:`filtered_ranks` then checks the score width against it.

    Raises:
        ValueError: lengths disagree, an index is negative or an array is not 1-D integers.
    """

    ids: tuple[str, ...]
    heads: IntArray
    relations: IntArray
    tails: IntArray
    known: tuple[IntArray, ...]
    num_entities: int | None = None

    def __post_init__(self) -> None:
        heads = _int_array("heads", self.heads)
        relations = _int_array("relations", self.relations)
        tails = _int_array("tails", self.tails)
        n = len(self.ids)
        for name, arr in (("heads", heads), ("relations", relations), ("tails", tails)):
            if len(arr) != n:
                raise ValueError(f"QueryBatch: {name} has length {len(arr)} but there are {n} ids")
            if arr.size and arr.min() < 0:
                raise ValueError(f"QueryBatch: {name} holds a negative index {int(arr.min())}")
        if len(self.known) != n:
            raise ValueError(f"QueryBatch: known has {len(self.known)} entries but there are {n} ids")
        known = tuple(
            np.union1d(_int_array(f"known[{i}]", k), tails[i : i + 1]) for i, k in enumerate(self.known)
        )
        for i, k in enumerate(known):
            if k[0] < 0:
                raise ValueError(f"QueryBatch: known tails of query {self.ids[i]!r} hold a negative index")
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "relations", relations)
        object.__setattr__(self, "tails", tails)
        object.__setattr__(self, "known", known)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, index: slice | Sequence[int] | IntArray) -> QueryBatch:
        """The sub-batch of the queries at ``index`` (a slice or integer positions)."""
        pos = np.arange(len(self))[index]
        return QueryBatch(
            ids=tuple(self.ids[i] for i in pos),
            heads=self.heads[pos],
            relations=self.relations[pos],
            tails=self.tails[pos],
            known=tuple(self.known[i] for i in pos),
            num_entities=self.num_entities,
        )


@dataclass(frozen=True, eq=False)
class KGIndex:
    """Integer view of a KG dataset: entity/relation ids, the walkable graph's triples, filter sets.

    Attributes:
        entities: index -> entity id, in the graph's entity-frame order (the order of
            :attr:`GraphArrays.entity_ids <signet_rl.graph.arrays.GraphArrays.entity_ids>`).
        relations: index -> relation name. The graph's edge relations come first, sorted (so their indices
            equal :attr:`GraphArrays.dep_type_vocab <signet_rl.graph.arrays.GraphArrays.dep_type_vocab>`
            codes), then, sorted, every other relation a query or the dataset's relation vocabulary
            (``ds.meta["relations"]``, e.g. UMLS's ``_rel`` inverses) names.
        entity_index: entity id -> index (read-only).
        relation_index: relation name -> index (read-only).
        graph_triples: the walkable graph's edges as ``(head, relation, tail)`` indices, in
            dependency-frame order. Shape ``[E, 3]``, int64.
        inverse_convention: how the dataset names inverse relations: ``"_"`` (``_rel``) or ``"_inv"``
            (``rel_inv``), from ``ds.meta``.
    """

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    entity_index: Mapping[str, int]
    relation_index: Mapping[str, int]
    graph_triples: IntArray
    inverse_convention: str = "_inv"

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @classmethod
    def from_dataset(cls, ds: Dataset) -> KGIndex:
        """Index the single graph of a KG dataset (``load_dataset("kg:<folder>")``).

        Raises:
            ValueError: the dataset has no single graph, or an edge names an entity the graph lacks.
        """
        graph = ds.graph
        entities = tuple(str(e) for e in graph.entities["id"])
        ent_index = pd.Index(entities)
        if not ent_index.is_unique:
            raise ValueError(f"{ds.name}: entity ids are not unique")
        deps = graph.dependencies
        graph_rels = sorted({str(r) for r in deps["dependency_type"]})
        other = {str(q.meta["relation"]) for q in ds.queries if "relation" in q.meta}
        other |= {str(r) for r in ds.meta.get("relations", ())}
        relations = tuple(graph_rels + sorted(other - set(graph_rels)))
        rel_index = pd.Index(relations)
        src = ent_index.get_indexer(deps["source_entity_id"])
        dst = ent_index.get_indexer(deps["target_entity_id"])
        typ = rel_index.get_indexer(deps["dependency_type"])
        bad = np.flatnonzero((src < 0) | (dst < 0))
        if bad.size:
            row = deps.iloc[int(bad[0])]
            raise ValueError(
                f"{ds.name}: dependency {row['id']!r} joins {row['source_entity_id']!r} -> "
                f"{row['target_entity_id']!r}, not both entities of the graph"
            )
        triples = np.stack([src, typ, dst], axis=1).astype(np.int64).reshape(-1, 3)
        triples.flags.writeable = False
        return cls(
            entities=entities,
            relations=relations,
            entity_index=MappingProxyType({e: i for i, e in enumerate(entities)}),
            relation_index=MappingProxyType({r: i for i, r in enumerate(relations)}),
            graph_triples=triples,
            inverse_convention=str(ds.meta.get("inverse_convention", "_inv")),
        )

    def queries(self, ds: Dataset, split: str) -> QueryBatch:
        """The tail queries of one split as integers, in ``ds.split(split)`` order.

        The target is ``truth.needed[0]``; the filter set is ``truth.answers`` (every known tail of
        ``(head, relation)`` over all files), used only for filtered ranking.

        Raises:
            ValueError: a query lacks ``head``/``relation`` meta or a target, or names an entity or
                relation this index does not hold (naming it and the query id).
        """
        qs = ds.split(split)  # type: ignore[arg-type]
        heads = np.empty(len(qs), dtype=np.int64)
        rels = np.empty(len(qs), dtype=np.int64)
        tails = np.empty(len(qs), dtype=np.int64)
        known: list[IntArray] = []
        for i, q in enumerate(qs):
            if "head" not in q.meta or "relation" not in q.meta:
                raise ValueError(f"query {q.id!r} is not a KG tail query: its meta lacks 'head'/'relation'")
            truth = ds.truth[q.id]
            if not truth.needed:
                raise ValueError(f"query {q.id!r} has no target tail (truth.needed is empty)")
            heads[i] = self._entity(q.meta["head"], q.id, "head")
            tails[i] = self._entity(truth.needed[0], q.id, "tail")
            rel = str(q.meta["relation"])
            if rel not in self.relation_index:
                raise ValueError(f"query {q.id!r}: relation {rel!r} is not a relation of this KGIndex")
            rels[i] = self.relation_index[rel]
            known.append(
                np.fromiter((self._entity(a, q.id, "answer") for a in truth.answers), dtype=np.int64)
            )
        return QueryBatch(
            ids=tuple(q.id for q in qs),
            heads=heads,
            relations=rels,
            tails=tails,
            known=tuple(known),
            num_entities=self.num_entities,
        )

    def _entity(self, entity: object, query_id: str, role: str) -> int:
        try:
            return self.entity_index[str(entity)]
        except KeyError:
            raise ValueError(
                f"query {query_id!r}: {role} entity {entity!r} is not an entity of the graph"
            ) from None


def filtered_ranks(scores: npt.NDArray[np.floating] | torch.Tensor, batch: QueryBatch) -> FloatArray:
    """The filtered rank of each query's target tail (see the module docstring for the tie rule).

    Vectorised: counts over the whole row, then subtracts the counts over the (few) known tails, so no
    ``[B, N]`` mask is built. CPU inputs are counted with numpy, CUDA tensors on their device.

    Args:
        scores: one score per entity for each query, higher is better, ``-inf`` for never reached. Shape
            ``[B, N]``, float (numpy or torch, any device).
        batch: the queries the rows answer, in the same order.

    Returns:
        Ranks, ``>= 1``, half-integers for ties, ``inf`` for a target scored ``-inf``. Shape ``[B]``,
        float64.

    Raises:
        ValueError: ``scores`` is not ``[len(batch), N]`` (naming both shapes), ``N`` differs from
            ``batch.num_entities``, a tail lies outside ``[0, N)``, or a score is NaN.
    """
    s: npt.NDArray[np.floating] | torch.Tensor
    if isinstance(scores, torch.Tensor):
        s = scores.detach()
        if s.device.type == "cpu":  # numpy's comparisons are several times faster than torch's on CPU
            s = s.numpy()
    else:
        s = np.asarray(scores)
    b = len(batch)
    if s.ndim != 2 or s.shape[0] != b:
        raise ValueError(
            f"scores must have shape [B, N] = [{b}, N] for a batch of {b} queries, got {tuple(s.shape)}"
        )
    n = int(s.shape[1])
    if batch.num_entities is not None and n != batch.num_entities:
        raise ValueError(
            f"scores have shape {tuple(s.shape)} but the batch ranks over {batch.num_entities} entities: "
            f"expected [{b}, {batch.num_entities}]"
        )
    if b == 0:
        return np.zeros(0, dtype=np.float64)
    lengths = np.fromiter((len(k) for k in batch.known), dtype=np.int64, count=b)
    rows = np.repeat(np.arange(b, dtype=np.int64), lengths)
    cols = np.concatenate(batch.known)
    worst = int(max(cols.max(), batch.tails.max()))
    if worst >= n:
        raise ValueError(f"a target or known tail index {worst} is outside the {n} scored entities")
    if isinstance(s, torch.Tensor):
        if not torch.is_floating_point(s):
            s = s.to(torch.float64)
        nan_rows = torch.isnan(s).any(dim=1).cpu().numpy()
        target_t = s.gather(1, torch.from_numpy(batch.tails).to(s.device)[:, None])
        greater = (s > target_t).sum(dim=1).cpu().numpy()
        equal = (s == target_t).sum(dim=1).cpu().numpy()
        known_scores = s[torch.from_numpy(rows).to(s.device), torch.from_numpy(cols).to(s.device)]
        known_scores_np = known_scores.cpu().numpy()
        target = target_t[:, 0].cpu().numpy()
    else:
        if not np.issubdtype(s.dtype, np.floating):
            s = s.astype(np.float64)
        nan_rows = np.isnan(s).any(axis=1)
        target = s[np.arange(b), batch.tails]
        greater = np.count_nonzero(s > target[:, None], axis=1)
        equal = np.count_nonzero(s == target[:, None], axis=1)
        known_scores_np = s[rows, cols]
    if nan_rows.any():
        row = int(np.flatnonzero(nan_rows)[0])
        raise ValueError(f"scores hold NaN (first in row {row}, query {batch.ids[row]!r})")
    # Subtract the known tails' counts. ``known`` holds the target itself, which also removes the
    # target's tie with itself.
    t_rows = target[rows]
    greater = greater - np.bincount(rows, weights=known_scores_np > t_rows, minlength=b)
    equal = equal - np.bincount(rows, weights=known_scores_np == t_rows, minlength=b)
    ranks = 1.0 + greater.astype(np.float64) + 0.5 * equal.astype(np.float64)
    ranks[target == -np.inf] = np.inf
    return ranks


def ranking_metrics(ranks: npt.ArrayLike) -> dict[str, float]:
    """Hits@1/3/10 and MRR of filtered ranks, as fractions in ``[0, 1]``.

    ``hits@k`` is the share of ranks ``<= k``; ``mrr`` the mean of ``1 / rank`` (a miss, rank ``inf``,
    adds 0).

    Raises:
        ValueError: no ranks, or a rank is NaN or below 1.
    """
    r = np.asarray(ranks, dtype=np.float64).reshape(-1)
    if r.size == 0:
        raise ValueError("ranking_metrics needs at least one rank, got none")
    if np.isnan(r).any() or (r < 1).any():
        bad = r[np.isnan(r) | (r < 1)][0]
        raise ValueError(f"ranks must be >= 1 (inf for a miss), got {bad}")
    out = {f"hits@{k}": float(np.mean(r <= k)) for k in HITS_AT}
    out["mrr"] = float(np.mean(1.0 / r))
    return out


def evaluate_scores(
    score_fn: Callable[[IntArray, IntArray], npt.NDArray[np.floating] | torch.Tensor],
    batch: QueryBatch,
    batch_size: int = 256,
) -> dict[str, float]:
    """Score every query of ``batch`` with ``score_fn`` in chunks and return its filtered metrics.

    Args:
        score_fn: ``(heads [b], relations [b]) -> scores [b, N]`` (higher is better, ``-inf`` for
            never reached). It sees heads and relations only, never targets or filter sets.
        batch: the queries, e.g. ``KGIndex.queries(ds, "test")``.
        batch_size: queries per ``score_fn`` call.

    Returns:
        ``hits@1``, ``hits@3``, ``hits@10``, ``mrr`` (fractions), ``n`` (queries) and ``misses``
        (targets scored ``-inf``).

    Raises:
        ValueError: ``batch_size < 1``, an empty batch, or a bad score matrix (see :func:`filtered_ranks`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if len(batch) == 0:
        raise ValueError("evaluate_scores needs at least one query, got an empty batch")
    ranks = []
    with torch.no_grad():
        for start in range(0, len(batch), batch_size):
            sub = batch.take(slice(start, start + batch_size))
            ranks.append(filtered_ranks(score_fn(sub.heads, sub.relations), sub))
    r = np.concatenate(ranks)
    return {**ranking_metrics(r), "n": len(r), "misses": int(np.isinf(r).sum())}
