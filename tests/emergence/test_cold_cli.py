"""``python -m signet_rl.emergence``: a pruning plan applied to a real store copy, undone byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from signet_rl.emergence.__main__ import main
from signet_rl.emergence.cold import cold_entities
from signet_rl.emergence.health import PruningPlan
from tests.emergence.test_cold import build, make_store, snapshot, sql


@pytest.fixture
def store(tmp_path: Path) -> Path:
    # e0 -> e1 -> e2, e3 -> e1; m0 mentioned by e1 only
    return make_store(tmp_path, build(4, [(0, 1), (1, 2), (3, 1)], [(0, 1)], 2))


def plan_file(folder: Path, unused: list[str], sick: list[str] = ()) -> Path:  # type: ignore[assignment]
    plan = PruningPlan(until=pd.Timestamp("2026-01-01", tz="UTC"), unused=tuple(unused), sick=tuple(sick),
                       kept={"e0": "pinned"})
    return plan.save(folder / "plan.json")


def test_a_plan_is_applied_to_a_copy_and_restored_byte_for_byte(store: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store)
    plan = plan_file(tmp_path, ["e1"], ["e3"])
    out = tmp_path / "out.db"
    assert main(["prune", str(store), "--plan", str(plan), "--copy-to", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == (f"moved 2 entities (1 unused, 1 sick) of plan {plan} to the cold "
                                       f"tier of {out}; rows per table:")
    assert "  entities                      2" in printed and "  memories                      1" in printed
    assert snapshot(store) == before  # the store itself is untouched
    assert sorted(cold_entities(out)) == ["e1", "e3"]
    assert sorted(os.listdir(tmp_path)) == ["copy.db", "out.db", "plan.json"]  # no temporary file left
    assert main(["cold", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"2 cold entities in {out}", "  e1", "  e3",
        "cold frontier: 2 dependencies from a hot entity to a cold one",
        "  E:e0>D+:d0>E:e1", "  E:e2>D-:d1>E:e1"]
    assert main(["restore", str(out), "--all", "--copy"]) == 0
    assert capsys.readouterr().out.startswith(f"restored 2 entities from the cold tier of {out}")
    assert snapshot(out) == before
    assert main(["restore", str(out), "--all", "--copy"]) == 2  # nothing cold any more
    assert capsys.readouterr().err == f"error: {out}: the cold tier holds no entity; nothing to restore\n"
    for argv in (["restore", str(out), "--copy"], ["restore", str(out), "e1", "--all", "--copy"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == ("error: restore: name the entity ids or --all (every cold "
                                           "entity), not both and not neither\n")


def test_in_place_copy_and_the_real_command_line(store: Path, tmp_path: Path) -> None:
    plan = plan_file(tmp_path, ["e2"])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "signet_rl.emergence", "prune", str(store), "--plan",
                           str(plan), "--in-place-copy"], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert cold_entities(store) == ["e2"]
    assert sql(store, "SELECT count(*) FROM entities WHERE id = 'e2'") == [(0,)]


@pytest.mark.parametrize("case, message", [
    ("unknown", "entity 'e9' is not in the store; nothing was moved"),
    ("malformed", "plan.json: not JSON (line 1: Expecting property name enclosed in double quotes)"),
    ("layout", "plan.json: 'sick' must be a list of entity ids (non-empty strings), got 'e1'"),
    ("exists", "out.db already exists; --copy-to writes a new file only"),
    ("missing", "none.db does not exist"),
])
def test_bad_input_is_named_and_nothing_is_half_written(store: Path, tmp_path: Path, case: str, message: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store)
    plan = plan_file(tmp_path, ["e1", "e9"] if case == "unknown" else ["e1"])
    if case == "malformed":
        plan.write_text("{not json")
    elif case == "layout":
        plan.write_text(json.dumps({"format": "signet_rl.pruning_plan/1", "unused": [], "sick": "e1"}))
    out = tmp_path / "out.db"
    if case == "exists":
        out.write_bytes(b"mine")
    src = tmp_path / "none.db" if case == "missing" else store
    assert main(["prune", str(src), "--plan", str(plan), "--copy-to", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert snapshot(store) == before
    assert (out.read_bytes() == b"mine") if case == "exists" else not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # in place: the same refusals, and the copy is left as it was
    if case in ("unknown", "malformed", "layout"):
        assert main(["prune", str(store), "--plan", str(plan), "--in-place-copy"]) == 2
        assert snapshot(store) == before


def test_restoring_what_is_not_cold_is_named(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(store)
    assert main(["restore", str(store), "e1", "--copy"]) == 2
    assert "entity 'e1' is not in the cold tier (it is in the hot tables); nothing was restored" in \
        capsys.readouterr().err
    assert snapshot(store) == before
    with pytest.raises(SystemExit):  # --copy is required: a restore rewrites the file
        main(["restore", str(store), "e1"])


def test_a_cold_row_that_no_longer_matches_the_schema_is_named(store: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3
    from contextlib import closing

    out = tmp_path / "out.db"
    assert main(["prune", str(store), "--plan", str(plan_file(tmp_path, ["e1"])), "--copy-to", str(out)]) == 0
    with closing(sqlite3.connect(out)) as conn:
        (text,) = conn.execute("SELECT row_json FROM signet_rl_cold_rows WHERE row_key = 'a1'").fetchone()
        row = json.loads(text)
        row["columns"][3] = "title"  # 'name' renamed since the move
        conn.execute("UPDATE signet_rl_cold_rows SET row_json = ? WHERE row_key = 'a1'", (json.dumps(row),))
        conn.commit()
    middle = snapshot(out)
    capsys.readouterr()
    assert main(["restore", str(out), "e1", "--copy"]) == 2
    assert "cold row entity_aspects 'a1' does not match the schema: its columns no longer match the " \
        "table's (lacks name; has unknown title); nothing was restored" in capsys.readouterr().err
    assert snapshot(out) == middle


def test_copy_to_errors_name_the_store_and_the_plan_not_the_temporary_file(
        store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_file(tmp_path, ["e1", "e9"])
    out = tmp_path / "out.db"
    assert main(["prune", str(store), "--plan", str(plan), "--copy-to", str(out)]) == 2
    assert capsys.readouterr().err == (f"error: {store} (plan {plan}, --copy-to {out}): entity 'e9' is not "
                                       "in the store; nothing was moved\n")
    assert sorted(os.listdir(tmp_path)) == ["copy.db", "plan.json"]


def test_an_out_file_that_appears_during_the_move_is_never_overwritten(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import signet_rl.emergence.__main__ as cli

    out = tmp_path / "out.db"
    real = cli.move_to_cold

    def move_then_someone_writes_out(*args: object, **kwargs: object) -> object:
        moved = real(*args, **kwargs)  # type: ignore[arg-type]
        out.write_bytes(b"theirs")
        return moved

    monkeypatch.setattr(cli, "move_to_cold", move_then_someone_writes_out)
    assert main(["prune", str(store), "--plan", str(plan_file(tmp_path, ["e1"])), "--copy-to", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {out} appeared while the copy was made; nothing was written\n"
    assert out.read_bytes() == b"theirs"
    assert sorted(os.listdir(tmp_path)) == ["copy.db", "out.db", "plan.json"]


def test_a_journal_left_by_a_crash_is_recovered_and_stale_temporary_files_are_named(
        store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 54 #7: a writer killed mid-move leaves a -journal; it is not a live writer (none holds the
    lock), so the next command recovers it and runs; --copy-to's leftover temporary files are named."""
    before = snapshot(store)
    plan = plan_file(tmp_path, ["e1", "e3"])
    code = ("import os, sys; import signet_rl.emergence.cold as c; "
            "c._memories_to_cold = lambda *a, **k: os._exit(9); "
            "from signet_rl.emergence.__main__ import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for how in (["--in-place-copy"], ["--copy-to", str(tmp_path / "out.db")]):
        done = subprocess.run([sys.executable, "-c", code, "prune", str(store), "--plan", str(plan), *how],
                              capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 9, done.stderr
    assert (tmp_path / "copy.db-journal").exists() and snapshot(store) == before
    left = sorted(p for p in os.listdir(tmp_path) if p.startswith(".out.db."))
    assert left and not (tmp_path / "out.db").exists()
    capsys.readouterr()
    assert main(["prune", str(store), "--plan", str(plan), "--in-place-copy"]) == 0
    assert not (tmp_path / "copy.db-journal").exists() and sorted(cold_entities(store)) == ["e1", "e3"]
    assert main(["restore", str(store), "e1", "e3", "--copy"]) == 0 and snapshot(store) == before
    assert main(["prune", str(store), "--plan", str(plan), "--copy-to", str(tmp_path / "out.db")]) == 0
    assert capsys.readouterr().err == (
        f"note: {tmp_path} holds temporary files of an earlier --copy-to out.db that did not finish: "
        f"{', '.join(left)}; they are not used, and can be deleted\n")
    assert sorted(cold_entities(tmp_path / "out.db")) == ["e1", "e3"]


def test_a_dependency_whose_other_entity_was_deleted_while_cold_is_named_listed_and_dropped_on_request(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 54 #5: e0 -> e1 went cold with e1; e0 was deleted from the hot tables since. Restoring e1 is
    refused naming the dependency and e0 (nothing written), `cold` lists the orphan, --drop-orphaned drops
    it and says so."""
    import sqlite3
    from contextlib import closing

    from signet_rl.emergence.cold import move_to_cold
    from signet_rl.graph.store import read_graph

    move_to_cold(store, ["e1"], copy=True)
    with closing(sqlite3.connect(store)) as conn:
        conn.execute("DELETE FROM entity_attributes WHERE aspect_id IN "
                     "(SELECT id FROM entity_aspects WHERE entity_id = 'e0')")
        for table, column in (("entity_aspects", "entity_id"), ("community_members", "entity_id"),
                              ("memory_entity_mentions", "entity_id"), ("entities", "id")):
            conn.execute(f"DELETE FROM {table} WHERE {column} = 'e0'")
        conn.commit()
    middle = snapshot(store)
    assert main(["restore", str(store), "e1", "--copy"]) == 2
    assert capsys.readouterr().err == (
        f"error: {store}: cannot restore dependency 'd0' of entity 'e1': its other entity 'e0' is neither in "
        "the hot tables nor in the cold tier (deleted since the move); nothing was restored. Restore with "
        "--drop-orphaned (drop_orphaned=True) to drop the dependency\n")
    assert snapshot(store) == middle
    assert main(["cold", str(store)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "orphaned cold rows: 1 (no restore brings them back as they are)",
        "  entity_dependencies d0: points at 'e0', which is in neither tier"]
    assert main(["restore", str(store), "e1", "--copy", "--drop-orphaned"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "dropped cold dependency d0: its other entity e0 is in neither tier"
    assert cold_entities(store) == [] and "d0" not in set(read_graph(store).dependencies["id"])
    assert main(["cold", str(store)]) == 0 and "orphaned" not in capsys.readouterr().out


def test_copy_to_reads_a_live_wal_store_as_a_consistent_snapshot(store: Path, tmp_path: Path) -> None:
    """Review 54 #11: a daemon holds the store open in WAL mode, with a committed write still in the -wal
    and one in flight; --copy-to copies what was committed, leaves the live store alone, and prunes the copy
    (while the live store itself is refused in place)."""
    import sqlite3
    from contextlib import closing

    plan = plan_file(tmp_path, ["e1"])
    (e3,) = sql(store, "SELECT name FROM entities WHERE id = 'e3'")[0]
    with closing(sqlite3.connect(store)) as daemon, closing(sqlite3.connect(store)) as writer:
        daemon.execute("PRAGMA journal_mode=WAL")
        daemon.execute("PRAGMA wal_autocheckpoint=0")
        daemon.execute("UPDATE entities SET name = 'committed' WHERE id = 'e2'")
        daemon.commit()
        writer.execute("BEGIN")
        writer.execute("UPDATE entities SET name = 'in flight' WHERE id = 'e3'")
        assert Path(f"{store}-wal").exists()
        out = tmp_path / "out.db"
        assert main(["prune", str(store), "--plan", str(plan), "--copy-to", str(out)]) == 0
        assert main(["prune", str(store), "--plan", str(plan), "--in-place-copy"]) == 2
        writer.rollback()
        assert sql(out, "SELECT id, name FROM entities WHERE id IN ('e2', 'e3') ORDER BY id") == [
            ("e2", "committed"), ("e3", e3)]  # the committed write in the -wal, not the one in flight
        assert cold_entities(out) == ["e1"] and cold_entities(store) == []
        assert not Path(f"{out}-wal").exists()
