"""The data root real data is read from (``--data-root``, a config's ``data_root``, ``$SIGNET_RL_DATA``).

At the bottom of the package so that loaders, encoder caches and tests all resolve it the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "REQUIRE_DATA_ENV", "data_root"]

DATA_ENV = "SIGNET_RL_DATA"
REQUIRE_DATA_ENV = "SIGNET_RL_REQUIRE_DATA"


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The folder real datasets are read from: ``explicit``, else ``$SIGNET_RL_DATA``, else ``./data``.

    The data root is read-only to signet_rl: caches go under the project's ``data/cache`` or a temp folder.
    """
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return Path("data").resolve()
