"""The padded KG action space (signet_rl.kg.walk_task): layout, cap, query-edge masking, inverse map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from signet_rl.datasets.kg import load_kg
from signet_rl.kg.walk_task import KGWalker, WalkTask, inverse_relations


@pytest.fixture
def tiny_task(tmp_path: Path, write_kg) -> WalkTask:
    write_kg(tmp_path)
    return WalkTask.from_dataset(load_kg("tiny", root=tmp_path, inverse=True))


def test_action_space_layout_no_op_first_then_sorted_edges_then_padding():
    triples = np.array([[0, 1, 2], [0, 0, 1], [0, 0, 2], [1, 1, 0], [0, 0, 1]])  # one duplicate
    w = KGWalker.from_triples(triples, num_entities=3, num_relations=2)
    assert w.num_actions == 4 and (w.no_op, w.start, w.pad, w.num_relation_tokens) == (2, 3, 4, 5)
    assert w.relation.tolist() == [[2, 0, 0, 1], [2, 1, 4, 4], [2, 4, 4, 4]]
    assert w.next_entity.tolist() == [[0, 1, 2, 2], [1, 0, 1, 1], [2, 2, 2, 2]]
    assert w.mask.tolist() == [[True] * 4, [True, True, False, False], [True, False, False, False]]


def test_max_actions_caps_hubs_deterministically_and_keeps_no_op():
    rng = np.random.default_rng(0)
    triples = np.stack([np.zeros(30, int), rng.integers(0, 3, 30), np.arange(1, 31)], axis=1)
    a = KGWalker.from_triples(triples, 31, 3, max_actions=8, seed=1)
    b = KGWalker.from_triples(triples, 31, 3, max_actions=8, seed=1)
    c = KGWalker.from_triples(triples, 31, 3, max_actions=8, seed=2)
    assert a.num_actions == 8 and a.dropped_edges == 30 - 7
    assert a.relation[0, 0] == a.no_op and a.mask[0].all()
    assert np.array_equal(a.next_entity, b.next_entity)
    assert not np.array_equal(a.next_entity, c.next_entity)
    kept = list(zip(a.relation[0, 1:].tolist(), a.next_entity[0, 1:].tolist(), strict=True))
    assert kept == sorted(kept)  # the subset stays in (relation, target) order
    assert KGWalker.from_triples(triples, 31, 3).num_actions == 31


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_actions": 1}, "max_actions=1 must be >= 2"),
        ({"num_entities": 2}, "entity id in triples is outside [0, 2)"),
        ({"num_relations": 1}, "relation id in triples is outside [0, 1)"),
        ({"inverse_of": np.array([0])}, "inverse_of has shape (1,), expected (2,)"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    args = {"triples": np.array([[0, 1, 2]]), "num_entities": 3, "num_relations": 2, **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        KGWalker.from_triples(**args)


def test_inverse_relations_both_conventions():
    assert inverse_relations(["t1", "_t1", "t2"], "_").tolist() == [1, 0, -1]
    assert inverse_relations(["x_inv", "y", "x"], "_inv").tolist() == [2, -1, 0]
    with pytest.raises(ValueError, match="inverse convention 'inv'"):
        inverse_relations(["a"], "inv")


def test_query_edge_and_its_inverse_are_masked(tiny_task):
    task = tiny_task
    ix = task.index
    e = {name: ix.entity_index[name] for name in "abcde"}
    r1, r1_inv = ix.relation_index["r1"], ix.relation_index["r1_inv"]
    w = task.walker
    heads = torch.tensor([e["a"], e["a"], e["a"]])
    rels = torch.tensor([r1, r1, r1])
    tails = torch.tensor([e["b"], -1, e["b"]])
    current = torch.tensor([e["a"], e["a"], e["b"]])
    cand_rel, cand_ent, mask = w.candidates(current, heads, rels, tails)
    hidden = [
        (int(r), int(t))
        for r, t, m, full in zip(
            cand_rel.flatten(),
            cand_ent.flatten(),
            mask.flatten(),
            w.tensors()[2][current].flatten(),
            strict=True,
        )
        if full and not m
    ]
    assert hidden == [(r1, e["b"]), (r1_inv, e["a"])]  # row 0: the edge itself, row 2: its inverse at b
    assert mask[1].tolist() == w.mask[e["a"]].tolist()  # tail -1: nothing masked
    for row in range(3):
        r_np, e_np, m_np = w.candidates_np(
            int(current[row]), int(heads[row]), int(rels[row]), int(tails[row])
        )
        assert r_np.tolist() == cand_rel[row].tolist() and e_np.tolist() == cand_ent[row].tolist()
        assert m_np.tolist() == mask[row].tolist()


def test_train_facts_and_last_step_mask(tiny_task):
    task = tiny_task
    ix = task.index
    a, b, c, e = (ix.entity_index[x] for x in "abce")
    r3 = ix.relation_index["r3"]
    # graph edges and training queries are training facts; the dev answer (d, r3, e) is not
    assert task.is_train_fact([a, a, b], [ix.relation_index["r1"], r3, r3], [b, c, e]).tolist() == [True] * 3
    assert not task.is_train_fact([ix.entity_index["d"]], [r3], [e])[0]
    other = task.other_train_answers(
        torch.tensor([a]), torch.tensor([r3]), torch.tensor([b]), torch.tensor([[a, b, c, e]])
    )
    assert other.tolist() == [[False, False, True, False]]  # c answers (a, r3) and is not the labelled b
    assert len(task.queries("validation")) == 1 and len(task.queries("test")) == 1


def test_reciprocal_training_queries_add_one_head_query_per_training_triple(tmp_path, write_kg):
    write_kg(
        tmp_path,
        "recip",
        extra_edges="e\tr1\tc\n",
        train="a\tr1\tb\nd\tr1\tc\nb\tr2\tc\n",
        dev="a\tr2\tc\n",
        test="b\tr1\tc\n",
    )
    task = WalkTask.from_dataset(load_kg("recip", root=tmp_path, inverse=True))
    ix = task.index
    a, b, c, d, e = (ix.entity_index[x] for x in "abcde")
    r1, r2 = ix.relation_index["r1"], ix.relation_index["r2"]
    r1_inv, r2_inv = (int(task.walker.inverse_of[r]) for r in (r1, r2))
    assert task.training_queries() is task.queries("train")
    q = task.training_queries(reciprocal=True)
    assert q.ids == (
        "train:0",
        "train:1",
        "train:2",
        "train:0:reciprocal",
        "train:1:reciprocal",
        "train:2:reciprocal",
    )
    assert q.heads.tolist() == [a, d, b, b, c, c]
    assert q.relations.tolist() == [r1, r1, r2, r1_inv, r1_inv, r2_inv]
    assert q.tails.tolist() == [b, c, c, a, d, b]
    # the reciprocal triples are graph edges (the inverse edges), so they count as training facts
    assert task.is_train_fact(q.heads, q.relations, q.tails).all()
    # (c, r1_inv) -> d also has the training answer e (edge e r1 c): MINERVA's last-step mask hides it
    other = task.other_train_answers(
        torch.from_numpy(q.heads[4:5]),
        torch.from_numpy(q.relations[4:5]),
        torch.from_numpy(q.tails[4:5]),
        torch.tensor([[a, b, c, d, e]]),
    )
    assert other.tolist() == [[False, False, False, False, True]]


def test_reciprocal_training_queries_need_every_inverse(tiny_task):
    task = tiny_task  # r3 is a query relation only: the graph holds no inverse of it
    with pytest.raises(
        ValueError,
        match="reciprocal training queries need the inverse of every training "
        "relation in the graph; 'r3' has none",
    ):
        task.training_queries(reciprocal=True)
