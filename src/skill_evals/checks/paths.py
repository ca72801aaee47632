"""Files inside the workspace, reached without following a symlink.

A path is walked one component at a time from a directory descriptor of the workspace with
``O_NOFOLLOW``: a symlink anywhere on the way — planted by the agent to point a check at
``/etc`` or at the engine's own files — fails the check instead of being followed, and a FIFO
is opened non-blocking and refused, so a check never hangs on one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

# The most a file check reads; a larger file fails the check.
MAX_FILE_BYTES = 10_000_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class PathProblem(Exception):
    """Why a workspace path cannot be used; ``str()`` is a short reason without contents."""


@dataclass(frozen=True)
class Found:
    """What lies at a workspace path: ``missing``, ``symlink`` (at or on the way), ``file``,
    ``directory`` or ``other`` (FIFO, socket, device)."""

    kind: str


def _open_parent(root: Path, rel: str) -> tuple[int, str] | Found:
    """A descriptor of the directory holding ``rel``'s last component, and that name; or
    what stopped the walk (missing, a symlink, a non-directory on the way)."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\0" in rel:
        return Found("outside")  # refused when the cases loaded; never walked here either
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for part in parts[:-1]:
        try:
            next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            found = _classify(fd, part, exc)
            os.close(fd)
            if found.kind in ("file", "other"):
                return Found("missing")  # a file where a directory should be: nothing below it
            if found.kind == "directory":
                return Found("unreadable")  # a directory we may not open
            return found
        os.close(fd)
        fd = next_fd
    return fd, parts[-1]


def _classify(dir_fd: int, name: str, exc: OSError) -> Found:
    if exc.errno == errno.ENOENT:
        return Found("missing")
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return Found("missing")
    return Found(_kind(info.st_mode))


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    return "other"


def lookup(root: Path, rel: str) -> Found:
    """What lies at ``rel`` inside ``root`` (never following a symlink)."""
    opened = _open_parent(root, rel)
    if isinstance(opened, Found):
        return opened
    fd, name = opened
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return Found("missing")
    except NotADirectoryError:
        return Found("missing")
    finally:
        os.close(fd)
    return Found(_kind(info.st_mode))


_WHY = {
    "missing": "not found",
    "symlink": "a symlink at or on the way to this path (symlinks are not followed)",
    "unreadable": "a directory on the way cannot be opened",
    "outside": "not a path inside the workspace",
    "directory": "a directory, not a file",
    "other": "not a regular file",
}


def describe(found: Found) -> str:
    """A reason for a path that is not a regular file."""
    return _WHY.get(found.kind, found.kind)


def _open_regular(root: Path, rel: str) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at ``rel`` (never following a symlink) and its
    status; PathProblem when it is no regular file."""
    opened = _open_parent(root, rel)
    if isinstance(opened, Found):
        raise PathProblem(describe(opened))
    dir_fd, name = opened
    try:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise PathProblem(describe(_classify(dir_fd, name, exc))) from None
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathProblem(describe(Found(_kind(info.st_mode))))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_file(root: Path, rel: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file at ``rel``, at most ``max_bytes`` (default
    MAX_FILE_BYTES; PathProblem else)."""
    if max_bytes is None:
        max_bytes = MAX_FILE_BYTES
    fd, info = _open_regular(root, rel)
    try:
        if info.st_size > max_bytes:
            raise PathProblem(f"larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:  # the file may grow while being read: stop at the bound either way
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise PathProblem(f"larger than {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def read_text(root: Path, rel: str, max_bytes: int | None = None) -> str:
    """The file's text (strict UTF-8, a leading BOM skipped)."""
    data = read_file(root, rel, max_bytes)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise PathProblem("not UTF-8 text") from None


def read_prefix(root: Path, rel: str, limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of the regular file at ``rel`` (never following a symlink)
    and whether it holds more; PathProblem when it is no regular file."""
    fd, _ = _open_regular(root, rel)
    try:
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
        return data[:limit], len(data) > limit
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
