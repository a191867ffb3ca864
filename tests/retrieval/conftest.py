"""Retrieval test fixtures: embedding caches go to a temp folder, never the project's data/cache."""

from __future__ import annotations

import pytest

from signet_rl.retrieval.encoders import CACHE_ENV


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache_in_tmp(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("signet_rl_cache")))
        yield
