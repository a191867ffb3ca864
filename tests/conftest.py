"""Shared fixtures: the data root, and datasets that skip (or fail, in CI) when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from signet_rl.datasets.base import DATA_ENV, REQUIRE_DATA_ENV, data_root


def _require(relative: str) -> Path:
    """The path of ``relative`` under the data root; skips the test when it is missing, or fails
    when ``SIGNET_RL_REQUIRE_DATA=1`` (CI points the data root at ../shared/data and sets it)."""
    path = data_root() / relative
    if not path.exists():
        reason = (
            f"dataset {relative!r} not found under the data root {data_root()} "
            f"(set {DATA_ENV} to the folder holding kg/, locomo/, hipporag/)"
        )
        if os.environ.get(REQUIRE_DATA_ENV) == "1":
            pytest.fail(reason + f"; {REQUIRE_DATA_ENV}=1 makes this a failure")
        pytest.skip(reason)
    return path


@pytest.fixture
def require_data():
    """``require_data("kg/kinship")`` -> path, or skip/fail with a clear reason."""
    return _require


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
    reason = (
        f"Signet's schema_v30.sql not found (looked at {[str(c) for c in candidates]}); "
        f"set {SCHEMA_ENV} to its path"
    )
    if os.environ.get(REQUIRE_DATA_ENV) == "1":
        pytest.fail(reason + f"; {REQUIRE_DATA_ENV}=1 makes this a failure")
    pytest.skip(reason)


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A fresh copy of the repository (see :func:`repo_copy.copy_repository`)."""
    from repo_copy import copy_repository

    return copy_repository(tmp_path / "repo")
