"""The walking policy (signet_rl.kg.policy): beam search by hand, rollouts, action dropout, GNN, REINFORCE."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from signet_rl.kg.policy import (
    LAST_STEP_OBJECTIVES,
    LIKELIHOOD_EPS,
    KGPolicy,
    Reinforce,
    beam_search,
    last_step_objective,
    rollout,
    shaped_rewards,
)
from signet_rl.kg.walk_task import KGWalker

# 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 4 (relation 0), 2 -> 3 (relation 1)
TRIPLES = np.array([[0, 0, 1], [0, 0, 2], [1, 0, 3], [2, 0, 4], [2, 1, 3]])
# transition probabilities P[current, next]; the diagonal is NO_OP
P = np.zeros((5, 5))
P[0, [0, 1, 2]] = [0.1, 0.6, 0.3]
P[1, [1, 3]] = [0.5, 0.5]
P[2, [2, 4, 3]] = [0.2, 0.4, 0.4]
P[3, 3] = P[4, 4] = 1.0


class TablePolicy:
    """A stand-in policy whose action scores are log P[current, next entity]: hand-computable paths."""

    def __init__(self) -> None:
        with np.errstate(divide="ignore"):
            self.logp = torch.tensor(np.log(P), dtype=torch.float32)

    def entity_table(self):
        return None

    def begin(self, heads, table):
        return torch.zeros(len(heads), 1), torch.zeros(len(heads), 1)

    def advance(self, state, rel, ent, table):
        return state

    def logits(self, state, current, query_relation, cand_rel, cand_ent, mask, table):
        return self.logp[current[:, None], cand_ent].masked_fill(~mask, float("-inf"))


def walker() -> KGWalker:
    return KGWalker.from_triples(TRIPLES, num_entities=5, num_relations=2)


def test_beam_search_scores_each_entity_by_its_best_path():
    scores = beam_search(TablePolicy(), walker(), torch.tensor([0]), torch.tensor([0]), 2, beam_width=10)
    # paths: 0-0-0 .01, 0-0-1 .06, 0-0-2 .03, 0-1-1 .3, 0-1-3 .3, 0-2-2 .06, 0-2-4 .12, 0-2-3 .12
    expected = np.log([0.01, 0.3, 0.06, 0.3, 0.12])
    assert np.allclose(scores[0].numpy(), expected, atol=1e-6)


def test_sum_pooling_scores_each_entity_by_the_total_probability_of_its_paths():
    w = walker()
    scores = beam_search(TablePolicy(), w, torch.tensor([0]), torch.tensor([0]), 2, beam_width=10, pool="sum")
    # 3 is reached by 0-1-3 (.3) and 0-2-3 (.12): .42 beats 1 (.06 + .3 = .36), which max pooling ties
    assert np.allclose(scores[0].exp().numpy(), [0.01, 0.36, 0.09, 0.42, 0.12], atol=1e-6)
    with pytest.raises(ValueError, match="pool='mean' is not one of"):
        beam_search(TablePolicy(), w, torch.tensor([0]), torch.tensor([0]), 2, beam_width=10, pool="mean")


def test_narrow_beam_prunes_paths_and_keeps_the_k_best_entities():
    scores = beam_search(TablePolicy(), walker(), torch.tensor([0]), torch.tensor([0]), 2, beam_width=2)
    # step 1 keeps 1 (.6) and 2 (.3); endings 1: .3, 3: .3, 4: .12, 2: .06 -> the 2 best entities survive
    s = scores[0].numpy()
    assert np.allclose(s[[1, 3]], np.log([0.3, 0.3]), atol=1e-6)
    assert np.isneginf(s[[0, 2, 4]]).all()


def test_beam_search_masks_the_query_edge_and_batches_queries():
    w = walker()
    policy = TablePolicy()
    both = beam_search(
        policy, w, torch.tensor([0, 2]), torch.tensor([0, 0]), 1, 10, tails=torch.tensor([1, -1])
    )
    # query 0 may not take its own edge 0 -r0-> 1; the remaining slots renormalise (0: .1/.4, 2: .3/.4)
    assert np.allclose(both[0].exp().numpy(), [0.25, 0.0, 0.75, 0.0, 0.0], atol=1e-6)
    assert np.allclose(both[1].exp().numpy(), P[2], atol=1e-6)
    assert np.isneginf(both[0, [1, 3, 4]].numpy()).all()


def test_policy_rollout_takes_only_valid_actions_and_never_the_query_edge():
    torch.manual_seed(0)
    w = walker()
    policy = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16)
    heads = torch.zeros(200, dtype=torch.long)
    rels = torch.zeros(200, dtype=torch.long)
    tails = torch.ones(200, dtype=torch.long)
    ro = rollout(policy, w, heads, rels, tails, 2, torch.Generator().manual_seed(0), action_dropout=0.5)
    assert ro.log_probs.shape == (200, 2) and ro.entities.shape == (200, 3)
    edges = {(int(h), int(r), int(t)) for h, r, t in TRIPLES}
    for path, rel in zip(ro.entities.tolist(), ro.relations.tolist(), strict=True):
        for (u, v), r in zip(itertools.pairwise(path), rel, strict=True):
            assert (r == w.no_op and u == v) or (u, r, v) in edges
        assert (path[0], rel[0], path[1]) != (0, 0, 1)
    assert torch.isfinite(ro.log_probs).all() and (ro.entropies >= 0).all()
    again = rollout(policy, w, heads, rels, tails, 2, torch.Generator().manual_seed(0), action_dropout=0.5)
    assert torch.equal(ro.entities, again.entities)  # the generator makes sampling reproducible


def test_hide_query_relation_hides_the_heads_edges_of_that_relation_only():
    torch.manual_seed(0)
    w = walker()
    policy = KGPolicy(5, 2, entity_dim=4, relation_dim=4, history_dim=4, hidden_dim=8)
    heads = torch.zeros(400, dtype=torch.long)
    rels = torch.tensor([0, 1]).repeat(200)  # every edge out of 0 has relation 0
    hide = torch.arange(400) < 200
    gen = torch.Generator().manual_seed(0)
    ro = rollout(policy, w, heads, rels, None, 2, gen, hide_query_relation=hide)
    first, second = ro.entities[:, 1], ro.entities[:, 2]
    hidden = hide & (rels == 0)
    # hidden: only NO_OP is left at the head; after it, still at the head, still hidden
    assert torch.equal(first[hidden], torch.zeros(int(hidden.sum()), dtype=torch.long))
    assert torch.equal(second[hidden], torch.zeros(int(hidden.sum()), dtype=torch.long))
    # other walks leave the head; relation-0 edges away from the head stay open (1 -> 3, 2 -> 4)
    assert set(first[hide & (rels == 1)].tolist()) == {0, 1, 2}
    assert set(first[~hide].tolist()) == {0, 1, 2}
    assert {3, 4} <= set(second[~hide].tolist())


def test_last_step_exclude_hides_other_answers():
    w = walker()
    policy = KGPolicy(5, 2, entity_dim=4, relation_dim=4, history_dim=4, hidden_dim=8)
    heads = torch.zeros(300, dtype=torch.long)
    ro = rollout(
        policy,
        w,
        heads,
        heads,
        None,
        2,
        torch.Generator().manual_seed(1),
        last_step_exclude=lambda cand: cand == 3,
    )
    assert not (ro.final == 3).any() and (ro.final == 4).any()


def test_expected_last_step_returns_the_whole_last_distribution():
    w = walker()
    heads = torch.zeros(200, dtype=torch.long)
    ro = rollout(
        TablePolicy(), w, heads, heads, None, 2, torch.Generator().manual_seed(0), expected_last=True
    )
    assert ro.last_probs is not None and ro.last_entities is not None
    mid = ro.entities[:, 1]
    # the last distribution is the table row of the entity the first, sampled, step reached
    for row in range(len(heads)):
        got = np.zeros(5)
        np.add.at(got, ro.last_entities[row].numpy(), ro.last_probs[row].numpy())
        assert np.allclose(got, P[int(mid[row])], atol=1e-6)
    # expected reward of reaching 3: .1*0 + .6*.5 + .3*.4 = .42 over the first step's draws
    value = (ro.last_probs * (ro.last_entities == 3).float()).sum(1)
    assert float(value.mean()) == pytest.approx(0.42, abs=0.05)


def test_exact_last_step_gradient_matches_the_sampled_gradient_in_expectation():
    """Summing the last step out changes the estimator's noise, not its mean."""
    torch.manual_seed(0)
    w = walker()
    policy = KGPolicy(5, 2, entity_dim=4, relation_dim=4, history_dim=4, hidden_dim=8)
    heads = torch.zeros(20000, dtype=torch.long)

    def grad(expected: bool) -> torch.Tensor:
        policy.zero_grad()
        ro = rollout(
            policy, w, heads, heads, None, 2, torch.Generator().manual_seed(1), expected_last=expected
        )
        if expected:
            value = (ro.last_probs * (ro.last_entities == 3).float()).sum(1)
            surrogate = (value.detach() * ro.log_probs[:, 0]).mean() + value.mean()
        else:
            surrogate = ((ro.final == 3).float() * ro.log_probs.sum(1)).mean()
        surrogate.backward()
        return torch.cat([p.grad.flatten() for p in policy.parameters() if p.grad is not None])

    exact, sampled = grad(True), grad(False)
    cos = float(torch.nn.functional.cosine_similarity(exact, sampled, dim=0))
    assert cos > 0.95, cos


def train_two_hop(policy: KGPolicy, objective: str = "expected") -> torch.Tensor:
    """REINFORCE with the exact last step towards entity 4 (only 0 -> 2 -> 4 reaches it); beam scores."""
    w = walker()
    opt = torch.optim.Adam(policy.parameters(), lr=0.05)
    pg = Reinforce(beta=0.0)
    gen = torch.Generator().manual_seed(0)
    heads = torch.zeros(32, dtype=torch.long)
    for _ in range(60):
        ro = rollout(policy, w, heads, heads, None, 2, gen, expected_last=True)
        reward = (ro.last_entities == 4).float()
        value = (ro.last_probs * reward).sum(1)
        exact = last_step_objective(ro.last_probs, reward, objective)
        loss = pg.loss(ro.log_probs[:, :-1], ro.entropies, value.detach(), exact=exact)
        opt.zero_grad()
        loss.backward()
        opt.step()
    policy.eval()
    return beam_search(policy, w, torch.tensor([0]), torch.tensor([0]), 2, beam_width=10)


@pytest.mark.parametrize("objective", LAST_STEP_OBJECTIVES)
def test_reinforce_with_exact_last_step_learns_the_two_hop_answer(objective):
    torch.manual_seed(0)
    policy = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16)
    scores = train_two_hop(policy, objective)
    assert float(scores[0, 4].exp()) > 0.9 and int(scores[0].argmax()) == 4


def test_likelihood_last_step_is_the_answers_cross_entropy_and_expected_is_its_probability():
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0]], requires_grad=True)
    probs = torch.softmax(logits, dim=1)
    answer = torch.tensor([[0.0, 0.0, 1.0, 0.0]])  # reward 1 on action 2 only
    p = probs.detach()
    p2 = float(p[0, 2])
    (grad_ll,) = torch.autograd.grad(
        last_step_objective(probs, answer, "likelihood").sum(), logits, retain_graph=True
    )
    (grad_ex,) = torch.autograd.grad(last_step_objective(probs, answer, "expected").sum(), logits)
    # d log(p_a + eps) / d logits = (onehot - p) * p_a / (p_a + eps); d p_a / d logits = p_a * (onehot - p)
    assert torch.allclose(grad_ll, (answer - p) * p2 / (p2 + LIKELIHOOD_EPS), atol=1e-6)
    assert torch.allclose(grad_ex, (answer - p) * p2, atol=1e-6)
    # a walk that gives the answer 1% of its mass: the likelihood gradient stays ~1, the expected one ~0.01
    tiny = torch.tensor([[0.01, 0.99]], requires_grad=True)
    first = torch.tensor([[1.0, 0.0]])
    (g,) = torch.autograd.grad(last_step_objective(tiny, first, "likelihood").sum(), tiny)
    assert float(g[0, 0]) == pytest.approx(1 / (0.01 + LIKELIHOOD_EPS))
    nothing = last_step_objective(torch.tensor([[0.5, 0.5]]), torch.zeros(1, 2), "likelihood")
    assert float(nothing) == pytest.approx(math.log(LIKELIHOOD_EPS))
    with pytest.raises(
        ValueError,
        match=r"last-step objective 'log' is not one of \('expected', 'likelihood', 'cross_entropy'\)",
    ):
        last_step_objective(probs, answer, "log")


def test_cross_entropy_last_step_moves_the_policy_towards_the_normalised_rewards():
    # slot 3 is masked (probability 0); its reward must not count, nor make the value infinite
    logits = torch.tensor([[1.0, 0.0, -1.0, float("-inf")]], requires_grad=True)
    probs = torch.softmax(logits, dim=1)
    rewards = torch.tensor([[1.0, 0.5, 0.0, 1.0]])
    value = last_step_objective(probs, rewards, "cross_entropy")
    p = probs.detach()
    assert float(value.detach()) == pytest.approx(float(torch.log(p[0, 0]) + 0.5 * torch.log(p[0, 1])))
    (grad,) = torch.autograd.grad(value.sum(), logits)
    # d/dz_a of sum_b R_b log p_b = R_a - p_a * sum_b R_b over the valid slots (R counted on slots 0-2)
    want = torch.tensor([[1.0, 0.5, 0.0, 0.0]]) - p * 1.5
    assert torch.allclose(grad, want, atol=1e-6)
    # at its optimum the policy is the normalised rewards, where the expected reward wants all on slot 0
    z = torch.zeros(1, 3, requires_grad=True)
    opt = torch.optim.SGD([z], lr=1.0)
    for _ in range(500):
        opt.zero_grad()
        (-last_step_objective(torch.softmax(z, 1), rewards[:, :3], "cross_entropy").sum()).backward()
        opt.step()
    assert torch.allclose(torch.softmax(z, 1).detach(), torch.tensor([[2 / 3, 1 / 3, 0.0]]), atol=0.02)


def test_embedding_dropout_perturbs_training_scores_only():
    torch.manual_seed(0)
    policy = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16, emb_dropout=0.5)
    plain = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16)
    plain.load_state_dict(policy.state_dict())
    assert policy.config["emb_dropout"] == 0.5 and plain.config["emb_dropout"] == 0.0
    w = walker()
    heads = torch.tensor([0, 0, 2])

    def scores(p: KGPolicy) -> torch.Tensor:
        table = p.entity_table()
        state = p.begin(heads, table)
        rel, ent, mask = w.candidates(heads, heads, heads)
        return p.logits(state, heads, heads, rel, ent, mask, table)

    policy.eval()
    plain.eval()
    assert torch.equal(scores(policy), scores(plain))  # no dropout at test time
    policy.train()
    plain.train()
    torch.manual_seed(1)
    noisy = scores(policy)
    finite = torch.isfinite(noisy)
    assert torch.equal(finite, torch.isfinite(scores(plain)))
    assert not torch.allclose(noisy[finite], scores(plain)[finite])
    assert torch.equal(scores(plain), scores(plain))  # emb_dropout=0 leaves training scores alone


def test_frozen_entity_vectors_stay_at_their_seeded_start_while_the_walker_learns():
    torch.manual_seed(0)
    policy = KGPolicy(
        5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16, train_entity_embeddings=False
    )
    assert policy.entity_emb is not None
    start = policy.entity_emb.weight.detach().clone()
    scores = train_two_hop(policy)
    assert torch.equal(policy.entity_emb.weight, start)
    assert float(scores[0, 4].exp()) > 0.9
    assert KGPolicy(**policy.config).entity_emb.weight.requires_grad is False  # type: ignore[union-attr]


def test_warm_start_keeps_the_pretrained_geometry_at_the_fresh_spread():
    def fresh() -> KGPolicy:
        torch.manual_seed(0)
        return KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16)

    policy = fresh()
    assert policy.entity_emb is not None
    fresh_std = float(policy.entity_emb.weight.detach().std())
    fresh_rel = policy.relation_emb.weight.detach().clone()
    gen = torch.Generator().manual_seed(3)
    ent = torch.randn(5, 6, generator=gen) * 3.0 + 1.0  # narrower than the table: widened
    rel = torch.randn(4, 12, generator=gen)  # wider, and 4 rows for 2 dataset relations
    policy.warm_start(ent, rel, torch.Generator().manual_seed(0))
    w = policy.entity_emb.weight.detach()
    assert float(w.std()) == pytest.approx(fresh_std, rel=1e-5)
    # widening is an isometry: the centred vectors' inner products survive up to one scale
    centred = ent - ent.mean(dim=0)
    gram, want = w @ w.T, centred @ centred.T
    assert torch.allclose(gram, want * (gram.trace() / want.trace()), atol=1e-6)
    table = policy.relation_emb.weight.detach()
    assert torch.equal(table[2:], fresh_rel[2:])  # NO_OP, START and PAD keep their own vectors
    assert not torch.allclose(table[:2], fresh_rel[:2])
    again = fresh()
    again.warm_start(ent, rel, torch.Generator().manual_seed(0))
    assert torch.equal(again.relation_emb.weight, policy.relation_emb.weight)  # seeded projection
    with pytest.raises(ValueError, match="warm_start: 4 entity vectors for a policy of 5 entities"):
        policy.warm_start(ent[:4], None)
    bare = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, use_entity_embeddings=False)
    with pytest.raises(ValueError, match="warm_start: entity vectors given but the policy has no entity"):
        bare.warm_start(ent, None)


def test_gnn_variant_trains_end_to_end_and_rebuilds_from_its_config():
    torch.manual_seed(0)
    w = walker()
    policy = KGPolicy(
        5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16, gnn_layers=2, graph_triples=TRIPLES
    )
    ro = rollout(policy, w, torch.zeros(16, dtype=torch.long), torch.zeros(16, dtype=torch.long), None, 2)
    loss = Reinforce().loss(ro.log_probs, ro.entropies, (ro.final == 3).float())
    loss.backward()
    assert policy.gnn is not None and policy.gnn.msg_lin[0].weight.grad is not None
    clone = KGPolicy(**policy.config, graph_triples=TRIPLES)
    clone.load_state_dict(policy.state_dict())
    policy.eval()
    clone.eval()
    a = beam_search(policy, w, torch.tensor([0]), torch.tensor([0]), 2, 10)
    assert torch.equal(a, beam_search(clone, w, torch.tensor([0]), torch.tensor([0]), 2, 10))
    with pytest.raises(ValueError, match="gnn_layers > 0 needs graph_triples"):
        KGPolicy(5, 2, gnn_layers=1)


def test_relation_only_policy_scores_with_both_paths_alike():
    torch.manual_seed(0)
    policy = KGPolicy(5, 2, relation_dim=6, history_dim=6, hidden_dim=8, use_entity_embeddings=False)
    assert policy.entity_table() is None and policy.action_dim == 6
    w = walker()
    cur = torch.tensor([0, 2])
    state = policy.begin(cur, None)
    rel, ent, mask = w.candidates(cur, cur, torch.tensor([0, 0]))
    logits = policy.logits(state, cur, torch.tensor([0, 0]), rel, ent, mask, None)
    assert torch.isneginf(logits[~mask]).all() and torch.isfinite(logits[mask]).all()


def test_reinforce_baseline_entropy_schedule_and_state():
    pg = Reinforce(beta=0.1, beta_decay=0.5, decay_every=2, baseline_rate=0.5)
    logp = torch.zeros(4, 2, requires_grad=True)
    for _ in range(3):
        pg.loss(logp, torch.zeros(4, 2), torch.tensor([1.0, 0.0, 0.0, 1.0]))
    assert pg.baseline == pytest.approx(0.4375) and pg.beta == pytest.approx(0.05)
    loss = pg.loss(logp, torch.zeros(4, 2), torch.tensor([1.0, 0.0, 0.0, 0.0]))
    loss.backward()
    assert logp.grad is not None and logp.grad[0].sum() < 0 < logp.grad[1].sum()  # raise the hit's log-prob
    other = Reinforce()
    other.load_state_dict(pg.state_dict())
    assert (other.baseline, other.updates) == (pg.baseline, pg.updates)
    with pytest.raises(ValueError, match="beta_decay=0"):
        Reinforce(beta_decay=0)


def test_shaped_rewards_follow_multihopkg():
    hit = torch.tensor([1.0, 0.0])
    assert shaped_rewards(hit, None).tolist() == [1.0, 0.0]
    shaped = shaped_rewards(hit, torch.tensor([5.0, 0.0]))
    assert shaped.tolist() == [1.0, pytest.approx(0.5)]
    assert float(shaped_rewards(torch.tensor([0.0]), torch.tensor([2.0]))) == pytest.approx(
        1 / (1 + math.exp(-2))
    )


def test_full_table_scoring_and_gathered_scoring_agree(monkeypatch):
    import signet_rl.kg.policy as policy_module

    torch.manual_seed(0)
    policy = KGPolicy(5, 2, entity_dim=6, relation_dim=6, history_dim=6, hidden_dim=8)
    w = walker()
    cur = torch.tensor([0, 2, 1])
    rq = torch.tensor([0, 1, 0])
    table = policy.entity_table()
    state = policy.begin(cur, table)
    rel, ent, mask = w.candidates(cur, cur, rq)
    got = []
    for ratio in (0, 1000):  # gather every candidate's vectors / score whole tables
        monkeypatch.setattr(policy_module, "FULL_SCORING_RATIO", ratio)
        got.append(policy.logits(state, cur, rq, rel, ent, mask, table))
    assert torch.allclose(got[0], got[1], atol=1e-5) and torch.isfinite(got[0][mask]).all()


def _replay(policy, w, heads, rels, tails, ro, hide, exclude):
    """The log-probabilities, entropies and last distribution of ``ro``'s walks, one row per walk."""
    table = policy.entity_table()
    state = policy.begin(heads, table)
    cur, logps, ents = heads, [], []
    steps = ro.relations.shape[1]
    for t in range(steps):
        cand_rel, cand_ent, mask = w.candidates(cur, heads, rels, tails)
        mask = mask & ~((hide & (cur == heads))[:, None] & (cand_rel == rels[:, None]))
        mask[:, 0] |= ~mask.any(dim=1)
        if t == steps - 1:
            mask = mask & ~exclude(cand_ent)
            mask[:, 0] |= ~mask.any(dim=1)
        logp = torch.log_softmax(policy.logits(state, cur, rels, cand_rel, cand_ent, mask, table), dim=-1)
        taken = (cand_rel == ro.relations[:, t : t + 1]) & (cand_ent == ro.entities[:, t + 1 : t + 2]) & mask
        assert torch.equal(taken.sum(1), torch.ones(len(heads), dtype=torch.long))  # one slot per action
        slot = taken.float().argmax(1, keepdim=True)
        logps.append(logp.gather(1, slot).squeeze(1))
        p = logp.exp()
        ents.append(-(p * torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))).sum(-1))
        state = policy.advance(state, ro.relations[:, t], ro.entities[:, t + 1], table)
        cur = ro.entities[:, t + 1]
    return torch.stack(logps, 1), torch.stack(ents, 1), logp.exp()


def test_walks_sharing_a_prefix_share_its_computation_without_changing_any_value_or_gradient():
    rng = np.random.default_rng(3)
    raw = np.c_[rng.integers(0, 12, 60), rng.integers(0, 3, 60), rng.integers(0, 12, 60)]
    triples = np.unique(raw, axis=0)
    w = KGWalker.from_triples(triples, num_entities=12, num_relations=3)
    torch.manual_seed(0)
    policy = KGPolicy(12, 3, entity_dim=6, relation_dim=6, history_dim=6, hidden_dim=12)
    heads = torch.from_numpy(triples[:5, 0]).repeat_interleave(8)
    rels = torch.from_numpy(triples[:5, 1]).repeat_interleave(8)
    tails = torch.from_numpy(triples[:5, 2]).repeat_interleave(8)
    hide = torch.arange(40) % 3 == 0
    exclude = lambda cand: cand == 5  # noqa: E731
    ro = rollout(
        policy, w, heads, rels, tails, 3, torch.Generator().manual_seed(0),
        last_step_exclude=exclude, expected_last=True, hide_query_relation=hide,
    )  # fmt: skip
    firsts = zip(heads.tolist(), ro.relations[:, 0].tolist(), ro.entities[:, 1].tolist(), strict=True)
    assert len(set(firsts)) < 40  # some walks do share their first step
    logps, ents, last = _replay(policy, w, heads, rels, tails, ro, hide, exclude)
    assert torch.allclose(ro.log_probs, logps, atol=1e-5)
    assert torch.allclose(ro.entropies, ents, atol=1e-5)
    assert torch.allclose(ro.last_probs, last, atol=1e-5)
    weights = torch.linspace(-1, 1, 40)[:, None]
    params = list(policy.parameters())
    shared = torch.autograd.grad((weights * ro.log_probs).sum() + ro.entropies.sum(), params)
    naive = torch.autograd.grad((weights * logps).sum() + ents.sum(), params)
    for a, b in zip(shared, naive, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_reinforce_raw_advantage_is_the_return_itself():
    """MultiHopKG's estimator: no baseline, no normalisation, loss = -mean(R * log pi) - beta * mean(H)."""
    pg = Reinforce(beta=0.5, beta_decay=1.0, baseline_rate=0.5, advantage="raw")
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.25]], requires_grad=True)
    ent = torch.tensor([[0.2, 0.4], [0.6, 0.8]])
    loss = pg.loss(logp, ent, torch.tensor([1.0, 0.25]))
    # -(1 * (-1 - 2) + 0.25 * (-0.5 - 0.25)) / 4 - 0.5 * 0.5
    assert float(loss.detach()) == pytest.approx((3 + 0.1875) / 4 - 0.25)
    loss.backward()
    assert logp.grad is not None and logp.grad.tolist() == [[-0.25, -0.25], [-0.0625, -0.0625]]
    # the baseline is still tracked (and checkpointed) but does not enter the loss
    assert pg.baseline == pytest.approx(0.3125)
    normalised = Reinforce(beta=0.5, beta_decay=1.0)
    other = normalised.loss(logp, ent, torch.tensor([1.0, 0.25])).detach()
    assert float(other) != pytest.approx(float(loss.detach()))
    with pytest.raises(
        ValueError, match=r"^Reinforce\(advantage='none'\): not one of \('normalised', 'raw'\)$"
    ):
        Reinforce(advantage="none")


def test_stacked_history_feeds_its_top_layer_to_the_mlp_and_learns_the_two_hop_answer():
    torch.manual_seed(0)
    policy = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16, history_layers=3)
    one = KGPolicy(5, 2, entity_dim=8, relation_dim=8, history_dim=8, hidden_dim=16)
    one.load_state_dict({k: v for k, v in policy.state_dict().items() if not k.startswith("history_upper")})
    heads = torch.tensor([0, 2])
    h, c = policy.begin(heads, policy.entity_table())
    h1, c1 = one.begin(heads, one.entity_table())
    # every layer's state side by side; the bottom layer is the one-layer policy's own
    assert h.shape == c.shape == (2, 24)
    assert torch.allclose(h[:, :8], h1) and torch.allclose(c[:, :8], c1)
    upper = policy.history_upper[0](h1, (torch.zeros(2, 8), torch.zeros(2, 8)))[0]
    assert torch.allclose(h[:, 8:16], upper)
    rel, ent, mask = walker().candidates(heads, heads, torch.tensor([0, 0]))
    table = policy.entity_table()
    logits = policy.logits((h, c), heads, torch.tensor([0, 0]), rel, ent, mask, table)
    # the MLP reads the top layer: replacing the lower layers' state changes nothing
    lower_changed = (torch.cat([h[:, :16] + 1.0, h[:, 16:]], dim=1), c)
    again = policy.logits(lower_changed, heads, torch.tensor([0, 0]), rel, ent, mask, table)
    assert torch.equal(logits, again)
    clone = KGPolicy(**policy.config)
    assert clone.config["history_layers"] == 3 and len(clone.history_upper) == 2
    scores = train_two_hop(policy)
    assert float(scores[0, 4].exp()) > 0.9 and int(scores[0].argmax()) == 4
    with pytest.raises(ValueError, match="history_layers=0 must be >= 1"):
        KGPolicy(5, 2, history_layers=0)
