"""A snapshot of the workspace: one fingerprint per file (content hash and mode, or a
symlink's target), taken after setup and again after the run, so ``changes_within`` and
``unchanged`` see every file created, modified or deleted — without following a symlink.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 100_000
MAX_BYTES = 1_000_000_000
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class SnapshotProblem(Exception):
    """The workspace could not be snapshotted within the bounds; ``str()`` says which."""


@dataclass(frozen=True)
class Snapshot:
    """Relative path (``/``-separated) → fingerprint, for every non-directory entry."""

    entries: dict[str, str]


def take_snapshot(
    root: Path, deadline: float, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES
) -> Snapshot:
    """Walk ``root`` (never following a symlink) and fingerprint every file.

    SnapshotProblem when it holds more than ``max_files`` entries or ``max_bytes`` of file
    data, or when ``deadline`` (``time.monotonic()``) passes."""
    entries: dict[str, str] = {}
    budget = [max_bytes, max_bytes]
    stack: list[tuple[int, str]] = [
        (os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), "")
    ]
    try:
        while stack:
            dir_fd, prefix = stack.pop()
            try:
                with os.scandir(dir_fd) as listing:
                    names = [(entry.name, entry.stat(follow_symlinks=False)) for entry in listing]
                for name, info in names:
                    if time.monotonic() > deadline:
                        raise SnapshotProblem("check took too long")
                    rel = prefix + name
                    if stat.S_ISDIR(info.st_mode):
                        try:
                            stack.append((os.open(name, _DIR_FLAGS, dir_fd=dir_fd), rel + "/"))
                        except OSError:
                            entries[rel + "/"] = "unreadable directory"
                        continue
                    if len(entries) >= max_files:
                        raise SnapshotProblem(f"the workspace holds more than {max_files} files")
                    entries[rel] = _fingerprint(dir_fd, name, info, budget, deadline)
            finally:
                os.close(dir_fd)
    finally:
        for dir_fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(dir_fd)
    return Snapshot(entries)


def _fingerprint(
    dir_fd: int, name: str, info: os.stat_result, budget: list[int], deadline: float
) -> str:
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=dir_fd)
        return "symlink " + hashlib.sha256(os.fsencode(target)).hexdigest()
    if not stat.S_ISREG(info.st_mode):
        return f"special {stat.S_IFMT(info.st_mode)} {mode:o}"
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return f"unreadable {mode:o}"
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, _CHUNK):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise SnapshotProblem(f"the workspace holds more than {budget[1]} bytes of files")
            if time.monotonic() > deadline:
                raise SnapshotProblem("check took too long")
            digest.update(chunk)
    finally:
        os.close(fd)
    return f"file {digest.hexdigest()} {mode:o}"


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Every path created, modified or deleted between the two snapshots, sorted."""
    old, new = before.entries, after.entries
    return sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))


def covers(entry: str, path: str) -> bool:
    """Whether a ``paths`` entry covers ``path``: ``dir/`` every path below it, else itself."""
    if entry.endswith("/"):
        return path.startswith(entry)
    return path == entry
