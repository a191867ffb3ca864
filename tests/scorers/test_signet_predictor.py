"""Signet's own predictor as a learned baseline scorer (issue 25, part 2): the forward pass, the listwise loss
and the RRF fusion against hand-computed numbers, that it learns a known preference, and its bad-input
messages."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from bandit_task import ROUTES, T0, build_graph, make_queries  # tests/scorers/bandit_task.py

from signet_rl.graph.arrays import GraphArrays
from signet_rl.scorers import PriorScorer, SignetPredictorScorer, make_scorer
from signet_rl.scorers.base import Feedback, ScoringContext
from signet_rl.scorers.signet_predictor import (
    PREDICTOR_FEATURES,
    PredictorNet,
    listwise_kl,
    ramp_alpha,
    rrf_fuse,
)

torch.set_num_threads(1)
F = {name: j for j, name in enumerate(PREDICTOR_FEATURES)}


@pytest.fixture(scope="module")
def graph():
    return build_graph()


@pytest.fixture(scope="module")
def arrays(graph):
    return GraphArrays.from_graph(graph)


def _ctx(graph, arrays, days: float = 10.0) -> ScoringContext:
    return ScoringContext(graph, arrays, ("hub",), (T0 + pd.Timedelta(days=days)).timestamp())


def _hand_net() -> PredictorNet:
    """d = 2, H = 4, 2 hash slots; weights set so that ``h = [x, importance, traversal + entity slot 1]``,
    ``q = [c, 0, 1]`` and the value head is ``relu(h) . [1, 1, 1, -1]``."""
    net = PredictorNet(embed_dim=2, hidden=4, hash_slots=2)
    eye = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    with torch.no_grad():
        net.query_proj.weight.copy_(eye)
        net.query_proj.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 1.0]))
        net.cand_proj.weight.copy_(eye)
        net.cand_proj.bias.zero_()
        net.feat_proj.weight.zero_()
        net.feat_proj.weight[2, F["importance"]] = 1.0
        net.feat_proj.weight[3, F["traversal"]] = 1.0
        net.entity_slots.weight.copy_(torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
        net.aspect_slots.weight.zero_()
        net.value.weight.copy_(torch.tensor([[1.0, 1.0, 1.0, -1.0]]))
        net.value.bias.zero_()
    return net


def _hand_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    feats = torch.zeros(3, 17)
    feats[0, F["importance"]] = 0.5
    feats[1, F["importance"]] = 1.0
    feats[1, F["traversal"]] = 1.0
    feats[1, F["entity_slot"]] = 0.5  # slot 1 of 2
    context = torch.tensor([2.0, 0.0])
    cands = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    return context, cands, feats


def test_forward_pass_matches_the_hand_computed_scores():
    # q = [2, 0, 0, 1]; h_A = [1, 0, 0.5, 0], h_B = [0, 1, 1, 1 + 1], h_C = [-1, 0, 0, 0]
    # attention q.h / sqrt(4): A 2/2 = 1, B 2/2 = 1, C -2/2 = -1
    # value relu(h).[1, 1, 1, -1]: A 1.5, B 1 + 1 - 2 = 0, C 0
    out = _hand_net()(*_hand_inputs())
    assert out.tolist() == pytest.approx([2.5, 1.0, -1.0], abs=1e-6)


@pytest.mark.slow  # torch.export takes ~15 s on a busy machine
def test_forward_is_a_plain_module_over_dense_tensors():
    """Exportable as it is (``torch.export``, what an ONNX export builds on), with the list length dynamic:
    the exported program gives the same scores on new inputs of another length."""
    net = _hand_net()
    n = torch.export.Dim("n", min=1)
    exported = torch.export.export(net, _hand_inputs(), dynamic_shapes=(None, {0: n}, {0: n})).module()
    context, cands, feats = _hand_inputs()
    more = (context * -1, torch.cat([cands, cands]), torch.cat([feats, feats]))
    torch.testing.assert_close(exported(*more), net(*more))


def test_forward_pass_with_base_scores_matches_the_hand_computed_scores():
    """With ``base_dim`` 3 the standardised base scores enter ``h`` through ``base_proj`` (here: PPR's column
    into h's third unit); zero base scores give Signet's scores exactly."""
    signet = _hand_net()
    net = PredictorNet(embed_dim=2, hidden=4, hash_slots=2, base_dim=3)
    with torch.no_grad():
        for name, p in signet.named_parameters():
            net.get_parameter(name).copy_(p)
        net.base_proj.weight.zero_()
        net.base_proj.weight[2, 1] = 1.0  # ppr
    base = torch.tensor([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 2.0, 0.0]])
    # h_A = [1, 0, 1.5, 0], h_B = [0, 1, 0, 2], h_C = [-1, 0, 2, 0]; q = [2, 0, 0, 1]
    # attention: A 1, B 1, C -1; value relu(h).[1, 1, 1, -1]: A 2.5, B -1, C 2
    assert net(*_hand_inputs(), base).tolist() == pytest.approx([3.5, 0.0, 1.0], abs=1e-6)
    assert net(*_hand_inputs(), torch.zeros(3, 3)).tolist() == pytest.approx([2.5, 1.0, -1.0], abs=1e-6)
    with pytest.raises(ValueError, match=r"^PredictorNet: built with base_dim=3, called without base$"):
        net(*_hand_inputs())


def test_without_base_scores_the_network_is_signets_drawn_from_the_same_seed():
    """base_scores=false keeps Signet's exact network: the same parameters, drawn in the same order from the
    seed, as the predictor before the option; with it, only ``base_proj`` is added."""
    off, on = SignetPredictorScorer(base_scores=False), SignetPredictorScorer(base_scores=True)
    assert off.net.base_proj is None and on.net.base_proj.weight.shape == (64, 3)
    signet = dict(off.net.named_parameters())
    assert set(dict(on.net.named_parameters())) - set(signet) == {"base_proj.weight"}
    for name, p in on.net.named_parameters():
        if name in signet:
            assert torch.equal(p, signet[name]), name


def test_with_base_scores_it_learns_a_preference_only_the_base_scores_carry():
    """Lists of 4 candidates with random embeddings and features; the one with the highest PPR base score is
    rated +1. The predictor reading the base scores learns to rank it first on held-out lists; Signet's
    17-feature predictor, which cannot see them, stays near chance."""
    rng = np.random.default_rng(1)
    d = SignetPredictorScorer(base_scores=False).embed_dim

    def make(n: int) -> list[tuple[torch.Tensor, ...]]:
        out = []
        for _ in range(n):
            emb = rng.standard_normal((4, d)).astype(np.float32)
            emb /= np.linalg.norm(emb, axis=1, keepdims=True)
            feats = rng.random((4, 17)).astype(np.float32)
            base = rng.standard_normal((4, 3)).astype(np.float32)
            labels = np.full(4, -1.0, dtype=np.float32)
            labels[int(np.argmax(base[:, 1]))] = 1.0
            out.append(tuple(torch.from_numpy(x) for x in (emb.mean(0), emb, feats, base, labels)))
        return out

    train, held = make(400), make(100)
    accuracy = {}
    for on in (True, False):
        s = SignetPredictorScorer(lr=1e-2, epochs=1, seed=0, base_scores=on)
        drop = (lambda t: t) if on else (lambda t: (*t[:3], t[4]))  # Signet's inputs: no base scores
        for i in range(0, len(train), 4):
            s.fit([drop(t) for t in train[i : i + 4]])
        hits = [int(np.argmax(s.predict(c.numpy(), x.numpy(), f.numpy(), *([b.numpy()] if on else []))))
                == int(r.argmax()) for c, x, f, b, r in held]  # fmt: skip
        accuracy[on] = float(np.mean(hits))
    assert accuracy[True] >= 0.8 and accuracy[False] <= 0.4  # 0.88 and 0.23 here; chance is 0.25


def test_a_predictor_with_base_scores_refuses_signets_17_feature_inputs_alone(graph, arrays):
    """Signet's sidecar contract carries 17 features: a predictor trained with base scores cannot be served by
    it, and says so, naming the option; the mismatch the other way and a wrong shape are refused too."""
    on, off = SignetPredictorScorer(), SignetPredictorScorer(base_scores=False)
    ctx, cands, feats = np.zeros(384), np.zeros((2, 384)), np.zeros((2, 17))
    with pytest.raises(ValueError) as err:
        on.predict(ctx, cands, feats)
    assert str(err.value) == (
        "SignetPredictorScorer: this predictor was built with base_scores=true: it reads the standardised "
        "prior, ppr, flat scores beside Signet's 17 features, which Signet's sidecar contract does not "
        "carry; pass base_scores, or train it with scorer.base_scores=false to serve Signet's 17-feature "
        "contract"
    )
    with pytest.raises(ValueError) as err:
        off.predict(ctx, cands, feats, np.zeros((2, 3)))
    assert str(err.value) == (
        "SignetPredictorScorer: base_scores given to a predictor built with base_scores=false (Signet's 17 "
        "features only); build it with base_scores=true to read them"
    )
    with pytest.raises(ValueError) as err:
        on.predict(ctx, cands, feats, np.zeros((2, 2)))
    assert str(err.value) == (
        "SignetPredictorScorer: base_scores has shape (2, 2); expected (2, 3): one row of the standardised "
        "prior, ppr, flat scores per candidate"
    )
    assert on.predict(ctx, cands, feats, np.zeros((2, 3))).shape == (2,)
    with pytest.raises(ValueError, match=r"^checkpoint was built with other arguments: base_scores$"):
        off.load_state_dict(on.state_dict())
    old = off.state_dict()
    del old["config"]["base_scores"]  # a checkpoint from before the option: Signet's network
    SignetPredictorScorer(base_scores=False).load_state_dict(old)
    with pytest.raises(ValueError, match=r"^checkpoint was built with other arguments: base_scores$"):
        on.load_state_dict(old)


def test_listwise_kl_matches_the_hand_computed_divergence():
    scores, labels = torch.tensor([2.5, 1.0, -1.0]), torch.tensor([1.0, -1.0, 0.0])
    # target softmax(labels / 0.5) = softmax([2, -2, 0]); prediction softmax(scores)
    zp = math.exp(2) + math.exp(-2) + math.exp(0)
    zq = math.exp(2.5) + math.exp(1.0) + math.exp(-1.0)
    p = [math.exp(2) / zp, math.exp(-2) / zp, 1 / zp]
    q = [math.exp(2.5) / zq, math.exp(1.0) / zq, math.exp(-1.0) / zq]
    want = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))
    got = float(listwise_kl(scores, labels, temperature=0.5))
    assert got == pytest.approx(want, rel=1e-5)
    assert got == pytest.approx(0.21915, abs=1e-5)
    # scores equal to labels / T (up to a shift) give the target itself: no divergence
    assert float(listwise_kl(torch.tensor([3.0, -1.0, 1.0]), labels, 0.5)) == pytest.approx(0.0, abs=1e-6)


def test_rrf_fusion_matches_hand_computed_values():
    baseline, predicted = np.array([0.9, 0.5, 0.7]), np.array([2.5, 1.0, -1.0])
    # ranks: baseline [1, 3, 2], predicted [1, 2, 3]; k = 12, alpha = 0.75
    got = rrf_fuse(baseline, predicted, alpha=0.75, k=12)
    want = [0.75 / 13 + 0.25 / 13, 0.75 / 15 + 0.25 / 14, 0.75 / 14 + 0.25 / 15]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.round(6).tolist() == [0.076923, 0.067857, 0.070238]
    # alpha 1: the baseline ranking alone; alpha 0: the predictor's
    assert np.argsort(-rrf_fuse(baseline, predicted, 1.0)).tolist() == [0, 2, 1]
    assert np.argsort(-rrf_fuse(baseline, predicted, 0.0)).tolist() == [0, 1, 2]


def test_alpha_ramps_from_one_after_cold_start():
    got = [ramp_alpha(s, cold_start=10, ramp=10, final=0.5) for s in (0, 9, 10, 14, 19, 30)]
    assert got == pytest.approx([1.0, 1.0, 0.95, 0.75, 0.5, 0.5])
    assert ramp_alpha(3, cold_start=3, ramp=0, final=0.2) == pytest.approx(0.2)


def test_sessions_of_training_data_drive_the_fusion_weight(graph, arrays):
    s = SignetPredictorScorer(cold_start_sessions=2, ramp_sessions=2, final_alpha=0.0)
    ctx = _ctx(graph, arrays)
    assert s.fusion_alpha == 1.0
    for day in range(4):  # one rated interaction per day: one session each
        q = make_queries(1)[0]
        q = type(q)(id=f"d{day}", text=q.text, graph_id="main", split="train",
                    timestamp=T0 + pd.Timedelta(days=10 + day))  # fmt: skip
        s.update([Feedback(q, ROUTES, ctx, [0, 4], [-1, 1], [1.0, 1.0])])
        assert s.sessions == day + 1
        assert s.fusion_alpha == pytest.approx([1.0, 0.5, 0.0, 0.0][day])


def test_cold_start_ranks_as_the_baseline(graph, arrays):
    ctx = _ctx(graph, arrays)
    q = make_queries(1)[0]
    s = SignetPredictorScorer(baseline="prior")
    got = s.score(q, ROUTES, ctx)
    prior = PriorScorer().score(q, ROUTES, ctx)
    assert np.argsort(-got, kind="stable").tolist() == np.argsort(-prior, kind="stable").tolist()
    np.testing.assert_allclose(np.sort(got)[::-1], [1 / (12 + r) for r in range(1, 6)])


def test_features_are_read_off_the_paths(graph, arrays):
    s = SignetPredictorScorer()
    emb, f = s.features(ROUTES, _ctx(graph, arrays))
    assert emb.shape == (5, 384) and f.shape == (5, 17)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    assert f[:, F["traversal"]].tolist() == [1, 1, 1, 0, 1]  # route 3 stays at the hub
    assert f[:, F["constraint"]].tolist() == [0, 0, 0, 0, 1]  # td2 is a constraint
    assert f[:, F["superseded"]].tolist() == [0, 1, 0, 0, 0]  # tb1 superseded by tb2 (day 5)
    assert f[:, F["importance"]].tolist() == pytest.approx([0.9, 0.8, 0.7, 0.5, 0.3])
    assert f[:, F["log_age_days"]] == pytest.approx([math.log1p(10)] * 5)
    assert f[:, F["embedded"]].tolist() == [1, 1, 1, 1, 1]
    assert f[:, F["hour_sin"]] == pytest.approx(0.0, abs=1e-7)  # midnight
    assert f[:, F["month_cos"]] == pytest.approx(1.0)  # January


def test_it_learns_a_known_preference():
    """Lists of 4 random candidates; the one with the constraint flag is rated +1, the others -1. After
    training, the held-out lists rank it first."""
    rng = np.random.default_rng(0)
    s = SignetPredictorScorer(lr=1e-2, epochs=1, seed=0, base_scores=False)  # Signet's 17 features
    d = s.embed_dim

    def make(n: int) -> list[tuple[torch.Tensor, ...]]:
        out = []
        for _ in range(n):
            emb = rng.standard_normal((4, d)).astype(np.float32)
            emb /= np.linalg.norm(emb, axis=1, keepdims=True)
            feats = rng.random((4, 17)).astype(np.float32)
            feats[:, F["constraint"]] = 0.0
            best = int(rng.integers(4))
            feats[best, F["constraint"]] = 1.0
            labels = np.full(4, -1.0, dtype=np.float32)
            labels[best] = 1.0
            out.append((torch.from_numpy(emb.mean(0)), torch.from_numpy(emb), torch.from_numpy(feats),
                        torch.from_numpy(labels)))  # fmt: skip
        return out

    def accuracy(lists) -> float:
        hits = [int(np.argmax(s.predict(c.numpy(), x.numpy(), f.numpy()))) == int(r.argmax())
                for c, x, f, r in lists]  # fmt: skip
        return float(np.mean(hits))

    train, held = make(200), make(100)
    before = accuracy(held)
    for i in range(0, len(train), 4):
        s.fit(train[i : i + 4])
    after = accuracy(held)
    assert before <= 0.6 and after >= 0.95  # chance is 0.25


def test_update_learns_from_rated_paths(graph, arrays):
    """Through the scorer's own update: the constraint route rated +1 beside two rated -1 each time; the
    predictor then ranks it first, and so does the fusion once past cold start."""
    s = SignetPredictorScorer(lr=1e-2, cold_start_sessions=1, ramp_sessions=0, final_alpha=0.0)
    ctx = _ctx(graph, arrays)
    q = make_queries(1)[0]
    rng = np.random.default_rng(0)
    for _ in range(30):
        others = [int(i) for i in rng.choice([0, 1, 2, 3], size=2, replace=False)]
        s.update([Feedback(q, ROUTES, ctx, [*others, 4], [-1, -1, 1], [1.0, 1.0, 1.0])])
    assert s.updates == 30 and s.sessions == 1
    assert int(np.argmax(s.score(q, ROUTES, ctx))) == 4
    assert int(np.argmax(PriorScorer().score(q, ROUTES, ctx))) != 4  # the baseline alone would not


def test_a_list_with_one_rated_path_trains_nothing(graph, arrays):
    s = SignetPredictorScorer()
    before = [p.detach().clone() for p in s.net.parameters()]
    s.update([Feedback(make_queries(1)[0], ROUTES, _ctx(graph, arrays), [0, 1], [1, None], [1.0, 1.0])])
    assert s.updates == 0 and s.sessions == 1
    assert all(torch.equal(a, b) for a, b in zip(before, s.net.parameters(), strict=True))


def test_checkpoint_round_trip(graph, arrays):
    ctx = _ctx(graph, arrays)
    q = make_queries(1)[0]
    a = SignetPredictorScorer(cold_start_sessions=0, final_alpha=0.0, lr=1e-2)
    a.update([Feedback(q, ROUTES, ctx, [0, 4], [-1, 1], [1.0, 1.0])])
    b = SignetPredictorScorer(cold_start_sessions=0, final_alpha=0.0, lr=1e-2)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.score(q, ROUTES, ctx), b.score(q, ROUTES, ctx))
    assert b.sessions == 1 and b.updates == 1
    with pytest.raises(ValueError, match=r"^checkpoint was built with other arguments: hidden$"):
        SignetPredictorScorer(hidden=8).load_state_dict(a.state_dict())


def test_registered_and_built_by_name():
    s = make_scorer("signet_predictor", hidden=8)
    assert isinstance(s, SignetPredictorScorer) and s.net.hidden == 8
    assert not hasattr(s, "alpha")  # the trainer zeroes an `alpha` (UCB width) for evaluation


# -- bad input ----------------------------------------------------------------------------------------


def test_mismatched_embedding_dimensions_are_refused():
    s = SignetPredictorScorer(base_scores=False)
    feats = np.zeros((2, 17))
    with pytest.raises(ValueError) as err:
        s.predict(np.zeros(768), np.zeros((2, 384)), feats)
    assert str(err.value) == (
        "SignetPredictorScorer: context_embedding has 768 dimensions; this predictor takes 384 (its "
        "encoder's); embed with the encoder it was built with"
    )
    with pytest.raises(ValueError) as err:
        s.predict(np.zeros(384), np.zeros((2, 768)), feats)
    assert str(err.value) == (
        "SignetPredictorScorer: candidate_embeddings have 768 dimensions; this predictor takes 384 (its "
        "encoder's); embed with the encoder it was built with"
    )
    with pytest.raises(ValueError, match=r"candidate_features has shape \(2, 16\); expected \(2, 17\)"):
        s.predict(np.zeros(384), np.zeros((2, 384)), np.zeros((2, 16)))


def test_nan_features_are_refused_naming_the_value():
    s = SignetPredictorScorer(base_scores=False)
    feats = np.zeros((3, 17))
    feats[2, F["importance"]] = np.nan
    with pytest.raises(ValueError) as err:
        s.predict(np.zeros(384), np.zeros((3, 384)), feats)
    assert str(err.value) == (
        "SignetPredictorScorer: feature 'importance' of candidate 2 is nan; features must be finite numbers "
        "(a NaN importance or time in the store?)"
    )


def test_a_nan_time_is_refused_naming_the_path(graph, arrays):
    s = SignetPredictorScorer(cold_start_sessions=0)
    ctx = ScoringContext(graph, arrays, ("hub",), float("nan"))
    with pytest.raises(ValueError) as err:
        s.score(make_queries(1)[0], ROUTES[:1], ctx)
    assert str(err.value) == (
        f"SignetPredictorScorer: feature 'log_age_days' of candidate 0 ({ROUTES[0].serialise()}) is nan; "
        "features must be finite numbers (a NaN importance or time in the store?)"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": 0}, "SignetPredictorScorer: hidden must be an integer >= 1, got 0"),
        ({"final_alpha": 1.5}, "SignetPredictorScorer: final_alpha must be a number in [0, 1], got 1.5"),
        ({"baseline": "flat"}, "SignetPredictorScorer: baseline must be one of prior, ppr, got 'flat'"),
        ({"hash_slots": 1}, "SignetPredictorScorer: hash_slots must be an integer >= 2, got 1"),
        ({"floor_baseline": "yes"}, "SignetPredictorScorer: floor_baseline must be true or false, got 'yes'"),
        ({"base_scores": 1}, "SignetPredictorScorer: base_scores must be true or false, got 1"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as err:
        SignetPredictorScorer(**kwargs)
    assert str(err.value) == message


def test_a_memory_path_has_its_memory_text_and_no_entity_columns():
    """The hybrid entry's floor and session units are memory paths with no end entity: their entity columns
    are 0 (they used to index entity -1 and gave a NaN access count), their embedding is their memory's text,
    and they count as embedded."""
    from signet_rl.core.types import Query
    from signet_rl.graph.model import Entity, KnowledgeGraph, Memory, Mention
    from signet_rl.traversal.path import Hop, Path

    g = KnowledgeGraph.from_records(
        entities=[Entity(id="person:ann", name="Ann", entity_type="person", created_at=T0)],
        memories=[Memory(id="m1", content="Ann moved to Lisbon in May", created_at=T0),
                  Memory(id="m2", content="The violin lesson is on Tuesday", created_at=T0)],
        mentions=[Mention(memory_id="m1", entity_id="person:ann")],
    )  # fmt: skip
    a = GraphArrays.from_graph(g)
    s = SignetPredictorScorer()
    paths = [Path((Hop.memory("m1"),), strategy="floor"), Path((Hop.memory("m2"),), strategy="floor")]
    ctx = ScoringContext(g, a, ("person:ann",), (T0 + pd.Timedelta(days=3)).timestamp())
    emb, f = s.features(paths, ctx)
    assert np.isfinite(f).all()
    for name in ("log_access_count", "entity_slot", "structural_density", "traversal"):
        assert f[:, F[name]].tolist() == [0.0, 0.0], name
    assert f[:, F["embedded"]].tolist() == [1.0, 1.0]
    encoder = s.query_featurizer.encoder
    text = np.asarray(encoder.encode(["Ann moved to Lisbon in May", "The violin lesson is on Tuesday"]))
    text = text / np.linalg.norm(text, axis=1, keepdims=True)
    np.testing.assert_allclose(emb, text, atol=1e-5)
    query = Query(id="q", text="Where does Ann live?", graph_id="c", split="test")
    assert np.isfinite(s.score(query, paths, ctx)).all()
