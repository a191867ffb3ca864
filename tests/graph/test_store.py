"""The SQLite store: Signet's tables and formats, exact round trips, all-or-nothing writes."""

from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet_rl.graph import store
from signet_rl.graph.confidence import DEFAULT_REASON, LADDER
from signet_rl.graph.model import (
    TABLES,
    Aspect,
    Attribute,
    ColdMemory,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
    Memory,
    Mention,
)
from signet_rl.graph.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    StoreError,
    apply_migrations,
    read_graph,
    write_graph,
)

T0 = pd.Timestamp("2024-05-01T12:00:00.123Z")
T1 = pd.Timestamp("2024-06-02T08:30:00Z")
ODD = "naïve ☃ 🧠 ‮rtl‬ e\u0301 \"quoted\" 'single'; DROP TABLE memories; --\n\ttab \x00nul"


def hand_built() -> KnowledgeGraph:
    """A small graph touching every table, every nullable column both ways, and odd text."""
    return KnowledgeGraph.from_records(
        memories=[
            Memory(id="m1", content="Signet keeps memories in SQLite", type="fact", importance=0.9,
                   who="nicholai", project="signet", source_id="s1", source_type="chat",
                   tags="db,storage", created_at=T0, updated_at=T1, last_accessed=T1,
                   access_count=7, pinned=True),
            Memory(id="m2", content="the old deploy script was removed", created_at=T0,
                   is_deleted=True, deleted_at=T1),
            Memory(id="m3", content=ODD, created_at=T1),
        ],
        entities=[
            Entity(id="e1", name="signet", entity_type="project", description="memory daemon",
                   canonical_name="signet", mentions=12, pinned=True, created_at=T0, updated_at=T1),
            Entity(id="e2", name="SQLite", entity_type="tool", created_at=T0),
            Entity(id="e3", name=ODD, entity_type="extracted"),
            Entity(id="e4", name="chunk 7", entity_type="chunk_group"),
        ],
        aspects=[
            Aspect(id="a1", entity_id="e1", name="Design Preferences", weight=0.8, created_at=T0),
            Aspect(id="a2", entity_id="e1", name="storage", canonical_name="storage", weight=0.3,
                   created_at=T0, updated_at=T1),
            Aspect(id="a3", entity_id="e3", name=ODD),
        ],
        attributes=[
            Attribute(id="t1", aspect_id="a1", memory_id="m1", content="prefers tabs",
                      status="superseded", superseded_by="t2", confidence=0.6, importance=0.4,
                      created_at=T0),
            Attribute(id="t2", aspect_id="a1", memory_id="m1", content="prefers spaces",
                      normalized_content="prefers spaces", confidence=0.9, created_at=T1,
                      updated_at=T1),
            Attribute(id="t3", aspect_id="a2", kind="constraint", content="never drop the WAL",
                      importance=1.0),
            Attribute(id="t4", content="not yet classified", status="deleted"),
            Attribute(id="t5", aspect_id="a3", content=ODD),
        ],
        dependencies=[
            Dependency(id="d1", source_entity_id="e1", target_entity_id="e2", dependency_type="uses",
                       strength=0.5, created_at=T0),
            Dependency(id="d2", source_entity_id="e1", target_entity_id="e2", dependency_type="uses",
                       aspect_id="a2", strength=0.9, confidence=1.0, reason="user-asserted",
                       created_at=T0, updated_at=T1),
            Dependency(id="d3", source_entity_id="e3", target_entity_id="e1",
                       dependency_type="born in", confidence=0.3, reason="llm-uncertain"),
        ],
        mentions=[
            Mention(memory_id="m1", entity_id="e1", mention_text="Signet", confidence=0.95,
                    created_at=T0),
            Mention(memory_id="m1", entity_id="e2"),
            Mention(memory_id="m3", entity_id="e3", mention_text=ODD, confidence=0.0),
        ],
        memories_cold=[
            ColdMemory(archive_id="c1", memory_id="m2", content="the old deploy script was removed",
                       importance=0.2, original_created_at=T0, archived_at=T1,
                       archived_reason="deleted", original_row_json='{"id": "m2"}'),
            ColdMemory(archive_id="c2", memory_id="gone-forever", content=ODD, type="decision"),
        ],
        communities=[
            Community(id="k1", label="core", cohesion=0.72, size=2, level=0),
            Community(id="k2", size=1, level=1),
        ],
        community_members=[
            CommunityMember(community_id="k1", entity_id="e1"),
            CommunityMember(community_id="k1", entity_id="e2"),
            CommunityMember(community_id="k2", entity_id="e3"),
        ],
        meta={"name": "hand-built", "seed": 3, "modularity": 0.41, "odd": ODD,
              "nested": {"a": [1, 2.5, None, True]}},
    )


def sql(path: Path, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(query, params).fetchall()
        conn.commit()
    return rows


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    return write_graph(hand_built(), tmp_path / "graph.db")


# -- round trips ----------------------------------------------------------------------------------


def test_round_trip_hand_built(stored: Path) -> None:
    g = hand_built()
    h = read_graph(stored)
    assert h.diff(g) == []
    assert h == g
    assert h.meta == g.meta
    assert h.attribute("t1").superseded_by == "t2"
    assert h.attribute("t1").status == "superseded"
    assert h.attribute("t4").aspect_id is None
    assert h.attribute("t1").normalized_content is None
    assert h.attribute("t2").normalized_content == "prefers spaces"
    assert h.memory("m2").is_deleted and h.memory("m2").deleted_at == T1
    assert h.memory("m1").updated_at == T1 and h.memory("m2").updated_at is None
    assert h.memory("m3").content == ODD
    assert h.entity("e3").name == ODD
    assert h.aspect("a1").canonical_name is None and h.aspect("a2").canonical_name == "storage"
    assert h.dependency("d3").reason == "llm-uncertain" and h.dependency("d3").confidence == 0.3
    assert h.dependency("d1").reason == DEFAULT_REASON.value
    assert np.isnan(h.communities.set_index("id").loc["k2", "cohesion"])
    assert h.mentions.loc[1, "confidence"] != h.mentions.loc[1, "confidence"]  # NaN, i.e. NULL


def test_round_trip_empty_graph(tmp_path: Path) -> None:
    g = KnowledgeGraph()
    h = read_graph(write_graph(g, tmp_path / "empty.db"))
    assert h == g and h.meta == {}
    assert all(len(frame) == 0 for frame in h.tables().values())


def test_odd_file_names_work(tmp_path: Path) -> None:
    path = tmp_path / "my store #1?%20 ☃.db"
    assert read_graph(write_graph(hand_built(), path)) == hand_built()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_rows_keep_their_order(stored: Path) -> None:
    h = read_graph(stored)
    assert h.attributes["id"].tolist() == ["t1", "t2", "t3", "t4", "t5"]
    assert h.entities["id"].tolist() == ["e1", "e2", "e3", "e4"]


# -- Signet's tables, columns and formats ---------------------------------------------------------


def test_file_holds_signet_values(stored: Path) -> None:
    assert sql(stored, "SELECT id, created_at, updated_at, pinned, is_deleted "
                       "FROM memories ORDER BY rowid") == [
        ("m1", "2024-05-01T12:00:00.123Z", "2024-06-02T08:30:00.000Z", 1, 0),
        ("m2", "2024-05-01T12:00:00.123Z", "2024-05-01T12:00:00.123Z", 0, 1),
        ("m3", "2024-06-02T08:30:00.000Z", "2024-06-02T08:30:00.000Z", 0, 0),
    ]
    assert sql(stored, "SELECT updated_by, vector_clock, version, content_hash FROM memories "
                       "WHERE id = 'm1'") == [("system", "{}", 1, None)]
    assert sql(stored, "SELECT agent_id, pinned, mentions FROM entities WHERE id = 'e1'") == [
        ("default", 1, 12)]
    # NOT NULL columns the model leaves empty get Signet's values; the ids are listed for reading.
    assert sql(stored, "SELECT canonical_name FROM entity_aspects WHERE id = 'a1'") == [
        ("design preferences",)]
    assert sql(stored, "SELECT normalized_content FROM entity_attributes WHERE id = 't1'") == [
        ("prefers tabs",)]
    nulls = dict(((t, c), json.loads(ids)) for t, c, ids in sql(stored, "SELECT * FROM "
                                                                 "signet_rl_nulls"))
    assert nulls[("entity_attributes", "normalized_content")] == ["t1", "t3", "t4", "t5"]
    assert nulls[("memories", "updated_at")] == ["m2", "m3"]
    assert sql(stored, "SELECT confidence, reason FROM entity_dependencies ORDER BY rowid") == [
        (0.7, "single-memory"), (1.0, "user-asserted"), (0.3, "llm-uncertain")]
    assert sql(stored, "SELECT version, name FROM signet_rl_migrations") == [
        (m.version, m.name) for m in MIGRATIONS]
    (applied_at,) = sql(stored, "SELECT applied_at FROM signet_rl_migrations")[0]
    assert pd.Timestamp(applied_at).tz is not None and applied_at.endswith("Z")
    meta = {k: json.loads(v) for k, v in sql(stored, "SELECT key, value FROM signet_rl_meta")}
    assert meta == hand_built().meta
    assert sql(stored, "SELECT count(*) FROM communities") == [(2,)]


def test_memories_fts_answers_bm25_queries(stored: Path) -> None:
    query = ("SELECT m.id FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
             "WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts)")
    assert sql(stored, query, ('"sqlite" OR "deploy"',)) == [("m1",), ("m2",)]
    assert sql(stored, query, ('"naïve"',)) == [("m3",)]
    # Signet's triggers are live: inserts, updates and deletes keep the index in step.
    sql(stored, "INSERT INTO memories (id, content, created_at, updated_at) "
                "VALUES ('m9', 'a brand new sqlite note', 'x', 'x')")
    sql(stored, "UPDATE memories SET content = 'nothing left' WHERE id = 'm1'")
    sql(stored, "DELETE FROM memories WHERE id = 'm2'")
    assert sql(stored, query, ('"sqlite" OR "deploy"',)) == [("m9",)]


def test_reads_sqlite_datetime_format(stored: Path) -> None:
    sql(stored, "UPDATE memories SET created_at = '2024-05-01 12:00:00' WHERE id = 'm1'")
    sql(stored, "UPDATE entity_aspects SET created_at = datetime('now') WHERE id = 'a2'")
    h = read_graph(stored)
    assert h.memory("m1").created_at == pd.Timestamp("2024-05-01T12:00:00Z")
    assert abs(h.aspect("a2").created_at - pd.Timestamp.now(tz="UTC")) < pd.Timedelta(minutes=5)


def test_a_row_updated_since_keeps_its_new_value(stored: Path) -> None:
    sql(stored, "UPDATE memories SET updated_at = '2025-01-01T00:00:00.000Z' WHERE id = 'm2'")
    sql(stored, "UPDATE entity_aspects SET canonical_name = 'design' WHERE id = 'a1'")
    h = read_graph(stored)
    assert h.memory("m2").updated_at == pd.Timestamp("2025-01-01", tz="UTC")
    assert h.aspect("a1").canonical_name == "design"
    assert h.memory("m3").updated_at is None


def test_fills_cover_every_signet_not_null_the_model_may_leave_empty(stored: Path) -> None:
    expected = set()
    for table, cols in TABLES.items():
        if table in ("communities", "community_members"):
            continue
        info = {row[1]: row for row in sql(stored, f"PRAGMA table_info({table})")}
        for col in cols:
            notnull = info[col.name][3]  # explicit NULLs bypass defaults, so defaults do not help
            if col.nullable and notnull:
                expected.add((table, col.name))
    assert expected == set(store._FILLS)


def test_migration_defaults_are_the_ladder_default() -> None:
    statements = " ".join(MIGRATIONS[0].statements)
    assert f"confidence REAL DEFAULT {DEFAULT_REASON.prior}" in statements
    assert f"reason TEXT DEFAULT '{DEFAULT_REASON.value}'" in statements
    assert SCHEMA_VERSION == MIGRATIONS[-1].version == len(MIGRATIONS)
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


def test_schema_matches_signet_v30(tmp_path: Path, stored: Path, signet_schema_path: Path) -> None:
    signet = tmp_path / "signet.db"
    with closing(sqlite3.connect(signet)) as conn:
        conn.executescript(signet_schema_path.read_text())
    for table in (*store.REQUIRED_TABLES, "memories_fts"):
        ours = sql(stored, f"PRAGMA table_info({table})")
        theirs = sql(signet, f"PRAGMA table_info({table})")
        if table == "entity_dependencies":  # migration 1 appends two columns, renames nothing
            assert ours[len(theirs):] == [(9, "confidence", "REAL", 0, "0.7", 0),
                                          (10, "reason", "TEXT", 0, "'single-memory'", 0)]
            ours = ours[:len(theirs)]
        assert ours == theirs, table
        assert sql(stored, f"PRAGMA index_list({table})") == sql(signet, f"PRAGMA index_list({table})")
    triggers = "SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
    assert sql(stored, triggers) == sql(signet, triggers)


def test_apply_migrations_is_idempotent(stored: Path) -> None:
    with closing(sqlite3.connect(stored)) as conn:
        assert apply_migrations(conn) == []
    assert sql(stored, "SELECT count(*) FROM signet_rl_migrations") == [(len(MIGRATIONS),)]


def test_apply_migrations_refuses_a_non_signet_database(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "other.db")) as conn:
        conn.execute("CREATE TABLE entities (id TEXT)")
        with pytest.raises(StoreError, match=r"^store: not a Signet store: missing tables "
                                             r"entity_dependencies$"):
            apply_migrations(conn)


# -- writing: refusals and all-or-nothing ---------------------------------------------------------


def test_existing_file_is_refused_unless_overwrite(stored: Path) -> None:
    before = stored.read_bytes()
    with pytest.raises(FileExistsError, match=rf"^{stored} already exists; pass overwrite=True"):
        write_graph(KnowledgeGraph(), stored)
    assert stored.read_bytes() == before
    write_graph(KnowledgeGraph(), stored, overwrite=True)
    assert read_graph(stored) == KnowledgeGraph()


def test_failed_write_leaves_the_old_store_intact(stored: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    before = stored.read_bytes()
    real_rows = store._rows

    def failing_rows(table: str, frame: pd.DataFrame) -> list[tuple[object, ...]]:
        if table == "entity_attributes":  # memories, entities and aspects are already written
            raise RuntimeError("boom while converting entity_attributes")
        return real_rows(table, frame)

    monkeypatch.setattr(store, "_rows", failing_rows)
    with pytest.raises(RuntimeError, match="boom while converting entity_attributes"):
        write_graph(hand_built(), stored, overwrite=True)
    assert stored.read_bytes() == before
    assert sorted(p.name for p in stored.parent.iterdir()) == ["graph.db"]


def test_sqlite_failure_mid_write_names_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    monkeypatch.setattr(store, "SIGNET_INDEXES", (*store.SIGNET_INDEXES, "CREATE INDEX broken"))
    target = tmp_path / "g.db"
    with pytest.raises(StoreError, match=rf"^{target}: writing the full-text index and indexes "
                                         r"failed: incomplete input$"):
        write_graph(hand_built(), target)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("change", "message"), [
    (lambda g: g.replace(entities=g.entities.assign(name=["a", "b", "a", "c"])),
     r"entities rows \['e1', 'e3'\] share name 'a'; Signet requires it to be unique"),
    (lambda g: g.replace(aspects=g.aspects.assign(name=["Storage", "x", "y"])),
     r"entity_aspects rows \['a1', 'a2'\] share entity_id/canonical_name \['e1', 'storage'\]; "
     r"Signet requires it to be unique"),
    (lambda g: KnowledgeGraph(g.tables() | {"entity_attributes": g.attributes.assign(
        aspect_id="nope")}, validate=False),
     r"cannot write an invalid graph: entity_attributes row 't1': aspect_id 'nope' does not "
     r"exist in entity_aspects \(5 such rows\)"),
    (lambda g: KnowledgeGraph(g.tables(), meta={"when": pd.Timestamp(0)}),
     r"graph meta 'when' is not JSON-able: Object of type Timestamp is not JSON serializable"),
])
def test_write_refuses_what_signet_or_json_cannot_hold(tmp_path: Path, change, message: str
                                                       ) -> None:
    target = tmp_path / "g.db"
    with pytest.raises(StoreError, match=rf"^{target}: {message}$"):
        write_graph(change(hand_built()), target)
    assert list(tmp_path.iterdir()) == []


# -- property: any small valid graph survives the trip --------------------------------------------

_text = st.text(max_size=8)
_opt_text = st.none() | _text
_times = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1),
                      timezones=st.just(UTC))
_opt_times = st.none() | _times
_unit = st.floats(0.0, 1.0)
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | _text
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_text, inner, max_size=3), max_leaves=6)


@st.composite
def graphs(draw: st.DrawFn) -> KnowledgeGraph:
    ids = lambda n: st.lists(st.text(min_size=1, max_size=6), min_size=n, max_size=n,  # noqa: E731
                             unique=True)
    n_mem, n_ent, n_asp, n_att = (draw(st.integers(0, 4)) for _ in range(4))
    mem_ids, ent_ids, asp_ids, att_ids = (draw(ids(n)) for n in (n_mem, n_ent, n_asp, n_att))
    memories = [Memory(id=i, content=draw(_text), type=draw(_text), importance=draw(_unit),
                       who=draw(_opt_text), project=draw(_opt_text), source_id=draw(_opt_text),
                       source_type=draw(_opt_text), tags=draw(_opt_text),
                       created_at=draw(_times), updated_at=draw(_opt_times),
                       last_accessed=draw(_opt_times), access_count=draw(st.integers(0, 2**40)),
                       pinned=draw(st.booleans()), is_deleted=draw(st.booleans()),
                       deleted_at=draw(_opt_times)) for i in mem_ids]
    names = draw(st.lists(_text, min_size=n_ent, max_size=n_ent, unique=True))
    entities = [Entity(id=i, name=name, entity_type=draw(st.sampled_from(["person", "extracted"])
                                                          | _text),
                       description=draw(_opt_text), canonical_name=draw(_opt_text),
                       mentions=draw(st.integers(0, 2**40)), pinned=draw(st.booleans()),
                       created_at=draw(_times), updated_at=draw(_opt_times))
                for i, name in zip(ent_ids, names, strict=True)]
    # Aspect names start with their position, so Signet's unique (entity, canonical name) holds;
    # explicit canonical names are upper case, which the lower-cased fill never is.
    aspects = [Aspect(id=i, entity_id=draw(st.sampled_from(ent_ids)), name=f"{k}:{draw(_text)}",
                      canonical_name=draw(st.none() | st.just(f"C{k}")), weight=draw(_unit),
                      created_at=draw(_times), updated_at=draw(_opt_times))
               for k, i in enumerate(asp_ids)] if ent_ids else []
    asp_ids = [a.id for a in aspects]
    pick = lambda pool: st.none() | st.sampled_from(pool) if pool else st.none()  # noqa: E731
    attributes = [Attribute(id=i, content=draw(_text), aspect_id=draw(pick(asp_ids)),
                            memory_id=draw(pick(mem_ids)), kind=draw(st.sampled_from(
                                ["attribute", "constraint"])),
                            normalized_content=draw(_opt_text), confidence=draw(_unit),
                            importance=draw(_unit),
                            status=draw(st.sampled_from(["active", "superseded", "deleted"])),
                            superseded_by=draw(pick(att_ids)), created_at=draw(_times),
                            updated_at=draw(_opt_times)) for i in att_ids]
    dependencies = [Dependency(id=f"d{k}", source_entity_id=draw(st.sampled_from(ent_ids)),
                               target_entity_id=draw(st.sampled_from(ent_ids)),
                               dependency_type=draw(_text), aspect_id=draw(pick(asp_ids)),
                               strength=draw(_unit), confidence=draw(_unit),
                               reason=draw(st.sampled_from([r.value for r in LADDER])),
                               created_at=draw(_times), updated_at=draw(_opt_times))
                    for k in range(draw(st.integers(0, 4)))] if ent_ids else []
    pairs = draw(st.sets(st.tuples(st.sampled_from(mem_ids), st.sampled_from(ent_ids)),
                         max_size=4)) if mem_ids and ent_ids else set()
    mentions = [Mention(memory_id=m, entity_id=e, mention_text=draw(_opt_text),
                        confidence=draw(st.none() | _unit), created_at=draw(_opt_times))
                for m, e in sorted(pairs)]
    cold = [ColdMemory(archive_id=i, memory_id=draw(_text), content=draw(_text), type=draw(_text),
                       importance=draw(st.floats(allow_nan=False, allow_infinity=False)),
                       original_created_at=draw(_times), archived_at=draw(_times),
                       archived_reason=draw(_opt_text), original_row_json=draw(_opt_text))
            for i in draw(ids(draw(st.integers(0, 2))))]
    communities = [Community(id=i, label=draw(_opt_text), cohesion=draw(st.none() | _unit),
                             size=draw(st.integers(0, 99)), level=draw(st.integers(0, 3)))
                   for i in draw(ids(draw(st.integers(0, 2))))]
    members = draw(st.sets(st.tuples(st.sampled_from([c.id for c in communities]),
                                     st.sampled_from(ent_ids)), max_size=3)
                   ) if communities and ent_ids else set()
    return KnowledgeGraph.from_records(
        memories=memories, entities=entities, aspects=aspects, attributes=attributes,
        dependencies=dependencies, mentions=mentions, memories_cold=cold,
        communities=communities,
        community_members=[CommunityMember(community_id=c, entity_id=e) for c, e in sorted(members)],
        meta=draw(st.dictionaries(_text, _json, max_size=3)))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_round_trip_property(g: KnowledgeGraph) -> None:
    with tempfile.TemporaryDirectory() as folder:
        h = read_graph(write_graph(g, Path(folder) / "g.db"))
    assert h.diff(g) == []
    assert h.meta == g.meta


# -- writing: folders, orphans and failure at every step (issue 31) -------------------------------


def test_a_missing_parent_folder_is_created(tmp_path: Path) -> None:
    target = tmp_path / "data" / "cache" / "small.db"  # a fresh clone has no data/cache
    assert write_graph(hand_built(), target) == target
    assert read_graph(target) == hand_built()


def test_a_parent_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")
    target = tmp_path / "data" / "small.db"
    with pytest.raises(StoreError) as err:
        write_graph(hand_built(), target)
    assert str(err.value) == (f"{target}: cannot create the folder {target.parent} (File exists); "
                              "write_graph needs a folder it can write in")


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """A folder no one may create files in, root included (root ignores mode bits: ``chattr +i``)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"running as root and chattr +i failed ({done.stderr.strip()}): no read-only folder")
    try:
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_read_only_folder_is_named(read_only_folder: Path) -> None:
    target = read_only_folder / "g.db"
    with pytest.raises(StoreError) as err:
        write_graph(hand_built(), target)
    why = "Operation not permitted" if os.geteuid() == 0 else "Permission denied"
    assert str(err.value) == (f"{target}: cannot create a file in {read_only_folder} ({why}); "
                              "write_graph needs a folder it can write in")


def _orphan(folder: Path, name: str, pid: int) -> Path:
    path = folder / f".{name}.{pid}.0badc0de.tmp"
    path.write_bytes(b"SQLite format 3\x00 half written")
    return path


def test_orphan_temp_files_of_dead_writers_are_removed_on_the_next_write(stored: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)  # exited: no process has this pid now (unless reused; then it is kept)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        orphan = _orphan(stored.parent, stored.name, dead_pid)
        in_use = _orphan(stored.parent, stored.name, live.pid)  # another writer, still running
        other = _orphan(stored.parent, "other.db", dead_pid)  # another store's: not ours to clean
        write_graph(KnowledgeGraph(), stored, overwrite=True)
        assert not orphan.exists() and in_use.exists() and other.exists()
        assert read_graph(stored) == KnowledgeGraph()
    finally:
        live.kill()
        live.wait()


def test_a_writer_killed_mid_write_leaves_an_orphan_the_next_write_removes(stored: Path) -> None:
    before = stored.read_bytes()
    script = (
        "import os, signal, sys\n"
        "from signet_rl.graph import store\n"
        "from signet_rl.graph.model import KnowledgeGraph\n"
        "real = store._rows\n"
        "def rows(table, frame):\n"
        "    if table == 'entity_attributes':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(table, frame)\n"
        "store._rows = rows\n"
        "store.write_graph(store.read_graph(sys.argv[1]), sys.argv[1], overwrite=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", script, str(stored)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    orphans = [p for p in stored.parent.iterdir() if p.name.endswith(".tmp")]
    assert len(orphans) == 1 and orphans[0].name.startswith(".graph.db.")
    assert stored.read_bytes() == before  # the killed write changed nothing
    write_graph(hand_built(), stored, overwrite=True)
    assert sorted(p.name for p in stored.parent.iterdir()) == ["graph.db"]


class _FailingConnection(sqlite3.Connection):
    """A real SQLite connection whose ``fail_at``-th execute/executemany raises (counting from 0)."""

    fail_at = -1
    calls = 0

    def _step(self) -> None:
        n = _FailingConnection.calls
        _FailingConnection.calls += 1
        if n == _FailingConnection.fail_at:
            raise sqlite3.OperationalError(f"injected failure at statement {n}")

    def execute(self, *args, **kwargs):  # type: ignore[override]
        self._step()
        return super().execute(*args, **kwargs)

    def executemany(self, *args, **kwargs):  # type: ignore[override]
        self._step()
        return super().executemany(*args, **kwargs)


_REAL_CONNECT = sqlite3.connect


def _inject(monkeypatch: pytest.MonkeyPatch, fail_at: int, progress_at: int | None = None) -> None:
    """Make write_graph's connection a :class:`_FailingConnection` (and interrupt it after ``progress_at``
    progress ticks of 50 virtual-machine steps when given: writing :func:`hand_built` takes about 215)."""
    _FailingConnection.fail_at, _FailingConnection.calls = fail_at, 0

    def connect(*args, **kwargs):
        conn = _REAL_CONNECT(*args, factory=_FailingConnection, **kwargs)
        if progress_at is not None:  # interrupt inside a statement
            ticks = iter(range(10**9))
            conn.set_progress_handler(lambda: next(ticks) >= progress_at, 50)
        return conn

    monkeypatch.setattr(store.sqlite3, "connect", connect)


def test_a_write_failing_at_any_statement_leaves_the_previous_store_intact(
    stored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, old = stored.read_bytes(), read_graph(stored)
    new = KnowledgeGraph.from_records(entities=[Entity(id="x", name="only me")])
    _inject(monkeypatch, fail_at=-1)
    write_graph(new, stored.parent / "count.db")  # a clean write, to count its statements
    n_statements = _FailingConnection.calls
    (stored.parent / "count.db").unlink()
    assert n_statements > len(store.SIGNET_TABLES) + len(store.SIGNET_INDEXES)
    for fail_at in range(n_statements):
        _inject(monkeypatch, fail_at)
        with pytest.raises(StoreError, match=rf"injected failure at statement {fail_at}$"):
            write_graph(new, stored, overwrite=True)
        assert stored.read_bytes() == before, fail_at
        assert sorted(p.name for p in stored.parent.iterdir()) == ["graph.db"], fail_at
    monkeypatch.undo()
    assert read_graph(stored) == old
    write_graph(new, stored, overwrite=True)  # and the next write goes through
    assert read_graph(stored) == new


@functools.cache
def _old_and_new() -> tuple[KnowledgeGraph, KnowledgeGraph]:
    return KnowledgeGraph.from_records(entities=[Entity(id="x", name="the old store")]), hand_built()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(progress_at=st.integers(0, 240))
def test_a_write_interrupted_inside_any_statement_leaves_the_previous_store_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, progress_at: int
) -> None:
    target = tmp_path / "g.db"
    old, new = _old_and_new()
    write_graph(old, target, overwrite=True)
    before = target.read_bytes()
    _inject(monkeypatch, fail_at=-1, progress_at=progress_at)
    try:
        write_graph(new, target, overwrite=True)
        failed = None
    except StoreError as err:
        failed = str(err)
    finally:
        monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["g.db"]
    if failed is None:  # the write needed fewer steps than progress_at: it went through whole
        assert read_graph(target) == new
    else:
        assert "interrupted" in failed and target.read_bytes() == before
        assert read_graph(target) == old
