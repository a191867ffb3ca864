"""Impact analysis: which entities depend on an entity, and how directly.

A dependency ``A —uses→ B`` means A depends on B, so a change to B reaches A. From an entity, the entities
that depend on it are found by walking dependency edges *into* it (sources whose edges target it),
transitively, breadth first over the CSR arrays, one numpy frontier per depth. Each entity lands in the
shallowest tier it is reached at:

====  ==================
tier  meaning
====  ==================
1     will break
2     likely affected
3     may need testing
====  ==================

Only edges with ``confidence >= min_confidence`` (0.7 by default: single-memory evidence or better) are
followed. Cycles are safe (an entity is visited once; the start is never reported).

    >>> from signet_rl.graph.model import Dependency, Entity, KnowledgeGraph
    >>> g = KnowledgeGraph.from_records(
    ...     entities=[Entity(id=i, name=i) for i in "abc"],
    ...     dependencies=[Dependency(id="d0", source_entity_id="b", target_entity_id="a",
    ...                              dependency_type="uses", confidence=0.9),
    ...                   Dependency(id="d1", source_entity_id="c", target_entity_id="b",
    ...                              dependency_type="requires", confidence=0.8)])
    >>> impact(g, "a")
    {1: ['b'], 2: ['c'], 3: []}
"""

from __future__ import annotations

import numpy as np

from signet_rl.core.checks import check_integer, check_probability
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph

__all__ = ["IMPACT_TIERS", "impact", "impact_report"]

#: Tier -> what it means.
IMPACT_TIERS: dict[int, str] = {1: "will break", 2: "likely affected", 3: "may need testing"}


def _arrays(graph: GraphArrays | KnowledgeGraph) -> GraphArrays:
    return graph if isinstance(graph, GraphArrays) else GraphArrays.from_graph(graph)


def impact(
    graph: GraphArrays | KnowledgeGraph, entity_id: str, min_confidence: float = 0.7, max_depth: int = 3,
) -> dict[int, list[str]]:
    """The entities that depend on ``entity_id``, by depth tier.

    Args:
        graph: the in-memory arrays (a :class:`KnowledgeGraph` is converted once, at some cost).
        entity_id: the entity that changes.
        min_confidence: follow only edges at least this confident, in [0, 1].
        max_depth: how many dependency steps to follow (tiers ``1..max_depth``), at least 1.

    Returns:
        ``{depth: [entity ids]}`` for every depth ``1..max_depth`` (empty lists included), each entity in
        its shallowest tier only, in entity-row order within a tier.

    Raises:
        KeyError: ``entity_id`` is not an entity (named).
        ValueError: ``min_confidence`` outside [0, 1] or ``max_depth`` below 1.
    """
    check_probability("min_confidence", min_confidence)
    check_integer("max_depth", max_depth, 1)
    ga = _arrays(graph)
    try:
        start = ga.entity_index[entity_id]
    except KeyError:
        raise KeyError(f"no entity with id {entity_id!r}") from None
    # Incoming slots (this entity is the edge's target) that are confident enough; confidence is stored
    # as float32, so compare against the threshold at the same precision.
    follow = (ga.dep_direction == -1) & (ga.dep_confidence >= np.float32(min_confidence))
    visited = np.zeros(ga.num_entities, dtype=bool)
    visited[start] = True
    frontier = np.array([start], dtype=np.int64)
    tiers: dict[int, list[str]] = {}
    for depth in range(1, max_depth + 1):
        if len(frontier):
            slots, _ = ga.frontier_slots(frontier)
            reached = np.unique(ga.dep_neighbor[slots[follow[slots]]])
            frontier = reached[~visited[reached]]
            visited[frontier] = True
        tiers[depth] = ga.entity_ids[frontier].tolist()
    return tiers


def impact_report(
    graph: KnowledgeGraph, entity_id: str, min_confidence: float = 0.7, max_depth: int = 3,
    arrays: GraphArrays | None = None,
) -> dict[str, list[str]]:
    """:func:`impact` with tiers by their meaning and entities by name.

    Returns:
        e.g. ``{"will break": ["signet-api"], "likely affected": [...], "may need testing": [...]}``;
        tiers beyond 3 are labelled ``depth N``.
    """
    tiers = impact(arrays if arrays is not None else graph, entity_id, min_confidence, max_depth)
    names = dict(zip(graph.entities["id"].tolist(), graph.entities["name"].tolist(), strict=True))
    return {IMPACT_TIERS.get(d, f"depth {d}"): [names[e] for e in ids] for d, ids in tiers.items()}
