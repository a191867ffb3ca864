"""Scripts under ``experiments/`` imported as modules, so a test can call their functions and ``main`` in its
own process (``tests/`` is on sys.path: ``from experiment_script import load_experiment``; not in
conftest.py, a module name several folders share)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_experiment(name: str, root: Path = ROOT, module_name: str | None = None) -> ModuleType:
    """``<root>/experiments/<name>.py`` executed as the module ``module_name`` (default ``name``), registered
    in ``sys.modules`` first because dataclasses look their module up there. ``root`` is a repository
    copy's folder when the script must see the copy as its project root. ``<root>/experiments`` is put on
    ``sys.path`` (once), since scripts import their siblings (``kg_protocol`` reads ``kg_report``)."""
    folder = str(root / "experiments")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(module_name or name, root / "experiments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
