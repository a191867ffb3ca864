"""Run folders: where a training run keeps its checkpoint, and the guards that keep a folder from being lost
or silently mixed with another configuration.

A run folder holds a **run marker** (:data:`MARKER`, JSON) written when the trainer creates it: the run's
fingerprint (every configuration value that changes results, flattened to ``key -> value``), the
command-line overrides, and the names of the files the run writes. Opening a folder (:meth:`RunFolder.open`):

* takes an **exclusive lock** (``fcntl.flock`` on :data:`LOCK` inside it); a second training on the same
  folder fails at once, naming the pid that holds it. The lock goes when the process ends, killed or not;
* refuses a folder that holds files but **no marker** (it is not a folder this trainer created: nothing is
  written into it, nothing is deleted), unless every file in it is one the run writes (a run folder of a
  version without markers: it is adopted, and the checkpoint's own checks guard its resume);
* refuses a marker whose **fingerprint** differs from this run's, naming every differing key and both values
  (resuming a seed-0 checkpoint under ``seed=1`` would give results that match neither);
* with ``fresh=True`` removes **only the run's own files** (the names the task declares, e.g.
  ``checkpoint.pkl``, ``artifacts``): a user's file in the folder survives, and a folder without a marker is
  refused with its path named.

Every file is written atomically (:func:`atomic_write`: a uniquely named temporary file in the same folder,
then :func:`os.replace`), so two writers never collide on a temporary name and a kill never leaves half a
file under the real name.

The module uses the standard library only, so any layer (the bandit trainer, the KG task, entry points) may
use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "LOCK",
    "MARKER",
    "RunFolder",
    "RunFolderError",
    "atomic_write",
    "atomic_writer",
    "fingerprint_diff",
    "run_name",
    "short_hash",
]

#: The run marker file (JSON) every run folder holds.
MARKER = ".signet_rl_run.json"
#: The lock file (``fcntl.flock``); its text is the pid of the process holding the lock.
LOCK = ".signet_rl_run.lock"
_MARKER_FORMAT = "signet_rl.run/1"


class RunFolderError(RuntimeError):
    """A run folder cannot be used as asked (not a run folder, in use, another configuration, ...)."""


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through: a uniquely named temporary file beside it, flushed to disk
    and moved over ``path`` with :func:`os.replace` when the block ends (removed if it raises). Readers see
    the old file or the new one, never a part, and concurrent writers never share a temporary name."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # what open() would have given, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def short_hash(items: Iterable[str], length: int = 10) -> str:
    """The first ``length`` hex digits of the SHA-256 of the sorted ``items`` (one per line)."""
    return hashlib.sha256("\n".join(sorted(items)).encode("utf-8")).hexdigest()[:length]


def _slug(text: str, limit: int) -> str:
    """``text`` with every character outside ``[A-Za-z0-9._-]`` replaced by ``_``, at most ``limit`` long
    (the end kept: it is the distinctive part of a path or a spec)."""
    out = "".join(c if c.isalnum() or c in "._-" else "_" for c in text).strip("._") or "run"
    return out[-limit:].lstrip("._-") or "run"


def run_name(prefix: Sequence[str], overrides: Iterable[str]) -> str:
    """A run folder name: the readable ``prefix`` parts (task, scorer, dataset spec; each made file-name safe
    and shortened) joined by ``-``, then a 10-digit hash of the sorted ``overrides``. At most ~110
    characters however many overrides there are; the same overrides in any order give the same name."""
    parts = [_slug(str(p), 40) for p in prefix if str(p)]
    return "-".join([*parts, short_hash(overrides)])


def fingerprint_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for every key whose value differs (a missing key reads ``<unset>``)."""
    unset = "<unset>"
    keys = sorted(set(old) | set(new))
    return [(k, old.get(k, unset), new.get(k, unset)) for k in keys if old.get(k, unset) != new.get(k, unset)]


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_safe(value: Any) -> Any:
    """``value`` as JSON would read it back (tuples become lists, keys strings), so fingerprints compare
    equal across a save and a load."""
    return json.loads(json.dumps(value, default=str))


def _all_run_files(names: Sequence[str], files: Sequence[str]) -> bool:
    """Whether every one of ``names`` is a run file (or a temporary file of one): a folder a run of a
    signet_rl version without run markers wrote, holding nothing else."""
    patterns = [*files, *(f".{p}.*.tmp" for p in files)]
    return all(any(fnmatch.fnmatchcase(n, p) for p in patterns) for n in names)


class RunFolder:
    """An open, locked run folder (see the module docstring); use :meth:`open`, then :meth:`close` (or a
    ``with`` block).

    Attributes:
        path: the folder.
        fingerprint: this run's ``key -> value`` configuration.
        resumed: whether the folder already held this run's marker (a resume, not a new run).
    """

    def __init__(self, path: Path, fingerprint: dict[str, Any], lock_fd: int, resumed: bool) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.resumed = resumed
        self._lock_fd: int | None = lock_fd

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        fingerprint: Mapping[str, Any],
        files: Sequence[str],
        *,
        fresh: bool = False,
        overrides: Sequence[str] = (),
        command: str | None = None,
    ) -> RunFolder:
        """Create or reopen the run folder ``path`` for a run with ``fingerprint``, and lock it.

        Args:
            path: the folder.
            fingerprint: every configuration value that changes results (``key -> JSON-able value``).
            files: the names (glob patterns allowed, no ``/``) of what the run writes in the folder;
                ``fresh`` removes exactly these, plus the marker.
            fresh: start over: remove the previous run's files (only in a folder holding a marker).
            overrides: the command-line overrides, saved in the marker for people to read.
            command: the command that resumes this run, saved in the marker.

        Raises:
            RunFolderError: ``path`` is a file; it holds files but no marker; its marker is unreadable; it
                was trained with another configuration (without ``fresh``); another process holds it.
        """
        folder = Path(path)
        for name in files:
            if "/" in name or name in ("", ".", "..") or name.startswith(".."):
                raise ValueError(f"run file name {name!r} must be a plain name inside the folder")
        fp = {str(k): _json_safe(v) for k, v in fingerprint.items()}
        if folder.exists() and not folder.is_dir():
            raise RunFolderError(f"run_dir {folder} is a file, not a folder; pick another run_dir")
        marker = folder / MARKER
        if folder.is_dir() and not marker.exists():
            others = sorted(p.name for p in folder.iterdir() if p.name != LOCK)
            if others and not _all_run_files(others, files):  # a run folder older than markers is adopted
                what = "fresh=true would delete them" if fresh else "the run would write into them"
                shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
                raise RunFolderError(
                    f"run_dir {folder} is not a signet_rl run folder: it holds {shown} but no run marker "
                    f"({MARKER}), and {what}; nothing was written or deleted. Use an empty or new run_dir"
                )
        folder.mkdir(parents=True, exist_ok=True)
        lock_fd = cls._lock(folder)
        try:
            previous = cls._read_marker(marker) if marker.exists() else None
            if previous is not None and not fresh:
                diff = fingerprint_diff(previous.get("fingerprint", {}), fp)
                if diff:
                    listed, more = diff[:6], len(diff) - 6
                    was = ", ".join(f"{k}={_show(a)}" for k, a, _ in listed)
                    asks = ", ".join(f"{k}={_show(b)}" for k, _, b in listed)
                    if more > 0:
                        was, asks = f"{was} (and {more} more keys)", f"{asks} (and {more} more keys)"
                    raise RunFolderError(
                        f"run folder {folder} was trained with {was}; this command asks {asks}: "
                        "use another run_dir or fresh=true"
                    )
            if fresh and previous is not None:
                cls._remove_run_files(folder, files)
            resumed = previous is not None and not fresh
            record = {
                "format": _MARKER_FORMAT,
                "fingerprint": fp,
                "overrides": list(overrides),
                "files": list(files),
                "command": command,
                "created": previous.get("created") if resumed and previous else time.time(),
                "pid": os.getpid(),
            }
            atomic_write(marker, json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(folder, fp, lock_fd, resumed)

    @staticmethod
    def _read_marker(marker: Path) -> dict[str, Any]:
        try:
            record = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise RunFolderError(
                f"run marker {marker} is unreadable ({err}); nothing was written or deleted. "
                f"Remove that folder yourself or use another run_dir"
            ) from err
        if not isinstance(record, dict) or record.get("format") != _MARKER_FORMAT:
            raise RunFolderError(f"{marker} is not a signet_rl run marker; use another run_dir")
        return record

    @staticmethod
    def _lock(folder: Path) -> int:
        """An exclusive, non-blocking ``flock`` on ``folder/LOCK``; the descriptor that holds it."""
        lock = folder / LOCK
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderError(
                f"run folder {folder} is in use by another training (pid {holder}); wait for it to end "
                "or use another run_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return fd

    @staticmethod
    def _remove_run_files(folder: Path, files: Sequence[str]) -> None:
        """Remove what a previous run wrote in ``folder``: the entries matching ``files`` (the task's own
        list) and the temporary files of its atomic writes. Links are removed, never followed; anything else
        (a user's file) stays."""
        patterns = [*files, *(f".{p}.*.tmp" for p in files)]
        for entry in sorted(folder.iterdir()):
            if entry.name in (MARKER, LOCK) or not any(fnmatch.fnmatchcase(entry.name, p) for p in patterns):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def close(self) -> None:
        """Release the lock (the marker and the lock file stay)."""
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r}, resumed={self.resumed})"
