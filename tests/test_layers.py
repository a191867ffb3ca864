"""No package imports one above it in the query flow: docs/design.md's allow-list, checked import by
import."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "signet_rl"


def allow_list() -> dict[str, set[str] | None]:
    """``unit -> allowed units`` from the fenced block under "## 4. Layers" (None: anything)."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("## 4. Layers", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None, "docs/design.md: no fenced allow-list under '## 4. Layers'"
    out: dict[str, set[str] | None] = {}
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        unit, _, allowed = line.partition("->")
        names = allowed.split()
        out[unit.strip()] = None if names == ["*"] else set(names)
    return out


def unit_of(path: Path) -> str:
    """The layer a module belongs to: its top package, a top-level module's name, or ``__main__``."""
    rel = path.relative_to(PACKAGE)
    if path.name == "__main__.py":
        return "__main__"
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every ``signet_rl.X`` a module imports, anywhere in it (module level, functions, TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import; use signet_rl.<package>"
            if node.module == "signet_rl":  # from signet_rl import tracking
                found += [(node.lineno, f"signet_rl.{a.name}") for a in node.names]
            elif node.module:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            found += [
                (node.lineno, a.value)
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
    return [(line, name) for line, name in found if name == "signet_rl" or name.startswith("signet_rl.")]


def test_every_package_is_placed_in_the_allow_list():
    layers = allow_list()
    units = {unit_of(p) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE}
    missing = sorted(units - set(layers))
    assert not missing, f"place these in docs/design.md's '## 4. Layers' block: {missing}"


def test_no_import_reaches_above_its_layer():
    layers = allow_list()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == PACKAGE and path.name == "__init__.py":
            continue
        unit = unit_of(path)
        allowed = layers[unit]
        for line, name in imports_of(path):
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else "signet_rl"
            if allowed is None or target == unit:
                continue
            if target not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {unit} imports {name}")
    assert not bad, "imports above their layer (docs/design.md, '## 4. Layers'):\n" + "\n".join(bad)


def test_the_checker_catches_a_function_level_import(tmp_path):
    module = PACKAGE / "graph" / "store.py"
    fake = tmp_path / "signet_rl" / "graph" / "fake.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from signet_rl.evaluation.harness import evaluate\n    return evaluate\n")
    assert imports_of(fake) == [(2, "signet_rl.evaluation.harness")]
    assert "evaluation" not in (allow_list()["graph"] or set())
    assert unit_of(module) == "graph"


@pytest.mark.parametrize(
    "module", ["signet_rl.envs", "signet_rl.scorers", "signet_rl.pipeline", "signet_rl.learning"]
)
def test_importing_loads_no_evaluation_module(module):
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.startswith('signet_rl.evaluation') or m == 'signet_rl.tracking')\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"importing {module} loaded {out.stdout.strip()}"


def test_the_hydra_plugins_import_nothing_of_the_project():
    """``hydra_plugins/`` sits beside the layers (docs/design.md): Hydra imports it in every app, so it must
    not pull ``signet_rl`` in."""
    plugins = sorted((ROOT / "hydra_plugins").rglob("*.py"))
    assert plugins, "hydra_plugins/ holds no module"
    assert not (ROOT / "hydra_plugins" / "__init__.py").exists(), "hydra_plugins must stay a namespace"
    bad = [f"{p.relative_to(ROOT)}:{line}: imports {name}" for p in plugins for line, name in imports_of(p)]
    assert not bad, "\n".join(bad)
