"""signet_rl.reporting, and the report scripts run in a fresh copy of the repository: no script silently
replaces a committed result, deletes a committed table, or writes a short run into tracked files (each script
runs in this process, but from the copy: its ROOT, results page and ledger are the copy's)."""

from __future__ import annotations

import json
from pathlib import Path

from experiment_script import load_experiment
from repo_copy import tracked_changes

from signet_rl.reporting import Section, publish, read_section, splice

#: The committed learning section's protocol: the groups whose every run finished, and how many runs did.
GROUPS = "main,ablation,tight,tuning,drift,transfer,locomo,musique"
RERUN = 52


def test_splice_replaces_only_its_section_and_adds_a_missing_one_in_its_parent():
    text = "# R\n\n<!-- a:start -->\nold\n<!-- a:end -->\ntail\n"
    assert splice(text, "a", "new") == "# R\n\n<!-- a:start -->\nnew\n<!-- a:end -->\ntail\n"
    added = splice(text, "b", "bee", heading="## B")
    assert added.endswith("tail\n\n## B\n\n<!-- b:start -->\nbee\n<!-- b:end -->\n")
    nested = splice(added, "c", "sea", parent="b")
    assert "<!-- b:start -->\nbee\n<!-- c:start -->\nsea\n<!-- c:end -->\n<!-- b:end -->" in nested
    assert read_section(nested, "c") == "sea" and read_section(nested, "z") is None


def test_publish_leaves_same_figures_alone_refuses_another_protocol_and_writes_scratch(tmp_path, capsys):
    out, scratch = tmp_path / "results.md", tmp_path / "scratch"
    first = Section("t", "_on 2026-01-01_\n\n| a | 1 |", protocol={"seeds": [0, 1, 2], "budget": "1200 s"})
    publish(out, [first], "x.py", scratch_dir=scratch)
    committed = out.read_text()
    assert '<!-- protocol: {"seeds": [0, 1, 2], "budget": "1200 s"} -->' in committed
    # the same figures on another day: nothing is written
    again = Section("t", "_on 2027-05-05_\n\n| a | 1 |", protocol={"seeds": [0, 1, 2], "budget": "1200 s"})
    assert publish(out, [again], "x.py", scratch_dir=scratch).unchanged == ["t"]
    assert out.read_text() == committed
    # another protocol: refused, naming both, the section goes to the scratch copy
    short = Section("t", "| a | 9 |", protocol={"seeds": [0], "budget": "30 s"})
    got = publish(out, [short], "x.py", scratch_dir=scratch)
    assert got.refused == ["t"] and out.read_text() == committed
    assert capsys.readouterr().err.strip() == (
        f"x.py: not replacing the committed section 't' of {out} (committed: seeds 0,1,2 budget 1200 s; "
        f"this run: seeds 0 budget 30 s); its results go to {scratch / 'results.md'} instead. "
        "Pass --replace to replace it."
    )
    assert "| a | 9 |" in (scratch / "results.md").read_text()
    # --replace replaces it; --scratch never touches the results file
    assert publish(out, [short], "x.py", replace=True, scratch_dir=scratch).written == ["t"]
    assert "| a | 9 |" in out.read_text()
    before = out.read_text()
    publish(out, [first], "x.py", scratch=True, scratch_dir=scratch)
    assert out.read_text() == before


def _tiny_kinship(root: Path) -> Path:
    """A data root whose ``kg/kinship`` is a seven-edge graph (so a kg_report run takes seconds)."""
    folder = root / "kg" / "kinship"
    folder.mkdir(parents=True)
    graph = "a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\nc\tr1\te\nb\tr1\te\ne\tr2\ta\n"
    splits = {"train": "a\tr3\tc\na\tr1\tb\nb\tr3\te\nd\tr3\ta\nc\tr3\tb\n", "dev": "d\tr3\te\n",
              "test": "b\tr3\tc\n"}  # fmt: skip
    (folder / "graph.txt").write_text(graph)
    for name, text in splits.items():
        (folder / f"{name}.txt").write_text(text)
    return root


def _run(repo: Path, script: str, *args: str, capsys) -> tuple[str, str]:
    """Run ``main(args)`` of the copy's ``experiments/<script>.py`` in this process (its ROOT is the copy);
    returns what it printed (stdout, stderr)."""
    module = load_experiment(script, root=repo, module_name=f"copy_{script}")
    capsys.readouterr()
    module.main(list(args))
    return capsys.readouterr()


def test_report_scripts_never_touch_committed_results_in_short_runs(repo_copy, tmp_path, capsys, monkeypatch):
    repo = repo_copy
    monkeypatch.delenv("SIGNET_RL_SMOKE", raising=False)
    committed_ledger = (repo / "experiments" / "kg_runs" / "runs.json").read_text()
    # a short KG run of a committed row: refused naming both protocols, run and tabled under runs/scratch/
    monkeypatch.setenv("SIGNET_RL_DATA", str(_tiny_kinship(tmp_path / "data")))
    done = _run(repo, "kg_report", "--datasets", "kinship", "--seeds", "0", "--budget", "2", capsys=capsys)
    assert (
        "kg_report.py: not replacing the committed kinship shaped row of experiments/kg_runs/runs.json and "
        "docs/results.md (committed: seeds 0,1,2 budget 1200 s; this run: seeds 0 budget 2 s); its results "
        "go to runs/scratch/ instead. Pass --replace to replace it."
    ) in done.err
    assert tracked_changes(repo) == []
    assert (repo / "experiments" / "kg_runs" / "runs.json").read_text() == committed_ledger
    scratch = json.loads((repo / "runs" / "scratch" / "kg_runs" / "runs.json").read_text())
    assert list(scratch) == ["kinship-shaped-s0"] and scratch["kinship-shaped-s0"]["budget_s"] == 2.0
    assert "| kinship | ours: walker" in (repo / "runs" / "scratch" / "results.md").read_text()
    assert not (repo / "runs" / "report-kg").exists()
    # --scratch: any run goes there, even one of a row nobody committed
    _run(repo, "kg_report", "--datasets", "kinship", "--recipes", "likelihood_patient", "--seeds", "7",
         "--budget", "1200", "--scratch", capsys=capsys)  # fmt: skip
    assert tracked_changes(repo) == []
    assert (
        "kinship-likelihood_patient-s7" in (repo / "runs" / "scratch" / "kg_runs" / "runs.json").read_text()
    )
    # the table rebuilt from the committed ledger: the same figures, the file left as it is
    done = _run(repo, "kg_report", "--report-only", capsys=capsys)
    assert "figures unchanged, left as committed: kg" in done.out and tracked_changes(repo) == []
    # learning_report.py --report-only in a clean checkout (no finished runs): the tables stay
    done = _run(repo, "learning_report", "--report-only", capsys=capsys)
    assert (
        "learning_report.py: not replacing the committed section 'learning' of docs/results.md (committed: "
        f"complete groups {GROUPS} finished runs {RERUN}; this run: complete groups (none) finished runs 0); "
        "its results go to "
        "runs/scratch/results.md instead. Pass --replace to replace it."
    ) in done.err
    assert tracked_changes(repo) == []
    assert "_no finished runs yet_" in (repo / "runs" / "scratch" / "results.md").read_text()
    # desire_report.py and flat_baseline_report.py on the tiny preset: other protocols, refused
    done = _run(repo, "desire_report", "--dataset", "synthetic:tiny:0", "--n-boot", "20", capsys=capsys)
    assert (
        "desire_report.py: not replacing the committed section 'desire' of docs/results.md (committed: "
        "dataset synthetic:medium:0 synthetic_version 2 budgets 2000,400 max_queries None n_boot 1000; this "
        "run: dataset synthetic:tiny:0 synthetic_version 2 budgets 2000,400 max_queries None n_boot 20); its "
        "results go to "
        "runs/scratch/results.md instead. Pass --replace to replace it."
    ) in done.err
    done = _run(repo, "flat_baseline_report", "--fast", "--sections", "synthetic", "--synthetic",
                "synthetic:tiny:0", capsys=capsys)  # fmt: skip
    assert (
        "flat_baseline_report.py: not replacing the committed section 'synthetic' of docs/results.md "
        "(committed: fast False synthetic synthetic:medium:0 synthetic_version 2 learning_split test fold; "
        "this run: fast True synthetic synthetic:tiny:0 synthetic_version 2 learning_split test fold); its "
        "results go to "
        "runs/scratch/results.md instead. Pass --replace to replace it."
    ) in done.err
    assert tracked_changes(repo) == []
    scratch_md = (repo / "runs" / "scratch" / "results.md").read_text()
    assert "<!-- desire:start -->" in scratch_md and "<!-- synthetic:start -->" in scratch_md
