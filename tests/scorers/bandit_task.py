"""The hand-made bandit task the learned scorers' tests share: one entry entity, five routes, and the useful
route is the one the prior ranks last. Imported by ``test_gnn.py`` and ``test_linear.py`` (pytest puts this
folder on ``sys.path``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from signet_rl.core.types import Query
from signet_rl.datasets.base import GroundTruth, Truth
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
)
from signet_rl.rating.rater import SimulatedRater
from signet_rl.scorers.base import Feedback, PathScorer, ScoringContext
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Hop, Path

# -- a hand-made bandit task: one entry entity, five routes; the useful one is the one the prior ranks last

T0 = pd.Timestamp("2026-01-01T00:00:00Z")


def _dep(id, s, t, conf, strength, type="uses"):
    return Dependency(
        id=id,
        source_entity_id=s,
        target_entity_id=t,
        dependency_type=type,
        confidence=conf,
        strength=strength,
    )


def _att(id, aspect, content, importance, created_at=T0, **kw):
    return Attribute(
        id=id, aspect_id=aspect, content=content, importance=importance, created_at=created_at, **kw
    )


def build_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records(
        entities=[
            Entity(id="hub", name="atlas project", entity_type="project"),
            Entity(id="a", name="billing service", entity_type="system"),
            Entity(id="b", name="auth gateway", entity_type="system"),
            Entity(id="c", name="search cluster", entity_type="system"),
            Entity(id="m", name="message queue", entity_type="tool"),
            Entity(id="d", name="ledger db", entity_type="tool"),
        ],
        dependencies=[
            _dep("ha", "hub", "a", 1.0, 0.9), _dep("hb", "hub", "b", 0.9, 0.8),
            _dep("hc", "hub", "c", 0.8, 0.7, "requires"), _dep("hm", "hub", "m", 0.6, 0.6),
            _dep("dm", "d", "m", 0.5, 0.5, "informs"),
        ],
        aspects=[
            Aspect(id="asp-a", entity_id="a", name="pricing", weight=0.9),
            Aspect(id="asp-b", entity_id="b", name="tokens", weight=0.8),
            Aspect(id="asp-c", entity_id="c", name="indexing", weight=0.7),
            Aspect(id="asp-h", entity_id="hub", name="roadmap", weight=0.6),
            Aspect(id="asp-d", entity_id="d", name="schema", weight=0.2),
        ],
        attributes=[
            _att("ta1", "asp-a", "plans cost ten dollars", 0.9),
            _att("ta2", "asp-a", "invoices go out monthly", 0.9),
            _att("tb1", "asp-b", "tokens live one hour", 0.8, status="superseded", superseded_by="tb2"),
            _att("tb2", "asp-b", "tokens live two hours", 0.8, created_at=T0 + pd.Timedelta(days=5)),
            _att("tc1", "asp-c", "reindex runs nightly", 0.7),
            _att("th1", "asp-h", "launch planned for spring", 0.5),
            _att("td1", "asp-d", "ledger rows are append only", 0.3),
            _att("td2", "asp-d", "never delete ledger rows", 0.3, kind="constraint"),
        ],
        communities=[Community(id="k0", size=4), Community(id="k1", size=2)],
        community_members=[CommunityMember(community_id="k0", entity_id=e) for e in ("hub", "a", "b", "c")]
        + [CommunityMember(community_id="k1", entity_id=e) for e in ("m", "d")],
    )  # fmt: skip


E, D, A, T = Hop.entity, Hop.dependency, Hop.aspect, Hop.attribute
ROUTES = [
    Path.of(E("hub"), D("ha"), E("a"), A("asp-a"), T("ta1"), T("ta2"), strategy="what"),
    Path.of(E("hub"), D("hb"), E("b"), A("asp-b"), T("tb1"), strategy="what"),  # misleading: superseded
    Path.of(E("hub"), D("hc"), E("c"), A("asp-c"), T("tc1"), strategy="what"),
    Path.of(E("hub"), A("asp-h"), T("th1"), strategy="what"),
    Path.of(E("hub"), D("hm"), E("m"), D("dm", -1), E("d"), A("asp-d"), T("td1"), T("td2"), strategy="what"),
]
USEFUL = 4
WINDOW = 20
TEXTS = (
    "what should I know about the atlas project?",
    "tell me about atlas",
    "what is going on with the atlas project?",
    "remind me what matters for atlas",
    "anything important about atlas project?",
)


def make_queries(n: int) -> list[Query]:
    return [
        Query(id=f"q{i:03d}", text=TEXTS[i % len(TEXTS)], graph_id="main", split="train",
              timestamp=T0 + pd.Timedelta(days=10, hours=i))
        for i in range(n)
    ]  # fmt: skip


def make_truth(queries: list[Query]) -> GroundTruth:
    return GroundTruth(
        [Truth(q.id, needed=("td1", "td2"), needed_kind="attribute", misleading=("tb1",)) for q in queries]
    )


def run_bandit(
    scorer: PathScorer, n: int = 150, eps: float = 0.1, seed: int = 0, stop_at: float | None = None
) -> np.ndarray:
    """Epsilon-greedy slates of one path; returns the noiseless rating of the greedy pick per step (stopping
    early once the last 20 average ``stop_at`` or more)."""
    graph = build_graph()
    arrays = GraphArrays.from_graph(graph)
    queries = make_queries(n)
    rater = SimulatedRater(make_truth(queries), noise_rate=0.05, rating_prob=1.0, seed=seed)
    items = [MemoryBuilder(graph).construct(p).items for p in ROUTES]
    rng = np.random.default_rng(seed)
    scorer.prepare(graph, arrays)
    greedy = []
    for q in queries:
        order = rng.permutation(len(ROUTES))
        paths = [ROUTES[i] for i in order]
        ctx = ScoringContext(graph, arrays, ("hub",), q.timestamp.timestamp())
        best = int(np.argmax(scorer.score(q, paths, ctx)))
        greedy.append(int(rater.true_rating(q.id, items[order[best]])))
        pick = int(rng.integers(len(paths))) if rng.random() < eps else best
        pscore = eps / len(paths) + (1 - eps) * (pick == best)
        rating = rater.rate(q.id, items[order[pick]])
        scorer.update([Feedback(q, paths, ctx, [pick], [None if rating is None else int(rating)], [pscore])])
        if stop_at is not None and len(greedy) >= WINDOW and np.mean(greedy[-WINDOW:]) >= stop_at:
            break
    return np.asarray(greedy, dtype=float)


def reached(greedy: np.ndarray, level: float = 0.8) -> int | None:
    """The first interaction after which the last 20 greedy picks average ``level`` or more."""
    for i in range(WINDOW, len(greedy) + 1):
        if greedy[i - WINDOW : i].mean() >= level:
            return i
    return None
