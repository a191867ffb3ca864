"""Explorers that walk into cold territory inside the training loop, and bring back what earns a rating.

A run whose graph was pruned (the entities of a :class:`~signet_rl.emergence.health.PruningPlan` in the
cold tier) walks only the hot part (:class:`~signet_rl.emergence.cold.ColdSplit`). With
``emergence.rediscovery`` on, the trainer's explorer slot may go to a **cold path**: a step from a hot
entity the query reached (an entry, or an entity on a walked candidate path) across a cold dependency to a
cold entity, and on to the facts of one of its aspects::

    E:<hot> > D±:<cold dependency> > E:<cold entity> > A:<its aspect> > T:<fact> > T:<fact> ...

:class:`ColdExplorer` picks it from what a deployed system has: the frontier's structure (which cold
dependencies touch the entities the query reached) and the query's similarity to the cold entity's facts
(the cosine of the query's vector and the vector of the fact's entity name, aspect name and content, from the
run's encoder: a query about a pruned entity names it, and entry search cannot land on it). It never reads
ground truth.
The best-matching fact's aspect is walked, its facts in order of similarity (at most
:attr:`RediscoveryParams.facts`); a candidate below :attr:`RediscoveryParams.min_similarity` is not
proposed, and the slot falls to the other explorers. Time is the walk's: a cold path holds only what a walk
at the query's time could see (dependencies and entities created by then, facts current then:
:func:`~signet_rl.traversal.walk.current_attributes`), so a future fact is never shown.

The trainer shows the cold path in the explorer slot with propensity 1 (an explorer slot is filled
deterministically once the quota allows it), constructs its memory from the full graph, and the simulated
rater rates it like any other slate item. A **positive** rating brings the cold entity back
(:meth:`ColdExplorer.rate`: :meth:`ColdSplit.restore`, and the trainer re-indexes the graph its policy
walks, with the learned edge statistics carried over by dependency id); a zero, negative or missing rating
leaves it cold. Until it is restored, a cold path never reaches the scorer's update nor the edge
statistics (their arrays do not hold its rows); it is in the feedback log, with its rating.

On a Signet store the same decision is :func:`~signet_rl.emergence.cold.rate_cold` on an offline copy
(``python -m signet_rl.emergence restore``); :attr:`ColdExplorer.restored` lists what to restore there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import Query
from signet_rl.emergence.cold import ColdSplit, ColdTierError
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph, to_timestamp
from signet_rl.text.encoders import Encoder
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Hop, HopKind, Path
from signet_rl.traversal.walk import current_attributes, query_time, successor_created

__all__ = ["REDISCOVERY_V3", "ColdExplorer", "RediscoveryParams"]


@dataclass(frozen=True)
class RediscoveryParams:
    """How cold explorers choose (``emergence.rediscover``; only read with ``emergence.rediscovery`` on).

    Attributes:
        plan: a saved pruning plan (:meth:`~signet_rl.emergence.health.PruningPlan.save`) whose entities
            the training run starts with in the cold tier (``signet_rl.train``; None: the caller builds the
            :class:`ColdExplorer` with its own cold sets).
        min_similarity: the query-to-fact cosine at or above which a cold path is proposed.
        facts: most facts of the cold aspect on a path (the walk's ``max_attributes_per_aspect``).
        reach: the hot entities a cold step may start from: ``entries`` (the query's entry entities),
            ``walk`` (those and every entity on the query's walked candidate paths) or ``frontier`` (any hot
            entity with a cold neighbour: the cold facts are searched by the query, as entry search
            searches the hot ones; a step from a reached entity is preferred when there are several).
        max_misses: a cold entity whose cold paths were rated zero or negative this many times is not
            proposed again (None: no limit); an unrated path is no miss.
    """

    plan: str | None = None
    min_similarity: float = 0.0
    facts: int = 8
    reach: str = "walk"
    max_misses: int | None = None

    def __post_init__(self) -> None:
        if self.max_misses is not None and (isinstance(self.max_misses, bool) or
                                            not isinstance(self.max_misses, int) or self.max_misses < 1):
            raise ValueError(f"RediscoveryParams.max_misses must be None or an integer >= 1, got "
                             f"{self.max_misses!r}")
        if not -1.0 <= self.min_similarity <= 1.0:
            raise ValueError(f"RediscoveryParams.min_similarity must be in [-1, 1], got "
                             f"{self.min_similarity!r}")
        if isinstance(self.facts, bool) or not isinstance(self.facts, int) or self.facts < 1:
            raise ValueError(f"RediscoveryParams.facts must be an integer >= 1, got {self.facts!r}")
        if self.reach not in ("entries", "walk", "frontier"):
            raise ValueError(f"RediscoveryParams.reach must be 'entries', 'walk' or 'frontier', got "
                             f"{self.reach!r}")


#: The cold explorers' settings chosen on synthetic v3 medium's validation seed 11 (the issue's-rule plan; the
#: most later queries shown a pruned fact they need: docs/results.md, "Rediscovery"). Not the defaults: chosen
#: with the hashing encoder's cosines. ``+emergence.rediscover.reach=frontier``
#: ``+emergence.rediscover.max_misses=1`` set them for a training run.
REDISCOVERY_V3 = RediscoveryParams(reach="frontier", min_similarity=0.0, max_misses=1)


def _unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


class _ColdFacts:
    """The cold entities' facts of one graph (deleted ones left out): ids, aspects, owners, unit vectors,
    and what :meth:`visible` needs to apply the walk's time rule (the graph's arrays; when each dependency and
    entity was created)."""

    def __init__(self, graph: KnowledgeGraph, cold: Iterable[str], encoder: Encoder) -> None:
        a = self.arrays = GraphArrays.from_graph(graph)
        cold_idx = np.fromiter((a.entity_index[e] for e in set(cold) if e in a.entity_index), dtype=np.int64)
        keep = np.isin(a.attr_entity, cold_idx) & (a.attr_aspect >= 0) & (a.attr_status != 2)
        self.rows = np.flatnonzero(keep).astype(np.int64)
        self.successor = successor_created(a)[self.rows]
        self.ids = [str(x) for x in a.attribute_ids[self.rows]]
        self.aspects = [str(a.aspect_ids[x]) for x in a.attr_aspect[self.rows]]
        self.owners = [str(a.entity_ids[x]) for x in a.attr_entity[self.rows]]
        content = graph.attributes.set_index("id")["content"]
        # what a query about the fact would name: its entity, its aspect, its content
        names = graph.entities.set_index("id")["name"]
        aspect_names = graph.aspects.set_index("id")["name"]
        texts = [f"{names.get(e, '')} {aspect_names.get(asp, '')} {'' if pd.isna(c) else c}" for e, asp, c in
                 zip(self.owners, self.aspects, content.reindex(self.ids).tolist(), strict=True)]
        self.vectors = _unit(encoder.encode(texts)) if texts else np.zeros((0, 1), np.float32)
        self.by_entity: dict[str, list[int]] = {}
        for i, e in enumerate(self.owners):
            self.by_entity.setdefault(e, []).append(i)
        self.dep_created = dict(zip(graph.dependencies["id"].astype(str),
                                    _epochs(graph.dependencies.get("created_at")), strict=True))
        self.entity_created = dict(zip(graph.entities["id"].astype(str),
                                       _epochs(graph.entities.get("created_at")), strict=True))

    def visible(self, t: float) -> np.ndarray:
        """Which facts are current at ``t`` (the walk's rule, :func:`~signet_rl.traversal.walk.\
current_attributes`): created by then, not deleted, not superseded by then."""
        return current_attributes(self.arrays, self.rows, t, self.successor)


def _epochs(values: pd.Series | None) -> list[float]:
    """Creation times in epoch seconds (-inf where a row has none: it is visible at any time)."""
    if values is None:
        return []
    ts = to_timestamp(values)
    seconds = ((ts - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64)
    return np.where(np.isnan(seconds), -np.inf, seconds).tolist()


class ColdExplorer:
    """Cold paths for the trainer's explorer slot, and the restores their ratings earn (module docstring).

    Args:
        graphs: each graph's **full** graph (hot and cold rows), by graph id.
        cold: each graph's cold entities (graphs not named have none).
        params: how paths are chosen.
        encoder: the query and fact encoder (None: the trainer binds its retriever's).

    Attributes:
        splits: each graph's current :class:`~signet_rl.emergence.cold.ColdSplit`.
        events: one record per rated (or unrated) cold path shown: ``step``, ``graph_id``, ``query_id``,
            ``entity_id``, ``path`` (serialised), ``rating``, ``restored``.
    """

    def __init__(self, graphs: Mapping[str, KnowledgeGraph], cold: Mapping[str, Iterable[str]],
                 params: RediscoveryParams = RediscoveryParams(), encoder: Encoder | None = None) -> None:
        unknown = sorted(set(cold) - set(graphs))
        if unknown:
            raise ValueError(f"cold entities given for graph {unknown[0]!r}, which the dataset does not have")
        self.params = params
        self.encoder = encoder
        self.splits = {gid: ColdSplit(graphs[gid], ids) for gid, ids in cold.items()}
        self.initial = {gid: sorted(s.cold) for gid, s in self.splits.items()}
        self.events: list[dict[str, Any]] = []
        self._misses: dict[tuple[str, str], int] = {}
        self._facts: dict[str, _ColdFacts] = {}
        self._frontier: dict[str, dict[str, list[tuple[str, str, int]]]] = {}
        self._builders: dict[str, MemoryBuilder] = {}

    # -- what the trainer reads ----------------------------------------------------------------------

    def hot(self, graph_id: str) -> KnowledgeGraph:
        """The graph the policy walks now."""
        return self.splits[graph_id].hot

    @property
    def restored(self) -> dict[str, list[str]]:
        """Per graph, the entities brought back so far, in the order their ratings came."""
        out: dict[str, list[str]] = {}
        for e in self.events:
            if e["restored"]:
                out.setdefault(e["graph_id"], []).append(e["entity_id"])
        return out

    def builder(self, graph_id: str) -> MemoryBuilder:
        """Constructs a cold path's memory (from the full graph: its rows are not in the hot one), with the
        retriever's settings (:func:`~signet_rl.pipeline.desire.memory_builder`)."""
        from signet_rl.pipeline.desire import memory_builder

        if graph_id not in self._builders:
            self._builders[graph_id] = memory_builder(self.splits[graph_id].full)
        return self._builders[graph_id]

    def is_cold(self, graph_id: str, path: Path) -> bool:
        """Whether ``path`` reaches an entity that is cold now."""
        split = self.splits.get(graph_id)
        return split is not None and any(h.kind is HopKind.ENTITY and h.id in split.cold for h in path.hops)

    def cold_entity(self, graph_id: str, path: Path) -> str | None:
        """The cold entity ``path`` steps into (None for a path that reaches none)."""
        split = self.splits.get(graph_id)
        if split is None:
            return None
        return next((h.id for h in path.hops if h.kind is HopKind.ENTITY and h.id in split.cold), None)

    def _facts_of(self, graph_id: str) -> _ColdFacts:
        if graph_id not in self._facts:
            if self.encoder is None:
                raise ValueError("ColdExplorer has no encoder; the trainer binds its retriever's")
            split = self.splits[graph_id]
            self._facts[graph_id] = _ColdFacts(split.full, self.initial[graph_id], self.encoder)
        return self._facts[graph_id]

    def _frontier_of(self, graph_id: str) -> dict[str, list[tuple[str, str, int]]]:
        if graph_id not in self._frontier:
            by_hot: dict[str, list[tuple[str, str, int]]] = {}
            for dep, hot, cold, direction in self.splits[graph_id].frontier():
                by_hot.setdefault(hot, []).append((dep, cold, direction))
            self._frontier[graph_id] = by_hot
        return self._frontier[graph_id]

    def paths(self, query: Query, entries: Sequence[str], walked: Sequence[Path],
              query_vector: np.ndarray, k: int = 1) -> list[Path]:
        """Up to ``k`` cold paths for ``query``, best first (module docstring): from the entities the query
        reached, across a cold dependency, to the cold entity's best-matching aspect and its facts."""
        gid = query.graph_id
        if gid not in self.splits or not self.splits[gid].cold:
            return []
        reached = list(dict.fromkeys(entries))
        if self.params.reach != "entries":
            reached += [h.id for p in walked for h in p.hops if h.kind is HopKind.ENTITY]
        frontier = self._frontier_of(gid)
        if self.params.reach == "frontier":  # reached entities first, then every other hot entity
            reached += list(frontier)
        facts = self._facts_of(gid)
        # what the walk would see at the query's time: dependencies and entities created by then, facts
        # current then
        t = query_time(query.timestamp)
        steps = [(hot, dep, cold, d) for hot in dict.fromkeys(reached)
                 for dep, cold, d in frontier.get(hot, [])
                 if facts.dep_created.get(dep, -np.inf) <= t and facts.entity_created.get(cold, -np.inf) <= t]
        if not steps:
            return []
        visible = facts.visible(t)
        qv = np.asarray(query_vector, dtype=np.float32)
        norm = float(np.linalg.norm(qv))
        qv = qv / norm if norm > 0 else qv
        sims_all = facts.vectors @ qv
        best: dict[str, tuple[float, int]] = {}  # cold entity -> (best cosine, its fact's row)
        limit = self.params.max_misses
        for _, _, cold, _ in steps:
            if cold in best or cold not in facts.by_entity:
                continue
            if limit is not None and self._misses.get((gid, cold), 0) >= limit:
                continue
            rows = [i for i in facts.by_entity[cold] if visible[i]]
            if not rows:
                continue
            top = int(np.argmax(sims_all[rows]))
            best[cold] = (float(sims_all[rows[top]]), rows[top])
        out: list[tuple[float, str, Path]] = []
        seen: set[str] = set()
        for hot, dep, cold, d in steps:
            if cold in seen or cold not in best or best[cold][0] < self.params.min_similarity:
                continue
            seen.add(cold)
            sim, row = best[cold]
            aspect = facts.aspects[row]
            same = [i for i in facts.by_entity[cold] if facts.aspects[i] == aspect and visible[i]]
            order = sorted(same, key=lambda i: (-float(sims_all[i]), facts.ids[i]))
            hops = (Hop.entity(hot), Hop.dependency(dep, d), Hop.entity(cold), Hop.aspect(aspect),
                    *(Hop.attribute(facts.ids[i]) for i in order[: self.params.facts]))
            out.append((sim, cold, Path(hops, strategy="", explorer=True)))
        out.sort(key=lambda t: (-t[0], t[1]))
        return [p for _, _, p in out[:k]]

    # -- ratings -------------------------------------------------------------------------------------

    def rate(self, graph_id: str, path: Path, rating: float | None, *, step: int = -1,
             query_id: str = "") -> KnowledgeGraph | None:
        """Record the rating of a shown cold path; a positive one restores its cold entity and returns the
        new hot graph (None: it stays cold).

        Raises:
            ColdTierError: ``path`` reaches no cold entity (naming the path).
        """
        entity = self.cold_entity(graph_id, path)
        if entity is None:
            raise ColdTierError(f"path {path.serialise()!r} reaches no cold entity of graph {graph_id!r}; "
                                "only a cold path's rating restores")
        restored = rating is not None and rating > 0
        if rating is not None and not restored:
            self._misses[(graph_id, entity)] = self._misses.get((graph_id, entity), 0) + 1
        self.events.append({"step": step, "graph_id": graph_id, "query_id": query_id, "entity_id": entity,
                            "path": path.serialise(), "rating": rating, "restored": restored})
        if not restored:
            return None
        self.splits[graph_id] = self.splits[graph_id].restore(entity)
        self._frontier.pop(graph_id, None)
        return self.splits[graph_id].hot

    # -- checkpoints ---------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"cold": {gid: sorted(s.cold) for gid, s in self.splits.items()}, "initial": self.initial,
                "events": [dict(e) for e in self.events], "params": asdict(self.params)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take a :meth:`state_dict`'s cold sets and events (the full graphs stay this object's own).

        Raises:
            ValueError: the state was written with other settings (``emergence.rediscover.<key>``) or
                another plan (the initially cold entities of a graph), naming the key and both values.
        """
        saved = state.get("params")
        if saved is None or "initial" not in state:
            raise ValueError("it holds no rediscovery settings or initial cold entities (written before they "
                             "were saved)")
        mine = asdict(self.params)
        for key in sorted(set(saved) | set(mine)):
            if saved.get(key) != mine.get(key):
                raise ValueError(f"it was written with emergence.rediscover.{key}={saved.get(key)!r}, this "
                                 f"run has {mine.get(key)!r}")
        for gid in sorted(set(state["initial"]) | set(self.initial)):
            was, now = sorted(state["initial"].get(gid, [])), sorted(self.initial.get(gid, []))
            if was != now:
                raise ValueError(f"it was written with the initially cold entities of graph {gid!r} (the "
                                 f"plan's)={_ids_text(was)}, this run has {_ids_text(now)}")
        for gid, ids in state["cold"].items():
            if gid not in self.splits:
                raise ValueError(f"checkpoint has cold entities of graph {gid!r}, which this run has none of")
            self.splits[gid] = ColdSplit(self.splits[gid].full, ids)
        self.events = [dict(e) for e in state["events"]]
        self._misses = {}
        for e in self.events:
            if e["rating"] is not None and not e["restored"]:
                key = (e["graph_id"], e["entity_id"])
                self._misses[key] = self._misses.get(key, 0) + 1
        self._frontier.clear()


def _ids_text(ids: Sequence[str], show: int = 5) -> str:
    """A list of ids for a message: all of a short one, else its count and first few."""
    if len(ids) <= show:
        return repr(list(ids))
    return f"{len(ids)} entities [{', '.join(repr(i) for i in ids[:show])}, ...]"
