"""Synthetic benchmark, generator version 2: ground truth from a latent information need, not walk rules.

Version 1 (:mod:`signet_rl.datasets.synthetic`) writes its ground truth with the walk's own rules: a *what*
query needs the top-weight aspect, *action* needs constraints and procedural aspects, *changed* the most
recent write, and every query names its entity. Version 2 keeps v1's world (domains, communities, aspects,
facts, supersession, the drift of preferences, principles, lexical distractors, memories and the session
rhythm: it reuses v1's generator) and changes what is *asked* and what is *needed*:

* **A latent information need.** For a query of intent ``I`` about entity ``X`` at time ``t`` the generator
  forms a *scope* (X's current facts; with multi-hop, also those of the entities X's true edges reach; for
  *relate*, X's and Y's facts and the statements of the edges between them; for *changed*, facts with a
  visible earlier version) and gives every fact ``f`` in it the need logit

  .. math:: z_f = H_{I,\\,aspect(f)} + K_{I,\\,class(f)} + \\lambda u_f - \\delta\\,hop_f + \\varepsilon_f

  ``H`` (intent × aspect name, N(0, ``hidden_scale``²)) and ``K`` (intent × fact class: attribute,
  constraint, edge statement, principle; N(0, ``kind_scale``²)) are the **hidden component**: drawn once
  per seed (one simulated user), stable over time, never written to the graph, so only ratings reveal them.
  ``u_f`` ~ N(0, 1) is a fact's latent usefulness; the stored ``importance`` mirrors it imperfectly
  (``importance_signal``). ``hop_f`` is 1 for a neighbour's fact, ``ε`` per-query noise
  (``query_noise``). The ``1..needed_max`` facts of highest ``z`` are needed. Nothing here consults the
  aspect weight, write recency or the walk's intent rules. A *bridge* query (relate across two domains)
  needs the two paraphrased copies of its bridge fact; its near-duplicate distractors are *misleading*.
* **Drift.** With ``drift=True`` (v1's preference changes at mid-timeline, kept) the needs of
  ``drift_domains`` domains (drawn per seed) turn round at mid-timeline: their columns of ``H`` change sign,
  so what was most useful there becomes least useful. A policy fixed before the drift loses at least 0.10
  recall after it against one that knows the new needs (:func:`~signet_rl.evaluation.audit.drift_loss`).
* **References, not names.** A share (``unnamed_share``) of queries refers to its entity by an alias (stored
  as an ``also goes by`` fact), a role (through one of its edges), a distinctive attribute or a
  description. Test queries use a template family (``unseen``) train and validation never see.
* **Nothing readable from ids or layout.** Ids are random tokens and every table's rows are shuffled;
  dependencies get an ``aspect_id`` when (and only when) some fact states them, which true edges do at
  ``stated_true`` and spurious ones (structurally alike: same community bias) at ``stated_spurious``; the
  distractors' ``notes`` aspects draw their weight like any other aspect.
* **Planted noise entities** (``noise_entity_rate``): ordinary-looking entities no query ever needs or asks
  about (the explorer issue's pruning target).

Labels (``Dataset.truth.labels``) add ``entities.noise``, ``queries.reference`` (how each query names its
entity) and ``hidden`` (the hidden component, with ``period`` ``pre``/``post`` when drifting).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from signet_rl.core.types import Query
from signet_rl.datasets import vocab as V
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.datasets.synthetic import (
    BRIDGE,
    DAY,
    DOMAIN_NAMES,
    LINK,
    PRINCIPLE,
    REGULAR,
    SyntheticConfig,
    _Facts,
    _Generator,
    _make_config,
)
from signet_rl.graph.model import KnowledgeGraph

__all__ = [
    "GENERATOR_VERSION",
    "HELD_TEMPLATES",
    "HIDDEN_INTENTS",
    "SyntheticConfigV2",
    "generate_v2",
    "make_config_v2",
    "query_template",
    "template_holdout",
]

GENERATOR_VERSION = 2
#: Intents with a need (``none`` needs nothing); rows of the hidden table ``H``.
HIDDEN_INTENTS: tuple[str, ...] = ("what", "relate", "action", "changed")
#: Fact classes; columns of the hidden table ``K``.
FACT_CLASSES: tuple[str, ...] = ("attribute", "constraint", "statement", "principle")
# Fact categories beyond v1's five (labels only).
ALIAS, NEAR_DUPLICATE, SPURIOUS_STATEMENT = 5, 6, 7
FACT_CATEGORIES_V2 = (
    "regular",
    "link",
    "bridge",
    "principle",
    "distractor",
    "alias",
    "near_duplicate",
    "spurious_statement",
)
REFERENCES: tuple[str, ...] = ("name", "alias", "role", "attribute", "description")


@dataclass(frozen=True)
class SyntheticConfigV2(SyntheticConfig):
    """v1's knobs (with v2's defaults where they differ) plus the latent-need and reference knobs."""

    generator_version: ClassVar[int] = GENERATOR_VERSION

    aspects_per_entity: tuple[int, int] = (3, 5)
    constraint_rate: float = 0.08
    multi_hop_share: float = 0.7
    hidden_scale: float = 2.5
    kind_scale: float = 1.0
    usefulness_weight: float = 0.5
    importance_signal: float = 0.25
    query_noise: float = 0.5
    hop_penalty: float = 0.3
    needed_max: int = 4
    unnamed_share: float = 0.5
    stated_true: float = 0.75
    stated_spurious: float = 0.5
    near_duplicates: int = 2
    noise_entity_rate: float = 0.05
    drift_domains: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "unnamed_share",
            "stated_true",
            "stated_spurious",
            "noise_entity_rate",
            "importance_signal",
        ):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"synthetic config: {name}={v!r} must be in [0, 1]")
        for name in ("hidden_scale", "kind_scale", "usefulness_weight", "query_noise", "hop_penalty"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"synthetic config: {name}={getattr(self, name)!r} must be >= 0")
        if self.needed_max < 1:
            raise ValueError(f"synthetic config: needed_max={self.needed_max!r} must be >= 1")
        if not 0 <= self.drift_domains <= len(DOMAIN_NAMES):
            raise ValueError(
                f"synthetic config: drift_domains={self.drift_domains!r} must be in [0, {len(DOMAIN_NAMES)}]"
            )


def make_config_v2(preset: str = "small", **overrides: Any) -> SyntheticConfigV2:
    """The v2 config of a preset with ``overrides`` applied.

    Raises:
        ValueError: an unknown preset or knob, naming it and what is allowed.
    """
    return _make_config(SyntheticConfigV2, preset, overrides, "unknown synthetic v2 config keys")


def generate_v2(preset: str = "small", seed: int = 0, **overrides: Any) -> Dataset:
    """Generate version 2 of the benchmark (same preset, seed and overrides: same dataset)."""
    return _GeneratorV2(make_config_v2(preset, **overrides), seed).run()


class _GeneratorV2(_Generator):
    c: SyntheticConfigV2

    def __init__(self, config: SyntheticConfigV2, seed: int) -> None:
        super().__init__(config, seed)
        self.rng = np.random.default_rng([seed, GENERATOR_VERSION])
        self.prng.seed(int(self.rng.integers(2**62)))

    # -- structure ----------------------------------------------------------------------------------

    def entities(self) -> None:
        super().entities()
        n, rng = self.n, self.rng
        self.noise = np.zeros(n, dtype=bool)
        k = int(round(self.c.noise_entity_rate * n))
        if k:
            self.noise[rng.choice(n, size=k, replace=False)] = True
        syl = np.asarray(V.SYLLABLES, dtype=object)
        taken = {w.lower() for name in self.names for w in name.replace("-", " ").split()}
        codes = rng.choice(len(syl) ** 2, size=min(len(syl) ** 2, 3 * n), replace=False).tolist()
        aliases: list[str] = []
        j = 0
        for i in range(n):
            while True:
                x = codes[j % len(codes)]
                word = (
                    syl[x // len(syl)] + syl[x % len(syl)] + ("" if j < len(codes) else str(j // len(codes)))
                )
                j += 1
                if word not in taken:
                    taken.add(word)
                    break
            aliases.append(word.capitalize() if self.etype[i] == "person" else f"the {word} {self.etype[i]}")
        self.aliases = aliases

    def dependencies(self, f: _Facts) -> None:
        """Typed edges; spurious ones drawn like true ones (same community bias); any edge may be stated
        in words (true at ``stated_true``, spurious at ``stated_spurious``) and has an ``aspect_id`` then."""
        c, rng, n = self.c, self.rng, self.n
        n_true = int(rng.poisson(c.out_degree * n))
        n_sp = int(round(c.spurious_rate * n_true / max(1e-9, 1 - c.spurious_rate)))
        src = rng.integers(0, n, n_true + n_sp)
        tgt = self._edge_targets(src)
        spurious = rng.permutation(np.arange(len(src)) >= n_true)
        src, tgt, spurious = self._edge_filter(src, tgt, spurious)
        src, tgt, spurious, dtype = self._typed_edges(src, tgt, spurious)
        p_true = np.array([0.08, 0.10, 0.15, 0.37, 0.22, 0.08])
        p_spur = np.array([0.14, 0.16, 0.2, 0.3, 0.15, 0.05])
        self._keep_edges(src, tgt, dtype, spurious, p_true, p_spur, 0.08, (0.25, 0.95))
        stated = rng.random(len(src)) < np.where(spurious, c.stated_spurious, c.stated_true)
        ent_aspects = [a.tolist() for a in self.ent_aspects]
        for e in np.flatnonzero(stated).tolist():
            self._state_edge(f, e, SPURIOUS_STATEMENT if spurious[e] else LINK, ent_aspects)

    def _edge_filter(
        self, src: np.ndarray, tgt: np.ndarray, spurious: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The drawn edges to keep: all of them."""
        return src, tgt, spurious

    def bridges_principles_distractors(self, f: _Facts) -> None:
        """Paraphrased bridges with near-duplicate distractors, v1's principles, lexical distractors whose
        ``notes`` aspects weigh like any other aspect, and an alias fact per entity."""
        c, rng = self.c, self.rng
        edges = set(zip(self.e_src.tolist(), self.e_tgt.tolist(), strict=True))
        ok = np.flatnonzero(~self.noise)
        n_bridges = self._n_bridges()
        self.bridges: list[tuple[int, int]] = []
        self.bridge_dups: dict[int, list[int]] = {}
        for g in range(n_bridges):
            for _ in range(50):
                a, b = ok[rng.integers(0, len(ok), 2)].tolist()
                if self.domain[a] != self.domain[b] and (a, b) not in edges and (b, a) not in edges:
                    break
            else:
                continue
            tpl_a, tpl_b = V.BRIDGE_PARAPHRASES[g % len(V.BRIDGE_PARAPHRASES)]
            values = {k: self.prng.choice(V.VALUES[k]) for k in V.VALUES}
            text_a, text_b = tpl_a.format(**values), tpl_b.format(**values)
            ia = f.add(a, int(rng.choice(self.ent_aspects[a])), 0, BRIDGE, text_a, tpl_a, group=g)
            ib = f.add(b, int(rng.choice(self.ent_aspects[b])), 0, BRIDGE, text_b, tpl_b, group=g)
            self.bridges.append((ia, ib))
            dups = []
            for _ in range(c.near_duplicates):
                e = int(ok[rng.integers(len(ok))])
                other = tpl_a
                for _ in range(10):
                    other = self.fill(tpl_a)
                    if other != text_a:
                        break
                if other == text_a:
                    continue
                dups.append(
                    f.add(e, int(rng.choice(self.ent_aspects[e])), 0, NEAR_DUPLICATE, other, tpl_a, group=g)
                )
            self.bridge_dups[len(self.bridges) - 1] = dups
        self._plant_principles(f)
        self._distractors(f)
        self.alias_fact = np.empty(self.n, dtype=np.int64)
        for e in range(self.n):
            asp = self.ent_aspects[e]
            a = int(asp[int(rng.integers(len(asp)))])
            self.alias_fact[e] = f.add(e, a, 0, ALIAS, f"also goes by {self.aliases[e]}", "alias")

    def _plant_principles(self, f: _Facts) -> None:
        """Each planted principle's paraphrases, one per entity of ``principle_entities`` communities drawn
        at random, on a preference aspect where the entity has one."""
        c, rng = self.c, self.rng
        table = self._principle_table()
        names = list(table)
        for p in range(min(c.principles, len(names))):
            comms = rng.choice(self.n_comm, size=min(c.principle_entities, self.n_comm), replace=False)
            paraphrases = table[names[p]]
            for j, cm in enumerate(comms.tolist()):
                members = [
                    e for e in range(self.comm_start[cm], self.comm_start[cm + 1]) if not self.noise[e]
                ]
                if not members:
                    continue
                e = members[int(rng.integers(len(members)))]
                asp = self.ent_aspects[e]
                prefs = [a for a in asp.tolist() if self.asp_name[a] in V.PREFERENCE_ASPECTS]
                a = prefs[0] if prefs else int(asp[int(rng.integers(len(asp)))])
                text = paraphrases[j % len(paraphrases)]
                f.add(e, a, 0, PRINCIPLE, text, text, group=p)
        self.principle_names = names[: c.principles]

    def _n_bridges(self) -> int:
        """How many bridges to plant: ``bridges_per_1k`` per thousand entities, at least two."""
        return max(2, int(round(self.n * self.c.bridges_per_1k / 1000)))

    def _principle_table(self) -> dict[str, list[str]]:
        """Each planted principle's paraphrases (one per entity that states it, cycled)."""
        return V.PRINCIPLES

    def _notes_weights(self, k: int) -> np.ndarray:
        return np.round(0.3 + 0.7 * self.rng.beta(2.0, 2.0, k), 4)

    # -- tables -------------------------------------------------------------------------------------

    def graph(self) -> KnowledgeGraph:
        """v1's tables with importance tied to latent usefulness, random ids and shuffled rows."""
        rng, f = self.rng, self.f
        n_facts = len(f.entity)
        # Latent usefulness: a new version inherits it from the version it replaces.
        u = rng.normal(0.0, 1.0, n_facts)
        for old in np.argsort(self.fact_time, kind="stable").tolist():
            s = int(self.succ[old])
            if s >= 0:
                u[s] = u[old]
        self.u = u
        g = super().graph()
        kind = np.asarray(f.kind)
        sig = self.c.importance_signal
        imp = np.clip(
            (1 - sig) * rng.beta(2.0, 3.0, n_facts) + sig * (0.5 + 0.25 * u) + 0.1 * kind, 0.0, 1.0
        ).round(4)
        self.imp = imp
        tables = {k: v.copy() for k, v in g.tables().items()}
        att, mem = tables["entity_attributes"], tables["memories"]
        att["importance"] = imp
        mem_imp = pd.Series(imp).groupby(self.fact_mem).mean()
        has = mem_imp.index.to_numpy()
        values = mem["importance"].to_numpy().copy()
        values[has] = mem_imp.round(4).to_numpy()
        mem["importance"] = values
        # Random ids; rows shuffled.
        maps: dict[str, dict[str, str]] = {}
        for kind_, attr in (
            ("ent", "ent_ids"),
            ("asp", "asp_ids"),
            ("att", "att_ids"),
            ("dep", "dep_ids"),
            ("mem", "mem_ids"),
        ):
            old = getattr(self, attr)
            new = self._random_ids(kind_, len(old))
            maps[kind_] = dict(zip(old, new, strict=True))
            setattr(self, attr, new)
        cols = {
            "memories": {"id": "mem"},
            "entities": {"id": "ent"},
            "entity_aspects": {"id": "asp", "entity_id": "ent"},
            "entity_attributes": {
                "id": "att",
                "aspect_id": "asp",
                "memory_id": "mem",
                "superseded_by": "att",
            },
            "entity_dependencies": {
                "id": "dep",
                "source_entity_id": "ent",
                "target_entity_id": "ent",
                "aspect_id": "asp",
            },
            "memory_entity_mentions": {"memory_id": "mem", "entity_id": "ent"},
            "memories_cold": {"memory_id": "mem"},
        }
        for table, spec in cols.items():
            frame = tables[table]
            for col, kind_ in spec.items():
                if col in frame:
                    frame[col] = frame[col].map(
                        lambda v, m=maps[kind_]: m.get(v, v) if isinstance(v, str) else v
                    )
        for name, frame in tables.items():
            if len(frame) > 1:
                tables[name] = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
        return KnowledgeGraph.from_frames(meta=g.meta, **tables)

    def _random_ids(self, prefix: str, k: int) -> list[str]:
        while True:
            x = self.rng.integers(0, 2**48, k)
            if len(np.unique(x)) == k:
                return [f"{prefix}-{v:012x}" for v in x.tolist()]

    # -- the hidden component ------------------------------------------------------------------------

    def hidden(self) -> None:
        c, rng = self.c, self.rng
        self.aspect_names = sorted(set(self.asp_name))
        name_idx = {a: i for i, a in enumerate(self.aspect_names)}
        self.asp_name_idx = np.asarray([name_idx[a] for a in self.asp_name])
        shape = (len(HIDDEN_INTENTS), len(self.aspect_names))
        self.H = rng.normal(0.0, c.hidden_scale, shape)
        self.K = rng.normal(0.0, c.kind_scale, (len(HIDDEN_INTENTS), len(FACT_CLASSES)))
        self.H_post = self.H.copy()
        self.K_post = self.K.copy()
        self.drift_t = np.inf
        self.drifted: list[str] = []
        if c.drift and c.drift_domains:
            self.drift_t = c.days / 2 * DAY
            doms = sorted(rng.choice(len(DOMAIN_NAMES), size=c.drift_domains, replace=False).tolist())
            self.drifted = [DOMAIN_NAMES[d] for d in doms]
            cols = sorted(
                {name_idx[a] for d in self.drifted for a in V.DOMAINS[d]["aspects"] if a in name_idx}
            )
            self.H_post[:, cols] = -self.H[:, cols]

    # -- queries ------------------------------------------------------------------------------------

    def _prepare_queries(self) -> None:
        self._index()
        cat, kind = self.a_cat, self.a_kind
        self.fact_class = np.where(cat == PRINCIPLE, 3, np.where(cat == LINK, 2, np.where(kind == 1, 1, 0)))
        self.needable = np.isin(cat, [REGULAR, LINK, PRINCIPLE]) & ~self.noise[self.a_entity]
        order = np.argsort(self.a_entity, kind="stable")
        bounds = np.searchsorted(self.a_entity[order], np.arange(self.n + 1))
        self.ent_facts = [order[bounds[i] : bounds[i + 1]] for i in range(self.n)]
        self.regular_of = [a[cat[a] == REGULAR] for a in self.ent_facts]
        self.askable = np.flatnonzero(~self.noise & np.asarray([len(r) > 0 for r in self.regular_of]))
        true = np.flatnonzero(~self.e_spurious)
        self.true_edges = true[~self.noise[self.e_src[true]] & ~self.noise[self.e_tgt[true]]]
        inc: list[list[int]] = [[] for _ in range(self.n)]
        for e in self.true_edges.tolist():
            inc[int(self.e_src[e])].append(e)
            inc[int(self.e_tgt[e])].append(e)
        self.inc_true = inc
        self.updates = np.flatnonzero((self.pred >= 0) & ~self.noise[self.a_entity])

    def current(self, e: int, t: float) -> list[int]:
        facts = self.ent_facts[e]
        return [a for a in self.latest(facts, t) if self.needable[a]]

    def neighbours(self, x: int, t: float) -> list[tuple[int, int]]:
        """(edge, other entity) for x's true edges visible at t."""
        out = []
        for e in self.inc_true[x]:
            if self.e_time[e] <= t:
                out.append((e, int(self.e_tgt[e] if self.e_src[e] == x else self.e_src[e])))
        return out

    def need(
        self, intent: str, scope: list[tuple[int, int]], t: float, bonus: dict[int, float] | None = None
    ) -> list[int]:
        """The needed facts of a scope of (fact, hop): the top ``1..needed_max`` by the need logit."""
        if not scope:
            return []
        c, rng = self.c, self.rng
        facts = np.asarray([a for a, _ in scope])
        hop = np.asarray([h for _, h in scope], dtype=np.float64)
        i = HIDDEN_INTENTS.index(intent)
        post = t >= self.drift_t
        H, K = (self.H_post, self.K_post) if post else (self.H, self.K)
        z = (
            H[i, self.asp_name_idx[self.a_aspect[facts]]]
            + K[i, self.fact_class[facts]]
            + c.usefulness_weight * self.u[facts]
            - c.hop_penalty * hop
            + rng.normal(0.0, c.query_noise, len(facts))
        )
        if bonus:
            z = z + np.asarray([bonus.get(int(a), 0.0) for a in facts])
        m = min(len(facts), int(rng.integers(1, c.needed_max + 1)))
        return facts[np.argsort(-z, kind="stable")[:m]].tolist()

    def frame(self, intent: str) -> dict[str, Any] | None:
        rng, c = self.rng, self.c
        multi = bool(rng.random() < c.multi_hop_share)
        if intent == "none":
            a = int(self.regular[int(rng.integers(len(self.regular)))])
            t = self.query_time(int(self.a_entity[a]), self.fact_time[a])
            return self.no_question(t)
        if intent == "relate":
            if rng.random() < c.bridge_share and self.bridges:
                k, after = self._bridge_occasion()
                ia, ib = self.bridges[k]
                x, y = int(self.a_entity[ia]), int(self.a_entity[ib])
                t = self.query_time(x, after)
                needed = self.latest(np.asarray([ia, ib]), t)
                mis = [d for d in self.bridge_dups.get(k, []) if self.fact_time[d] <= t]
                out = {"t": t, "needed": needed, "extra_misleading": mis, "category": "bridge", "hops": None}
                return {**out, "x": x, "y": y} if rng.random() < 0.5 else {**out, "x": y, "y": x}
            if not len(self.true_edges):
                return None
            e = int(self.true_edges[int(rng.integers(len(self.true_edges)))])
            x, y = int(self.e_src[e]), int(self.e_tgt[e])
            t = self.query_time(x, self.e_time[e])
            path, ents = [e], [x, y]
            if multi:
                nxt = [(e2, z) for e2, z in self.neighbours(y, t) if z not in (x, y)]
                direct = {z for _, z in self.neighbours(x, t)}
                nxt = [(e2, z) for e2, z in nxt if z not in direct]
                if not nxt:
                    return None
                e2, z = nxt[int(rng.integers(len(nxt)))]
                path.append(e2)
                ents.append(z)
                y = z
            scope: list[tuple[int, int]] = []
            bonus: dict[int, float] = {}
            for p in path:
                link = int(self.edge_link[p])
                if link >= 0:
                    for a in self.latest(np.asarray([link]), t):
                        scope.append((a, 0))
                        bonus[a] = 1.0
            for k, ent in enumerate(ents):
                scope += [(a, 0 if k != 1 or not multi else 1) for a in self.current(ent, t)]
            needed = self.need("relate", scope, t, bonus)
            category, hops = ("two_hop", 2) if multi else ("direct", 1)
            out = {"t": t, "needed": needed, "category": category, "hops": hops}
            return {**out, "x": x, "y": y} if rng.random() < 0.5 else {**out, "x": y, "y": x}
        if intent == "changed":
            if not len(self.updates):
                return None
            a = int(self.updates[int(rng.integers(len(self.updates)))])
            x = int(self.a_entity[a])
            t = self.query_time(x, self.fact_time[a])
            ents = [(x, 0)] + (
                [(z, 1) for _, z in self.neighbours(x, t) if not self.noise[z]] if multi else []
            )
            scope = [
                (b, hop)
                for ent, hop in ents
                for b in self.current(ent, t)
                if self.pred[b] >= 0 and self.fact_time[self.pred[b]] <= t
            ]
            hops = int(max((h for b, h in scope), default=0))
            return {
                "t": t,
                "needed": self.need("changed", scope, t),
                "category": f"hop{hops}",
                "hops": hops,
                "x": x,
                "y": -1,
            }
        # what / action
        x = int(self.askable[int(rng.integers(len(self.askable)))])
        regs = self.regular_of[x]
        a = int(regs[int(rng.integers(len(regs)))])
        t = self.query_time(x, self.fact_time[a])
        scope = [(b, 0) for b in self.current(x, t)]
        if multi:
            for e, z in self.neighbours(x, t):
                if self.noise[z]:
                    continue
                link = int(self.edge_link[e])
                if link >= 0:
                    scope += [(b, 0) for b in self.latest(np.asarray([link]), t) if self.needable[b]]
                scope += [(b, 1) for b in self.current(z, t)]
        scope = list(dict(scope).items())
        hops = 1 if multi and any(h for _, h in scope) else 0
        return {
            "t": t,
            "needed": self.need(intent, scope, t),
            "category": f"hop{hops}",
            "hops": hops,
            "x": x,
            "y": -1,
        }

    def _bridge_occasion(self) -> tuple[int, float]:
        """The bridge a bridge query asks about (uniform) and the time it asks after (both copies
        written)."""
        k = int(self.rng.integers(len(self.bridges)))
        ia, ib = self.bridges[k]
        return k, max(self.fact_time[ia], self.fact_time[ib])

    def reference(self, x: int, t: float, needed: list[int], other: int = -1) -> tuple[str, str]:
        """How a query names entity ``x``: its name, or (at ``unnamed_share``) another reference (a role
        never goes through ``other``, the query's second entity, which would name it)."""
        rng = self.rng
        if rng.random() >= self.c.unnamed_share:
            return "name", self.names[x]
        kinds = ["alias", "role", "attribute", "description"]
        for kind in [kinds[int(rng.integers(4))], *kinds]:
            if kind == "alias" and self.fact_time[self.alias_fact[x]] <= t:
                return "alias", self.aliases[x]
            if kind == "role":
                nb = [(e, z) for e, z in self.neighbours(x, t) if z not in (x, other)]
                if nb:
                    e, z = nb[int(rng.integers(len(nb)))]
                    side = "out" if self.e_src[e] == x else "in"
                    phrase = V.ROLE_PHRASES[str(self.e_type[e])][side]
                    return "role", phrase.format(etype=self.etype[x], z=self.names[z])
            if kind == "attribute":
                own = [a for a in self.latest(self.regular_of[x], t) if a not in needed]
                if own:
                    a = own[int(rng.integers(len(own)))]
                    return "attribute", f"the {self.etype[x]} that {self.f.content[a]}"
            if kind == "description":
                asps = [int(a) for a in self.ent_aspects[x] if self.asp_name[int(a)] != "notes"]
                if asps:
                    a = asps[int(rng.integers(len(asps)))]
                    dom = DOMAIN_NAMES[int(self.domain[x])]
                    return "description", f"that {dom} {self.etype[x]} with the {self.aspect_words(a)} notes"
        return "name", self.names[x]

    def queries(self) -> tuple[list[Query], list[Truth], pd.DataFrame]:
        rng = self.rng
        self._prepare_queries()
        self.regular = np.flatnonzero((self.a_cat == REGULAR) & ~self.noise[self.a_entity])
        rows, splits, times = self._draw_rows(self.frame, " v2")
        queries, truths, focus = [], [], []
        for i, r in enumerate(rows):
            qid, split = f"q-{i:05d}", splits[i]
            family = V.QUERIES_V2["unseen" if split == "test" else "seen"]
            ref_x = ref_y = ("name", "")
            intent = r["intent"]
            if intent == "none":
                text = family["none"][int(rng.integers(len(family["none"])))]
            else:
                ref_x = self.reference(r["x"], r["t"], r["needed"], r["y"])
                if r["y"] >= 0:
                    ref_y = self.reference(r["y"], r["t"], r["needed"], r["x"])
                topic = intent != "relate" and rng.random() < 0.3
                key = f"{intent}_topic" if topic else intent
                tpls = family[key]
                asp = self.aspect_words(int(self.a_aspect[r["needed"][0]]))
                text = tpls[int(rng.integers(len(tpls)))].format(x=ref_x[1], y=ref_y[1], aspect=asp)
            queries.append(Query(id=qid, text=text, graph_id="main", split=split, timestamp=times.iat[i]))
            truths.append(self._truth(qid, text, r))
            focus.append(
                {
                    "query_id": qid,
                    "x": self.ent_ids[r["x"]] if r["x"] >= 0 else None,
                    "y": self.ent_ids[r["y"]] if r["y"] >= 0 else None,
                    "reference": ref_x[0] if intent != "none" else None,
                    "reference_y": ref_y[0] if r["y"] >= 0 else None,
                    "family": "unseen" if split == "test" else "seen",
                    "after_drift": bool(r["t"] >= self.drift_t),
                }
            )
        return queries, truths, pd.DataFrame(focus)

    def misleading(self, q: dict[str, Any]) -> list[int]:
        """v1's stale versions plus a bridge's near-duplicates."""
        return list(dict.fromkeys(self.stale(q["needed"], q["t"]) + q.get("extra_misleading", [])))

    # -- labels and assembly ------------------------------------------------------------------------

    def _fact_categories(self) -> tuple[str, ...]:
        """The label of each fact category code."""
        return FACT_CATEGORIES_V2

    def labels(self) -> dict[str, pd.DataFrame]:
        group = np.asarray(self.f.group)
        out = {
            "entities": pd.DataFrame(
                {
                    "entity_id": self.ent_ids,
                    "domain": np.asarray(DOMAIN_NAMES)[self.domain],
                    "community": self.community,
                    "noise": self.noise,
                }
            ),
            "attributes": pd.DataFrame(
                {
                    "attribute_id": self.att_ids,
                    "category": np.asarray(self._fact_categories())[self.a_cat],
                    "bridge_group": np.where(np.isin(self.a_cat, [BRIDGE, NEAR_DUPLICATE]), group, -1),
                    "principle": [
                        self.principle_names[g] if cat == PRINCIPLE else None
                        for g, cat in zip(group.tolist(), self.a_cat.tolist(), strict=True)
                    ],
                    "edge": [self.dep_ids[e] if e >= 0 else None for e in self.a_edge.tolist()],
                    "usefulness": self.u,
                }
            ),
            "dependencies": pd.DataFrame({"dependency_id": self.dep_ids, "spurious": self.e_spurious}),
            "memories": pd.DataFrame({"memory_id": self.mem_ids, "kind": self.mem_kind}),
        }
        rows = []
        for period, H, K in (("pre", self.H, self.K), ("post", self.H_post, self.K_post)):
            if period == "post" and not np.isfinite(self.drift_t):
                break
            for i, intent in enumerate(HIDDEN_INTENTS):
                for j, name in enumerate(self.aspect_names):
                    rows.append(
                        {"period": period, "intent": intent, "key": f"aspect:{name}", "value": H[i, j]}
                    )
                for j, cls in enumerate(FACT_CLASSES):
                    rows.append(
                        {"period": period, "intent": intent, "key": f"class:{cls}", "value": K[i, j]}
                    )
        out["hidden"] = pd.DataFrame(rows)
        return out

    def before_graph(self) -> None:
        self.hidden()

    def meta(self) -> dict[str, Any]:
        return {
            "generator": "synthetic",
            "generator_version": GENERATOR_VERSION,
            "config": self.c.to_dict(),
            "config_hash": self.hash,
            "seed": self.seed,
            "drift_domains": self.drifted,
            "drift_at_day": None if not np.isfinite(self.drift_t) else self.drift_t / DAY,
        }


# -- an inner template shift (a split of a generated dataset; the generator is untouched) -------------------

#: The ``seen`` templates :func:`template_holdout` holds out: the last template of every query kind that has
#: more than one (and the last two chit-chat texts), so that each held template has a kept sibling of its
#: kind, as each ``unseen`` (test) template has ``seen`` ones.
HELD_TEMPLATES: tuple[str, ...] = tuple(
    t
    for key, tpls in V.QUERIES_V2["seen"].items()
    for t in (tpls[-2:] if key == "none" else tpls[-1:] if len(tpls) > 1 else ())
)


def _template_patterns() -> list[tuple[str, re.Pattern[str]]]:
    """Every ``seen`` template with a regex of its text (slots match anything), most literal text first, so
    ``tell me about the {aspect} of {x}`` is tried before ``tell me about {x}``."""
    out = []
    for tpls in V.QUERIES_V2["seen"].values():
        for t in tpls:
            parts = re.split(r"\{(?:x|y|aspect)\}", t)
            out.append((t, re.compile("^" + "(.+)".join(re.escape(p) for p in parts) + "$", re.DOTALL)))
    return sorted(out, key=lambda tp: -len(re.sub(r"\{(?:x|y|aspect)\}", "", tp[0])))


def query_template(text: str) -> str | None:
    """The generator-v2 ``seen`` template a query text was filled from (None: no seen template matches)."""
    for template, pattern in _template_patterns():
        if pattern.match(text):
            return template
    return None


def template_holdout(dataset: Dataset, held: Sequence[str] = HELD_TEMPLATES) -> Dataset:
    """An inner split of a generator-v2 dataset that shifts templates as its test split does, without
    touching the test split: a validation that measures what a template shift costs.

    The copy has no test queries of ``dataset`` at all (and no truth for them). Its ``train`` split is the
    training queries whose template is not in ``held``; its ``validation`` split is every training or
    validation query whose template is in ``held`` (a family of wordings the copy's training never sees);
    its ``test`` split is the validation queries of the kept templates (the same templates as training: the
    in-family yardstick beside the shifted one). ``dataset`` itself is not changed.

    Raises:
        ValueError: ``held`` names a text that is no ``seen`` template, or a non-test query matches no
            ``seen`` template (the dataset is not generator v2's), naming it.
    """
    seen = {t for tpls in V.QUERIES_V2["seen"].values() for t in tpls}
    unknown = [t for t in held if t not in seen]
    if unknown:
        raise ValueError(
            f"template_holdout: {unknown[0]!r} is not a seen template of generator v2; pick from "
            "signet_rl.datasets.vocab.QUERIES_V2['seen']"
        )
    held_set = set(held)
    queries = []
    for q in dataset.queries:
        if q.split == "test":
            continue
        template = query_template(q.text)
        if template is None:
            raise ValueError(
                f"template_holdout: {dataset.name} query {q.id!r} ({q.text!r}) matches no seen template of "
                "generator v2; the template holdout needs a synthetic dataset built with version=2"
            )
        if template in held_set:
            queries.append(replace(q, split="validation"))
        else:
            queries.append(replace(q, split="train" if q.split == "train" else "test"))
    truth = GroundTruth([dataset.truth[q.id] for q in queries], dataset.truth.labels)
    meta = {**dataset.meta, "template_holdout": sorted(held_set)}
    return Dataset(dataset.name, dataset.graphs, queries, truth, dataset.report, meta)
