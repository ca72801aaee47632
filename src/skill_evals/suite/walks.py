"""Directory walks without recursion: bounded walks of skills, fixtures and workspaces, an
unbounded removal, and a copy.

Python's own tree helpers (``shutil.rmtree``, ``shutil.copytree``, ``os.walk`` before 3.12)
recurse once per directory level, so a chain of ~1,000 nested directories — which an agent, a
setup command or a verifier can make in a second — raised RecursionError. Everything here keeps
its own stack. A bounded walk stops at :data:`MAX_DEPTH` directory levels below its root or
:data:`MAX_ENTRIES` entries (files and directories) and raises :class:`TreeTooLarge`; a path
the system refuses as too long (ENAMETOOLONG) is the same problem. Removal has no bound: it
descends one directory at a time holding one descriptor, and climbs back through ``..``,
checking that it returns to the directory it came from.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInput

MAX_DEPTH = 256
MAX_ENTRIES = 100_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeTooLarge(InvalidInput):
    """A bounded walk passed a bound (exit 5 where a skill or fixture is walked); ``str()``
    names the root and the bound."""


def depth_problem(root: Path | str, bound: int = MAX_DEPTH) -> str:
    """The message for a tree nested past ``bound`` directory levels."""
    return f"{root}: directories nest deeper than {bound} levels; flatten it"


def entries_problem(root: Path | str, bound: int = MAX_ENTRIES) -> str:
    """The message for a tree with more than ``bound`` entries."""
    return f"{root}: holds more than {bound:,} entries (files and directories); trim it"


def long_path_problem(root: Path | str) -> str:
    """The message for a path inside the tree that the system refuses as too long."""
    return (
        f"{root}: a path inside it is longer than the system allows (deeper than "
        f"{MAX_DEPTH} levels or long names); shorten it"
    )


@dataclass(frozen=True)
class Entry:
    """One entry of a bounded walk. ``rel`` is relative to the root (``/``-separated, raw
    file-name bytes); ``path`` is absolute or root-relative as the root was given."""

    rel: bytes
    path: str
    info: os.stat_result  # lstat: a symlink is reported as one, never followed


def walk(
    root: Path | str,
    max_depth: int = MAX_DEPTH,
    max_entries: int = MAX_ENTRIES,
    on_error: Callable[[str, OSError], None] | None = None,
    prune: bool = False,
    skip_dirs: frozenset[str] = frozenset(),
) -> Iterator[Entry]:
    """Every entry below ``root`` (directories too, before what they hold), never following a
    symlink. Raises TreeTooLarge past a bound or for a path too long to open; with ``prune``
    a directory past ``max_depth`` (or too long a path) is listed but not entered instead. A
    directory that cannot be listed, or an entry that cannot be lstat'ed, raises OSError, or
    is passed to ``on_error(path, exc)`` and skipped; an entry that vanished between listing
    and lstat is skipped. Directories
    named in ``skip_dirs`` are neither listed nor entered."""
    top = os.fspath(root)
    count = 0
    stack: list[tuple[str, bytes, int]] = [(top, b"", 0)]
    while stack:
        directory, prefix, depth = stack.pop()
        try:
            with os.scandir(directory) as listing:
                names = [entry.name for entry in listing]
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG and not prune:
                raise TreeTooLarge(long_path_problem(top)) from None
            if on_error is None and exc.errno != errno.ENAMETOOLONG:
                raise
            if on_error is not None:
                on_error(directory, exc)
            continue
        names.sort()
        for name in names:
            count += 1
            if count > max_entries:
                raise TreeTooLarge(entries_problem(top, max_entries))
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG and not prune:
                    raise TreeTooLarge(long_path_problem(top)) from None
                if exc.errno == errno.ENAMETOOLONG:
                    continue
                if on_error is None:
                    raise
                on_error(path, exc)
                continue
            rel = prefix + os.fsencode(name)
            if stat.S_ISDIR(info.st_mode):
                if name in skip_dirs:
                    continue
                if depth + 1 <= max_depth:
                    stack.append((path, rel + b"/", depth + 1))
                elif not prune:
                    raise TreeTooLarge(depth_problem(top, max_depth))
            yield Entry(rel, path, info)


# ------------------------------------------------------------------------------ removal


def _open_dir(name: str, dir_fd: int | None) -> int:
    """Open the directory ``name`` (never through a symlink), making it listable and writable
    first when its owner took those permissions away."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)  # an lstat said directory a moment ago
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _clear(fd: int) -> list[str]:
    """Remove every non-directory entry of the open directory ``fd``; its subdirectories'
    names. Entries that cannot be removed are left (the caller's rmdir then fails)."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o700)
    subdirs: list[str] = []
    with os.scandir(fd) as listing:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
    for name, is_dir in names:
        if is_dir:
            subdirs.append(name)
            continue
        with contextlib.suppress(FileNotFoundError, PermissionError, OSError):
            os.unlink(name, dir_fd=fd)
    return subdirs


def _climb(fd: int, expected: tuple[int, int]) -> int:
    """The parent of the open directory ``fd``; OSError unless it is the one we came from
    (the tree was moved meanwhile: stop rather than remove outside it)."""
    parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
    info = os.fstat(parent)
    if (info.st_dev, info.st_ino) != expected:
        os.close(parent)
        raise OSError(errno.ESTALE, "the tree moved while it was being removed")
    return parent


def _remove_below(top_fd: int) -> None:
    """Empty the open directory ``top_fd`` (not closed here), any depth, two descriptors."""
    top = os.fstat(top_fd)
    # One level per entry: its identity, its name in its parent, the subdirectories left.
    levels: list[tuple[tuple[int, int], str, list[str]]] = [
        ((top.st_dev, top.st_ino), "", _clear(top_fd))
    ]
    fd = os.dup(top_fd)
    try:
        while levels:
            _, name, pending = levels[-1]
            if pending:
                child = pending.pop()
                try:
                    child_fd = _open_dir(child, fd)
                except FileNotFoundError:
                    continue
                except OSError:
                    continue  # left in place: the final rmdir reports it
                os.close(fd)
                fd = child_fd
                info = os.fstat(fd)
                levels.append(((info.st_dev, info.st_ino), child, _clear(fd)))
                continue
            levels.pop()
            if not levels:
                break
            parent = _climb(fd, levels[-1][0])
            os.close(fd)
            fd = parent
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def remove_tree(path: Path | str) -> bool:
    """Remove ``path`` and everything below it, at any depth, also directories whose owner
    made them unreadable or read-only; symlinks are removed, never followed. True when
    ``path`` is gone afterwards; never raises for what the tree holds."""
    target = os.fspath(path)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):
            os.unlink(target)
        return not os.path.lexists(target)
    for _ in range(3):  # a straggler may still be writing: go over it again
        try:
            fd = _open_dir(target, None)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            _remove_below(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
        try:
            os.rmdir(target)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            continue
    return not os.path.lexists(target)


# --------------------------------------------------------------------------------- copy


def copy_tree(
    source: Path | str,
    target: Path | str,
    skip_top: frozenset[str] = frozenset(),
    keep_existing: bool = False,
    max_depth: int = MAX_DEPTH,
    max_entries: int = MAX_ENTRIES,
) -> None:
    """Copy the directories and regular files below ``source`` into ``target`` (created when
    missing), modes kept, never following a symlink. Symlinks are copied as symlinks; FIFOs,
    sockets and devices are left out. ``skip_top``: names left out at the top level only.
    ``keep_existing``: a file that exists in ``target`` already wins. Bounded like :func:`walk`."""
    os.makedirs(target, mode=0o700, exist_ok=True)
    top = os.fspath(target)
    skipped: list[bytes] = [os.fsencode(name) for name in skip_top]
    directories: list[tuple[str, int]] = []
    for entry in walk(source, max_depth, max_entries):
        first = entry.rel.split(b"/", 1)[0]
        if first in skipped:
            continue
        dest = os.path.join(top, os.fsdecode(entry.rel))
        mode = entry.info.st_mode
        if stat.S_ISDIR(mode):
            with contextlib.suppress(FileExistsError):
                os.mkdir(dest, 0o700)
            directories.append((dest, stat.S_IMODE(mode)))
            continue
        if keep_existing and os.path.lexists(dest):
            continue
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(entry.path), dest)
        elif stat.S_ISREG(mode):
            shutil.copyfile(entry.path, dest, follow_symlinks=False)
            os.chmod(dest, stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR)
    # Directory modes last: a read-only one copied first would refuse its own files.
    for dest, dir_mode in reversed(directories):
        with contextlib.suppress(OSError):
            os.chmod(dest, dir_mode | stat.S_IRWXU)
