"""KGE anchors: all-tail scores match PyG, learning reaches a filtered-MRR threshold, save/load, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from signet_rl.datasets.kg import load_kg
from signet_rl.kg.kge import KGEAnchor, inverse_relation_names, reciprocal, train_anchor
from signet_rl.kg.ranking import KGIndex


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _clustered_kg(root: Path, seed: int = 0) -> None:
    """40 entities in 4 clusters of 10. ``same``: h -> every other entity of its cluster; ``next``: h -> every
    entity of the following cluster. 20% of the triples are held out (half dev, half test); every held-out
    triple is implied by the cluster structure the rest shows. Random guessing gives filtered MRR ~0.1."""
    rng = np.random.default_rng(seed)
    triples = []
    for h in range(40):
        c = h // 10
        triples += [(h, "same", t) for t in range(c * 10, c * 10 + 10) if t != h]
        triples += [(h, "next", t) for t in range(((c + 1) % 4) * 10, ((c + 1) % 4) * 10 + 10)]
    lines = [f"e{h}\t{r}\te{t}" for h, r, t in triples]
    order = rng.permutation(len(lines))
    n_held = len(lines) // 10
    folder = root / "kg" / "clusters"
    _write(folder / "dev.txt", [lines[i] for i in order[:n_held]])
    _write(folder / "test.txt", [lines[i] for i in order[n_held : 2 * n_held]])
    _write(folder / "train.txt", [lines[i] for i in order[2 * n_held :]])


def test_complex_learns_a_clustered_kg(tmp_path):
    _clustered_kg(tmp_path)
    ds = load_kg("clusters", root=tmp_path)
    anchor, report = train_anchor(
        ds, "complex", seed=0, dim=32, epochs=15, lr=0.01, batch_size=128, eval_every=5
    )
    assert report["test"]["n"] == 76 and report["test"]["misses"] == 0
    assert report["test"]["mrr"] >= 0.9, report["test"]
    assert report["metrics"]["kge_complex/test/mrr"] == report["test"]["mrr"]
    # reciprocals under the "_inv" convention this folder falls back to
    assert report["relations"] == ["next", "same", "next_inv", "same_inv"]
    assert report["train_triples"] == 2 * 608
    assert anchor.score_tails([0], [0]).shape == (1, 40)
    assert report["fit"]["best_epoch"] is not None and report["fit"]["stopped"] in ("epochs", "patience")


@pytest.mark.parametrize("model", ["complex", "distmult"])
def test_all_tail_scores_equal_pyg_forward(model):
    anchor = KGEAnchor(model, num_entities=7, num_relations=3, dim=5, seed=1)
    h, r = np.array([0, 3, 6]), np.array([2, 0, 1])
    scores = anchor.score_tails(h, r)
    assert scores.shape == (3, 7)
    for i in range(3):
        tails = torch.arange(7)
        expected = anchor.kge(torch.full((7,), int(h[i])), torch.full((7,), int(r[i])), tails)
        torch.testing.assert_close(scores[i], expected.detach())


def _triples(n: int = 300) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.stack([rng.integers(0, 20, n), rng.integers(0, 4, n), rng.integers(0, 20, n)], axis=1)


def test_save_load_round_trip_gives_identical_scores(tmp_path):
    anchor = KGEAnchor("complex", 20, 4, dim=8, seed=3, loss="bce", dropout=0.2)
    anchor.fit(_triples(), epochs=2, batch_size=64, progress=False)
    path = tmp_path / "anchor.pt"
    anchor.save(path)
    again = KGEAnchor.load(path)
    assert again.config == anchor.config
    h, r = np.arange(20), np.arange(20) % 4
    assert torch.equal(again.score_tails(h, r), anchor.score_tails(h, r))
    other = KGEAnchor("complex", 20, 4, dim=8, seed=4)
    other.load_state_dict(anchor.state_dict())
    assert torch.equal(other.score_tails(h, r), anchor.score_tails(h, r))


@pytest.mark.parametrize("loss", ["ce", "bce", "pyg"])
def test_training_is_deterministic_for_a_seed(loss):
    def run(seed: int) -> tuple[torch.Tensor, list[float]]:
        a = KGEAnchor("distmult", 20, 4, dim=8, seed=seed, loss=loss, dropout=0.1)
        log = a.fit(_triples(), epochs=3, batch_size=64, progress=False)
        return a.score_tails(np.arange(4), np.arange(4)), log["loss"]

    (s0, l0), (s1, l1), (s2, _) = run(0), run(0), run(1)
    assert torch.equal(s0, s1) and l0 == l1
    assert not torch.equal(s0, s2)
    assert l0[-1] < l0[0]  # the loss goes down


def test_fit_keeps_the_best_evaluated_weights_and_respects_the_time_budget():
    anchor = KGEAnchor("distmult", 20, 4, dim=8)
    calls: list[int] = []

    def score(a: KGEAnchor) -> float:
        calls.append(len(calls))
        return [0.5, 0.9, 0.1, 0.2][min(len(calls) - 1, 3)]

    log = anchor.fit(_triples(), epochs=8, batch_size=64, eval_fn=score, eval_every=2, progress=False)
    assert [e for e, _ in log["evals"]] == [2, 4, 6, 8]
    assert (log["best_epoch"], log["best_score"]) == (4, 0.9)
    log = KGEAnchor("distmult", 20, 4, dim=8).fit(_triples(), epochs=1000, time_budget_s=0.0, progress=False)
    assert log["stopped"] == "time_budget" and log["epochs"] == 1 and log["steps"] == 1


def test_reciprocal_uses_the_index_inverse_names_and_appends_missing_ones():
    assert inverse_relation_names(("r", "_r", "s"), "_") == ["_r", "r", "_s"]
    assert inverse_relation_names(("r", "r_inv", "s"), "_inv") == ["r_inv", "r", "s_inv"]
    index = KGIndex(
        entities=("a", "b"),
        relations=("r", "_r", "s"),
        entity_index={"a": 0, "b": 1},
        relation_index={"r": 0, "_r": 1, "s": 2},
        graph_triples=np.zeros((0, 3), dtype=np.int64),
        inverse_convention="_",
    )
    triples, relations = reciprocal(index, np.array([[0, 0, 1], [0, 2, 1]]))
    assert relations == ("r", "_r", "s", "_s")
    np.testing.assert_array_equal(triples, [[0, 0, 1], [0, 2, 1], [1, 1, 0], [1, 3, 0]])


def test_training_on_the_graph_drops_held_out_triples(tmp_path):
    folder = tmp_path / "kg" / "leaky"
    _write(folder / "graph.txt", ["a\tr\tb", "b\tr\tc", "c\t_r\tb", "c\tr\ta"])
    _write(folder / "train.txt", ["a\tr\tb"])
    _write(folder / "dev.txt", ["c\tr\ta"])
    _write(folder / "test.txt", ["b\tr\tc"])
    ds = load_kg("leaky", root=tmp_path)
    _, report = train_anchor(ds, "distmult", dim=4, epochs=1, train_on="graph", patience=None)
    # b-r->c (test), its reciprocal c-_r->b and c-r->a (dev) are dropped: a-r->b and its reciprocal remain
    assert report["leaked_dropped"] == 3 and report["train_triples"] == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "transe"}, "unknown KGE model 'transe'; expected one of: complex, distmult"),
        ({"loss": "hinge"}, "unknown KGE loss 'hinge'; expected one of: ce, bce, pyg"),
        ({"dim": 0}, "dim must be >= 1, got 0"),
        ({"dropout": 1.0}, "dropout must be in [0, 1), got 1.0"),
        ({"reg": -1.0}, "reg must be >= 0, got -1.0"),
    ],
)
def test_anchor_rejects_bad_settings(kwargs, message):
    args = {"model": "complex", "num_entities": 5, "num_relations": 2, **kwargs}
    with pytest.raises(ValueError) as err:
        KGEAnchor(**args)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("train", "message"),
    [
        (np.zeros((4, 2), dtype=int), "training triples must have shape [T, 3] with T >= 1, got (4, 2)"),
        (np.array([[0, 0, 9]]), "training triples name entity 9; the model has 5 entities"),
        (np.array([[0, 2, 1]]), "training triples name relation 2; the model has 2 relations"),
        (np.array([[0.0, 0.0, 1.0]]), "training triples must be integers, got dtype float64"),
    ],
)
def test_fit_rejects_bad_triples(train, message):
    with pytest.raises(ValueError) as err:
        KGEAnchor("distmult", 5, 2, dim=4).fit(train, epochs=1, progress=False)
    assert str(err.value) == message


def test_load_rejects_a_foreign_file(tmp_path):
    path = tmp_path / "x.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(ValueError, match="is not a saved KGEAnchor"):
        KGEAnchor.load(path)
