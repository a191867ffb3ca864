"""Entity health from path feedback, and the pruning plan it implies.

Every rated item of a :class:`~signet_rl.learning.feedback_log.FeedbackRecord` is a walked path; the
entities it touches (its entity hops, the endpoints of its dependency hops, the owners of its aspect and
attribute hops) share its rating. Per entity that gives ``rated`` (rated paths through it), ``positive``,
``negative`` and the mean rating; per community the same summed over its members. Each entity (and
community) is then one of:

- ``unused``: on no rated path;
- ``sick``: persistently negative — at least :attr:`HealthThresholds.min_ratings` rated paths and a
  negative share of at least :attr:`HealthThresholds.sick_share`;
- ``under-mapped``: much positive feedback on sparse structure — at least
  :attr:`HealthThresholds.busy_ratings` rated paths, mean rating at least
  :attr:`HealthThresholds.busy_mean`, and at most :attr:`HealthThresholds.sparse_degree` dependencies plus
  active attributes (per member, for a community);
- ``healthy``: the rest (including entities with a few mixed ratings: not enough to judge them);
- ``unseen``: on no rated path, and on fewer than :attr:`HealthThresholds.min_exposure` logged candidate
  paths (walked, shown or not): nothing has judged it, so it is kept. With ``min_exposure`` 0 (the default)
  no entity is unseen: every entity on no rated path is ``unused``.

``exposure`` counts the logged candidate paths through an entity: an entity walked again and again whose
paths never earn a rating (the policy never ranks them up) is unused; one the walks never reach is unseen.

:func:`plan_pruning` picks the unused and sick entities, from feedback logged up to the end of the
training period only (``until``): a rating given later cannot decide what is pruned before it. Pinned
entities and principles are never pruned. The plan is what :func:`signet_rl.emergence.cold.move_to_cold`
then moves. Off by default: nothing calls it unless configured to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path as PathLib

import numpy as np
import pandas as pd

from signet_rl.graph.model import EntityType, KnowledgeGraph
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.traversal.path import HopKind, Path, PathError

__all__ = ["HEALTHY", "PLAN_FORMAT", "SICK", "UNDER_MAPPED", "UNSEEN", "UNUSED", "HealthThresholds",
           "PruningPlan", "community_health", "entity_health", "health_from_touches", "plan_pruning",
           "touched_entities"]

HEALTHY, SICK, UNUSED, UNDER_MAPPED, UNSEEN = "healthy", "sick", "unused", "under-mapped", "unseen"
#: ``format`` of a saved :class:`PruningPlan` (:meth:`PruningPlan.save`).
PLAN_FORMAT = "signet_rl.pruning_plan/1"


@dataclass(frozen=True)
class HealthThresholds:
    """When an entity counts as sick or under-mapped (chosen on a validation seed; these are defaults).

    Attributes:
        min_ratings: rated paths needed before an entity can be called sick.
        sick_share: share of its rated paths rated negative (``-1``) that makes it sick, in ``(0, 1]``.
        busy_ratings: rated paths needed before an entity can be called under-mapped.
        busy_mean: mean rating at or above which a busy entity's feedback counts as high, in ``[-1, 1]``.
        sparse_degree: dependencies plus active attributes at or below which structure counts as sparse.
        min_exposure: logged candidate paths through an entity on no rated path before it counts as
            unused rather than unseen (0: every unrated entity is unused).
        max_mentions: pruning only: an unused entity mentioned in more live memories than this (up to the
            end of training) is kept, reason ``mentioned again`` (None: mentions are not read).
        max_co_mentioned: pruning only: an unused entity whose memories (up to the end of training) also
            mention more other entities than this is kept, reason ``co-mentioned`` (None: not read).
            With ``max_mentions`` 1 and this 0, only passing mentions are pruned: written once, alone.
    """

    min_ratings: int = 3
    sick_share: float = 0.6
    busy_ratings: int = 5
    busy_mean: float = 0.5
    sparse_degree: int = 2
    min_exposure: int = 0
    max_mentions: int | None = None
    max_co_mentioned: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_mentions", "max_co_mentioned"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"HealthThresholds.{name} must be None or an integer >= 0, got {value!r}")
        if isinstance(self.min_exposure, bool) or not isinstance(self.min_exposure, int) or \
                self.min_exposure < 0:
            raise ValueError(f"HealthThresholds.min_exposure must be an integer >= 0, got "
                             f"{self.min_exposure!r}")
        for name in ("min_ratings", "busy_ratings"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"HealthThresholds.{name} must be an integer >= 1, got {value!r}")
        if not 0 < self.sick_share <= 1:
            raise ValueError(f"HealthThresholds.sick_share must be in (0, 1], got {self.sick_share!r}")
        if not -1 <= self.busy_mean <= 1:
            raise ValueError(f"HealthThresholds.busy_mean must be in [-1, 1], got {self.busy_mean!r}")
        if isinstance(self.sparse_degree, bool) or not isinstance(self.sparse_degree, int) or \
                self.sparse_degree < 0:
            raise ValueError(f"HealthThresholds.sparse_degree must be an integer >= 0, got "
                             f"{self.sparse_degree!r}")


def _record_name(rec: FeedbackRecord) -> str:
    return f"{rec.run_id}/{rec.step}/{rec.query_id}"


class _Owners:
    """Entity ids a path touches, from the graph's id lookups."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        deps = graph.dependencies
        self.dep = dict(zip(deps["id"], zip(deps["source_entity_id"], deps["target_entity_id"],
                                            strict=True), strict=True))
        self.aspect = dict(zip(graph.aspects["id"], graph.aspects["entity_id"], strict=True))
        self.attribute = dict(zip(graph.attributes["id"], graph.attribute_entity_ids(), strict=True))
        self.entities = set(graph.entities["id"])

    def of(self, path: Path) -> set[str]:
        out: set[str] = set()
        for hop in path.hops:
            if hop.kind is HopKind.ENTITY:
                out.add(hop.id)
            elif hop.kind is HopKind.DEPENDENCY and hop.id in self.dep:
                out.update(self.dep[hop.id])
            elif hop.kind is HopKind.ASPECT and hop.id in self.aspect:
                out.add(self.aspect[hop.id])
            elif hop.kind is HopKind.ATTRIBUTE and self.attribute.get(hop.id) is not None:
                out.add(self.attribute[hop.id])
        return out & self.entities


def touched_entities(graph: KnowledgeGraph, *, entities: Iterable[str] = (), aspects: Iterable[str] = (),
                     attributes: Iterable[str] = (), dependencies: Iterable[str] = ()) -> set[str]:
    """The graph's entities a walked path touches, from its hop ids by kind (the service logs a path as
    these lists): its entity hops, the owners of its aspect and attribute hops, the endpoints of its
    dependency hops. Ids the graph does not have are skipped."""
    o = _Owners(graph)
    out = set(entities)
    out.update(o.aspect[a] for a in aspects if a in o.aspect)
    out.update(o.attribute[a] for a in attributes if o.attribute.get(a) is not None)
    for d in dependencies:
        out.update(o.dep.get(d, ()))
    return out & o.entities


def health_from_touches(graph: KnowledgeGraph, touches: Iterable[tuple[Iterable[str], float]], *,
                        thresholds: HealthThresholds = HealthThresholds()) -> pd.DataFrame:
    """:func:`entity_health`'s frame from ``(entity ids a rated path touched, its rating)`` pairs (the
    service's feedback, already cut to the period to judge); ``exposure`` is the rated paths' count."""
    ids = graph.entities["id"].to_numpy(dtype=object)
    index = {e: i for i, e in enumerate(ids)}
    rated = np.zeros(len(ids), np.int64)
    pos = np.zeros(len(ids), np.int64)
    neg = np.zeros(len(ids), np.int64)
    total = np.zeros(len(ids), np.float64)
    for ents, rating in touches:
        rows = [index[e] for e in set(ents) if e in index]
        rated[rows] += 1
        total[rows] += rating
        pos[rows] += rating > 0
        neg[rows] += rating < 0
    return _frame(graph, ids, rated, pos, neg, total, rated.copy(), thresholds)


def _frame(graph: KnowledgeGraph, ids: np.ndarray, rated: np.ndarray, pos: np.ndarray, neg: np.ndarray,
           total: np.ndarray, exposure: np.ndarray, thresholds: HealthThresholds) -> pd.DataFrame:
    degree = _degree(graph, ids)
    frame = pd.DataFrame({"entity_id": ids, "rated": rated, "positive": pos, "negative": neg,
                          "mean_rating": np.where(rated > 0, total / np.maximum(rated, 1), np.nan),
                          "exposure": exposure, "degree": degree})
    status = _status(rated, neg, frame["mean_rating"].to_numpy(), degree.astype(np.float64), thresholds)
    if thresholds.min_exposure:
        status[(rated == 0) & (exposure < thresholds.min_exposure)] = UNSEEN
    frame["status"] = status
    return frame


def _training(records: Iterable[FeedbackRecord], until: pd.Timestamp | None) -> list[FeedbackRecord]:
    out = []
    for rec in records:
        if until is not None:
            if rec.timestamp is None:
                raise ValueError(f"feedback record {_record_name(rec)} is undated, so it cannot be placed "
                                 f"before or after the end of training {until}; date it or pass until=None")
            if rec.timestamp > until:
                continue
        out.append(rec)
    return out


def entity_health(graph: KnowledgeGraph, records: Iterable[FeedbackRecord], *,
                  until: pd.Timestamp | str | None = None,
                  thresholds: HealthThresholds = HealthThresholds()) -> pd.DataFrame:
    """Per-entity feedback counts and status.

    Args:
        graph: the graph the paths were walked on.
        records: the feedback log.
        until: use only records stamped at or before this time (the end of the training period).
        thresholds: see :class:`HealthThresholds`.

    Returns:
        One row per entity of the graph, in its order: ``entity_id``, ``rated``, ``positive``,
        ``negative``, ``mean_rating`` (NaN when unrated), ``exposure`` (logged candidate paths through
        it), ``degree`` (dependencies + active attributes), ``status``.

    Raises:
        ValueError: a candidate that is not a path serialisation, or an undated record when ``until`` is
            given; the message names the record (``run/step/query``) and the value.
    """
    cutoff = None if until is None else pd.Timestamp(until)
    if cutoff is not None and cutoff.tzinfo is None:
        cutoff = cutoff.tz_localize("UTC")
    owners = _Owners(graph)
    ids = graph.entities["id"].to_numpy(dtype=object)
    index = {e: i for i, e in enumerate(ids)}
    rated = np.zeros(len(ids), np.int64)
    pos = np.zeros(len(ids), np.int64)
    neg = np.zeros(len(ids), np.int64)
    total = np.zeros(len(ids), np.float64)
    exposure = np.zeros(len(ids), np.int64)
    touched: dict[str, list[int]] = {}

    def rows_of(rec: FeedbackRecord, text: str) -> list[int]:
        if text not in touched:
            try:
                path = Path.parse(text)
            except PathError as exc:
                raise ValueError(f"feedback record {_record_name(rec)}: candidate {text!r} is not a path "
                                 f"serialisation ({exc}); entity health needs the logged paths") from None
            touched[text] = [index[e] for e in owners.of(path)]
        return touched[text]

    for rec in _training(records, cutoff):
        if thresholds.min_exposure:
            for text in rec.candidates:
                exposure[rows_of(rec, text)] += 1
        for item, rating in zip(rec.shown, rec.ratings, strict=True):
            if rating is None:
                continue
            rows = rows_of(rec, rec.candidates[item])
            rated[rows] += 1
            total[rows] += rating
            pos[rows] += rating > 0
            neg[rows] += rating < 0
    return _frame(graph, ids, rated, pos, neg, total, exposure, thresholds)


def _degree(graph: KnowledgeGraph, ids: np.ndarray) -> np.ndarray:
    deps = graph.dependencies
    counts = pd.concat([deps["source_entity_id"], deps["target_entity_id"]]).value_counts()
    active = graph.attributes["status"] == "active"
    counts = counts.add(graph.attribute_entity_ids()[active].dropna().value_counts(), fill_value=0)
    return counts.reindex(ids, fill_value=0).to_numpy(dtype=np.int64)


def _status(rated: np.ndarray, neg: np.ndarray, mean: np.ndarray, degree: np.ndarray,
            t: HealthThresholds) -> np.ndarray:
    share = neg / np.maximum(rated, 1)
    sick = (rated >= t.min_ratings) & (share >= t.sick_share)
    busy = (rated >= t.busy_ratings) & (np.nan_to_num(mean, nan=-2.0) >= t.busy_mean)
    under = busy & (degree <= t.sparse_degree) & ~sick
    return np.select([rated == 0, sick, under], [UNUSED, SICK, UNDER_MAPPED], HEALTHY).astype(object)


def community_health(graph: KnowledgeGraph, health: pd.DataFrame,
                     thresholds: HealthThresholds = HealthThresholds(),
                     community_source: str = "auto") -> pd.DataFrame:
    """Per-community status from its members' counts (:func:`entity_health`'s frame), summed.

    Communities come from :func:`~signet_rl.graph.communities.entity_communities` with
    ``community_source``: by default (``auto``) the graph's own, and Leiden's on a graph that carries none
    (the synthetic benchmark's graphs), so per-community health is never empty for want of a community
    table. ``degree`` is the members' mean degree. Returns ``community_id``, ``members``, ``rated``,
    ``positive``, ``negative``, ``mean_rating``, ``degree``, ``status``.
    """
    from signet_rl.graph.communities import COMMUNITY_SOURCES, entity_communities

    if community_source not in COMMUNITY_SOURCES:
        raise ValueError(f"community_source must be 'graph', 'detect' or 'auto', got {community_source!r}")
    table = graph.community_members[["community_id", "entity_id"]]  # every membership row of the graph's own
    if community_source == "detect" or (community_source == "auto" and not len(table)):
        mapping = entity_communities(graph, "detect")
        table = pd.DataFrame({"community_id": list(mapping.values()), "entity_id": list(mapping)},
                             dtype=object)
    members = table.merge(health, on="entity_id", how="inner")
    members["total"] = members["mean_rating"].fillna(0.0) * members["rated"]
    agg = members.groupby("community_id", sort=True).agg(
        members=("entity_id", "size"), rated=("rated", "sum"), positive=("positive", "sum"),
        negative=("negative", "sum"), total=("total", "sum"), degree=("degree", "mean")).reset_index()
    rated = agg["rated"].to_numpy()
    agg["mean_rating"] = np.where(rated > 0, agg["total"] / np.maximum(rated, 1), np.nan)
    agg["status"] = _status(rated, agg["negative"].to_numpy(), agg["mean_rating"].to_numpy(),
                            agg["degree"].to_numpy(dtype=np.float64), thresholds)
    return agg[["community_id", "members", "rated", "positive", "negative", "mean_rating", "degree",
                "status"]]


@dataclass(frozen=True)
class PruningPlan:
    """Entities to move to the cold tier, and why, decided from feedback up to ``until``."""

    until: pd.Timestamp | None
    unused: tuple[str, ...]
    sick: tuple[str, ...]
    kept: dict[str, str] = field(default_factory=dict)  # unused/sick entities kept, and why

    @property
    def entity_ids(self) -> tuple[str, ...]:
        return self.unused + self.sick

    def to_dict(self) -> dict[str, object]:
        """The plan as JSON-ready values (``format`` names the layout; ``until`` in ISO 8601 or null)."""
        return {"format": PLAN_FORMAT, "until": None if self.until is None else self.until.isoformat(),
                "unused": list(self.unused), "sick": list(self.sick), "kept": dict(sorted(self.kept.items()))}

    @classmethod
    def from_dict(cls, values: object, *, where: str = "pruning plan") -> PruningPlan:
        """The plan :meth:`to_dict` wrote. A wrong layout, a non-string id or an id both unused and sick
        raises :class:`ValueError` naming ``where`` and the key."""
        if not isinstance(values, dict) or values.get("format") != PLAN_FORMAT:
            got = values.get("format") if isinstance(values, dict) else type(values).__name__
            old = isinstance(values, dict) and "format" not in values and {"unused", "sick"} <= set(values)
            how = ("; it looks like a plan saved before plans carried a format: regenerate it (rerun the "
                   "training command with emergence.health=true, which writes "
                   "artifacts/emergence/pruning.json, or `python experiments/emergence_report.py --part "
                   f"pruning --save-plans DIR`), or add \"format\": \"{PLAN_FORMAT}\" to it (the layout, "
                   "until, unused, sick and kept, is the same)" if old else "")
            raise ValueError(f"{where}: not a pruning plan (expected format {PLAN_FORMAT!r}, got {got!r})"
                             f"{how}")
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("unused", "sick"):
            ids = values.get(key)
            if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
                raise ValueError(f"{where}: {key!r} must be a list of entity ids (non-empty strings), "
                                 f"got {ids!r}")
            lists[key] = tuple(ids)
        both = sorted(set(lists["unused"]) & set(lists["sick"]))
        if both:
            raise ValueError(f"{where}: entity {both[0]!r} is listed both unused and sick")
        kept = values.get("kept", {})
        if not isinstance(kept, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in kept.items()):
            raise ValueError(f"{where}: 'kept' must map entity ids to reasons, got {kept!r}")
        until = values.get("until")
        try:
            stamp = None if until is None else pd.Timestamp(until)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: 'until' is not a timestamp: {until!r}") from e
        return cls(until=stamp, unused=lists["unused"], sick=lists["sick"], kept=dict(kept))

    def save(self, path: str | os.PathLike[str]) -> PathLib:
        """Write the plan as JSON to ``path`` (through a temporary file: a crash leaves the old file)."""
        out = PathLib(path)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out)
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PruningPlan:
        """The plan :meth:`save` wrote; a missing file, bad JSON or a wrong layout names ``path``."""
        where = str(path)
        try:
            text = PathLib(path).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"{where}: cannot read the pruning plan ({e.strerror})") from e
        try:
            values = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not JSON (line {e.lineno}: {e.msg})") from e
        return cls.from_dict(values, where=where)


def _mentioned_again(graph: KnowledgeGraph, entity_ids: set[str], cutoff: pd.Timestamp | None,
                     t: HealthThresholds) -> dict[str, str]:
    """Of ``entity_ids``, those the memories written up to ``cutoff`` (live ones) mention more than
    ``t.max_mentions`` times (``mentioned again``) or alongside more than ``t.max_co_mentioned`` other
    entities (``co-mentioned``): no passing mention, so kept; one no live memory names by ``cutoff`` is kept
    too (``not yet written``)."""
    m = graph.mentions[["memory_id", "entity_id"]].drop_duplicates()
    mem = graph.memories.set_index("id")
    live = ~mem["is_deleted"].astype(bool)
    if cutoff is not None:
        live &= mem["created_at"] <= cutoff
    m = m[m["memory_id"].map(live).fillna(False).astype(bool)]
    mentions = m.groupby("entity_id")["memory_id"].nunique()
    own = m[m["entity_id"].isin(entity_ids)]
    pairs = own.merge(m, on="memory_id", suffixes=("", "_other"))
    pairs = pairs[pairs["entity_id"] != pairs["entity_id_other"]]
    co = pairs.groupby("entity_id")["entity_id_other"].nunique()
    out: dict[str, str] = {}
    for eid in sorted(entity_ids):
        if int(mentions.get(eid, 0)) == 0:
            out[eid] = "not yet written"  # no live memory names it by the cutoff: nothing to judge
        elif t.max_mentions is not None and int(mentions.get(eid, 0)) > t.max_mentions:
            out[eid] = "mentioned again"
        elif t.max_co_mentioned is not None and int(co.get(eid, 0)) > t.max_co_mentioned:
            out[eid] = "co-mentioned"
    return out


def plan_pruning(graph: KnowledgeGraph, records: Iterable[FeedbackRecord], *,
                 until: pd.Timestamp | str | None,
                 thresholds: HealthThresholds = HealthThresholds()) -> PruningPlan:
    """The unused and sick entities to prune, judged on feedback stamped at or before ``until`` only.

    ``until`` is required (pass None explicitly to use the whole log, e.g. when the log *is* the training
    period). Pinned entities and principles are kept (listed in :attr:`PruningPlan.kept`), and, when
    :attr:`HealthThresholds.max_mentions` or :attr:`HealthThresholds.max_co_mentioned` is set, the unused
    entities that are no passing mention in the memories written up to ``until``.
    """
    health = entity_health(graph, records, until=until, thresholds=thresholds)
    ents = graph.entities.set_index("id")
    protected: dict[str, str] = {}
    for eid in health.loc[health["status"].isin([UNUSED, SICK]), "entity_id"]:
        if bool(ents.at[eid, "pinned"]):
            protected[eid] = "pinned"
        elif ents.at[eid, "entity_type"] == EntityType.PRINCIPLE:
            protected[eid] = "principle"
    cutoff = None if until is None else pd.Timestamp(until)
    if cutoff is not None and cutoff.tzinfo is None:
        cutoff = cutoff.tz_localize("UTC")
    if thresholds.max_mentions is not None or thresholds.max_co_mentioned is not None:
        unused = health.loc[(health["status"] == UNUSED) & ~health["entity_id"].isin(protected), "entity_id"]
        protected.update(_mentioned_again(graph, set(unused), cutoff, thresholds))
    pick = health[~health["entity_id"].isin(protected)]
    return PruningPlan(until=cutoff,
                       unused=tuple(pick.loc[pick["status"] == UNUSED, "entity_id"]),
                       sick=tuple(pick.loc[pick["status"] == SICK, "entity_id"]),
                       kept=protected)
