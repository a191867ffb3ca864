"""Shared fixtures: the data root, datasets that skip (or fail, in CI) when absent, hand-built datasets small
enough to score by hand (for rating and evaluation), and embedding caches kept in a temp folder."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import pandas as pd
import pytest

from signet_rl.core.paths import DATA_ENV, REQUIRE_DATA_ENV, data_root
from signet_rl.core.types import Query, Unit
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.graph.model import Aspect, Attribute, Entity, KnowledgeGraph, Memory
from signet_rl.text.encoders import CACHE_ENV


def _missing(reason: str) -> NoReturn:
    """Skip the test for a missing dataset or file, or fail it when ``SIGNET_RL_REQUIRE_DATA=1`` (CI points
    the data root at the mirrored datasets and sets it)."""
    if os.environ.get(REQUIRE_DATA_ENV) == "1":
        pytest.fail(reason + f"; {REQUIRE_DATA_ENV}=1 makes this a failure")
    pytest.skip(reason)


def _require(relative: str) -> Path:
    """The path of ``relative`` under the data root; skips the test when it is missing, or fails
    when ``SIGNET_RL_REQUIRE_DATA=1``."""
    path = data_root() / relative
    if not path.exists():
        _missing(
            f"dataset {relative!r} not found under the data root {data_root()} "
            f"(set {DATA_ENV} to the folder holding kg/, locomo/, hipporag/)"
        )
    return path


@pytest.fixture
def require_data():
    """``require_data("kg/kinship")`` -> path, or skip/fail with a clear reason."""
    return _require


#: The data-root folder each real dataset :func:`real_dataset` shares is read from.
_REAL_FOLDERS = {"locomo": "locomo", "musique": "hipporag"}


@functools.cache
def _real_dataset(spec: str) -> Dataset:
    from signet_rl.datasets.registry import load_dataset

    return load_dataset(spec)


@pytest.fixture
def real_dataset():
    """``real_dataset("locomo")`` -> ``load_dataset("locomo")`` (default options), loaded once per session and
    shared by every test that only reads it (never change it): a warm load of LoCoMo or MuSiQue still parses
    the files and rebuilds every graph. The first load extracts cold (the extraction cache is the session's
    temp folder); skips (or fails) like ``require_data`` when the dataset is missing."""

    def load(spec: str) -> Dataset:
        _require(_REAL_FOLDERS[spec])
        return _real_dataset(spec)

    return load


#: The variable naming Signet's v30 schema file (``.ci/run`` sets it when the file is beside the checkout).
SCHEMA_ENV = "SIGNET_RL_SIGNET_SCHEMA"


@pytest.fixture
def signet_schema_path() -> Path:
    """Signet's v30 schema file: ``$SIGNET_RL_SIGNET_SCHEMA``, else ``signet/schema_v30.sql`` beside the data
    root. Skips when absent, naming the variable; fails instead when ``SIGNET_RL_REQUIRE_DATA=1``."""
    env = os.environ.get(SCHEMA_ENV)
    candidates = [Path(env)] if env else []
    candidates.append(data_root().parent / "signet" / "schema_v30.sql")
    for c in candidates:
        if c.exists():
            return c
    _missing(
        f"Signet's schema_v30.sql not found (looked at {[str(c) for c in candidates]}); "
        f"set {SCHEMA_ENV} to its path"
    )


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache_in_tmp(tmp_path_factory):
    """Embedding caches go to a temp folder, never the project's data/cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("signet_rl_cache")))
        yield


# -- hand-built datasets ------------------------------------------------------------------------------


def day(n: int) -> pd.Timestamp:
    return pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(days=n)


class FixedRetriever:
    """Returns the units given for each query id (nothing for the others); records what it was asked."""

    def __init__(self, name: str, units: Mapping[str, Sequence[Unit]]) -> None:
        self.name = name
        self.units = {k: list(v) for k, v in units.items()}
        self.indexed = 0
        self.hints: list[int | None] = []

    def index(self, dataset: Dataset) -> None:
        self.indexed += 1

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        assert self.indexed, "retrieve before index"
        self.hints.append(budget_chars)
        return list(self.units.get(query.id, []))


@pytest.fixture
def fixed_retriever():
    return FixedRetriever


@pytest.fixture
def facts_dataset() -> Dataset:
    """``needed_kind == "attribute"``, like the synthetic benchmark.

    mem-1 (day 1) states att-old (superseded on day 3 by att-new) and att-keep; mem-2 (day 3) states att-new;
    mem-chat is chit-chat with no facts. q-now (day 4) needs att-new and att-keep, att-old misleads;
    q-early (day 2) needs att-keep; q-hi (day 5) is a non-query.
    """
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e1", name="deploy", created_at=day(0))],
        aspects=[Aspect(id="asp", entity_id="e1", name="runbook", created_at=day(0))],
        memories=[
            Memory(id="mem-1", content="a" * 100, created_at=day(1)),
            Memory(id="mem-2", content="b" * 50, created_at=day(3)),
            Memory(id="mem-chat", content="c" * 30, created_at=day(1)),
        ],
        attributes=[
            Attribute(id="att-old", content="old", aspect_id="asp", memory_id="mem-1", status="superseded",
                      superseded_by="att-new", created_at=day(1)),
            Attribute(id="att-keep", content="keep", aspect_id="asp", memory_id="mem-1", created_at=day(1)),
            Attribute(id="att-new", content="new", aspect_id="asp", memory_id="mem-2", created_at=day(3)),
        ],
    )  # fmt: skip
    queries = [
        Query(id="q-early", text="runbook?", graph_id="main", split="test", timestamp=day(2)),
        Query(
            id="q-now", text="what changed in the runbook?", graph_id="main", split="test", timestamp=day(4)
        ),
        Query(id="q-hi", text="good morning", graph_id="main", split="test", timestamp=day(5)),
        Query(id="q-train", text="runbook", graph_id="main", split="train", timestamp=day(2)),
    ]
    truth = GroundTruth(
        [
            Truth("q-early", ("att-keep",), "attribute", intent="what", category="hop0"),
            Truth("q-now", ("att-new", "att-keep"), "attribute", misleading=("att-old",), intent="changed",
                  category="hop0"),
            Truth("q-hi", (), "attribute", intent="none", category="none"),
            Truth("q-train", ("att-keep",), "attribute", intent="what", category="hop0"),
        ]
    )  # fmt: skip
    return Dataset(name="hand:facts", graphs={"main": graph}, queries=queries, truth=truth)


def turns_dataset(evidence_aspects: list[str] | None = ("observations",)) -> Dataset:  # type: ignore[assignment]
    """``needed_kind == "memory"``, like LoCoMo: turns are memories, observations and session summaries are
    attributes drawn from turns."""
    graph = KnowledgeGraph.from_records(
        entities=[Entity(id="e-mel", name="Melanie", created_at=day(0))],
        aspects=[
            Aspect(id="asp-obs", entity_id="e-mel", name="observations", created_at=day(0)),
            Aspect(id="asp-sum", entity_id="e-mel", name="session_summary", created_at=day(0)),
        ],
        memories=[Memory(id=f"D1:{i}", content=f"turn {i}", created_at=day(1)) for i in (1, 2, 3)],
        attributes=[
            Attribute(id="obs-2", content="Mel paints", aspect_id="asp-obs", memory_id="D1:2",
                      created_at=day(1)),
            Attribute(id="sum-1", content="they talked", aspect_id="asp-sum", memory_id="D1:1",
                      created_at=day(1)),
            Attribute(id="obs-free", content="no source", aspect_id="asp-obs", created_at=day(1)),
        ],
    )  # fmt: skip
    queries = [Query(id="q1", text="what does Mel do?", graph_id="conv-1", split="test", timestamp=day(2))]
    truth = GroundTruth([Truth("q1", ("D1:1", "D1:2"), "memory", category="single-hop")])
    meta = {} if evidence_aspects is None else {"evidence_attribute_aspects": list(evidence_aspects)}
    return Dataset(name="hand:turns", graphs={"conv-1": graph}, queries=queries, truth=truth, meta=meta)


@pytest.fixture
def make_turns_dataset():
    return turns_dataset


@pytest.fixture(scope="session")
def repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the repository per session, in which nothing runs: the fresh copies are copied from it
    (see :func:`repo_copy.copy_repository`)."""
    from repo_copy import copy_repository

    return copy_repository(tmp_path_factory.mktemp("repo_template") / "repo")


@pytest.fixture
def repo_copy(tmp_path: Path, repo_template: Path) -> Path:
    """A fresh copy of the repository (see :func:`repo_copy.copy_repository`)."""
    from repo_copy import copy_repository

    return copy_repository(tmp_path / "repo", template=repo_template)


#: The five-edge KG the KG-walk tests share: a -r1-> b -r2-> c, a -r2-> d -r1-> c, c -r1-> e
#: (``inverse=True`` adds r1_inv / r2_inv); r3 is a query relation only.
TINY_KG_GRAPH = "a\tr1\tb\nb\tr2\tc\na\tr2\td\nd\tr1\tc\nc\tr1\te\n"


def _write_kg(
    root: Path,
    name: str = "tiny",
    extra_edges: str = "",
    train: str = "a\tr3\tc\na\tr1\tb\nb\tr3\te\n",
    dev: str = "d\tr3\te\n",
    test: str = "b\tr3\tc\n",
) -> None:
    """Write ``root/kg/<name>/`` (graph, train, dev, test) for ``load_kg(name, root=root)``: the tiny KG
    plus ``extra_edges``, with the given splits."""
    folder = root / "kg" / name
    folder.mkdir(parents=True)
    (folder / "graph.txt").write_text(TINY_KG_GRAPH + extra_edges)
    (folder / "train.txt").write_text(train)
    (folder / "dev.txt").write_text(dev)
    (folder / "test.txt").write_text(test)


@pytest.fixture(scope="session")
def write_kg():
    """:func:`_write_kg`: writes the tiny KG (or a variant) under a root."""
    return _write_kg
