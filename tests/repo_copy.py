"""Fresh copies of the repository for tests that run commands as a user would (``tests/`` is on sys.path:
``from repo_copy import copy_repository``; not in conftest.py, a module name several folders share)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_repository(dest: Path, template: Path | None = None) -> Path:
    """A fresh copy of the working tree at ``dest`` as a new git repository with one commit: every tracked
    file and every untracked file git does not ignore (so uncommitted work is tested too), nothing ignored
    (no ``runs/``, ``mlflow.db`` or caches). ``git status --porcelain`` there shows what a command changed.

    With ``template`` (a copy this function made, in which nothing has run since: the ``repo_template``
    fixture), that copy, history included, is copied as it is: the same fresh copy, without listing,
    copying and committing the tree file by file again."""
    import shutil
    import subprocess

    if template is not None:
        shutil.copytree(template, dest, symlinks=True)
        return dest
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    git = [
        "git",
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy"]):
        subprocess.run([*git, *args], cwd=dest, check=True, capture_output=True)
    return dest


def tracked_changes(repo: Path) -> list[str]:
    """``git status --porcelain`` lines of ``repo`` (ignored files are not listed)."""
    import subprocess

    out = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()
