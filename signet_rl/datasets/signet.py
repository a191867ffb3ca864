"""Import a real Signet memory store (``memories.db``, schema v30) as a knowledge graph, read-only.

The import is :func:`~signet_rl.graph.store.read_graph`'s reader on a file opened read-only: nothing in
the source file changes, and no ``-wal`` or ``-journal`` is created beside it. A plain Signet store has
no ``confidence`` or ``reason`` on its dependencies, so every dependency gets
:data:`~signet_rl.graph.confidence.DEFAULT_REASON` (``single-memory``) and its prior, 0.7; a store that
signet_rl has upgraded (:func:`~signet_rl.graph.store.apply_migrations`) or written keeps its own.

What real stores hold, and how it lands:

- attributes whose ``aspect_id`` is NULL (not yet classified) keep ``aspect_id=None``;
- superseded attributes keep ``status='superseded'`` and ``superseded_by``;
- deleted memories are kept, with ``is_deleted=True`` and ``deleted_at``;
- a NULL ``memories.importance`` (Signet's column allows it, default 0.5) reads as 0.5;
- entity types beyond Signet's documented list (``extracted``, ``chunk_group``) are kept as they are;
- duplicate dependencies (same source, target and type; Signet has no unique constraint) stay two rows.

    >>> ds = load_signet_dataset("~/.agents/memory/memories.db")  # doctest: +SKIP
    >>> ds.graph.num_entities  # doctest: +SKIP
    43520
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.graph.store import DEFAULT_TIMEOUT, open_read_only, read_connection, store_versions

__all__ = ["import_signet", "load_signet_dataset"]


def import_signet(path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> KnowledgeGraph:
    """Read a Signet store into a :class:`~signet_rl.graph.model.KnowledgeGraph`, read-only.

    The graph's ``meta["signet_store"]`` records the file and its schema versions (Signet's
    ``schema_migrations`` and signet_rl's migrations; 0 for a store signet_rl never touched).

    Args:
        path: the Signet database file.
        timeout: seconds to wait while another connection (a Signet daemon writing with a rollback
            journal) holds a write lock; Signet's own WAL-mode stores never block a reader.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        StoreError: the file is not a SQLite database, is corrupt, lacks Signet's tables, holds a row
            the model rejects, or stays locked past ``timeout`` (the message says it is locked, by which
            process where the OS tells, and how to wait longer); it names the file, the table and the row.
        ValueError: a ``timeout`` that is not a number of seconds >= 0.
    """
    path = Path(path).expanduser()
    with closing(open_read_only(path, timeout)) as conn:
        graph = read_connection(conn, path)
        versions = store_versions(conn)
    graph.meta["signet_store"] = {"path": str(path), "signet_schema_version": versions["signet"],
                                  "signet_rl_schema_version": versions["signet_rl"]}
    return graph


def load_signet_dataset(path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT, extract: bool = False,
                        extract_encoder: str = "minilm") -> Dataset:
    """A real Signet store as a :class:`~signet_rl.datasets.base.Dataset` (spec ``signet:<path>``):
    its graph under ``"main"``, no queries and empty ground truth.

    Args:
        path: the Signet database file.
        timeout: as :func:`import_signet` (``dataset.options.timeout`` with ``dataset=signet``).
        extract: also run :mod:`signet_rl.datasets.extract` on the store's non-deleted memories (``who`` is
            the speaker) and lay its graph over the store's (``dataset.options.extract=true``); the store
            file is still only read.
        extract_encoder: the encoder the extractor compares names with (``minilm``, else ``hashing``).

    Raises:
        FileNotFoundError, StoreError, ValueError: as :func:`import_signet`.
    """
    path = Path(path).expanduser()
    graph = import_signet(path, timeout)
    if extract:
        from signet_rl.datasets.extract import ExtractConfig, extract_graph, memories_from_graph, merge_graphs

        extracted = extract_graph(memories_from_graph(graph), ExtractConfig(encoder=extract_encoder))
        graph = merge_graphs(graph, extracted)
    store = graph.meta["signet_store"]
    return Dataset(
        name=f"signet:{path}",
        graphs={"main": graph},
        queries=[],
        truth=GroundTruth(),
        report=LoadReport(files=[str(path)]),
        meta={"name": path.stem, "file": str(path),
              "signet_schema_version": store["signet_schema_version"],
              "signet_rl_schema_version": store["signet_rl_schema_version"],
              "counts": {"memories": graph.num_memories, "entities": graph.num_entities,
                         "aspects": len(graph.aspects), "attributes": len(graph.attributes),
                         "dependencies": len(graph.dependencies),
                         "mentions": len(graph.mentions)}},
    )
