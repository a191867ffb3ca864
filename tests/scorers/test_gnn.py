from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

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
from signet_rl.scorers import GNNPathScorer, PriorScorer, RandomScorer, make_scorer
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


torch.set_num_threads(1)

# Small and quick: online updates of one example each want a larger step than the default.
SMALL = {"hidden": 16, "n_heads": 4, "lr": 1e-2}


@pytest.fixture(scope="module")
def graph():
    return build_graph()


@pytest.fixture(scope="module")
def arrays(graph):
    return GraphArrays.from_graph(graph)


@pytest.fixture(scope="module")
def ctx(graph, arrays):
    return ScoringContext(graph, arrays, ("hub",), (T0 + pd.Timedelta(days=10)).timestamp())


Q = make_queries(1)[0]


def _params(scorer):
    return [p.detach().clone() for p in scorer.net.parameters()]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_gnn_learns_the_route_the_prior_ranks_last():
    gnn = run_bandit(GNNPathScorer(seed=0, **SMALL), stop_at=0.8)  # stops once reached (the test is slow)
    assert gnn[-WINDOW:].mean() >= 0.8 and (reached(gnn) or 999) <= 150
    prior, random = run_bandit(PriorScorer()), run_bandit(RandomScorer(seed=0))
    assert (
        reached(prior) is None and prior[-WINDOW:].mean() == 0.0
    )  # always the strong-looking, useless route
    assert reached(random) is None and random[-WINDOW:].mean() < 0.5


def test_scores_are_one_per_path_and_deterministic_for_a_seed(ctx):
    a, b = GNNPathScorer(seed=3, **SMALL), GNNPathScorer(seed=3, **SMALL)
    s = a.score(Q, ROUTES, ctx)
    assert s.shape == (5,) and np.isfinite(s).all() and np.array_equal(s, b.score(Q, ROUTES, ctx))
    assert not np.array_equal(s, GNNPathScorer(seed=4, **SMALL).score(Q, ROUTES, ctx))
    fb = [Feedback(Q, ROUTES, ctx, shown=[4, 1], ratings=[1, -1], pscores=[0.5, 0.5])]
    a.update(fb)
    b.update(fb)
    assert np.array_equal(a.score(Q, ROUTES, ctx), b.score(Q, ROUTES, ctx))
    assert a.score(Q, [], ctx).shape == (0,)
    # a lone entity, and a context without a time, score too
    timeless = ScoringContext(ctx.graph, ctx.arrays, ("hub",), None)
    assert np.isfinite(a.score(Q, [Path.of(E("a")), ROUTES[4]], timeless)).all()


def test_thompson_draws_come_from_bootstrap_heads(ctx):
    s = GNNPathScorer(seed=0, **SMALL)
    out = s.sample_scores(Q, ROUTES, ctx, 6, np.random.default_rng(0))
    assert out.shape == (6, 5)
    heads = s._outputs(Q, ROUTES, ctx).double().numpy().T  # [n_heads, paths]
    assert all(any(np.allclose(row, h) for h in heads) for row in out)
    assert len({tuple(row) for row in out}) > 1  # the heads disagree
    assert np.allclose(heads.mean(0), s.score(Q, ROUTES, ctx))
    assert np.array_equal(out, s.sample_scores(Q, ROUTES, ctx, 6, np.random.default_rng(0)))
    flat = GNNPathScorer(seed=0, uncertainty="none", **SMALL)
    draws = flat.sample_scores(Q, ROUTES, ctx, 3, np.random.default_rng(0))
    assert np.allclose(draws, flat.score(Q, ROUTES, ctx))


def test_node_state_cache_follows_graph_and_parameters(graph, arrays, ctx):
    s = GNNPathScorer(seed=0, **SMALL)
    first = s.node_states(graph, arrays)
    assert first.shape == (6, 16) and s.node_states(graph, arrays) is first  # cached
    s.update([Feedback(Q, ROUTES, ctx, shown=[4], ratings=[1])])
    after = s.node_states(graph, arrays)
    assert after is not first and not torch.equal(after, first)  # parameters changed: recomputed
    rebuilt = GraphArrays.from_graph(graph)  # another snapshot object: its own state
    assert s.node_states(graph, rebuilt) is not after
    assert torch.allclose(s.node_states(graph, rebuilt), after)
    s.invalidate()
    assert s.node_states(graph, arrays) is not after
    zeta = graph.entities.iloc[:1].assign(id="z", name="zeta")
    bigger = graph.replace(entities=pd.concat([graph.entities, zeta], ignore_index=True))
    assert s.node_states(bigger, GraphArrays.from_graph(bigger)).shape == (7, 16)


def test_training_states_match_the_cached_full_pass(graph, arrays):
    s = GNNPathScorer(seed=0, **SMALL)
    full = s.node_states(graph, arrays)
    state = s._state(graph, arrays)
    nodes = torch.tensor([arrays.entity_index["d"], arrays.entity_index["hub"]])
    sub, where = s._subgraph_states(state, nodes)
    assert torch.allclose(sub[where], full[nodes], atol=1e-5)  # the k-hop subgraph is exact


def test_edge_features_switch_controls_what_the_net_sees(graph, ctx):
    dimmer = graph.replace(dependencies=graph.dependencies.assign(confidence=0.3))
    dim_ctx = ScoringContext(dimmer, GraphArrays.from_graph(dimmer), ctx.entries, ctx.timestamp)
    blind = GNNPathScorer(seed=0, edge_features=False, hand_features=False, **SMALL)
    assert np.allclose(blind.score(Q, ROUTES, ctx), blind.score(Q, ROUTES, dim_ctx))
    seeing = GNNPathScorer(seed=0, **SMALL)
    assert not np.allclose(seeing.score(Q, ROUTES, ctx), seeing.score(Q, ROUTES, dim_ctx))
    for flag in ("communities", "time_features", "hand_features"):
        off = GNNPathScorer(seed=0, **{flag: False}, **SMALL)
        assert np.isfinite(off.score(Q, ROUTES, ctx)).all()
    assert np.isfinite(GNNPathScorer(seed=0, layers=0, **SMALL).score(Q, ROUTES, ctx)).all()


def test_save_and_load_give_identical_scores(tmp_path, ctx):
    s = GNNPathScorer(seed=1, communities=False, **SMALL)
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 4], ratings=[0, 1])])
    path = s.save(tmp_path / "policy" / "gnn.pt")
    loaded = GNNPathScorer.load(path)
    assert loaded.config == s.config and loaded.config["communities"] is False
    assert np.array_equal(loaded.score(Q, ROUTES, ctx), s.score(Q, ROUTES, ctx))
    # a checkpoint also restores the optimizer and the bootstrap generator: training continues identically
    resumed = GNNPathScorer(seed=99, communities=False, **SMALL)
    resumed.load_state_dict(s.state_dict())
    fb = [Feedback(Q, ROUTES, ctx, shown=[1, 2], ratings=[-1, 0])]
    s.update(fb)
    resumed.update(fb)
    assert _same(_params(s), _params(resumed)) and resumed.updates == 2
    with pytest.raises(ValueError, match="checkpoint was built with other arguments: communities, hidden"):
        GNNPathScorer(hidden=8).load_state_dict(s.state_dict())
    with pytest.raises(ValueError, match="is not a saved GNNPathScorer"):
        torch.save({"weights": 1}, tmp_path / "other.pt")
        GNNPathScorer.load(tmp_path / "other.pt")


def test_nothing_rated_is_a_no_op(ctx):
    s = GNNPathScorer(seed=0, **SMALL)
    before = _params(s)
    s.update([])
    s.update([Feedback(Q, ROUTES, ctx, shown=[0, 1], ratings=[None, None])])
    assert _same(before, _params(s)) and s.updates == 0


def test_importance_weighting_reweights_the_regression(ctx):
    # the same path rated +1 when shown with probability 0.05 and -1 when shown with probability 0.9
    fb = [
        Feedback(Q, ROUTES, ctx, shown=[4], ratings=[1], pscores=[0.05]),
        Feedback(Q, ROUTES, ctx, shown=[4], ratings=[-1], pscores=[0.9]),
    ]
    kw = {"seed": 0, "uncertainty": "none", "n_heads": 1, "hidden": 8, "lr": 1e-2, "steps_per_update": 60}
    plain, weighted = GNNPathScorer(**kw), GNNPathScorer(**kw, importance_weighted=True)
    for s in (plain, weighted):
        s.update(fb)
    # weights 1 / 0.05 = 20 clipped to 10, and 1 / 0.9: the weighted least-squares fit is (10 - 1.11) / 11.11
    assert plain.score(Q, ROUTES, ctx)[4] == pytest.approx(0.0, abs=0.05)
    assert weighted.score(Q, ROUTES, ctx)[4] == pytest.approx((10 - 1 / 0.9) / (10 + 1 / 0.9), abs=0.05)


def test_registry_and_pipeline():
    from signet_rl.datasets.synthetic import generate
    from signet_rl.retrieval.desire import DesirePathRetriever

    scorer = make_scorer("gnn", hidden=8, n_heads=2)
    assert isinstance(scorer, GNNPathScorer) and isinstance(scorer, PathScorer) and scorer.name == "gnn"
    data = generate("tiny", seed=0)
    retriever = DesirePathRetriever(scorer=scorer)
    retriever.index(data)
    units = [u for q in data.queries[:10] for u in retriever.retrieve(q)]
    assert units and all(np.isfinite(u.score) for u in units)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": 0}, "GNNPathScorer: hidden must be an integer >= 1, got 0"),
        ({"layers": -1}, "GNNPathScorer: layers must be an integer >= 0, got -1"),
        ({"n_heads": 2.5}, "GNNPathScorer: n_heads must be an integer >= 1, got 2.5"),
        ({"type_buckets": 10}, "GNNPathScorer: type_buckets must be an integer >= 11, got 10"),
        (
            {"uncertainty": "dropout"},
            "GNNPathScorer: uncertainty must be 'bootstrap' or 'none', got 'dropout'",
        ),
        ({"lr": 0}, "GNNPathScorer: lr must be positive, got 0"),
        ({"weight_decay": -0.1}, "GNNPathScorer: weight_decay must be >= 0, got -0.1"),
        ({"max_importance_weight": 0.5}, "GNNPathScorer: max_importance_weight must be >= 1, got 0.5"),
        ({"encoder": "word2vec"}, "unknown encoder 'word2vec'; known encoders: hashing, minilm"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        GNNPathScorer(**kwargs)
