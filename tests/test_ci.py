"""CI's environment: .ci/run points the tests at the datasets and Signet's schema mirrored beside the
checkout, and a test that needs the schema names the variable when it skips (or fails, in CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_sets_the_schema_variable_when_the_schema_is_beside_the_checkout(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_RL_")}
    run = [str(checkout / ".ci" / "run"), "--print-env"]
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout == ""
    (tmp_path / "shared" / "signet").mkdir(parents=True)
    (tmp_path / "shared" / "data").mkdir()
    (tmp_path / "shared" / "signet" / "schema_v30.sql").write_text("-- schema\n")
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    shared = (tmp_path / "shared").resolve()
    assert out.splitlines() == [
        f"SIGNET_RL_DATA={shared / 'data'}",
        "SIGNET_RL_REQUIRE_DATA=1",
        f"SIGNET_RL_SIGNET_SCHEMA={shared / 'signet' / 'schema_v30.sql'}",
    ]


def _schema_test(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """pytest on one test asking for the ``signet_schema_path`` fixture of tests/conftest.py, in a folder of
    its own (a copy of the conftest beside it), with the data root at an empty ``tmp_path/data``."""
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "tests" / "conftest.py", folder / "conftest.py")
    (folder / "test_schema.py").write_text(
        "def test_schema(signet_schema_path):\n    assert signet_schema_path\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_RL_")}
    env.update(SIGNET_RL_DATA=str(tmp_path / "data"), PYTHONPATH=str(ROOT), **extra)
    (folder / "pytest.ini").write_text("[pytest]\n")  # this folder is the rootdir, not the repository
    cmd = [sys.executable, "-m", "pytest", "test_schema.py", "-rsf", "-p", "no:cacheprovider", "-q"]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_a_missing_schema_skips_naming_the_variable_and_fails_when_data_is_required(tmp_path):
    looked = [str(tmp_path / "signet" / "schema_v30.sql")]
    reason = (
        f"Signet's schema_v30.sql not found (looked at {looked}); set SIGNET_RL_SIGNET_SCHEMA to its path"
    )
    skipped = _schema_test(tmp_path)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout[-2000:]
    assert reason in skipped.stdout.replace("\n", "")
    failed = _schema_test(tmp_path, SIGNET_RL_REQUIRE_DATA="1")
    assert failed.returncode == 1 and "1 error" in failed.stdout  # a fixture failing is an error
    assert f"{reason}; SIGNET_RL_REQUIRE_DATA=1 makes this a failure" in failed.stdout.replace("\n", "")
