"""Numeric-argument checks with one wording everywhere: ``"<name> must be <an integer|a number> <range>, got
<value>"``, optionally prefixed with the owner (``"LinUCBScorer: lam must be a number > 0, got 0"``).

At the bottom of the package so that every layer validates its arguments the same way. Booleans are never
numbers here (``True`` is an ``int`` to Python, never a count or a rate to signet_rl), and NaN is outside
every range.

    >>> check_range("noise_rate", 0.05, 0, 1)
    0.05
    >>> check_range("path_budget", 0, 1, integer=True)
    Traceback (most recent call last):
        ...
    ValueError: path_budget must be an integer >= 1, got 0
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import SupportsFloat, SupportsInt, cast

import numpy as np

__all__ = ["check_integer", "check_known_keys", "check_probability", "check_range", "describe_range"]

Bound = int | float


def describe_range(
    lo: Bound | None, hi: Bound | None, *, lo_open: bool = False, hi_open: bool = False
) -> str:
    """The range in words: ``>= 1``, ``> 0``, ``<= 5``, ``in [0, 1]``, ``in (0, 1]``; empty without bounds."""
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi}"
    return ""


def check_range(
    name: str,
    value: object,
    lo: Bound | None = None,
    hi: Bound | None = None,
    *,
    integer: bool = False,
    lo_open: bool = False,
    hi_open: bool = False,
    optional: bool = False,
    owner: str | None = None,
) -> float | None:
    """``value`` as a ``float`` (an ``int`` with ``integer``) once it is a number within ``[lo, hi]``.

    Args:
        name: the argument's name, as the caller spells it.
        value: what was passed.
        lo, hi: the bounds (None: unbounded on that side), inclusive unless ``lo_open`` / ``hi_open``.
        integer: require an integer (Python or numpy) instead of any real number.
        optional: None is allowed too (and returned); the message says so.
        owner: prefixes the message (``"<owner>: "``), e.g. the class the argument belongs to.

    Raises:
        ValueError: a bool, not a number (not an integer with ``integer``), NaN, or outside the range,
            naming the argument, the allowed values and what was passed.
    """
    if optional and value is None:
        return None
    return _number(name, value, lo, hi, integer, lo_open, hi_open, optional, owner)


def _number(
    name: str,
    value: object,
    lo: Bound | None,
    hi: Bound | None,
    integer: bool,
    lo_open: bool,
    hi_open: bool,
    or_none: bool,
    owner: str | None,
) -> float:
    """:func:`check_range` of a value that must be a number (``or_none``: the message allows None)."""
    kind = (numbers.Integral, np.integer) if integer else (numbers.Real, np.integer, np.floating)
    ok = not isinstance(value, bool | np.bool_) and isinstance(value, kind)
    if ok:
        v = float(cast(SupportsFloat, value))
        ok = v == v  # NaN is in no range
        if lo is not None:
            ok = ok and (v > lo if lo_open else v >= lo)
        if hi is not None:
            ok = ok and (v < hi if hi_open else v <= hi)
    if not ok:
        bounds = describe_range(lo, hi, lo_open=lo_open, hi_open=hi_open)
        allowed = ("an integer" if integer else "a number") + (f" {bounds}" if bounds else "")
        prefix = f"{owner}: " if owner else ""
        raise ValueError(f"{prefix}{name} must be {allowed}{' or None' if or_none else ''}, got {value!r}")
    number = cast(SupportsFloat, value)
    return int(cast(SupportsInt, number)) if integer else float(number)


def check_integer(
    name: str, value: object, lo: int | None = None, hi: int | None = None, *, owner: str | None = None
) -> int:
    """``value`` as an ``int`` once it is an integer in ``[lo, hi]`` (:func:`check_range`, ``integer``)."""
    return int(_number(name, value, lo, hi, True, False, False, False, owner))


def check_probability(name: str, value: object, *, owner: str | None = None) -> float:
    """``value`` as a ``float`` once it is a number in ``[0, 1]`` (:func:`check_range`)."""
    return _number(name, value, 0, 1, False, False, False, False, owner)


def check_known_keys(given: Iterable[str], known: Iterable[str], what: str) -> None:
    """Refuse keys outside ``known``: ``"<what> ['bad']; known: ['a', 'b']"`` (both sorted).

    >>> check_known_keys({"colour": 1}, ["seed"], "unknown demo keys")
    Traceback (most recent call last):
        ...
    ValueError: unknown demo keys ['colour']; known: ['seed']
    """
    allowed = set(known)
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise ValueError(f"{what} {unknown}; known: {sorted(allowed)}")
