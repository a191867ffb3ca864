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

__all__ = ["NOISY_LIBRARIES", "quiet_libraries"]

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
    """Set :data:`NOISY_LIBRARIES` to WARNING (``verbose=False``) or back to inheriting (``verbose=True``)."""
    level = logging.NOTSET if verbose else logging.WARNING
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(level)
