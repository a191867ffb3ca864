from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from signet_rl.datasets.base import GroundTruth, Query, Truth
from signet_rl.datasets.rater import SimulatedRater
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
from signet_rl.scorers import LinUCBScorer, PriorScorer, RandomScorer, make_scorer
from signet_rl.scorers.base import Feedback, PathScorer, ScoringContext
from signet_rl.scorers.features import INTENTS, PATH_FEATURES
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


@pytest.fixture(scope="module")
def graph():
    return build_graph()


@pytest.fixture(scope="module")
def ctx(graph):
    return ScoringContext(
        graph, GraphArrays.from_graph(graph), ("hub",), (T0 + pd.Timedelta(days=10)).timestamp()
    )


Q = make_queries(1)[0]


def test_task_is_what_it_claims(graph, ctx):
    prior = PriorScorer().score(Q, ROUTES, ctx)
    assert int(np.argmin(prior)) == USEFUL  # the useful route is the one the prior ranks last
    items = [MemoryBuilder(graph).construct(p).items for p in ROUTES]
    rater = SimulatedRater(make_truth([Q]), noise_rate=0.0)
    assert [int(rater.true_rating(Q.id, it)) for it in items] == [0, -1, 0, 0, 1]


def test_linucb_learns_the_route_the_prior_ranks_last():
    linucb = run_bandit(LinUCBScorer(alpha=0.5))
    prior, random = run_bandit(PriorScorer()), run_bandit(RandomScorer(seed=0))
    assert (reached(linucb) or 999) <= 150 and linucb[-WINDOW:].mean() >= 0.8  # reached, and held to the end
    assert (
        reached(prior) is None and prior[-WINDOW:].mean() == 0.0
    )  # always the strong-looking, useless route
    assert reached(random) is None and random[-WINDOW:].mean() < 0.5


def test_sherman_morrison_matches_the_ridge_solution(ctx):
    s = LinUCBScorer(lam=2.0)
    x = s.design(Q, ROUTES, ctx)
    ratings = [1, -1, 0, 0, 1]
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 1, 2, 3, 4], ratings=ratings)])
    A = 2.0 * np.eye(s.dim) + x.T @ x
    assert np.allclose(s.A_inv, np.linalg.inv(A))
    assert np.allclose(s.theta, np.linalg.solve(A, x.T @ np.asarray(ratings, float)))
    assert s.updates == 5


def test_score_is_mean_plus_alpha_width(ctx):
    greedy = LinUCBScorer(alpha=0.0)
    greedy.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, 0])])
    ucb = LinUCBScorer(alpha=0.7)
    ucb.load_state_dict(greedy.state_dict())
    x = greedy.design(Q, ROUTES, ctx)
    width = np.sqrt(((x @ greedy.A_inv) * x).sum(1))
    assert np.allclose(greedy.score(Q, ROUTES, ctx), x @ greedy.theta)
    assert np.allclose(ucb.score(Q, ROUTES, ctx), x @ greedy.theta + 0.7 * width)


def test_design_puts_the_intent_block_after_the_shared_one(ctx):
    s = LinUCBScorer()
    assert s.dim == (1 + len(PATH_FEATURES)) * (1 + len(INTENTS)) == 174
    x = s.design(Q, ROUTES, ctx)  # "what should I know ...": predicted intent what
    base = s.base_dim
    assert np.all(x[:, 0] == 1) and np.allclose(x[:, base : 2 * base], x[:, :base])
    assert np.all(x[:, 2 * base :] == 0)
    assert LinUCBScorer(intent_interactions=False).design(Q, ROUTES, ctx).shape == (5, base)


def test_importance_weights_are_inverse_pscores_clipped(ctx):
    s = LinUCBScorer(importance_weighted=True, max_importance_weight=10.0)
    x = s.design(Q, ROUTES, ctx)
    s.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, -1], pscores=[0.25, 0.01])])
    assert np.allclose(s.b, 4.0 * x[4] - 10.0 * x[0])
    plain = LinUCBScorer()
    plain.update([Feedback(Q, ROUTES, ctx, shown=[4, 0], ratings=[1, -1], pscores=[0.25, 0.01])])
    assert np.allclose(plain.b, x[4] - x[0])


def test_thompson_draws_centre_on_the_mean(ctx):
    s = LinUCBScorer(alpha=0.0, sigma=0.5)
    s.update([Feedback(Q, ROUTES, ctx, shown=[4, 1], ratings=[1, -1])])
    draws = s.sample_scores(Q, ROUTES, ctx, 4000, np.random.default_rng(0))
    assert draws.shape == (4000, 5)
    assert np.allclose(draws.mean(0), s.score(Q, ROUTES, ctx), atol=0.05)
    again = s.sample_scores(Q, ROUTES, ctx, 3, np.random.default_rng(1))
    assert np.array_equal(again, s.sample_scores(Q, ROUTES, ctx, 3, np.random.default_rng(1)))
    assert (
        LinUCBScorer(sigma=0.0).sample_scores(Q, ROUTES, ctx, 2, np.random.default_rng(0)).std(0).max() == 0
    )


def test_state_dict_round_trip(ctx):
    s = LinUCBScorer(alpha=0.3)
    s.update([Feedback(Q, ROUTES, ctx, shown=[2], ratings=[1])])
    other = make_scorer("linucb", alpha=0.3)
    assert isinstance(other, LinUCBScorer) and isinstance(other, PathScorer)
    other.load_state_dict(s.state_dict())
    assert np.array_equal(other.score(Q, ROUTES, ctx), s.score(Q, ROUTES, ctx)) and other.updates == 1
    with pytest.raises(ValueError, match="state has dimension 174, this scorer 29"):
        LinUCBScorer(intent_interactions=False).load_state_dict(s.state_dict())


def test_nothing_rated_is_a_no_op(ctx):
    s = LinUCBScorer()
    s.update([])
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 1], ratings=[None, None])])
    assert s.updates == 0 and np.array_equal(s.A_inv, np.eye(s.dim)) and not s.b.any()
    assert s.score(Q, [], ctx).shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": -1}, "LinUCBScorer: alpha must be a number >= 0, got -1"),
        ({"lam": 0}, "LinUCBScorer: lam must be a number > 0, got 0"),
        ({"sigma": "x"}, "LinUCBScorer: sigma must be a number >= 0, got 'x'"),
        (
            {"max_importance_weight": 0.5},
            "LinUCBScorer: max_importance_weight must be a number >= 1, got 0.5",
        ),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        LinUCBScorer(**kwargs)
