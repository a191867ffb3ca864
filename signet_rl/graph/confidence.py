"""The confidence ladder: why an edge is believed, and how far.

Every dependency carries a ``reason`` — how it came to be known — and a ``confidence`` in [0, 1]. Each
reason has a prior confidence; feedback moves an edge up or down the ladder one rung at a time, and its
confidence follows the rung it lands on (never above the rung's prior when it is demoted, never below it
when it is promoted).

    >>> Reason.parse("pattern-matched").prior
    0.5
    >>> promote(Reason.SINGLE_MEMORY)
    <Reason.MULTI_MEMORY: 'multi-memory'>
    >>> demote(Reason.INFERRED)
    <Reason.LLM_UNCERTAIN: 'llm-uncertain'>

``user-asserted`` is only ever set by a person: machine feedback promotes to ``multi-memory`` at most unless
``ceiling=Reason.USER_ASSERTED`` is passed explicitly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_REASON",
    "LADDER",
    "Reason",
    "check_confidence",
    "demote",
    "ladder_step",
    "move",
    "promote",
    "reason_codes",
]


class Reason(StrEnum):
    """How an edge came to be known, lowest confidence first."""

    LLM_UNCERTAIN = "llm-uncertain"
    INFERRED = "inferred"
    PATTERN_MATCHED = "pattern-matched"
    SINGLE_MEMORY = "single-memory"
    MULTI_MEMORY = "multi-memory"
    USER_ASSERTED = "user-asserted"

    @property
    def prior(self) -> float:
        """The confidence an edge with this reason starts with."""
        return _PRIORS[self]

    @property
    def rung(self) -> int:
        """Position on the ladder, 0 (``llm-uncertain``) to 5 (``user-asserted``)."""
        return LADDER.index(self)

    @classmethod
    def parse(cls, value: str | Reason) -> Reason:
        """Parse a reason string, with an error that lists the allowed values.

        Raises:
            ValueError: ``value`` is not one of the six reasons.
        """
        if isinstance(value, Reason):
            return value
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(r.value for r in LADDER)
            raise ValueError(f"unknown reason {value!r}; expected one of: {allowed}") from None


_PRIORS: dict[Reason, float] = {
    Reason.USER_ASSERTED: 1.0,
    Reason.MULTI_MEMORY: 0.9,
    Reason.SINGLE_MEMORY: 0.7,
    Reason.PATTERN_MATCHED: 0.5,
    Reason.INFERRED: 0.4,
    Reason.LLM_UNCERTAIN: 0.3,
}

#: The ladder from least to most trusted.
LADDER: tuple[Reason, ...] = tuple(sorted(_PRIORS, key=_PRIORS.__getitem__))
#: The reason an edge gets when its source says nothing (Signet writes no reason at all).
DEFAULT_REASON = Reason.SINGLE_MEMORY

_PRIOR_BY_CODE = np.array([r.prior for r in LADDER], dtype=np.float32)


def check_confidence(value: float, where: str = "confidence") -> float:
    """Return ``value`` as a float if it is a finite number in [0, 1].

    Raises:
        ValueError: naming ``where`` and the bad value (NaN, infinite or out of range).
    """
    v = float(value)
    if math.isnan(v) or not 0.0 <= v <= 1.0:
        raise ValueError(f"{where}: confidence {value!r} is not a number in [0, 1]")
    return v


def promote(reason: Reason | str, ceiling: Reason = Reason.MULTI_MEMORY) -> Reason:
    """One rung up, stopping at ``ceiling`` (a reason already above the ceiling stays)."""
    r = Reason.parse(reason)
    if r.rung >= ceiling.rung:
        return r
    return LADDER[r.rung + 1]


def demote(reason: Reason | str, floor: Reason = Reason.LLM_UNCERTAIN) -> Reason:
    """One rung down, stopping at ``floor``."""
    r = Reason.parse(reason)
    if r.rung <= floor.rung:
        return r
    return LADDER[r.rung - 1]


def move(
    confidence: float,
    reason: Reason | str,
    steps: int,
    ceiling: Reason | str = Reason.MULTI_MEMORY,
    floor: Reason | str = Reason.LLM_UNCERTAIN,
) -> tuple[Reason, float]:
    """Move an edge ``steps`` rungs (positive up, negative down) and return its new reason and confidence.

    Promotion raises confidence to at least the new rung's prior; demotion lowers it to at most the new
    rung's prior. An edge whose confidence was already beyond the prior (learned evidence) keeps it.

    Raises:
        ValueError: a confidence outside [0, 1] or NaN, an unknown reason, a non-integer ``steps``, or a
            ``floor`` above the ``ceiling``.

        >>> move(0.7, "single-memory", +1)
        (<Reason.MULTI_MEMORY: 'multi-memory'>, 0.9)
        >>> move(0.7, "single-memory", -2)
        (<Reason.INFERRED: 'inferred'>, 0.4)
    """
    ceiling, floor = _bounds(ceiling, floor)
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer):
        raise ValueError(f"move: steps must be an integer, got {steps!r}")
    c = check_confidence(confidence, "move")
    r = Reason.parse(reason)
    for _ in range(abs(steps)):
        r = promote(r, ceiling) if steps > 0 else demote(r, floor)
    if steps > 0:
        c = max(c, r.prior)
    elif steps < 0:
        c = min(c, r.prior)
    return r, c


def _bounds(ceiling: Reason | str, floor: Reason | str) -> tuple[Reason, Reason]:
    """``(ceiling, floor)`` parsed, refusing a floor above the ceiling (no rung would satisfy both)."""
    ceiling, floor = Reason.parse(ceiling), Reason.parse(floor)
    if floor.rung > ceiling.rung:
        raise ValueError(
            f"floor {floor.value!r} (rung {floor.rung}) is above "
            f"ceiling {ceiling.value!r} (rung {ceiling.rung})"
        )
    return ceiling, floor


def reason_codes(values: Iterable[str]) -> npt.NDArray[np.int8]:
    """Map an iterable of reason strings to ladder rungs (int8), validating each one."""
    lookup = {r.value: r.rung for r in LADDER}
    out = []
    for i, v in enumerate(values):
        code = lookup.get(v)
        if code is None:
            allowed = ", ".join(r.value for r in LADDER)
            raise ValueError(f"row {i}: unknown reason {v!r}; expected one of: {allowed}")
        out.append(code)
    return np.asarray(out, dtype=np.int8)


def ladder_step(
    codes: npt.NDArray[np.integer],
    steps: npt.NDArray[np.integer] | int,
    confidence: npt.NDArray[np.floating] | None = None,
    ceiling: Reason | str = Reason.MULTI_MEMORY,
    floor: Reason | str = Reason.LLM_UNCERTAIN,
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Vectorised :func:`move` over arrays of rungs, for feedback on many edges at once.

    Args:
        codes: ladder rungs, shape ``[E]``.
        steps: rungs to move each edge, scalar or ``[E]``.
        confidence: current confidences ``[E]``; the priors of ``codes`` when omitted.

    Returns:
        The new rungs and confidences, each ``[E]``.

    Raises:
        ValueError: what :func:`move` refuses (a confidence outside [0, 1] or NaN, non-integer steps, a floor
            above the ceiling), and a code that is not a rung in ``[0, 5]``; each names the value and index.
    """
    ceiling, floor = _bounds(ceiling, floor)
    codes = np.asarray(codes)
    if codes.size and not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"ladder_step: codes must be integer rungs, got dtype {codes.dtype}")
    codes = codes.astype(np.int64)
    bad = np.flatnonzero((codes < 0) | (codes >= len(LADDER)))
    if bad.size:  # a -1 would otherwise index the last prior: user-asserted, confidence 1.0
        i = int(bad[0])
        raise ValueError(
            f"ladder_step: codes[{i}] = {int(codes.flat[i])} is not a ladder rung in [0, {len(LADDER) - 1}]"
        )
    steps_in = np.asarray(steps)
    if steps_in.size and not np.issubdtype(steps_in.dtype, np.integer):
        raise ValueError(f"ladder_step: steps must be integers, got dtype {steps_in.dtype}")
    if steps_in.ndim and steps_in.shape != codes.shape:
        raise ValueError(
            f"ladder_step: steps of shape {steps_in.shape} do not match codes of shape {codes.shape}"
        )
    steps_arr = np.broadcast_to(steps_in.astype(np.int64), codes.shape)
    if confidence is None:
        conf = _PRIOR_BY_CODE[codes]
    else:
        conf = np.asarray(confidence, dtype=np.float32)
        if conf.shape != codes.shape:
            raise ValueError(
                f"ladder_step: confidence of shape {conf.shape} does not match codes of shape {codes.shape}"
            )
        bad = np.flatnonzero(~((conf >= 0) & (conf <= 1)))  # NaN fails both comparisons
        if bad.size:
            i = int(bad[0])
            check_confidence(np.asarray(confidence).flat[i].item(), f"ladder_step confidence[{i}]")
    # Edges already above the ceiling (below the floor) stay where they are, as in promote/demote.
    up = steps_arr > 0
    new = codes.copy()
    new[up] = np.maximum(codes[up], np.minimum(codes[up] + steps_arr[up], ceiling.rung))
    down = steps_arr < 0
    new[down] = np.minimum(codes[down], np.maximum(codes[down] + steps_arr[down], floor.rung))
    prior = _PRIOR_BY_CODE[new]
    out = conf.astype(np.float32, copy=True)
    out[up] = np.maximum(conf[up], prior[up])
    out[down] = np.minimum(conf[down], prior[down])
    return new.astype(np.int8), out
