"""A fork server for tests/test_readme.py: imports the heavy libraries once, then runs each README command in
a forked child (a real, separate process that starts with them imported), so a dozen commands cost one
import of torch, MLflow, Hydra and PyG instead of a dozen.

Reads one JSON object per line on stdin, ``{"kind": "module" | "script" | "code", "target": ...,
"argv": [...], "cwd": "<repository copy>", "log": "<file>"}``, runs it in a child working in ``cwd`` (first on
its ``sys.path``, so the copy's ``signet_rl`` is the one imported) whose stdout and stderr go to ``log``
(``python -m <target> <argv>``, ``python <target> <argv>``, or the Python source ``target``), and answers one
line, ``{"rc": <exit status>}``. Optional keys (``tests/fork_runner.py`` runs other tests' commands
through it): ``"env"`` (the child's whole environment), ``"err"`` (a file of its own for stderr) and
``"timeout"`` (seconds; then the child is killed and the exit status is -9).
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback

# The heavy third-party imports every command shares (nothing of signet_rl: each command imports its own).
import gymnasium  # noqa: F401
import hydra  # noqa: F401
import mlflow  # noqa: F401
import pandas  # noqa: F401
import torch  # noqa: F401
import torch_geometric  # noqa: F401


def _child(job: dict) -> int:
    fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    err = os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if "err" in job else fd
    os.dup2(err, 2)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the child owns it until it exits
    os.chdir(job["cwd"])
    sys.path.insert(0, job["cwd"])
    if "env" in job:
        os.environ.clear()
        os.environ.update(job["env"])
    else:
        os.environ["PYTHONPATH"] = job["cwd"]  # for the processes a command starts
    try:
        if job["kind"] == "module":
            sys.argv = [job["target"], *job["argv"]]
            runpy.run_module(job["target"], run_name="__main__", alter_sys=True)
        elif job["kind"] == "script":
            sys.argv = [job["target"], *job["argv"]]
            sys.path.insert(0, os.path.dirname(os.path.abspath(job["target"])))
            runpy.run_path(job["target"], run_name="__main__")
        else:
            exec(compile(job["target"], "<README snippet>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        code = stop.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # any failure of the command is its exit status
        traceback.print_exc()
        return 1
    return 0


def _wait(pid: int, timeout: float | None) -> int:
    """The child's exit status; past ``timeout`` seconds it is killed (-9)."""
    if timeout is None:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    end = time.monotonic() + float(timeout)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.02)


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(job)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code if 0 <= code < 256 else 1)
        rc = _wait(pid, job.get("timeout"))
        print(json.dumps({"rc": rc}), flush=True)


if __name__ == "__main__":
    main()
