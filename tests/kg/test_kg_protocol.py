"""experiments/kg_protocol.py: probes never rank test, a recipe is frozen from validation before any test run,
final runs use only frozen recipes on fresh seeds, and the table puts published rows beside their setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from experiment_script import load_experiment  # tests/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\nc\tr1\te\nb\tr1\te\ne\tr2\ta\n"


def _load():
    return load_experiment("kg_protocol")


@pytest.fixture()
def env(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "kg" / "tinykg"
    folder.mkdir(parents=True)
    splits = {
        "graph": GRAPH,
        "train": "a\tr3\tc\na\tr1\tb\nb\tr3\te\nd\tr3\ta\n",
        "dev": "d\tr3\te\n",
        "test": "b\tr3\tc\nc\tr3\tb\n",
    }
    for name, text in splits.items():
        (folder / f"{name}.txt").write_text(text)
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("SIGNET_RL_SMOKE", "1")  # a second of training per run, no anchors
    return tmp_path


def test_probe_freeze_final_and_report(env):
    kp = _load()
    ledger, runs = env / "ledger", env / "runs"
    kw = {"ledger": ledger}
    book = kp.probe(["tinykg"], "minerva", ["shaped"], [0], 1.0, runs=runs / "probe", **kw)
    (entry,) = book.values()
    assert entry["validation"]["kg_walk/n"] == 1 and "test" not in entry
    # a generic folder gets the generic structure; the minerva setting keeps the graph file as given
    assert kp.probe_overrides("tinykg", "minerva", "shaped", 0, 1.0)[1:4] == [
        "dataset.path_length=3",
        "dataset.max_actions=200",
        "dataset.inverse=null",
    ]
    missing = r"tinykg@minerva: no frozen recipe in .*frozen.json \(frozen: none\)"
    with pytest.raises(FileNotFoundError, match=missing):
        kp.final(["tinykg"], "minerva", (10,), runs=runs / "final", **kw)
    with pytest.raises(ValueError, match=r"no finished probe of recipe 'likelihood'"):
        kp.freeze("tinykg@minerva", "likelihood", **kw)
    with pytest.raises(ValueError, match=r"unknown setting 'other'; expected one of: minerva, multihopkg"):
        kp.freeze("tinykg@other", "shaped", **kw)
    kp.freeze("tinykg@minerva", "shaped", **kw)
    saved = kp.frozen_recipe("tinykg@minerva", ledger)
    assert saved["recipe"] == "shaped" and "dataset.inverse=null" in saved["overrides"]
    assert saved["probe_seeds"] == [0] and 0.0 <= saved["validation"]["mrr"] <= 1.0
    final = kp.final(["tinykg"], "minerva", (10, 11), runs=runs / "final", **kw)
    assert sorted(final) == ["tinykg@minerva-s10", "tinykg@minerva-s11"]
    assert all(e["test"]["kg_walk/n"] == 2 for e in final.values())
    with pytest.raises(ValueError, match=r"final runs with test figures exist .*chosen with test in view"):
        kp.freeze("tinykg@minerva", "shaped", **kw)
    table = kp.report(ledger)
    assert "| tinykg | minerva | walker (shaped) | 10, 11 |" in table
    # the query bootstrap ranks each final run again: the ranks reproduce the ledger's test MRR (it raises
    # otherwise) and the interval appears beside the seed sd, for exactly these runs
    kb = _load_bootstrap()
    boot = kb.run(None, ledger, runs / "final")
    assert boot["tinykg@minerva"]["runs"] == ["tinykg@minerva-s10", "tinykg@minerva-s11"]
    lo, hi = boot["tinykg@minerva"]["ci95"]
    cell = f"| [{100 * lo:.1f}, {100 * hi:.1f}] |"
    assert cell in kp.report(ledger)
    boot["tinykg@minerva"]["runs"] = ["tinykg@minerva-s10"]  # stale: other seeds than the table's
    kp._write(ledger, kp.BOOTSTRAP, boot)
    assert cell not in kp.report(ledger)


def _load_bootstrap():
    return load_experiment("kg_bootstrap")


def test_the_query_bootstrap_resamples_queries_alike_for_every_seed():
    kb = _load_bootstrap()
    inf = float("inf")
    assert kb.interval([[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]) == (0.5, 0.5)
    # per query, the mean over seeds of 1/rank is 1, 0.75, 0.5, 0.5: every resample's mean lies in [0.5, 1]
    lo, hi = kb.interval([[1.0, 1.0, 2.0, inf], [1.0, 2.0, 2.0, 1.0]])
    assert 0.5 <= lo < 0.6875 < hi <= 1.0
    # the same queries four times over: the same centre, a narrower interval
    lo4, hi4 = kb.interval([[1.0, 1.0, 2.0, inf] * 4, [1.0, 2.0, 2.0, 1.0] * 4])
    assert lo < lo4 < 0.6875 < hi4 < hi
    with pytest.raises(ValueError, match=r"every seed must rank the same queries; got \[2, 3\] queries"):
        kb.interval([[1.0, 2.0], [1.0, 2.0, 3.0]])


def test_published_rows_sit_beside_their_own_setting(env):
    kp = _load()
    ledger = env / "ledger"
    run = {
        "dataset": "umls",
        "recipe": "shaped",
        "seed": 10,
        "budget_s": 1.0,
        "validation": {},
        "timing": {"wall_s": 60.0},
        "test": {f"kg_walk/{m}": 0.5 for m in kp.METRICS},
    }
    kp._write(
        ledger,
        kp.FINAL,
        {
            "umls@minerva-s10": {**run, "setting": "minerva"},
            "umls@multihopkg-s10": {**run, "setting": "multihopkg"},
        },
    )
    rows = [r for r in kp.report(ledger).splitlines() if "(published)" in r]
    assert [r.split(" | ")[1:3] for r in rows] == [
        ["minerva", "MINERVA (published)"],
        ["multihopkg", "MultiHopKG (ConvE) (published)"],
        ["multihopkg", "MultiHopKG (ComplEx) (published)"],
        ["multihopkg", "ComplEx (published)"],
    ]


def test_the_freeze_rule_takes_validation_mrr_then_hits1_then_the_first_listed(env):
    kp = _load()
    ledger = env / "ledger"

    def probe(recipe: str, seed: int, mrr: float, h1: float) -> dict:
        return {
            "dataset": "tinykg",
            "setting": "minerva",
            "recipe": recipe,
            "seed": seed,
            "budget_s": 1.0,
            "validation": {"kg_walk/mrr": mrr, "kg_walk/hits@1": h1},
            "timing": {},
        }

    kp._write(
        ledger,
        kp.PROBES,
        {
            "a0": probe("a", 0, 0.80, 0.70),
            "a1": probe("a", 1, 0.90, 0.70),  # mean MRR 0.85
            "b0": probe("b", 0, 0.85, 0.75),  # same MRR, higher H@1
            "c0": probe("c", 0, 0.85, 0.75),  # a full tie with b
            "d0": {**probe("d", 0, 0.99, 0.99), "setting": "multihopkg"},  # another setting: not a candidate
        },
    )
    assert kp.best_probe("tinykg@minerva", ["a", "b", "c", "d"], ledger) == "b"
    assert kp.best_probe("tinykg@minerva", ["c", "b"], ledger) == "c"  # the tie goes to the first listed
    assert kp.best_probe("tinykg@minerva", ["a", "missing"], ledger) == "a"
    with pytest.raises(ValueError, match=r"^tinykg@minerva: no finished probe of any candidate \(d, e\) in "):
        kp.best_probe("tinykg@minerva", ["d", "e"], ledger)


def test_a_probe_skips_the_anchors_only_for_a_recipe_whose_walker_reads_none():
    kp = _load()
    assert kp.uses_anchor("shaped") and kp.uses_anchor("warm_dropout_ema")
    assert not kp.uses_anchor("likelihood_relations")
    overrides = kp.probe_overrides("nell-995", "minerva", "likelihood_relations", 0, 9.0, skip_anchors=True)
    assert overrides[-2:] == ["task.rank_test=false", "task.anchors=[]"]
    assert "task.anchors=[]" not in kp.probe_overrides("nell-995", "minerva", "likelihood_relations", 0, 9.0)
    with pytest.raises(ValueError, match=r"^recipe 'shaped' shapes with or starts from an in-run anchor"):
        kp.probe_overrides("kinship", "minerva", "shaped", 0, 9.0, skip_anchors=True)


def test_a_setting_with_the_same_walking_graph_shows_the_other_settings_runs_labelled(env, capsys):
    kp = _load()
    ledger, data = env / "ledger", env / "data"
    closed = data / "kg" / "closedkg"  # Kinship's shape: the graph file holds every inverse edge
    closed.mkdir(parents=True)
    (closed / "graph.txt").write_text("a\tr1\tb\nb\t_r1\ta\nb\tr2\tc\nc\t_r2\tb\n")
    for name, text in {"train": "a\tr1\tb\n", "dev": "b\tr2\tc\n", "test": "c\t_r2\tb\n"}.items():
        (closed / f"{name}.txt").write_text(text)
    frozen = {"recipe": "shaped", "budget_s": 1.0, "overrides": [], "validation": {}, "probe_seeds": [0]}
    run = {
        "recipe": "shaped",
        "budget_s": 1.0,
        "validation": {},
        "timing": {"wall_s": 60.0},
        "setting": "minerva",
    }
    test = {f"{m}/{k}": 0.5 for m in ("kg_walk", "anchor_complex") for k in kp.METRICS}
    kp._write(ledger, kp.FROZEN, {f"{d}@minerva": frozen for d in ("closedkg", "tinykg")})
    kp._write(
        ledger,
        kp.FINAL,
        {
            f"{d}@minerva-s10": {**run, "dataset": d, "seed": 10, "test": test}
            for d in ("closedkg", "kinship")
        },
    )
    with pytest.raises(
        ValueError, match=r"^tinykg@multihopkg and tinykg@minerva walk different graphs \(seed 10: "
    ):
        kp.same_runs("tinykg@multihopkg", "tinykg@minerva", ledger, root=data, seeds=(10,))
    with pytest.raises(
        ValueError, match=r"^closedkg@minerva: a recipe is frozen for it \(shaped\); it runs its own"
    ):
        kp.same_runs("closedkg@minerva", "closedkg@multihopkg", ledger, root=data)
    entry = kp.same_runs("closedkg@multihopkg", "closedkg@minerva", ledger, root=data, seeds=(10,))
    assert entry["same_runs_as"] == "closedkg@minerva" and entry["recipe"] == "shaped"
    assert kp.final(["closedkg"], "multihopkg", (10,), runs=env / "runs", ledger=ledger).keys() == {
        "closedkg@minerva-s10",
        "kinship@minerva-s10",
    }
    assert "closedkg@multihopkg: the same runs as closedkg@minerva" in capsys.readouterr().out
    table = kp.report(ledger)
    label = "same runs as minerva: identical walking graph"
    assert f"| closedkg | multihopkg | walker (shaped; {label}) | 10 | 50.0 | 50.0 | 50.0 | 50.0 |" in table
    assert f"| closedkg | multihopkg | complex (in-run anchor; {label}) | 10 |" in table
    assert "| closedkg | minerva | walker (shaped) | 10 |" in table
    assert "| kinship | multihopkg |" not in table  # no same_runs entry: no borrowed row
