"""Output files (--report, --junit, --markdown, --record): checked before anything runs,
written after, and never a way to hang the command.

A path that exists and is not a regular file is a pipe or a device: ``/dev/stdout``,
``/dev/null``, a shell's ``>(…)`` or a FIFO. Opening a FIFO for writing blocks until some
process reads it, so such outputs are opened without blocking: when nobody reads, the check
fails at once (exit 5, before any runner starts) instead of the command hanging after the run.
The descriptor opened by the check is kept and written after the run, so a reader that was
there sees one continuous stream, and a reader that stops reading is given up on after
STALL_SECONDS.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

# How long a write to a pipe or device may make no progress before it is abandoned.
STALL_SECONDS = 10.0

HeldOutputs = MutableMapping[Path, int]  # resolved path → descriptor opened by the check


def _special_problem(mode: int, *, record: bool) -> str | None:
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if record:
        return "--record must be a regular file (it is appended to and read back by --resume)"
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    if stat.S_ISBLK(mode):
        return "it is a block device"
    return None


def _open_special(path: Path) -> int:
    """A write descriptor for a pipe or character device; never blocks. OSError when no
    process reads a FIFO (ENXIO) or the device refuses."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags)


def output_problem(
    path: Path, held: HeldOutputs | None = None, *, record: bool = False
) -> str | None:
    """Why ``path`` cannot be written after the run, or None (checked before anything runs).

    Probed by opening, not with os.access (which says yes to root everywhere, even in /proc):
    an existing file is opened for appending and closed unchanged; in an existing parent a
    temporary file is created and removed; missing parents are not created here. A pipe or
    character device is opened without blocking and, when ``held`` is given, kept open there
    for :func:`write_output`."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # missing, or under a file: says which
        return _creatable_problem(path)
    except OSError as exc:
        return f"it cannot be inspected ({exc.strerror})"
    if stat.S_ISREG(st.st_mode):
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            return f"it cannot be opened for writing ({exc.strerror})"
        return None
    problem = _special_problem(st.st_mode, record=record)
    if problem is not None:
        return problem
    try:
        fd = _open_special(path)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return "it is a FIFO that no process is reading (writing would wait forever)"
        return f"it cannot be opened for writing ({exc.strerror})"
    key = path.resolve()
    if held is not None and key not in held:
        held[key] = fd
    else:
        os.close(fd)
    return None


def _creatable_problem(path: Path) -> str | None:
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    # Missing directories are created when writing: probe the nearest existing one.
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".skill-evals-probe-")
    except OSError as exc:
        return f"cannot create files in {parent} ({exc.strerror})"
    os.close(fd)
    os.unlink(probe)
    return None


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to a non-blocking descriptor, waiting for room at most STALL_SECONDS at
    a time (a reader that stopped reading must not keep us forever)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            written = 0
        if written:
            view = view[written:]
            continue
        _, ready, _ = select.select([], [fd], [], STALL_SECONDS)
        if not ready:
            raise OSError(errno.ETIMEDOUT, f"the reader took no data for {STALL_SECONDS:g} s")


def write_output(path: Path, text: str, held: HeldOutputs | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path``: a regular file is replaced (parents created), a pipe
    or device gets it through the descriptor held since the check, or one opened now without
    blocking. Raises OSError with a strerror when that is impossible."""
    data = text.encode("utf-8")
    key = path.resolve()
    fd = held.pop(key, None) if held is not None else None
    if fd is None:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = 0
        if mode and not stat.S_ISREG(mode):
            if _special_problem(mode, record=False) is not None:
                raise OSError(errno.EINVAL, "not a file, pipe or character device")
            try:
                fd = _open_special(path)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    raise OSError(exc.errno, "no process is reading this FIFO") from None
                raise
    if fd is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def holds_records(path: Path) -> bool:
    """Whether ``path`` is a regular file with anything but whitespace in it (a record file
    that a new run would append duplicates to)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                if chunk.strip():
                    return True
    except OSError:
        return False  # unreadable: the writability check says why
    return False


def close_held(held: HeldOutputs) -> None:
    """Close every descriptor still held (outputs that were never written)."""
    while held:
        _, fd = held.popitem()
        with contextlib.suppress(OSError):
            os.close(fd)
