"""The search space: ``hydra.sweeper.params`` and command-line sweep overrides as Optuna distributions.

One entry per config key, in any of these forms::

    params:
      task.lr: {type: float, low: 1e-4, high: 1e-2, log: true}
      traversal.max_branching: {type: int, low: 2, high: 8, step: 2}
      scorer.hidden: [16, 32, 64]                   # a categorical
      traversal.max_depth: range(2, 5)              # Hydra's sweep grammar: 2, 3, 4 (stop excluded)
      scorer.alpha: tag(log, interval(0.1, 10))     # a float range on a log scale
      scorer.name: choice(gnn, linucb)

and the same grammar on the command line (``traversal.max_depth=range(2,5)``, ``a=1,2``). A key the config
does not have, an empty range, a non-positive bound on a log scale or an unknown field is refused with a
message naming the key and the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from omegaconf import DictConfig, ListConfig, OmegaConf

__all__ = ["SearchSpaceError", "check_keys", "describe", "from_override", "parse_param", "search_space"]

FIELDS = {"type", "low", "high", "log", "step", "choices"}
TYPES = ("float", "int", "categorical")


class SearchSpaceError(ValueError):
    """A search range that cannot be searched; the message names the key, the value and the way out."""


def _number(key: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise SearchSpaceError(f"signet_optuna: params.{key}: {name}={value!r} is not a finite number")
    return value


def _float(key: str, low: Any, high: Any, log: bool, step: Any = None) -> Any:
    import optuna

    lo, hi = float(_number(key, "low", low)), float(_number(key, "high", high))
    if lo >= hi:
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: the range [{low!r}, {high!r}] is empty; give low < high"
        )
    if log and lo <= 0:
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: a log scale needs low > 0, got low={low!r}; raise it or drop log"
        )
    if step is not None:
        step = float(_number(key, "step", step))
        if step <= 0:
            raise SearchSpaceError(f"signet_optuna: params.{key}: step={step!r} must be above 0")
        if log:
            raise SearchSpaceError(f"signet_optuna: params.{key}: a log scale takes no step; drop one")
        hi = lo + step * math.floor((hi - lo) / step + 1e-9)
    return optuna.distributions.FloatDistribution(lo, hi, log=log, step=step)


def _int(key: str, low: Any, high: Any, log: bool, step: Any = 1) -> Any:
    import optuna

    for name, v in (("low", low), ("high", high), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SearchSpaceError(f"signet_optuna: params.{key}: {name}={v!r} is not an integer")
    if step <= 0:
        raise SearchSpaceError(f"signet_optuna: params.{key}: step={step!r} must be above 0")
    if low > high:
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: the range [{low!r}, {high!r}] is empty; give low <= high"
        )
    if log and low <= 0:
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: a log scale needs low > 0, got low={low!r}; raise it or drop log"
        )
    if log and step != 1:
        raise SearchSpaceError(f"signet_optuna: params.{key}: a log scale takes no step; drop one")
    high = low + step * ((high - low) // step)
    return optuna.distributions.IntDistribution(low, high, log=log, step=step)


def _categorical(key: str, choices: Sequence[Any]) -> Any:
    import optuna

    values = list(choices)
    if not values:
        raise SearchSpaceError(f"signet_optuna: params.{key}: no choices to search; list at least one")
    for v in values:
        if v is not None and not isinstance(v, bool | int | float | str):
            raise SearchSpaceError(
                f"signet_optuna: params.{key}: choice {v!r} is a {type(v).__name__}; choices must be "
                "numbers, strings, booleans or null"
            )
    if len(set(map(repr, values))) != len(values):
        raise SearchSpaceError(f"signet_optuna: params.{key}: choices {values!r} repeat a value")
    return optuna.distributions.CategoricalDistribution(values)


def from_override(override: Override) -> Any:
    """The distribution of one sweep override (``interval``, ``range``, ``choice``, ``a,b``; tags ``log`` and
    ``int``)."""
    key = override.get_key_element()
    value = override.value()
    if isinstance(value, ChoiceSweep):
        return _categorical(key, list(value.list))  # a list or dict choice is refused there, named
    if isinstance(value, RangeSweep):
        start: Any = value.start
        stop: Any = value.stop
        step: Any = value.step
        if all(isinstance(v, int) for v in (start, stop, step)):
            if step <= 0:
                raise SearchSpaceError(f"signet_optuna: params.{key}: step={step!r} must be above 0")
            if start >= stop:
                raise SearchSpaceError(
                    f"signet_optuna: params.{key}: range({start}, {stop}) is empty (stop is excluded); "
                    "give start < stop"
                )
            return _int(key, start, stop - 1, "log" in value.tags, step)
        if start >= stop:
            raise SearchSpaceError(
                f"signet_optuna: params.{key}: range({start}, {stop}) is empty (stop is excluded); "
                "give start < stop"
            )
        return _float(key, start, stop - 1e-12 * abs(stop), "log" in value.tags, step)
    if isinstance(value, IntervalSweep):
        if "int" in value.tags:
            return _int(key, int(value.start or 0), int(value.end or 0), "log" in value.tags)
        return _float(key, value.start, value.end, "log" in value.tags)
    raise SearchSpaceError(
        f"signet_optuna: {key}={override.get_value_element_as_str()} is not a search range; use "
        "interval(low, high), range(start, stop[, step]), choice(a, b, ...) or a,b,..."
    )


def parse_param(key: str, spec: Any) -> Any:
    """The distribution of one ``params`` entry (see the module docstring)."""
    if isinstance(spec, DictConfig | ListConfig):
        spec = OmegaConf.to_container(spec, resolve=True)
    if isinstance(spec, str):
        (override,) = OverridesParser.create().parse_overrides([f"{key}={spec}"])
        if not override.is_sweep_override():
            raise SearchSpaceError(
                f"signet_optuna: params.{key}: {spec!r} is not a search range; use interval(low, high), "
                "range(start, stop[, step]), choice(a, b, ...), a list, or {type: ..., low: ..., high: ...}"
            )
        return from_override(override)
    if isinstance(spec, list | tuple):
        return _categorical(key, spec)
    if not isinstance(spec, Mapping):
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: {spec!r} is not a search range; use a list of choices, a sweep "
            "like interval(low, high), or {type: float|int|categorical, ...}"
        )
    unknown = sorted(set(map(str, spec)) - FIELDS)
    if unknown:
        raise SearchSpaceError(
            f"signet_optuna: params.{key}: unknown field {unknown[0]!r}; the fields are {sorted(FIELDS)}"
        )
    kind = spec.get("type")
    if kind not in TYPES:
        raise SearchSpaceError(f"signet_optuna: params.{key}: type={kind!r}; use one of {list(TYPES)}")
    if kind == "categorical":
        extra = sorted(set(spec) - {"type", "choices"})
        if extra:
            raise SearchSpaceError(
                f"signet_optuna: params.{key}: a categorical takes only choices, not {extra[0]!r}"
            )
        return _categorical(key, spec.get("choices") or [])
    for name in ("low", "high"):
        if name not in spec:
            raise SearchSpaceError(f"signet_optuna: params.{key}: a {kind} range needs {name}")
    log = bool(spec.get("log", False))
    if kind == "int":
        return _int(key, spec["low"], spec["high"], log, spec.get("step", 1))
    return _float(key, spec["low"], spec["high"], log, spec.get("step"))


def search_space(params: Mapping[str, Any] | None, overrides: Sequence[Override]) -> dict[str, Any]:
    """``key -> distribution`` from the config's ``params`` and the command line's sweep overrides (the
    command line wins on a key both give)."""
    space = {str(k): parse_param(str(k), v) for k, v in (params or {}).items()}
    for o in overrides:
        if o.is_sweep_override():
            space[o.get_key_element()] = from_override(o)
    return space


def check_keys(keys: Sequence[str], config: DictConfig) -> None:
    """Refuse a searched key the config does not have (``+key`` adds a new one, as on the command line)."""
    missing = object()
    for key in keys:
        if key.startswith("+"):
            continue
        if OmegaConf.select(config, key.lstrip("~"), default=missing) is not missing:
            continue
        parent, _, _ = key.rpartition(".")
        node = OmegaConf.select(config, parent, default=None) if parent else config
        have = sorted(str(k) for k in node if str(k) != "hydra") if isinstance(node, DictConfig) else []
        where = f"{parent} has {', '.join(have)}" if parent else f"top-level keys are {', '.join(have)}"
        raise SearchSpaceError(
            f"signet_optuna: cannot search {key!r}: the config has no such key ({where}); fix the name, or "
            f"write '+{key}' to add a new key"
        )


def describe(space: Mapping[str, Any]) -> dict[str, str]:
    """``key -> repr of its distribution``: stored with the study so a resumed sweep can check it searches
    the same space."""
    return {k: repr(v) for k, v in sorted(space.items())}
