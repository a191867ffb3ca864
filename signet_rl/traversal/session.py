"""The session DAG of a graph's memories: turns in time order, grouped into sessions, sessions in order.

Conversational memories come in sessions (LoCoMo tags every turn ``session_<n>``). The seed's temporal
dimension is a DAG over them: turn → next turn inside a session, session → next session. This module derives
it from the ``memories`` table alone (``tags`` and ``created_at``), so it works on any graph loaded today;
an extraction pipeline that writes session entities into the graph gives the same order.

:class:`SessionDAG` holds it as arrays over :class:`~signet_rl.graph.arrays.GraphArrays`' memory rows and
answers, for a set of anchor memories, the typed steps a walk may take from them
(:meth:`SessionDAG.steps`):

==============  ==============================================================================
``turn``        the turns up to ``window`` places before and after the anchor in its session
``session``     every other turn of the anchor's session
``next``        the turns of the next session (session distance +1)
``previous``    the turns of the previous session (session distance -1)
==============  ==============================================================================

Only memories visible at the query time (created at or before it, not deleted) are stepped to. A memory
without a session tag belongs to no session: it has ``turn`` steps to its neighbours in the graph's time
order only when ``untagged_neighbours`` is set (off by default: without sessions, time order across
unrelated memories is not a conversation).

    >>> import pandas as pd
    >>> from signet_rl.graph.model import KnowledgeGraph, Memory
    >>> t = pd.Timestamp("2024-01-01", tz="UTC")
    >>> mems = [Memory(id=f"m{i}", content=f"turn {i}", tags=f"session_{1 + i // 3}",
    ...                created_at=t + pd.Timedelta(minutes=i)) for i in range(6)]
    >>> dag = SessionDAG.from_graph(KnowledgeGraph.from_records(memories=mems))
    >>> [(dag.memory_ids[m], kind) for m, kind, _ in dag.steps([1], window=1)][:3]
    [('m0', 'turn'), ('m2', 'turn'), ('m3', 'next')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph

__all__ = ["SESSION_TAG", "STEP_KINDS", "SessionDAG", "session_number"]

IntArray = npt.NDArray[np.int64]

#: A memory's session tag: ``session_<n>`` anywhere in its comma- or space-separated ``tags``.
SESSION_TAG = re.compile(r"(?:^|[\s,])session_(\d+)(?:$|[\s,])")
#: Step kinds, in the order :meth:`SessionDAG.steps` lists them.
STEP_KINDS: tuple[str, ...] = ("turn", "session", "next", "previous")


def session_number(tags: object) -> int:
    """The session number in a memory's ``tags`` (``"session_3"`` -> 3), -1 when there is none."""
    if not isinstance(tags, str):
        return -1
    m = SESSION_TAG.search(tags)
    return int(m.group(1)) if m else -1


@dataclass(frozen=True)
class SessionDAG:
    """Turn and session order over one graph's memories (see the module docstring).

    Attributes:
        memory_ids: memory ids, in :class:`GraphArrays` row order. ``[K]``.
        created: creation time, epoch seconds. ``[K]``.
        deleted: ``is_deleted``. ``[K]``.
        session: each memory's session *rank* (0 for the earliest session), -1 for none. ``[K]``.
        session_number: each memory's session number as tagged, -1 for none. ``[K]``.
        order: memory rows in time order (created, then id). ``[K]``.
        rank: each row's position in ``order``. ``[K]``.
        sess_indptr: CSR session rank -> its turns (``sess_turns``), each in time order. ``[S + 1]``.
        sess_turns: memory rows. ``[K']``.
        pos_in_session: each memory's position among its session's turns (-1 for none). ``[K]``.
    """

    memory_ids: npt.NDArray[np.object_]
    created: npt.NDArray[np.float64]
    deleted: npt.NDArray[np.bool_]
    session: IntArray
    session_number: IntArray
    order: IntArray
    rank: IntArray
    sess_indptr: IntArray
    sess_turns: IntArray
    pos_in_session: IntArray

    @classmethod
    def from_graph(cls, graph: KnowledgeGraph, arrays: GraphArrays | None = None) -> SessionDAG:
        """Build the DAG from ``graph.memories`` (rows in ``arrays``' memory order)."""
        a = arrays if arrays is not None else GraphArrays.from_graph(graph)
        ids = np.asarray(a.memory_ids, dtype=object)
        tags = (
            graph.memories.set_index("id")["tags"].reindex(ids) if len(ids) else pd.Series([], dtype=object)
        )
        number = np.fromiter((session_number(t) for t in tags.tolist()), dtype=np.int64, count=len(ids))
        created = np.asarray(a.memory_created, dtype=np.float64)
        order = np.lexsort((ids.astype(str), created)).astype(np.int64) if len(ids) else np.zeros(0, np.int64)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids))
        tagged = np.unique(number[number >= 0])
        session = np.full(len(ids), -1, dtype=np.int64)
        session[number >= 0] = np.searchsorted(tagged, number[number >= 0])
        # turns of each session in time order: sort the tagged rows by (session, rank)
        rows = np.flatnonzero(session >= 0)
        rows = rows[np.lexsort((rank[rows], session[rows]))]
        indptr = np.zeros(len(tagged) + 1, dtype=np.int64)
        np.cumsum(np.bincount(session[rows], minlength=len(tagged)), out=indptr[1:])
        pos = np.full(len(ids), -1, dtype=np.int64)
        pos[rows] = np.arange(len(rows)) - indptr[session[rows]]
        return cls(
            memory_ids=ids,
            created=created,
            deleted=np.asarray(a.memory_deleted, dtype=bool),
            session=session,
            session_number=number,
            order=order,
            rank=rank,
            sess_indptr=indptr,
            sess_turns=rows.astype(np.int64),
            pos_in_session=pos,
        )

    @classmethod
    def from_sessions(
        cls, graph: KnowledgeGraph, sessions: Sequence[Sequence[str]], arrays: GraphArrays | None = None
    ) -> SessionDAG:
        """Build the DAG from explicit sessions: ``sessions`` in order, each its memory ids in turn order
        (the extractor's session entities, ordered by their ``next_session`` edges, each with its turns;
        :func:`signet_rl.datasets.extract.session_dag`). Memories in no session (or unknown ids) have no
        session; ``session_number`` is the session's position. Time order (``order``, ``rank``) is as in
        :meth:`from_graph`. Unlike :meth:`from_graph` it needs no ``session_<n>`` tags, so a store whose
        memories carry none still gets session steps once the extractor has written its session nodes."""
        a = arrays if arrays is not None else GraphArrays.from_graph(graph)
        ids = np.asarray(a.memory_ids, dtype=object)
        index = {str(m): i for i, m in enumerate(ids.tolist())}
        created = np.asarray(a.memory_created, dtype=np.float64)
        order = np.lexsort((ids.astype(str), created)).astype(np.int64) if len(ids) else np.zeros(0, np.int64)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids))
        session = np.full(len(ids), -1, dtype=np.int64)
        pos = np.full(len(ids), -1, dtype=np.int64)
        rows: list[int] = []
        counts: list[int] = []
        for turns in sessions:
            kept = [index[str(m)] for m in turns if str(m) in index and session[index[str(m)]] < 0]
            for p, r in enumerate(kept):
                session[r], pos[r] = len(counts), p
            rows += kept
            counts.append(len(kept))
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(np.asarray(counts, dtype=np.int64), out=indptr[1:])
        return cls(
            memory_ids=ids,
            created=created,
            deleted=np.asarray(a.memory_deleted, dtype=bool),
            session=session,
            session_number=session.copy(),
            order=order,
            rank=rank,
            sess_indptr=indptr,
            sess_turns=np.asarray(rows, dtype=np.int64),
            pos_in_session=pos,
        )

    @property
    def num_sessions(self) -> int:
        return len(self.sess_indptr) - 1

    def turns_of(self, session_rank: int) -> IntArray:
        """The memory rows of session rank ``session_rank`` in time order (empty outside the range)."""
        if not 0 <= session_rank < self.num_sessions:
            return np.zeros(0, dtype=np.int64)
        return self.sess_turns[self.sess_indptr[session_rank] : self.sess_indptr[session_rank + 1]]

    def visible(self, t: float | None) -> npt.NDArray[np.bool_]:
        """Memories a query at ``t`` (epoch seconds; None: any time) may see."""
        ok = ~self.deleted
        if t is not None:
            ok &= ~(self.created > t)
        return ok

    def distance(self, memories: npt.ArrayLike, anchors: npt.ArrayLike) -> IntArray:
        """Session distance of each memory from the nearest anchor: ``|session rank difference|``
        minimised over the anchors; -1 where the memory or every anchor has no session."""
        m = np.asarray(memories, dtype=np.int64)
        s = self.session[m]
        anchor_s = np.unique(self.session[np.asarray(anchors, dtype=np.int64)])
        anchor_s = anchor_s[anchor_s >= 0]
        if not len(anchor_s) or not len(m):
            return np.full(len(m), -1, dtype=np.int64)
        d = np.abs(s[:, None] - anchor_s[None, :]).min(axis=1)
        return np.where(s >= 0, d, -1).astype(np.int64)

    def steps(
        self,
        anchors: Sequence[int] | IntArray,
        window: int = 3,
        t: float | None = None,
        kinds: Sequence[str] = STEP_KINDS,
        untagged_neighbours: bool = False,
    ) -> list[tuple[int, str, int]]:
        """Typed session-DAG steps from each anchor memory row: ``(memory row, kind, anchor row)``.

        Per anchor, in :data:`STEP_KINDS` order: its ``turn`` neighbours (nearest first, the earlier one
        first at equal distance), the rest of its ``session`` in time order, the ``next`` session's turns
        and the ``previous`` session's turns in time order. A memory is listed once (its first step);
        anchors are never listed; only memories visible at ``t``.

        Raises:
            ValueError: an unknown step kind or a negative window.
        """
        bad = sorted(set(kinds) - set(STEP_KINDS))
        if bad:
            raise ValueError(f"unknown session step kinds {bad}; known: {', '.join(STEP_KINDS)}")
        if window < 0:
            raise ValueError(f"session window must be >= 0, got {window}")
        ok = self.visible(t)
        anchor_set = {int(x) for x in anchors}
        seen: set[int] = set(anchor_set)
        out: list[tuple[int, str, int]] = []

        def put(rows: IntArray, kind: str, anchor: int) -> None:
            for r in rows[ok[rows]].tolist():
                if r not in seen:
                    seen.add(r)
                    out.append((r, kind, anchor))

        for anchor in (int(x) for x in anchors):
            s = int(self.session[anchor])
            if s < 0:
                if untagged_neighbours and "turn" in kinds:
                    r = int(self.rank[anchor])
                    near = [r + d * sign for d in range(1, window + 1) for sign in (-1, 1)]
                    near = [x for x in near if 0 <= x < len(self.order)]
                    put(self.order[np.asarray(near, dtype=np.int64)], "turn", anchor)
                continue
            turns = self.turns_of(s)
            p = int(self.pos_in_session[anchor])
            if "turn" in kinds and window:
                near = [p + d * sign for d in range(1, window + 1) for sign in (-1, 1)]
                near = [x for x in near if 0 <= x < len(turns)]
                put(turns[np.asarray(near, dtype=np.int64)], "turn", anchor)
            if "session" in kinds:
                put(turns, "session", anchor)
            if "next" in kinds:
                put(self.turns_of(s + 1), "next", anchor)
            if "previous" in kinds:
                put(self.turns_of(s - 1), "previous", anchor)
        return out
