"""Importing a real Signet v30 store, read-only, and the errors bad files get."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from signet_rl.datasets.registry import load_dataset
from signet_rl.datasets.signet import import_signet, load_signet_dataset
from signet_rl.graph.confidence import DEFAULT_REASON
from signet_rl.graph.model import GraphValidationError, KnowledgeGraph
from signet_rl.graph.store import SCHEMA_VERSION, StoreError, apply_migrations, read_graph, write_graph

NOW = "2025-03-04T05:06:07.089Z"


def fill_like_signet(conn: sqlite3.Connection) -> None:
    """Rows as Signet's daemon writes them: JS ISO timestamps on memories and entities, SQLite's
    ``datetime('now')`` format on the knowledge tables, agent ids, hashes, clocks, and the oddities
    real stores hold."""
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                     [(v, NOW, f"sum{v}") for v in range(1, 31)])
    conn.executemany(
        "INSERT INTO memories (id, type, content, importance, who, project, tags, created_at, "
        "updated_at, updated_by, access_count, vector_clock, pinned, content_hash, "
        "normalized_content, is_deleted, deleted_at, extraction_status) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'daemon', ?, '{\"a\":3}', ?, ?, ?, ?, ?, 'done')",
        [("m1", "fact", "Nicholai prefers Bun over Node", 0.8, "nicholai", "signet", "tooling",
          "2025-01-01T10:00:00.000Z", "2025-01-02T10:00:00.000Z", 3, 1, "h1",
          "nicholai prefers bun over node", 0, None),
         ("m2", "decision", "Use SQLite WAL mode", None, None, None, None,
          "2025-01-03T10:00:00.500Z", "2025-01-03T10:00:00.500Z", 0, 0, "h2", "use sqlite wal mode",
          0, None),
         ("m3", "fact", "an outdated note", 0.2, None, None, None, "2025-01-04T10:00:00.000Z",
          "2025-02-01T00:00:00.000Z", 0, 0, "h3", "an outdated note", 1,
          "2025-02-01T00:00:00.000Z")])
    conn.executemany(
        "INSERT INTO entities (id, name, entity_type, description, created_at, updated_at, "
        "canonical_name, mentions, agent_id, pinned, pinned_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        "'default', ?, ?)",
        [("e1", "Nicholai", "person", "the user", "2025-01-01T10:00:00.000Z",
          "2025-01-02T10:00:00.000Z", "nicholai", 14, 1, "2025-01-02T10:00:00.000Z"),
         ("e2", "Bun", "tool", None, "2025-01-01T10:00:00.000Z", "2025-01-01T10:00:00.000Z", "bun",
          None, 0, None),
         ("e3", "bun runtime speed", "extracted", None, "2025-01-01T10:00:00.000Z",
          "2025-01-01T10:00:00.000Z", None, 1, 0, None),
         ("e4", "chunk:m1", "chunk_group", None, "2025-01-01T10:00:00.000Z",
          "2025-01-01T10:00:00.000Z", None, 0, 0, None)])
    conn.executemany(
        "INSERT INTO entity_aspects (id, entity_id, name, canonical_name, weight, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [("a1", "e1", "Tooling Preferences", "tooling_preferences", 0.7, "2025-01-02 10:00:00",
          "2025-01-02 11:00:00")])
    conn.execute("INSERT INTO entity_aspects (id, entity_id, name, canonical_name) "
                 "VALUES ('a2', 'e2', 'performance', 'performance')")  # defaults: datetime('now')
    conn.executemany(
        "INSERT INTO entity_attributes (id, aspect_id, memory_id, kind, content, "
        "normalized_content, confidence, importance, status, superseded_by, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [("t1", "a1", "m1", "attribute", "prefers Node", "prefers node", 0.5, 0.5, "superseded",
          "t2", "2024-12-01 09:00:00", "2025-01-02 10:00:00"),
         ("t2", "a1", "m1", "attribute", "prefers Bun", "prefers bun", 0.9, 0.8, "active", None,
          "2025-01-02 10:00:00", "2025-01-02 10:00:00"),
         ("t3", "a1", "m2", "constraint", "never run two daemons", "never run two daemons", 1.0,
          1.0, "active", None, "2025-01-03 10:00:00", "2025-01-03 10:00:00"),
         ("t4", None, "m2", "attribute", "uses WAL", "uses wal", 0.0, 0.5, "active", None,
          "2025-01-03 10:00:00", "2025-01-03 10:00:00")])
    conn.executemany(
        "INSERT INTO entity_dependencies (id, source_entity_id, target_entity_id, aspect_id, "
        "dependency_type, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [("d1", "e1", "e2", "a1", "uses", "2025-01-02 10:00:00", "2025-01-02 10:00:00"),
         ("d2", "e1", "e2", None, "uses", "2025-01-05 10:00:00", "2025-01-05 10:00:00"),
         ("d3", "e3", "e2", None, "informs", "2025-01-05 10:00:00", "2025-01-05 10:00:00")])
    conn.executemany(
        "INSERT INTO memory_entity_mentions VALUES (?, ?, ?, ?, ?)",
        [("m1", "e1", "Nicholai", 0.9, "2025-01-01T10:00:00.000Z"),
         ("m1", "e2", "Bun", None, None),
         ("m2", "e4", None, None, None)])
    conn.execute(
        "INSERT INTO memories_cold (archive_id, memory_id, type, content, importance, "
        "original_created_at, archived_at, archived_reason, agent_id, original_row_json) "
        "VALUES ('c1', 'm3', NULL, 'an outdated note', 0.2, '2025-01-04T10:00:00.000Z', "
        "'2025-02-01T00:00:00.000Z', 'deleted', 'default', '{\"id\":\"m3\"}')")
    # Tables signet_rl does not model are ignored.
    conn.execute("INSERT INTO relations (id, source_entity_id, target_entity_id, relation_type, "
                 "created_at) VALUES ('r1', 'e1', 'e2', 'likes', 'x')")


@pytest.fixture
def signet_db(tmp_path: Path, signet_schema_path: Path) -> Path:
    """A real Signet v30 store in WAL mode, closed cleanly (as the daemon leaves it)."""
    path = tmp_path / "store" / "memories.db"
    path.parent.mkdir()
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(signet_schema_path.read_text())
        conn.execute("PRAGMA journal_mode=WAL")
        fill_like_signet(conn)
        conn.commit()
    assert sorted(p.name for p in path.parent.iterdir()) == ["memories.db"]
    return path


def fingerprint(path: Path) -> tuple[str, int, list[str]]:
    return (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns,
            sorted(p.name for p in path.parent.iterdir()))


def ts(value: str) -> pd.Timestamp:
    return pd.Timestamp(value, tz="UTC")


def test_import_reads_every_table_row_by_row(signet_db: Path) -> None:
    g = import_signet(signet_db)
    assert (g.num_memories, g.num_entities, len(g.aspects), len(g.attributes),
            len(g.dependencies), len(g.mentions), len(g.memories_cold)) == (3, 4, 2, 4, 3, 3, 1)

    m1, m2, m3 = (g.memory(i) for i in ("m1", "m2", "m3"))
    assert (m1.type, m1.content, m1.importance, m1.who, m1.project, m1.tags) == (
        "fact", "Nicholai prefers Bun over Node", 0.8, "nicholai", "signet", "tooling")
    assert (m1.created_at, m1.updated_at, m1.access_count, m1.pinned, m1.is_deleted) == (
        ts("2025-01-01T10:00:00"), ts("2025-01-02T10:00:00"), 3, True, False)
    assert m2.created_at == ts("2025-01-03T10:00:00.500") and m2.importance == 0.5  # NULL: default
    assert m2.type == "decision" and m2.who is None
    assert m3.is_deleted and m3.deleted_at == ts("2025-02-01")

    assert [(e.id, e.name, e.entity_type, e.mentions, e.pinned) for e in g.records("entities")] == [
        ("e1", "Nicholai", "person", 14, True), ("e2", "Bun", "tool", 0, False),
        ("e3", "bun runtime speed", "extracted", 1, False),
        ("e4", "chunk:m1", "chunk_group", 0, False)]
    assert g.entity("e1").canonical_name == "nicholai" and g.entity("e3").canonical_name is None

    a1, a2 = g.aspect("a1"), g.aspect("a2")
    assert (a1.entity_id, a1.name, a1.canonical_name, a1.weight) == (
        "e1", "Tooling Preferences", "tooling_preferences", 0.7)
    assert (a1.created_at, a1.updated_at) == (ts("2025-01-02 10:00:00"), ts("2025-01-02 11:00:00"))
    assert a2.weight == 0.5
    assert abs(a2.created_at - pd.Timestamp.now(tz="UTC")) < pd.Timedelta(minutes=5)

    t1, t2, t3, t4 = (g.attribute(i) for i in ("t1", "t2", "t3", "t4"))
    assert (t1.status, t1.superseded_by, t1.content, t1.normalized_content) == (
        "superseded", "t2", "prefers Node", "prefers node")
    assert (t2.status, t2.superseded_by, t2.confidence, t2.importance) == (
        "active", None, 0.9, 0.8)
    assert t3.kind == "constraint" and t3.memory_id == "m2"
    assert t4.aspect_id is None and t4.memory_id == "m2"  # not yet classified
    assert t1.created_at == ts("2024-12-01 09:00:00")

    deps = g.dependencies.set_index("id")
    assert deps["strength"].tolist() == [0.5, 0.5, 0.5]
    assert deps["reason"].tolist() == [DEFAULT_REASON.value] * 3
    assert deps["confidence"].tolist() == [DEFAULT_REASON.prior] * 3 == [0.7] * 3
    # d1 and d2 repeat (source, target, type): Signet has no unique constraint, so two rows.
    assert deps.loc[["d1", "d2"], ["source_entity_id", "target_entity_id", "dependency_type"]
                    ].drop_duplicates().shape[0] == 1
    assert g.dependency("d1").aspect_id == "a1" and g.dependency("d2").aspect_id is None

    assert g.mentions.astype(object).where(g.mentions.notna(), None).values.tolist() == [
        ["m1", "e1", "Nicholai", 0.9, ts("2025-01-01T10:00:00")],
        ["m1", "e2", "Bun", None, None],
        ["m2", "e4", None, None, None]]
    cold = next(g.records("memories_cold"))
    assert (cold.archive_id, cold.memory_id, cold.type, cold.archived_reason,
            cold.original_row_json, cold.archived_at) == (
        "c1", "m3", "fact", "deleted", '{"id":"m3"}', ts("2025-02-01"))
    assert len(g.communities) == 0 and len(g.community_members) == 0
    assert g.meta == {"signet_store": {"path": str(signet_db), "signet_schema_version": 30,
                                       "signet_rl_schema_version": 0}}


def test_import_changes_nothing_on_disk(signet_db: Path) -> None:
    before = fingerprint(signet_db)
    import_signet(signet_db)
    read_graph(signet_db)
    assert fingerprint(signet_db) == before


def test_import_reads_through_a_live_wal(signet_db: Path) -> None:
    """While Signet's daemon holds the store, its latest rows are still in the -wal file."""
    with closing(sqlite3.connect(signet_db)) as daemon:
        daemon.execute("PRAGMA wal_autocheckpoint=0")
        daemon.execute("INSERT INTO entities (id, name, entity_type, created_at, updated_at) "
                       f"VALUES ('e9', 'fresh', 'concept', '{NOW}', '{NOW}')")
        daemon.commit()
        before = fingerprint(signet_db)
        assert "memories.db-wal" in before[2]
        g = import_signet(signet_db)
        assert fingerprint(signet_db) == before
    assert g.entity("e9").created_at == ts(NOW)


def test_upgraded_copy_keeps_signet_rows_and_gains_signet_rl_tables(signet_db: Path,
                                                                    tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    shutil.copy(signet_db, copy)
    with closing(sqlite3.connect(copy)) as conn:
        assert apply_migrations(conn, copy) == list(range(1, SCHEMA_VERSION + 1))
        assert apply_migrations(conn, copy) == []
        # Signet keeps writing after the upgrade, knowing nothing of the new columns.
        conn.execute("INSERT INTO entity_dependencies (id, source_entity_id, target_entity_id, "
                     "dependency_type) VALUES ('d9', 'e2', 'e1', 'blocks')")
        conn.execute("UPDATE entity_dependencies SET confidence = 0.9, reason = 'multi-memory' "
                     "WHERE id = 'd3'")
        conn.commit()
    plain, upgraded = import_signet(signet_db), import_signet(copy)
    assert upgraded.meta["signet_store"]["signet_rl_schema_version"] == SCHEMA_VERSION
    deps = upgraded.dependencies.set_index("id")
    assert deps.loc[["d1", "d2", "d9"], "reason"].tolist() == ["single-memory"] * 3
    assert deps.loc[["d1", "d2", "d9"], "confidence"].tolist() == [0.7] * 3
    assert (deps.loc["d3", "reason"], deps.loc["d3", "confidence"]) == ("multi-memory", 0.9)
    assert upgraded.replace(dependencies=plain.dependencies).diff(plain) == []


def test_imported_graph_writes_and_reads_back(signet_db: Path, tmp_path: Path) -> None:
    g = import_signet(signet_db)
    assert read_graph(write_graph(g, tmp_path / "again.db")) == g


def test_load_signet_dataset(signet_db: Path) -> None:
    ds = load_signet_dataset(signet_db)
    assert ds.name == f"signet:{signet_db}"
    assert list(ds.graphs) == ["main"] and ds.graph == import_signet(signet_db)
    assert ds.queries == [] and len(ds.truth) == 0
    assert ds.report.files == [str(signet_db)] and ds.report.malformed == []
    assert ds.meta["name"] == "memories" and ds.meta["file"] == str(signet_db)
    assert ds.meta["signet_schema_version"] == 30
    assert ds.meta["counts"] == {"memories": 3, "entities": 4, "aspects": 2, "attributes": 4,
                                 "dependencies": 3, "mentions": 3}
    assert load_dataset(f"signet:{signet_db}").graph == ds.graph


# -- bad input -------------------------------------------------------------------------------------


def small_store(tmp_path: Path, *updates: str, params: tuple[object, ...] = (),
                n_memories: int = 10) -> Path:
    """A signet_rl store (migrated), then some SQL to break it."""
    g = KnowledgeGraph.from_frames(
        memories=pd.DataFrame({"id": [f"m{i}" for i in range(n_memories)],
                               "content": ["a long memory " * 40] * n_memories}),
        entities=pd.DataFrame({"id": ["e1", "e2"], "name": ["one", "two"]}),
        aspects=pd.DataFrame({"id": ["a1"], "entity_id": ["e1"], "name": ["x"]}),
        attributes=pd.DataFrame({"id": ["t1", "t2"], "aspect_id": ["a1", "a1"],
                                 "content": ["c1", "c2"]}),
        dependencies=pd.DataFrame({"id": ["d1", "d2"], "source_entity_id": ["e1", "e2"],
                                   "target_entity_id": ["e2", "e1"],
                                   "dependency_type": ["uses", "uses"]}),
    )
    path = write_graph(g, tmp_path / "bad.db")
    with closing(sqlite3.connect(path)) as conn:
        for update in updates:
            conn.execute(update, params if "?" in update else ())
        conn.commit()
    return path


def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 10)
    return path


def truncated(tmp_path: Path) -> Path:
    path = small_store(tmp_path, n_memories=200)
    path.write_bytes(path.read_bytes()[: 4096 * 8])
    return path


def only_memories(tmp_path: Path) -> Path:
    path = tmp_path / "partial.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT)")
        conn.execute("CREATE TABLE memories_cold (archive_id TEXT)")
    return path


def thin_tables(tmp_path: Path) -> Path:
    path = tmp_path / "thin.db"
    with closing(sqlite3.connect(path)) as conn:
        for table in ("memories", "entities", "entity_aspects", "entity_attributes",
                      "entity_dependencies", "memory_entity_mentions", "memories_cold"):
            conn.execute(f"CREATE TABLE {table} (id TEXT, memory_id TEXT, entity_id TEXT)")
    return path


def empty_file(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    path.touch()
    return path


Setup = Callable[[Path], Path]
BAD_INPUT: list[tuple[str, Setup, type[Exception], str]] = [
    ("missing file", lambda tmp: tmp / "nope.db", FileNotFoundError,
     r"^Signet store {path} does not exist$"),
    ("directory", lambda tmp: tmp, StoreError, r"^{path} is a directory, not a SQLite database$"),
    ("text file", text_file, StoreError,
     r"^{path} is not a SQLite database \(it starts with b'these are my not'\)$"),
    ("empty file", empty_file, StoreError, r"^{path} is not a SQLite database \(the file is empty\)$"),
    ("truncated", truncated, StoreError,
     r"^{path}: the SQLite database is corrupt or truncated \(database disk image is malformed\)"),
    ("missing tables", only_memories, StoreError,
     r"^{path}: not a Signet store: missing tables entities, entity_aspects, entity_attributes, "
     r"entity_dependencies, memory_entity_mentions$"),
    ("missing columns", thin_tables, StoreError,
     r"^{path}: table memories lacks columns type, content, importance, who, project, "
     r"source_id, source_type, tags, created_at, updated_at, last_accessed, access_count, "
     r"pinned, is_deleted, deleted_at$"),
    ("dangling aspect", lambda tmp: small_store(
        tmp, "UPDATE entity_attributes SET aspect_id = 'a404' WHERE id = 't2'"), StoreError,
     r"^{path}: entity_attributes row 't2': aspect_id 'a404' does not exist in entity_aspects "
     r"\(1 such rows\)$"),
    ("NaN confidence", lambda tmp: small_store(
        tmp, "UPDATE entity_dependencies SET confidence = ? WHERE id = 'd2'",
        params=(float("nan"),)), StoreError,
     r"^{path}: entity_dependencies row 'd2': confidence is NULL; expected a number in \[0, 1\] "
     r"\(NaN is stored as NULL\)$"),
    ("confidence above 1", lambda tmp: small_store(
        tmp, "UPDATE entity_dependencies SET confidence = 1.5 WHERE id = 'd1'"), StoreError,
     r"^{path}: entity_dependencies row 'd1': confidence 1.5 is not a number in \[0, 1\]$"),
    ("negative confidence", lambda tmp: small_store(
        tmp, "UPDATE entity_dependencies SET confidence = -0.1 WHERE id = 'd2'"), StoreError,
     r"^{path}: entity_dependencies row 'd2': confidence -0.1 is not a number in \[0, 1\]$"),
    ("unknown reason", lambda tmp: small_store(
        tmp, "UPDATE entity_dependencies SET reason = 'gut-feeling' WHERE id = 'd1'"), StoreError,
     r"^{path}: entity_dependencies row 'd1': unknown reason 'gut-feeling'; expected one of: "
     r"inferred, llm-uncertain, multi-memory, pattern-matched, single-memory, user-asserted$"),
    ("NULL reason", lambda tmp: small_store(
        tmp, "UPDATE entity_dependencies SET reason = NULL WHERE id = 'd2'"), StoreError,
     r"^{path}: entity_dependencies row 'd2': reason is NULL; expected one of: llm-uncertain, "
     r"inferred, pattern-matched, single-memory, multi-memory, user-asserted$"),
    ("bad timestamp", lambda tmp: small_store(
        tmp, "UPDATE memories SET created_at = 'last tuesday' WHERE id = 'm7'"), StoreError,
     r"^{path}: memories row 'm7': created_at 'last tuesday' is not a timestamp$"),
    ("newer store", lambda tmp: small_store(
        tmp, "INSERT INTO signet_rl_migrations VALUES (99, 'from the future', NULL)"), StoreError,
     r"^{path}: written by a newer signet_rl \(store schema version 99; this version reads up "
     r"to {version}\)$"),
]


@pytest.mark.parametrize(("setup", "error", "message"), [case[1:] for case in BAD_INPUT],
                         ids=[case[0] for case in BAD_INPUT])
def test_bad_input_names_file_table_and_row(tmp_path: Path, setup: Setup,
                                            error: type[Exception], message: str) -> None:
    path = setup(tmp_path)
    listing = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(error, match=message.format(path=re.escape(str(path)), version=SCHEMA_VERSION)):
        import_signet(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -wal, -journal or -shm


@pytest.mark.parametrize("case", ["text file", "truncated", "dangling aspect", "unknown reason"])
def test_read_graph_gives_the_same_errors(tmp_path: Path, case: str) -> None:
    _, setup, error, message = next(c for c in BAD_INPUT if c[0] == case)
    path = setup(tmp_path)
    with pytest.raises(error, match=message.format(path=re.escape(str(path)))):
        read_graph(path)


def test_store_error_keeps_the_cause(tmp_path: Path) -> None:
    path = small_store(tmp_path, "UPDATE entity_dependencies SET confidence = 2 WHERE id = 'd1'")
    with pytest.raises(StoreError) as info:
        import_signet(path)
    assert isinstance(info.value.__cause__, GraphValidationError)


# -- a store another process is writing to (issue 31) -----------------------------------------------------

_WRITER = """
import sqlite3, sys
w = sqlite3.connect(sys.argv[1], isolation_level=None)
w.execute("BEGIN EXCLUSIVE")
w.execute("INSERT INTO signet_rl_meta VALUES ('k', '1')")
print("locked", flush=True)
sys.stdin.readline()
w.execute("ROLLBACK")
sys.stdin.readline()
"""


@pytest.fixture
def locked(tmp_path: Path):
    """A store (rollback journal) in the middle of another process's exclusive write; write a line to
    ``proc.stdin`` to make it let go."""
    path = write_graph(KnowledgeGraph(), tmp_path / "memories.db")
    with subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
            yield path, proc
        finally:
            proc.kill()


def test_a_locked_store_is_said_to_be_locked_with_the_way_out(locked) -> None:
    path, proc = locked
    with pytest.raises(StoreError) as err:
        import_signet(path, timeout=0.05)
    comm = Path(f"/proc/{proc.pid}/comm")
    holders = f"; open in pid {proc.pid} ({comm.read_text().strip()})" if comm.exists() else ""
    assert str(err.value) == (
        f"{path} is locked: another connection is writing to it (waited 0.05 s){holders}. Retry when the "
        "write is done, or wait longer with timeout=<seconds> (import_signet, read_graph), or on the command "
        "line dataset=signet dataset.options.timeout=<seconds>"
    )
    assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(StoreError, match=re.escape(f"{path} is locked: another connection is writing")):
        read_graph(path, timeout=0)


def test_the_timeout_waits_for_the_writer(locked) -> None:
    path, proc = locked

    def release() -> None:
        proc.stdin.write("\n")
        proc.stdin.flush()

    timer = threading.Timer(0.2, release)
    timer.start()
    try:
        assert import_signet(path, timeout=60).num_entities == 0  # read once the writer let go
    finally:
        timer.join()


def test_the_timeout_reaches_the_loader_through_the_dataset_options(locked) -> None:
    path, _ = locked
    message = "is locked: another connection is writing to it (waited 0.01 s)"
    with pytest.raises(StoreError, match=re.escape(message)):
        load_dataset(f"signet:{path}", options={"timeout": 0.01})
    for bad in (-1, "soon", float("nan")):
        message = f"timeout must be a number of seconds >= 0, got {bad!r}"
        with pytest.raises(ValueError, match=re.escape(message)):
            load_signet_dataset(path, timeout=bad)


def test_signet_store_memories_through_the_extractor(signet_db: Path) -> None:
    """``extract=true`` (issue 24) lays the extractor's graph over the store's, and changes nothing on
    disk."""
    before = fingerprint(signet_db)
    plain = load_signet_dataset(signet_db)
    ds = load_dataset(f"signet:{signet_db}", options={"extract": True, "extract_encoder": "hashing"})
    g = ds.graph
    assert fingerprint(signet_db) == before
    assert g.meta["extract"]["encoder"] == "hashing-384"
    # the store's rows stay as they are; the extractor adds what it found in the live memories: the small
    # model reads "Nicholai prefers Bun" as one name (a known miss) and "Node" as another
    for table in ("entities", "mentions", "attributes", "dependencies", "aspects"):
        keys = ["memory_id", "entity_id"] if table == "mentions" else ["id"]
        old = plain.graph.table(table)
        assert old.merge(g.table(table), on=keys, how="left", indicator=True)["_merge"].eq("both").all()
    assert set(g.entities["id"]) - set(plain.graph.entities["id"]) == {"ent:nicholai_prefers_bun", "ent:node"}
    new = g.mentions[~g.mentions["entity_id"].isin(plain.graph.entities["id"])]
    assert sorted(zip(new["memory_id"], new["entity_id"], strict=True)) == [
        ("m1", "ent:nicholai_prefers_bun"), ("m1", "ent:node")]
    # the deleted memory m3 is not extracted from; the store file is only read
    extracted_attrs = g.attributes[~g.attributes["id"].isin(plain.graph.attributes["id"])]
    assert set(extracted_attrs["memory_id"]) == {"m1"}
    assert fingerprint(signet_db) == before
