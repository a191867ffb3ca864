"""Logged bandit feedback: one typed record per interaction, stored as Parquet.

A :class:`FeedbackRecord` is everything needed to replay or off-policy-evaluate one interaction: who asked
what when (run, step, query, time, session, intent, context), every candidate the logging policy scored
with its score, the slate it showed (candidate indices, in slate order, with their display positions),
each shown item's logging propensity ``pscore`` (its marginal probability of being in the slate, always
present and in ``(0, 1]``), the ratings (``-1``, ``0``, ``+1`` or ``None`` for unrated), which slots were
explorer slots, and the policy version. Records validate on construction.

A :class:`FeedbackLog` is a list of records that writes to and reads from one Parquet file (list columns;
the context as a JSON string; timestamps as UTC nanoseconds). Writes are atomic: a temporary file in the
same folder, then :func:`os.replace`. Reading back gives records equal to those written.

    >>> rec = FeedbackRecord(
    ...     run_id="r1", step=0, query_id="q1", timestamp=pd.Timestamp("2026-01-01", tz="UTC"),
    ...     session="s1", intent="what", context={"entries": ["e1"], "graph_id": "g"},
    ...     candidates=["E:e1>D+:d1>E:e2", "E:e1"], candidate_scores=[0.7, 0.2], shown=[0],
    ...     positions=[0], pscores=[0.9], ratings=[1], explorer=[False], policy_version="v0",
    ... )
    >>> FeedbackLog([rec]).to_frame().shape
    (1, 16)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:  # the scorers package imports igraph; only the type is needed here
    from signet_rl.scorers.base import Feedback

__all__ = ["SCHEMA", "FeedbackLog", "FeedbackRecord"]

#: The Parquet schema of a :class:`FeedbackLog` file.
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("step", pa.int64()),
        ("query_id", pa.string()),
        ("timestamp", pa.timestamp("ns", tz="UTC")),
        ("session", pa.string()),
        ("intent", pa.string()),
        ("context", pa.string()),
        ("candidates", pa.list_(pa.string())),
        ("candidate_scores", pa.list_(pa.float64())),
        ("shown", pa.list_(pa.int64())),
        ("positions", pa.list_(pa.int64())),
        ("pscores", pa.list_(pa.float64())),
        ("ratings", pa.list_(pa.float64())),
        ("explorer", pa.list_(pa.bool_())),
        ("policy_version", pa.string()),
        ("extra", pa.string()),
    ]
)


def _as_timestamp(value: Any) -> pd.Timestamp | None:
    if value is None:
        return None
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        ts = pd.Timestamp(float(value), unit="s", tz="UTC")
    else:
        ts = pd.Timestamp(value)
    if pd.isna(ts):
        return None
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


@dataclass(frozen=True)
class FeedbackRecord:
    """One logged interaction (see the module docstring).

    Attributes:
        run_id: the run that logged it.
        step: the bandit step (>= 0).
        query_id: the query's id.
        timestamp: when the query was asked, normalised to UTC (naive times are read as UTC; epoch seconds
            accepted); None when undated.
        session: the timeline session (explorer quotas count per session).
        intent: the intent / traversal strategy the candidates were walked with.
        context: JSON-serialisable; must hold ``entries`` (list of entity ids) and ``graph_id`` (str).
        candidates: one string per candidate path: its serialisation (replayable with
            :meth:`~signet_rl.traversal.path.Path.parse`) or its id.
        candidate_scores: the logging policy's score of each candidate.
        shown: indices into ``candidates`` of the slate, in slate order (distinct).
        positions: display position of each shown item (>= 0).
        pscores: logging propensity of each shown item, in ``(0, 1]``.
        ratings: one per shown item: -1, 0, +1, or None (unrated).
        explorer: one per shown item: whether it filled an explorer slot.
        policy_version: the logging policy's version.
        extra: anything else, JSON-serialisable (empty by default).

    Raises:
        ValueError: naming the record (``run/step/query``), the field and the bad value.
    """

    run_id: str
    step: int
    query_id: str
    timestamp: pd.Timestamp | None
    session: str
    intent: str
    context: dict[str, Any]
    candidates: list[str]
    candidate_scores: list[float]
    shown: list[int]
    positions: list[int]
    pscores: list[float]
    ratings: list[float | None]
    explorer: list[bool]
    policy_version: str
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        who = f"FeedbackRecord run={self.run_id!r} step={self.step!r} query={self.query_id!r}"

        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"{who}: field {name!r} {why}")

        set_ = object.__setattr__
        for name in ("run_id", "query_id", "session", "intent", "policy_version"):
            if not isinstance(getattr(self, name), str):
                raise bad(name, f"must be a string, got {getattr(self, name)!r}")
        if isinstance(self.step, bool) or not isinstance(self.step, int | np.integer) or self.step < 0:
            raise bad("step", f"must be an integer >= 0, got {self.step!r}")
        set_(self, "step", int(self.step))
        try:
            set_(self, "timestamp", _as_timestamp(self.timestamp))
        except (ValueError, TypeError) as err:
            raise bad("timestamp", f"is not a time: {self.timestamp!r} ({err})") from None
        for name in ("context", "extra"):
            value = getattr(self, name)
            if not isinstance(value, dict):
                raise bad(name, f"must be a dict, got {value!r}")
            try:
                set_(self, name, json.loads(json.dumps(value)))
            except (TypeError, ValueError) as err:
                raise bad(name, f"is not JSON-serialisable ({err})") from None
        entries = self.context.get("entries")
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise bad("context", f"needs 'entries', a list of entity ids, got {entries!r}")
        if not isinstance(self.context.get("graph_id"), str):
            raise bad("context", f"needs 'graph_id', a string, got {self.context.get('graph_id')!r}")

        n_cand, n_shown = len(self.candidates), len(self.shown)
        for name, want in (
            ("candidate_scores", n_cand),
            ("positions", n_shown),
            ("pscores", n_shown),
            ("ratings", n_shown),
            ("explorer", n_shown),
        ):
            if len(getattr(self, name)) != want:
                of = "candidates" if name == "candidate_scores" else "shown items"
                raise bad(name, f"has {len(getattr(self, name))} entries for {want} {of}")
        for j, c in enumerate(self.candidates):
            if not isinstance(c, str) or not c:
                raise bad("candidates", f"[{j}] must be a non-empty string, got {c!r}")
        set_(self, "candidates", list(self.candidates))
        scores = [float(s) for s in self.candidate_scores]
        for j, s in enumerate(scores):
            if math.isnan(s):
                raise bad("candidate_scores", f"[{j}] is NaN")
        set_(self, "candidate_scores", scores)
        for name, bound in (("shown", n_cand), ("positions", None)):
            values = []
            for j, v in enumerate(getattr(self, name)):
                if isinstance(v, bool) or not isinstance(v, int | np.integer):
                    raise bad(name, f"[{j}] must be an integer, got {v!r}")
                if v < 0 or (bound is not None and v >= bound):
                    where = f"[0, {bound})" if bound is not None else ">= 0"
                    raise bad(name, f"[{j}] = {v!r} is outside {where}")
                values.append(int(v))
            set_(self, name, values)
        if len(set(self.shown)) != n_shown:
            raise bad("shown", f"repeats a candidate: {self.shown!r}")
        pscores = []
        for j, p in enumerate(self.pscores):
            if (
                isinstance(p, bool)
                or not isinstance(p, int | float | np.integer | np.floating)
                or not 0 < p <= 1
            ):
                raise bad("pscores", f"[{j}] = {p!r} is outside (0, 1]")
            pscores.append(float(p))
        set_(self, "pscores", pscores)
        ratings: list[float | None] = []
        for j, r in enumerate(self.ratings):
            ok = r is None or (
                not isinstance(r, bool)
                and isinstance(r, int | float | np.integer | np.floating)
                and r in (-1, 0, 1)
            )
            if not ok:
                raise bad("ratings", f"[{j}] = {r!r} is not -1, 0, +1 or None")
            ratings.append(None if r is None else float(r))
        set_(self, "ratings", ratings)
        flags = []
        for j, x in enumerate(self.explorer):
            if not isinstance(x, bool | np.bool_):
                raise bad("explorer", f"[{j}] must be a bool, got {x!r}")
            flags.append(bool(x))
        set_(self, "explorer", flags)

    @classmethod
    def from_feedback(
        cls,
        feedback: Feedback,
        *,
        run_id: str,
        step: int,
        session: str,
        intent: str,
        candidate_scores: Sequence[float],
        policy_version: str,
        graph_id: str | None = None,
        positions: Sequence[int] | None = None,
    ) -> FeedbackRecord:
        """A record of a scorer's :class:`~signet_rl.scorers.base.Feedback` (candidates by serialisation).

        Args:
            feedback: the rated interaction; its ``pscores`` must be present.
            run_id, step, session, intent, candidate_scores, policy_version: as the attributes.
            graph_id: defaults to ``feedback.query.graph_id``.
            positions: defaults to ``0..len(shown)-1``.
        """
        q = feedback.query
        timestamp = feedback.context.timestamp if feedback.context.timestamp is not None else q.timestamp
        n = len(feedback.shown)
        return cls(
            run_id=run_id,
            step=step,
            query_id=q.id,
            timestamp=timestamp,
            session=session,
            intent=intent,
            context={"entries": list(feedback.context.entries), "graph_id": graph_id or q.graph_id},
            candidates=[p.serialise() for p in feedback.paths],
            candidate_scores=list(candidate_scores),
            shown=list(feedback.shown),
            positions=list(positions) if positions is not None else list(range(n)),
            pscores=list(feedback.pscores),
            ratings=list(feedback.ratings),
            explorer=list(feedback.explorer) if feedback.explorer else [False] * n,
            policy_version=policy_version,
        )

    def to_row(self) -> dict[str, Any]:
        """This record as a row of :data:`SCHEMA` (context and extra as JSON)."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row["context"] = json.dumps(self.context, sort_keys=True)
        row["extra"] = json.dumps(self.extra, sort_keys=True)
        row["timestamp"] = None if self.timestamp is None else self.timestamp.value  # ns since epoch
        return row


class FeedbackLog:
    """An append-only list of :class:`FeedbackRecord`, saved as one Parquet file.

    Args:
        records: records to start with.
    """

    def __init__(self, records: Iterable[FeedbackRecord] = ()) -> None:
        self.records: list[FeedbackRecord] = []
        self.extend(records)

    def append(self, record: FeedbackRecord) -> None:
        if not isinstance(record, FeedbackRecord):
            raise TypeError(f"expected a FeedbackRecord, got {type(record).__name__}")
        self.records.append(record)

    def extend(self, records: Iterable[FeedbackRecord]) -> None:
        for r in records:
            self.append(r)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[FeedbackRecord]:
        return iter(self.records)

    def __getitem__(self, i: int) -> FeedbackRecord:
        return self.records[i]

    def to_table(self) -> pa.Table:
        """The log as an Arrow table with :data:`SCHEMA`."""
        rows = [r.to_row() for r in self.records]
        cols = {f.name: [row[f.name] for row in rows] for f in SCHEMA}
        return pa.Table.from_pydict(cols, schema=SCHEMA)

    def to_frame(self) -> pd.DataFrame:
        """The log as a DataFrame, one row per record (list columns hold arrays)."""
        return self.to_table().to_pandas()

    def write(self, path: str | os.PathLike[str]) -> FsPath:
        """Write the whole log to ``path`` atomically (a temporary file beside it, then ``os.replace``)."""
        target = FsPath(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            pq.write_table(self.to_table(), tmp)
            os.replace(tmp, target)
        except BaseException:
            FsPath(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> FeedbackLog:
        """Read a log written by :meth:`write`; every record is validated again.

        Raises:
            ValueError: a file whose columns do not match :data:`SCHEMA`, or an invalid record.
        """
        table = pq.read_table(path)
        missing = [n for n in SCHEMA.names if n not in table.column_names]
        if missing:
            raise ValueError(f"{os.fspath(path)!r} is not a feedback log: missing columns {missing}")
        table = table.select(SCHEMA.names).cast(SCHEMA)
        stamps = table.column("timestamp").cast(pa.int64()).to_pylist()
        rows = table.drop_columns(["timestamp"]).to_pylist()
        records = []
        for row, ns in zip(rows, stamps, strict=True):
            row["timestamp"] = None if ns is None else pd.Timestamp(ns, unit="ns", tz="UTC")
            row["context"] = json.loads(row["context"])
            row["extra"] = json.loads(row["extra"])
            records.append(FeedbackRecord(**row))
        return cls(records)
