"""Filtered ranking: hand-computed ranks (ties, misses, filtered answers), input errors, KGIndex on data."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch

from signet_rl.datasets.kg import load_kg
from signet_rl.datasets.registry import load_dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.kg.ranking import KGIndex, QueryBatch, evaluate_scores, filtered_ranks, ranking_metrics

NEG = -np.inf

# Six entities 0..5, six queries. Expected filtered ranks, worked out by hand:
#   q0 target 2 (0.5), known {2, 4}: entity 1 (0.9) outranks it, entity 4 (0.8) is another correct answer
#      and is filtered out, entity 3 ties (+0.5)                  -> 1 + 1 + 0.5 = 2.5  (raw rank: 3.5)
#   q1 target 0 scored -inf: a miss                                -> inf
#   q2 target 5 (3), known {1, 5}: only entity 1 ties, and it is filtered out -> 1
#   q3 target 3, every entity scores 1: five ties                 -> 1 + 0 + 0.5 * 5 = 3.5
#   q4 target 4 (1): entities 0..3 score higher                    -> 5
#   q5 target 2 (-1e9), all others -inf (never reached)            -> 1
SCORES = np.array(
    [
        [0.1, 0.9, 0.5, 0.5, 0.8, NEG],
        [NEG, 1.0, 2.0, 3.0, 4.0, 5.0],
        [0.0, 3.0, 0.0, 0.0, 0.0, 3.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [5.0, 4.0, 3.0, 2.0, 1.0, 0.0],
        [NEG, NEG, -1e9, NEG, NEG, NEG],
    ]
)
EXPECTED = np.array([2.5, np.inf, 1.0, 3.5, 5.0, 1.0])


def _batch(num_entities: int | None = 6) -> QueryBatch:
    return QueryBatch(
        ids=tuple(f"q{i}" for i in range(6)),
        heads=np.zeros(6, dtype=np.int64),
        relations=np.zeros(6, dtype=np.int64),
        tails=np.array([2, 0, 5, 3, 4, 2]),
        known=(
            np.array([4, 2]),
            np.array([0]),
            np.array([5, 1]),
            np.array([3]),
            np.array([4]),
            np.array([2]),
        ),
        num_entities=num_entities,
    )


@pytest.mark.parametrize(
    "scores",
    [SCORES, SCORES.astype(np.float32), torch.from_numpy(SCORES), torch.from_numpy(SCORES).float()],
    ids=["numpy64", "numpy32", "torch64", "torch32"],
)
def test_hand_computed_filtered_ranks(scores):
    ranks = filtered_ranks(scores, _batch())
    assert ranks.dtype == np.float64
    np.testing.assert_array_equal(ranks, EXPECTED)


def test_metrics_of_hand_computed_ranks():
    m = ranking_metrics(EXPECTED)
    assert m == pytest.approx(
        {
            "hits@1": 2 / 6,  # q2, q5
            "hits@3": 3 / 6,  # + q0 (2.5)
            "hits@10": 5 / 6,  # all but the miss
            "mrr": (1 / 2.5 + 0 + 1 + 1 / 3.5 + 1 / 5 + 1) / 6,  # = 0.480952...
        }
    )
    assert m["mrr"] == pytest.approx(0.4809524, abs=1e-7)


def test_known_is_normalised_and_holds_the_target():
    b = QueryBatch(ids=("a",), heads=[0], relations=[0], tails=[3], known=(np.array([5, 1, 5]),))
    np.testing.assert_array_equal(b.known[0], [1, 3, 5])
    assert b.heads.dtype == np.int64 and len(b) == 1


def test_evaluate_scores_batches_and_counts_misses():
    batch = _batch()
    batch = QueryBatch(batch.ids, np.arange(6), batch.relations, batch.tails, batch.known, num_entities=6)
    seen: list[list[int]] = []

    def score_fn(heads: np.ndarray, relations: np.ndarray) -> np.ndarray:
        seen.append(heads.tolist())
        return SCORES[heads]  # head i holds the row of query i

    m = evaluate_scores(score_fn, batch, batch_size=4)
    assert seen == [[0, 1, 2, 3], [4, 5]]
    assert m["n"] == 6 and m["misses"] == 1
    assert m["mrr"] == pytest.approx(ranking_metrics(EXPECTED)["mrr"])


@pytest.mark.parametrize(
    ("scores", "batch", "message"),
    [
        (
            np.zeros((5, 6)),
            _batch(),
            "scores must have shape [B, N] = [6, N] for a batch of 6 queries, got (5, 6)",
        ),
        (np.zeros(6), _batch(), "got (6,)"),
        (
            np.zeros((6, 7)),
            _batch(),
            "scores have shape (6, 7) but the batch ranks over 6 entities: expected [6, 6]",
        ),
        (np.zeros((6, 5)), _batch(None), "a target or known tail index 5 is outside the 5 scored entities"),
        (np.where(np.eye(6) > 0, np.nan, 0.0), _batch(), "scores hold NaN (first in row 0, query 'q0')"),
    ],
    ids=["rows", "1-d", "width", "tail-range", "nan"],
)
def test_filtered_ranks_rejects_bad_input(scores, batch, message):
    with pytest.raises(ValueError) as err:
        filtered_ranks(scores, batch)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tails": [1, 2]}, "QueryBatch: tails has length 2 but there are 1 ids"),
        ({"heads": [-1]}, "QueryBatch: heads holds a negative index -1"),
        ({"known": ()}, "QueryBatch: known has 0 entries but there are 1 ids"),
        ({"relations": [0.5]}, "relations must hold integers, got dtype float64"),
    ],
)
def test_query_batch_rejects_bad_input(kwargs, message):
    args = {"ids": ("a",), "heads": [0], "relations": [0], "tails": [1], "known": (np.array([1]),), **kwargs}
    with pytest.raises(ValueError) as err:
        QueryBatch(**args)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("ranks", "message"),
    [([], "needs at least one rank"), ([0.5], "ranks must be >= 1"), ([np.nan], "ranks must be >= 1")],
)
def test_ranking_metrics_rejects_bad_ranks(ranks, message):
    with pytest.raises(ValueError, match=message):
        ranking_metrics(np.array(ranks, dtype=float))


# -- KGIndex on tiny folders and on kinship ---------------------------------------------------------


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _tiny(root: Path, name: str, test: list[str]) -> None:
    folder = root / "kg" / name
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc", "c\ts\ta"])
    _write(folder / "train.txt", ["a\tr\tb", "b\tr\tc"])
    _write(folder / "dev.txt", ["c\ts\ta"])
    _write(folder / "test.txt", test)


def test_index_of_a_tiny_folder(tmp_path):
    _tiny(tmp_path, "tiny", ["a\tr\tc", "a\tq\tb"])
    ds = load_kg("tiny", root=tmp_path)
    idx = KGIndex.from_dataset(ds)
    assert idx.entities == ("a", "b", "c")
    assert idx.relations == ("r", "s", "q")  # graph relations sorted, then the query-only relation
    np.testing.assert_array_equal(idx.graph_triples, [[0, 0, 1], [1, 0, 2], [2, 1, 0]])
    test = idx.queries(ds, "test")
    assert test.ids == ("test:0", "test:1")
    np.testing.assert_array_equal(test.heads, [0, 0])
    np.testing.assert_array_equal(test.relations, [0, 2])
    np.testing.assert_array_equal(test.tails, [2, 1])
    # (a, r, ?) has two known tails across all files: b (train/graph) and c (test)
    np.testing.assert_array_equal(test.known[0], [1, 2])
    assert test.num_entities == 3


def test_query_naming_an_unknown_entity(tmp_path):
    _tiny(tmp_path, "tiny", ["a\tr\tc"])
    _tiny(tmp_path, "other", ["zz\tr\tc"])
    idx = KGIndex.from_dataset(load_kg("tiny", root=tmp_path))
    with pytest.raises(ValueError) as err:
        idx.queries(load_kg("other", root=tmp_path), "test")
    assert str(err.value) == "query 'test:0': head entity 'zz' is not an entity of the graph"


@functools.cache
def _kinship():
    ds = load_dataset("kg:kinship")
    return ds, KGIndex.from_dataset(ds)


@pytest.mark.data
def test_kinship_index_matches_graph_arrays_and_files(require_data):
    path = require_data("kg/kinship")
    ds, idx = _kinship()
    assert (idx.num_entities, idx.num_relations, idx.graph_triples.shape) == (104, 50, (17088, 3))
    assert idx.inverse_convention == "_"
    ga = GraphArrays.from_graph(ds.graph)
    assert idx.entities == tuple(ga.entity_ids)
    assert idx.relations[: len(ga.dep_type_vocab)] == tuple(ga.dep_type_vocab)
    np.testing.assert_array_equal(idx.graph_triples[:, 0], ga.edge_source)
    np.testing.assert_array_equal(idx.graph_triples[:, 1], ga.edge_type)
    np.testing.assert_array_equal(idx.graph_triples[:, 2], ga.edge_target)

    test = idx.queries(ds, "test")
    assert len(test) == 1074 and test.ids[0] == "test:0"
    head, rel, tail = (path / "test.txt").read_text().splitlines()[0].split("\t")
    assert (idx.entities[test.heads[0]], idx.relations[test.relations[0]], idx.entities[test.tails[0]]) == (
        head,
        rel,
        tail,
    )
    assert all(t in k for t, k in zip(test.tails, test.known, strict=True))
    assert max(len(k) for k in test.known) > 1  # some queries have other correct answers to filter


@pytest.mark.data
def test_constant_scores_rank_like_a_random_guess_on_kinship(require_data):
    require_data("kg/kinship")
    ds, idx = _kinship()
    test = idx.queries(ds, "test")
    m = evaluate_scores(lambda h, r: np.zeros((len(h), idx.num_entities), dtype=np.float32), test)
    # every unfiltered entity ties with the target: rank = 1 + (N - |known|) / 2
    expected = np.array([1 + 0.5 * (104 - len(k)) for k in test.known])
    assert m["mrr"] == pytest.approx(float(np.mean(1 / expected)))
    assert m["n"] == 1074 and m["misses"] == 0 and m["hits@1"] == 0.0
