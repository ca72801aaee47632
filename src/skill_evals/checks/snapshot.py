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

from ..suite.walks import MAX_DEPTH, MAX_ENTRIES, depth_problem

MAX_FILES = MAX_ENTRIES  # files and directories
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

    SnapshotProblem when it nests deeper than MAX_DEPTH directory levels, holds more than
    ``max_files`` entries (files and directories) or ``max_bytes`` of file data, or when
    ``deadline`` (``time.monotonic()``) passes. Only the directories on the current path are
    open (at most MAX_DEPTH + 1 descriptors, whatever the width)."""
    entries: dict[str, str] = {}
    budget = [max_bytes, max_bytes]
    seen = 0
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    # One frame per open directory: its descriptor, its relative prefix, names not yet seen.
    frames: list[tuple[int, str, list[str]]] = []
    try:
        frames.append((top, "", _names(top)))
        while frames:
            dir_fd, prefix, pending = frames[-1]
            if not pending:
                os.close(frames.pop()[0])
                continue
            name = pending.pop()
            if time.monotonic() > deadline:
                raise SnapshotProblem("check took too long")
            seen += 1
            if seen > max_files:
                raise SnapshotProblem(f"the workspace holds more than {max_files:,} entries")
            try:
                info = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                continue  # vanished since it was listed
            rel = prefix + name
            if stat.S_ISDIR(info.st_mode):
                if len(frames) > MAX_DEPTH:
                    raise SnapshotProblem(depth_problem("the workspace"))
                _enter(frames, dir_fd, name, rel, entries)
                continue
            entries[rel] = _fingerprint(dir_fd, name, info, budget, deadline)
    finally:
        for dir_fd, _, _ in frames:
            with contextlib.suppress(OSError):
                os.close(dir_fd)
    return Snapshot(entries)


def _names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as listing:
        return sorted((entry.name for entry in listing), reverse=True)


def _enter(
    frames: list[tuple[int, str, list[str]]],
    dir_fd: int,
    name: str,
    rel: str,
    entries: dict[str, str],
) -> None:
    """Open the subdirectory ``name`` and push its frame; an unreadable one is recorded."""
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        entries[rel + "/"] = "unreadable directory"
        return
    try:
        names = _names(child)
    except OSError:
        os.close(child)
        entries[rel + "/"] = "unreadable directory"
        return
    frames.append((child, rel + "/", names))


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
