"""Commands tests run as ``python -m <module> ...`` or ``python <script> ...``, forked from one server that
has imported torch, MLflow, Hydra and PyG once (``tests/readme_runner.py``): each is a real, separate process
with its own working directory, environment, stdout and stderr, minus the seconds every fresh interpreter
spends importing those (``tests/`` is on sys.path: ``from fork_runner import run_forked``).

Not for commands whose test depends on what a fresh interpreter has imported or configured at import time
(which modules a command loads, library logging set up on import), nor for ones a test signals or talks to
while they run: those keep ``subprocess``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

_RUNNER = Path(__file__).resolve().parent / "readme_runner.py"


class _Server:
    def __init__(self) -> None:
        self.logs = Path(tempfile.mkdtemp(prefix="signet_rl_fork_"))
        self.proc = subprocess.Popen(
            [sys.executable, str(_RUNNER)], cwd=self.logs, env=dict(os.environ),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.count = 0

    def run(self, job: dict) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("the fork server died (tests/readme_runner.py)")
        return int(json.loads(answer)["rc"])

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()
        shutil.rmtree(self.logs, ignore_errors=True)


_server: _Server | None = None


def run_forked(
    cmd: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)`` for
    ``cmd = [sys.executable, "-m", module, *args]`` or ``[sys.executable, "script.py", *args]``, run as a
    child of the fork server. Past ``timeout`` the child is killed and :class:`subprocess.TimeoutExpired`
    raised, as ``subprocess.run`` does."""
    global _server
    cmd = [str(c) for c in cmd]
    if cmd[0] != sys.executable or len(cmd) < 2:
        raise ValueError(f"run_forked runs `{sys.executable} -m module ...` or a script, not {cmd}")
    if cmd[1] == "-m":
        kind, target, argv = "module", cmd[2], cmd[3:]
    elif cmd[1].endswith(".py"):
        kind, target, argv = "script", cmd[1], cmd[2:]
    else:
        raise ValueError(f"run_forked runs `python -m module ...` or `python script.py ...`, not {cmd}")
    if _server is None:
        _server = _Server()
        atexit.register(_server.close)
    _server.count += 1
    out, err = _server.logs / f"{_server.count}.out", _server.logs / f"{_server.count}.err"
    job = {
        "kind": kind,
        "target": target,
        "argv": argv,
        "cwd": str(Path(cwd).resolve()),
        "log": str(out),
        "err": str(err),
        "env": dict(os.environ if env is None else env),
        "timeout": timeout,
    }
    rc = _server.run(job)
    stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    out.unlink()
    err.unlink()
    if rc == -9 and timeout is not None:
        raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(cmd, rc, stdout, stderr)
