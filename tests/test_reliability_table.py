"""docs/reliability.md stays true: every test a row names exists (file and function), and every section has
rows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "reliability.md"
#: ``tests/dir/file.py::test_name`` or ``dir/file.py::test_name`` (relative to tests/), parameters dropped.
REFERENCE = re.compile(r"`(?:tests/)?((?!signet_rl/)[\w/]+\.py)::(\w+)(?:\[[^`]*\])?")


def references() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in REFERENCE.finditer(TABLE.read_text())]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_the_table_names_exists():
    refs = references()
    assert len(refs) >= 60, f"docs/reliability.md names only {len(refs)} tests"
    missing = []
    for file, name in refs:
        path = ROOT / "tests" / file
        if not path.exists() or name not in _functions(path):
            missing.append(f"{file}::{name}")
    assert not missing, f"docs/reliability.md names tests that do not exist: {sorted(set(missing))}"


def test_every_table_row_names_a_test():
    rows = [
        line for line in TABLE.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| case") and not set(line) <= set("|- ")
    ]  # fmt: skip
    bare = [row[:80] for row in rows if not REFERENCE.search(row) and "same test" not in row]
    assert not bare, f"rows without a test: {bare}"
