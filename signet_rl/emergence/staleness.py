"""Self-regulating exploration: a staleness signal per user timeline, and the explorer share it sets.

:func:`session_signals` reads a timeline's feedback log session by session (sessions in the order of their
first record) and measures three things the seed calls staleness:

- ``repeat_share``: the share of a session's shown paths that were already shown in the previous
  ``window`` sessions (the same paths every session);
- ``novelty``: entities and dependencies on its shown paths never seen on an earlier session's path (no
  new entities or edges);
- ``explorer_hit_rate``: positive ratings per rated explorer item over the last ``window`` sessions, and
  whether it fell against the ``window`` sessions before (falling explorer hit rate).

``staleness`` is the share of the three signs present, in [0, 1] (the first session is never stale).
A fourth reading, ``routine_drop``, is how far the mean rating of the routine (non-explorer) items fell over
the last ``window`` sessions against the ``window`` before: the paths the policy knows stopped paying, which
is what a drift in the user's needs looks like from the feedback alone.

:class:`ExplorerRegulator` turns them into the next session's explorer slots: the base quota normally
(``min_slots``, 1); when stale (``staleness >= stale_at``, or ``routine_drop >= drop_at``) up to
``stale_share`` of the session's slate slots (never fewer than ``max_slots``, 2); and back to the base when
exploration stops paying (enough rated explorer items, hit rate below ``hit_floor``).
:meth:`ExplorerRegulator.quota` gives it as an :class:`~signet_rl.learning.exploration.ExplorerQuota`;
:func:`regulated_slots` is the bandit trainer's hook (``task.explorer_regulation``). Off by default: the
trainer's fixed quota is used unless configured otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.learning.exploration import ExplorerQuota
from signet_rl.learning.feedback_log import FeedbackRecord
from signet_rl.traversal.path import HopKind, Path, PathError

__all__ = ["ExplorerRegulator", "regulated_slots", "session_signals"]


def _items(text: str) -> set[str]:
    """``E:id`` and ``D:id`` tokens of a logged path (nothing for a candidate logged by id only)."""
    try:
        path = Path.parse(text)
    except PathError:
        return set()
    return {f"{h.kind.value}:{h.id}" for h in path.hops if h.kind in (HopKind.ENTITY, HopKind.DEPENDENCY)}


def session_signals(records: Iterable[FeedbackRecord], *, window: int = 3,
                    repeat_threshold: float = 0.7) -> pd.DataFrame:
    """Per-session staleness signals of one timeline (module docstring).

    Args:
        records: the timeline's feedback log (any order; grouped by ``session``, ordered by first
            timestamp, then step).
        window: sessions compared against.
        repeat_threshold: ``repeat_share`` at or above which paths count as repeating.

    Returns:
        One row per session: ``session``, ``shown``, ``repeat_share``, ``new_items``, ``explorer_rated``,
        ``explorer_hits``, ``explorer_hit_rate`` (trailing window, NaN before any rated explorer item),
        ``hit_rate_falling``, ``staleness``, ``slots`` (slate slots the session showed), ``routine_rating``
        (mean rating of rated routine items over the trailing window, NaN when none) and ``routine_drop``
        (the window before's ``routine_rating`` minus this one; NaN until both exist).
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    if not 0 < repeat_threshold <= 1:
        raise ValueError(f"repeat_threshold must be in (0, 1], got {repeat_threshold!r}")
    order: dict[str, tuple[pd.Timestamp, int]] = {}
    by_session: dict[str, list[FeedbackRecord]] = {}
    never = pd.Timestamp.max.tz_localize("UTC")
    for rec in records:
        key = (rec.timestamp if rec.timestamp is not None else never, rec.step)
        order[rec.session] = min(order.get(rec.session, key), key)
        by_session.setdefault(rec.session, []).append(rec)
    sessions = sorted(order, key=lambda s: (order[s], s))
    rows = []
    shown_hist: list[set[str]] = []
    seen: set[str] = set()
    rated_hist: list[int] = []
    hits_hist: list[int] = []
    routine_n: list[int] = []
    routine_sum: list[float] = []
    for s in sessions:
        shown: set[str] = set()
        items: set[str] = set()
        rated = hits = slots = r_n = 0
        r_sum = 0.0
        for rec in sorted(by_session[s], key=lambda r: r.step):
            slots += len(rec.shown)
            for item, rating, explorer in zip(rec.shown, rec.ratings, rec.explorer, strict=True):
                text = rec.candidates[item]
                shown.add(text)
                items |= _items(text)
                if explorer and rating is not None:
                    rated += 1
                    hits += rating > 0
                elif rating is not None:
                    r_n += 1
                    r_sum += float(rating)
        recent = set().union(*shown_hist[-window:]) if shown_hist else set()
        repeat = len(shown & recent) / len(shown) if shown and shown_hist else 0.0
        new = len(items - seen) if shown_hist else len(items)
        rated_hist.append(rated)
        hits_hist.append(hits)
        now_rated, now_hits = sum(rated_hist[-window:]), sum(hits_hist[-window:])
        before_rated = sum(rated_hist[-2 * window:-window])
        before_hits = sum(hits_hist[-2 * window:-window])
        rate = now_hits / now_rated if now_rated else math.nan
        before = before_hits / before_rated if before_rated else math.nan
        falling = bool(now_rated and before_rated and rate < before)
        signs = [repeat >= repeat_threshold, new == 0, falling]
        routine_n.append(r_n)
        routine_sum.append(r_sum)
        now_n, before_n = sum(routine_n[-window:]), sum(routine_n[-2 * window:-window])
        routine = sum(routine_sum[-window:]) / now_n if now_n else math.nan
        routine_before = sum(routine_sum[-2 * window:-window]) / before_n if before_n else math.nan
        rows.append({"session": s, "shown": len(shown), "repeat_share": repeat, "new_items": new,
                     "explorer_rated": now_rated, "explorer_hits": now_hits, "explorer_hit_rate": rate,
                     "hit_rate_falling": falling,
                     "staleness": float(np.mean(signs)) if shown_hist else 0.0, "slots": slots,
                     "routine_rating": routine, "routine_drop": routine_before - routine})
        shown_hist.append(shown)
        seen |= items
    return pd.DataFrame(rows, columns=["session", "shown", "repeat_share", "new_items", "explorer_rated",
                                       "explorer_hits", "explorer_hit_rate", "hit_rate_falling",
                                       "staleness", "slots", "routine_rating", "routine_drop"])


@dataclass(frozen=True)
class ExplorerRegulator:
    """The next session's explorer slots from the last session's signals.

    Attributes:
        min_slots: the base quota (the seed's 1 per session).
        max_slots: the most slots a stale timeline gets on a small slate (the seed's 2).
        stale_share: share of a slate explorers may take when stale (the seed's 30%).
        stale_at: ``staleness`` at or above which a timeline is stale.
        hit_floor: explorer hit rate below which exploration stops paying.
        min_explorer_rated: rated explorer items (trailing window) needed before judging the hit rate.
        drop_at: ``routine_drop`` at or above which a timeline is stale too (the routine stopped paying);
            None: only ``staleness`` counts.
    """

    min_slots: int = 1
    max_slots: int = 2
    stale_share: float = 0.3
    stale_at: float = 2 / 3
    hit_floor: float = 0.2
    min_explorer_rated: int = 3
    drop_at: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.min_slots <= self.max_slots:
            raise ValueError(f"need 0 <= min_slots <= max_slots, got {self.min_slots!r} and "
                             f"{self.max_slots!r}")
        for name in ("stale_share", "stale_at", "hit_floor"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"ExplorerRegulator.{name} must be in [0, 1], got {value!r}")
        if self.drop_at is not None and not 0 < self.drop_at <= 2:
            raise ValueError(f"ExplorerRegulator.drop_at must be in (0, 2] or None, got {self.drop_at!r}")

    def stale(self, signal: pd.Series) -> bool:
        """``staleness >= stale_at``, or (with ``drop_at``) the routine's rating fell by ``drop_at``."""
        if signal["staleness"] >= self.stale_at:
            return True
        drop = signal.get("routine_drop", math.nan)
        return bool(self.drop_at is not None and not math.isnan(drop) and drop >= self.drop_at)

    def paying(self, signal: pd.Series) -> bool:
        """False when enough explorer items were rated and too few of them positively."""
        if signal["explorer_rated"] < self.min_explorer_rated:
            return True
        return bool(signal["explorer_hit_rate"] >= self.hit_floor)

    def slots(self, signal: pd.Series, slate_size: int) -> int:
        """Explorer slots for the session after the one ``signal`` (a :func:`session_signals` row)
        describes."""
        if isinstance(slate_size, bool) or not isinstance(slate_size, int) or slate_size < 1:
            raise ValueError(f"slate_size must be an integer >= 1, got {slate_size!r}")
        if not self.paying(signal) or not self.stale(signal):
            return min(self.min_slots, slate_size)
        return min(slate_size, max(self.max_slots, math.floor(self.stale_share * slate_size)))

    def quota(self, signal: pd.Series, slate_size: int) -> ExplorerQuota:
        """:meth:`slots` as a per-session :class:`ExplorerQuota`."""
        n = self.slots(signal, slate_size)
        return ExplorerQuota(per_session=n, max_per_session=max(n, self.max_slots))


def regulated_slots(window: int = 3, repeat_threshold: float = 0.7, history: int = 12,
                    **regulator: Any) -> Callable[[Sequence[FeedbackRecord], int], int]:
    """The bandit trainer's explorer regulator (``task.explorer_regulation``; settings: ``task.regulator``).

    The returned function takes the feedback logged so far and the slate size and gives the explorer slots of
    the session about to open: :meth:`ExplorerRegulator.slots` of the last session's signals (read over the
    last ``history`` sessions, so a long log costs no more than a short one), with the stale share taken of
    the slate slots that session showed (``slots``; at least ``slate_size``). No feedback yet: ``min_slots``.

    Args:
        window, repeat_threshold: :func:`session_signals`'s.
        history: sessions read (>= 2 * window; ``new_items`` counts items unseen in them).
        **regulator: :class:`ExplorerRegulator` fields.

    Raises:
        ValueError: an unknown setting (naming it and the known ones) or one the regulator refuses.
    """
    known = [f.name for f in fields(ExplorerRegulator)]
    unknown = sorted(set(regulator) - set(known))
    if unknown:
        raise ValueError(f"task.regulator: unknown key {unknown[0]!r}; known: window, repeat_threshold, "
                         f"history, {', '.join(known)}")
    if isinstance(history, bool) or not isinstance(history, int) or history < 2 * window:
        raise ValueError(f"task.regulator.history must be an integer >= 2 * window = {2 * window}, "
                         f"got {history!r}")
    reg = ExplorerRegulator(**regulator)
    session_signals([], window=window, repeat_threshold=repeat_threshold)  # validates both

    def slots(records: Sequence[FeedbackRecord], slate_size: int) -> int:
        if not records:
            return min(reg.min_slots, slate_size)
        keep: set[str] = set()
        tail: list[FeedbackRecord] = []
        for rec in reversed(records):  # the log is in step order: the last sessions are at its end
            if rec.session not in keep:
                if len(keep) == history:
                    break
                keep.add(rec.session)
            tail.append(rec)
        signal = session_signals(tail, window=window, repeat_threshold=repeat_threshold).iloc[-1]
        return reg.slots(signal, max(slate_size, int(signal["slots"])))

    return slots
