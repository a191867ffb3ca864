"""Quiet library logs by default: a run prints its own progress and results, not its dependencies' chatter.

Left alone, a training run prints dozens of ``bm25s ... DEBUG`` index-build lines, ``faiss.loader ... INFO``
lines about CPU instruction sets, ``sentence_transformers`` model-loading lines and MLflow's database
migrations around the progress bar. :func:`quiet_libraries` sets those libraries' loggers to WARNING (their
warnings and errors still show); ``verbose=True`` (the ``verbose=true`` config key of the entry points)
leaves them at the level logging would otherwise give them. signet_rl's own loggers are untouched.

The module uses the standard library only.
"""

from __future__ import annotations

import logging
import os

__all__ = ["MLFLOW_LEVEL", "NOISY_LIBRARIES", "quiet_libraries"]

#: The variable MLflow reads its log level from when it is imported.
MLFLOW_LEVEL = "MLFLOW_LOGGING_LEVEL"
_OURS = "WARNING"

#: The loggers set to WARNING unless verbose (a parent covers its children: ``faiss`` covers
#: ``faiss.loader``).
NOISY_LIBRARIES: tuple[str, ...] = (
    "bm25s",
    "faiss",
    "sentence_transformers",
    "transformers",
    "huggingface_hub",
    "mlflow",
    "alembic",
    "urllib3",
    "httpx",
    "filelock",
    "matplotlib",
    "PIL",
    "numba",
    "torch_geometric",
    "git",
    "optuna",
    "ray",
    "nbclient",
    "traitlets",
    "asyncio",
)


def quiet_libraries(verbose: bool = False) -> None:
    """Set :data:`NOISY_LIBRARIES` to WARNING (``verbose=False``) or back to inheriting (``verbose=True``).

    MLflow sets its own logger's level when it is imported, from ``MLFLOW_LOGGING_LEVEL``; that variable is
    set to WARNING too (unless the user set it), so an import after this call stays quiet.
    """
    level = logging.NOTSET if verbose else logging.WARNING
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(level)
    if verbose:
        if os.environ.get(MLFLOW_LEVEL) == _OURS:
            os.environ.pop(MLFLOW_LEVEL)
    elif MLFLOW_LEVEL not in os.environ:
        os.environ[MLFLOW_LEVEL] = _OURS
