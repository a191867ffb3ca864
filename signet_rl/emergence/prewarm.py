"""Temporal pre-warm: the push path at session start, before any query (issue 29 §5).

The seed's rhythm: paths walked every morning burn in, so the system can build context before the query
arrives. :class:`TemporalPrewarm` keeps the *reinforcement statistics by time*: every rated path of the
feedback log (``-1``, ``0``, ``+1``) with the hour of day and the kind of day (weekday or weekend) it was
rated at. At a session's start, at time ``t`` with no query, a path's pre-warm score is

.. math:: s(p, t) = \\sum_{i \\in \\text{ratings of } p} r_i \\; K(h_i, h_t) \\; D(w_i, w_t) \\; 2^{-a_i / T}

with ``K`` a Gaussian in circular hour distance (``hour_width`` hours), ``D`` 1 for the same kind of day and
``other_day_weight`` otherwise, ``a_i`` the rating's age in days at ``t`` and ``T`` ``half_life_days``.
Paths with a positive score are the candidates; :func:`prewarm_slate` picks a slate of them with the
exploration module's exact propensities and packs their constructed memories, best first, into Signet's
"predicted" budget (600 characters; a memory that does not fit is skipped, never cut). The slate is logged
as a :class:`~signet_rl.learning.feedback_log.FeedbackRecord` like any other (:func:`prewarm_record`), so
the session's ratings of pre-warmed memories feed the same statistics (:meth:`TemporalPrewarm.observe`).

:func:`signet_session_start` is the comparison: Signet's own session-start candidates, memories scored
``importance · 0.95^age_days`` (pinned ones first, scored 1.0), packed into the same budget.

Times are read in UTC (the timeline's own clock). Off by default: the service pre-warms only when started
with it (``signet_rl.serve --prewarm``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import Unit
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.learning.exploration import select_slate
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.traversal.path import Path, PathError

__all__ = [
    "PREDICTED_BUDGET",
    "PREWARM_INTENT",
    "PrewarmConfig",
    "PrewarmSlate",
    "TemporalPrewarm",
    "TrainerPrewarm",
    "prewarm_record",
    "prewarm_slate",
    "signet_session_start",
]

#: Signet's session-start "predicted" section, in characters.
PREDICTED_BUDGET = 600
#: The intent a pre-warm slate is logged with.
PREWARM_INTENT = "prewarm"
_NS_PER_DAY = 86400 * 10**9


@dataclass(frozen=True)
class PrewarmConfig:
    """Settings of :class:`TemporalPrewarm` and :func:`prewarm_slate`.

    Attributes:
        hour_width: the hour kernel's standard deviation, in hours (> 0).
        other_day_weight: weight of ratings from the other kind of day (weekday / weekend), in [0, 1].
        half_life_days: age at which a rating counts half (> 0).
        budget_chars: characters the pre-warmed memories may take (Signet's 600).
        max_paths: most paths in a slate (>= 1).
        strategy: the slate's exploration (:data:`~signet_rl.learning.exploration.STRATEGIES` but
            ``thompson``).
        epsilon, temperature: ``epsilon``'s and ``softmax``'s settings.
    """

    hour_width: float = 1.5
    other_day_weight: float = 0.3
    half_life_days: float = 30.0
    budget_chars: int = PREDICTED_BUDGET
    max_paths: int = 10
    strategy: str = "greedy"
    epsilon: float = 0.1
    temperature: float = 0.5

    def __post_init__(self) -> None:
        for name in ("hour_width", "half_life_days"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
                raise ValueError(f"prewarm.{name} must be a finite number > 0, got {value!r}")
        if not 0 <= self.other_day_weight <= 1:
            raise ValueError(f"prewarm.other_day_weight must be in [0, 1], got {self.other_day_weight!r}")
        for name in ("budget_chars", "max_paths"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"prewarm.{name} must be an integer >= 1, got {value!r}")
        if self.strategy not in ("greedy", "epsilon", "softmax"):
            raise ValueError(f"prewarm.strategy must be greedy, epsilon or softmax, got {self.strategy!r}")

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> PrewarmConfig:
        """From a config mapping; an unknown key is named with the known ones."""
        values = dict(values or {})
        known = list(cls.__dataclass_fields__)
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"prewarm: unknown key {unknown[0]!r}; known: {', '.join(known)}")
        return cls(**values)


def _utc(at: Any) -> pd.Timestamp:
    ts = pd.Timestamp(at)
    if pd.isna(ts):
        raise ValueError(f"pre-warm needs a session start time, got {at!r}")
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


class TemporalPrewarm:
    """Rated paths with the hour and kind of day of each rating; scores them for a session start.

    Args:
        config: the kernel and slate settings.

    >>> m = TemporalPrewarm()
    >>> rec = FeedbackRecord(run_id="r", step=0, query_id="q", timestamp=pd.Timestamp("2026-01-05 09:00Z"),
    ...     session="s", intent="what", context={"entries": ["e1"], "graph_id": "g"},
    ...     candidates=["E:e1>D+:d1>E:e2"], candidate_scores=[1.0], shown=[0], positions=[0],
    ...     pscores=[1.0], ratings=[1], explorer=[False], policy_version="v")
    >>> m.observe([rec])
    1
    >>> m.scores(pd.Timestamp("2026-01-06 09:00Z")).round(3).to_dict()
    {'E:e1>D+:d1>E:e2': 0.977}
    """

    def __init__(self, config: PrewarmConfig | None = None) -> None:
        self.config = config or PrewarmConfig()
        self._paths: list[str] = []
        self._ns: list[int] = []
        self._ratings: list[float] = []

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: str, at: Any, rating: float) -> None:
        """Add one rating of the walk ``path`` (its serialisation) given at ``at`` (a time or epoch seconds).

        Raises:
            ValueError: ``path`` is not a walk's serialisation, or ``at`` no time.
        """
        Path.parse(path)
        ts = pd.Timestamp(float(at), unit="s", tz="UTC") if isinstance(at, int | float) else _utc(at)
        self._paths.append(path)
        self._ns.append(int(ts.value))
        self._ratings.append(float(rating))

    def observe(self, records: Iterable[FeedbackRecord]) -> int:
        """Add every rated shown path of ``records`` (dated ones; a candidate logged by id only, which cannot
        be walked again, is left out). Returns how many ratings were added."""
        added = 0
        for rec in records:
            if rec.timestamp is None:
                continue
            ns = int(rec.timestamp.value)
            for idx, rating in zip(rec.shown, rec.ratings, strict=True):
                if rating is None:
                    continue
                text = rec.candidates[idx]
                try:
                    Path.parse(text)
                except PathError:
                    continue
                self._paths.append(text)
                self._ns.append(ns)
                self._ratings.append(float(rating))
                added += 1
        return added

    def scores(self, at: Any) -> pd.Series:
        """Every path's pre-warm score at ``at`` (module docstring) from the ratings before ``at``, positive
        ones only, best first (ties by path text)."""
        t = _utc(at)
        if not self._paths:
            return pd.Series(dtype=np.float64)
        c = self.config
        ns = np.asarray(self._ns, dtype=np.int64)
        before = ns < t.value
        if not before.any():
            return pd.Series(dtype=np.float64)
        ns = ns[before]
        ratings = np.asarray(self._ratings)[before]
        paths = np.asarray(self._paths, dtype=object)[before]
        stamps = pd.to_datetime(ns, utc=True)
        hours = stamps.hour.to_numpy() + stamps.minute.to_numpy() / 60.0
        diff = np.abs(hours - (t.hour + t.minute / 60.0))
        diff = np.minimum(diff, 24.0 - diff)
        kernel = np.exp(-0.5 * (diff / c.hour_width) ** 2)
        same_day_kind = (stamps.day_of_week.to_numpy() >= 5) == (t.day_of_week >= 5)
        day = np.where(same_day_kind, 1.0, c.other_day_weight)
        age = (t.value - ns) / _NS_PER_DAY
        w = ratings * kernel * day * np.exp2(-age / c.half_life_days)
        total = pd.Series(w).groupby(paths).sum()
        total = total[total > 0]
        order = np.lexsort((total.index.to_numpy().astype(str), -total.to_numpy()))
        return total.iloc[order]


@dataclass(frozen=True)
class PrewarmSlate:
    """A session start's pre-warmed memories.

    Attributes:
        candidates: the candidate paths' texts (best first) and ``scores`` their pre-warm scores.
        shown: indices into ``candidates`` of the injected paths, in injection order.
        pscores: each injected path's propensity: its inclusion probability in the drawn slate.
        units: the injected constructed memories (one per shown path); their text fits ``budget_chars``.
    """

    candidates: list[str]
    scores: list[float]
    shown: list[int]
    pscores: list[float]
    units: list[Unit]

    @property
    def chars(self) -> int:
        """Characters injected."""
        return sum(len(u.text) for u in self.units)


def prewarm_slate(
    model: TemporalPrewarm,
    at: Any,
    construct: Callable[[Path], Unit],
    rng: np.random.Generator,
    config: PrewarmConfig | None = None,
) -> PrewarmSlate:
    """Pick and pack the pre-warm slate for a session starting at ``at``.

    The top ``max_paths`` candidates by score are the pool; a slate of ``max_paths`` of them is drawn with
    ``strategy`` (:func:`~signet_rl.learning.exploration.select_slate`: exact inclusion probabilities; greedy
    gives 1); its constructed memories are packed in slate order into ``budget_chars`` (one that does not fit
    is skipped and not logged). ``construct`` builds a path's memory at ``at`` (a
    :class:`~signet_rl.traversal.construct.MemoryBuilder`'s ``construct``).
    """
    c = config or model.config
    t = _utc(at)
    scores = model.scores(t).head(c.max_paths)
    cands = [str(p) for p in scores.index]
    if not cands:
        return PrewarmSlate([], [], [], [], [])
    slate = select_slate(scores.to_numpy(dtype=np.float64), len(cands), c.strategy, rng, epsilon=c.epsilon,
                         temperature=c.temperature)  # fmt: skip
    shown: list[int] = []
    pscores: list[float] = []
    units: list[Unit] = []
    left = c.budget_chars
    for idx, p in zip(slate.indices.tolist(), slate.propensities.tolist(), strict=True):
        unit = construct(Path.parse(cands[idx]))
        if not unit.text or len(unit.text) > left:
            continue
        left -= len(unit.text)
        shown.append(int(idx))
        pscores.append(float(p))
        units.append(unit)
    return PrewarmSlate(cands, scores.round(12).tolist(), shown, pscores, units)


def prewarm_record(slate: PrewarmSlate, *, at: Any, session: str, graph_id: str, run_id: str, step: int,
                   ratings: Sequence[float | None] | None = None,
                   policy_version: str = "prewarm") -> FeedbackRecord:
    """The pre-warm slate as a feedback record (query id ``prewarm:<session>``, intent ``prewarm``), with
    the session's ratings of its memories when known (None: unrated yet)."""
    ratings = list(ratings) if ratings is not None else [None] * len(slate.shown)
    return FeedbackRecord(
        run_id=run_id, step=step, query_id=f"prewarm:{session}", timestamp=_utc(at), session=session,
        intent=PREWARM_INTENT, context={"entries": [], "graph_id": graph_id},
        candidates=list(slate.candidates),
        candidate_scores=list(slate.scores), shown=list(slate.shown), positions=list(range(len(slate.shown))),
        pscores=list(slate.pscores), ratings=ratings, explorer=[False] * len(slate.shown),
        policy_version=policy_version,
    )  # fmt: skip


def signet_session_start(graph: KnowledgeGraph, at: Any, budget_chars: int = PREDICTED_BUDGET,
                         decay: float = 0.95) -> Unit:
    """Signet's own session-start candidates at ``at`` in ``budget_chars``: memories created by then (not
    deleted), pinned first (score 1.0), then by ``importance · decay^age_days``; whole memories, packed best
    first (one that does not fit is skipped). Returns one unit listing the memory ids it injects."""
    t = _utc(at)
    mem = graph.memories
    created = pd.to_datetime(mem["created_at"], utc=True)
    live = (created <= t) & ~mem["is_deleted"].astype(bool)
    m = mem[live]
    age = (t - created[live]).dt.total_seconds().to_numpy() / 86400.0
    score = np.where(m["pinned"].astype(bool), 1.0, m["importance"].to_numpy(dtype=np.float64) * decay**age)
    pinned = m["pinned"].astype(bool).to_numpy()
    order = np.lexsort((m["id"].astype(str).to_numpy(), -score, ~pinned))
    ids: list[str] = []
    texts: list[str] = []
    left = budget_chars
    contents = m["content"].astype(str).to_numpy()
    mids = m["id"].astype(str).to_numpy()
    for i in order.tolist():
        text = contents[i]
        if len(text) + (1 if texts else 0) > left:
            continue
        left -= len(text) + (1 if texts else 0)
        ids.append(mids[i])
        texts.append(text)
        if left <= 0:
            break
    return Unit(text="\n".join(texts), items=tuple(ids), kind="memory")


class TrainerPrewarm:
    """Pre-warm inside the bandit trainer (:attr:`signet_rl.learning.trainer.BanditTrainer.session_start`):
    at each session's start it reads the ratings logged since its last call into its
    :class:`TemporalPrewarm` statistics — pre-warm slates' own ratings included, so they learn from the
    sessions' ratings like any slate — and draws the slate for the session's start time.

    Args:
        config: the kernel and slate settings (Signet's 600-character "predicted" budget by default).
    """

    def __init__(self, config: PrewarmConfig | None = None) -> None:
        self.model = TemporalPrewarm(config)
        self._seen = 0

    def __call__(self, query: Any, construct: Callable[[Path], Unit], records: Sequence[FeedbackRecord],
                 rng: np.random.Generator) -> PrewarmSlate:
        if len(records) < self._seen:  # a fresh log (a resumed run re-reads it from the start)
            self.model, self._seen = TemporalPrewarm(self.model.config), 0
        self.model.observe(records[self._seen:])
        self._seen = len(records)
        return prewarm_slate(self.model, query.timestamp, construct, rng)
