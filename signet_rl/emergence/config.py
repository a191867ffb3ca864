"""Which emergent behaviours are on, and their thresholds: every one off by default.

The bandit trainer and the service read an :class:`EmergenceConfig` (from a config mapping with
:meth:`EmergenceConfig.from_mapping`) and run a mechanism only when its switch is on; until each is
measured on the synthetic benchmark, all of them stay off.

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
from signet_rl.emergence.staleness import ExplorerRegulator

__all__ = ["BridgeParams", "EmergenceConfig", "PrincipleParams"]

SWITCHES = ("cold_tier", "health", "bridges", "principles", "staleness", "prewarm")


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
    #: the trainer's explorer slot goes to a bridge candidate with an end among the query's entries
    #: (inside the training loop), before any other speculative path
    target_explorers: bool = False


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
class EmergenceConfig:
    """The switches (all False) and each mechanism's parameters."""

    cold_tier: bool = False
    health: bool = False
    bridges: bool = False
    principles: bool = False
    staleness: bool = False
    #: temporal pre-warm at each training session's start, logged and rated like any slate (issue 29 §5)
    prewarm: bool = False
    health_thresholds: HealthThresholds = field(default_factory=HealthThresholds)
    bridge: BridgeParams = field(default_factory=BridgeParams)
    principle: PrincipleParams = field(default_factory=PrincipleParams)
    regulator: ExplorerRegulator = field(default_factory=ExplorerRegulator)
    prewarm_config: PrewarmConfig = field(default_factory=PrewarmConfig)

    @property
    def enabled(self) -> tuple[str, ...]:
        """The names of the mechanisms switched on."""
        return tuple(s for s in SWITCHES if getattr(self, s))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> EmergenceConfig:
        """Build from a config mapping (e.g. ``cfg.emergence`` as a dict).

        Raises:
            ValueError: an unknown key (naming it and the known ones), a switch that is not a boolean,
                or a parameter the mechanism refuses.
        """
        values = dict(values or {})
        nested: dict[str, type[Any]] = {"health_thresholds": HealthThresholds, "bridge": BridgeParams,
                                        "principle": PrincipleParams, "regulator": ExplorerRegulator,
                                        "prewarm_config": PrewarmConfig}
        known = [*SWITCHES, *nested]
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
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
