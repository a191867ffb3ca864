"""Synthetic benchmark, generator version 4: v3 with principles that no shared word gives away, and decoys.

Version 4 (dataset option ``version: 4``; opt-in, v1–v3 are unchanged) keeps everything of
:mod:`signet_rl.datasets.synthetic_v3` and changes how principles are planted, because v3's were found by
the word stem every statement of a value carries (issue 29 §3; docs/results.md, "Session 4"):

* **A value in paraphrase.** Each planted principle is a value
  (:data:`~signet_rl.datasets.vocab.PRINCIPLES_V4`: privacy, reversibility, local-first, rest, frugality)
  with a bank of eight hand-written paraphrases, no two of which share a content word or its stem ("keeps
  personal data out of logs", "covers the laptop camera when it is idle"). A seed draws
  ``principle_entities`` of them without replacement, and states each at an entity of a different
  community, the entities chosen so that **no dependency connects any two of them**: only the meaning is
  common, not a word, a template or a link.
* **Topic decoys** (:data:`~signet_rl.datasets.vocab.TOPIC_DECOYS_V4`, ``topic_decoys`` topics): statements
  in ``decoy_statements`` communities that share a topic word ("phone", "cloud", "weekend") but express
  different or opposite values ("keeps the phone on loud all night for work calls", "leaves the phone
  behind on hikes"). Real memory is full of them: a topic comes up everywhere without being a value.
* **Near-miss decoys** (:data:`~signet_rl.datasets.vocab.NEAR_MISS_V4`, ``near_miss_decoys`` values):
  statements worded like a value's paraphrases but stating another value, a different one each ("keeps
  detailed logs of personal workouts" beside "keeps personal data out of logs").

Decoys are literal sentences (no slots), on a preference aspect where the entity has one, exactly as
principle statements are, so neither their wording nor their place sets either apart. They are written
whether or not principles are planted: the control graph (``principles=0``) keeps them. They are facts no
query needs (like v2's near-duplicates); a principle statement is needed as in v3 (fact class
``principle``). The labels add the categories ``topic_decoy`` and ``near_miss`` and a ``decoy`` column
(the topic, or the value a near-miss imitates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from signet_rl.datasets import vocab as V
from signet_rl.datasets.base import Dataset
from signet_rl.datasets.synthetic import PRINCIPLE, _Facts, _Generator, _make_config
from signet_rl.datasets.synthetic_v2 import FACT_CATEGORIES_V2
from signet_rl.datasets.synthetic_v3 import SyntheticConfigV3, _GeneratorV3

__all__ = ["FACT_CATEGORIES_V4", "GENERATOR_VERSION", "SyntheticConfigV4", "generate_v4", "make_config_v4"]

GENERATOR_VERSION = 4
# Fact categories beyond v2's eight (labels only).
TOPIC_DECOY, NEAR_MISS = 8, 9
FACT_CATEGORIES_V4 = (*FACT_CATEGORIES_V2, "topic_decoy", "near_miss")


@dataclass(frozen=True)
class SyntheticConfigV4(SyntheticConfigV3):
    """v3's knobs plus the decoys.

    Attributes:
        topic_decoys: how many topics of :data:`~signet_rl.datasets.vocab.TOPIC_DECOYS_V4` are written.
        near_miss_decoys: how many values' near-misses (:data:`~signet_rl.datasets.vocab.NEAR_MISS_V4`) are
            written (with or without their value planted).
        decoy_statements: statements written per topic and per near-miss value, each at an entity of its
            own community.
    """

    generator_version: ClassVar[int] = GENERATOR_VERSION

    topic_decoys: int = 6
    near_miss_decoys: int = 5
    decoy_statements: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        tables = (("topic_decoys", len(V.TOPIC_DECOYS_V4)), ("near_miss_decoys", len(V.NEAR_MISS_V4)))
        for name, most in tables:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= most:
                raise ValueError(f"synthetic config: {name}={v!r} must be an integer in [0, {most}]")
        most = min(len(b) for b in (*V.TOPIC_DECOYS_V4.values(), *V.NEAR_MISS_V4.values()))
        if not 3 <= self.decoy_statements <= most:
            raise ValueError(
                f"synthetic config: decoy_statements={self.decoy_statements!r} must be in [3, {most}] "
                "(a decoy spans at least 3 communities, as a principle does)"
            )
        bank = min(len(b) for b in V.PRINCIPLES_V4.values())
        if self.principles and not 3 <= self.principle_entities <= bank:
            raise ValueError(
                f"synthetic config: principle_entities={self.principle_entities!r} must be in [3, {bank}] "
                "(v4 states each value at least 3 times, each in a paraphrase of its own)"
            )


def make_config_v4(preset: str = "small", **overrides: Any) -> SyntheticConfigV4:
    """The v4 config of a preset with ``overrides`` applied.

    Raises:
        ValueError: an unknown preset or knob, naming it and what is allowed.
    """
    return _make_config(SyntheticConfigV4, preset, overrides, "unknown synthetic v4 config keys")


def generate_v4(preset: str = "small", seed: int = 0, **overrides: Any) -> Dataset:
    """Generate version 4 of the benchmark (same preset, seed and overrides: same dataset)."""
    return _GeneratorV4(make_config_v4(preset, **overrides), seed).run()


class _GeneratorV4(_GeneratorV3):
    c: SyntheticConfigV4

    def __init__(self, config: SyntheticConfigV4, seed: int) -> None:
        _Generator.__init__(self, config, seed)
        self.rng = np.random.default_rng([seed, GENERATOR_VERSION])
        self.prng.seed(int(self.rng.integers(2**62)))

    def _unlinked_entities(self, k: int) -> list[int]:
        """Up to ``k`` entities, not noise, each of a different community (drawn in random order), no two of
        them connected by a dependency (either way)."""
        rng = self.rng
        chosen: list[int] = []
        near: set[int] = set()  # the chosen entities and their neighbours
        for cm in rng.permutation(self.n_comm).tolist():
            members = [
                e
                for e in range(self.comm_start[cm], self.comm_start[cm + 1])
                if not self.noise[e] and e not in near
            ]
            if not members:
                continue
            e = members[int(rng.integers(len(members)))]
            chosen.append(e)
            near.add(e)
            near.update(self._neighbours.get(e, ()))
            if len(chosen) == k:
                break
        return chosen

    def _state(self, f: _Facts, texts: list[str], category: int, group: int) -> None:
        """Write ``texts`` at unlinked entities of different communities, each on a preference aspect where
        the entity has one (as v2 places a principle statement)."""
        rng = self.rng
        for e, text in zip(self._unlinked_entities(len(texts)), texts, strict=False):
            asp = self.ent_aspects[e]
            prefs = [a for a in asp.tolist() if self.asp_name[a] in V.PREFERENCE_ASPECTS]
            a = prefs[0] if prefs else int(asp[int(rng.integers(len(asp)))])
            f.add(e, a, 0, category, text, text, group=group)

    def _plant_principles(self, f: _Facts) -> None:
        """Values in paraphrase (drawn from each value's bank), then the topic and near-miss decoys."""
        c, rng = self.c, self.rng
        self._neighbours: dict[int, set[int]] = {}
        for s, t in zip(self.e_src.tolist(), self.e_tgt.tolist(), strict=True):
            self._neighbours.setdefault(s, set()).add(t)
            self._neighbours.setdefault(t, set()).add(s)
        names = list(V.PRINCIPLES_V4)
        for p in range(min(c.principles, len(names))):
            bank = V.PRINCIPLES_V4[names[p]]
            pick = rng.choice(len(bank), size=c.principle_entities, replace=False)
            self._state(f, [bank[i] for i in pick.tolist()], PRINCIPLE, p)
        self.principle_names = names[: c.principles]
        self.decoy_names: list[str] = []
        for table, k, category in (
            (V.TOPIC_DECOYS_V4, c.topic_decoys, TOPIC_DECOY),
            (V.NEAR_MISS_V4, c.near_miss_decoys, NEAR_MISS),
        ):
            for name in list(table)[:k]:
                bank = table[name]
                pick = rng.choice(len(bank), size=c.decoy_statements, replace=False)
                self.decoy_names.append(name)
                self._state(f, [bank[i] for i in pick.tolist()], category, len(self.decoy_names) - 1)

    def _fact_categories(self) -> tuple[str, ...]:
        return FACT_CATEGORIES_V4

    def labels(self) -> dict[str, pd.DataFrame]:
        out = super().labels()
        group = np.asarray(self.f.group)
        out["attributes"]["decoy"] = [
            self.decoy_names[g] if cat in (TOPIC_DECOY, NEAR_MISS) else None
            for g, cat in zip(group.tolist(), self.a_cat.tolist(), strict=True)
        ]
        return out

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "generator_version": GENERATOR_VERSION}
