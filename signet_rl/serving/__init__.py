"""Serving trained policies without torch: artifact loading (:func:`load_policy` -> :class:`ServedPolicy`),
the exported GNN on onnxruntime and numpy, and Signet's predictor sidecar
(:mod:`signet_rl.serving.sidecar`). Nothing here imports torch (``tests/serving`` checks it in a fresh
interpreter); artifacts are written by :mod:`signet_rl.export`."""

from signet_rl.serving.policy import (
    FORMAT,
    LOADERS,
    MANIFEST,
    PolicyError,
    ServedPolicy,
    load_policy,
    register_loader,
)

__all__ = ["FORMAT", "LOADERS", "MANIFEST", "PolicyError", "ServedPolicy", "load_policy", "register_loader"]
