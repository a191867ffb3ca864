"""Smoke tests: each script under experiments/ runs tiny and writes what it promises."""

from __future__ import annotations

import json
import re

import pytest
from experiment_script import load_experiment


def test_flat_baseline_report_writes_its_section_between_markers(tmp_path, capsys):
    report = load_experiment("flat_baseline_report")
    out = tmp_path / "results.md"
    out.write_text("# Results\n\nkept above\n")
    report.main(
        ["--fast", "--sections", "synthetic", "--synthetic", "synthetic:tiny:0", "--output", str(out)]
    )
    text = out.read_text()
    assert text.startswith("# Results\n\nkept above\n")
    assert text.count(report.START) == 1 and text.count(report.END) == 1
    assert text.count("<!-- synthetic:start -->") == 1
    assert "flat_signet_uncapped" in text and "synthetic:tiny:0" in text
    # another section lands beside it; rerunning one section replaces only that section
    out.write_text(
        text.replace(
            "<!-- synthetic:end -->",
            "<!-- synthetic:end -->\n<!-- other:start -->\nkeep me\n<!-- other:end -->",
        )
    )
    # another protocol (another dataset) replaces a committed section only when asked to
    args = ["--fast", "--sections", "synthetic", "--synthetic", "synthetic:tiny:1", "--output", str(out)]
    report.main([*args, "--scratch-dir", str(tmp_path / "scratch")])
    assert "synthetic:tiny:1" not in out.read_text()
    assert "synthetic:tiny:1" in (tmp_path / "scratch" / "results.md").read_text()
    report.main([*args, "--replace"])
    text = out.read_text()
    assert text.count(report.START) == 1 and "synthetic:tiny:1" in text and "synthetic:tiny:0" not in text
    assert "keep me" in text and text.count("<!-- synthetic:start -->") == 1


def test_desire_report_runs_tiny_with_the_candidate_ceiling(tmp_path):
    report = load_experiment("desire_report")
    out = tmp_path / "results.md"
    body = report.main(["--dataset", "synthetic:tiny:0", "--n-boot", "50", "--output", str(out)])
    names = (
        "best_flat", "flat_signet_uncapped", "flat_signet ", "desire_prior", "desire_ppr", "desire_random"
    )
    for name in (*names, "candidate_ceiling"):
        assert name in body
    text = out.read_text()
    assert text.count(report.START) == 1 and text.count(report.END) == 1


def test_desire_report_reads_the_dataset_configs_hybrid_block(tmp_path):
    report = load_experiment("desire_report")
    (tmp_path / "locomo.yaml").write_text("spec: locomo\nhybrid:\n  floor_share: 0.6\n  walk_paths: 24\n")
    (tmp_path / "musique.yaml").write_text("spec: musique\n")
    assert report.configured_traversal("locomo", tmp_path) == {"floor_share": 0.6, "walk_paths": 24}
    assert report.configured_traversal("musique", tmp_path) == {}
    assert report.configured_traversal("signet:/some/store.db", tmp_path) == {}


def _kg_results(mrr: float, train_s: float, anchor: float | dict | None = None) -> dict:
    metrics = {"hits@1": mrr - 0.1, "hits@3": mrr, "hits@10": mrr + 0.1, "mrr": mrr}
    anchors = anchor if isinstance(anchor, dict) else {}
    if isinstance(anchor, float):
        anchors = {"anchor_complex/mrr": anchor, "anchor_complex/hits@1": anchor}
    return {
        "path_length": 2,
        "test": {**{f"kg_walk/{k}": v for k, v in metrics.items()}, **anchors},
        "validation": {"kg_walk/mrr": mrr},
        "timing": {"train_s": train_s, "wall_s": train_s + 60.0},
    }


def test_kg_report_rebuilds_its_table_from_the_committed_ledger(tmp_path):
    import json

    report = load_experiment("kg_report")
    runs, ledger = tmp_path / "runs", tmp_path / "ledger"
    for seed, mrr in ((0, 0.80), (1, 0.84)):
        folder = runs / f"kinship-warm-s{seed}"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(_kg_results(mrr, 1200.0, anchor=0.5 + seed / 10)))
    # seed 0 also ran the shaped recipe: its anchor figures are taken once, from that run
    (runs / "kinship-shaped-s0").mkdir()
    (runs / "kinship-shaped-s0" / "results.json").write_text(json.dumps(_kg_results(0.7, 1200.0, 0.9)))
    ledger.mkdir()
    kept = "| umls | ours: walker, unshaped, last step by log-likelihood | 3 | 1 | 2 | 3 | 4 | 5 / 6 |"
    # an anchor row of more seeds than the ledger holds stays; one of fewer is replaced
    kept_anchor = "| umls | DistMult (in-run anchor) | 3 | 1 | 2 | 3 | 4 | 5 / 6 |"
    stale_anchor = "| kinship | ComplEx (in-run anchor) | 1 | 0 | 0 | 0 | 0 | 0 / 0 |"
    (runs / "umls-warm-s0").mkdir(parents=True)
    (runs / "umls-warm-s0" / "results.json").write_text(
        json.dumps(_kg_results(0.7, 1200.0, {"anchor_distmult/mrr": 0.5}))
    )
    stale = "| kinship | ours: stale warm row | 3 | 0 | 0 | 0 | 0 | 0 / 0 |"
    (ledger / report.BEFORE_LEDGER).write_text(
        json.dumps(
            {
                "rows": [
                    {"dataset": "umls", "key": "kg_walk:likelihood", "row": kept},
                    {"dataset": "kinship", "key": "kg_walk:warm", "row": stale},
                    {"dataset": "umls", "key": "anchor_distmult", "row": kept_anchor},
                    {"dataset": "kinship", "key": "anchor_complex", "row": stale_anchor},
                ]
            }
        )
    )
    body = report.report(runs, ledger)
    # each finished run is copied into the ledger; the table is built from the copies
    copied = json.loads((ledger / report.LEDGER_RUNS).read_text())
    assert list(copied) == ["kinship-shaped-s0", "kinship-warm-s0", "kinship-warm-s1", "umls-warm-s0"]
    assert copied["kinship-warm-s1"]["test"]["kg_walk/mrr"] == 0.84
    assert report.sync_ledger(runs, ledger) == []  # nothing new to copy
    assert kept_anchor in body and stale_anchor not in body
    anchor = next(line for line in body.splitlines() if "ComplEx (in-run anchor)" in line)
    # seed 0 from its shaped run (0.9), seed 1 from its warm run (0.6)
    assert anchor.split(" | ")[1:4] == ["ComplEx (in-run anchor)", "2", "75.0 ± 21.2"]
    row = next(line for line in body.splitlines() if "started from the ComplEx anchor" in line)
    assert row == (
        "| kinship | ours: walker, ComplEx-shaped, exact last step, started from the ComplEx anchor's "
        "vectors | 2 | 72.0 ± 2.8 | 82.0 ± 2.8 | 92.0 ± 2.8 | 82.0 ± 2.8 | 20.0 / 21.0 |"
    )
    assert stale not in body  # the ledger's own row replaces the one kept from before it
    assert kept in body
    assert "| kinship | MINERVA (published) | – | 60.5 | – | 92.4 | 72.0 | GPU, far longer |" in body
    # with the run folders gone (a clean checkout) the ledger alone gives the same table
    for path in runs.glob("*/results.json"):
        path.unlink()
    assert report.report(runs, ledger) == body


def test_neighbour_vote_ranks_by_the_neighbours_regions_on_a_hand_built_graph(tmp_path, capsys):
    vote = load_experiment("neighbour_vote")
    folder = tmp_path / "kg" / "countries_toy"
    folder.mkdir(parents=True)
    # q borders a, b (in s1) and c (in s2); s1 and s2 lie in region R; p borders nobody with a region
    graph = [
        ("q", "neighborOf", "a"), ("q", "neighborOf", "b"), ("q", "neighborOf", "c"),
        ("a", "locatedIn", "s1"), ("b", "locatedIn", "s1"), ("c", "locatedIn", "s2"),
        ("s1", "locatedIn", "R"), ("s2", "locatedIn", "R"), ("p", "neighborOf", "q"),
        ("w", "neighborOf", "a"), ("w", "neighborOf", "c"),
    ]  # fmt: skip
    (folder / "graph.txt").write_text("".join("\t".join(t) + "\n" for t in graph))
    (folder / "train.txt").write_text("a\tlocatedIn\ts1\nc\tlocatedIn\ts2\nb\tlocatedIn\ts1\n")
    (folder / "dev.txt").write_text("w\tlocatedIn\ts2\n")
    (folder / "test.txt").write_text("q\tlocatedIn\ts2\np\tlocatedIn\ts1\n")
    votes = vote.neighbour_votes(graph, "q", "locatedIn", {"s1", "s2"})
    assert votes == {"s1": 2, "s2": 1}  # R is reached too, but no training query has it as a tail
    assert vote.expected_reciprocal_rank(votes, "s2") == 0.5
    assert vote.expected_reciprocal_rank(votes, "s2", others=["s1"]) == 1.0  # filtered
    assert vote.expected_reciprocal_rank({"s1": 1, "s2": 1}, "s2") == 0.75  # a tie: rank 1 or 2
    assert vote.expected_reciprocal_rank(votes, "R") == 0.0
    out = tmp_path / "vote.json"
    vote.main(["--data-root", str(tmp_path), "--output", str(out)])  # finds countries_* by itself
    got = json.loads(out.read_text())
    # q: s2 second behind s1 (0.5); p: its one neighbour q has no locatedIn edge, so no vote (0)
    summary = [(r["folder"], r["queries"], r["mrr"], r["hits@1"]) for r in got]
    assert summary == [("countries_toy", 2, 25.0, 0.0)]
    assert [x["answer"] for x in got[0]["not_first"]] == ["s2", "s1"]
    assert "countries_toy [test] 2 queries: MRR 25.0, H@1 0.0" in capsys.readouterr().out
    dev = vote.vote_split("countries_toy", "validation", str(tmp_path))
    # w borders a (s1) and c (s2): a tie
    assert (dev["mrr"], dev["hits@1"]) == (75.0, 0.0)


def test_best_flat_chooses_on_validation_freezes_and_checks(tmp_path, capsys):
    """Tiny settings: every trial prints a validation figure (never a test one), the best is frozen with its
    figures, --check reruns it, and a frozen figure that does not match a rerun is an error naming it."""
    script = load_experiment("best_flat")
    out = tmp_path / "best_flat.yaml"
    body = script.main(["--families", "synthetic", "--synthetic", "synthetic:tiny:0", "--encoders", "hashing",
                        "--output", str(out)])  # fmt: skip
    printed = capsys.readouterr().out
    entry = body["families"]["synthetic"]
    assert entry["trials"] == 13 and printed.count("needed_recall@2000") >= 13
    assert (entry["split"], entry["queries"], entry["dataset"]) == ("validation", 16, "synthetic:tiny:0")
    assert entry["options"] == {"version": 2}  # the reports' generator version, reloaded by --check
    assert not any("test" in line.lower() for line in printed.splitlines() if not line.startswith("wrote "))
    assert body["script_version"] == script.SCRIPT_VERSION
    best = entry["validation"]["needed_recall@2000"]
    figures = [float(m.group(1)) for m in re.finditer(r"\] needed_recall@2000 ([0-9.]+)", printed)]
    assert len(figures) == 13
    assert best == max(figures)
    # the frozen file resolves and reruns to the same figures
    from signet_rl.retrieval.flat import best_flat

    assert best_flat("synthetic:tiny:0", out).name == "best_flat"
    assert script.check(out)["synthetic"] == entry["validation"]
    # a frozen figure that a rerun does not reproduce
    text = out.read_text()
    out.write_text(text.replace(f"needed_recall@2000: {best}", "needed_recall@2000: 0.9999"))
    with pytest.raises(ValueError) as err:
        script.main(["--check", "--output", str(out)])
    assert str(err.value) == (
        f"{out}: families.synthetic.validation.needed_recall@2000 is 0.9999 but a rerun of "
        f"{script.label(entry['variant'], entry['params'])} on synthetic:tiny:0 validation gives {best}; the "
        "data or the code changed since it was frozen: rerun python experiments/best_flat.py --families "
        "synthetic and commit the new choice"
    )
    with pytest.raises(ValueError, match=r"no frozen choice for family 'locomo'; frozen: synthetic$"):
        script.check(out, ["locomo"])


def test_the_locomo_figures_beside_dragon_search_dialog_turns_only(tmp_path):
    """DRAGON searched dialog turns: the R@k placed beside it comes from a pool without observations."""
    from signet_rl.datasets.locomo import load_locomo

    report = load_experiment("flat_baseline_report")
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I met Jane Doe at the Louvre."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice weather in Oslo today."},
    ]
    sample = {
        "sample_id": "mini-1",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns,
                         "session_1_date_time": "1:56 pm on 8 May, 2023"},
        "observation": {
            "session_1_observation": {"Ann": [["Ann met Jane Doe at the Louvre museum.", "D1:1"]]}
        },
        "qa": [{"question": "Where did Ann meet Jane Doe?", "answer": "Louvre", "evidence": ["D1:1"],
                "category": 4}],
    }  # fmt: skip
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "mini.json").write_text(json.dumps([sample]))
    ds = load_locomo(tmp_path, observations=True)  # the full pool: turns and observations
    kinds = {}
    for name, data in (("full", ds), ("turns", report.turns_only(ds))):
        retriever = report.flat_variant("flat_signet", encoder="hashing", **report.UNCAPPED)
        retriever.index(data)
        kinds[name] = {u.kind for u in retriever.retrieve(ds.queries[0])}
    assert kinds == {"full": {"memory", "attribute"}, "turns": {"memory"}}
    assert ds.meta["pool_attribute_aspects"] == ["observations"]  # the dataset itself is left as it was


@pytest.mark.slow
def test_drift_recovery_and_prewarm_compare_run_tiny(tmp_path, capsys):
    drift = load_experiment("drift_recovery")
    assert drift.main(["--preset", "tiny", "--scorer", "linucb", "--out", str(tmp_path / "drift")]) == 0
    summary = json.loads((tmp_path / "drift" / "tiny-linucb-all-seed11" / "summary.json").read_text())
    assert set(summary) == {"none", "fixed", "regulated", "frozen", "oracle"}
    assert summary["none"]["explorers_after"] == 0 and summary["fixed"]["explorers_after"] > 0
    assert summary["frozen"]["queries"] == summary["fixed"]["post_drift_rated"]
    prewarm = load_experiment("prewarm_compare")
    assert prewarm.main(["--preset", "tiny", "--out", str(tmp_path / "prewarm")]) == 0
    shares = json.loads((tmp_path / "prewarm" / "tiny-seed11" / "summary.json").read_text())
    assert set(shares) == {"prewarm", "prewarm_timeless", "signet"}
    assert all(0 <= v["share_mean"] <= 1 and v["mean_chars"] <= 600 for v in shares.values())


def test_emergence_report_runs_tiny(tmp_path):
    report = load_experiment("emergence_report")
    common = ["--preset", "tiny", "--encoder", "hashing", "--epochs", "1", "--out", str(tmp_path),
              "--cache", str(tmp_path / "cache")]
    with pytest.raises(SystemExit):
        report.main(["--part", "principles", "--seed", str(report.VAL_SEEDS[0]), *common])  # must differ
    out = report.main(["--part", "principles", "--seed", "3", *common])
    assert out["planted"]["planted"] == 5 and out["control"]["planted"] == 0
    assert out["control"]["matching"] == 0 and out["control"]["recall"] is None  # nothing planted to match
    p = out["planted"]
    assert p["matching"] + round(p["spurious_share"] * p["detected"]) == p["detected"]
    assert out["chosen"]["min_communities"] == 3
    saved = json.loads((tmp_path / "principles-tiny-3.json").read_text())
    assert saved["planted"] == out["planted"] and saved["val_seed"] == list(report.VAL_SEEDS)


@pytest.mark.slow
def test_emergence_report_bridges_and_pruning_run_tiny(tmp_path):
    report = load_experiment("emergence_report")
    common = ["--preset", "tiny", "--encoder", "hashing", "--epochs", "1", "--out", str(tmp_path),
              "--cache", str(tmp_path / "cache")]
    bridges = report.main(["--part", "bridges", "--seed", "3", *common])
    assert bridges["planted"]["planted"] >= 2 and bridges["control"]["planted"] == 0
    trained = report.main(["--part", "bridges-trained", "--seed", "3", *common,
                           "--chosen-from", str(tmp_path / "bridges-tiny-3.json"),
                           "--out", str(tmp_path / "t")])
    assert trained["chosen"] == bridges["chosen"] and trained["control"]["promoted_true"] == 0
    assert trained["planted"]["explorer_slots"] > 0  # the explorer slot ran inside the training loop
    signals = report.main(["--part", "pruning-signals", "--seed", "3", *common])
    assert set(signals) >= {f"validation_{s}" for s in report.VAL_SEEDS}
    assert "noise" in signals[f"validation_{report.VAL_SEEDS[0]}"]["entities"]
    pruning = report.main(["--part", "pruning", "--seed", "3", *common, "--rediscover",
                           "--save-plans", str(tmp_path / "plans")])
    assert pruning["control"]["chosen"]["noise"] == 0
    assert pruning["planted"]["unused_and_sick"]["pruned"] >= pruning["planted"]["chosen"]["pruned"]
    # the period after pruning, with explorers into cold territory: restores replayed on the store copy
    red = pruning["planted"]["unused_and_sick"]["rediscovery"]
    assert red["after"]["queries"] > 0 and red["cold_paths_shown"] >= 1
    # every +1 restores (the entity leaves the frontier, so no second +1 can reach it), and nothing else does;
    # on the validation seed the chosen point restores at least one needed entity (tiny seed 3's reporting
    # period has only 1-2 explorer slots, so it may restore none)
    rows = pruning["rediscover"]["validation"]
    for f in [red, pruning["control"]["unused_and_sick"]["rediscovery"], *rows]:
        assert f["restored"] == f["cold_paths_positive"] <= f["cold_paths_rated"] <= f["cold_paths_shown"]
    chosen = next(r for r in rows if all(r[k] == pruning["rediscover"][k]
                                         for k in ("reach", "min_similarity", "max_misses")))
    assert chosen["delivered_by_cold_explorer"] == max(r["delivered_by_cold_explorer"] for r in rows) >= 1
    assert chosen["restored"] >= 1 and chosen["restored_needed_later"] >= 1
    assert pruning["rediscover"]["reach"] in ("walk", "frontier")
    assert (tmp_path / "plans" / "plan-tiny-3-planted-unused_and_sick.json").is_file()


@pytest.mark.slow
def test_emergence_report_value_principles_run_tiny(tmp_path):
    import numpy as np

    report = load_experiment("emergence_report")
    common = ["--preset", "tiny", "--version", "3", "--encoder", "hashing", "--out", str(tmp_path),
              "--cache", str(tmp_path / "cache")]
    out = report.main(["--part", "principles-value", "--seed", "3", *common])
    assert set(out["chosen"]) >= {"stem_prefix", "max_df", "min_z"} and out["chosen"]["min_communities"] == 3
    assert out["planted"]["planted"] == 5 and out["control"]["planted"] == 0
    assert out["control"]["matching"] == 0
    points = int(np.prod([len(v) for v in report.VALUE_GRID.values()]))
    assert len(out["validation"]) == len(report.VAL_SEEDS) * points  # every grid point on each seed
    real = report.main(["--part", "principles-real", "--seed", "3", *common, "--dataset", "synthetic:tiny:3",
                        "--chosen-from", str(tmp_path / "principles-value-tiny-3-v3.json")])
    assert real["chosen"] == out["chosen"] and set(real["graphs"]) == {"main"}


@pytest.mark.slow
def test_emergence_report_embedding_principles_run_tiny_on_v4(tmp_path):
    import numpy as np

    report = load_experiment("emergence_report")
    common = ["--preset", "tiny", "--version", "4", "--encoder", "hashing", "--out", str(tmp_path),
              "--cache", str(tmp_path / "cache")]
    out = report.main(["--part", "principles-embed", "--seed", "3", *common])
    assert set(out["chosen"]) >= {"second_order", "share_veto", "k", "min_similarity"}
    assert out["planted"]["planted"] == 5 and out["control"]["planted"] == 0
    points = int(np.prod([len(v) for v in report.EMBED_GRID.values()]))
    assert len(out["validation"]) == len(report.VAL_SEEDS) * points  # every grid point on each seed
    # what was found is labelled for reading: a planted value, a decoy, or another category
    labels = {what for f in out["planted"]["found"] + out["control"]["found"] for _, what in f["evidence"]}
    assert all(w.startswith(("principle:", "topic_decoy:", "near_miss:")) or ":" not in w for w in labels)
    again = report.main(["--part", "principles-embed", "--seed", "3", *common, "--out", str(tmp_path / "b"),
                         "--chosen-from", str(tmp_path / "principles-embed-tiny-3-v4.json")])
    assert again["chosen"] == out["chosen"] and again["planted"] == out["planted"]  # deterministic
    real = report.main(["--part", "principles-real", "--seed", "3", *common, "--dataset", "synthetic:tiny:3",
                        "--chosen-from", str(tmp_path / "principles-embed-tiny-3-v4.json")])
    assert real["detector"] == "detect_embedding_principles" and set(real["graphs"]) == {"main"}


@pytest.mark.slow
def test_drift_recovery_needs_a_chosen_drop_at_for_a_regulated_run(tmp_path, capsys, monkeypatch):
    drift = load_experiment("drift_recovery")
    assert drift.DROP_AT[4] == 0.2 and drift.DRIFT_DOMAINS[4] == 3  # v4's validation choices
    monkeypatch.delitem(drift.DROP_AT, 4)  # as before v4's drop_at was chosen
    with pytest.raises(SystemExit):
        drift.main(["--preset", "tiny", "--version", "4", "--out", str(tmp_path)])
    assert ("error: no drop_at chosen for version 4: run --tune --stream train --version 4 on the validation "
            "seed and pass --drop-at") in capsys.readouterr().err


def test_emergence_report_matches_principles_against_planted_facts_only():
    """A bug: a NaN label (an attribute of no principle) counted as a principle name to match."""
    from types import SimpleNamespace as NS

    import numpy as np
    import pandas as pd

    report = load_experiment("emergence_report")
    lab = pd.DataFrame({"attribute_id": ["a", "b", "c", "d"],
                        "principle": ["privacy", "privacy", np.nan, None]})
    ds = NS(truth=NS(labels={"attributes": lab}))
    found = [NS(evidence=[{"attribute_id": "a"}, {"attribute_id": "b"}, {"attribute_id": "c"}]),
             NS(evidence=[{"attribute_id": "c"}, {"attribute_id": "d"}])]
    assert report.principle_scores(ds, found) == {"planted": 1, "detected": 2, "matching": 1,
                                                  "precision": 0.5, "recall": 1.0, "spurious_share": 0.5}

def test_the_flat_tables_of_locomo_and_musique_name_flat_signet_beside_best_flat():
    """Issue 23: every headline table names best_flat and flat_signet under its own caps (unpaired)."""
    report = load_experiment("flat_baseline_report")
    found = report.flat_retrievers(report.Settings(encoders=("hashing",)), [])
    assert list(found) == ["flat_signet_uncapped[hashing]", "flat_signet (own caps, unpaired)"]
    own = found["flat_signet (own caps, unpaired)"]
    assert own.name == "flat_signet (own caps, unpaired)"
    assert (own.max_results, own.importance_min) == (5, 0.3)  # Signet's own caps and filter, not UNCAPPED


def test_hybrid_learned_report_says_where_the_learned_slate_came_from(tmp_path, monkeypatch):
    mod = load_experiment("hybrid_learned_report")
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    head = "query_id,retriever,category,n_needed,needed_recall,precision,recall@5,walk_share"
    for seed, (walk, rest, deep) in ((0, (0.2, 0.4, 0.1)), (1, (0.0, 0.6, 0.3))):
        art = tmp_path / "runs" / "report" / f"locomo-linucb-s{seed}" / "artifacts"
        art.mkdir(parents=True)
        rows = [f"q1,learned,multi-hop,1,1.0,0.1,1.0,{walk},{rest},{deep}",
                "q1,best_flat,multi-hop,1,1.0,0.1,1.0,,,",
                "q2,learned,temporal,0,0.0,0.0,0.0,0.9,0.9,0.9"]  # fmt: skip
        text = head + ",floor_rest_share,floor_deep_share\n" + "\n".join(rows) + "\n"
        (art / "per_query.csv").write_text(text)
    old = tmp_path / "runs" / "report" / "locomo-gnn-s0" / "artifacts"
    old.mkdir(parents=True)
    (old / "per_query.csv").write_text(head + "\nq1,learned,multi-hop,1,1.0,0.1,1.0,0.25\n")
    out = mod.shares("locomo", ["linucb"], [0, 1]).splitlines()[-1]
    # q1's shares are the mean over the two seeds; q2 (nothing needed) is left out, as in the table
    assert out == "| linucb | 0.100 | 0.500 | 0.200 | 0.400 |"
    old_run = mod.shares("locomo", ["gnn"], [0]).splitlines()[-1]
    assert old_run == "| gnn | 0.250 | not recorded | not recorded | – |"


def test_hybrid_learned_report_pairs_two_recipes_learned_rows_per_query(tmp_path, monkeypatch):
    mod = load_experiment("hybrid_learned_report")
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    head = "query_id,retriever,category,n_needed,needed_recall,precision,recall@5,walk_share"
    # scorer a beats b by 0.5 on q1 (multi-hop) and ties on q2; q3 only a drew (left out)
    for scorer, values in (("a", {"q1": 1.0, "q2": 0.5, "q3": 0.0}), ("b", {"q1": 0.5, "q2": 0.5})):
        art = tmp_path / "runs" / "report" / f"locomo-{scorer}-s0" / "artifacts"
        art.mkdir(parents=True)
        cats = {"q1": "multi-hop", "q2": "temporal", "q3": "temporal"}
        rows = [f"{q},learned,{cats[q]},1,{v},0.1,{v},0.0" for q, v in values.items()]
        rows += [f"{q},best_flat,{cats[q]},1,0.0,0.1,0.0," for q in values]
        (art / "per_query.csv").write_text(head + "\n" + "\n".join(rows) + "\n")
    out = mod.versus("locomo", "a", "b", [0], "multi-hop")
    assert out.startswith("a − b: +0.250 [")
    assert out.endswith("over 2 queries; multi-hop +0.500 [+0.500, +0.500] (1)")


def test_hybrid_learned_report_pairs_learned_with_best_flat_per_query(tmp_path, monkeypatch):
    mod = load_experiment("hybrid_learned_report")
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    # two seeds; q1 and q2 multi-hop; learned beats best_flat by 0.5 on q1 (both seeds), ties elsewhere
    for seed, extra in ((0, 0.5), (1, 0.5)):
        art = tmp_path / "runs" / "report" / f"locomo-linucb-s{seed}" / "artifacts"
        art.mkdir(parents=True)
        rows = []
        for q, cat, flat in (("q1", "multi-hop", 0.0), ("q2", "multi-hop", 1.0), ("q3", "temporal", 0.5)):
            for r, v in (("best_flat", flat), ("learned", flat + (extra if q == "q1" else 0.0))):
                rows.append(f"{q},{r},{cat},1,{v},0.1,{v},{0.4 if r == 'learned' else ''}")
        head = "query_id,retriever,category,n_needed,needed_recall,precision,recall@5,walk_share"
        (art / "per_query.csv").write_text(head + "\n" + "\n".join(rows) + "\n")
    out = mod.table("locomo", ["linucb"], [0, 1], "multi-hop").splitlines()[-1]
    cells = [c.strip() for c in out.strip("|").split("|")]
    assert cells[:5] == ["linucb", "2", "3", "0.667", "0.500"]
    assert cells[5].startswith("+0.167 [") and cells[8].startswith("+0.250 [") and cells[8].endswith("(2)")
    assert cells[-1] == "0.400"
    with pytest.raises(FileNotFoundError, match=r"locomo-gnn-s0/artifacts/per_query.csv is missing: run "
                       r"python experiments/learning_report.py --runs locomo-gnn-s0 first"):  # fmt: skip
        mod.table("locomo", ["gnn"], [0], "multi-hop")


def test_ppr_damping_probe_compares_the_same_candidates_at_three_dampings(capsys):
    probe = load_experiment("ppr_damping_probe")
    out = probe.main(["--spec", "synthetic:tiny:0", "--max-queries", "8", "--probe", "4"])
    assert set(out["val ndcg@10"]) == {"d0.15", "d0.5", "d0.9"}
    differs = out["queries whose ndcg@10 differs (lowest vs highest damping)"]
    assert out["queries"] > 0 and differs in range(out["queries"] + 1)
    rows = [r for r in out["probe"] if r["candidates"]]
    assert len(out["probe"]) == 4 and rows
    for r in rows:  # one score per candidate, at most as many distinct values as candidates
        assert 1 <= r["distinct scores"] <= r["candidates"] and isinstance(r["same order"], bool)
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(out))


def test_hybrid_learned_validation_pins_pre_sweep_settings_only_where_nothing_sets_them():
    hlv = load_experiment("hybrid_learned_validation")
    plain = hlv.compose_config(["scorer=gnn"])  # the script's reported runs: the pre-sweep GNN
    assert (plain.scorer.lr, plain.scorer.hidden, plain.scorer.steps_per_update) == (0.01, 32, 1)
    assert hlv.compose_config(["scorer=gnn", "scorer.lr=0.05"]).scorer.lr == 0.05
    # a recipe's own scorer block wins (it was overwritten with the pre-sweep lr 0.01 before)
    assert hlv.compose_config(["+experiment=learning/tune-gnn-lr-0.001"]).scorer.lr == 0.001


def test_prior_half_life_chooses_the_trial_whose_worse_validation_is_best(tmp_path, capsys, monkeypatch):
    """The script reads a study's trials, scores each trial's half-life on the second dataset's validation
    split only, pairs each score with its own trial, and chooses by the worse of the two relative scores; a
    missing study storage is refused naming the file."""
    import optuna
    from optuna.distributions import FloatDistribution

    import signet_rl.evaluation.harness as harness

    script = load_experiment("prior_half_life")
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    study = optuna.create_study(study_name="learning-prior", storage=storage, direction="maximize")
    dist = {"scorer.half_life_days": FloatDistribution(0.5, 730.0, log=True)}
    for value, hl in ((0.30, 1.0), (0.29, 30.0), (0.10, 365.0)):
        study.add_trial(optuna.trial.create_trial(params={"scorer.half_life_days": hl}, distributions=dist,
                                                  value=value))  # fmt: skip
    splits, evaluate = [], harness.evaluate

    def spy(ds, retrievers, split="test", **kwargs):
        splits.append(split)
        return evaluate(ds, retrievers, split=split, **kwargs)

    monkeypatch.setattr(harness, "evaluate", spy)
    out = tmp_path / "choice.json"
    assert script.main(["--storage", storage, "--real", "synthetic:tiny:0", "--out", str(out)]) == 0
    assert splits == ["validation"] * 3  # one evaluation per trial, never on test
    saved = json.loads(out.read_text())
    real = {t["half_life_days"]: t["real"] for t in saved["trials"]}
    assert saved["study"] == "learning-prior" and set(real) == {1.0, 30.0, 365.0}
    assert all(0.0 <= v <= 1.0 for v in real.values())
    assert f"chosen: trial {saved['chosen']['number']}," in capsys.readouterr().out

    # each trial's real score is its own half-life's (a mis-pairing would move the choice): the recall a
    # half-life gets, by hand, makes the 30-day trial the worse-best (min(0.29/0.30, 0.4/0.4) = 0.967)
    recall = {1.0: 0.1, 30.0: 0.4, 365.0: 0.35}
    def by_hand(scorer, settings, spec):
        return [recall[s["half_life_days"]] for s in settings]

    monkeypatch.setattr(script, "real_validation", by_hand)
    assert script.main(["--storage", storage, "--out", str(out)]) == 0
    chosen = json.loads(out.read_text())["chosen"]
    assert (chosen["half_life_days"], chosen["real"]) == (30.0, 0.4)
    assert chosen["relative"] == pytest.approx(0.29 / 0.30)
    missing = tmp_path / "none.db"
    assert script.main(["--storage", f"sqlite:///{missing}", "--out", str(out)]) == 2
    assert f"error: {missing} does not exist" in capsys.readouterr().err


def test_prior_half_life_choice_rule_by_hand():
    choose = load_experiment("prior_half_life").choose
    trials = [{"number": 0, "synthetic": 0.27, "real": 0.24}, {"number": 1, "synthetic": 0.23, "real": 0.34},
              {"number": 2, "synthetic": 0.23, "real": 0.34}, {"number": 3, "synthetic": 0.22, "real": 0.39}]
    chosen = choose(trials)
    # min(0.23/0.27, 0.34/0.39) = 0.852 beats 0.615 and 0.815; trial 2 ties it, the lower number wins
    assert chosen["number"] == 1
    assert chosen["relative"] == pytest.approx(0.23 / 0.27)
    with pytest.raises(ValueError, match=r"^no finished trials to choose from$"):
        choose([])



def test_locomo_learned_pairs_pairs_each_query_over_the_seeds_that_drew_it(tmp_path, capsys):
    script = load_experiment("locomo_learned_pairs")
    header = "retriever,query_id,budget,n_needed,needed_recall,ndcg@10\n"
    # seed 0 draws q1, q2; seed 1 draws q2 alone. The GNN is 0.2 above best_flat at seed 0 and 0.5 at seed 1,
    # LinUCB 0.1 at both; the predictor (0.0) ran at seed 0 only.
    draws, base = {0: ("q1", "q2"), 1: ("q2",)}, {"q1": 0.3, "q2": 0.4}
    lifts = {("gnn", 0): 0.2, ("gnn", 1): 0.5, ("linucb", 0): 0.1, ("linucb", 1): 0.1,
             ("signet_predictor", 0): 0.0}  # fmt: skip
    for (scorer, seed), lift in lifts.items():
        art = tmp_path / f"locomo-{scorer}-s{seed}" / "artifacts"
        art.mkdir(parents=True)
        lines = [header, "learned,none,2000,0,0,0\n"]  # a query that needs nothing: left out
        for q in draws[seed]:
            for retriever, v in (("learned", base[q] + lift), ("best_flat", base[q]),
                                 ("flat_signet_uncapped", base[q] - 0.1), ("flat_signet", 0.1)):
                lines.append(f"{retriever},{q},2000,2,{v},{v}\n")
        (art / "per_query.csv").write_text("".join(lines))
    script.main(["--report", str(tmp_path)])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "locomo-signet_predictor-s1: not finished; left out" in captured.err
    assert out["seeds"]["signet_predictor"] == [0] and out["seeds"]["gnn"] == [0, 1]
    assert out["mean over seeds"]["gnn"]["ndcg@10"] == pytest.approx((0.55 + 0.9) / 2)  # each seed's mean
    assert out["mean over seeds"]["best_flat"]["needed_recall"] == pytest.approx((0.35 + 0.4) / 2)
    # q2's difference is its mean over the two seeds; each distinct query counts once
    expected = {"gnn-linucb ndcg@10": (0.175, 2), "gnn-best_flat needed_recall": (0.275, 2),
                "gnn-signet_predictor ndcg@10": (0.2, 2), "gnn-flat_signet_uncapped ndcg@10": (0.375, 2),
                "linucb-best_flat ndcg@10": (0.1, 2), "signet_predictor-best_flat needed_recall": (0.0, 2)}
    for key, (mean, n) in expected.items():
        assert out[key]["mean"] == pytest.approx(mean) and out[key]["n"] == n, key
    assert out["gnn-best_flat ndcg@10"]["lo"] == pytest.approx(0.2)  # two queries: resamples of 0.2 and 0.35
    assert out["gnn-best_flat ndcg@10"]["hi"] == pytest.approx(0.35)
