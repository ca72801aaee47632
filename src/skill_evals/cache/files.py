"""One skill's observation-cache directory on disk (docs/cost.md): which files to read
(newest first, within MAX_FILES and MAX_TOTAL_BYTES), the entries of each (up to its first
line that is not one), and the append-only file this process writes, rotated before it could
pass the input-file limit, with files past any reusable age pruned.

Layout and concurrency: ``DIR/<skill>/<time>-<pid>-<random>.jsonl``. Each process appends only
to files it created itself (``O_EXCL``), one ``write`` per line, so any number of skills, jobs
and matrix shards can share a directory without ever interleaving lines. A line is visible to
readers only once it ends in a newline (a half-written last line of a killed run is not read).
Nothing here is ever an error: what cannot be read or written is a warning through ``warn``.

Owner: execution.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import InvalidInput
from ..suite.jsonl import MAX_FILE_BYTES, MAX_RECORD_BYTES, iter_jsonl_values, open_regular_file
from .entry import Entry, entry_problem

MAX_FILES = 10_000  # per skill directory, newest first
MAX_TOTAL_BYTES = 200_000_000  # per skill directory, newest first
ROTATE_BYTES = MAX_FILE_BYTES - 2 * MAX_RECORD_BYTES  # a file always stays readable
PRUNE_AFTER_S = 30 * 86_400  # cache files last written longer ago are removed (see _prune)
_FILE_NAME = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9]+-[0-9a-f]{8}\.jsonl")


class CacheDirectory:
    """The files of one skill's cache directory: read bounded, appended to safely. Not
    thread-safe by itself (the cache holds its lock around every call)."""

    def __init__(
        self, directory: Path, clock: Callable[[], float], warn: Callable[[str], None]
    ) -> None:
        self.directory = directory
        self.clock = clock
        self._warn = warn
        self._fd: int | None = None
        self._written = 0
        self._pruned = False

    def readable(self) -> list[Path]:
        """The cache files to read, newest first, within the bounds; warnings for the rest."""
        try:
            st = os.lstat(self.directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._warn(f"cache {self.directory}: cannot read ({exc.strerror}); not used")
            return []
        if not stat.S_ISDIR(st.st_mode):
            self._warn(f"cache {self.directory}: not a directory; not used")
            return []
        found: list[tuple[str, Path, int]] = []
        foreign: list[str] = []
        try:
            with os.scandir(self.directory) as entries:
                for item in entries:
                    if _FILE_NAME.fullmatch(item.name) and item.is_file(follow_symlinks=False):
                        found.append((item.name, Path(item.path), item.stat().st_size))
                    elif not item.name.startswith(".nfs"):
                        foreign.append(item.name)
        except OSError as exc:
            self._warn(f"cache {self.directory}: cannot list ({exc.strerror}); not used")
            return []
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            self._warn(
                f"cache {self.directory}: {_shown(sorted(foreign)[0])}{more} is not a cache "
                "file; skipped"
            )
        found.sort(reverse=True)  # names start with the UTC time they were created
        chosen: list[Path] = []
        total = 0
        for _, path, size in found:
            if len(chosen) >= MAX_FILES or total + size > MAX_TOTAL_BYTES:
                self._warn(
                    f"cache {self.directory}: {len(found) - len(chosen)} older file(s) past "
                    f"the reading bound ({MAX_FILES} files, {MAX_TOTAL_BYTES} bytes) ignored; "
                    "remove the directory to start afresh"
                )
                break
            chosen.append(path)
            total += size
        return chosen

    def entries(self, path: Path) -> Iterator[Entry]:
        """The entries of one file, up to its first line that is not one (then a warning)."""
        try:
            fd = open_regular_file(path, "cache file")
        except InvalidInput as exc:
            self._warn(f"{exc}; skipped")
            return
        handle = os.fdopen(fd, "rb", buffering=0)
        with handle:
            chunks = iter(lambda: handle.read(1 << 20), b"")
            try:
                for line, value in iter_jsonl_values(_complete_lines(chunks), path):
                    problem = entry_problem(value)
                    if problem is not None:
                        self._warn(f"cache file {path}:{line}: {problem}; the rest is skipped")
                        return
                    yield Entry(value["storedAt"], value)
            except InvalidInput as exc:
                self._warn(f"cache file {exc}; the rest is skipped")
            except OSError as exc:
                self._warn(f"cache file {path}: cannot read ({exc.strerror}); the rest is skipped")

    def append(self, line: bytes, max_age_s: float) -> None:
        """Append one line (a single ``write``) to the file this process created, starting a
        new file before one could pass the input-file limit; OSError when it cannot."""
        if self._fd is not None and self._written + len(line) > ROTATE_BYTES:
            self.close()
        if self._fd is None:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self._pruned:
                self._pruned = True
                self._prune(max_age_s)
            name = "{}-{}-{}.jsonl".format(
                time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock())),
                os.getpid(),
                secrets.token_hex(4),
            )
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(self.directory / name, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
            self._written = 0
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        self._written += len(line)

    def _prune(self, max_age_s: float) -> None:
        """Remove this skill's cache files last written more than PRUNE_AFTER_S ago (or twice
        the max age, if that is longer): their entries are past any age a run reuses, and a
        cache restored and saved run after run would otherwise only grow. Only files named as
        this cache names them are touched; a file that cannot be removed stays."""
        keep_s = max(PRUNE_AFTER_S, 2 * max_age_s)
        oldest = self.clock() - keep_s
        try:
            with os.scandir(self.directory) as entries:
                stale = [
                    Path(item.path)
                    for item in entries
                    if _FILE_NAME.fullmatch(item.name)
                    and item.is_file(follow_symlinks=False)
                    and item.stat(follow_symlinks=False).st_mtime < oldest
                ]
        except OSError:
            return
        for path in stale:
            with contextlib.suppress(OSError):
                path.unlink()

    def close(self) -> None:
        """Close the file this process appends to (the next append starts a new one)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _complete_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks up to the last newline: a line still being written (or torn by a kill) is
    not an entry yet."""
    held = b""
    for chunk in chunks:
        data = held + chunk if held else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        held = data[cut:]


def _shown(name: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in name)
    return repr(clean if len(clean) <= 60 else clean[:60] + "…")
