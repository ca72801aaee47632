"""One run per record file: a run given ``--record F`` or ``--resume F`` holds an exclusive
``flock`` on ``F.lock`` (beside F's resolved path, mode 0600) from before it reads F until it
ends, so two runs can never both append the same observations to F.

The lock is the kernel's: it dies with the process that holds it, so a run killed with
SIGKILL never blocks the next one. The lock file is left in place (removing it would let a
third run lock a new file while a second still holds the old one); it holds the holder's pid,
for the message another run prints.

A hard link is another name of the same file, with its own ``F.lock``: so a run also holds a
``flock`` on the record file itself (its inode) once it exists, which every name shares.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from pathlib import Path

from ..errors import InvalidInput

LOCK_SUFFIX = ".lock"
_PID_WAIT_SECONDS = 0.5  # the holder writes its pid right after locking: wait that long for it


def lock_path(record: Path) -> Path:
    """``F.lock`` beside F's resolved path (every spelling of F gives the same lock file)."""
    resolved = record.resolve()
    return resolved.with_name(resolved.name + LOCK_SUFFIX)


def _holder(fd: int) -> str:
    """The pid written in the lock file by the run holding it ("unknown" if none arrives)."""
    deadline = time.monotonic() + _PID_WAIT_SECONDS
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isdigit() or time.monotonic() >= deadline:
            return text if text.isdigit() else "unknown"
        time.sleep(0.02)


# Locks this process holds: lock path → [descriptor, takers]. A second taker in the same
# process (``ci`` around the ``test`` it runs) shares the lock: flock would refuse a second
# descriptor of the same file even to its own process.
_HELD: dict[Path, list[int]] = {}
_GUARD = threading.Lock()
# Record files (device, inode) this process holds a flock on, until it exits: the same file
# under another name (a hard link) is refused by the kernel's lock, not by its lock file.
_FILES: dict[tuple[int, int], int] = {}
_PROC_LOCKS = "/proc/locks"


def _in_use(given: Path | str, holder: str) -> InvalidInput:
    return InvalidInput(
        f"{given} is in use by another skill-evals run (pid {holder}); "
        "wait for it or use another file"
    )


def _locker(info: os.stat_result) -> str:
    """The pid holding a flock on the file ``info`` describes, from /proc/locks (Linux)."""
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open(_PROC_LOCKS, encoding="ascii", errors="replace") as handle:
            lines = handle.read(1 << 20).splitlines()
    except OSError:
        return "unknown"
    for line in lines:
        fields = line.split()
        if "->" not in fields and len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted:
            return fields[4] if fields[4].isdigit() else "unknown"
    return "unknown"


def hold_file(fd: int, given: Path | str) -> None:
    """Hold a flock on the open record file ``fd`` (its inode, whatever its name) until this
    process exits; InvalidInput (exit 5) when another run holds it. The lock stays on a
    duplicate of ``fd`` (the caller may close its own); a file this process holds already is
    left alone."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    with _GUARD:
        if key in _FILES:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise _in_use(given, _locker(info)) from None
            return  # a filesystem without flock: the lock file still guards every path name
        _FILES[key] = os.dup(fd)  # same open file: the flock lives as long as the copy


def _hold_existing(given: Path) -> None:
    """Hold the record file's own lock when it exists (a regular file)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(given.resolve(), flags)
    except OSError:
        return  # missing or unreadable: the record writer or the reader says so
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            hold_file(fd, given)
    finally:
        os.close(fd)


class RecordLocks:
    """The record locks one run takes (``--record`` and ``--resume``; one lock when they name
    the same file). :meth:`release` (or process exit) lets them go."""

    def __init__(self) -> None:
        self._taken: list[Path] = []

    def take(self, record: Path | None, resume: Path | None = None) -> None:
        """Lock the ``--record`` and ``--resume`` files; InvalidInput (exit 5) when another run
        holds one, naming it as given, or when its lock file cannot be made. The record file's
        directory is created when missing (the record writer would create it anyway); a file
        in a directory that does not exist (and cannot be made) has nothing to lock."""
        for given in (record, resume):
            if given is None:
                continue
            path = lock_path(given)
            if given is record and not path.parent.is_dir():
                with contextlib.suppress(OSError):
                    path.parent.mkdir(parents=True)
            if not path.parent.is_dir():
                continue  # nothing can be read or written there: the output checks say why
            if path in self._taken:
                continue
            if given is not record and not os.access(path.parent, os.W_OK):
                # A --resume file only read, in a directory no run can write (a downloaded
                # artefact): no run can append to it either, so there is nothing to guard.
                continue
            with _GUARD:
                if path in _HELD:
                    _HELD[path][1] += 1
                else:
                    _HELD[path] = [_lock(given, path), 1]
            self._taken.append(path)
            try:
                _hold_existing(given)
            except InvalidInput:
                self.release()
                raise

    def release(self) -> None:
        """Let the locks go (closing the last descriptor releases the flock)."""
        with _GUARD:
            while self._taken:
                path = self._taken.pop()
                held = _HELD[path]
                held[1] -= 1
                if held[1] == 0:
                    del _HELD[path]
                    with contextlib.suppress(OSError):
                        os.close(held[0])


def _lock(given: Path, path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise InvalidInput(
            f"{given}: cannot create its lock file {path} ({exc.strerror}); "
            "the record file's directory must be writable"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _holder(fd) if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
        os.close(fd)
        if holder is None:
            raise InvalidInput(f"{given}: cannot lock {path} ({exc.strerror})") from None
        raise _in_use(given, holder) from None
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o600)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd
