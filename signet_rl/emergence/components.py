"""Bridges, principles and health as components the bandit trainer and the service switch on by config.

:func:`after_training` is what ``signet_rl.train`` runs when ``emergence.bridges``, ``emergence.principles``
or ``emergence.health`` is on (all off by default): over the run's graph and its feedback log it

- finds **bridges** at ingest (:func:`~signet_rl.emergence.bridges.find_bridges` over every attribute) and
  feeds the tracker the ratings the log holds *across* each bridge (:func:`bridge_ratings`): a rated shown
  path holding one end's attribute, for a query that entered at the other end's entity;
- detects **principles** (:func:`~signet_rl.emergence.principles.detect_principles`) and adds them to the
  graph, proposed;
- judges **entity and community health** from the training-period feedback and plans the pruning
  (:func:`~signet_rl.emergence.health.plan_pruning`); the cold moves themselves happen offline on a store
  copy (:func:`~signet_rl.emergence.cold.move_to_cold`), never here.

:meth:`EmergenceOutcome.write` puts the result in the run folder's ``emergence/`` (``health.csv``,
``communities.csv``, ``pruning.json``, ``bridges.json``, ``principles.json``), which ``describe`` and the
constellation picture read. Users still set no weights: the trackers move only on ratings, principles only
on confirm, reject and correct.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from signet_rl.core.types import Query
from signet_rl.emergence.bridges import Bridge, BridgeTracker, find_bridges
from signet_rl.emergence.config import BridgeParams, EmergenceConfig, PrincipleParams
from signet_rl.emergence.health import PruningPlan, community_health, entity_health, plan_pruning
from signet_rl.emergence.principles import (
    META_KEY,
    Principle,
    add_principles,
    detect_principles,
    detect_value_principles,
)
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.text.encoders import Encoder
from signet_rl.traversal.path import Hop, HopKind, PathError
from signet_rl.traversal.path import Path as TPath

__all__ = ["FOLDER", "BridgeTargets", "EmergenceOutcome", "after_training", "bridge_candidates",
           "bridge_ratings", "entity_statuses", "find_principles", "read_outcome"]

#: The run folder's sub-folder for the outcome.
FOLDER = "emergence"


def _attribute_hops(text: str) -> set[str]:
    try:
        path = TPath.parse(text)
    except PathError:
        return set()
    return {h.id for h in path.hops if h.kind is HopKind.ATTRIBUTE}


def bridge_candidates(graph: KnowledgeGraph, params: BridgeParams,
                      encoder: Encoder | None = None) -> list[Bridge]:
    """The ingest check over every attribute with ``params``' thresholds (:func:`find_bridges`)."""
    return find_bridges(graph, None, encoder=encoder, min_similarity=params.min_similarity,
                        min_lexical=params.min_lexical, mutual_top=params.mutual_top,
                        variant_overlap=params.variant_overlap, max_copies=params.max_copies)


def find_principles(graph: KnowledgeGraph, params: PrincipleParams,
                    encoder: Encoder | None = None) -> list[Principle]:
    """:func:`detect_principles` (or :func:`detect_value_principles` when ``params.detector`` is
    ``values``) with ``params``' settings (shared by the trainer and the service)."""
    if params.detector == "values":
        return detect_value_principles(
            graph, encoder=encoder, min_communities=params.min_communities, stem_prefix=params.stem_prefix,
            max_df=params.max_df, min_z=params.min_z,
            variant_overlap=0.4 if params.variant_overlap is None else params.variant_overlap,
            community_source=params.community_source, skip_names=params.skip_names,
            skip_templates=params.skip_templates,
            **({} if params.pattern is None else {"pattern": params.pattern}))
    return detect_principles(graph, encoder=encoder, min_communities=params.min_communities,
                             min_similarity=params.min_similarity, min_lexical=params.min_lexical,
                             min_tightness=params.min_tightness, variant_overlap=params.variant_overlap,
                             community_source=params.community_source,
                             **({} if params.pattern is None else {"pattern": params.pattern}))


class BridgeTargets:
    """Bridge candidates as explorer targets *inside* the training loop (``emergence.bridge.
    target_explorers``): the trainer calls it with a query and its entry entities and puts the first path
    it returns in the explorer slot, so the slot's rating lands on the bridge during training and the log
    carries it (with its propensity, like any explorer slot) for :func:`bridge_ratings`.

    A target is the far end's bridge attribute as a path ``E:far > A:aspect > T:attribute`` for a
    candidate with one end among the entries. Bridges that join *two* of the query's entries come first
    (nothing else connects them, and a query naming both asks how they relate), then by similarity.
    """

    def __init__(self, graphs: dict[str, KnowledgeGraph], bridges: dict[str, list[Bridge]],
                 k: int = 2) -> None:
        self.k = k
        self.by_entity: dict[str, dict[str, list[tuple[float, str, TPath]]]] = {}
        for gid, graph in graphs.items():
            aspect = dict(zip(graph.attributes["id"], graph.attributes["aspect_id"], strict=True))
            ends: dict[str, list[tuple[float, str, TPath]]] = {}
            for b in bridges.get(gid, []):
                for near, far, attr in ((b.entity_a, b.entity_b, b.attribute_b),
                                        (b.entity_b, b.entity_a, b.attribute_a)):
                    path = TPath((Hop(HopKind.ENTITY, far), Hop(HopKind.ASPECT, str(aspect[attr])),
                                  Hop(HopKind.ATTRIBUTE, attr)), strategy="relate", explorer=True)
                    ends.setdefault(near, []).append((b.similarity, far, path))
            self.by_entity[gid] = ends

    def __call__(self, query: Query, entries: list[str] | tuple[str, ...]) -> list[TPath]:
        ends = self.by_entity.get(query.graph_id, {})
        inside = set(entries)
        found = [(far in inside, sim, path) for e in dict.fromkeys(entries)
                 for sim, far, path in ends.get(e, [])]
        found.sort(key=lambda t: (not t[0], -t[1], t[2].serialise()))
        return [p for _, _, p in found[: self.k]]


def bridge_ratings(tracker: BridgeTracker, records: Iterable[FeedbackRecord]) -> list[tuple[str, int]]:
    """``(bridge_id, rating)`` for every rating in ``records`` that crossed a tracked bridge, in log order.

    A shown, rated path crosses a bridge when it holds one end's attribute and the query entered at the
    other end's entity (``context["entries"]``): the explorer walked to the far side and the user rated
    what it found there. Each path counts once per bridge.
    """
    ends: dict[str, list[tuple[str, str]]] = {}  # attribute -> [(bridge id, the other end's entity)]
    for bid, s in tracker.states.items():
        ends.setdefault(s.bridge.attribute_a, []).append((bid, s.bridge.entity_b))
        ends.setdefault(s.bridge.attribute_b, []).append((bid, s.bridge.entity_a))
    out: list[tuple[str, int]] = []
    for rec in records:
        entries = set(rec.context.get("entries", []))
        for item, rating in zip(rec.shown, rec.ratings, strict=True):
            if rating is None:
                continue
            seen: set[str] = set()
            for attr in _attribute_hops(rec.candidates[item]):
                for bid, other in ends.get(attr, []):
                    if other in entries and bid not in seen:
                        seen.add(bid)
                        out.append((bid, int(rating)))
    return out


@dataclass
class EmergenceOutcome:
    """What :func:`after_training` found; ``graph`` carries promoted bridge edges and principles."""

    config: EmergenceConfig
    graph: KnowledgeGraph
    health: pd.DataFrame | None = None
    communities: pd.DataFrame | None = None
    pruning: PruningPlan | None = None
    bridges: BridgeTracker | None = None
    principles: list[dict[str, Any]] = field(default_factory=list)

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write the outcome under ``folder/emergence/`` (only the parts switched on); returns that path."""
        out = Path(folder) / FOLDER
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps({"enabled": list(self.config.enabled)}, indent=1))
        if self.health is not None:
            self.health.to_csv(out / "health.csv", index=False)
        if self.communities is not None:
            self.communities.to_csv(out / "communities.csv", index=False)
        if self.pruning is not None:  # the input of ``python -m signet_rl.emergence prune``
            self.pruning.save(out / "pruning.json")
        if self.bridges is not None:
            (out / "bridges.json").write_text(self.bridges.to_json())
        if self.config.principles:
            (out / "principles.json").write_text(json.dumps(self.principles, indent=1))
        return out


def after_training(config: EmergenceConfig, graph: KnowledgeGraph, records: Iterable[FeedbackRecord], *,
                   until: pd.Timestamp | str | None, encoder: Encoder | None = None,
                   at: pd.Timestamp | None = None, bridges: list[Bridge] | None = None) -> EmergenceOutcome:
    """Run the switched-on mechanisms over a training run's graph and feedback log (module docstring).

    Args:
        config: the switches and thresholds; with none of bridges, principles, health on, nothing runs.
        graph: the graph the run walked.
        records: its feedback log.
        until: the end of the training period (health and pruning use feedback up to it only).
        encoder: bridges' and principles' text encoder (the hashing encoder by default).
        at: the timestamp of new edges and principle entities (now by default).
        bridges: the candidates found at ingest when the run already has them (the explorer targets'),
            else they are found here.
    """
    records = list(records)
    out = EmergenceOutcome(config=config, graph=graph)
    if config.health:
        t = config.health_thresholds
        out.health = entity_health(graph, records, until=until, thresholds=t)
        out.communities = community_health(graph, out.health, t)
        out.pruning = plan_pruning(graph, records, until=until, thresholds=t)
    if config.bridges:
        b = config.bridge
        tracker = BridgeTracker(promote_after=b.promote_after, climb_after=b.climb_after,
                                fade_after=b.fade_after, promote_reason=b.promote_reason)
        tracker.add(bridge_candidates(graph, b, encoder) if bridges is None else bridges)
        g = out.graph
        for bid, rating in bridge_ratings(tracker, records):
            if tracker.states[bid].status != "faded":
                g = tracker.rate(g, bid, rating, at=at)
        out.graph, out.bridges = g, tracker
    if config.principles:
        p = config.principle
        found = find_principles(out.graph, p, encoder)
        out.graph = add_principles(out.graph, found, encoder=encoder, at=at)
        out.principles = [{k: v for k, v in rec.items() if k != "embedding"}
                          for rec in out.graph.meta.get(META_KEY, {}).values()]
    return out


def read_outcome(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """What a run folder's ``emergence/`` holds, as plain data (empty when the run had none switched on):
    ``enabled``, ``health`` (status counts), ``communities`` (status counts), ``pruning`` (the plan),
    ``bridges`` (status counts and the promoted ones), ``principles`` (the records)."""
    base = Path(folder) / FOLDER
    if not base.is_dir():
        return {}
    out: dict[str, Any] = {}
    if (base / "config.json").is_file():
        out["enabled"] = json.loads((base / "config.json").read_text())["enabled"]
    if (base / "health.csv").is_file():
        h = pd.read_csv(base / "health.csv")
        out["health"] = {str(k): int(v) for k, v in h["status"].value_counts().sort_index().items()}
    if (base / "communities.csv").is_file():
        c = pd.read_csv(base / "communities.csv")
        out["communities"] = {str(k): int(v) for k, v in c["status"].value_counts().sort_index().items()}
    if (base / "pruning.json").is_file():
        out["pruning"] = json.loads((base / "pruning.json").read_text())
    if (base / "bridges.json").is_file():
        tracker = BridgeTracker.from_json((base / "bridges.json").read_text())
        states = list(tracker.states.values())
        out["bridges"] = {
            "by_status": {s: sum(x.status == s for x in states) for s in ("candidate", "promoted", "faded")},
            "promoted": [{**asdict(x.bridge), "positive": x.positive, "negative": x.negative,
                          "dependency_id": x.dependency_id} for x in states if x.status == "promoted"],
        }
    if (base / "principles.json").is_file():
        out["principles"] = json.loads((base / "principles.json").read_text())
    return out


def entity_statuses(folder: str | os.PathLike[str]) -> dict[str, str]:
    """``entity id -> health status`` from a run folder's ``emergence/health.csv`` (empty without one)."""
    path = Path(folder) / FOLDER / "health.csv"
    if not path.is_file():
        return {}
    h = pd.read_csv(path, usecols=["entity_id", "status"], dtype=str)
    return dict(zip(h["entity_id"], h["status"], strict=True))
