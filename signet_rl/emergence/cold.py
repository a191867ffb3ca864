"""The lossless cold tier: move an entity out of a Signet store's hot tables, and bring it back.

:func:`move_to_cold` takes one or more entities out of the tables traversal reads and keeps every row:

- the entity's **memories** (those no remaining row still points at: a memory another entity mentions,
  another entity's attribute cites, or another Signet table names in a ``memory_id`` column — documents,
  jobs — stays hot) go to Signet's own ``memories_cold``, one archive row
  each, with Signet's columns filled from the memory and the whole original row (its ``rowid`` and every
  column's SQLite value, typed) in ``original_row_json``;
- its **graph rows** — the ``entities`` row, its ``entity_aspects``, their ``entity_attributes``, every
  ``entity_dependencies`` row touching it, its ``memory_entity_mentions`` and ``community_members`` — go to
  ``signet_rl_cold_rows`` (signet_rl's store migration 2), one row each, kept the same way.

:func:`restore_from_cold` puts them back (a dependency to an entity that stays cold stays in the tier, filed
under that entity, and comes back with it): the same values in the same columns, at the same ``rowid`` where
that is still free (a rowid a newer row has taken since is the one thing that can change; the FTS index
follows ``memories`` through Signet's triggers either way). A round trip leaves ``SELECT rowid, *`` of every
table as it was, byte for byte (``tests/emergence/test_cold.py`` checks it as a property). Rows of Signet
tables signet_rl does not traverse that name a moved entity (``relations``, ``skill_meta``, ``task_meta``)
stay where they are, untouched.

Cold moves rewrite a store, so they happen **offline, on a copy**: both functions refuse a file unless the
caller passes ``copy=True`` to say it is a copy no daemon is using, and refuse even then a file with a
``-wal`` beside it (a connection is open, or one was not closed: the message says how to recover) or one
whose write lock another connection holds (a writer inside a transaction). A ``-journal`` that a crashed
writer left is not refused: SQLite rolls it back (a hot journal) or replaces it (one that never reached the
file) when the lock is taken. Each call is one transaction: on any error nothing is written.

    >>> moved = move_to_cold("copy.db", ["e7"], copy=True, reason="unused")  # doctest: +SKIP
    >>> restore_from_cold("copy.db", ["e7"], copy=True)  # doctest: +SKIP

:class:`ColdSplit` is the same tier in memory, for a training run that walks a pruned graph: the full graph
and the set of cold entities; :attr:`ColdSplit.hot` is the graph :func:`move_to_cold` would leave (the same
rows go: the entities, their aspects, attributes, dependencies, mentions, community rows, and the memories
no hot row points at), :meth:`ColdSplit.frontier` is :func:`cold_frontier`, and :meth:`ColdSplit.restore`
brings entities back (their rows return in their original order, as :func:`restore_from_cold` returns them
to their rowids). The trainer's cold explorers (:mod:`signet_rl.emergence.rediscovery`) walk it.

From the command line (``python -m signet_rl.emergence``, :mod:`signet_rl.emergence.__main__`): ``prune``
applies a saved pruning plan to a store copy, ``restore`` brings entities back, ``cold`` lists the tier.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from signet_rl.graph.model import KnowledgeGraph
from signet_rl.graph.store import StoreError, apply_migrations

__all__ = ["COLD_GRAPH_TABLES", "ColdMove", "ColdSplit", "ColdTierError", "cold_entities", "cold_frontier",
           "cold_orphans", "move_to_cold", "rate_cold", "restore_from_cold"]

#: Graph tables whose rows move with an entity, in the order they are restored (parents first).
COLD_GRAPH_TABLES: tuple[str, ...] = (
    "entities", "entity_aspects", "entity_attributes", "entity_dependencies",
    "memory_entity_mentions", "community_members",
)
#: ``archived_reason`` prefix marking a ``memories_cold`` row this module wrote (``signet_rl:<reason>``).
REASON_PREFIX = "signet_rl:"


class ColdTierError(StoreError):
    """A cold move or restore cannot be done: the message names the file, the entity or row, and the fix."""


@dataclass(frozen=True)
class ColdMove:
    """What one :func:`move_to_cold` (or :func:`restore_from_cold`) call moved: row counts per table."""

    entity_ids: tuple[str, ...]
    rows: dict[str, int]
    memory_ids: tuple[str, ...]
    #: cold dependencies dropped on restore (``drop_orphaned``): ``(dependency_id, missing_entity_id)``
    dropped: tuple[tuple[str, str], ...] = ()


# --------------------------------------------------------------------------------------------------
# Typed values: a row kept as JSON that gives back exactly the SQLite values (int, float, text, blob, null).


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"blob": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float):
        return {"real": value.hex()}  # exact, and distinct from an integer
    return value  # int, str, None


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"blob"}:
            return base64.b64decode(value["blob"])
        if set(value) == {"real"}:
            return float.fromhex(value["real"])
        raise ValueError(f"unknown typed value {value!r}")
    if value is None or (isinstance(value, int | str) and not isinstance(value, bool)):
        return value
    raise ValueError(f"unexpected value {value!r}")


def _row_json(rowid: int, columns: Sequence[str], values: Sequence[Any]) -> str:
    return json.dumps({"rowid": rowid, "columns": list(columns),
                       "values": [_encode(v) for v in values]}, separators=(",", ":"))


def _parse_row(text: str | None, columns: list[str], what: str,
               where: Path) -> tuple[int, list[Any]]:
    """A kept row's rowid and values, checked against the table's columns now."""
    try:
        row = json.loads(text) if text is not None else None
        if not isinstance(row, dict) or set(row) != {"rowid", "columns", "values"}:
            raise ValueError("not a signet_rl cold row (expected rowid, columns and values)")
        if row["columns"] != columns:
            have, want = set(row["columns"]), set(columns)
            diff = [f"lacks {', '.join(sorted(want - have))}" if want - have else "",
                    f"has unknown {', '.join(sorted(have - want))}" if have - want else ""]
            detail = "; ".join(d for d in diff if d) or "column order differs"
            raise ValueError(f"its columns no longer match the table's ({detail})")
        if len(row["values"]) != len(columns) or not isinstance(row["rowid"], int):
            raise ValueError("its values do not match its columns")
        return row["rowid"], [_decode(v) for v in row["values"]]
    except (TypeError, ValueError) as exc:
        raise ColdTierError(f"{where}: cold row {what} does not match the schema: {exc}; nothing was "
                            "restored. Restore it with the signet_rl version that moved it, or "
                            "migrate the row by hand") from None


# --------------------------------------------------------------------------------------------------
# Opening a copy


def _open_copy(path: str | os.PathLike[str], copy: bool, verb: str) -> tuple[sqlite3.Connection, Path]:
    path = Path(path)
    if not copy:
        raise ColdTierError(
            f"{path}: cold-tier {verb} rewrites the store, and happens only offline on a copy; copy the "
            f"file (no daemon using it) and pass copy=True to say it is one")
    if not path.is_file():
        raise FileNotFoundError(f"Signet store {path} does not exist")
    if Path(f"{path}-wal").exists():  # an idle live connection and a crashed one look the same
        raise ColdTierError(
            f"{path}: has a -wal beside it: a writer is using it, or one was not closed (it crashed or was "
            f"killed). Cold-tier {verb} needs an offline copy. If no process has the file open, open and "
            f"close it once with SQLite (`sqlite3 {path} 'PRAGMA quick_check'`: that checkpoints the WAL and "
            f"removes the -wal), then run this again; if one does, make a copy with "
            f"`python -m signet_rl.emergence prune STORE --plan PLAN.json --copy-to OUT.db`")
    # A -journal beside a rollback-journal file is a writer inside a transaction (it holds the write lock)
    # or what one that crashed left: SQLite rolls a hot journal back when the lock is taken, and a
    # transaction that never reached the file leaves a journal that is not hot, which the next write
    # transaction replaces. So the lock, taken without waiting, tells them apart.
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        conn.close()
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        raise ColdTierError(f"{path}: a writer is using it (it holds the write lock); cold-tier {verb} needs "
                            "an offline copy") from None
    try:
        apply_migrations(conn, path)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
        raise
    return conn, path


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _now() -> str:
    ts = pd.Timestamp.now(tz="UTC").tz_localize(None)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def _ids(entity_ids: Iterable[str] | str) -> tuple[str, ...]:
    ids = (entity_ids,) if isinstance(entity_ids, str) else tuple(entity_ids)
    if not ids:
        raise ValueError("no entity ids given")
    bad = [i for i in ids if not isinstance(i, str) or not i]
    if bad:
        raise ValueError(f"entity ids must be non-empty strings, got {bad[0]!r}")
    return tuple(dict.fromkeys(ids))


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


# --------------------------------------------------------------------------------------------------
# Moving


def _graph_rows(ids: tuple[str, ...]) -> dict[str, tuple[str, str, str, tuple[str, ...]]]:
    """``table -> (where clause, key expression, owner expression, where parameters)``: the rows that
    move with ``ids``, how each is keyed, and which moving entity it is filed under (a dependency between
    two moving entities under its source)."""
    q = _placeholders(len(ids))
    aspects = f"SELECT id FROM entity_aspects WHERE entity_id IN ({q})"
    plan = {
        "entities": (f"id IN ({q})", "id", "id", ids),
        "entity_aspects": (f"entity_id IN ({q})", "id", "entity_id", ids),
        "entity_attributes": (
            f"aspect_id IN ({aspects})", "id",
            "(SELECT entity_id FROM entity_aspects a WHERE a.id = aspect_id)", ids),
        "entity_dependencies": (
            f"source_entity_id IN ({q}) OR target_entity_id IN ({q})", "id",
            f"CASE WHEN source_entity_id IN ({q}) THEN source_entity_id ELSE target_entity_id END",
            ids + ids),
        "memory_entity_mentions": (f"entity_id IN ({q})", "memory_id || '/' || entity_id",
                                   "entity_id", ids),
        "community_members": (f"entity_id IN ({q})", "community_id || '/' || entity_id",
                              "entity_id", ids),
    }
    return plan


def move_to_cold(path: str | os.PathLike[str], entity_ids: Iterable[str] | str, *, copy: bool = False,
                 reason: str = "pruned") -> ColdMove:
    """Move entities and their rows to the cold tier of the store at ``path``, in one transaction.

    Args:
        path: a Signet store (or one signet_rl wrote) — an offline copy.
        entity_ids: the entities to move.
        copy: must be True: the caller says ``path`` is a copy no daemon uses.
        reason: kept in ``archived_reason`` (``signet_rl:<reason>`` in ``memories_cold``).

    Returns:
        What moved.

    Raises:
        ColdTierError: not a copy, a live file, an entity that is not in the hot tables (naming it: it is
            unknown, or already cold). Nothing is written.
        FileNotFoundError: no such file.
    """
    ids = _ids(entity_ids)
    conn, where = _open_copy(path, copy, "move")
    with closing(conn):
        try:
            moved = _move(conn, ids, reason, where)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return moved


def _move(conn: sqlite3.Connection, ids: tuple[str, ...], reason: str, where: Path) -> ColdMove:
    q = _placeholders(len(ids))
    hot = {r[0] for r in conn.execute(f"SELECT id FROM entities WHERE id IN ({q})", ids)}
    for i in ids:
        if i not in hot:
            cold = conn.execute("SELECT 1 FROM signet_rl_cold_rows WHERE table_name = 'entities' AND "
                                "row_key = ?", (i,)).fetchone()
            state = "is already in the cold tier" if cold else "is not in the store"
            raise ColdTierError(f"{where}: entity {i!r} {state}; nothing was moved")
    present = _tables(conn)
    now = _now()
    counts: dict[str, int] = {}
    # The memories that go: mentioned by a moving entity, or cited by a moving attribute, and not
    # mentioned by a staying entity nor cited by a staying attribute.
    aspects = f"SELECT id FROM entity_aspects WHERE entity_id IN ({q})"
    memory_ids = [r[0] for r in conn.execute(
        f"""SELECT id FROM memories WHERE id IN (
                SELECT memory_id FROM memory_entity_mentions WHERE entity_id IN ({q})
                UNION SELECT memory_id FROM entity_attributes WHERE aspect_id IN ({aspects}))
            AND id NOT IN (SELECT memory_id FROM memory_entity_mentions WHERE entity_id NOT IN ({q}))
            AND id NOT IN (SELECT memory_id FROM entity_attributes WHERE memory_id IS NOT NULL AND
                           (aspect_id IS NULL OR aspect_id NOT IN ({aspects})))
            ORDER BY rowid""", ids * 4)]
    # ... nor pointed at by any other table's memory_id (Signet's document_memories, memory_jobs, ...).
    others = sorted(t for t in present if t not in (*COLD_GRAPH_TABLES, "memories", "memories_cold",
                                                    "entity_attributes", "signet_rl_cold_rows")
                    and not t.startswith("memories_fts") and "memory_id" in _columns(conn, t))
    if memory_ids and others:
        used: set[str] = set()
        for t in others:
            used.update(r[0] for r in conn.execute(
                f"SELECT memory_id FROM {t} WHERE memory_id IN ({_placeholders(len(memory_ids))})",
                memory_ids))
        memory_ids = [m for m in memory_ids if m not in used]
    # The moving entity each such memory is filed under (memories_cold.cold_source_id): one that mentions
    # it, else the one whose attribute cites it.
    owners: dict[str, str] = {}
    for memory_id, entity_id in conn.execute(
            f"""SELECT memory_id, entity_id FROM memory_entity_mentions WHERE entity_id IN ({q})
                UNION ALL SELECT t.memory_id, a.entity_id FROM entity_attributes t
                JOIN entity_aspects a ON a.id = t.aspect_id WHERE a.entity_id IN ({q})""", ids * 2):
        owners.setdefault(memory_id, entity_id)
    for table, (cond, key, owner, params) in _graph_rows(ids).items():
        if table not in present:
            continue
        columns = _columns(conn, table)
        owner_params = ids if "?" in owner else ()  # the SELECT's placeholders come before WHERE's
        rows = conn.execute(f"SELECT rowid, {key}, {owner}, {', '.join(columns)} FROM {table} "
                            f"WHERE {cond} ORDER BY rowid", owner_params + params).fetchall()
        conn.executemany(
            "INSERT INTO signet_rl_cold_rows (table_name, row_key, entity_id, archived_at, "
            "archived_reason, row_json) VALUES (?, ?, ?, ?, ?, ?)",
            [(table, r[1], r[2], now, reason, _row_json(r[0], columns, r[3:])) for r in rows])
        counts[table] = len(rows)
    # Delete children first (the store may enforce foreign keys).
    for table in reversed(COLD_GRAPH_TABLES):
        if table in present:
            cond, _, _, params = _graph_rows(ids)[table]
            conn.execute(f"DELETE FROM {table} WHERE {cond}", params)
    if memory_ids:
        _memories_to_cold(conn, memory_ids, owners, reason, now)
    counts["memories"] = len(memory_ids)
    return ColdMove(entity_ids=ids, rows=counts, memory_ids=tuple(memory_ids))


#: memories_cold columns copied from the memory's column of the same name.
_SAME = ("type", "category", "content", "confidence", "importance", "source_id", "source_type", "tags",
         "who", "why", "project", "content_hash", "normalized_content", "extraction_status",
         "embedding_model", "extraction_model", "update_count")


def _memories_to_cold(conn: sqlite3.Connection, memory_ids: list[str], owners: dict[str, str],
                      reason: str, now: str) -> None:
    mem_cols = _columns(conn, "memories")
    cold_cols = set(_columns(conn, "memories_cold"))
    same = [c for c in _SAME if c in mem_cols and c in cold_cols]
    q = _placeholders(len(memory_ids))
    rows = conn.execute(f"SELECT rowid, {', '.join(mem_cols)} FROM memories WHERE id IN ({q}) "
                        "ORDER BY rowid", memory_ids).fetchall()
    extra = [c for c in ("agent_id",) if c in mem_cols and c in cold_cols]
    cols = ["archive_id", "memory_id", *same, "original_created_at", "archived_at", "archived_reason",
            "cold_source_id", *extra, "original_row_json"]
    values = []
    for r in rows:
        row = dict(zip(mem_cols, r[1:], strict=True))
        values.append((uuid.uuid4().hex, row["id"], *(row[c] for c in same), row["created_at"], now,
                       REASON_PREFIX + reason, owners[row["id"]],
                       *(row[c] for c in extra), _row_json(r[0], mem_cols, r[1:])))
    conn.executemany(f"INSERT INTO memories_cold ({', '.join(cols)}) VALUES "
                     f"({_placeholders(len(cols))})", values)
    conn.execute(f"DELETE FROM memories WHERE id IN ({q})", memory_ids)


# --------------------------------------------------------------------------------------------------
# Restoring


def cold_entities(path: str | os.PathLike[str]) -> list[str]:
    """The ids of the entities in the cold tier of ``path`` (read-only; empty before migration 2)."""
    from signet_rl.graph.store import open_read_only

    with closing(open_read_only(path)) as conn:
        if "signet_rl_cold_rows" not in _tables(conn):
            return []
        return [r[0] for r in conn.execute(
            "SELECT row_key FROM signet_rl_cold_rows WHERE table_name = 'entities' ORDER BY rowid")]


def restore_from_cold(path: str | os.PathLike[str], entity_ids: Iterable[str] | str, *,
                      copy: bool = False, drop_orphaned: bool = False) -> ColdMove:
    """Bring entities (and the memories that went with them) back from the cold tier, in one transaction.

    Rows go back with their original values, at their original ``rowid`` where it is still free. A cold
    dependency to an entity that stays cold stays in the tier, filed under that entity. One to an entity
    that is neither hot nor cold (deleted while this one was cold) cannot come back: the restore is refused,
    or with ``drop_orphaned`` the dependency is deleted from the tier and listed in
    :attr:`ColdMove.dropped`.

    Raises:
        ColdTierError: not a copy, a live file, an id that is not in the cold tier, a kept row that no
            longer matches its table's columns, a row whose key is hot again, or a dependency whose other
            entity is gone (without ``drop_orphaned``); each names the id or row. Nothing is written.
    """
    ids = _ids(entity_ids)
    conn, where = _open_copy(path, copy, "restore")
    with closing(conn):
        try:
            moved = _restore(conn, ids, where, drop_orphaned)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return moved


def _insert(conn: sqlite3.Connection, table: str, rowid: int, columns: list[str], values: list[Any],
            what: str, where: Path) -> None:
    taken = conn.execute(f"SELECT 1 FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    cols = columns if taken else ["rowid", *columns]
    vals = values if taken else [rowid, *values]
    try:
        conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({_placeholders(len(cols))})",
                     vals)
    except sqlite3.IntegrityError as exc:
        raise ColdTierError(f"{where}: cannot restore {what}: {exc} (a hot row took its key since it "
                            "was moved); nothing was restored") from None


def _restore(conn: sqlite3.Connection, ids: tuple[str, ...], where: Path,
             drop_orphaned: bool) -> ColdMove:
    q = _placeholders(len(ids))
    all_cold = {r[0] for r in conn.execute(
        "SELECT row_key FROM signet_rl_cold_rows WHERE table_name = 'entities'")}
    cold = all_cold & set(ids)
    dropped: list[tuple[str, str]] = []
    for i in ids:
        if i not in cold:
            hot = conn.execute("SELECT 1 FROM entities WHERE id = ?", (i,)).fetchone()
            state = "it is in the hot tables" if hot else "it is not in the store"
            raise ColdTierError(f"{where}: entity {i!r} is not in the cold tier ({state}); nothing was "
                                "restored")
    present = _tables(conn)
    counts: dict[str, int] = {}
    for table in COLD_GRAPH_TABLES:
        rows = conn.execute(
            f"SELECT rowid, row_key, row_json FROM signet_rl_cold_rows WHERE table_name = ? AND "
            f"entity_id IN ({q}) ORDER BY rowid", (table, *ids)).fetchall()
        if not rows:
            continue
        if table not in present:
            raise ColdTierError(f"{where}: cold row {table} {rows[0][1]!r} belongs to table {table}, "
                                "which the store no longer has; nothing was restored")
        columns = _columns(conn, table)
        back = []
        for cold_rowid, key, text in rows:
            rowid, values = _parse_row(text, columns, f"{table} {key!r}", where)
            if table == "entity_dependencies":  # an edge to an entity that stays cold stays cold with it
                row = dict(zip(columns, values, strict=True))
                other = next((e for e in (row["source_entity_id"], row["target_entity_id"]) if e not in ids
                              and not conn.execute("SELECT 1 FROM entities WHERE id = ?", (e,)).fetchone()),
                             None)
                if other is not None and other in all_cold:
                    conn.execute("UPDATE signet_rl_cold_rows SET entity_id = ? WHERE rowid = ?",
                                 (other, cold_rowid))
                    continue
                if other is not None:  # deleted while this entity was cold
                    if not drop_orphaned:
                        mine = row["target_entity_id"] if row["source_entity_id"] == other \
                            else row["source_entity_id"]
                        raise ColdTierError(
                            f"{where}: cannot restore dependency {key!r} of entity {mine!r}: its other "
                            f"entity {other!r} is neither in the hot tables nor in the cold tier "
                            "(deleted since the move); nothing was restored. Restore with --drop-orphaned "
                            "(drop_orphaned=True) to drop the dependency")
                    conn.execute("DELETE FROM signet_rl_cold_rows WHERE rowid = ?", (cold_rowid,))
                    dropped.append((key, other))
                    continue
            _insert(conn, table, rowid, columns, values, f"{table} row {key!r}", where)
            back.append(cold_rowid)
        if back:
            conn.execute(f"DELETE FROM signet_rl_cold_rows WHERE rowid IN ({_placeholders(len(back))})", back)
        counts[table] = len(back)
    # The memories filed under these entities, and any other cold memory a restored row points at.
    mem_cols = _columns(conn, "memories")
    archived = conn.execute(
        f"""SELECT archive_id, memory_id, original_row_json FROM memories_cold
            WHERE archived_reason LIKE '{REASON_PREFIX}%' AND (cold_source_id IN ({q})
              OR memory_id IN (SELECT memory_id FROM memory_entity_mentions WHERE entity_id IN ({q}))
              OR memory_id IN (SELECT t.memory_id FROM entity_attributes t JOIN entity_aspects a
                               ON a.id = t.aspect_id WHERE a.entity_id IN ({q})))
            ORDER BY rowid""", ids * 3).fetchall()
    restored = []
    for archive_id, memory_id, text in archived:
        rowid, values = _parse_row(text, mem_cols, f"memories_cold {archive_id!r} (memory "
                                   f"{memory_id!r})", where)
        _insert(conn, "memories", rowid, mem_cols, values, f"memory {memory_id!r}", where)
        restored.append(memory_id)
    if archived:
        conn.execute(f"DELETE FROM memories_cold WHERE archive_id IN ({_placeholders(len(archived))})",
                     [a[0] for a in archived])
    counts["memories"] = len(archived)
    return ColdMove(entity_ids=ids, rows=counts, memory_ids=tuple(restored), dropped=tuple(dropped))


def _hot_and_cold(conn: sqlite3.Connection) -> tuple[set[str], set[str]]:
    """The ids of the hot entities and of the entities in the cold tier."""
    hot = {r[0] for r in conn.execute("SELECT id FROM entities")}
    cold = {r[0] for r in conn.execute(
        "SELECT row_key FROM signet_rl_cold_rows WHERE table_name = 'entities'")}
    return hot, cold


def cold_orphans(path: str | os.PathLike[str]) -> list[tuple[str, str, str, str]]:
    """Cold rows no restore can bring back as they are: ``(table, row_key, entity_id, why)`` for a row
    filed under an entity that is not in the cold tier, and a cold dependency with an endpoint that is
    neither hot nor cold (deleted since the move). Read-only."""
    from signet_rl.graph.store import open_read_only

    with closing(open_read_only(path)) as conn:
        if "signet_rl_cold_rows" not in _tables(conn):
            return []
        hot, cold = _hot_and_cold(conn)
        columns = _columns(conn, "entity_dependencies")
        out = []
        for table, key, owner, text in conn.execute(
                "SELECT table_name, row_key, entity_id, row_json FROM signet_rl_cold_rows ORDER BY rowid"):
            if owner not in cold:
                out.append((table, key, owner, f"filed under {owner!r}, which is not in the cold tier"))
                continue
            if table != "entity_dependencies":
                continue
            _, values = _parse_row(text, columns, f"entity_dependencies {key!r}", Path(path))
            row = dict(zip(columns, values, strict=True))
            gone = [e for e in (row["source_entity_id"], row["target_entity_id"]) if e not in hot | cold]
            if gone:
                out.append((table, key, owner, f"points at {gone[0]!r}, which is in neither tier"))
        return out


# --------------------------------------------------------------------------------------------------
# Rediscovery: explorers walk into cold territory; a positively rated find comes back.


def cold_frontier(path: str | os.PathLike[str]) -> list[tuple[str, str, str, int]]:
    """Where an explorer can step from the hot graph into the cold tier: ``(dependency_id, hot_entity_id,
    cold_entity_id, direction)`` for every cold dependency with one endpoint hot and one cold
    (``direction`` +1 when the hot entity is the source: the explorer path is
    ``E:<hot>>D+:<dependency>>E:<cold>``, else ``D-``). Read-only."""
    from signet_rl.graph.store import open_read_only

    with closing(open_read_only(path)) as conn:
        if "signet_rl_cold_rows" not in _tables(conn):
            return []
        hot, cold = _hot_and_cold(conn)
        columns = _columns(conn, "entity_dependencies")
        out = []
        for key, text in conn.execute("SELECT row_key, row_json FROM signet_rl_cold_rows WHERE "
                                      "table_name = 'entity_dependencies' ORDER BY rowid"):
            _, values = _parse_row(text, columns, f"entity_dependencies {key!r}", Path(path))
            row = dict(zip(columns, values, strict=True))
            src, dst = row["source_entity_id"], row["target_entity_id"]
            if src in hot and dst in cold:
                out.append((key, src, dst, +1))
            elif dst in hot and src in cold:
                out.append((key, dst, src, -1))
        return out


def rate_cold(path: str | os.PathLike[str], entity_id: str, rating: int, *,
              copy: bool = False) -> ColdMove | None:
    """A rating of an explorer path that reached cold ``entity_id``: a positive one brings the entity
    back (:func:`restore_from_cold`) and returns what moved; zero or negative leaves it cold (None).

    Raises:
        ColdTierError: ``entity_id`` is not in the cold tier (naming it: hot, or unknown), or the
            :func:`restore_from_cold` errors. Nothing is written then.
        ValueError: a rating not in {-1, 0, 1}.
    """
    if isinstance(rating, bool) or rating not in (-1, 0, 1):
        raise ValueError(f"rating of cold entity {entity_id!r} must be -1, 0 or 1, got {rating!r}")
    if entity_id not in cold_entities(path):
        from signet_rl.graph.store import open_read_only

        with closing(open_read_only(path)) as conn:
            hot = conn.execute("SELECT 1 FROM entities WHERE id = ?", (entity_id,)).fetchone()
        state = "it is in the hot tables" if hot else "it is not in the store"
        raise ColdTierError(f"{path}: cannot rate pruned entity {entity_id!r}: it is not in the cold tier "
                            f"({state}); rate hot items through the feedback log")
    if rating <= 0:
        return None
    return restore_from_cold(path, entity_id, copy=copy)


# --------------------------------------------------------------------------------------------------
# The cold tier in memory: a training run over a pruned graph.


class ColdSplit:
    """A graph split into its hot part and the cold entities' rows (module docstring).

    Args:
        graph: the full graph (every row, hot and cold).
        cold: the entities in the cold tier.

    Raises:
        ColdTierError: an id that is not an entity of ``graph`` (naming it).

    Example:
        >>> split = ColdSplit(graph, ["e7"])  # doctest: +SKIP
        >>> split.hot.num_entities == graph.num_entities - 1  # doctest: +SKIP
        True
        >>> split = split.restore(["e7"])  # doctest: +SKIP
    """

    def __init__(self, graph: KnowledgeGraph, cold: Iterable[str]) -> None:
        self.full = graph
        known = set(graph.entities["id"])
        ids = tuple(dict.fromkeys(cold))
        for i in ids:
            if i not in known:
                raise ColdTierError(f"entity {i!r} is not in the graph; nothing was moved to the cold tier")
        self.cold: frozenset[str] = frozenset(ids)
        self._hot: KnowledgeGraph | None = None

    @property
    def hot(self) -> KnowledgeGraph:
        """The graph without the cold entities' rows (what :func:`move_to_cold` leaves in a store)."""
        if self._hot is None:
            self._hot = self._split()
        return self._hot

    def _split(self) -> KnowledgeGraph:
        g, cold = self.full, self.cold
        if not cold:
            return g
        aspects = g.aspects["entity_id"].isin(cold)
        cold_aspects = set(g.aspects.loc[aspects, "id"])
        attributes = g.attributes["aspect_id"].isin(cold_aspects)
        deps = g.dependencies
        dependencies = deps["source_entity_id"].isin(cold) | deps["target_entity_id"].isin(cold)
        mentions = g.mentions["entity_id"].isin(cold)
        # the memories that go: mentioned by a cold entity or cited by a cold attribute, and neither
        # mentioned by a hot entity nor cited by a hot attribute
        going = set(g.mentions.loc[mentions, "memory_id"]) | set(
            g.attributes.loc[attributes, "memory_id"].dropna())
        staying = set(g.mentions.loc[~mentions, "memory_id"]) | set(
            g.attributes.loc[~attributes, "memory_id"].dropna())
        memories = g.memories["id"].isin(going - staying)
        return g.replace(
            entities=g.entities[~g.entities["id"].isin(cold)].reset_index(drop=True),
            aspects=g.aspects[~aspects].reset_index(drop=True),
            attributes=g.attributes[~attributes].reset_index(drop=True),
            dependencies=deps[~dependencies].reset_index(drop=True),
            mentions=g.mentions[~mentions].reset_index(drop=True),
            community_members=g.community_members[~g.community_members["entity_id"].isin(cold)]
            .reset_index(drop=True),
            memories=g.memories[~memories].reset_index(drop=True))

    def frontier(self) -> list[tuple[str, str, str, int]]:
        """:func:`cold_frontier` of this split: ``(dependency_id, hot_entity_id, cold_entity_id, direction)``
        for every dependency with one endpoint hot and one cold, in the graph's order."""
        deps = self.full.dependencies
        out = []
        for key, src, dst in zip(deps["id"], deps["source_entity_id"], deps["target_entity_id"], strict=True):
            if src in self.cold and dst not in self.cold:
                out.append((str(key), str(dst), str(src), -1))
            elif dst in self.cold and src not in self.cold:
                out.append((str(key), str(src), str(dst), +1))
        return out

    def restore(self, entity_ids: Iterable[str] | str) -> ColdSplit:
        """A split with ``entity_ids`` hot again (their rows back in their original order).

        Raises:
            ColdTierError: an id that is not in the cold tier (naming it: hot, or not in the graph).
        """
        ids = _ids(entity_ids)
        for i in ids:
            if i not in self.cold:
                state = "it is in the hot graph" if i in set(self.full.entities["id"]) else \
                    "it is not in the graph"
                raise ColdTierError(f"entity {i!r} is not in the cold tier ({state}); nothing was restored")
        return ColdSplit(self.full, self.cold - set(ids))
