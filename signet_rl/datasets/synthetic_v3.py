"""Synthetic benchmark, generator version 3: v2 with junk, values, recurring bridges and a drift of kind.

Version 3 (dataset option ``version: 3``; version 2 stays the configured default and is unchanged) keeps
everything of :mod:`signet_rl.datasets.synthetic_v2` and changes four planted things so that each looks
like what real memory has. None of them follows a rule of the method measured on it; each is argued from
real use:

* **Noise entities are passing mentions** (``noise_entity_rate``, as in v2). In real memory junk is the
  café named once, the colleague of a friend mentioned in passing: it is written in one session and never
  comes up again. A v3 noise entity has the same templates and draws its aspects and facts like any entity
  (it has no link facts, having no edges), but all of them are written in **one memory of its own**,
  which mentions no other entity; it is never updated (no later memory supersedes its facts), no
  distractor memory is written about it, and **no dependency** touches it (an edge is stated by a memory
  that names both ends, and its one memory names nothing else). v2 drew noise like any entity: its facts
  were dealt into the shared memories with the real entities, updated and linked like theirs, so nothing a
  deployed system sees set it apart.
* **Principles are values stated in unrelated contexts** (:data:`~signet_rl.datasets.vocab.PRINCIPLES_V3`).
  A person who cares about privacy says privacy-ish things at work, with friends and at home: each statement
  is worded differently (no shared template) but names the value in some word form ("protect privacy",
  "anything private"). v2's paraphrases were behaviours that share no word or meaning an encoder measures
  (mean pairwise MiniLM cosine 0.09–0.23).
* **Bridges come up more than once.** A real cross-entity fact ("the oregon trip overlaps with the
  buildkite migration") is needed whenever either side is planned. Each planted bridge is asked about on
  ``2 + Poisson(bridge_recurrence - 2)`` occasions, at times spread over ``bridge_span`` of the timeline
  after both copies are written; the number of bridges is sized so that the bridge queries stay the share
  ``bridge_share`` of *relate* queries (``relate share × n_queries × bridge_share / bridge_recurrence``, at
  least two). v2 planted bridges per thousand entities and picked one uniformly per bridge query, so each
  was needed by about one query.
* **The drift changes the kind of fact needed** (``drift=True``; ``drift_classes``). When a person's work
  changes (from building a system to running it, from a student to a supervisor), not only the topics they
  need turn round (v2's flip of the drifting domains' aspect needs, kept) but also the kind of fact a
  question needs: descriptions give way to constraints, or to the statements of how things connect. v3
  turns the fact-class table ``K`` round at the drift (``K_post = -K``), for every intent. And attention
  follows the change: after the drift, a question about an entity of an undrifted domain is redrawn at
  ``attention_shift`` (0.8), so most post-drift questions are about the domains whose needs changed (a new
  project takes the user's time). v2's drift turned round the aspect needs only, in domains asked about no
  more than before, which a learned policy frozen before it hardly felt (0.038 recall on seed 2029).

Everything else (the latent need, references, ids, layout, labels) is v2's. The labels keep v2's columns;
``entities.noise`` marks the passing mentions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from signet_rl.datasets import vocab as V
from signet_rl.datasets.base import Dataset
from signet_rl.datasets.synthetic import DAY, DOMAIN_NAMES, REGULAR, _Facts, _Generator, _make_config
from signet_rl.datasets.synthetic_v2 import SyntheticConfigV2, _GeneratorV2

__all__ = ["GENERATOR_VERSION", "SyntheticConfigV3", "generate_v3", "make_config_v3"]

GENERATOR_VERSION = 3


@dataclass(frozen=True)
class SyntheticConfigV3(SyntheticConfigV2):
    """v2's knobs plus how often a bridge recurs and whether the drift turns the fact-class needs round.

    Attributes:
        bridge_share: share of *relate* queries that ask about a planted bridge (v2: 0.15).
        bridge_recurrence: mean number of queries that need each planted bridge (``>= 2``).
        bridge_span: share of the timeline after a bridge is written over which its occasions fall.
        drift_classes: with ``drift``, turn the intent × fact-class needs round at the drift too.
        attention_shift: with ``drift``, the share of post-drift questions about an entity of an undrifted
            domain that are not asked (redrawn): attention follows the change.
    """

    generator_version: ClassVar[int] = GENERATOR_VERSION

    bridge_share: float = 0.5
    bridge_recurrence: float = 4.0
    bridge_span: float = 0.25
    drift_classes: bool = True
    attention_shift: float = 0.8

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.bridge_recurrence >= 2.0:
            raise ValueError(
                f"synthetic config: bridge_recurrence={self.bridge_recurrence!r} must be >= 2 "
                "(a bridge that comes up once is v2's)"
            )
        if not 0.0 <= self.attention_shift <= 1.0:
            raise ValueError(f"synthetic config: attention_shift={self.attention_shift!r} must be in [0, 1]")
        if not 0.0 < self.bridge_span <= 1.0:
            raise ValueError(f"synthetic config: bridge_span={self.bridge_span!r} must be in (0, 1]")


def make_config_v3(preset: str = "small", **overrides: Any) -> SyntheticConfigV3:
    """The v3 config of a preset with ``overrides`` applied.

    Raises:
        ValueError: an unknown preset or knob, naming it and what is allowed.
    """
    return _make_config(SyntheticConfigV3, preset, overrides, "unknown synthetic v3 config keys")


def generate_v3(preset: str = "small", seed: int = 0, **overrides: Any) -> Dataset:
    """Generate version 3 of the benchmark (same preset, seed and overrides: same dataset)."""
    return _GeneratorV3(make_config_v3(preset, **overrides), seed).run()


class _GeneratorV3(_GeneratorV2):
    c: SyntheticConfigV3

    def __init__(self, config: SyntheticConfigV3, seed: int) -> None:
        _Generator.__init__(self, config, seed)
        self.rng = np.random.default_rng([seed, GENERATOR_VERSION])
        self.prng.seed(int(self.rng.integers(2**62)))

    # -- noise entities: passing mentions ----------------------------------------------------------

    def _edge_filter(
        self, src: np.ndarray, tgt: np.ndarray, spurious: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """No edge touches a noise entity: its one memory names nothing else."""
        keep = ~self.noise[src] & ~self.noise[tgt]
        return src[keep], tgt[keep], spurious[keep]

    def _own_memory_entities(self) -> np.ndarray:
        return np.flatnonzero(self.noise)

    def _update_candidates(self, f: _Facts) -> np.ndarray:
        ent = np.asarray(f.entity)
        return np.flatnonzero((np.asarray(f.category) == REGULAR) & ~self.noise[ent])

    def _distractor_memory_hosts(self, k: int) -> np.ndarray:
        ok = np.flatnonzero(~self.noise)
        return self.rng.choice(ok, size=min(k, len(ok)), replace=False)

    # -- principles: values --------------------------------------------------------------------------

    def _principle_table(self) -> dict[str, list[str]]:
        return V.PRINCIPLES_V3

    # -- bridges: recurring --------------------------------------------------------------------------

    def _n_bridges(self) -> int:
        c = self.c
        relate = dict(c.intent_mix).get("relate", 0.0)
        return max(2, int(round(relate * c.n_queries * c.bridge_share / c.bridge_recurrence)))

    def _prepare_queries(self) -> None:
        super()._prepare_queries()
        self._deck: list[int] = []

    def _bridge_occasion(self) -> tuple[int, float]:
        """The next occasion of a deck in which bridge ``k`` appears ``2 + Poisson(recurrence - 2)`` times
        (a new deck when one runs out), at a time spread over ``bridge_span`` of the timeline after both
        copies are written."""
        c, rng = self.c, self.rng
        if not self._deck:
            counts = 2 + rng.poisson(c.bridge_recurrence - 2.0, len(self.bridges))
            self._deck = rng.permutation(np.repeat(np.arange(len(self.bridges)), counts)).tolist()
        k = int(self._deck.pop())
        ia, ib = self.bridges[k]
        written = max(self.fact_time[ia], self.fact_time[ib])
        return k, float(written + rng.uniform(0.0, c.bridge_span * c.days * DAY))

    # -- drift: the kind of fact needed --------------------------------------------------------------

    def hidden(self) -> None:
        super().hidden()
        if self.c.drift and self.c.drift_classes and np.isfinite(self.drift_t):
            self.K_post = -self.K

    def frame(self, intent: str) -> dict[str, Any] | None:
        """v2's question, except that after the drift a question about an undrifted domain's entity is
        redrawn at ``attention_shift``: the user's attention goes where their work changed."""
        q = super().frame(intent)
        if (
            q is not None
            and q["x"] >= 0
            and q["t"] >= self.drift_t
            and DOMAIN_NAMES[int(self.domain[q["x"]])] not in self.drifted
            and self.rng.random() < self.c.attention_shift
        ):
            return None
        return q

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "generator_version": GENERATOR_VERSION}
