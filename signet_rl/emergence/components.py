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

from signet_rl.emergence.bridges import BridgeTracker, find_bridges
from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.health import PruningPlan, community_health, entity_health, plan_pruning
from signet_rl.emergence.principles import META_KEY, add_principles, detect_principles
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.text.encoders import Encoder
from signet_rl.traversal.path import HopKind, PathError
from signet_rl.traversal.path import Path as TPath

__all__ = ["FOLDER", "EmergenceOutcome", "after_training", "bridge_ratings", "entity_statuses",
           "read_outcome"]

#: The run folder's sub-folder for the outcome.
FOLDER = "emergence"


def _attribute_hops(text: str) -> set[str]:
    try:
        path = TPath.parse(text)
    except PathError:
        return set()
    return {h.id for h in path.hops if h.kind is HopKind.ATTRIBUTE}


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
        if self.pruning is not None:
            p = self.pruning
            (out / "pruning.json").write_text(json.dumps({
                "until": None if p.until is None else p.until.isoformat(), "unused": list(p.unused),
                "sick": list(p.sick), "kept": p.kept}, indent=1))
        if self.bridges is not None:
            (out / "bridges.json").write_text(self.bridges.to_json())
        if self.config.principles:
            (out / "principles.json").write_text(json.dumps(self.principles, indent=1))
        return out


def after_training(config: EmergenceConfig, graph: KnowledgeGraph, records: Iterable[FeedbackRecord], *,
                   until: pd.Timestamp | str | None, encoder: Encoder | None = None,
                   at: pd.Timestamp | None = None) -> EmergenceOutcome:
    """Run the switched-on mechanisms over a training run's graph and feedback log (module docstring).

    Args:
        config: the switches and thresholds; with none of bridges, principles, health on, nothing runs.
        graph: the graph the run walked.
        records: its feedback log.
        until: the end of the training period (health and pruning use feedback up to it only).
        encoder: bridges' and principles' text encoder (the hashing encoder by default).
        at: the timestamp of new edges and principle entities (now by default).
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
                                fade_after=b.fade_after)
        tracker.add(find_bridges(graph, None, encoder=encoder, min_similarity=b.min_similarity,
                                 min_lexical=b.min_lexical))
        g = out.graph
        for bid, rating in bridge_ratings(tracker, records):
            if tracker.states[bid].status != "faded":
                g = tracker.rate(g, bid, rating, at=at)
        out.graph, out.bridges = g, tracker
    if config.principles:
        p = config.principle
        found = detect_principles(out.graph, encoder=encoder, min_communities=p.min_communities,
                                  min_similarity=p.min_similarity, min_lexical=p.min_lexical)
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
