"""Traversal budgets: a validated, frozen :class:`TraversalConfig` (docs/design.md §8).

    >>> cfg = TraversalConfig.from_dict({"max_branching": 3})
    >>> cfg.max_branching, cfg.max_paths, cfg.to_dict()["min_confidence"]
    (3, 50, 0.5)

Per-dataset overrides live in the dataset's Hydra config, as a ``traversal:`` block
(``conf/dataset/synthetic.yaml``); pass it to :meth:`TraversalConfig.from_dict`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signet_rl.core.checks import check_integer, check_probability

__all__ = ["TraversalConfig"]


@dataclass(frozen=True)
class TraversalConfig:
    """Budgets of one bounded walk.

    Attributes:
        max_branching: dependency edges followed from one entity (the best by edge weight), >= 1.
        max_paths: candidate paths returned per query, >= 1.
        min_path_length: paths with fewer hops after the start entity are dropped, >= 0. Paths to an
            entry entity's own facts (entity -> aspect -> attributes) are exempt: the *what*, *action*
            and *changed* strategies need them whatever this is set to.
        min_confidence: dependency edges with a lower confidence are never walked, in [0, 1].
        max_depth: dependency hops from an entry entity, >= 0 (0: the entry's own facts only).
        constraint_budget_chars: characters of constraints of non-entry entities in scope (Signet's
            1,000); an entry entity's own constraints always surface, whatever their length. >= 0.
        max_aspects: aspects of one entity walked, >= 1.
        max_attributes_per_aspect: latest attributes of one aspect put on a path, >= 1.
        floor: hybrid entry: the flat retriever's hits (``best_flat`` by default) are candidates as
            length-0 paths, in its ranking: the floor, so the candidates never hold less than flat.
        session: hybrid entry: session-DAG steps from the floor's top hits (neighbouring turns, the same
            session, the next and previous session; :mod:`signet_rl.traversal.session`).
        entity_walks: hybrid entry: co-mention walks from the entry entities and the hits' entities to the
            memories that mention them (and one dependency hop further).
        graph_walk: the intent's strategy walk over aspects and attributes (the original traversal).
        max_floor_paths: most floor candidates (best_flat's units, in its order).
        floor_budget_factor: floor candidates are taken while their text fits this many budgets.
        session_anchors: session steps start from this many of the floor's best hits.
        session_window: ``turn`` steps reach this many turns either side of an anchor.
        session_paths: most session candidates (the steps whose turns are most similar to the query).
        walk_paths: most entity-walk candidates.
        walk_memories_per_entity: memories one entity contributes to the entity walks.
        candidate_chars_factor: candidate text is capped at this many budgets (at most 10).
        session_source: where session steps read the session DAG: ``tags`` (the memories'
            ``session_<n>`` tags), ``graph`` (the extractor's session entities and ``next_session`` edges)
            or ``auto`` (the graph's when it has session entities, else the tags').
        floor_share: with the floor ranked first (the non-learned desire retriever), the share of the
            budget the floor is guaranteed, in flat's order; the rest goes to every remaining candidate
            (floor, session and walk units alike) in the scorer's order. 1.0: the floor first throughout.
            A setting chosen on validation (``experiments/hybrid_split.py``).
        floor_keep: with a learned scorer (which ranks every candidate itself), the share of the budget
            that keeps ``best_flat``'s head in flat's order: the floor units that fit ``floor_keep × budget``
            are injected first, and the scorer's order fills the rest from every other candidate. Training
            rates only those others (the units that compete for the rest of the budget). 0: off (the scorer
            ranks everything). Ignored by the non-learned scorers (``floor_share`` is theirs).
        density: with a learned scorer, inject the candidates (below ``floor_keep``'s head) by score per
            character of their text, the value density a character budget rewards (candidates scored 0 or
            less follow, in score order). False: by score.
        aspect_chunks: when the walk ranks facts by query relevance, an entry entity's aspect holding more
            than ``max_attributes_per_aspect`` current facts yields up to this many paths, the next most
            relevant facts on each (a speaker's hundreds of observations need more than one path), >= 1.
            Without relevance an aspect yields one path.
    """

    max_branching: int = 4
    max_paths: int = 50
    min_path_length: int = 2
    min_confidence: float = 0.5
    max_depth: int = 3
    constraint_budget_chars: int = 1000
    max_aspects: int = 5
    max_attributes_per_aspect: int = 8
    aspect_chunks: int = 1
    floor: bool = False
    session: bool = False
    entity_walks: bool = False
    graph_walk: bool = True
    max_floor_paths: int = 20
    floor_budget_factor: float = 1.5
    session_anchors: int = 5
    session_window: int = 3
    session_paths: int = 15
    walk_paths: int = 15
    walk_memories_per_entity: int = 3
    candidate_chars_factor: float = 10.0
    session_source: str = "auto"
    floor_share: float = 1.0
    floor_keep: float = 0.0
    density: bool = False

    @property
    def hybrid(self) -> bool:
        """Whether any hybrid-entry piece (floor, session steps, entity walks) is on."""
        return self.floor or self.session or self.entity_walks

    def __post_init__(self) -> None:
        ints = {
            "max_branching": (1, None),
            "max_paths": (1, None),
            "min_path_length": (0, None),
            "max_depth": (0, 10),
            "constraint_budget_chars": (0, None),
            "max_aspects": (1, None),
            "max_attributes_per_aspect": (1, None),
            "aspect_chunks": (1, None),
            "max_floor_paths": (0, None),
            "session_anchors": (0, None),
            "session_window": (0, None),
            "session_paths": (0, None),
            "walk_paths": (0, None),
            "walk_memories_per_entity": (1, None),
        }
        for name, (lo, hi) in ints.items():
            check_integer(f"TraversalConfig.{name}", getattr(self, name), lo, hi)
        check_probability("TraversalConfig.min_confidence", self.min_confidence)
        for name in ("floor", "session", "entity_walks", "graph_walk"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"TraversalConfig.{name} must be true or false, got {getattr(self, name)!r}")
        for name, hi in (("floor_budget_factor", 10.0), ("candidate_chars_factor", 10.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= hi:
                raise ValueError(f"TraversalConfig.{name} must be a number in (0, {hi:g}], got {value!r}")
        if self.session_source not in ("tags", "graph", "auto"):
            raise ValueError(
                "TraversalConfig.session_source must be one of tags, graph, auto, "
                f"got {self.session_source!r}"
            )
        for name in ("floor_share", "floor_keep"):
            fs = getattr(self, name)
            if isinstance(fs, bool) or not isinstance(fs, int | float) or not 0 <= fs <= 1:
                raise ValueError(f"TraversalConfig.{name} must be a number in [0, 1], got {fs!r}")
        if self.hybrid and self.max_paths > 50:
            raise ValueError(
                f"TraversalConfig.max_paths is {self.max_paths}; the hybrid entry (floor, session, "
                "entity_walks) allows at most 50 candidates per query"
            )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> TraversalConfig:
        """Build from a plain mapping (a Hydra/OmegaConf node converted with ``to_container``).

        Raises:
            ValueError: an unknown key (naming it and the known ones) or a bad value.
        """
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"TraversalConfig: unknown keys {unknown}; known: {sorted(known)}")
        for key in ("min_confidence", "floor_budget_factor", "candidate_chars_factor", "floor_share"):
            if isinstance(values.get(key), int) and not isinstance(values[key], bool):
                values[key] = float(values[key])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON- and Hydra-friendly)."""
        return dataclasses.asdict(self)
