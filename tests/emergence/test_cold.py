"""The cold tier: a move and a restore leave every table of a real store as it was, byte for byte."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet_rl.emergence.cold import (
    ColdTierError,
    cold_entities,
    cold_frontier,
    move_to_cold,
    rate_cold,
    restore_from_cold,
)
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
    Memory,
    Mention,
)
from signet_rl.graph.store import read_graph, write_graph


def build(n_entities: int, edges: list[tuple[int, int]], mentions: list[tuple[int, int]],
          n_memories: int) -> KnowledgeGraph:
    """A small graph: entity i has one aspect with one attribute citing memory i % n_memories."""
    entities = [Entity(id=f"e{i}", name=f"entity {i}", description=None if i % 2 else f"d{i}")
                for i in range(n_entities)]
    memories = [Memory(id=f"m{j}", content=f"memory number {j} about tabs", importance=0.25 + j / 100)
                for j in range(n_memories)]
    aspects = [Aspect(id=f"a{i}", entity_id=f"e{i}", name=f"aspect {i}") for i in range(n_entities)]
    attributes = [Attribute(id=f"t{i}", aspect_id=f"a{i}", memory_id=f"m{i % n_memories}",
                            content=f"prefers thing {i}", confidence=0.1 * (i % 10))
                  for i in range(n_entities)]
    deps = [Dependency(id=f"d{k}", source_entity_id=f"e{s}", target_entity_id=f"e{t}",
                       dependency_type="uses", strength=0.3)
            for k, (s, t) in enumerate(dict.fromkeys(edges)) if s != t]
    ments = [Mention(memory_id=f"m{m}", entity_id=f"e{e}", mention_text=None, confidence=0.5)
             for m, e in dict.fromkeys(mentions)]
    return KnowledgeGraph.from_records(
        entities=entities, memories=memories, aspects=aspects, attributes=attributes,
        dependencies=deps, mentions=ments, communities=[Community(id="c0", size=n_entities)],
        community_members=[CommunityMember(community_id="c0", entity_id=f"e{i}")
                           for i in range(n_entities)])


def snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """``SELECT rowid, *`` of every table (FTS5's shadow tables excepted: checked by query below)."""
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'memories_fts%' "
            "ORDER BY name")]
        out = {t: conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall() for t in names}
        out["fts"] = conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'tabs' "
                                  "ORDER BY rowid").fetchall()
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
    return out


def sql(path: Path, query: str, *params: object) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(query, params).fetchall()


def make_store(folder: Path, graph: KnowledgeGraph) -> Path:
    path = write_graph(graph, folder / "copy.db")
    with closing(sqlite3.connect(path)) as conn:  # values write_graph never writes: a blob, Signet's
        conn.execute("UPDATE entities SET embedding = randomblob(16) WHERE rowid % 2 = 0")  # columns
        conn.execute("UPDATE memories SET why = 'because', confidence = 1 WHERE rowid % 3 = 0")
        conn.commit()
    return path


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 7), n_mem=st.integers(1, 6),
       edges=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=10),
       ments=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6)), max_size=10),
       pick=st.sets(st.integers(0, 6), min_size=1, max_size=4), in_two=st.booleans())
def test_round_trip_restores_every_row_byte_for_byte(n: int, n_mem: int, edges: list[tuple[int, int]],
                                                     ments: list[tuple[int, int]], pick: set[int],
                                                     in_two: bool) -> None:
    edges = [(s % n, t % n) for s, t in edges]
    ments = [(m % n_mem, e % n) for m, e in ments]
    chosen = sorted(f"e{i % n}" for i in pick)
    chosen = list(dict.fromkeys(chosen))
    with tempfile.TemporaryDirectory() as tmp:
        path = make_store(Path(tmp), build(n, edges, ments, n_mem))
        before = snapshot(path)
        moved = move_to_cold(path, chosen, copy=True, reason="unused")
        assert sorted(cold_entities(path)) == sorted(chosen)
        assert sql(path, f"SELECT count(*) FROM entities WHERE id IN ({','.join('?' * len(chosen))})",
                   *chosen) == [(0,)]
        assert moved.rows["entities"] == len(chosen)
        hot = read_graph(path)  # what is left is a valid graph
        assert set(hot.entities["id"]).isdisjoint(chosen)
        cold = sql(path, "SELECT memory_id, archived_reason FROM memories_cold")
        assert sorted(m for m, _ in cold) == sorted(moved.memory_ids)
        assert {r for _, r in cold} <= {"signet_rl:unused"}
        if in_two and len(chosen) > 1:  # restored one at a time, in reverse order
            for entity in reversed(chosen):
                restore_from_cold(path, entity, copy=True)
                read_graph(path)  # valid after each partial restore: no edge to a cold entity
        else:
            restore_from_cold(path, chosen, copy=True)
        assert snapshot(path) == before
        assert cold_entities(path) == []


def test_move_takes_the_entity_rows_and_only_its_own_memories(tmp_path: Path) -> None:
    # e0 -> e1 -> e2; m0 mentioned by e0 only, m1 by e0 and e1; attributes t_i cite m(i % 3).
    path = make_store(tmp_path, build(3, [(0, 1), (1, 2)], [(0, 0), (1, 0), (1, 1)], 3))
    moved = move_to_cold(path, "e0", copy=True, reason="sick")
    assert moved.rows == {"entities": 1, "entity_aspects": 1, "entity_attributes": 1,
                          "entity_dependencies": 1, "memory_entity_mentions": 2,
                          "community_members": 1, "memories": 1}
    assert moved.memory_ids == ("m0",)  # m1 is still mentioned by e1
    assert sql(path, "SELECT memory_id, cold_source_id, archived_reason, content FROM memories_cold") == [
        ("m0", "e0", "signet_rl:sick", "memory number 0 about tabs")]
    assert sql(path, "SELECT table_name, row_key, entity_id FROM signet_rl_cold_rows ORDER BY rowid") == [
        ("entities", "e0", "e0"), ("entity_aspects", "a0", "e0"), ("entity_attributes", "t0", "e0"),
        ("entity_dependencies", "d0", "e0"), ("memory_entity_mentions", "m0/e0", "e0"),
        ("memory_entity_mentions", "m1/e0", "e0"), ("community_members", "c0/e0", "e0")]
    assert sql(path, "SELECT id FROM memories ORDER BY rowid") == [("m1",), ("m2",)]
    assert sql(path, "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'tabs'") == [(2,), (3,)]


def test_a_live_file_or_a_non_copy_is_refused(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(2, [], [], 1))
    before = snapshot(path)
    with pytest.raises(ColdTierError, match=r"happens only offline on a copy; copy the file .* pass "
                                            r"copy=True"):
        move_to_cold(path, "e0")
    Path(f"{path}-wal").write_bytes(b"")
    with pytest.raises(ColdTierError,
                       match=r"has a -wal beside it: a writer is using it, or one was not closed"):
        move_to_cold(path, "e0", copy=True)
    Path(f"{path}-wal").unlink()
    assert snapshot(path) == before
    with closing(sqlite3.connect(path, isolation_level=None)) as writer:  # a writer inside a transaction
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE entities SET name = name")
        assert Path(f"{path}-journal").exists()
        with pytest.raises(ColdTierError, match=r"a writer is using it \(it holds the write lock\); "
                                                r"cold-tier move needs an offline copy"):
            move_to_cold(path, "e0", copy=True)
        writer.execute("ROLLBACK")
    assert snapshot(path) == before


def test_unknown_or_already_cold_ids_are_named_and_nothing_moves(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(3, [(0, 1)], [(0, 0)], 2))
    before = snapshot(path)
    with pytest.raises(ColdTierError, match=r"entity 'e9' is not in the store; nothing was moved"):
        move_to_cold(path, ["e0", "e9"], copy=True)
    assert snapshot(path) == before  # e0 was not half moved
    move_to_cold(path, "e0", copy=True)
    with pytest.raises(ColdTierError, match=r"entity 'e0' is already in the cold tier"):
        move_to_cold(path, "e0", copy=True)


def test_restoring_an_id_that_is_not_cold_names_it(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(3, [], [], 2))
    move_to_cold(path, "e2", copy=True)
    middle = snapshot(path)
    with pytest.raises(ColdTierError, match=r"entity 'e1' is not in the cold tier \(it is in the hot "
                                            r"tables\); nothing was restored"):
        restore_from_cold(path, ["e2", "e1"], copy=True)
    with pytest.raises(ColdTierError, match=r"entity 'nope' is not in the cold tier \(it is not in the "
                                            r"store\)"):
        restore_from_cold(path, "nope", copy=True)
    assert snapshot(path) == middle  # e2 was not half restored


def test_a_cold_row_that_no_longer_matches_the_schema_is_named(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(3, [(0, 1)], [(0, 0)], 2))
    move_to_cold(path, "e0", copy=True)
    with closing(sqlite3.connect(path)) as conn:
        (text,) = conn.execute("SELECT row_json FROM signet_rl_cold_rows WHERE row_key = 'a0'").fetchone()
        row = json.loads(text)
        row["columns"][3] = "title"  # 'name' renamed since the move
        conn.execute("UPDATE signet_rl_cold_rows SET row_json = ? WHERE row_key = 'a0'", (json.dumps(row),))
        conn.commit()
    middle = snapshot(path)
    with pytest.raises(ColdTierError, match=r"cold row entity_aspects 'a0' does not match the schema: its "
                                            r"columns no longer match the table's \(lacks name; has "
                                            r"unknown title\); nothing was restored"):
        restore_from_cold(path, "e0", copy=True)
    assert snapshot(path) == middle


def test_a_broken_memories_cold_row_is_named(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(2, [], [(0, 0)], 2))
    move_to_cold(path, "e0", copy=True)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE memories_cold SET original_row_json = '{\"rowid\": 1}'")
        (archive,) = conn.execute("SELECT archive_id FROM memories_cold").fetchone()
        conn.commit()
    middle = snapshot(path)
    with pytest.raises(ColdTierError, match=rf"cold row memories_cold '{archive}' \(memory 'm0'\) does "
                                            r"not match the schema: not a signet_rl cold row"):
        restore_from_cold(path, "e0", copy=True)
    assert snapshot(path) == middle


def test_a_plain_version_1_store_is_migrated_on_the_copy(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(2, [], [], 1))
    with closing(sqlite3.connect(path)) as conn:  # as a store written before migration 2
        conn.execute("DROP TABLE signet_rl_cold_rows")
        conn.execute("DELETE FROM signet_rl_migrations WHERE version = 2")
        conn.commit()
    copy = tmp_path / "copy2.db"
    shutil.copy(path, copy)
    move_to_cold(copy, "e1", copy=True)
    assert sql(copy, "SELECT max(version) FROM signet_rl_migrations") == [(2,)]
    assert cold_entities(path) == []


def test_an_explorer_rediscovers_a_pruned_entity_and_a_positive_rating_brings_it_back(tmp_path: Path) -> None:
    # e0 -> e1 -> e2, e3 -> e1: prune e1; explorers can step to it from e0 (forward) and from e2, e3
    path = make_store(tmp_path, build(4, [(0, 1), (1, 2), (3, 1)], [(0, 1)], 2))
    before = snapshot(path)
    move_to_cold(path, "e1", copy=True, reason="unused")
    assert cold_frontier(path) == [("d0", "e0", "e1", 1), ("d1", "e2", "e1", -1), ("d2", "e3", "e1", 1)]
    assert rate_cold(path, "e1", -1, copy=True) is None and cold_entities(path) == ["e1"]
    moved = rate_cold(path, "e1", +1, copy=True)
    assert moved is not None and moved.entity_ids == ("e1",)
    assert snapshot(path) == before and cold_frontier(path) == []


def test_rating_a_pruned_item_that_is_not_cold_names_it(tmp_path: Path) -> None:
    path = make_store(tmp_path, build(2, [(0, 1)], [], 1))
    before = snapshot(path)
    with pytest.raises(ColdTierError, match=r"cannot rate pruned entity 'e0': it is not in the cold tier "
                                            r"\(it is in the hot tables\)"):
        rate_cold(path, "e0", 1, copy=True)
    with pytest.raises(ColdTierError, match=r"cannot rate pruned entity 'e7': it is not in the cold tier "
                                            r"\(it is not in the store\)"):
        rate_cold(path, "e7", 1, copy=True)
    assert snapshot(path) == before


def test_round_trip_on_signets_own_schema(tmp_path: Path, signet_schema_path: Path) -> None:
    """A database made from Signet's v30 schema, with rows as its daemon writes them (Signet's columns,
    SQLite's datetime format, a job naming a memory): a move and a restore leave every table as it was."""
    path = tmp_path / "signet.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(signet_schema_path.read_text())
        conn.executemany(
            "INSERT INTO memories (id, type, content, importance, created_at, updated_at, updated_by, "
            "vector_clock, content_hash) VALUES (?, 'fact', ?, ?, '2025-01-01T10:00:00.000Z', "
            "'2025-01-02T10:00:00.000Z', 'daemon', '{\"a\":3}', ?)",
            [("m1", "prefers tabs over spaces", 0.8, "h1"), ("m2", "tabs in the go code", None, "h2"),
             ("m3", "a job is pending for tabs", 0.5, "h3")])
        conn.executemany(
            "INSERT INTO entities (id, name, entity_type, created_at, updated_at, mentions, embedding) "
            "VALUES (?, ?, 'tool', datetime('now'), datetime('now'), ?, ?)",
            [("e1", "tabs", 3, b"\x00\x01\xff"), ("e2", "go", None, None)])
        conn.execute("INSERT INTO entity_aspects (id, entity_id, name, canonical_name) VALUES "
                     "('a1', 'e1', 'Style', 'style')")
        conn.execute("INSERT INTO entity_attributes (id, aspect_id, memory_id, kind, content, "
                     "normalized_content) VALUES ('t1', 'a1', 'm1', 'attribute', 'prefers tabs', "
                     "'prefers tabs')")
        conn.execute("INSERT INTO entity_dependencies (id, source_entity_id, target_entity_id, "
                     "dependency_type) VALUES ('d1', 'e2', 'e1', 'uses')")
        conn.executemany("INSERT INTO memory_entity_mentions (memory_id, entity_id) VALUES (?, ?)",
                         [("m1", "e1"), ("m2", "e1"), ("m2", "e2"), ("m3", "e1")])
        job_cols = {r[1]: r for r in conn.execute("PRAGMA table_info(memory_jobs)")}
        required = [c for c, r in job_cols.items() if r[3] and r[4] is None and not r[5]]
        values = {c: "x" for c in required} | {"memory_id": "m3"}
        conn.execute(f"INSERT INTO memory_jobs ({', '.join(values)}) VALUES "
                     f"({', '.join('?' * len(values))})", list(values.values()))
        conn.commit()
    before = snapshot(path)
    moved = move_to_cold(path, "e1", copy=True)
    assert moved.memory_ids == ("m1",)  # m2: mentioned by e2; m3: a job names it
    assert read_graph(path).num_entities == 1
    restore_from_cold(path, "e1", copy=True)
    after = snapshot(path)
    migrated = {"signet_rl_cold_rows", "signet_rl_migrations", "communities", "community_members",
                "signet_rl_meta", "signet_rl_nulls"}  # the copy gained signet_rl's migrations
    assert set(after) - set(before) == migrated
    deps_before = before.pop("entity_dependencies")
    assert {t: rows for t, rows in after.items() if t not in migrated | {"entity_dependencies"}} == before
    deps = after["entity_dependencies"]  # plus the migration's two columns at their defaults
    assert [row[:-2] for row in deps] == deps_before and deps[0][-2:] == (0.7, "single-memory")


def test_an_edge_to_an_entity_that_stays_cold_stays_cold_with_it(tmp_path: Path) -> None:
    # e0 -> e1 -> e2: e0 and e1 move together (d0 is filed under its source e0); e0 comes back alone
    path = make_store(tmp_path, build(3, [(0, 1), (1, 2)], [(0, 0), (1, 1)], 3))
    before = snapshot(path)
    move_to_cold(path, ["e0", "e1"], copy=True)
    moved = restore_from_cold(path, "e0", copy=True)
    assert moved.rows["entity_dependencies"] == 0  # d0 would point at cold e1
    assert sql(path, "SELECT id FROM entity_dependencies") == []
    assert sql(path, "SELECT row_key, entity_id FROM signet_rl_cold_rows WHERE table_name = "
                     "'entity_dependencies' ORDER BY rowid") == [("d0", "e1"), ("d1", "e1")]
    read_graph(path)  # a valid graph: no edge to a missing entity
    assert cold_frontier(path) == [("d0", "e0", "e1", 1), ("d1", "e2", "e1", -1)]
    restore_from_cold(path, "e1", copy=True)
    assert snapshot(path) == before
