"""The path type: what a walk produced, what a scorer ranks, and what feedback refers to.

A path is a sequence of typed hops over graph rows, by their store ids (stable across rebuilds of the
in-memory view)::

    entity (dependency entity)* [aspect attribute+ | memory+]
    memory+

that is, zero or more dependency edges between entities, optionally ending in one aspect of the last entity
and one or more of its attributes, or in memories that mention the last entity (a co-mention step). A path
may also start at a memory: a memory alone is a length-0 path (a flat search hit, the *floor*), and
memory → memory hops are session-DAG steps (neighbouring turn, same session, next or previous session;
:mod:`signet_rl.traversal.session`). A dependency hop records the direction it was walked (``+1`` source →
target, ``-1`` target → source).

    >>> p = Path.of(Hop.entity("e1"), Hop.dependency("d7", +1), Hop.entity("e2"), Hop.aspect("a3"),
    ...             Hop.attribute("t9"))
    >>> p.serialise()
    'E:e1>D+:d7>E:e2>A:a3>T:t9'
    >>> Path.parse(p.serialise()) == p, p.length, p.id
    (True, 4, 'p-7be1d563c0174f99')

``id`` is a stable hash of the serialisation: the same walk always has the same id, in any process, so
ratings logged against it can be replayed. Paths are immutable and hashable; ``strategy`` and ``explorer``
describe how a path was found and are not part of its identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

__all__ = ["Hop", "HopKind", "Path", "PathError"]


class PathError(ValueError):
    """A sequence of hops that is not a path (the message names the hop and why)."""


class HopKind(StrEnum):
    ENTITY = "E"
    DEPENDENCY = "D"
    ASPECT = "A"
    ATTRIBUTE = "T"
    MEMORY = "M"


@dataclass(frozen=True, slots=True)
class Hop:
    """One step of a path: a graph row by its store id, and for dependencies the direction walked."""

    kind: HopKind
    id: str
    direction: int = 0

    @classmethod
    def entity(cls, id: str) -> Hop:
        return cls(HopKind.ENTITY, id)

    @classmethod
    def dependency(cls, id: str, direction: int = 1) -> Hop:
        if direction not in (1, -1):
            raise PathError(f"dependency hop {id!r}: direction must be +1 or -1, got {direction!r}")
        return cls(HopKind.DEPENDENCY, id, direction)

    @classmethod
    def aspect(cls, id: str) -> Hop:
        return cls(HopKind.ASPECT, id)

    @classmethod
    def attribute(cls, id: str) -> Hop:
        return cls(HopKind.ATTRIBUTE, id)

    @classmethod
    def memory(cls, id: str) -> Hop:
        return cls(HopKind.MEMORY, id)

    def token(self) -> str:
        """``KIND[+-]:id``, with ``%`` and ``>`` in the id percent-escaped."""
        sign = {1: "+", -1: "-"}.get(self.direction, "") if self.kind is HopKind.DEPENDENCY else ""
        return f"{self.kind.value}{sign}:{_escape(self.id)}"


def _escape(ident: str) -> str:
    return ident.replace("%", "%25").replace(">", "%3E")


def _unescape(ident: str) -> str:
    return ident.replace("%3E", ">").replace("%25", "%")


# Which kinds may follow which (None: the start).
_NEXT: dict[HopKind | None, frozenset[HopKind]] = {
    None: frozenset({HopKind.ENTITY, HopKind.MEMORY}),
    HopKind.ENTITY: frozenset({HopKind.DEPENDENCY, HopKind.ASPECT, HopKind.MEMORY}),
    HopKind.DEPENDENCY: frozenset({HopKind.ENTITY}),
    HopKind.ASPECT: frozenset({HopKind.ATTRIBUTE}),
    HopKind.ATTRIBUTE: frozenset({HopKind.ATTRIBUTE}),
    HopKind.MEMORY: frozenset({HopKind.MEMORY}),
}


@dataclass(frozen=True)
class Path:
    """An immutable, hashable walk over the graph (see the module docstring for the grammar).

    Attributes:
        hops: the typed hops, starting at an entity or a memory.
        strategy: the traversal strategy that produced it (``what``, ``relate``, ...); not identity.
        explorer: True for speculative explorer walks; not identity.
    """

    hops: tuple[Hop, ...]
    strategy: str = field(default="", compare=False)
    explorer: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        prev: HopKind | None = None
        if not self.hops:
            raise PathError("a path needs at least one hop (its start entity)")
        for i, hop in enumerate(self.hops):
            if not isinstance(hop, Hop):
                raise PathError(f"hop {i} is {hop!r}, not a Hop")
            if hop.kind not in _NEXT[prev]:
                allowed = ", ".join(sorted(k.name.lower() for k in _NEXT[prev]))
                where = "start" if prev is None else f"a {prev.name.lower()} hop"
                raise PathError(
                    f"hop {i} ({hop.token()}): a {hop.kind.name.lower()} cannot follow {where}; "
                    f"expected {allowed}"
                )
            if not isinstance(hop.id, str) or not hop.id:
                raise PathError(f"hop {i}: bad id {hop.id!r} (must be a non-empty string)")
            prev = hop.kind

    @classmethod
    def of(cls, *hops: Hop, strategy: str = "", explorer: bool = False) -> Path:
        return cls(tuple(hops), strategy=strategy, explorer=explorer)

    # -- identity and serialisation -----------------------------------------------------------------

    def serialise(self) -> str:
        """The compact form, e.g. ``E:e1>D+:d7>E:e2>A:a3>T:t9``."""
        return self._serialised

    # A path is immutable, so its serialisation, id and per-kind id tuples are computed once per object
    # (``cached_property`` stores them in the instance dict, outside the frozen fields: equality, hashing
    # and ``dataclasses.replace`` are unchanged). A served recall asks for them ~100 times per path.

    @cached_property
    def _serialised(self) -> str:
        return ">".join(h.token() for h in self.hops)

    @classmethod
    def parse(cls, text: str, strategy: str = "", explorer: bool = False) -> Path:
        """Inverse of :meth:`serialise`.

        Raises:
            PathError: a malformed token, naming it.
        """
        hops = []
        for i, token in enumerate(text.split(">")):
            head, sep, ident = token.partition(":")
            ident = _unescape(ident)
            if not sep or not head or head[0] not in "EDATM":
                raise PathError(
                    f"token {i} {token!r}: expected KIND:id with KIND one of E, D+, D-, A, T, M"
                )
            kind = HopKind(head[0])
            if kind is HopKind.DEPENDENCY:
                if head[1:] not in ("+", "-"):
                    raise PathError(f"token {i} {token!r}: a dependency needs a direction, D+ or D-")
                hops.append(Hop.dependency(ident, 1 if head[1] == "+" else -1))
            elif len(head) != 1:
                raise PathError(f"token {i} {token!r}: only dependencies carry a direction")
            else:
                hops.append(Hop(kind, ident))
        return cls(tuple(hops), strategy=strategy, explorer=explorer)

    @cached_property
    def id(self) -> str:
        """A stable id: ``p-`` and the first 16 hex digits of the SHA-256 of the serialisation."""
        return "p-" + hashlib.sha256(self.serialise().encode()).hexdigest()[:16]

    # -- views ---------------------------------------------------------------------------------------

    @property
    def length(self) -> int:
        """Number of steps (hops after the start entity)."""
        return len(self.hops) - 1

    def _ids(self, kind: HopKind) -> tuple[str, ...]:
        return tuple(h.id for h in self.hops if h.kind is kind)

    @property
    def start(self) -> str:
        return self.hops[0].id

    @cached_property
    def entities(self) -> tuple[str, ...]:
        return self._ids(HopKind.ENTITY)

    @cached_property
    def dependencies(self) -> tuple[str, ...]:
        return self._ids(HopKind.DEPENDENCY)

    @cached_property
    def aspects(self) -> tuple[str, ...]:
        return self._ids(HopKind.ASPECT)

    @cached_property
    def attributes(self) -> tuple[str, ...]:
        return self._ids(HopKind.ATTRIBUTE)

    @cached_property
    def memories(self) -> tuple[str, ...]:
        return self._ids(HopKind.MEMORY)

    @property
    def kind(self) -> str:
        """How the path was found: ``floor`` (one memory, or a path tagged ``strategy="floor"``: a flat
        search hit), ``session`` (memory → memory session-DAG steps) or ``walk`` (it starts at an entity)."""
        if self.strategy == "floor":
            return "floor"
        if self.hops[0].kind is HopKind.MEMORY:
            return "floor" if len(self.hops) == 1 else "session"
        return "walk"

    def __str__(self) -> str:
        return self.serialise()
