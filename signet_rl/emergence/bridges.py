"""Cross-entity bridges: attributes of unlinked entities that say the same thing, promoted by feedback.

At ingest, :func:`find_bridges` checks new attributes against the attributes of every entity they are not
linked to (no dependency either way, not the same entity): a pair that agrees by embedding and by words
(:mod:`~signet_rl.emergence.similar`) is a :class:`Bridge` candidate — an explorer target. A
:class:`BridgeTracker` then follows the ratings of paths across each bridge:

- ``promote_after`` positive ratings (net of negatives) promote a candidate to a dependency edge between
  the two entities, ``reason`` ``promote_reason`` at its prior confidence: by default ``pattern-matched``
  (0.5), what a bridge is (two texts that agree by embedding and by words), now confirmed by those ratings,
  and the lowest rung the traverser walks at its default ``min_confidence`` (0.5). An earlier version
  entered at ``inferred`` (0.4), below that bar, so a promotion changed no walk until ``climb_after`` more
  positives had lifted it; ``promote_reason="inferred"`` still does that. Under a stricter
  ``min_confidence`` (the tuned learning recipes' 0.79) an edge is walked only from ``multi-memory`` up;
- after that, every ``climb_after`` further positives move the edge one rung up the confidence ladder
  (:func:`signet_rl.graph.confidence.move`, never above ``multi-memory``: only a person asserts);
- each negative moves it one rung down; a negative on an edge already at the floor (``llm-uncertain``)
  fades the bridge: its edge is removed;
- a candidate whose negatives outnumber its positives by ``fade_after`` fades without ever being promoted.

A faded bridge is no longer an explorer target; rating it again is an error. Every change returns a new
graph (:meth:`KnowledgeGraph.replace`); on an error the tracker and the graph are unchanged. Off by
default: nothing runs this unless configured to.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from signet_rl.emergence.similar import (
    active_attributes,
    agreeing_neighbours,
    content_tokens,
    encode,
    jaccard,
    linked_pairs,
    resolve,
    similar_pairs,
    slot_variant,
    terms,
)
from signet_rl.graph.confidence import Reason, move
from signet_rl.graph.model import DependencyType, KnowledgeGraph
from signet_rl.text.encoders import Encoder

__all__ = ["Bridge", "BridgeError", "BridgeState", "BridgeTracker", "check_promote_reason", "find_bridges"]

Status = Literal["candidate", "promoted", "faded"]


class BridgeError(ValueError):
    """A bridge cannot be rated or promoted: the message names the bridge and the entity or value."""


@dataclass(frozen=True)
class Bridge:
    """Two attributes of unlinked entities that say the same thing."""

    id: str
    attribute_a: str
    attribute_b: str
    entity_a: str
    entity_b: str
    similarity: float
    lexical: float


def _bridge_id(a: str, b: str) -> str:
    lo, hi = sorted((a, b))
    return "bridge-" + hashlib.blake2b(f"{lo}\x1f{hi}".encode(), digest_size=8).hexdigest()


def find_bridges(graph: KnowledgeGraph, attribute_ids: list[str] | None = None, *,
                 encoder: Encoder | None = None, min_similarity: float = 0.6,
                 min_lexical: float = 0.4, mutual_top: int | None = None,
                 variant_overlap: float | None = None, max_copies: int | None = None) -> list[Bridge]:
    """Candidate bridges from ``attribute_ids`` (the newly ingested ones; all active ones when None).

    Two attributes of different entities that no dependency links *agree* when their cosine is at least
    ``min_similarity`` and their keyword Jaccard at least ``min_lexical``. Two optional checks make the
    candidates few enough to explore:

    * ``variant_overlap``: a pair that is the same wording with different values
      (:func:`~signet_rl.emergence.similar.slot_variant`) states two facts, not one, and is no bridge;
    * ``mutual_top``: each attribute must be among the other's ``mutual_top`` nearest agreeing attributes
      (mutual nearest neighbours). A fact said twice is its copy's nearest restatement; an attribute that
      merely resembles many others (a common template) is nobody's nearest in particular;
    * ``max_copies``: a text held word for word (case and spacing aside) by more than ``max_copies``
      entities is a common value ("log level is info"), not a fact two entities happen to share.

    Args:
        graph: the graph after ingest.
        attribute_ids: the new attributes to check against the rest.
        encoder: the text encoder (the hashing encoder by default).
        min_similarity: least cosine of the two attributes' vectors, in [-1, 1].
        min_lexical: least Jaccard overlap of their keyword terms, in [0, 1].
        mutual_top: mutual nearest-neighbour rank (None: off).
        variant_overlap: token Jaccard from which a pair with differing tokens on both sides is a slot
            variant (None: off).
        max_copies: most entities that may hold a bridge end's exact text (None: off).

    Returns:
        Bridges sorted by similarity (highest first), one per attribute pair.

    Raises:
        BridgeError: an id in ``attribute_ids`` that is not an active attribute of an entity (named).
    """
    if mutual_top is not None and (isinstance(mutual_top, bool) or not isinstance(mutual_top, int)
                                   or mutual_top < 1):
        raise ValueError(f"mutual_top must be None or an integer >= 1, got {mutual_top!r}")
    attrs = active_attributes(graph)
    pos = {a: i for i, a in enumerate(attrs["id"])}
    if attribute_ids is None:
        new = np.arange(len(attrs))
    else:
        missing = [a for a in attribute_ids if a not in pos]
        if missing:
            raise BridgeError(f"attribute {missing[0]!r} is not an active attribute of an entity in the "
                              "graph; pass the ids of attributes just ingested")
        new = np.array([pos[a] for a in dict.fromkeys(attribute_ids)], dtype=np.int64)
    if not len(new) or len(attrs) < 2:
        return []
    texts = attrs["content"].tolist()
    vectors = encode(resolve(encoder), texts)
    owner = attrs["entity_id"].to_numpy(dtype=object)
    ids = attrs["id"].to_numpy(dtype=object)
    linked = linked_pairs(graph)
    words: dict[int, frozenset[str]] = {}
    tokens: dict[int, frozenset[str]] = {}
    generic = np.zeros(len(texts), dtype=bool)
    if max_copies is not None:
        norm = pd.Series([" ".join(t.lower().split()) for t in texts])
        holders = pd.DataFrame({"t": norm, "e": owner}).groupby("t")["e"].nunique()
        generic = (norm.map(holders) > max_copies).to_numpy()

    def lexical(i: int, j: int) -> float:
        wi = words.setdefault(i, terms(texts[i]))
        wj = words.setdefault(j, terms(texts[j]))
        return jaccard(wi, wj)

    def allowed(i: int, j: int) -> bool:
        if owner[i] == owner[j] or generic[i] or generic[j] or frozenset((owner[i], owner[j])) in linked:
            return False
        if variant_overlap is not None and slot_variant(tokens.setdefault(i, content_tokens(texts[i])),
                                                        tokens.setdefault(j, content_tokens(texts[j])),
                                                        variant_overlap):
            return False
        return lexical(i, j) >= min_lexical

    pairs: list[tuple[int, int, float]] = []
    if mutual_top is None:
        for i, j, sim in zip(*similar_pairs(vectors, new, min_similarity), strict=True):
            if allowed(int(i), int(j)):
                pairs.append((int(i), int(j), float(sim)))
    else:
        near = agreeing_neighbours(vectors, new, allowed, mutual_top, min_similarity)
        others = np.array(sorted({j for js in near.values() for j in js} - set(near)), dtype=np.int64)
        if len(others):
            near.update(agreeing_neighbours(vectors, others, allowed, mutual_top, min_similarity))
        for i in new.tolist():
            for j in near[i]:
                if i in near[j]:
                    pairs.append((i, j, float(vectors[i] @ vectors[j])))
    out: dict[str, Bridge] = {}
    for i, j, sim in pairs:
        a, b = sorted((i, j), key=lambda k: ids[k])
        bid = _bridge_id(ids[a], ids[b])
        out[bid] = Bridge(id=bid, attribute_a=ids[a], attribute_b=ids[b], entity_a=owner[a],
                          entity_b=owner[b], similarity=sim, lexical=lexical(i, j))
    return sorted(out.values(), key=lambda b: (-b.similarity, b.id))


@dataclass(frozen=True)
class BridgeState:
    """A bridge's ratings so far and where they put it."""

    bridge: Bridge
    positive: int = 0
    negative: int = 0
    status: Status = "candidate"
    dependency_id: str | None = None
    streak: int = 0  # positives since the edge last moved up


def check_promote_reason(value: str) -> Reason:
    """``value`` as the :class:`~signet_rl.graph.confidence.Reason` a promoted bridge enters at.

    Raises:
        ValueError: not a reason, or ``user-asserted`` (machine feedback never asserts), naming the value.
    """
    try:
        reason = Reason.parse(value)
    except ValueError as exc:
        raise ValueError(f"promote_reason: {exc}") from None
    if reason is Reason.USER_ASSERTED:
        raise ValueError("promote_reason: 'user-asserted' is set only by a person; a bridge promoted by "
                         "ratings enters at most at 'multi-memory'")
    return reason


@dataclass
class BridgeTracker:
    """Follows ratings on bridges and promotes, climbs, demotes and fades their edges (module docstring).

    Attributes:
        promote_after: net positive ratings that promote a candidate to an edge (at ``promote_reason``).
        climb_after: positives per rung up the ladder once promoted.
        fade_after: net negative ratings that fade a candidate.
        dependency_type: the type of a promoted edge.
        promote_reason: the ladder rung a promoted edge enters at (module docstring), at most
            ``multi-memory`` (only a person asserts).
    """

    promote_after: int = 3
    climb_after: int = 2
    fade_after: int = 2
    dependency_type: str = DependencyType.INFORMS
    states: dict[str, BridgeState] = field(default_factory=dict)
    promote_reason: str = Reason.PATTERN_MATCHED.value

    def __post_init__(self) -> None:
        for name in ("promote_after", "climb_after", "fade_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BridgeTracker.{name} must be an integer >= 1, got {value!r}")
        check_promote_reason(self.promote_reason)
        self.promote_reason = Reason.parse(self.promote_reason).value

    def add(self, bridges: list[Bridge]) -> list[str]:
        """Track new candidates (ones already tracked keep their state); returns the ids added."""
        added = []
        for b in bridges:
            if b.id not in self.states:
                self.states[b.id] = BridgeState(bridge=b)
                added.append(b.id)
        return added

    def explorer_targets(self) -> list[tuple[str, str]]:
        """``(entity_a, entity_b)`` of the candidates not yet promoted nor faded: where explorers go."""
        return [(s.bridge.entity_a, s.bridge.entity_b) for s in self.states.values()
                if s.status == "candidate"]

    def rate(self, graph: KnowledgeGraph, bridge_id: str, rating: int, *,
             at: pd.Timestamp | None = None) -> KnowledgeGraph:
        """Apply one rating (``+1``, ``0`` or ``-1``) of a path across ``bridge_id``; returns the graph with
        the bridge's edge added, moved or removed as the rating decides. ``at`` stamps a new edge's
        ``created_at`` (now by default).

        Raises:
            BridgeError: an unknown or faded bridge, a rating not in {-1, 0, 1}, or a bridge whose entity
                (or promoted edge) is no longer in the graph; each names the bridge and the id. Nothing
                changes.
        """
        state = self.states.get(bridge_id)
        if state is None:
            raise BridgeError(f"unknown bridge {bridge_id!r}; track it with BridgeTracker.add first")
        if isinstance(rating, bool) or rating not in (-1, 0, 1):
            raise BridgeError(f"bridge {bridge_id!r}: rating must be -1, 0 or 1, got {rating!r}")
        if state.status == "faded":
            raise BridgeError(f"bridge {bridge_id!r} has faded (negative ratings); it takes no more "
                              "ratings — a new find_bridges pass can propose it again")
        entities = set(graph.entities["id"])
        for eid in (state.bridge.entity_a, state.bridge.entity_b):
            if eid not in entities:
                raise BridgeError(f"bridge {bridge_id!r} joins entity {eid!r}, which is no longer in the "
                                  "graph (deleted or moved to the cold tier); restore it or drop the "
                                  "bridge with BridgeTracker.drop")
        deps = graph.dependencies
        if state.status == "promoted" and state.dependency_id not in set(deps["id"]):
            raise BridgeError(f"bridge {bridge_id!r}: its edge {state.dependency_id!r} is no longer in the "
                              "graph; drop the bridge with BridgeTracker.drop")
        new_state, graph = self._apply(graph, state, rating, at)
        self.states[bridge_id] = new_state
        return graph

    def to_json(self) -> str:
        """The tracker (parameters and every bridge's state) as JSON, for the service's own state file."""
        return json.dumps({
            "promote_after": self.promote_after, "climb_after": self.climb_after,
            "fade_after": self.fade_after, "dependency_type": self.dependency_type,
            "promote_reason": self.promote_reason,
            "states": [{**asdict(s), "bridge": asdict(s.bridge)} for s in self.states.values()],
        }, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BridgeTracker:
        """A tracker back from :meth:`to_json`.

        Raises:
            BridgeError: text that is not a saved tracker, naming what is wrong.
        """
        try:
            data = json.loads(text)
            states = [BridgeState(**{**s, "bridge": Bridge(**s["bridge"])}) for s in data.pop("states")]
            tracker = cls(**data)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise BridgeError(f"not a saved BridgeTracker: {exc}") from None
        tracker.states = {s.bridge.id: s for s in states}
        return tracker

    def drop(self, bridge_id: str) -> None:
        """Stop tracking a bridge (e.g. one whose entity was deleted)."""
        if self.states.pop(bridge_id, None) is None:
            raise BridgeError(f"unknown bridge {bridge_id!r}; nothing to drop")

    def _apply(self, graph: KnowledgeGraph, s: BridgeState, rating: int,
               at: pd.Timestamp | None) -> tuple[BridgeState, KnowledgeGraph]:
        s = replace(s, positive=s.positive + (rating > 0), negative=s.negative + (rating < 0))
        if rating == 0:
            return s, graph
        if s.status == "candidate":
            if s.positive - s.negative >= self.promote_after:
                dep_id = "dep-" + s.bridge.id
                row = pd.DataFrame([{
                    "id": dep_id, "source_entity_id": s.bridge.entity_a,
                    "target_entity_id": s.bridge.entity_b, "aspect_id": None,
                    "dependency_type": self.dependency_type, "strength": 0.5,
                    "confidence": Reason.parse(self.promote_reason).prior, "reason": self.promote_reason,
                    "created_at": pd.Timestamp.now(tz="UTC") if at is None else at, "updated_at": None}])
                deps = pd.concat([graph.dependencies, row], ignore_index=True)
                return replace(s, status="promoted", dependency_id=dep_id, streak=0), \
                    graph.replace(dependencies=deps)
            if s.negative - s.positive >= self.fade_after:
                return replace(s, status="faded"), graph
            return s, graph
        deps = graph.dependencies
        at = int(np.flatnonzero(deps["id"].to_numpy(dtype=object) == s.dependency_id)[0])
        reason, conf = deps["reason"].iat[at], float(deps["confidence"].iat[at])
        if rating > 0:
            streak = s.streak + 1
            if streak < self.climb_after:
                return replace(s, streak=streak), graph
            reason, conf = move(conf, reason, +1)
            s = replace(s, streak=0)
        else:
            if Reason.parse(reason) is Reason.LLM_UNCERTAIN:
                kept = deps.drop(index=deps.index[at]).reset_index(drop=True)
                return replace(s, status="faded", streak=0), graph.replace(dependencies=kept)
            reason, conf = move(conf, reason, -1)
            s = replace(s, streak=0)
        deps = deps.copy()
        deps.loc[deps.index[at], ["reason", "confidence"]] = [Reason.parse(reason).value, conf]
        return s, graph.replace(dependencies=deps)
