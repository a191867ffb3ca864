"""The README as a test: every fenced shell command and Python snippet runs in a fresh copy of the
repository, in README order; and the Layout section matches the tree.

Each command runs with ``SIGNET_RL_SMOKE=1`` (``signet_rl/smoke.py``: the same code path, shrunk to
seconds) in its own fresh copy, into which only the paths it names that an earlier command made are carried
(the quickstart's policy for the policy snippet, a KG run's folder for ``signet_rl.kg.evaluate``): nothing
else an earlier command left behind can hide a failure in a fresh clone (the content-keyed embedding and
extraction caches are the checkout's, shared: a hit is what a miss would build). After each
one, ``git status --porcelain`` in its copy must be clean (no tracked file changed, no untracked file that is
not ignored) and every path it names must exist. A few are only checked, not run: installs
(``pip install``), the MLflow UI (a server for a browser), commands needing an optional extra
(``encoder=minilm`` needs ``.[embed]``; the joblib and Ray launchers and ``ray=true``, where ``.[sweep]`` or
``.[distributed]`` is not installed) and ``export`` lines with a placeholder path (the test sets the data
root itself); ``python -m pytest`` is collected, not run (this test is part of it). The lines that start a
local Ray cluster run in their own slow test (:func:`on_ray`). Commands naming a real dataset are skipped when
the data root lacks it, unless ``SIGNET_RL_REQUIRE_DATA=1``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from repo_copy import copy_repository, tracked_changes

from signet_rl.core.paths import REQUIRE_DATA_ENV, data_root
from signet_rl.text.encoders import CACHE_ENV, default_cache_dir

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SHELL = {"bash", "sh", "shell", "console"}
# Real datasets a command may name, and the folder under the data root each needs.
REAL_DATA = {r"\bkg:": "kg", r"\blocomo\b": "locomo", r"\bmusique\b": "hipporag", r"--datasets\b": "kg"}


@dataclass
class Step:
    """One README command or snippet."""

    kind: str  # "shell" or "python"
    text: str
    line: int  # where it is in README.md

    def __str__(self) -> str:
        first = self.text.strip().splitlines()[0]
        return f"README.md:{self.line}: {first[:90]}"


def readme_blocks(text: str) -> list[tuple[str, str, int]]:
    """Every fenced block of ``text``: (language, body, line of its first body line)."""
    return [(m.group(1), m.group(2), text[: m.start()].count("\n") + 2) for m in FENCE.finditer(text)]


def readme_steps(text: str) -> list[Step]:
    """The shell commands (one per logical line: ``\\`` continuations joined, comments dropped) and the
    Python snippets of ``text``'s fenced blocks, in order."""
    steps = []
    for lang, body, line in readme_blocks(text):
        if lang == "python":
            steps.append(Step("python", body, line))
        elif lang in SHELL:
            joined = re.sub(r"[ \t]*\\\n\s*", " ", body)
            offsets = [line + i for i, raw in enumerate(body.splitlines()) if not raw.rstrip().endswith("\\")]
            for i, raw in enumerate(joined.splitlines()):
                command = _uncomment(raw)
                if command:
                    steps.append(Step("shell", command, offsets[i] if i < len(offsets) else line))
    return steps


def _uncomment(line: str) -> str:
    """``line`` without its trailing ``# comment`` (a ``#`` outside quotes, after a space), stripped."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def path_args(words: list[str]) -> list[str]:
    """The arguments of a command that name repository paths: positional words with a ``/`` and neither
    ``=`` nor ``:`` (those are overrides and specs)."""
    return [w for w in words[1:] if "/" in w and "=" not in w and ":" not in w and not w.startswith("-")]


def path_literals(code: str) -> list[str]:
    """The string literals of a snippet that look like relative file paths (``runs/x/policy``)."""
    out = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if re.fullmatch(r"[\w.-]+(/[\w.-]+)+/?", v) and not v.startswith("signet_rl/"):
                out.append(v)
    return out


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def check_only(words: list[str]) -> str | None:
    """Why a shell command is checked but not run, or None when it runs."""
    line = " ".join(words)
    if "pip install" in line or (words[:2] == ["python3", "-m"] and "venv" in words):
        return "an install"
    if words[:2] == ["mlflow", "ui"]:
        return "a server for a browser"
    if words[:3] == ["python", "-m", "signet_rl.serve"] and words[3:4] not in (["sidecar"], ["store"]):
        return "the HTTP service, or the report on its log"
    if words[0] == "curl":
        return "a request to a running service"
    if "encoder=minilm" in words:
        return "needs the .[embed] extra"
    if "hydra/launcher=local_joblib" in words and not _installed("hydra_plugins.hydra_joblib_launcher"):
        return "needs the .[sweep] extra"
    if ("hydra/launcher=local_ray" in words or "ray=true" in words) and not _installed("ray"):
        return "needs the .[distributed] extra"
    if words[0] == "export" and "/path/to/" in line:
        return "a placeholder path"
    return None


def missing_data(text: str) -> str | None:
    """The data-root folder a command needs that is not there, or None."""
    for pattern, folder in REAL_DATA.items():
        if re.search(pattern, text) and not (data_root() / folder).exists():
            return folder
    return None


class Runner:
    """The fork server of ``tests/readme_runner.py`` (see there)."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs = logs
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "readme_runner.py")],
            cwd=logs, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.count = 0

    def run(self, repo: Path, kind: str, target: str, argv: list[str]) -> tuple[int, str]:
        self.count += 1
        log = self.logs / f"step-{self.count}.log"
        job = {"kind": kind, "target": target, "argv": argv, "cwd": str(repo), "log": str(log)}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the README runner died; its last log: {log.read_text()[-3000:]}")
        return int(json.loads(answer)["rc"]), log.read_text() if log.exists() else ""

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


def run_shell(step: Step, repo: Path, runner: Runner, env: dict[str, str]) -> tuple[int, str]:
    words = shlex.split(step.text)
    env = {**env, "PYTHONPATH": str(repo)}
    if words[:3] == ["python", "-m", "pytest"]:  # collected only: running it would run this test again
        # Hydra, which the fork server imported, is a pytest plugin that pytest then cannot rewrite: a warning
        # about pytest's assertion messages in Hydra's own fixtures, an error under filterwarnings=error.
        rewrite = "ignore::pytest.PytestAssertRewriteWarning"
        argv = [*words[3:], "--collect-only", "-q", "-p", "no:cacheprovider", "-W", rewrite]
        return runner.run(repo, "module", "pytest", argv)
    if words[0] == "python" and words[1:2] == ["-m"]:
        return runner.run(repo, "module", words[2], words[3:])
    if words[0] == "python" and words[1].endswith(".py"):
        return runner.run(repo, "script", words[1], words[2:])
    done = subprocess.run(["bash", "-c", step.text], cwd=repo, env=env, capture_output=True, text=True)
    return done.returncode, done.stdout[-3000:] + done.stderr[-3000:]


def carry(paths: list[str], earlier: list[Path], repo: Path) -> None:
    """Copy into ``repo`` each of ``paths`` it lacks from the latest earlier copy that has it."""
    for rel in paths:
        if (repo / rel).exists():
            continue
        for old in reversed(earlier):
            src = old / rel
            if src.exists():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                if src.is_dir():
                    shutil.copytree(src, repo / rel)
                else:
                    shutil.copy2(src, repo / rel)
                break


def test_readme_parsing_finds_commands_snippets_and_continuations():
    text = (
        "x\n```bash\npython -m a b=1   # note\npython -m c \\\n    d=2\n```\n\n```python\nimport os\n"
        'open("runs/x/policy")\n```\n'
    )
    steps = readme_steps(text)
    assert [(s.kind, s.text) for s in steps[:2]] == [
        ("shell", "python -m a b=1"),
        ("shell", "python -m c d=2"),
    ]
    assert steps[2].kind == "python" and path_literals(steps[2].text) == ["runs/x/policy"]
    assert path_args(["python", "-m", "x", "runs/kinship", "a=b/c", "kg:umls/x", "--out", "o/p"]) == [
        "runs/kinship", "o/p",
    ]  # fmt: skip
    assert check_only(shlex.split('python3 -m venv .venv && pip install -e ".[dev]"')) == "an install"
    ray = shlex.split("python -m signet_rl.train -m hydra/launcher=local_ray a=1,2")
    assert check_only(ray) == (None if _installed("ray") else "needs the .[distributed] extra")


def on_ray(words: list[str]) -> bool:
    """Whether a shell command starts a local Ray cluster (``hydra/launcher=local_ray``, ``ray=true``): each
    costs tens of seconds of cluster start on two cores, so the default run leaves these lines to
    :func:`test_readme_ray_commands_run_in_a_fresh_copy` (slow) and keeps Ray itself covered by
    ``tests/test_launchers.py`` and ``tests/test_evaluate_ray.py``."""
    return "hydra/launcher=local_ray" in words or "ray=true" in words


def test_every_readme_command_and_snippet_runs_in_a_fresh_copy(tmp_path, repo_template):
    run_readme(tmp_path, repo_template, ray=False)


@pytest.mark.slow
def test_readme_ray_commands_run_in_a_fresh_copy(tmp_path, repo_template):
    pytest.importorskip("ray", reason="the Ray lines need the .[distributed] extra")
    assert run_readme(tmp_path, repo_template, ray=True) >= 2


def run_readme(tmp_path: Path, template: Path, ray: bool) -> int:
    """Run the README's steps in order, each in a fresh copy of ``template`` (the ``repo_template``
    fixture): with ``ray`` only the Ray lines (the others are not run), without it every line but those.
    Returns how many steps ran."""
    env = {**os.environ, "SIGNET_RL_SMOKE": "1", "PYTHONUNBUFFERED": "1", "SIGNET_RL_DATA": str(data_root())}
    # The embedding and extraction caches are content-keyed (a hit is the graph a miss would build), so the
    # copies share the checkout's instead of re-extracting LoCoMo in each one; extraction itself is tested
    # cold in tests/datasets.
    env.setdefault(CACHE_ENV, str(default_cache_dir().parent))
    require = os.environ.get(REQUIRE_DATA_ENV) == "1"
    steps = readme_steps(README.read_text())
    assert len(steps) >= 20, [str(s) for s in steps]
    failures: list[str] = []
    report: list[str] = []
    copies: list[Path] = []
    # An empty MLflow store, migrated once and copied into each copy (ignored by git, like the one a first
    # run creates): creating the schema costs seconds per fresh store and says nothing about the README.
    store = tmp_path / "mlflow.db"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MlflowClient(tracking_uri=f"sqlite:///{store}").search_experiments()
    runner = Runner(tmp_path, env)
    try:
        for i, step in enumerate(steps):
            t = time.perf_counter()
            words = shlex.split(step.text) if step.kind == "shell" else []
            why = check_only(words) if words else None
            if why is None and ray != (bool(words) and on_ray(words)):
                if not ray:
                    report.append(f"left to the slow Ray test: {step}")
                continue
            if why is not None:
                syntax = subprocess.run(["bash", "-n", "-c", step.text], capture_output=True, text=True)
                if syntax.returncode != 0:
                    failures.append(f"{step}: not valid shell: {syntax.stderr.strip()}")
                if "-e" in words and not (ROOT / "pyproject.toml").exists():
                    failures.append(f"{step}: no pyproject.toml to install")
                report.append(f"checked, not run ({why}): {step}")
                continue
            folder = missing_data(step.text)
            if folder is not None and not require:
                report.append(f"skipped (no {folder}/ under the data root {data_root()}): {step}")
                continue
            repo = copy_repository(tmp_path / f"repo-{i}", template=template)
            shutil.copy2(store, repo / "mlflow.db")
            paths = path_literals(step.text) if step.kind == "python" else path_args(words)
            # a Hydra override naming a path an earlier command wrote (policy=data/policies/gnn) is carried
            # too
            values = [w.split("=", 1)[1] for w in words if step.kind != "python" and "=" in w
                      and re.fullmatch(r"[\w.-]+(/[\w.-]+)+/?", w.split("=", 1)[1])]  # fmt: skip
            carry(paths + values, copies, repo)
            if step.kind == "python":
                rc, out = runner.run(repo, "code", step.text, [])
            else:
                rc, out = run_shell(step, repo, runner, env)
            copies.append(repo)
            report.append(f"ran in {time.perf_counter() - t:.0f} s: {step}")
            if rc != 0:
                failures.append(f"{step}: exit status {rc}\n{out[-2500:]}")
            changed = tracked_changes(repo)
            if changed:
                failures.append(f"{step}: left the checkout changed: {changed}")
            missing = [p for p in paths if not (repo / p).exists()]
            if missing:
                failures.append(f"{step}: names paths that are not there: {missing}")
    finally:
        runner.close()
    print("\n".join(report))
    assert not failures, "\n\n".join(failures)
    return sum(line.startswith("ran in") for line in report)


# -- Layout ------------------------------------------------------------------------------------------------
_ENTRY = re.compile(r"^(\S+)\s+(.*)$")
_PATHLIKE = re.compile(
    r"(?<![\w./-])([\w.-]+/|[\w-]+\.(?:py|yaml|yml|md|json|toml|sql|txt))(?:\s*\(([^)]*)\))?"
)


def layout_block(text: str) -> str:
    """The first fenced block after the ``## Layout`` heading."""
    section = text.split("\n## Layout", 1)
    assert len(section) == 2, "README.md has no '## Layout' section"
    blocks = readme_blocks(section[1].split("\n## ", 1)[0])
    assert blocks, "the Layout section has no code block"
    return blocks[0][1]


def layout_entries(block: str) -> dict[str, str]:
    """``{top-level path: its description}``: a line starting at column 0 opens an entry, indented lines
    continue it."""
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line and not line[0].isspace():
            m = _ENTRY.match(line)
            current = m.group(1) if m else line.strip()
            entries[current] = m.group(2) if m else ""
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def layout_paths(block: str) -> list[str]:
    """Every path the Layout block names: each entry, the folders and files its description names (relative
    to the entry when it is a folder), and ``x/ (a/, b.py)`` children relative to ``x/``."""
    out = []
    entries = layout_entries(block)
    for top, text in entries.items():
        out.append(top)
        base = top if top.endswith("/") else ""
        for m in _PATHLIKE.finditer(text):
            name, children = m.group(1), m.group(2)
            if name in entries:  # another entry named in passing ("tests/  mirrors signet_rl/")
                continue
            out.append(base + name)
            if name.endswith("/") and children:
                for child in re.findall(r"[\w.-]+/|[\w-]+\.(?:py|yaml|yml|md|json|toml)", children):
                    out.append(base + name + child)
    return out


def _tracked() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    names = set(files.stdout.split()) | set(untracked.stdout.split())
    return {n for n in names if (ROOT / n).exists()}


def test_layout_parser_reads_entries_descriptions_and_nested_children():
    block = (
        "conf/     configs: train.yaml, dataset/ (kg/), task/\n          more: x.py\nREADME.md  this file\n"
    )
    assert layout_paths(block) == [
        "conf/", "conf/train.yaml", "conf/dataset/", "conf/dataset/kg/", "conf/task/", "conf/x.py",
        "README.md",
    ]  # fmt: skip


def test_layout_names_only_paths_that_exist_and_every_package():
    block = layout_block(README.read_text())
    tracked = _tracked()
    folders = {str(Path(n).parent) + "/" for n in tracked} | {
        "/".join(n.split("/")[: i + 1]) + "/" for n in tracked for i in range(n.count("/"))
    }
    missing = [p for p in layout_paths(block) if p not in tracked and p not in folders]
    assert not missing, f"README.md's Layout names paths not in the repository: {missing}"
    packages = sorted(p.parent.name for p in (ROOT / "signet_rl").glob("*/__init__.py"))
    signet = next(text for top, text in layout_entries(block).items() if top.rstrip("/") == "signet_rl")
    unnamed = [p for p in packages if not re.search(rf"(?<![\w/]){re.escape(p)}/", signet)]
    assert not unnamed, f"README.md's Layout does not name these packages of signet_rl/: {unnamed}"
    tops = sorted({n.split("/")[0] + "/" for n in tracked if "/" in n and not n.startswith(".")})
    unlisted = [t for t in tops if t not in layout_entries(block)]
    assert not unlisted, f"README.md's Layout does not list these top-level folders: {unlisted}"
    docs = sorted(n for n in tracked if n.startswith("docs/"))
    unnamed_docs = [d for d in docs if Path(d).name not in layout_entries(block).get("docs/", "")]
    assert not unnamed_docs, f"README.md's Layout does not name these files of docs/: {unnamed_docs}"
