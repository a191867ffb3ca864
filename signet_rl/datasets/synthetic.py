"""The synthetic benchmark: zibaldone-style agent-memory graphs with known ground truth.

This is generator version 1, the default; ``generate(..., version=2)`` (dataset option ``version: 2``) builds
version 2 (:mod:`signet_rl.datasets.synthetic_v2`), whose truth does not follow the walk's rules.

``generate("small", seed=0)`` builds one :class:`~signet_rl.datasets.base.Dataset`, deterministic by seed:

* **Domains and communities.** Five unrelated domains (work, people, infrastructure, research, personal)
  share one graph. Entities are dealt into planted communities of about ``community_size`` entities, each
  community belonging to one domain; entity types follow the domain (docs/design.md §2).
* **Aspects and attributes.** Each entity has 1–3 aspects of its domain and 1–3 facts per aspect, some of
  them constraints. A share of facts is later superseded by a newer version (old row ``superseded``, with
  ``superseded_by``); the optional *drift* scenario changes many preferences at mid-timeline.
* **Dependencies.** Typed edges, mostly inside a community, some across communities and domains. Every true
  edge is also stated in words by a *link* fact under one of its source's aspects (the edge's ``aspect_id``).
  ``reason``/``confidence`` are informative but imperfect: a share of edges is *spurious* (no real
  relation; their reasons skew low but some are confident), and some true edges have low confidence.
* **Memories.** Facts are written into memories (a memory holds the facts of one to a few entities of the
  same community and mentions them and any entity its link facts name): the co-mention graph. Updates get
  their own memories. Chit-chat memories exist too; some are deleted and archived to the cold tier.
* **Bridges, principles, distractors.** The same fact stored under two entities of different domains with
  no edge between them; latent principles, each expressed in different words by attributes of at least three
  entities in at least three communities; lexical distractors (account ids, timeouts, config values) worded
  like queries, as attributes under a low-weight ``notes`` aspect and as memories.
* **Timeline.** Sessions have a rhythm: each domain keeps its own hours and weekday share (infrastructure in
  the morning on weekdays, personal life in the evening and at weekends), so time features carry signal.

Queries come with intent labels and ground truth (see :class:`~signet_rl.datasets.base.Truth`):

=========  ===============================================================  ==========================
intent     needed (latest versions as of the query time)                    category
=========  ===============================================================  ==========================
what       the facts of one aspect of X                                     ``hop0``
what       (multi-hop) the link facts of X's uses/requires edges and the    ``hop1``
           facts of the top aspect of each entity they reach
relate     the link facts on a path X → Y (one edge, or two: X → Z → Y), or  ``direct``, ``two_hop``,
           the two copies of a bridge fact when X and Y share no edge       ``bridge``
action     X's constraints, procedural facts and principle facts; with      ``hop0``, ``hop1``
           multi-hop, also the constraints of entities X blocks on/requires
changed    the newest versions of the changed facts of one aspect           ``hop0``
none       nothing (chit-chat, excitement about a milestone)                ``none``
=========  ===============================================================  ==========================

For every intent, superseded versions of needed facts visible at the query time are *misleading*.
``intent_mix`` sets the share of each intent and ``multi_hop_share`` the share of what/action/relate queries
whose needed facts lie a hop away (where they share no words with the query unless a memory happens to name
both entities): raise it to make the benchmark harder for flat retrieval, lower it to make it easier.
``Truth.flat_solvable`` records, per query, whether every needed fact shares a content word with the query
(through its text or its source memory), so the mix is measured rather than assumed; ``describe`` prints it.

Splits are by time: queries are sorted by timestamp and the first 60% are train, the next 20% validation,
the last 20% test; every needed fact was created at or before its query's timestamp.

Honesty: the generator's effective config is hashed (``Dataset.meta["config_hash"]``); the planted labels
(domain, community, bridge, principle, spurious, distractor) live only in ``Dataset.truth.labels``, never in
the graph that scorers see.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import pandas as pd

from signet_rl.core.checks import check_known_keys, check_probability
from signet_rl.core.types import Query, Split
from signet_rl.datasets import vocab as V
from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport, Truth, config_hash
from signet_rl.graph.confidence import LADDER
from signet_rl.graph.model import KnowledgeGraph

__all__ = ["GENERATOR_VERSION", "PRESETS", "VERSIONS", "SyntheticConfig", "generate", "make_config"]

GENERATOR_VERSION = 1
DAY = 86400.0
INTENTS: tuple[str, ...] = ("what", "relate", "action", "changed", "none")
DOMAIN_NAMES: tuple[str, ...] = tuple(V.DOMAINS)
# Category codes for facts (labels, never in the graph).
REGULAR, LINK, BRIDGE, PRINCIPLE, DISTRACTOR = range(5)
FACT_CATEGORIES = ("regular", "link", "bridge", "principle", "distractor")


@dataclass(frozen=True)
class SyntheticConfig:
    """Every knob of the generator. Presets fill the sizes; everything else has a documented default."""

    #: Written into :meth:`to_dict` (so into the config hash); not a field.
    generator_version: ClassVar[int] = GENERATOR_VERSION

    preset: str = "small"
    n_entities: int = 500
    n_memories: int = 700
    n_queries: int = 400
    community_size: int = 25
    days: int = 120
    start: str = "2026-01-05T00:00:00Z"
    domain_weights: tuple[float, ...] = (0.25, 0.2, 0.25, 0.15, 0.15)
    aspects_per_entity: tuple[int, int] = (1, 3)
    facts_per_aspect: tuple[int, int] = (1, 3)
    constraint_rate: float = 0.15
    out_degree: float = 1.5
    p_same_community: float = 0.8
    p_same_domain: float = 0.15
    spurious_rate: float = 0.15
    supersede_rate: float = 0.12
    drift: bool = False
    drift_rate: float = 0.4
    bridges_per_1k: float = 20.0
    principles: int = 5
    principle_entities: int = 4
    distractor_rate: float = 0.08
    distractor_memory_rate: float = 0.04
    chitchat_rate: float = 0.04
    chitchat_deleted: float = 0.3
    intent_mix: tuple[tuple[str, float], ...] = (
        ("what", 0.3),
        ("relate", 0.2),
        ("action", 0.2),
        ("changed", 0.15),
        ("none", 0.15),
    )
    multi_hop_share: float = 0.5
    bridge_share: float = 0.15
    split_fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
    query_gap_days: float = 10.0

    def __post_init__(self) -> None:
        checks = [
            ("n_entities", self.n_entities >= 20, ">= 20"),
            ("n_memories", self.n_memories >= 10, ">= 10"),
            ("n_queries", self.n_queries >= 5, ">= 5"),
            ("community_size", self.community_size >= 3, ">= 3"),
            ("days", self.days >= 7, ">= 7"),
            ("domain_weights", len(self.domain_weights) == len(DOMAIN_NAMES), f"{len(DOMAIN_NAMES)} weights"),
            ("split_fractions", abs(sum(self.split_fractions) - 1) < 1e-9, "summing to 1"),
            (
                "intent_mix",
                {k for k, _ in self.intent_mix} <= set(INTENTS)
                and abs(sum(w for _, w in self.intent_mix) - 1) < 1e-9,
                f"weights over {INTENTS} summing to 1",
            ),
        ]
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(f"synthetic config: {name}={getattr(self, name)!r} must be {allowed}")
        for name in (
            "constraint_rate",
            "p_same_community",
            "p_same_domain",
            "spurious_rate",
            "supersede_rate",
            "drift_rate",
            "distractor_rate",
            "distractor_memory_rate",
            "chitchat_rate",
            "chitchat_deleted",
            "multi_hop_share",
            "bridge_share",
        ):
            check_probability(name, getattr(self, name), owner="synthetic config")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["generator_version"] = self.generator_version
        return d


#: Size presets. ``xl`` is the size of a real heavy user's graph (43,520 entities, ~40k memories).
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"n_entities": 60, "n_memories": 80, "n_queries": 80, "community_size": 6, "days": 30},
    "small": {"n_entities": 500, "n_memories": 600, "n_queries": 400, "community_size": 25, "days": 120},
    "medium": {"n_entities": 4000, "n_memories": 4500, "n_queries": 1500, "community_size": 40, "days": 240},
    "xl": {"n_entities": 43520, "n_memories": 40000, "n_queries": 4000, "community_size": 40, "days": 365},
}


def make_config(preset: str = "small", **overrides: Any) -> SyntheticConfig:
    """The config of a preset with ``overrides`` applied.

    Raises:
        ValueError: an unknown preset or knob, naming it and what is allowed.
    """
    return _make_config(SyntheticConfig, preset, overrides, "unknown synthetic config keys")


_C = TypeVar("_C", bound=SyntheticConfig)


def _make_config(cls: type[_C], preset: str, overrides: dict[str, Any], unknown_keys: str) -> _C:
    """``cls`` for ``preset`` with ``overrides``; an unknown key is refused with ``unknown_keys`` first."""
    if preset not in PRESETS:
        raise ValueError(f"unknown synthetic preset {preset!r}; expected one of: {', '.join(PRESETS)}")
    check_known_keys(overrides, (f.name for f in dataclasses.fields(cls)), unknown_keys)
    return cls(preset=preset, **{**PRESETS[preset], **overrides})


#: Generator versions ``generate`` knows; 1 stays the default (its config hash never changes).
VERSIONS: tuple[int, ...] = (1, 2, 3, 4)


def generate(preset: str = "small", seed: int = 0, version: int = 1, **overrides: Any) -> Dataset:
    """Generate the benchmark for ``preset`` (``tiny``, ``small``, ``medium``, ``xl``) and ``seed``.

    The same preset, seed, version and overrides always give the same dataset. ``version=2`` is the
    latent-need benchmark of :mod:`signet_rl.datasets.synthetic_v2` (dataset option ``version: 2``);
    ``version=3`` is v2 with passing-mention noise, value principles, recurring bridges and a drift of fact
    kind (:mod:`signet_rl.datasets.synthetic_v3`, opt-in); ``version=4`` is v3 with principles stated in
    paraphrases that share no word, and topic and near-miss decoys (:mod:`signet_rl.datasets.synthetic_v4`,
    opt-in).

    Raises:
        ValueError: an unknown version, preset or knob, naming it.
    """
    if isinstance(version, bool) or version not in VERSIONS:
        raise ValueError(
            f"unknown synthetic generator version {version!r}; expected one of {list(VERSIONS)} "
            "(dataset option version: 2 for the latent-need benchmark)"
        )
    if version == 2:
        from signet_rl.datasets.synthetic_v2 import generate_v2

        return generate_v2(preset, seed=seed, **overrides)
    if version == 3:
        from signet_rl.datasets.synthetic_v3 import generate_v3

        return generate_v3(preset, seed=seed, **overrides)
    if version == 4:
        from signet_rl.datasets.synthetic_v4 import generate_v4

        return generate_v4(preset, seed=seed, **overrides)
    config = make_config(preset, **overrides)
    return _Generator(config, seed).run()


# ----------------------------------------------------------------------------------------------------

_SLOT = re.compile(r"\{(\w+)\}")
_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "s",
        "the",
        "to",
        "what",
        "who",
        "why",
        "how",
        "about",
        "know",
        "tell",
        "remind",
        "depend",
        "should",
        "things",
        "needs",
        "behind",
        "relate",
        "relates",
        "connects",
        "link",
        "between",
        "there",
        "handle",
        "now",
        "need",
        "work",
        "anything",
        "must",
        "keep",
        "mind",
        "changed",
        "change",
        "new",
        "any",
        "with",
        "this",
        "that",
        "x",
        "y",
        "is",
    ]
)


def tokens(text: str) -> set[str]:
    """Content words of a text (lower case, stop words and template words removed)."""
    return {t for t in _TOKEN.findall(text.lower()) if len(t) >= 3 and t not in _STOP}


@dataclass
class _Facts:
    """Facts (future attributes) as parallel lists, before memories give them times."""

    entity: list[int] = field(default_factory=list)
    aspect: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)  # 0 attribute, 1 constraint
    category: list[int] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    template: list[str] = field(default_factory=list)
    edge: list[int] = field(default_factory=list)
    group: list[int] = field(default_factory=list)  # bridge group or principle id, else -1
    names: list[tuple[int, ...]] = field(default_factory=list)  # entities named in the text

    def add(
        self,
        entity: int,
        aspect: int,
        kind: int,
        category: int,
        content: str,
        template: str = "",
        edge: int = -1,
        group: int = -1,
        names: tuple[int, ...] = (),
    ) -> int:
        self.entity.append(entity)
        self.aspect.append(aspect)
        self.kind.append(kind)
        self.category.append(category)
        self.content.append(content)
        self.template.append(template)
        self.edge.append(edge)
        self.group.append(group)
        self.names.append(names)
        return len(self.entity) - 1


class _Generator:
    def __init__(self, config: SyntheticConfig, seed: int) -> None:
        self.c = config
        self.seed = seed
        self.rng = np.random.default_rng([seed, GENERATOR_VERSION])
        # Text choices are many and tiny: a seeded Python RNG drawn from the numpy one is much faster.
        self.prng = random.Random(int(self.rng.integers(2**62)))
        self.t0 = pd.Timestamp(config.start).timestamp()
        self.T = config.days * DAY

    # -- text ---------------------------------------------------------------------------------------

    def fill(self, template: str, **fixed: str) -> str:
        def pick(m: re.Match[str]) -> str:
            key = m.group(1)
            if key in fixed:
                return fixed[key]
            return self.prng.choice(V.VALUES[key])

        return _SLOT.sub(pick, template)

    # -- structure ----------------------------------------------------------------------------------

    def entities(self) -> None:
        c, rng = self.c, self.rng
        n = c.n_entities
        n_comm = max(len(DOMAIN_NAMES), math.ceil(n / c.community_size))
        w = np.asarray(c.domain_weights) / sum(c.domain_weights)
        comm_domain = np.concatenate(
            [np.arange(len(DOMAIN_NAMES)), rng.choice(len(DOMAIN_NAMES), n_comm - len(DOMAIN_NAMES), p=w)]
        )
        community = np.concatenate([np.arange(n_comm), rng.integers(0, n_comm, n - n_comm)])
        community = np.sort(community)  # entities of a community are contiguous
        domain = comm_domain[community]
        etype = np.empty(n, dtype=object)
        for d, name in enumerate(DOMAIN_NAMES):
            idx = np.flatnonzero(domain == d)
            types = list(V.DOMAINS[name]["types"])
            p = np.asarray(list(V.DOMAINS[name]["types"].values()))
            etype[idx] = np.asarray(types, dtype=object)[rng.choice(len(types), len(idx), p=p / p.sum())]
        syl = np.asarray(V.SYLLABLES, dtype=object)
        codes = rng.choice(len(syl) ** 3, size=2 * n, replace=False)
        words = [
            syl[x // len(syl) ** 2] + syl[(x // len(syl)) % len(syl)] + syl[x % len(syl)]
            for x in codes.tolist()
        ]
        names = []
        for i in range(n):
            t = etype[i]
            if t == "person":
                names.append(f"{words[i].capitalize()} {words[n + i].capitalize()}")
            else:
                suffixes = V.NAME_SUFFIX[t]
                names.append(
                    f"{words[i]} {suffixes[i % len(suffixes)]}"
                    if t not in ("system", "tool")
                    else f"{words[i]}-{suffixes[i % len(suffixes)]}"
                )
        self.n, self.n_comm = n, n_comm
        self.community, self.domain, self.etype, self.names = community, domain, etype, names
        self.comm_start = np.searchsorted(community, np.arange(n_comm + 1))
        self.domain_members = [np.flatnonzero(domain == d) for d in range(len(DOMAIN_NAMES))]

    def aspects(self) -> None:
        c, rng = self.c, self.rng
        lo, hi = c.aspects_per_entity
        k = rng.integers(lo, hi + 1, self.n)
        width = max(len(d["aspects"]) for d in V.DOMAINS.values())
        choice = np.argsort(rng.random((self.n, width)), axis=1)  # a random order of aspect slots
        n_opt = np.asarray([len(V.DOMAINS[d]["aspects"]) for d in DOMAIN_NAMES])[self.domain]
        choice = np.where(choice < n_opt[:, None], choice, width)  # slots beyond the domain's list
        valid = choice < width
        rank = np.cumsum(valid, axis=1) - 1
        take = valid & (rank < k[:, None])
        rows, cols = np.nonzero(take)
        slot = choice[rows, cols]
        weight = np.round(0.3 + 0.7 * rng.beta(2.0, 2.0, len(rows)), 4)
        order = np.lexsort((-weight, rows))
        rows, slot, weight = rows[order], slot[order], weight[order]
        names_by_domain = [V.DOMAINS[d]["aspects"] for d in DOMAIN_NAMES]
        self.asp_entity = rows
        self.asp_name = [
            names_by_domain[d][j] for d, j in zip(self.domain[rows].tolist(), slot.tolist(), strict=True)
        ]
        self.asp_weight = weight.tolist()
        self.ent_aspects = self._ent_aspects_fast()

    def base_facts(self) -> _Facts:
        c, rng = self.c, self.rng
        f = _Facts()
        lo, hi = c.facts_per_aspect
        counts = rng.integers(lo, hi + 1, len(self.asp_name))
        owner = self.asp_entity.tolist()
        for a, cnt in enumerate(counts.tolist()):
            aname = self.asp_name[a]
            for _ in range(cnt):
                if aname in V.CONSTRAINTS and self.prng.random() < c.constraint_rate:
                    tpl = self.prng.choice(V.CONSTRAINTS[aname])
                    f.add(owner[a], a, 1, REGULAR, self.fill(tpl), tpl)
                else:
                    tpl = self.prng.choice(V.FACTS[aname])
                    f.add(owner[a], a, 0, REGULAR, self.fill(tpl), tpl)
        return f

    def dependencies(self, f: _Facts) -> None:
        c, rng = self.c, self.rng
        n = self.n
        deg = rng.poisson(c.out_degree, n)
        src = np.repeat(np.arange(n), deg)
        tgt = self._edge_targets(src)
        n_true = len(src)
        n_sp = int(round(c.spurious_rate * n_true / max(1e-9, 1 - c.spurious_rate)))
        src = np.concatenate([src, rng.integers(0, n, n_sp)])
        tgt = np.concatenate([tgt, rng.integers(0, n, n_sp)])
        spurious = np.arange(len(src)) >= n_true
        src, tgt, spurious, dtype = self._typed_edges(src, tgt, spurious)
        # Reasons: informative but imperfect.
        p_true = np.array([0.05, 0.08, 0.12, 0.45, 0.25, 0.05])
        p_spur = np.array([0.25, 0.25, 0.2, 0.2, 0.08, 0.02])
        self._keep_edges(src, tgt, dtype, spurious, p_true, p_spur, 0.05, (0.2, 0.9))
        ent_aspects = [a.tolist() for a in self.ent_aspects]
        for e in np.flatnonzero(~spurious).tolist():
            self._state_edge(f, e, LINK, ent_aspects)

    def _edge_targets(self, src: np.ndarray) -> np.ndarray:
        """A target per source: in its community, else its domain, else anywhere."""
        c, rng, n = self.c, self.rng, self.n
        u = rng.random(len(src))
        comm = self.community[src]
        lo, hi = self.comm_start[comm], self.comm_start[comm + 1]
        tgt_comm = lo + (rng.random(len(src)) * (hi - lo)).astype(np.int64)
        tgt_dom = np.empty(len(src), dtype=np.int64)
        for d, members in enumerate(self.domain_members):
            sel = self.domain[src] == d
            tgt_dom[sel] = members[rng.integers(0, len(members), int(sel.sum()))]
        tgt_any = rng.integers(0, n, len(src))
        return np.where(
            u < c.p_same_community,
            tgt_comm,
            np.where(u < c.p_same_community + c.p_same_domain, tgt_dom, tgt_any),
        )

    def _typed_edges(
        self, src: np.ndarray, tgt: np.ndarray, spurious: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The edges without self-loops and repeated pairs, and a dependency type for each."""
        keep = src != tgt
        pair = src.astype(np.int64) * self.n + tgt
        _, first = np.unique(pair, return_index=True)
        uniq = np.zeros(len(src), dtype=bool)
        uniq[first] = True
        keep &= uniq
        src, tgt, spurious = src[keep], tgt[keep], spurious[keep]
        dtype = np.empty(len(src), dtype=object)
        st, tt = self.etype[src], self.etype[tgt]
        r = self.rng.random(len(src))
        dtype[:] = np.where(r < 0.5, "uses", "informs")
        dtype[np.isin(st, ["system", "tool"])] = np.where(
            r[np.isin(st, ["system", "tool"])] < 0.6, "uses", "requires"
        )
        dtype[np.isin(st, ["task", "project"])] = np.where(
            r[np.isin(st, ["task", "project"])] < 0.5, "blocks", "requires"
        )
        dtype[st == "concept"] = "informs"
        dtype[tt == "person"] = "owned_by"
        return src, tgt, spurious, dtype

    def _keep_edges(
        self,
        src: np.ndarray,
        tgt: np.ndarray,
        dtype: np.ndarray,
        spurious: np.ndarray,
        p_true: np.ndarray,
        p_spur: np.ndarray,
        conf_noise: float,
        spurious_strength: tuple[float, float],
    ) -> None:
        """Keep the edges, each with a reason on the ladder (drawn from ``p_true`` or ``p_spur``), a
        confidence (the reason's prior plus N(0, ``conf_noise``²)) and a strength (uniform in
        ``spurious_strength`` for a spurious edge, in [0.3, 1) for a true one)."""
        rng = self.rng
        rung = np.where(spurious, rng.choice(6, len(src), p=p_spur), rng.choice(6, len(src), p=p_true))
        prior = np.asarray([r.prior for r in LADDER])[rung]
        conf = np.clip(prior + rng.normal(0, conf_noise, len(src)), 0.0, 1.0).round(4)
        strength = np.where(
            spurious, rng.uniform(*spurious_strength, len(src)), rng.uniform(0.3, 1.0, len(src))
        ).round(4)
        self.e_src, self.e_tgt, self.e_type, self.e_spurious = src, tgt, dtype, spurious
        self.e_reason = np.asarray([LADDER[i].value for i in rung], dtype=object)
        self.e_conf, self.e_strength = conf, strength
        self.e_aspect = np.full(len(src), -1)

    def _state_edge(self, f: _Facts, e: int, category: int, ent_aspects: list[list[int]]) -> None:
        """Edge ``e`` stated in words as a fact (of ``category``) on one of its source's aspects."""
        s, t = int(self.e_src[e]), int(self.e_tgt[e])
        a = self.prng.choice(ent_aspects[s])
        tpl = self.prng.choice(V.LINKS[self.e_type[e]])
        self.e_aspect[e] = a
        f.add(s, a, 0, category, self.fill(tpl, target=self.names[t]), tpl, edge=e, names=(t,))

    def bridges_principles_distractors(self, f: _Facts) -> None:
        c, rng = self.c, self.rng
        edges = set(zip(self.e_src.tolist(), self.e_tgt.tolist(), strict=True))
        n_bridges = max(2, int(round(self.n * c.bridges_per_1k / 1000)))
        self.bridges: list[tuple[int, int]] = []
        for g in range(n_bridges):
            for _ in range(50):
                a, b = rng.integers(0, self.n, 2).tolist()
                if self.domain[a] != self.domain[b] and (a, b) not in edges and (b, a) not in edges:
                    break
            else:
                continue
            tpl = V.BRIDGE_FACTS[g % len(V.BRIDGE_FACTS)]
            text = self.fill(tpl)
            ia = f.add(a, int(rng.choice(self.ent_aspects[a])), 0, BRIDGE, text, tpl, group=g)
            ib = f.add(b, int(rng.choice(self.ent_aspects[b])), 0, BRIDGE, text, tpl, group=g)
            self.bridges.append((ia, ib))
        names = list(V.PRINCIPLES)
        for p in range(min(c.principles, len(names))):
            comms = rng.choice(self.n_comm, size=min(c.principle_entities, self.n_comm), replace=False)
            paraphrases = V.PRINCIPLES[names[p]]
            for j, cm in enumerate(comms.tolist()):
                e = int(rng.integers(self.comm_start[cm], self.comm_start[cm + 1]))
                asp = self.ent_aspects[e]
                prefs = [a for a in asp.tolist() if self.asp_name[a] in V.PREFERENCE_ASPECTS]
                a = prefs[0] if prefs else int(asp[0])
                text = paraphrases[j % len(paraphrases)]
                f.add(e, a, 0, PRINCIPLE, text, text, group=p)
        self.principle_names = names[: c.principles]
        self._distractors(f)

    def _distractors(self, f: _Facts) -> None:
        """Lexical distractors, each on a new ``notes`` aspect of its host (:meth:`_notes_weights`)."""
        hosts = np.sort(
            self.rng.choice(self.n, size=int(round(self.c.distractor_rate * self.n)), replace=False)
        )
        first = len(self.asp_name)
        self.asp_entity = np.concatenate([self.asp_entity, hosts])
        self.asp_name += ["notes"] * len(hosts)
        self.asp_weight += self._notes_weights(len(hosts)).tolist()
        for j, e in enumerate(hosts.tolist()):
            tpl = self.prng.choice(V.DISTRACTOR_FACTS)
            f.add(e, first + j, 0, DISTRACTOR, self.fill(tpl), tpl)

    def _notes_weights(self, k: int) -> np.ndarray:
        return np.round(self.rng.uniform(0.05, 0.25, k), 4)

    # -- time ---------------------------------------------------------------------------------------

    def session_times(
        self, domains: np.ndarray, lo: np.ndarray | float = 0.0, hi: np.ndarray | float | None = None
    ) -> np.ndarray:
        """Seconds since start for sessions of the given domains, with each domain's rhythm, drawn in
        [lo, hi) days (snapped forward to an allowed day and hour, so never before ``lo``)."""
        rng = self.rng
        hi = self.c.days if hi is None else hi
        k = len(domains)
        day = np.floor(rng.uniform(lo, np.maximum(hi, np.asarray(lo) + 1e-6), k))
        hour_mu = np.asarray([V.DOMAINS[d]["hour"][0] for d in DOMAIN_NAMES])[domains]
        hour_sd = np.asarray([V.DOMAINS[d]["hour"][1] for d in DOMAIN_NAMES])[domains]
        wk = np.asarray([V.DOMAINS[d]["weekday"] for d in DOMAIN_NAMES])[domains]
        want_weekday = rng.random(k) < wk
        start_dow = pd.Timestamp(self.c.start).day_of_week
        for _ in range(7):  # walk forward to a day of the wanted kind
            dow = (start_dow + day) % 7
            bad = (dow < 5) != want_weekday
            if not bad.any():
                break
            day = day + bad
        hour = np.clip(rng.normal(hour_mu, hour_sd), 6.0, 23.9)
        t = day * DAY + hour * 3600.0
        lo_s = np.asarray(lo) * DAY
        t = np.where(t < lo_s, t + DAY, t)
        return np.round(t)

    # -- memories -----------------------------------------------------------------------------------

    def memories(self, f: _Facts) -> None:
        c, rng = self.c, self.rng
        n_facts = len(f.entity)
        ent = np.asarray(f.entity)
        # Updates first (their count sets how many memories the base facts get).
        candidates = self._update_candidates(f)
        n_upd = int(round(c.supersede_rate * len(candidates)))
        own = self._own_memory_entities()
        n_extra = (
            int(round(c.distractor_memory_rate * self.n))
            + int(round(c.chitchat_rate * c.n_memories))
            + len(own)
        )
        # Pooled facts are dealt into the shared memories; an own-memory entity's facts are not.
        pool = np.flatnonzero(~np.isin(ent, own)) if len(own) else np.arange(n_facts)
        n_pool = len(pool)
        n_base = max(1, min(n_pool, c.n_memories - n_upd - n_extra))
        order = pool[np.lexsort((rng.random(n_pool), ent[pool], self.community[ent[pool]]))]
        cuts = (
            np.sort(rng.choice(np.arange(1, n_pool), size=n_base - 1, replace=False))
            if n_base > 1
            else np.array([], dtype=np.int64)
        )
        chunk_of_sorted = np.zeros(n_pool, dtype=np.int64)
        chunk_of_sorted[cuts] = 1
        chunk_of_sorted = np.cumsum(chunk_of_sorted)
        fact_mem = np.empty(n_facts, dtype=np.int64)
        fact_mem[order] = chunk_of_sorted
        first_fact = order[np.searchsorted(chunk_of_sorted, np.arange(n_base))]
        mem_domain = self.domain[ent[first_fact]]
        mem_time = self.session_times(mem_domain, 0.0, c.days * 0.95)
        mem_facts = np.split(order, cuts)
        if len(own):  # one memory each, after the shared ones, at a time of the entity's domain
            for k, e in enumerate(own.tolist()):
                facts = np.flatnonzero(ent == e)
                fact_mem[facts] = n_base + k
                mem_facts.append(facts)
            mem_time = np.concatenate([mem_time, self.session_times(self.domain[own], 0.0, c.days * 0.95)])
        fact_time = mem_time[fact_mem]

        mem_content, mem_mentions, mem_kind = [], [], []
        intros = ["Noted about", "Discussed", "Update on", "Reminder re", "From the session on"]
        for m, facts in enumerate(mem_facts):
            es = list(dict.fromkeys(ent[facts].tolist()))
            named = list(dict.fromkeys(x for i in facts.tolist() for x in f.names[i]))
            intro = intros[m % len(intros)]
            body = "; ".join(f.content[i] for i in facts.tolist())
            mem_content.append(f"{intro} {', '.join(self.names[e] for e in es)}: {body}.")
            mem_mentions.append(list(dict.fromkeys(es + named)))
            mem_kind.append("fact")

        # Supersession: new versions of regular facts, later in time, each in its own memory.
        upd = rng.choice(candidates, size=n_upd, replace=False) if n_upd else np.array([], dtype=np.int64)
        succ: list[tuple[int, int]] = []
        extra_time: list[float] = []
        drift_facts: set[int] = set()
        if c.drift:
            mid = c.days / 2
            prefs = [
                i
                for i in candidates.tolist()
                if self.asp_name[f.aspect[i]] in V.PREFERENCE_ASPECTS and fact_time[i] < mid * DAY
            ]
            k = int(round(c.drift_rate * len(prefs)))
            drift_facts = set(rng.choice(prefs, size=k, replace=False).tolist()) if k else set()
            upd = np.union1d(upd, np.fromiter(drift_facts, dtype=np.int64))
        upd = np.sort(upd)
        t_old = fact_time[upd] / DAY
        lo_day = t_old + rng.exponential(c.days / 6, len(upd))
        late = lo_day >= c.days  # keep every update inside the timeline
        lo_day[late] = rng.uniform(np.minimum(t_old[late], c.days - 1), c.days)
        drifted = np.isin(upd, np.fromiter(drift_facts, dtype=np.int64))
        lo_day[drifted] = c.days / 2
        t_new_all = self.session_times(self.domain[ent[upd]], lo_day, np.minimum(lo_day + 3, c.days))
        new_mems = []
        for old, t_new in zip(upd.tolist(), t_new_all.tolist(), strict=True):
            new_text = f.content[old]
            for _ in range(10):
                new_text = self.fill(f.template[old])
                if new_text != f.content[old]:
                    break
            if new_text == f.content[old]:
                continue  # a template with too few values to change
            new = f.add(f.entity[old], f.aspect[old], f.kind[old], REGULAR, new_text, f.template[old])
            succ.append((old, new))
            e = f.entity[old]
            mem_content.append(f"{self.names[e]} changed: {new_text} (no longer: {f.content[old]}).")
            mem_mentions.append([e])
            mem_kind.append("fact")
            extra_time.append(t_new)
            new_mems.append(len(mem_content) - 1)
        fact_time = np.concatenate([fact_time, np.asarray(extra_time)])
        fact_mem = np.concatenate([fact_mem, np.asarray(new_mems, dtype=np.int64)])
        pairs = np.asarray(succ, dtype=np.int64).reshape(-1, 2)
        successor = np.full(len(f.entity), -1, dtype=np.int64)
        successor[pairs[:, 0]] = pairs[:, 1]

        # Distractor and chit-chat memories.
        self.mem_distractor_start = len(mem_content)
        hosts = self._distractor_memory_hosts(int(round(c.distractor_memory_rate * self.n)))
        for e in hosts.tolist():
            tpl = V.DISTRACTOR_MEMORIES[int(rng.integers(len(V.DISTRACTOR_MEMORIES)))]
            mem_content.append(self.fill(tpl, name=self.names[e]))
            mem_mentions.append([e])
            mem_kind.append("distractor")
        dist_time = self.session_times(self.domain[hosts]) if len(hosts) else np.array([])
        n_chit = int(round(c.chitchat_rate * c.n_memories))
        for i in range(n_chit):
            mem_content.append(
                V.CHITCHAT_MEMORIES[i % len(V.CHITCHAT_MEMORIES)] + f" (session {int(rng.integers(1, 999))})"
            )
            mem_mentions.append([])
            mem_kind.append("chitchat")
        chit_time = self.session_times(rng.choice(len(DOMAIN_NAMES), n_chit)) if n_chit else np.array([])
        all_mem_time = np.concatenate([mem_time, np.asarray(extra_time), dist_time, chit_time])

        self.f = f
        self.fact_time, self.fact_mem, self.succ = fact_time, fact_mem, successor
        self.mem_content, self.mem_mentions, self.mem_kind = mem_content, mem_mentions, mem_kind
        self.mem_time = all_mem_time
        # An edge exists from the first time it is written down (its link fact), spurious ones at random.
        e_time = self.session_times(self.domain[self.e_src], 0.0, c.days * 0.95)
        link = np.flatnonzero(np.asarray(f.edge) >= 0)
        e_time[np.asarray(f.edge)[link]] = fact_time[link]
        self.e_time = e_time

    def _update_candidates(self, f: _Facts) -> np.ndarray:
        """Facts a later update may supersede: every regular fact."""
        return np.flatnonzero(np.asarray(f.category) == REGULAR)

    def _own_memory_entities(self) -> np.ndarray:
        """Entities whose facts are all written in one memory of their own, mentioning nothing else (none
        before version 3), in memory order."""
        return np.array([], dtype=np.int64)

    def _distractor_memory_hosts(self, k: int) -> np.ndarray:
        """The ``k`` entities a distractor memory is written about: any entity."""
        return self.rng.choice(self.n, size=k, replace=False)

    # -- tables -------------------------------------------------------------------------------------

    def ts(self, seconds: np.ndarray) -> pd.Series:
        return pd.Series(
            pd.to_datetime(self.t0 + np.asarray(seconds, dtype=np.float64), unit="s", utc=True)
        ).astype("datetime64[ms, UTC]")

    def graph(self) -> KnowledgeGraph:
        c, rng, f = self.c, self.rng, self.f
        n_mem, n_facts, n_asp = len(self.mem_content), len(f.entity), len(self.asp_name)
        self.mem_ids = [f"mem-{i:06d}" for i in range(n_mem)]
        self.ent_ids = [f"ent-{i:06d}" for i in range(self.n)]
        self.asp_ids = [f"asp-{i:06d}" for i in range(n_asp)]
        self.att_ids = [f"att-{i:07d}" for i in range(n_facts)]
        self.dep_ids = [f"dep-{i:06d}" for i in range(len(self.e_src))]
        fact = pd.DataFrame({"mem": self.fact_mem, "imp": 0.0})
        kind = np.asarray(f.kind)
        cat = np.asarray(f.category)
        imp = np.clip(
            rng.beta(2.0, 3.0, n_facts)
            + 0.25 * kind
            - 0.15 * (cat == DISTRACTOR)
            + 0.1 * np.asarray(self.asp_weight)[np.asarray(f.aspect)],
            0.0,
            1.0,
        ).round(4)
        fact["imp"] = imp
        mem_imp = fact.groupby("mem")["imp"].mean().reindex(range(n_mem))
        mem_imp = mem_imp.fillna(pd.Series(rng.uniform(0.1, 0.5, n_mem))).round(4).to_numpy()
        deleted = np.zeros(n_mem, dtype=bool)
        chit = np.flatnonzero(np.asarray(self.mem_kind) == "chitchat")
        if len(chit):
            deleted[rng.choice(chit, size=int(round(c.chitchat_deleted * len(chit))), replace=False)] = True
        mem_time = self.mem_time
        del_time = np.where(deleted, mem_time + DAY, np.nan)
        memories = pd.DataFrame(
            {
                "id": self.mem_ids,
                "type": np.where(np.asarray(self.mem_kind) == "chitchat", "chitchat", "fact"),
                "content": self.mem_content,
                "importance": mem_imp,
                "source_type": "synthetic-session",
                "created_at": self.ts(mem_time),
                "updated_at": self.ts(mem_time),
                "is_deleted": deleted,
                "deleted_at": pd.Series(pd.to_datetime(self.t0 + del_time, unit="s", utc=True)),
            }
        )
        ment_m = np.repeat(np.arange(n_mem), [len(x) for x in self.mem_mentions])
        ment_e = np.fromiter((e for x in self.mem_mentions for e in x), dtype=np.int64, count=len(ment_m))
        mentions = pd.DataFrame(
            {
                "memory_id": np.asarray(self.mem_ids, dtype=object)[ment_m],
                "entity_id": np.asarray(self.ent_ids, dtype=object)[ment_e],
                "mention_text": np.asarray(self.names, dtype=object)[ment_e],
                "confidence": 1.0,
                "created_at": self.ts(mem_time[ment_m]),
            }
        )
        live = ~deleted[ment_m]
        first_seen = pd.Series(mem_time[ment_m][live]).groupby(ment_e[live]).min()
        ent_time = first_seen.reindex(range(self.n)).fillna(0.0).to_numpy()
        n_mentions = np.bincount(ment_e[live], minlength=self.n)
        entities = pd.DataFrame(
            {
                "id": self.ent_ids,
                "name": self.names,
                "entity_type": self.etype.astype(object),
                "canonical_name": [s.lower() for s in self.names],
                "mentions": n_mentions,
                "created_at": self.ts(ent_time),
                "updated_at": self.ts(ent_time),
            }
        )
        asp_of_fact = np.asarray(f.aspect)
        asp_time = pd.Series(self.fact_time).groupby(asp_of_fact).min().reindex(range(n_asp)).fillna(0.0)
        aspects = pd.DataFrame(
            {
                "id": self.asp_ids,
                "entity_id": np.asarray(self.ent_ids, dtype=object)[self.asp_entity],
                "name": self.asp_name,
                "canonical_name": self.asp_name,
                "weight": self.asp_weight,
                "created_at": self.ts(asp_time.to_numpy()),
                "updated_at": self.ts(asp_time.to_numpy()),
            }
        )
        succ = self.succ
        has_succ = succ >= 0
        updated = np.where(has_succ, self.fact_time[np.maximum(succ, 0)], self.fact_time)
        attributes = pd.DataFrame(
            {
                "id": self.att_ids,
                "aspect_id": np.asarray(self.asp_ids, dtype=object)[asp_of_fact],
                "memory_id": np.asarray(self.mem_ids, dtype=object)[self.fact_mem],
                "kind": np.where(kind == 1, "constraint", "attribute"),
                "content": f.content,
                "normalized_content": [s.lower() for s in f.content],
                "confidence": np.clip(rng.normal(0.8, 0.1, n_facts), 0, 1).round(4),
                "importance": imp,
                "status": np.where(has_succ, "superseded", "active"),
                "superseded_by": pd.Series(np.asarray(self.att_ids, dtype=object)[np.maximum(succ, 0)]).where(
                    has_succ, None
                ),
                "created_at": self.ts(self.fact_time),
                "updated_at": self.ts(updated),
            }
        )
        dependencies = pd.DataFrame(
            {
                "id": self.dep_ids,
                "source_entity_id": np.asarray(self.ent_ids, dtype=object)[self.e_src],
                "target_entity_id": np.asarray(self.ent_ids, dtype=object)[self.e_tgt],
                "aspect_id": pd.Series(
                    np.asarray(self.asp_ids, dtype=object)[np.maximum(self.e_aspect, 0)]
                ).where(self.e_aspect >= 0, None),
                "dependency_type": self.e_type,
                "strength": self.e_strength,
                "confidence": self.e_conf,
                "reason": self.e_reason,
                "created_at": self.ts(self.e_time),
                "updated_at": self.ts(self.e_time),
            }
        )
        cold_idx = np.flatnonzero(deleted)
        memories_cold = pd.DataFrame(
            {
                "archive_id": [f"cold-{i:06d}" for i in range(len(cold_idx))],
                "memory_id": np.asarray(self.mem_ids, dtype=object)[cold_idx],
                "type": "chitchat",
                "content": np.asarray(self.mem_content, dtype=object)[cold_idx],
                "importance": mem_imp[cold_idx],
                "original_created_at": self.ts(mem_time[cold_idx]),
                "archived_at": self.ts(del_time[cold_idx]),
                "archived_reason": "deleted",
            }
        )
        self.imp = imp
        return KnowledgeGraph.from_frames(
            memories=memories,
            entities=entities,
            aspects=aspects,
            attributes=attributes,
            dependencies=dependencies,
            mentions=mentions,
            memories_cold=memories_cold,
            meta={
                "dataset": f"synthetic:{c.preset}:{self.seed}",
                "generator": "synthetic",
                "config_hash": self.hash,
            },
        )

    # -- queries ------------------------------------------------------------------------------------

    def _index(self) -> None:
        f = self.f
        self.a_entity = np.asarray(f.entity)
        self.a_aspect = np.asarray(f.aspect)
        self.a_kind = np.asarray(f.kind)
        self.a_cat = np.asarray(f.category)
        self.a_edge = np.asarray(f.edge)
        pred = np.full(len(self.succ), -1)
        pred[self.succ[self.succ >= 0]] = np.flatnonzero(self.succ >= 0)
        self.pred = pred
        order = np.argsort(self.a_aspect, kind="stable")
        bounds = np.searchsorted(self.a_aspect[order], np.arange(len(self.asp_name) + 1))
        self.aspect_facts = [order[bounds[a] : bounds[a + 1]] for a in range(len(self.asp_name))]
        true = np.flatnonzero(~self.e_spurious)
        order = true[np.argsort(self.e_src[true], kind="stable")]
        bounds = np.searchsorted(self.e_src[order], np.arange(self.n + 1))
        self.out_true = [order[bounds[i] : bounds[i + 1]] for i in range(self.n)]
        self.edge_link = np.full(len(self.e_src), -1)
        link = np.flatnonzero(self.a_edge >= 0)
        self.edge_link[self.a_edge[link]] = link
        self.mem_tokens: dict[int, set[str]] = {}

    def latest(self, facts: np.ndarray, t: float) -> list[int]:
        """Facts that are the newest version as of time ``t`` (and not distractors)."""
        out = []
        for a in facts.tolist():
            if self.fact_time[a] > t or self.a_cat[a] == DISTRACTOR:
                continue
            s = self.succ[a]
            if s >= 0 and self.fact_time[s] <= t:
                continue
            out.append(a)
        return out

    def stale(self, facts: list[int], t: float) -> list[int]:
        """Earlier versions of ``facts`` that were superseded by ``t`` (misleading)."""
        out = []
        for a in facts:
            p = self.pred[a]
            while p >= 0 and self.fact_time[p] <= t:
                out.append(int(p))
                p = self.pred[p]
        return out

    def aspect_words(self, a: int) -> str:
        return self.asp_name[a].replace("_", " ")

    def query_time(self, entity: int, after: float) -> float:
        gap = self.rng.exponential(self.c.query_gap_days)
        lo = min(after / DAY + gap, self.c.days + 7)
        return float(self.session_times(self.domain[[entity]], lo, lo + 1)[0])

    def pick(self, pool: np.ndarray, by_importance: bool = False) -> int:
        """A random fact of ``pool``; important facts are asked about more often when ``by_importance``."""
        if not by_importance:
            return int(pool[int(self.rng.integers(len(pool)))])
        cum = np.cumsum(self.imp[pool] ** 2)
        return int(pool[min(len(pool) - 1, int(np.searchsorted(cum, self.rng.random() * cum[-1])))])

    @staticmethod
    def no_question(t: float) -> dict[str, Any]:
        """The drawn row of a non-question at time ``t``: it needs nothing and has no focus."""
        return {
            "t": t,
            "needed": [],
            "misleading": [],
            "category": "none",
            "hops": None,
            "x": -1,
            "y": -1,
        }

    def one_query(self, intent: str) -> dict[str, Any] | None:
        rng, c = self.rng, self.c
        tpl = V.QUERIES
        multi = rng.random() < c.multi_hop_share
        if intent == "none":
            a = self.pick(self.regular)  # chit-chat happens in the same sessions as real questions
            t = self.query_time(int(self.a_entity[a]), self.fact_time[a])
            text = tpl["none"][int(rng.integers(len(tpl["none"])))]
            return {"text": text, **self.no_question(t)}
        if intent == "what" and not multi:
            a = self.pick(self.regular, by_importance=True)
            x, asp = int(self.a_entity[a]), int(self.a_aspect[a])
            t = self.query_time(x, self.fact_time[a])
            needed = self.latest(self.aspect_facts[asp], t)
            text = self.fill(
                tpl["what"][int(rng.integers(len(tpl["what"])))],
                x=self.names[x],
                aspect=self.aspect_words(asp),
            )
            return {"text": text, "t": t, "needed": needed, "category": "hop0", "hops": 0, "x": x, "y": -1}
        if intent == "what":
            a = self.pick(self.links_uses)
            x = int(self.a_entity[a])
            t = self.query_time(x, self.fact_time[a])
            needed = []
            for e in self.out_true[x].tolist():
                if self.e_type[e] not in ("uses", "requires") or self.e_time[e] > t:
                    continue
                needed += self.latest(np.asarray([self.edge_link[e]]), t)
                z = int(self.e_tgt[e])
                zs = self.ent_aspects[z]
                needed += self.latest(self.aspect_facts[int(zs[0])], t)
            text = tpl["what_hop"][int(rng.integers(len(tpl["what_hop"])))].format(x=self.names[x])
            return {"text": text, "t": t, "needed": needed, "category": "hop1", "hops": 1, "x": x, "y": -1}
        if intent == "relate":
            if rng.random() < c.bridge_share and self.bridges:
                ia, ib = self.bridges[int(rng.integers(len(self.bridges)))]
                x, y = int(self.a_entity[ia]), int(self.a_entity[ib])
                t = self.query_time(x, max(self.fact_time[ia], self.fact_time[ib]))
                needed, category, hops = self.latest(np.asarray([ia, ib]), t), "bridge", None
            else:
                a = self.pick(self.links)
                e = int(self.a_edge[a])
                x, y = int(self.e_src[e]), int(self.e_tgt[e])
                t = self.query_time(x, self.fact_time[a])
                path = [e]
                if multi:
                    nxt = [
                        e2 for e2 in self.out_true[y].tolist() if self.e_time[e2] <= t and self.e_tgt[e2] != x
                    ]
                    direct = set(self.e_tgt[self.out_true[x]].tolist())
                    nxt = [e2 for e2 in nxt if int(self.e_tgt[e2]) not in direct]
                    if not nxt:
                        return None
                    e2 = nxt[int(rng.integers(len(nxt)))]
                    path.append(e2)
                    y = int(self.e_tgt[e2])
                needed = self.latest(np.asarray([self.edge_link[p] for p in path]), t)
                category, hops = ("two_hop", 2) if multi else ("direct", 1)
            if rng.random() < 0.5:
                x, y = y, x
            text = tpl["relate"][int(rng.integers(len(tpl["relate"])))].format(
                x=self.names[x], y=self.names[y]
            )
            return {
                "text": text,
                "t": t,
                "needed": needed,
                "category": category,
                "hops": hops,
                "x": x,
                "y": y,
            }
        if intent == "action":
            a = self.pick(self.action_anchor, by_importance=True)
            x = int(self.a_entity[a])
            t = self.query_time(x, self.fact_time[a])
            needed = []
            for asp in self.ent_aspects_all[x]:
                facts = self.latest(self.aspect_facts[asp], t)
                proc = self.asp_name[asp] in V.PROCEDURAL_ASPECTS
                needed += [b for b in facts if self.a_kind[b] == 1 or proc or self.a_cat[b] == PRINCIPLE]
            hops = 0
            if multi:
                for e in self.out_true[x].tolist():
                    if self.e_type[e] not in ("blocks", "requires") or self.e_time[e] > t:
                        continue
                    z = int(self.e_tgt[e])
                    for asp in self.ent_aspects_all[z]:
                        needed += [b for b in self.latest(self.aspect_facts[asp], t) if self.a_kind[b] == 1]
                        hops = 1
            text = tpl["action"][int(rng.integers(len(tpl["action"])))].format(x=self.names[x])
            return {
                "text": text,
                "t": t,
                "needed": needed,
                "category": f"hop{hops}",
                "hops": hops,
                "x": x,
                "y": -1,
            }
        # changed
        if not len(self.updates):
            return None
        a = self.pick(self.updates)
        x, asp = int(self.a_entity[a]), int(self.a_aspect[a])
        t = self.query_time(x, self.fact_time[a])
        needed = [
            b
            for b in self.latest(self.aspect_facts[asp], t)
            if self.pred[b] >= 0 and self.fact_time[self.pred[b]] <= t
        ]
        text = self.fill(
            tpl["changed"][int(rng.integers(len(tpl["changed"])))],
            x=self.names[x],
            aspect=self.aspect_words(asp),
        )
        return {"text": text, "t": t, "needed": needed, "category": "hop0", "hops": 0, "x": x, "y": -1}

    def queries(self) -> tuple[list[Query], list[Truth], pd.DataFrame]:
        self._index()
        self.regular = np.flatnonzero(self.a_cat == REGULAR)
        self.links = np.flatnonzero(self.a_cat == LINK)
        uses = np.isin(self.e_type[np.maximum(self.a_edge, 0)], ["uses", "requires"])
        self.links_uses = np.flatnonzero((self.a_cat == LINK) & uses)
        proc_asp = np.asarray([n in V.PROCEDURAL_ASPECTS for n in self.asp_name])
        self.action_anchor = np.flatnonzero(
            (self.a_cat != DISTRACTOR) & ((self.a_kind == 1) | proc_asp[self.a_aspect])
        )
        self.updates = np.flatnonzero(self.pred >= 0)
        self.ent_aspects_all: list[list[int]] = [[] for _ in range(self.n)]
        for a, e in enumerate(self.asp_entity.tolist()):
            self.ent_aspects_all[e].append(a)
        rows, splits, times = self._draw_rows(self.one_query, "")
        queries, truths, focus = [], [], []
        for i, r in enumerate(rows):
            qid, split = f"q-{i:05d}", splits[i]
            queries.append(
                Query(id=qid, text=r["text"], graph_id="main", split=split, timestamp=times.iat[i])
            )
            truths.append(self._truth(qid, r["text"], r))
            focus.append(
                {
                    "query_id": qid,
                    "x": self.ent_ids[r["x"]] if r["x"] >= 0 else None,
                    "y": self.ent_ids[r["y"]] if r["y"] >= 0 else None,
                }
            )
        return queries, truths, pd.DataFrame(focus)

    def misleading(self, q: dict[str, Any]) -> list[int]:
        """The misleading facts of a drawn question ``q``."""
        return self.stale(q["needed"], q["t"])

    def _draw_rows(
        self, one_query: Any, version_tag: str
    ) -> tuple[list[dict[str, Any]], list[Split], pd.Series]:
        """``n_queries`` drawn by intent mix (``one_query(intent)``), in time order, with their splits and
        timestamps; ``version_tag`` goes into the error when the graph is too small."""
        c, rng = self.c, self.rng
        names, weights = zip(*c.intent_mix, strict=True)
        p = np.asarray(weights) / sum(weights)
        rows: list[dict[str, Any]] = []
        attempts = 0
        while len(rows) < c.n_queries and attempts < 20 * c.n_queries:
            attempts += 1
            intent = names[int(rng.choice(len(names), p=p))]
            q = one_query(intent)
            if q is None or (intent != "none" and not q["needed"]):
                continue
            q["intent"] = intent
            q["needed"] = list(dict.fromkeys(q["needed"]))
            q["misleading"] = self.misleading(q) if intent != "none" else []
            rows.append(q)
        if len(rows) < c.n_queries:
            raise RuntimeError(
                f"synthetic:{c.preset}{version_tag}: could only generate {len(rows)} of {c.n_queries} "
                "queries; the graph is too small for the requested mix"
            )
        rows.sort(key=lambda r: r["t"])
        n = len(rows)
        cut1 = int(round(c.split_fractions[0] * n))
        cut2 = int(round((c.split_fractions[0] + c.split_fractions[1]) * n))
        splits: list[Split] = [
            "train" if i < cut1 else "validation" if i < cut2 else "test" for i in range(n)
        ]
        return rows, splits, self.ts(np.asarray([r["t"] for r in rows]))

    def _truth(self, qid: str, text: str, r: dict[str, Any]) -> Truth:
        """The ground truth of drawn question ``r`` asked as ``text``."""
        flat = None
        if r["needed"]:
            qt = tokens(text)
            flat = all(bool(qt & (tokens(self.f.content[a]) | self.memory_tokens(a))) for a in r["needed"])
        return Truth(
            query_id=qid,
            needed=tuple(self.att_ids[a] for a in r["needed"]),
            needed_kind="attribute",
            misleading=tuple(self.att_ids[a] for a in r["misleading"]),
            intent=r["intent"],
            category=r["category"],
            hops=r["hops"],
            flat_solvable=flat,
        )

    def memory_tokens(self, a: int) -> set[str]:
        m = int(self.fact_mem[a])
        if m not in self.mem_tokens:
            self.mem_tokens[m] = tokens(self.mem_content[m])
        return self.mem_tokens[m]

    # -- labels and assembly ------------------------------------------------------------------------

    def labels(self) -> dict[str, pd.DataFrame]:
        f = self.f
        group = np.asarray(f.group)
        return {
            "entities": pd.DataFrame(
                {
                    "entity_id": self.ent_ids,
                    "domain": np.asarray(DOMAIN_NAMES)[self.domain],
                    "community": self.community,
                }
            ),
            "attributes": pd.DataFrame(
                {
                    "attribute_id": self.att_ids,
                    "category": np.asarray(FACT_CATEGORIES)[self.a_cat],
                    "bridge_group": np.where(self.a_cat == BRIDGE, group, -1),
                    "principle": [
                        self.principle_names[g] if cat == PRINCIPLE else None
                        for g, cat in zip(group.tolist(), self.a_cat.tolist(), strict=True)
                    ],
                    "edge": [self.dep_ids[e] if e >= 0 else None for e in self.a_edge.tolist()],
                }
            ),
            "dependencies": pd.DataFrame({"dependency_id": self.dep_ids, "spurious": self.e_spurious}),
            "memories": pd.DataFrame({"memory_id": self.mem_ids, "kind": self.mem_kind}),
        }

    def run(self) -> Dataset:
        self.hash = config_hash(self.c.to_dict())
        self.entities()
        self.aspects()
        f = self.base_facts()
        self.dependencies(f)
        self.bridges_principles_distractors(f)
        self.ent_aspects = self._ent_aspects_fast()  # now with the distractors' notes aspects
        self.memories(f)
        self.before_graph()
        graph = self.graph()
        queries, truths, focus = self.queries()
        labels = self.labels()
        labels["queries"] = focus
        name = f"synthetic:{self.c.preset}:{self.seed}"
        return Dataset(
            name=name,
            graphs={"main": graph},
            queries=queries,
            truth=GroundTruth(truths, labels=labels),
            report=LoadReport(),
            meta=self.meta(),
        )

    def before_graph(self) -> None:
        """A step between the memories and the tables (none in version 1)."""

    def meta(self) -> dict[str, Any]:
        return {
            "generator": "synthetic",
            "config": self.c.to_dict(),
            "config_hash": self.hash,
            "seed": self.seed,
        }

    def _ent_aspects_fast(self) -> list[np.ndarray]:
        order = np.lexsort((-np.asarray(self.asp_weight), self.asp_entity))
        bounds = np.searchsorted(self.asp_entity[order], np.arange(self.n + 1))
        return [order[bounds[i] : bounds[i + 1]] for i in range(self.n)]


# ----------------------------------------------------------------------------------------------------
# How informative are the cheap signals?
