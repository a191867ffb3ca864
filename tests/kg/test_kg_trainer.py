"""The KG walker's trainer (signet_rl.kg.trainer, run through signet_rl.tasks.kg): configs compose, the walker
learns, a killed run resumes to the same numbers, anchors ride along (MLflow logging: test_kg_tracking.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from signet_rl.kg.kge import KGEAnchor
from signet_rl.kg.rerank import evaluate_run
from signet_rl.kg.trainer import CHECKPOINT, build_policy, ema_update, evaluate_policy, load_task
from signet_rl.tasks.kg import kg_config, run_kg, train_kg

CONF = Path(__file__).resolve().parents[2] / "conf"
GRAPH = "a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\nc\tr1\te\nb\tr1\te\ne\tr2\ta\n"
SMALL = [
    "task.progress=false",
    "task.anchors=[]",
    "task.shaping=none",
    "task.time_budget_s=null",
    "task.entity_dim=8",
    "task.relation_dim=8",
    "task.history_dim=8",
    "task.hidden_dim=16",
    "task.beam_width=8",
]


def make_cfg(overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(
            overrides=["+task=kg", "+seed=0", "+run_dir=null", "+mlflow.enabled=false", *overrides]
        )


def write_tiny(root: Path, train: str, dev: str, test: str) -> Path:
    """A MINERVA-layout folder ``<root>/kg/tiny`` over GRAPH with these splits; returns ``root``."""
    folder = root / "kg" / "tiny"
    folder.mkdir(parents=True)
    for name, text in (("graph", GRAPH), ("train", train), ("dev", dev), ("test", test)):
        (folder / f"{name}.txt").write_text(text)
    return root


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(
        tmp_path_factory.mktemp("kgtrain"),
        "a\tr3\tc\na\tr1\tb\nb\tr3\te\nd\tr3\ta\nc\tr3\tb\n",
        "d\tr3\te\n",
        "b\tr3\tc\n",
    )


def tiny_cfg(root: Path, run_dir: Path | None, *extra: str) -> DictConfig:
    cfg = make_cfg(["+dataset=kg", *SMALL, *extra])
    cfg.dataset.spec = "kg:tiny"
    cfg.dataset.data_root = str(root)
    cfg.dataset.inverse = True
    cfg.run_dir = str(run_dir) if run_dir is not None else None
    return cfg


def test_kg_dataset_config_composes_for_any_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    cfg = make_cfg(["+dataset=kg", "dataset.spec=kg:any_folder", "dataset.path_length=2"])
    assert cfg.dataset.spec == "kg:any_folder" and cfg.dataset.data_root == str(tmp_path)
    assert kg_config(cfg).path_length == 2
    assert cfg.task.path_length is None and cfg.task.shaping in ("none", "complex", "distmult")


@pytest.mark.data
def test_walker_learns_countries_s1(require_data):
    root = require_data("kg/countries_S1").parents[1]
    cfg = make_cfg(
        [
            "+dataset=kg",
            "dataset.spec=kg:countries_S1",
            "dataset.path_length=2",
            f"dataset.data_root={root}",
            *SMALL[:4],
            "task.max_batches=20",
            "task.num_rollouts=10",
            "task.lr=0.005",
            "task.batch_size=64",
            "task.entity_dim=25",
            "task.relation_dim=25",
            "task.history_dim=25",
            "task.hidden_dim=100",
        ]
    )
    torch.set_num_threads(1)
    results = run_kg(cfg)
    # the same initialisation, untrained, on the same queries
    task = load_task(kg_config(cfg))
    torch.manual_seed(0)
    untrained = evaluate_policy(build_policy(task, kg_config(cfg)), task, task.queries("test"), 2, 100)["mrr"]
    trained = results["test"]["kg_walk/mrr"]
    assert trained >= 0.95 and trained - untrained >= 0.3, (untrained, trained)
    assert results["validation"]["kg_walk/n"] == 24 and results["train"]["batches"] == 20


def test_killed_run_resumes_to_the_same_numbers(tiny_root, tmp_path):
    extra = (
        "task.max_batches=6",
        "task.batch_size=2",
        "task.num_rollouts=4",
        "task.checkpoint_every=2",
        "task.eval_every=3",
        "task.emb_dropout=0.2",
        "task.dropout=0.2",
    )
    whole = run_kg(tiny_cfg(tiny_root, tmp_path / "whole", *extra))
    # validation after batches 3 and 6; the best of them is the one tested
    assert [c["batch"] for c in whole["curve"]] == [3, 6]
    best = max(whole["curve"], key=lambda c: c["mrr"])
    assert whole["train"]["selected_batch"] == best["batch"]

    def kill_at_5(step: int) -> None:
        if step == 5:
            raise KeyboardInterrupt

    cut = tiny_cfg(tiny_root, tmp_path / "cut", *extra)
    with pytest.raises(KeyboardInterrupt):
        run_kg(cut, on_batch=kill_at_5)
    first = torch.load(tmp_path / "cut" / CHECKPOINT, weights_only=False)
    assert first["step"] == 4
    resumed = run_kg(cut)
    # the whole wall time counts both sittings (up to the first one's last checkpoint)
    timing = resumed["timing"]
    assert timing["wall_s"] == pytest.approx(first["wall_s"] + timing["total_s"], abs=0.05)
    for key in ("validation", "test"):
        assert resumed[key] == whole[key]
    untimed = [[{k: v for k, v in c.items() if k != "seconds"} for c in r["curve"]] for r in (resumed, whole)]
    assert untimed[0] == untimed[1]
    assert resumed["train"]["batches"] == whole["train"]["batches"] == 6
    a = torch.load(tmp_path / "whole" / CHECKPOINT, weights_only=False)
    b = torch.load(tmp_path / "cut" / CHECKPOINT, weights_only=False)
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert a["reinforce"] == b["reinforce"]
    with pytest.raises(ValueError, match="was written by a run with another config"):
        run_kg(tiny_cfg(tiny_root, tmp_path / "cut", *extra[:-1], "task.dropout=0.1"))


def test_anchor_shaping_gnn_and_resumed_anchor(tiny_root, tmp_path):
    cfg = tiny_cfg(
        tiny_root,
        tmp_path / "run",
        "task.max_batches=2",
        "task.anchors=[distmult]",
        "task.shaping=distmult",
        "+task.anchor.epochs=2",
        "+task.anchor.dim=4",
        "task.gnn=true",
    )
    mrr = train_kg(cfg)
    saved = tmp_path / "run" / "anchors" / "distmult.pt"
    assert saved.exists()
    results = OmegaConf.load(tmp_path / "run" / "results.json")
    assert mrr == results.validation["kg_walk/mrr"]
    assert {"anchor_distmult/mrr", "kg_walk/hits@10"} <= set(results.test)
    stamp = saved.stat().st_mtime_ns
    again = run_kg(cfg)  # finished run: reloads the anchor and the checkpoint, re-evaluates
    assert saved.stat().st_mtime_ns == stamp and again["test"] == dict(results.test)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("task.shaping=complex", "task.shaping='complex' needs that anchor trained in the run"),
        ("task.shaping=transe", "task.shaping='transe' is not one of"),
        ("task.beam_width=0", "task.beam_width=0 must be >= 1"),
        ("task.beam_width=wide", "task.beam_width='wide' is not an integer"),
        ("task.gnn=2", "task.gnn=2 is not true or false"),
        ("+task.foo=1", r"task=kg: unknown keys \['foo'\]; known: \['action_dropout', "),
        ("task.action_dropout=1.0", r"task.action_dropout=1.0 must be in \[0, 1\)"),
        ("task.emb_dropout=-0.1", r"task.emb_dropout=-0.1 must be in \[0, 1\)"),
        ("task.advantage=baseline", r"task.advantage='baseline' is not one of \('normalised', 'raw'\)"),
        (
            "task.reciprocal_queries=true",
            "the inverse of every training relation in the graph; 'r3' has none",
        ),
        (
            "task.init_from_anchor=complex",
            "task.init_from_anchor='complex' needs that anchor trained in the run",
        ),
    ],
)
def test_bad_task_config_is_named(tiny_root, override, message):
    with pytest.raises(ValueError, match=message):
        run_kg(tiny_cfg(tiny_root, None, override))


def test_expected_last_step_with_shaping_trains_and_selects_on_validation(tiny_root, tmp_path):
    cfg = tiny_cfg(
        tiny_root,
        tmp_path / "run",
        "task.max_batches=4",
        "task.eval_every=2",
        "task.last_step=expected",
        "task.anchors=[distmult]",
        "task.shaping=distmult",
        "+task.anchor.epochs=2",
        "+task.anchor.dim=4",
    )
    results = run_kg(cfg)
    assert [c["batch"] for c in results["curve"]] == [2, 4]
    assert results["train"]["batches"] == 4 and 0.0 <= results["train"]["mean_hit"] <= 1.0
    with pytest.raises(ValueError, match=r"task\.last_step='exact' is not one of"):
        run_kg(tiny_cfg(tiny_root, None, "task.last_step=exact"))


def test_patience_stops_at_the_first_validation_that_does_not_beat_the_best(tiny_root, tmp_path):
    cfg = tiny_cfg(tiny_root, tmp_path / "run", "task.max_batches=60", "task.eval_every=2", "task.patience=1")
    results = run_kg(cfg)
    curve = results["curve"]
    mrrs = [c["mrr"] for c in curve]
    stale = next(i for i in range(1, len(mrrs)) if mrrs[i] <= max(mrrs[:i]))
    assert results["train"]["stopped_by"] == "patience"
    assert results["train"]["batches"] == curve[stale]["batch"] == 2 * (stale + 1) < 60
    assert len(curve) == stale + 1
    best = max(range(len(mrrs)), key=lambda i: (mrrs[i], -i))
    assert results["train"]["selected_batch"] == curve[best]["batch"]
    again = run_kg(cfg)  # resuming a run that ran out of patience trains no further
    assert again["train"]["batches"] == results["train"]["batches"] and again["test"] == results["test"]
    with pytest.raises(ValueError, match=r"task.patience=0 needs to be >= 1 and task.eval_every > 0"):
        run_kg(tiny_cfg(tiny_root, None, "task.patience=0"))


def test_reciprocal_queries_double_the_walkers_epoch(tmp_path):
    root = write_tiny(
        tmp_path, "a\tr1\tb\nd\tr1\tc\nc\tr1\te\nb\tr1\te\ne\tr2\ta\n", "a\tr2\tc\n", "b\tr2\tc\n"
    )
    plain = run_kg(tiny_cfg(root, None, "task.epochs=1", "task.batch_size=2"))
    both = run_kg(tiny_cfg(root, None, "task.epochs=1", "task.batch_size=2", "task.reciprocal_queries=true"))
    # 5 training triples: 3 batches of 2 per epoch; with their 5 reciprocal queries, 5
    assert plain["train"]["total_batches"] == plain["train"]["batches"] == 3
    assert both["train"]["total_batches"] == both["train"]["batches"] == 5
    assert both["train"]["walks"] == 2 * plain["train"]["walks"]  # every query walked once


def test_walker_starts_from_the_anchors_vectors(tiny_root, tmp_path):
    cfg = tiny_cfg(
        tiny_root,
        tmp_path / "run",
        "task.max_batches=1",
        "task.lr=0",  # the one batch leaves the weights where they started
        "task.anchors=[distmult]",
        "task.init_from_anchor=distmult",
        "+task.anchor.epochs=2",
        "+task.anchor.dim=8",
    )
    run_kg(cfg)
    model = torch.load(tmp_path / "run" / CHECKPOINT, weights_only=False)["model"]
    entity, relation = KGEAnchor.load(tmp_path / "run" / "anchors" / "distmult.pt").vectors()
    # same width (8): the anchor's vectors, centred and rescaled to the fresh table's spread; the walker's
    # 5 relations (r1, r2, r3 and the graph's inverses of r1, r2) are the anchor's first 5 (it adds r3's)
    k = model["relation_emb.weight"].shape[0] - 3
    assert (k, relation.shape[0]) == (5, 6)
    pairs = ((model["entity_emb.weight"], entity), (model["relation_emb.weight"][:k], relation[:k]))
    for table, vectors in pairs:
        centred = vectors - vectors.mean(dim=0)
        scale = float((table * centred).sum() / (centred * centred).sum())
        assert scale > 0 and torch.allclose(table, scale * centred, atol=1e-6)
    cold = tiny_cfg(tiny_root, tmp_path / "cold", "task.max_batches=1", "task.lr=0")
    run_kg(cold)
    fresh = torch.load(tmp_path / "cold" / CHECKPOINT, weights_only=False)["model"]["entity_emb.weight"]
    assert float(model["entity_emb.weight"].std()) == pytest.approx(float(fresh.std()), rel=1e-5)


def test_ema_update_keeps_the_warmed_up_share_of_the_average():
    ema = {"w": torch.zeros(3)}
    ones = torch.ones(3)
    ema_update(ema, [("w", ones)], 0.9, 1)
    assert torch.allclose(ema["w"], torch.full((3,), 9 / 11))  # batch 1 keeps 2/11 of the start, not 0.9
    ema["w"].zero_()
    kept = 1.0
    for step in range(1, 41):
        ema_update(ema, [("w", ones)], 0.9, step)
        kept *= min(0.9, (1 + step) / (10 + step))
        # the average of a constant 1 started at 0: everything but the share of the start it still keeps
        assert torch.allclose(ema["w"], torch.full((3,), 1.0 - kept), atol=1e-6), step
    assert kept < 0.9**25  # late batches keep the decay itself


def test_ema_weights_are_validated_selected_tested_and_resumed(tiny_root, tmp_path):
    extra = ("task.max_batches=6", "task.batch_size=2", "task.checkpoint_every=2", "task.ema_decay=0.8")
    # no selection: the test figures are the averaged weights', not the live ones'
    results = run_kg(tiny_cfg(tiny_root, tmp_path / "run", *extra, "task.select_best=false"))
    state = torch.load(tmp_path / "run" / CHECKPOINT, weights_only=False)
    cfg = tiny_cfg(tiny_root, None, *extra)
    task = load_task(kg_config(cfg))
    policy = build_policy(task, kg_config(cfg))
    assert set(state["ema"]) == {k for k, _ in policy.named_parameters()}
    assert any(not torch.equal(state["ema"][k], state["model"][k]) for k in state["ema"])
    policy.load_state_dict({**state["model"], **state["ema"]})
    policy.eval()
    averaged = evaluate_policy(policy, task, task.queries("test"), 2, 8)
    assert results["test"]["kg_walk/mrr"] == averaged["mrr"]
    assert evaluate_run(tmp_path / "run", splits=("test",))["test"]["kg_walk/mrr"] == averaged["mrr"]
    # selection on validation keeps the averaged weights of the best validation
    selected = run_kg(tiny_cfg(tiny_root, tmp_path / "sel", *extra, "task.eval_every=2"))
    best = torch.load(tmp_path / "sel" / CHECKPOINT, weights_only=False)["best"]
    assert selected["train"]["selected_batch"] == best["batch"]

    def kill_at_3(step: int) -> None:
        if step == 3:
            raise KeyboardInterrupt

    cut = tiny_cfg(tiny_root, tmp_path / "cut", *extra, "task.eval_every=2")
    with pytest.raises(KeyboardInterrupt):
        run_kg(cut, on_batch=kill_at_3)
    assert run_kg(cut)["test"] == selected["test"]  # the average is checkpointed and resumed too
    with pytest.raises(ValueError, match=r"task.ema_decay=1.0 must be null or in \(0, 1\)"):
        run_kg(tiny_cfg(tiny_root, None, "task.ema_decay=1.0"))


def test_a_probe_run_never_ranks_the_test_split(tiny_root, tmp_path, monkeypatch):
    """task.rank_test=false (experiments/kg_report.py --probe): the walker and every anchor are validated, and
    no test query reaches a ranking function (a spy records the query ids of every ranked batch)."""
    import signet_rl.kg.kge as kge
    import signet_rl.kg.trainer as trainer

    ranked: list[str] = []

    def spy(fn):
        def wrapped(*args, **kwargs):
            batch = next(a for a in (*args, *kwargs.values()) if hasattr(a, "ids") and hasattr(a, "known"))
            ranked.extend(batch.ids)
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(trainer, "evaluate_policy", spy(trainer.evaluate_policy))
    monkeypatch.setattr(trainer, "evaluate_scores", spy(trainer.evaluate_scores))
    monkeypatch.setattr(kge, "evaluate_scores", spy(kge.evaluate_scores))
    # and the one function every rank comes from, wherever it is called from (batch: its second argument)
    import signet_rl.kg.ranking as ranking

    filtered: list[str] = []

    def ranks_spy(fn):
        def wrapped(scores, batch):
            filtered.extend(batch.ids)
            return fn(scores, batch)
        return wrapped

    monkeypatch.setattr(ranking, "filtered_ranks", ranks_spy(ranking.filtered_ranks))
    monkeypatch.setattr(trainer, "filtered_ranks", ranks_spy(trainer.filtered_ranks))
    extra = ["task.max_batches=6", "task.anchors=[distmult]", "+task.anchor.epochs=3", "+task.anchor.dim=4",
             "task.eval_every=3"]
    results = run_kg(tiny_cfg(tiny_root, tmp_path / "probe", *extra, "task.rank_test=false"))
    assert results["test"] == {} and results["validation"]["kg_walk/n"] == 1
    assert "anchor_distmult/mrr" in results["validation"]
    assert ranked and {i.split(":")[0] for i in ranked} == {"validation"}
    assert filtered and {i.split(":")[0] for i in filtered} == {"validation"}
    ranked.clear()
    filtered.clear()
    full = run_kg(tiny_cfg(tiny_root, tmp_path / "full", *extra))  # the counter does see test rankings
    assert full["test"]["kg_walk/n"] == 1 and "test:0" in ranked and "test:0" in filtered
