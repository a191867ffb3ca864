"""``python -m signet_rl.emergence``: apply a pruning plan to an offline store copy, list and restore its
cold tier (issue 29 §4, §6: cold-tier moves in a Signet store happen only offline, on a copy).

Commands::

    python -m signet_rl.emergence prune STORE --plan PLAN.json --copy-to OUT.db
    python -m signet_rl.emergence prune COPY.db --plan PLAN.json --in-place-copy
    python -m signet_rl.emergence cold STORE
    python -m signet_rl.emergence restore COPY.db ID [ID ...] --copy [--drop-orphaned]

``prune`` reads the plan (:meth:`~signet_rl.emergence.health.PruningPlan.save`'s JSON: a training run's
``artifacts/emergence/pruning.json`` with ``emergence.health=true``, or ``experiments/emergence_report.py
--part pruning --save-plans DIR``) and moves its entities to the cold tier
(:func:`~signet_rl.emergence.cold.move_to_cold`, one transaction). With ``--copy-to`` the store is copied
first through SQLite's backup API from a read-only connection: a live store (a daemon writing it, a
``-wal`` beside it) is fine here, it is read, never written, and the backup is a consistent snapshot of it;
the copy is in rollback-journal mode. The move runs on a temporary file beside ``OUT.db``
(``.OUT.db.XXXXXXXX.tmp``), and only a finished copy is linked to ``OUT.db``, which must not exist (a
hard link: an ``OUT.db`` that appears meanwhile is never overwritten). ``--in-place-copy`` says ``STORE``
already is an offline copy: it and the files ``restore`` rewrites are refused with a ``-wal`` or
``-journal`` beside them (a writer is using them, or one crashed mid-transaction: the refusal says how to
tell and what to do). ``restore`` brings entities back (:func:`~signet_rl.emergence.cold.restore_from_cold`;
``--copy`` says the file is an offline copy), and ``cold`` lists the cold entities, the cold frontier and
any orphaned cold rows (read-only). Each prints the rows it moved per table. Any error names the file, the
entity or the row, exits with status 2, and writes nothing.

A process killed during ``--copy-to`` leaves ``OUT.db`` absent (never half-written) and may leave its
temporary file (and that file's ``-journal``) beside it; the next ``--copy-to`` to the same name names them
on stderr, and they can be deleted.
"""

from __future__ import annotations

import argparse
import glob
import os
import sqlite3
import sys
import uuid
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from signet_rl.emergence.cold import (
    ColdMove,
    cold_entities,
    cold_frontier,
    cold_orphans,
    move_to_cold,
    restore_from_cold,
)
from signet_rl.emergence.health import PruningPlan
from signet_rl.graph.store import StoreError, open_read_only

__all__ = ["main"]


def _rows(moved: ColdMove) -> list[str]:
    width = max(len(t) for t in moved.rows)
    return [f"  {table:<{width}}  {n:>7,}" for table, n in moved.rows.items()]


def copy_store(store: Path, out: Path) -> Path:
    """Copy ``store`` to a temporary file beside ``out`` through SQLite's backup API (read-only on
    ``store``); the caller renames it. Raises :class:`FileExistsError` when ``out`` exists."""
    if out.exists():
        raise FileExistsError(f"{out} already exists; --copy-to writes a new file only (remove it, or pick "
                              "another name)")
    if not store.is_file():
        raise FileNotFoundError(f"Signet store {store} does not exist")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"folder {out.parent} of --copy-to does not exist")
    stale = sorted(p.name for p in out.parent.glob(f".{glob.escape(out.name)}.*.tmp*"))
    if stale:
        print(f"note: {out.parent} holds temporary files of an earlier --copy-to {out.name} that did not "
              f"finish: {', '.join(stale)}; they are not used, and can be deleted", file=sys.stderr)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with closing(open_read_only(store)) as src, closing(sqlite3.connect(tmp)) as dst:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # an offline copy: no -wal left beside it
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def prune(args: argparse.Namespace) -> int:
    plan = PruningPlan.load(args.plan)
    if not plan.entity_ids:
        print(f"plan {args.plan} prunes no entity; nothing to move")
        return 0
    if args.copy_to is None:
        target = args.store
        moved = move_to_cold(target, plan.entity_ids, copy=True, reason=args.reason)
    else:
        target = args.copy_to
        tmp = copy_store(args.store, target)
        try:
            try:
                moved = move_to_cold(tmp, plan.entity_ids, copy=True, reason=args.reason)
            except (StoreError, ValueError, sqlite3.DatabaseError) as exc:  # name STORE, not the temp file
                text = str(exc).replace(f"{tmp}: ", "").replace(str(tmp), str(args.store))
                raise type(exc)(f"{args.store} (plan {args.plan}, --copy-to {target}): {text}") from None
            try:  # a link never replaces a file that appeared while the copy was made
                os.link(tmp, target)
            except FileExistsError:
                raise FileExistsError(f"{target} appeared while the copy was made; nothing was "
                                      "written") from None
        finally:
            tmp.unlink(missing_ok=True)
    print(f"moved {len(moved.entity_ids):,} entities ({len(plan.unused):,} unused, {len(plan.sick):,} sick) "
          f"of plan {args.plan} to the cold tier of {target}; rows per table:")
    print("\n".join(_rows(moved)))
    return 0


def restore(args: argparse.Namespace) -> int:
    if bool(args.ids) == args.all:
        raise ValueError("restore: name the entity ids or --all (every cold entity), "
                         "not both and not neither")
    ids = cold_entities(args.store) if args.all else args.ids
    if not ids:
        raise ValueError(f"{args.store}: the cold tier holds no entity; nothing to restore")
    moved = restore_from_cold(args.store, ids, copy=args.copy, drop_orphaned=args.drop_orphaned)
    print(f"restored {len(moved.entity_ids):,} entities from the cold tier of {args.store}; rows per table:")
    print("\n".join(_rows(moved)))
    for dep, gone in moved.dropped:
        print(f"dropped cold dependency {dep}: its other entity {gone} is in neither tier")
    return 0


def cold(args: argparse.Namespace) -> int:
    ids = cold_entities(args.store)
    frontier = cold_frontier(args.store)
    print(f"{len(ids):,} cold entities in {args.store}")
    for i in ids:
        print(f"  {i}")
    print(f"cold frontier: {len(frontier):,} dependencies from a hot entity to a cold one")
    for dep, hot, cold_id, direction in frontier:
        print(f"  E:{hot}>D{'+' if direction > 0 else '-'}:{dep}>E:{cold_id}")
    orphans = cold_orphans(args.store)
    if orphans:
        print(f"orphaned cold rows: {len(orphans):,} (no restore brings them back as they are)")
        for table, key, _, why in orphans:
            print(f"  {table} {key}: {why}")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m signet_rl.emergence",
                                 description="The cold tier of an offline Signet store copy (issue 29 §4).")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prune", help="move a pruning plan's entities to the cold tier of a store copy")
    p.add_argument("store", type=Path, help="the Signet store (read only with --copy-to)")
    p.add_argument("--plan", type=Path, required=True, help="the plan (PruningPlan.save's JSON)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--copy-to", type=Path, help="copy the store here first (must not exist) and prune "
                                                    "the copy")
    where.add_argument("--in-place-copy", action="store_true",
                       help="STORE already is an offline copy no daemon uses: prune it in place")
    p.add_argument("--reason", default="pruned", help="kept as the rows' archived_reason")
    p.set_defaults(run=prune)
    r = sub.add_parser("restore", help="bring entities back from the cold tier of a store copy")
    r.add_argument("store", type=Path)
    r.add_argument("ids", nargs="*", help="entity ids")
    r.add_argument("--all", action="store_true", help="every entity in the cold tier")
    r.add_argument("--copy", action="store_true", required=True,
                   help="say the store is an offline copy no daemon uses (required)")
    r.add_argument("--drop-orphaned", action="store_true",
                   help="drop (and report) a cold dependency whose other entity was deleted since the move, "
                        "instead of refusing the restore")
    r.set_defaults(run=restore)
    c = sub.add_parser("cold", help="list the cold entities and the cold frontier (read-only)")
    c.add_argument("store", type=Path)
    c.set_defaults(run=cold)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors are printed to stderr as ``error: <message>`` with exit status 2."""
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (StoreError, ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # not a database, a damaged file
        print(f"error: {args.store}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
