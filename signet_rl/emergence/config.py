"""Which emergent behaviours are on, and their thresholds: every one off by default.

The bandit trainer and the service read an :class:`EmergenceConfig` (from a config mapping with
:meth:`EmergenceConfig.from_mapping`) and run a mechanism only when its switch is on; until each is
measured on the synthetic benchmark, all of them stay off. What each switch does, and where:

- ``health``, ``bridges``, ``principles``: after the trainer's loop, over the graph and the training
  feedback (:func:`signet_rl.emergence.components.after_training`, written to ``artifacts/emergence/``);
  in the service (``--emergence``), live, with their state in the service's own file.
  ``bridge.target_explorers`` also aims the trainer's explorer slot at bridge candidates inside the loop.
- ``prewarm``: the trainer's temporal pre-warm at each session start; the service's is ``--prewarm``.
- ``explorer``, ``regulation``: the **service's** explorer slots (issue 29 §1): with ``explorer`` each
  session (``sessionKey``) gets the base quota of speculative results (``exploration.min_slots``); with
  ``regulation`` the staleness signal of the service's own feedback log sets each new session's slots
  within the quota bounds (:class:`ExplorationParams`; :mod:`signet_rl.serving.exploration`). The trainer's
  are ``task.explorer_per_session`` and ``task.explorer_regulation`` (settings ``task.regulator``).
- ``rediscovery``: the trainer walks the hot part of a pruned graph (the entities of the pruning plan
  ``rediscover.plan`` start cold, in memory) and its explorer slot may step into cold territory; a
  positively rated cold path brings its entity back (:mod:`signet_rl.emergence.rediscovery`). A Signet
  store's cold tier still moves only offline, on a copy (``python -m signet_rl.emergence``).

Two mechanisms of issue 29 are **not** switches here, and naming them is an error that says where they
are (:data:`NOT_HERE`): self-regulating exploration is ``task.explorer_regulation`` (settings
``task.regulator``) in the trainer, and the cold tier moves rows only offline, on a store copy
(:func:`signet_rl.emergence.cold.move_to_cold`, from the pruning plan ``health`` writes).

    >>> EmergenceConfig().enabled
    ()
    >>> EmergenceConfig.from_mapping({"bridges": True, "bridge": {"promote_after": 5}}).bridge.promote_after
    5
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from signet_rl.emergence.health import HealthThresholds
from signet_rl.emergence.prewarm import PrewarmConfig
from signet_rl.emergence.rediscovery import RediscoveryParams

__all__ = ["BRIDGES_V3", "NOT_HERE", "BridgeParams", "EmergenceConfig", "ExplorationParams",
           "PrincipleParams"]

SWITCHES = ("health", "bridges", "principles", "prewarm", "explorer", "regulation", "rediscovery")

#: Keys an earlier EmergenceConfig accepted and no code read: each is refused with where the mechanism is.
NOT_HERE = {
    "staleness": "emergence.staleness is not a switch: self-regulating exploration is "
                 "task.explorer_regulation=true in the trainer (settings: task.regulator), and "
                 "emergence.regulation=true in the service (settings: emergence.exploration)",
    "regulator": "emergence.regulator is not read: the explorer regulator's settings are task.regulator "
                 "(with task.explorer_regulation=true in the trainer), and emergence.exploration in the "
                 "service (with emergence.regulation=true)",
    "cold_tier": "emergence.cold_tier is not a switch: rows move to the cold tier only offline, on a store "
                 "copy (signet_rl.emergence.cold.move_to_cold, e.g. with the pruning plan that "
                 "emergence.health=true writes to artifacts/emergence/pruning.json); nothing moves while "
                 "training or serving",
}


@dataclass(frozen=True)
class BridgeParams:
    """:func:`~signet_rl.emergence.bridges.find_bridges` and
    :class:`~signet_rl.emergence.bridges.BridgeTracker` settings."""

    min_similarity: float = 0.6
    min_lexical: float = 0.4
    mutual_top: int | None = None
    variant_overlap: float | None = None
    max_copies: int | None = None
    promote_after: int = 3
    climb_after: int = 2
    fade_after: int = 2
    #: the rung a promoted bridge's edge enters at (BridgeTracker.promote_reason): walkable at the default
    #: min_confidence 0.5
    promote_reason: str = "pattern-matched"
    #: the trainer's explorer slot goes to a bridge candidate with an end among the query's entries
    #: (inside the training loop), before any other speculative path
    target_explorers: bool = False

    def __post_init__(self) -> None:
        from signet_rl.emergence.bridges import check_promote_reason

        check_promote_reason(self.promote_reason)


#: The bridge thresholds chosen on synthetic v3 small's validation seeds 11 and 1001 with MiniLM
#: (docs/results.md, "Bridges on v3"); the recipe ``+experiment=emergence/bridges_v3`` sets them (and MiniLM)
#: for a training run. Not the defaults: the cosines are MiniLM's, and the service encodes with its policy's
#: encoder (often the hashing one, whose cosines are on another scale).
BRIDGES_V3 = BridgeParams(min_similarity=0.5, min_lexical=0.0, mutual_top=2, variant_overlap=0.4,
                          max_copies=2, promote_after=3, target_explorers=True)


@dataclass(frozen=True)
class PrincipleParams:
    """:func:`~signet_rl.emergence.principles.detect_principles` settings."""

    min_communities: int = 3
    min_similarity: float = 0.6
    min_lexical: float = 0.3
    min_tightness: float | None = None
    variant_overlap: float | None = None
    community_source: str = "graph"
    #: which attributes to look at (a regex on aspect name or content; None: decisions and preferences)
    pattern: str | None = None
    #: ``pairs`` (:func:`~signet_rl.emergence.principles.detect_principles`, the settings above) or ``values``
    #: (:func:`~signet_rl.emergence.principles.detect_value_principles`, the settings below; it reads
    #: ``min_communities``, ``variant_overlap`` (0.4 when None), ``community_source`` and ``pattern`` too)
    detector: str = "pairs"
    stem_prefix: int | None = 5
    max_df: int = 32  # stem_prefix, max_df, min_z: the validation choice (docs/results.md, issue 29)
    min_z: float = 3.0
    skip_names: bool = True
    skip_templates: bool = True

    def __post_init__(self) -> None:
        if self.detector not in ("pairs", "values"):
            raise ValueError(f"PrincipleParams.detector must be 'pairs' or 'values', got {self.detector!r}")


@dataclass(frozen=True)
class ExplorationParams:
    """The service's explorer slots (``emergence.explorer`` / ``emergence.regulation``): the staleness
    signal's settings (:func:`~signet_rl.emergence.staleness.session_signals`: ``window``,
    ``repeat_threshold``; ``history``: sessions read, at least ``2 * window``) and the regulator's
    (:class:`~signet_rl.emergence.staleness.ExplorerRegulator`: the rest, the seed's quota bounds by
    default: 1 slot per session, 2 when stale on a small slate, up to 30% of the slate slots)."""

    window: int = 3
    repeat_threshold: float = 0.7
    history: int = 12
    min_slots: int = 1
    max_slots: int = 2
    stale_share: float = 0.3
    stale_at: float = 2 / 3
    hit_floor: float = 0.2
    min_explorer_rated: int = 3
    drop_at: float | None = None

    def __post_init__(self) -> None:
        from signet_rl.emergence.staleness import session_signals

        self.regulator()  # validates the regulator's settings
        session_signals([], window=self.window, repeat_threshold=self.repeat_threshold)
        history = self.history
        if isinstance(history, bool) or not isinstance(history, int) or history < 2 * self.window:
            raise ValueError(f"emergence.exploration.history must be an integer >= 2 * window = "
                             f"{2 * self.window}, got {self.history!r}")

    def regulator(self) -> Any:
        """The :class:`~signet_rl.emergence.staleness.ExplorerRegulator` these settings describe."""
        from signet_rl.emergence.staleness import ExplorerRegulator

        return ExplorerRegulator(min_slots=self.min_slots, max_slots=self.max_slots,
                                 stale_share=self.stale_share, stale_at=self.stale_at,
                                 hit_floor=self.hit_floor,
                                 min_explorer_rated=self.min_explorer_rated, drop_at=self.drop_at)


@dataclass(frozen=True)
class EmergenceConfig:
    """The switches (all False) and each mechanism's parameters (module docstring: what each runs)."""

    health: bool = False
    bridges: bool = False
    principles: bool = False
    #: temporal pre-warm at each training session's start, logged and rated like any slate (issue 29 §5)
    prewarm: bool = False
    #: the service's explorer slots at the base quota (issue 29 §1; the trainer's: task.explorer_per_session)
    explorer: bool = False
    #: the service's explorer slots set per session by the staleness signal (implies ``explorer``)
    regulation: bool = False
    health_thresholds: HealthThresholds = field(default_factory=HealthThresholds)
    bridge: BridgeParams = field(default_factory=BridgeParams)
    principle: PrincipleParams = field(default_factory=PrincipleParams)
    prewarm_config: PrewarmConfig = field(default_factory=PrewarmConfig)
    exploration: ExplorationParams = field(default_factory=ExplorationParams)
    #: explorers into the cold tier of a pruned graph inside the training loop (issue 29 §4)
    rediscovery: bool = False
    rediscover: RediscoveryParams = field(default_factory=RediscoveryParams)

    @property
    def enabled(self) -> tuple[str, ...]:
        """The names of the mechanisms switched on."""
        return tuple(s for s in SWITCHES if getattr(self, s))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> EmergenceConfig:
        """Build from a config mapping (e.g. ``cfg.emergence`` as a dict).

        Raises:
            ValueError: a key of :data:`NOT_HERE` (saying where that mechanism is), an unknown key (naming
                it and the known ones), a switch that is not a boolean, or a parameter the mechanism refuses.
        """
        values = dict(values or {})
        nested: dict[str, type[Any]] = {"health_thresholds": HealthThresholds, "bridge": BridgeParams,
                                        "principle": PrincipleParams, "prewarm_config": PrewarmConfig,
                                        "exploration": ExplorationParams, "rediscover": RediscoveryParams}
        known = [*SWITCHES, *nested]
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            if key in NOT_HERE:
                raise ValueError(NOT_HERE[key])
            if key not in known:
                raise ValueError(f"emergence: unknown key {key!r}; known: {', '.join(known)}")
            if key in SWITCHES:
                if not isinstance(value, bool):
                    raise ValueError(f"emergence.{key} must be true or false, got {value!r}")
                kwargs[key] = value
                continue
            kind = nested[key]
            sub = dict(value or {})
            fields = [f.name for f in dataclasses.fields(kind)]
            unknown = [k for k in sub if k not in fields]
            if unknown:
                raise ValueError(f"emergence.{key}: unknown key {unknown[0]!r}; known: {', '.join(fields)}")
            kwargs[key] = kind(**sub)
        return cls(**kwargs)
