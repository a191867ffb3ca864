"""Run folders (signet_rl.core.run_folder, signet_rl.train): fresh=true never deletes what a run did not
write, a folder trained with another configuration is refused naming the key and both values, a folder in use
is refused naming the pid, folder names stay short however many overrides, and config errors come before the
dataset loads (issue 31 items 1, 2, 7, 8 and its vague cases; issue 22 item 5)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fork_runner import run_forked
from hydra import compose, initialize_config_dir

from signet_rl.core.run_folder import LOCK, MARKER, RunFolder, RunFolderError, atomic_write, run_name
from signet_rl.datasets import load_dataset
from signet_rl.datasets.registry import parse_spec
from signet_rl.learning.trainer import CHECKPOINT, PREVIOUS_CHECKPOINT, RUN_FILES, BanditConfig, BanditTrainer
from signet_rl.scorers import make_scorer
from signet_rl.train import run_dir, train

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
TINY = [
    "dataset.spec=synthetic:tiny:0", "scorer=linucb", "task.max_interactions=12", "task.eval_every=6",
    "task.checkpoint_every=3", "task.max_val_queries=5", "task.max_test_queries=8", "baselines=[]",
    "ceiling=false", "bootstrap=10", "progress=false", "mlflow.enabled=false",
    # the figures below were read on generator v1 (run folders, not the benchmark)
    "dataset.options.version=1",
]  # fmt: skip


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=[*TINY, *overrides])


def _env() -> dict[str, str]:
    """The subprocess environment: this checkout's signet_rl first on the path."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- fresh=true (item 1) -------------------------------------------------------------------------------


def test_fresh_refuses_a_folder_without_a_run_marker_and_deletes_nothing(tmp_path):
    folder = tmp_path / "mine"
    (folder / "data").mkdir(parents=True)
    (folder / "thesis.tex").write_text("three years of work")
    (folder / "data" / "results.csv").write_text("a,b\n1,2\n")
    before = _tree(folder)
    message = (
        f"run_dir {folder} is not a signet_rl run folder: it holds data, thesis.tex but no run marker "
        f"({MARKER}), and fresh=true would delete them; nothing was written or deleted. Use an empty or new "
        "run_dir"
    )
    with pytest.raises(RunFolderError, match=re.escape(message)):
        train(_cfg(f"run_dir={folder}", "fresh=true"))
    assert _tree(folder) == before and sorted(p.name for p in folder.iterdir()) == ["data", "thesis.tex"]
    with pytest.raises(RunFolderError, match="the run would write into them"):  # and without fresh
        train(_cfg(f"run_dir={folder}"))
    assert _tree(folder) == before


def test_run_dir_dot_with_fresh_leaves_the_working_directory_alone(tmp_path):
    """``run_dir=. fresh=true`` deleted the working directory's contents."""
    (tmp_path / "notes.md").write_text("keep me")
    done = run_forked(
        [sys.executable, "-m", "signet_rl.train", *TINY, "run_dir=.", "fresh=true"],
        cwd=tmp_path, env=_env(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"run_dir {tmp_path} is not a signet_rl run folder: it holds notes.md" in done.stderr
    assert (tmp_path / "notes.md").read_text() == "keep me"
    assert not (tmp_path / "runs").exists() and not (tmp_path / CHECKPOINT).exists()


def test_fresh_removes_only_the_previous_runs_own_files(tmp_path):
    folder = tmp_path / "run"
    train(_cfg(f"run_dir={folder}", "stop_after=7"))
    assert {CHECKPOINT, PREVIOUS_CHECKPOINT, "feedback.parquet", MARKER} <= {p.name for p in folder.iterdir()}
    (folder / "notes.txt").write_text("my notes on this run")
    train(_cfg(f"run_dir={folder}", "fresh=true", "stop_after=0"))  # starts over, trains nothing
    assert sorted(p.name for p in folder.iterdir()) == sorted([LOCK, MARKER, "notes.txt"])
    assert (folder / "notes.txt").read_text() == "my notes on this run"


# -- another configuration (item 2) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "was", "asks"),
    [("seed=1", "seed=0", "seed=1"),
     ("scorer.alpha=0.5", "scorer.alpha=2.594901330624211", "scorer.alpha=0.5"),  # the sweep-tuned default
     ("traversal.max_branching=2", "traversal.max_branching=null", "traversal.max_branching=2")],
)  # fmt: skip
def test_rerunning_a_folder_with_another_value_is_refused_naming_key_and_both_values(
    tmp_path, override, was, asks
):
    folder = tmp_path / "run"
    train(_cfg(f"run_dir={folder}", "stop_after=4"))
    checkpoint = (folder / CHECKPOINT).read_bytes()
    message = (
        f"run folder {folder} was trained with {was}; this command asks {asks}: use another run_dir or "
        "fresh=true"
    )
    with pytest.raises(RunFolderError, match=re.escape(message)):
        train(_cfg(f"run_dir={folder}", override))
    assert (folder / CHECKPOINT).read_bytes() == checkpoint and not (folder / "artifacts").exists()
    train(_cfg(f"run_dir={folder}", override, "fresh=true", "stop_after=0"))  # fresh=true is the way out


# -- locking and atomic writes (item 7) -------------------------------------------------------------------


def test_a_second_training_on_a_folder_in_use_fails_at_once_naming_the_pid(tmp_path):
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from signet_rl.core.run_folder import RunFolder; "
         "f = RunFolder.open(sys.argv[1], {}, ['checkpoint.pkl']); print('locked', flush=True); "
         "time.sleep(120)",
         str(folder)],
        env=_env(), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        message = (
            f"run folder {folder} is in use by another training (pid {holder.pid}); wait for it to end or "
            "use another run_dir"
        )
        with pytest.raises(RunFolderError, match=re.escape(message)):
            train(_cfg(f"run_dir={folder}"))
        assert time.perf_counter() - t0 < 5  # at once: before the dataset loads
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    # the lock died with its process (a SIGKILL too): the folder opens again
    RunFolder.open(folder, {}, ["checkpoint.pkl"]).close()


def test_concurrent_checkpoints_never_collide_on_a_temp_name(tmp_path):
    """Two writers of one run folder used one fixed ``checkpoint.tmp``: one crashed with FileNotFoundError."""
    ds = load_dataset("synthetic:tiny:0")
    cfg = BanditConfig(max_interactions=4, eval_every=0, checkpoint_every=0, max_val_queries=5)
    trainers = [
        BanditTrainer(ds, make_scorer("prior"), cfg, seed=0, run_dir=tmp_path / "run", progress=False)
        for _ in range(2)
    ]
    errors: list[BaseException] = []

    def write(t: BanditTrainer) -> None:
        try:
            for _ in range(15):
                t.checkpoint()
        except BaseException as err:  # collected and asserted on below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(t,)) for t in trainers]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == sorted(
        [CHECKPOINT, PREVIOUS_CHECKPOINT, "feedback.parquet"]
    )  # no temporary file left behind
    with open(tmp_path / "run" / CHECKPOINT, "rb") as fh:
        assert pickle.load(fh)["step"] == 0


def test_atomic_write_replaces_whole_files_only(tmp_path):
    target = tmp_path / "f.json"
    atomic_write(target, "old")
    with pytest.raises(ZeroDivisionError):
        from signet_rl.core.run_folder import atomic_writer

        with atomic_writer(target) as fh:
            fh.write(b"half")
            raise ZeroDivisionError
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_marker_records_fingerprint_overrides_and_files(tmp_path):
    folder = tmp_path / "run"
    with RunFolder.open(folder, {"seed": 0, "task.slate_size": (3,)}, RUN_FILES, overrides=["seed=0"]) as f:
        assert not f.resumed
    import json

    marker = json.loads((folder / MARKER).read_text())
    assert marker["fingerprint"] == {"seed": 0, "task.slate_size": [3]}
    assert marker["overrides"] == ["seed=0"] and marker["files"] == list(RUN_FILES)
    with RunFolder.open(folder, {"seed": 0, "task.slate_size": [3]}, RUN_FILES) as again:
        assert again.resumed  # the same fingerprint after a JSON round trip
    (folder / MARKER).write_text("{not json")
    with pytest.raises(RunFolderError, match=re.escape(f"run marker {folder / MARKER} is unreadable")):
        RunFolder.open(folder, {}, RUN_FILES)
    with pytest.raises(ValueError, match=r"run file name '\.\./x' must be a plain name"):
        RunFolder.open(tmp_path / "other", {}, ["../x"])


# -- folder names (item 8, issue 22 item 5) --------------------------------------------------------------

LONG = [
    "task.epsilon=0.1000000000000000000000000000", "task.temperature=0.500000000000000000000000000",
    "task.reinforce_lr=0.20000000000000000000000000", "task.reinforce_floor=0.2000000000000000000000000",
    "task.reinforce_ceiling=3.000000000000000000000000", "task.reinforce_cool=0.01000000000000000000000000",
    "task.rater_noise=0.0500000000000000000000000000", "task.rater_prob=0.80000000000000000000000000000",
    "scorer.alpha=1.00000000000000000000000000000000", "scorer.lam=1.000000000000000000000000000000000",
    "scorer.sigma=0.5000000000000000000000000000000", "scorer.max_importance_weight=10.0000000000000000",
    "traversal.min_confidence=0.500000000000000000000", "dataset.traversal.min_confidence=0.5000000000000",
    "task.ope_window=5_0_0_0_0_0_0_0_0_0_0_0_0_0_0_0",
]  # fmt: skip


def test_run_folder_is_a_short_hash_of_15_long_overrides_and_the_same_command_finds_it(tmp_path):
    assert len(LONG) == 15 and sum(len(o) + 1 for o in LONG) > 600
    cmd = [sys.executable, "-m", "signet_rl.train", *TINY, *LONG, "stop_after=4"]
    first = run_forked(cmd, cwd=tmp_path, env=_env(), timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    (folder,) = (tmp_path / "runs" / "bandit").iterdir()
    assert re.fullmatch(r"linucb-synthetic_tiny_0-[0-9a-f]{10}", folder.name)
    assert (folder / CHECKPOINT).exists() and f"resume from {folder}" in first.stdout
    import json

    marker = json.loads((folder / MARKER).read_text())
    assert marker["overrides"] == [*TINY, *LONG, "stop_after=4"]
    assert marker["fingerprint"]["task.epsilon"] == 0.1 and marker["fingerprint"]["scorer.alpha"] == 1.0
    # the hash is over the overrides that change results, in any order
    results = [o for o in [*TINY, *LONG] if not o.startswith(("progress=", "mlflow."))]
    assert folder.name == run_name(["linucb", "synthetic:tiny:0"], reversed(results))
    assert run_name(["linucb", "synthetic:tiny:0"], results[1:]) != folder.name
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=[*TINY, *LONG])
    assert run_dir(cfg).parent == Path.cwd().resolve() / "runs" / "bandit"  # outside Hydra: by fingerprint
    assert re.fullmatch(r"linucb-synthetic_tiny_0-[0-9a-f]{10}", run_dir(cfg).name)


KG_GRAPH = "a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\nc\tr1\te\nb\tr1\te\ne\tr2\ta\n"
KG_LONG = [
    "task.entity_dim=0000000000000000000000000000008", "task.relation_dim=000000000000000000000000000008",
    "task.history_dim=00000000000000000000000000000008", "task.hidden_dim=000000000000000000000000000016",
    "task.beam_width=000000000000000000000000000000008", "task.lr=0.00100000000000000000000000000000",
    "task.beta=0.1000000000000000000000000000000000", "task.baseline_rate=0.050000000000000000000000",
    "task.grad_clip=5.00000000000000000000000000000", "task.weight_decay=0.0000000000000000000000000",
    "task.num_rollouts=00000000000000000000000000002", "task.batch_size=000000000000000000000000000004",
    "task.max_batches=0000000000000000000000000000002", "task.eval_queries=0000000000000000000000000005",
    "task.checkpoint_every=00000000000000000000000001",
]  # fmt: skip


def test_kg_run_folder_with_15_long_overrides_is_short(tmp_path):
    """``task=kg`` with 15 overrides built a 305-character name and died with ``File name too long``."""
    data = tmp_path / "data"
    folder = data / "kg" / "tiny"
    folder.mkdir(parents=True)
    splits = {"graph": KG_GRAPH, "train": "a\tr1\tb\nd\tr1\tc\nc\tr1\te\n", "dev": "b\tr1\te\n",
              "test": "a\tr2\td\n"}  # fmt: skip
    for name, text in splits.items():
        (folder / f"{name}.txt").write_text(text)
    assert len(KG_LONG) == 15 and sum(len(o) + 1 for o in KG_LONG) > 500
    cmd = [
        sys.executable, "-m", "signet_rl.train", "task=kg", "dataset=kg", "dataset.spec=kg:tiny",
        "dataset.path_length=2", "task.progress=false", "task.anchors=[]", "task.shaping=none",
        "task.time_budget_s=null", "task.eval_every=0", "mlflow.enabled=false", *KG_LONG,
    ]  # fmt: skip
    env = {**_env(), "SIGNET_RL_DATA": str(data)}
    done = run_forked(cmd, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "runs" / "kg").iterdir()
    assert re.fullmatch(r"kg_tiny-[0-9a-f]{10}", run.name)
    assert (run / "results.json").exists()


# -- config errors, seeds, damaged checkpoints (vague cases) ------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["task.slate_size=0"], "slate_size must be an integer >= 1, got 0"),
        (["scorer=gnn", "scorer.lr=-1"], "GNNPathScorer: lr must be a number > 0, got -1"),
        (["+task.no_such_knob=1"], "BanditConfig: unknown keys ['no_such_knob']"),
        (["traversal.max_depth=-2"], "max_depth"),
        (
            ["seed=-1"],
            "seed=-1 (dataset kg:no_such_folder) is not an integer in [0, 2**32); pass e.g. seed=0",
        ),
    ],
)
def test_config_errors_are_raised_before_the_dataset_loads(tmp_path, overrides, message):
    """The dataset here does not exist: were it loaded first, its error would be the one raised."""
    cfg = _cfg(*overrides, "dataset.spec=kg:no_such_folder", f"run_dir={tmp_path / 'run'}")
    with pytest.raises(ValueError, match=re.escape(message)):
        train(cfg)
    assert not (tmp_path / "run").exists()  # and the run folder is untouched


def test_negative_seeds_name_the_seed_and_the_spec():
    with pytest.raises(ValueError, match=re.escape("seed=-1 (dataset synthetic:tiny:0) is not an integer")):
        train(_cfg("seed=-1"))
    message = "dataset spec 'synthetic:tiny:-3': seed -3 is negative; seeds are integers >= 0, e.g. "
    message += "synthetic:tiny:0"
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_spec("synthetic:tiny:-3")


def test_a_truncated_checkpoint_names_the_file_and_the_ways_out(tmp_path):
    folder = tmp_path / "run"
    train(_cfg(f"run_dir={folder}", "stop_after=7"))  # checkpoints at 3 and 6: 6 is the last, 3 the previous
    path, prev = folder / CHECKPOINT, folder / PREVIOUS_CHECKPOINT
    os.truncate(path, 200)
    message = (
        rf"checkpoint {re.escape(str(path))} is unreadable \(truncated or corrupt: \w+: .*\); rerun with "
        rf"fresh=true to start over, or resume from the previous checkpoint: mv {re.escape(str(prev))} "
        rf"{re.escape(str(path))}$"
    )
    with pytest.raises(ValueError, match=message):
        train(_cfg(f"run_dir={folder}"))
    with open(prev, "rb") as fh:
        assert pickle.load(fh)["step"] == 3
    os.replace(prev, path)  # the second way out: the run resumes from interaction 3 and ends
    assert train(_cfg(f"run_dir={folder}")) == 1.0
    assert (folder / "artifacts" / "final_metrics.json").exists()


def test_a_run_folder_from_before_markers_is_adopted_and_resumes(tmp_path):
    """A folder holding only what a run writes (checkpoint, feedback log) is a run of a version without
    markers: it resumes (the checkpoint's own checks guard it) instead of being refused."""
    folder = tmp_path / "run"
    train(_cfg(f"run_dir={folder}", "stop_after=4"))
    (folder / MARKER).unlink()
    (folder / LOCK).unlink()
    assert train(_cfg(f"run_dir={folder}")) == 1.0
    assert (folder / MARKER).exists() and (folder / "artifacts" / "final_metrics.json").exists()


def test_a_run_with_baseline_rows_saves_its_own_trained_policy(tmp_path, capsys):
    """The closing comparison's non-learned rows (baselines, one with baseline_options) never stand in for
    the trained scorer: the run saves its GNN policy and says where it is."""
    from signet_rl.scorers.gnn import GNNPathScorer

    folder = tmp_path / "run"
    train(_cfg(f"run_dir={folder}", "scorer=gnn", "++scorer.hidden=8", "++scorer.n_heads=2",
               "baselines=[prior,fused]", "+baseline_options={prior: {half_life_days: 90.0}}"))  # fmt: skip
    policy = folder / "artifacts" / "policy"
    assert policy.is_file() and GNNPathScorer.load(policy).config["hidden"] == 8
    out = capsys.readouterr().out
    assert f"policy: {policy}" in out or str(policy) in out
    table = (folder / "artifacts" / "table.txt").read_text()
    assert "desire_prior" in table and "desire_fused" in table
