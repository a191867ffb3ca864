"""The fast in-memory view of a knowledge graph: flat numpy arrays (CSR) for hot loops.

:class:`GraphArrays` is built once from a :class:`~signet_rl.graph.model.KnowledgeGraph` with
:meth:`GraphArrays.from_graph` (vectorised: ``lexsort``, ``bincount``, ``cumsum``; no per-edge
Python) and then read by traversal, environments and scorers. Rows are addressed by *index*:
entity ``i`` is row ``i`` of ``graph.entities``, dependency ``e`` is row ``e`` of
``graph.dependencies``, and so on for aspects, attributes and memories. ``-1`` stands for NULL.

The dependency CSR holds every edge twice, once in each direction, so a walk can follow it either
way::

    >>> from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph
    >>> g = KnowledgeGraph.from_records(
    ...     entities=[Entity(id="a", name="a"), Entity(id="b", name="b"), Entity(id="c", name="c")],
    ...     dependencies=[
    ...         Dependency(id="d0", source_entity_id="a", target_entity_id="b",
    ...                    dependency_type="uses", strength=0.5, confidence=0.9,
    ...                    reason="multi-memory"),
    ...         Dependency(id="d1", source_entity_id="c", target_entity_id="a",
    ...                    dependency_type="informs", strength=1.0, confidence=0.7),
    ...     ],
    ... )
    >>> ga = GraphArrays.from_graph(g)
    >>> nb = ga.neighbors(ga.entity_index["a"])
    >>> nb.neighbor.tolist(), nb.direction.tolist()    # c->a scores 0.7, a->b scores 0.45
    ([2, 1], [-1, 1])

Within each entity's row, slots are ordered by ``confidence × strength`` descending (ties by
dependency row, then outgoing before incoming), so a traversal with branching budget ``k`` takes
the first ``k``.

All arrays are read-only: a :class:`GraphArrays` is a snapshot. Build a new one when the graph
changes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.graph.confidence import reason_codes
from signet_rl.graph.model import AttributeKind, AttributeStatus, KnowledgeGraph, to_timestamp

if TYPE_CHECKING:
    from torch_geometric.data import Data, HeteroData

__all__ = ["ATTR_KINDS", "ATTR_STATUSES", "GraphArrays", "Neighbors"]

IntArray = npt.NDArray[np.int64]
Int8Array = npt.NDArray[np.int8]
Int32Array = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]

#: ``attr_kind`` codes: index -> kind.
ATTR_KINDS: tuple[str, ...] = (AttributeKind.ATTRIBUTE.value, AttributeKind.CONSTRAINT.value)
#: ``attr_status`` codes: index -> status.
ATTR_STATUSES: tuple[str, ...] = (
    AttributeStatus.ACTIVE.value, AttributeStatus.SUPERSEDED.value, AttributeStatus.DELETED.value,
)

#: What may be passed as a query time: epoch seconds, or anything :func:`to_timestamp` parses.
TimeLike: TypeAlias = float | int | str | pd.Timestamp | np.datetime64


class Neighbors(NamedTuple):
    """The dependency slots of one entity, as views into :class:`GraphArrays` (no copies).

    Every field has shape ``[deg]`` (the entity's in-degree plus out-degree) and is ordered by
    ``confidence × strength`` descending.
    """

    neighbor: IntArray
    edge: IntArray
    direction: Int8Array
    type: Int32Array
    strength: FloatArray
    confidence: FloatArray
    reason: Int8Array


@dataclass(frozen=True, eq=False)
class GraphArrays:
    """A knowledge graph as flat arrays: entity index, a two-way dependency CSR, aspect/attribute
    and mention index arrays. Build with :meth:`from_graph`.

    Sizes: ``N`` entities, ``E`` dependencies, ``A`` aspects, ``T`` attributes (``T'`` of them with
    an aspect), ``K`` memories, ``M`` mentions. Index arrays are ``int64``; ``-1`` is NULL.

    Attributes:
        entity_ids: entity ids in frame order. Shape ``[N]``, object (str).
        entity_index: entity id -> index into ``entity_ids`` (a read-only dict, built once).
        entity_type: code into ``entity_type_vocab``. Shape ``[N]``, int32.
        entity_type_vocab: the distinct ``entity_type`` strings, sorted.
        entity_mentions: Signet's ``entities.mentions`` counter. Shape ``[N]``, int64.
        entity_pinned: Shape ``[N]``, bool.
        dep_indptr: CSR row pointer over entities: entity ``i``'s slots are
            ``dep_indptr[i]:dep_indptr[i + 1]``. Shape ``[N + 1]``.
        dep_neighbor: the entity at the other end of each slot. Shape ``[2E]``.
        dep_edge: the dependency row of each slot. Shape ``[2E]``.
        dep_direction: ``+1`` when the slot's entity is the edge's source (outgoing), ``-1`` when
            it is the target (incoming). A self-loop has one slot of each. Shape ``[2E]``, int8.
        dep_type: code into ``dep_type_vocab``. Shape ``[2E]``, int32.
        dep_type_vocab: the distinct ``dependency_type`` strings, sorted.
        dep_strength: Shape ``[2E]``, float32.
        dep_confidence: Shape ``[2E]``, float32.
        dep_reason: ladder rung of the edge's ``reason``
            (:data:`~signet_rl.graph.confidence.LADDER`). Shape ``[2E]``, int8.
        edge_ids: dependency ids in frame order. Shape ``[E]``, object (str).
        edge_source: source entity of each dependency. Shape ``[E]``.
        edge_target: target entity of each dependency. Shape ``[E]``.
        edge_type: Shape ``[E]``, int32 (codes into ``dep_type_vocab``).
        edge_strength: Shape ``[E]``, float32.
        edge_confidence: Shape ``[E]``, float32.
        edge_reason: Shape ``[E]``, int8 ladder rungs.
        edge_aspect: the aspect a dependency is scoped to, or -1. Shape ``[E]``.
        edge_created: ``created_at`` in epoch seconds. Shape ``[E]``, float64.
        aspect_ids: aspect ids in frame order. Shape ``[A]``, object (str).
        aspect_entity: the entity each aspect belongs to. Shape ``[A]``.
        aspect_weight: Shape ``[A]``, float32.
        ent_aspect_indptr: CSR row pointer, entity -> its aspects. Shape ``[N + 1]``.
        ent_aspect: aspect indices, each entity's ordered by weight descending (ties by aspect row).
            Shape ``[A]``.
        attribute_ids: attribute ids in frame order. Shape ``[T]``, object (str).
        attr_aspect: each attribute's aspect, or -1 when ``aspect_id`` is NULL (unclassified).
            Shape ``[T]``.
        attr_entity: each attribute's entity through its aspect, or -1 when unclassified.
            Shape ``[T]``.
        aspect_attr_indptr: CSR row pointer, aspect -> its attributes. Shape ``[A + 1]``.
        aspect_attr: attribute indices, each aspect's in attribute-row order. Shape ``[T']``.
        attr_kind: 0 attribute, 1 constraint (:data:`ATTR_KINDS`). Shape ``[T]``, int8.
        attr_status: 0 active, 1 superseded, 2 deleted (:data:`ATTR_STATUSES`). Shape ``[T]``, int8.
        attr_importance: Shape ``[T]``, float32.
        attr_created: ``created_at`` in epoch seconds. Shape ``[T]``, float64.
        attr_superseded_by: index of the attribute that superseded this one, or -1. Shape ``[T]``.
        attr_memory: index of the memory the attribute was extracted from, or -1. Shape ``[T]``.
        memory_ids: memory ids in frame order. Shape ``[K]``, object (str).
        memory_created: ``created_at`` in epoch seconds. Shape ``[K]``, float64.
        memory_deleted: ``is_deleted``. Shape ``[K]``, bool.
        memory_importance: Shape ``[K]``, float32.
        ent_mem_indptr: CSR row pointer, entity -> memories that mention it. Shape ``[N + 1]``.
        ent_mem: memory indices, each entity's ascending. Shape ``[M]``.
        mem_ent_indptr: CSR row pointer, memory -> entities it mentions. Shape ``[K + 1]``.
        mem_ent: entity indices, each memory's ascending. Shape ``[M]``.
        entity_community: each entity's community, as a row of ``graph.communities``, or -1 when it
            belongs to none (no communities detected yet; see :mod:`signet_rl.graph.communities`). An
            entity in several communities gets the lowest ``level``'s (ties: the first row). Shape ``[N]``.
    """

    entity_ids: ObjArray
    entity_index: Mapping[str, int]
    entity_type: Int32Array
    entity_type_vocab: tuple[str, ...]
    entity_mentions: IntArray
    entity_pinned: BoolArray

    dep_indptr: IntArray
    dep_neighbor: IntArray
    dep_edge: IntArray
    dep_direction: Int8Array
    dep_type: Int32Array
    dep_type_vocab: tuple[str, ...]
    dep_strength: FloatArray
    dep_confidence: FloatArray
    dep_reason: Int8Array

    edge_ids: ObjArray
    edge_source: IntArray
    edge_target: IntArray
    edge_type: Int32Array
    edge_strength: FloatArray
    edge_confidence: FloatArray
    edge_reason: Int8Array
    edge_aspect: IntArray
    edge_created: Float64Array

    aspect_ids: ObjArray
    aspect_entity: IntArray
    aspect_weight: FloatArray
    ent_aspect_indptr: IntArray
    ent_aspect: IntArray

    attribute_ids: ObjArray
    attr_aspect: IntArray
    attr_entity: IntArray
    aspect_attr_indptr: IntArray
    aspect_attr: IntArray
    attr_kind: Int8Array
    attr_status: Int8Array
    attr_importance: FloatArray
    attr_created: Float64Array
    attr_superseded_by: IntArray
    attr_memory: IntArray

    memory_ids: ObjArray
    memory_created: Float64Array
    memory_deleted: BoolArray
    memory_importance: FloatArray
    ent_mem_indptr: IntArray
    ent_mem: IntArray
    mem_ent_indptr: IntArray
    mem_ent: IntArray
    entity_community: IntArray

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def from_graph(cls, graph: KnowledgeGraph) -> GraphArrays:
        """Build the arrays from a graph's frames, vectorised.

        Args:
            graph: a graph whose references resolve (as :meth:`KnowledgeGraph.validate` checks).

        Returns:
            The arrays; row ``i`` of every per-entity array is row ``i`` of ``graph.entities``
            (likewise for dependencies, aspects, attributes and memories).

        Raises:
            ValueError: a reference does not resolve (a graph built with ``validate=False``),
                naming the table, the column and the first bad value.
        """
        ents, deps, asps = graph.entities, graph.dependencies, graph.aspects
        attrs, mems, ments = graph.attributes, graph.memories, graph.mentions
        n, n_asp, n_mem = len(ents), len(asps), len(mems)

        # Arrays that could be views of the frames are copied, so the snapshot owns its memory.
        entity_ids = ents["id"].to_numpy(dtype=object, copy=True)
        ent_idx = pd.Index(entity_ids, dtype=object)
        asp_idx = pd.Index(asps["id"].to_numpy(dtype=object), dtype=object)
        attr_idx = pd.Index(attrs["id"].to_numpy(dtype=object), dtype=object)
        mem_idx = pd.Index(mems["id"].to_numpy(dtype=object), dtype=object)
        entity_type, entity_type_vocab = _factorize(ents["entity_type"])

        # Dependencies: per-edge arrays, then two slots per edge sorted into a CSR.
        src = _lookup(ent_idx, deps["source_entity_id"], "entity_dependencies", "source_entity_id")
        dst = _lookup(ent_idx, deps["target_entity_id"], "entity_dependencies", "target_entity_id")
        edge_type, dep_type_vocab = _factorize(deps["dependency_type"])
        strength64 = deps["strength"].to_numpy(dtype=np.float64)
        confidence64 = deps["confidence"].to_numpy(dtype=np.float64)
        edge_reason = _reason_codes(deps["reason"])
        n_edges = len(deps)
        rows = np.arange(n_edges, dtype=np.int64)
        slot_node = np.concatenate([src, dst])
        slot_edge = np.concatenate([rows, rows])
        slot_dir = np.concatenate([np.ones(n_edges, np.int8), np.full(n_edges, -1, np.int8)])
        score = confidence64 * strength64
        # lexsort: the last key is the primary one.
        order = np.lexsort((-slot_dir, slot_edge, -np.concatenate([score, score]), slot_node))
        dep_edge = slot_edge[order]
        dep_indptr = _indptr(slot_node, n)

        # Aspects, each entity's by weight descending.
        aspect_entity = _lookup(ent_idx, asps["entity_id"], "entity_aspects", "entity_id")
        weight = asps["weight"].to_numpy(dtype=np.float64)
        ent_aspect = np.lexsort((np.arange(n_asp), -weight, aspect_entity)).astype(np.int64)

        # Attributes.
        attr_aspect = _lookup(asp_idx, attrs["aspect_id"], "entity_attributes", "aspect_id",
                              nullable=True)
        has_aspect = attr_aspect >= 0
        attr_entity = np.full(len(attrs), -1, dtype=np.int64)
        attr_entity[has_aspect] = aspect_entity[attr_aspect[has_aspect]]
        classified = np.flatnonzero(has_aspect)
        aspect_attr = classified[np.argsort(attr_aspect[classified], kind="stable")]

        # Mentions, both ways.
        ment_mem = _lookup(mem_idx, ments["memory_id"], "memory_entity_mentions", "memory_id")
        ment_ent = _lookup(ent_idx, ments["entity_id"], "memory_entity_mentions", "entity_id")

        return cls(
            entity_ids=entity_ids,
            entity_index=MappingProxyType(dict(zip(entity_ids.tolist(), range(n), strict=True))),
            entity_type=entity_type,
            entity_type_vocab=entity_type_vocab,
            entity_mentions=ents["mentions"].to_numpy(dtype=np.int64, copy=True),
            entity_pinned=ents["pinned"].to_numpy(dtype=bool, copy=True),
            dep_indptr=dep_indptr,
            dep_neighbor=np.concatenate([dst, src])[order],
            dep_edge=dep_edge,
            dep_direction=slot_dir[order],
            dep_type=edge_type[dep_edge],
            dep_type_vocab=dep_type_vocab,
            dep_strength=strength64.astype(np.float32)[dep_edge],
            dep_confidence=confidence64.astype(np.float32)[dep_edge],
            dep_reason=edge_reason[dep_edge],
            edge_ids=deps["id"].to_numpy(dtype=object, copy=True),
            edge_source=src,
            edge_target=dst,
            edge_type=edge_type,
            edge_strength=strength64.astype(np.float32),
            edge_confidence=confidence64.astype(np.float32),
            edge_reason=edge_reason,
            edge_aspect=_lookup(asp_idx, deps["aspect_id"], "entity_dependencies", "aspect_id",
                                nullable=True),
            edge_created=_epoch_seconds(deps["created_at"]),
            aspect_ids=asp_idx.to_numpy(dtype=object, copy=True),
            aspect_entity=aspect_entity,
            aspect_weight=weight.astype(np.float32),
            ent_aspect_indptr=_indptr(aspect_entity, n),
            ent_aspect=ent_aspect,
            attribute_ids=attr_idx.to_numpy(dtype=object, copy=True),
            attr_aspect=attr_aspect,
            attr_entity=attr_entity,
            aspect_attr_indptr=_indptr(attr_aspect[classified], n_asp),
            aspect_attr=aspect_attr,
            attr_kind=_codes(attrs["kind"], ATTR_KINDS, "entity_attributes", "kind"),
            attr_status=_codes(attrs["status"], ATTR_STATUSES, "entity_attributes", "status"),
            attr_importance=attrs["importance"].to_numpy(dtype=np.float32),
            attr_created=_epoch_seconds(attrs["created_at"]),
            attr_superseded_by=_lookup(attr_idx, attrs["superseded_by"], "entity_attributes",
                                       "superseded_by", nullable=True),
            attr_memory=_lookup(mem_idx, attrs["memory_id"], "entity_attributes", "memory_id",
                                nullable=True),
            memory_ids=mem_idx.to_numpy(dtype=object, copy=True),
            memory_created=_epoch_seconds(mems["created_at"]),
            memory_deleted=mems["is_deleted"].to_numpy(dtype=bool, copy=True),
            memory_importance=mems["importance"].to_numpy(dtype=np.float32),
            ent_mem_indptr=_indptr(ment_ent, n),
            ent_mem=ment_mem[np.lexsort((ment_mem, ment_ent))],
            mem_ent_indptr=_indptr(ment_mem, n_mem),
            mem_ent=ment_ent[np.lexsort((ment_ent, ment_mem))],
            entity_community=_entity_community(graph, ent_idx),
        )

    # -- sizes -------------------------------------------------------------------------------------

    @property
    def num_entities(self) -> int:
        """``N``."""
        return len(self.entity_ids)

    @property
    def num_dependencies(self) -> int:
        """``E`` (the CSR holds ``2E`` slots)."""
        return len(self.edge_source)

    @property
    def num_aspects(self) -> int:
        """``A``."""
        return len(self.aspect_ids)

    @property
    def num_attributes(self) -> int:
        """``T``."""
        return len(self.attribute_ids)

    @property
    def num_memories(self) -> int:
        """``K``."""
        return len(self.memory_ids)

    @property
    def num_mentions(self) -> int:
        """``M``."""
        return len(self.ent_mem)

    def degree(self) -> IntArray:
        """In-degree plus out-degree of every entity (a self-loop counts twice). Shape ``[N]``."""
        return np.diff(self.dep_indptr)

    # -- lookups -----------------------------------------------------------------------------------

    def neighbors(self, entity: int) -> Neighbors:
        """The dependency slots of entity index ``entity``, best first (views, no copies)."""
        lo, hi = int(self.dep_indptr[entity]), int(self.dep_indptr[entity + 1])
        return Neighbors(
            self.dep_neighbor[lo:hi], self.dep_edge[lo:hi], self.dep_direction[lo:hi],
            self.dep_type[lo:hi], self.dep_strength[lo:hi], self.dep_confidence[lo:hi],
            self.dep_reason[lo:hi],
        )

    def frontier_slots(self, entities: npt.ArrayLike,
                       k: int | None = None) -> tuple[IntArray, IntArray]:
        """The best ``k`` dependency slots of every entity in a frontier, at once (no Python loop).

        Args:
            entities: entity indices, shape ``[F]`` (repeats allowed).
            k: slots per entity (a branching budget); all of them when None.

        Returns:
            ``(slots, owner)``: slot indices into the ``dep_*`` arrays, each entity's best first,
            and the position in ``entities`` each slot belongs to. Shapes ``[S]`` and ``[S]``.
        """
        ents = np.asarray(entities, dtype=np.int64).reshape(-1)
        lo = self.dep_indptr[ents]
        count = self.dep_indptr[ents + 1] - lo
        if k is not None:
            count = np.minimum(count, k)
        owner = np.repeat(np.arange(len(ents), dtype=np.int64), count)
        first = np.cumsum(count) - count  # where each entity's run starts in the output
        slots = np.arange(int(count.sum()), dtype=np.int64) - first[owner] + lo[owner]
        return slots, owner

    def aspects_of(self, entity: int) -> IntArray:
        """Aspect indices of entity index ``entity``, by weight descending (a view)."""
        return self.ent_aspect[self.ent_aspect_indptr[entity]:self.ent_aspect_indptr[entity + 1]]

    def attributes_of(self, aspect: int) -> IntArray:
        """Attribute indices under aspect index ``aspect``, in attribute-row order (a view)."""
        return self.aspect_attr[self.aspect_attr_indptr[aspect]:self.aspect_attr_indptr[aspect + 1]]

    def memories_of(self, entity: int) -> IntArray:
        """Indices of the memories that mention entity index ``entity``, ascending (a view)."""
        return self.ent_mem[self.ent_mem_indptr[entity]:self.ent_mem_indptr[entity + 1]]

    def entities_of(self, memory: int) -> IntArray:
        """Indices of the entities memory index ``memory`` mentions, ascending (a view)."""
        return self.mem_ent[self.mem_ent_indptr[memory]:self.mem_ent_indptr[memory + 1]]

    def indices(self, entity_ids: Any) -> IntArray:
        """Entity indices of an iterable of entity ids.

        Raises:
            KeyError: naming the first id that is not an entity.
        """
        try:
            return np.fromiter((self.entity_index[i] for i in entity_ids), dtype=np.int64)
        except KeyError as exc:
            raise KeyError(f"no entity with id {exc.args[0]!r}") from None

    # -- time --------------------------------------------------------------------------------------

    def visible_attributes(self, t: TimeLike) -> BoolArray:
        """Which attributes existed at time ``t`` (``created_at <= t``): a query may only see those.

        Status columns describe the graph as stored; an attribute superseded by a row created after
        ``t`` was still current at ``t``.

        Args:
            t: epoch seconds, or anything :func:`~signet_rl.graph.model.to_timestamp` parses.

        Returns:
            A mask of shape ``[T]``.
        """
        return self.attr_created <= _to_epoch(t)

    def visible_dependencies(self, t: TimeLike) -> BoolArray:
        """Which dependencies existed at time ``t`` (``created_at <= t``), per edge: shape ``[E]``.
        Index it with ``dep_edge`` for a per-slot mask (``[2E]``)."""
        return self.edge_created <= _to_epoch(t)

    def visible_memories(self, t: TimeLike) -> BoolArray:
        """Which memories existed at time ``t`` (``created_at <= t``), deleted or not (see
        ``memory_deleted``). Returns a mask of shape ``[K]``."""
        return self.memory_created <= _to_epoch(t)

    # -- PyTorch Geometric -------------------------------------------------------------------------

    def entity_features(self) -> FloatArray:
        """Numeric entity features: one-hot ``entity_type`` and ``pinned``.

        The one-hot columns follow this graph's ``entity_type_vocab``; map codes to a shared vocab
        before comparing features across graphs. The ``mentions`` counter is left out: it counts
        mentions over all time, so at a past query time it would leak the future.

        Shapes:
            output: ``[N, len(entity_type_vocab) + 1]``, float32.
        """
        onehot = np.zeros((self.num_entities, len(self.entity_type_vocab)), np.float32)
        onehot[np.arange(self.num_entities), self.entity_type] = 1.0
        pinned = self.entity_pinned.astype(np.float32).reshape(self.num_entities, 1)
        return np.concatenate([onehot, pinned], axis=1)

    def to_pyg(self) -> Data:
        """The entity/dependency graph as a homogeneous :class:`torch_geometric.data.Data`.

        Shapes:
            x: ``[N, F]`` (:meth:`entity_features`), edge_index: ``[2, E]`` (source -> target, in
            dependency-row order), edge_type: ``[E]`` (codes into ``dep_type_vocab``), edge_attr:
            ``[E, 2]`` (strength, confidence), edge_reason: ``[E]``, entity_type: ``[N]``.
        """
        torch, data_mod = _import_pyg()
        data = data_mod.Data(
            x=_tensor(torch, self.entity_features()),
            edge_index=_tensor(torch, np.stack([self.edge_source, self.edge_target])),
            edge_type=_tensor(torch, self.edge_type.astype(np.int64)),
            edge_attr=_tensor(torch, np.stack([self.edge_strength, self.edge_confidence], axis=1)),
            edge_reason=_tensor(torch, self.edge_reason.astype(np.int64)),
            entity_type=_tensor(torch, self.entity_type.astype(np.int64)),
            num_nodes=self.num_entities,
        )
        return data

    def to_hetero(self) -> HeteroData:
        """The graph as a :class:`torch_geometric.data.HeteroData` over entities, aspects,
        attributes and memories.

        Node features are plain numeric columns, never labels: entity as :meth:`entity_features`;
        aspect ``[weight]``; attribute ``[importance, is_constraint, is_superseded, is_deleted]``;
        memory ``[importance, is_deleted]``. Status and deletion flags describe the graph as
        stored; a learner that answers past queries must mask them by time itself.

        Shapes:
            entity.x: ``[N, F]``, aspect.x: ``[A, 1]``, attribute.x: ``[T, 4]``,
            memory.x: ``[K, 2]``;
            (entity, depends_on, entity).edge_index ``[2, E]`` with edge_type ``[E]`` and edge_attr
            ``[E, 2]``; (entity, has_aspect, aspect).edge_index ``[2, A]``;
            (aspect, has_attribute, attribute).edge_index ``[2, T']``;
            (memory, mentions, entity).edge_index ``[2, M]``.
        """
        torch, data_mod = _import_pyg()
        t = self.num_attributes
        data = data_mod.HeteroData()
        data["entity"].x = _tensor(torch, self.entity_features())
        data["entity"].entity_type = _tensor(torch, self.entity_type.astype(np.int64))
        data["entity"].num_nodes = self.num_entities
        data["aspect"].x = _tensor(torch, self.aspect_weight.reshape(-1, 1))
        data["aspect"].num_nodes = self.num_aspects
        data["attribute"].x = _tensor(torch, np.stack([
            self.attr_importance, (self.attr_kind == 1).astype(np.float32),
            (self.attr_status == 1).astype(np.float32), (self.attr_status == 2).astype(np.float32),
        ], axis=1).reshape(t, 4))
        data["attribute"].num_nodes = t
        data["memory"].x = _tensor(torch, np.stack(
            [self.memory_importance, self.memory_deleted.astype(np.float32)], axis=1,
        ).reshape(self.num_memories, 2))
        data["memory"].num_nodes = self.num_memories

        dep = data["entity", "depends_on", "entity"]
        dep.edge_index = _tensor(torch, np.stack([self.edge_source, self.edge_target]))
        dep.edge_type = _tensor(torch, self.edge_type.astype(np.int64))
        dep.edge_attr = _tensor(torch, np.stack([self.edge_strength, self.edge_confidence], axis=1))
        dep.edge_reason = _tensor(torch, self.edge_reason.astype(np.int64))
        data["entity", "has_aspect", "aspect"].edge_index = _tensor(
            torch, np.stack([self.aspect_entity, np.arange(self.num_aspects, dtype=np.int64)]))
        aspect_of_slot = np.repeat(np.arange(self.num_aspects, dtype=np.int64),
                                   np.diff(self.aspect_attr_indptr))
        data["aspect", "has_attribute", "attribute"].edge_index = _tensor(
            torch, np.stack([aspect_of_slot, self.aspect_attr]))
        memory_of_slot = np.repeat(np.arange(self.num_memories, dtype=np.int64),
                                   np.diff(self.mem_ent_indptr))
        data["memory", "mentions", "entity"].edge_index = _tensor(
            torch, np.stack([memory_of_slot, self.mem_ent]))
        return data

    def __repr__(self) -> str:
        return (f"GraphArrays(entities={self.num_entities}, dependencies={self.num_dependencies}, "
                f"aspects={self.num_aspects}, attributes={self.num_attributes}, "
                f"memories={self.num_memories}, mentions={self.num_mentions})")


# --------------------------------------------------------------------------------------------------
# Helpers


def _indptr(rows: IntArray, n: int) -> IntArray:
    """CSR row pointer for items whose row is ``rows`` (rows in ``[0, n)``). Shape ``[n + 1]``."""
    out = np.zeros(n + 1, dtype=np.int64)
    if len(rows):
        np.cumsum(np.bincount(rows, minlength=n), out=out[1:])
    return out


def _lookup(index: pd.Index, values: pd.Series, table: str, column: str,
            nullable: bool = False) -> IntArray:
    """Positions of ``values`` in ``index`` (-1 for NULL when ``nullable``), vectorised."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    raw = values.to_numpy(dtype=object)
    present = ~pd.isna(raw)
    pos = np.full(len(values), -1, dtype=np.int64)
    if present.any():
        # An object-dtype target: pandas would otherwise convert both sides to arrow strings.
        found = index.get_indexer(pd.Index(raw[present], dtype=object))
        bad = found < 0
        if bad.any():
            first = raw[present][np.flatnonzero(bad)[0]]
            raise ValueError(f"{table}: column {column!r} refers to {first!r}, which does not "
                             f"exist ({int(bad.sum())} such rows)")
        pos[present] = found
    if not nullable and not present.all():
        row = int(np.flatnonzero(~present)[0])
        raise ValueError(f"{table}: column {column!r} is NULL in row {row}")
    return pos


def _entity_community(graph: KnowledgeGraph, ent_idx: pd.Index) -> IntArray:
    """Each entity's community row (lowest level first, then first row), or -1."""
    out = np.full(len(ent_idx), -1, dtype=np.int64)
    members, comms = graph.community_members, graph.communities
    if len(members) == 0:
        return out
    com_idx = pd.Index(comms["id"].to_numpy(dtype=object), dtype=object)
    ent = _lookup(ent_idx, members["entity_id"], "community_members", "entity_id")
    com = _lookup(com_idx, members["community_id"], "community_members", "community_id")
    level = comms["level"].to_numpy(dtype=np.int64)[com]
    order = np.lexsort((com, level, ent))
    first = np.unique(ent[order], return_index=True)[1]
    out[ent[order][first]] = com[order][first]
    return out


def _factorize(values: pd.Series) -> tuple[Int32Array, tuple[str, ...]]:
    """Codes into the sorted distinct values."""
    codes, uniques = pd.factorize(values.to_numpy(dtype=object), sort=True)
    return codes.astype(np.int32), tuple(str(u) for u in uniques)


def _codes(values: pd.Series, vocab: tuple[str, ...], table: str, column: str) -> Int8Array:
    """Codes of ``values`` in a fixed ``vocab``."""
    codes = pd.Index(vocab, dtype=object).get_indexer(pd.Index(values.to_numpy(dtype=object),
                                                               dtype=object))
    if (codes < 0).any():
        bad = values.iat[int(np.flatnonzero(codes < 0)[0])]
        raise ValueError(f"{table}: unknown {column} {bad!r}; expected one of: {', '.join(vocab)}")
    return codes.astype(np.int8)


def _reason_codes(values: pd.Series) -> Int8Array:
    """Ladder rungs of reason strings: validate the distinct values once, then broadcast."""
    codes, uniques = pd.factorize(values.to_numpy(dtype=object))
    return reason_codes(list(uniques))[codes] if len(values) else np.zeros(0, np.int8)


def _epoch_seconds(values: pd.Series) -> Float64Array:
    """Timestamps as float64 epoch seconds (NaN for NaT)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.float64)
    ts = values if isinstance(values.dtype, pd.DatetimeTZDtype) else to_timestamp(values)
    raw = ts.dt.tz_convert(None).to_numpy(dtype="datetime64[ms]")
    out = raw.view(np.int64).astype(np.float64) / 1000.0
    out[np.isnat(raw)] = np.nan
    return out


def _to_epoch(t: TimeLike) -> float:
    """A query time as epoch seconds, at the millisecond precision of the stored timestamps."""
    if isinstance(t, int | float | np.integer | np.floating) and not isinstance(t, bool):
        return float(t)
    return float(_epoch_seconds(to_timestamp(pd.Series([t])))[0])


def _import_pyg() -> tuple[Any, Any]:
    """Import torch and ``torch_geometric.data``; PyG's import-time ``torch.jit.script`` deprecation
    warning (torch >= 2.10) is not ours to act on, so it is silenced for the import only."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated",
                                category=DeprecationWarning)
        import torch_geometric.data as data_mod
    return torch, data_mod


def _tensor(torch: Any, array: npt.NDArray[Any]) -> Any:
    """A torch tensor owning a copy of ``array`` (the arrays are read-only, tensors are not)."""
    return torch.from_numpy(np.array(array, copy=True))
