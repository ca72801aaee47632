"""A commit's tree read from git objects, with no checkout: ``git ls-tree -r`` for the entries
below the directory the command runs in, ``git cat-file --batch`` for blob contents, streamed
and bounded (MAX_BLOB_BYTES).
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..suite.skill_dirs import SKIPPED_DIRS
from .git import GitDeadline, GitError, git_process, run_git

MAX_BLOB_BYTES = 50_000_000

MODE_SYMLINK = "120000"
MODE_EXECUTABLE = "100755"  # git keeps one bit of a file's mode: owner-executable


@dataclass(frozen=True)
class TreeEntry:
    """One entry of ``git ls-tree``."""

    mode: str
    kind: str  # blob, commit (submodule)
    oid: str


class GitTree:
    """A commit's tree read with ``git ls-tree -r`` and ``git cat-file --batch``, restricted to
    the directory the command runs in (``prefix``)."""

    def __init__(self, root: Path, commit: str) -> None:
        self.root = root
        self.commit = commit
        prefix = run_git(root, "rev-parse", "--show-prefix").decode("utf-8", "surrogateescape")
        self.prefix = prefix.strip()
        raw = run_git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
        self.entries: dict[str, TreeEntry] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, _, path_bytes = record.partition(b"\t")
            mode, kind, oid = meta.decode("ascii").split(" ")
            path = path_bytes.decode("utf-8", "surrogateescape")
            if self.prefix:
                if not path.startswith(self.prefix):
                    continue
                path = path[len(self.prefix) :]
            if any(part in SKIPPED_DIRS for part in path.split("/")[:-1]):
                continue
            self.entries[path] = TreeEntry(mode, kind, oid)
        self._sha256: dict[str, str] = {}

    def files(self) -> Iterable[str]:
        """Every path of the commit (below the prefix)."""
        return self.entries.keys()

    def is_file(self, path: str) -> bool:
        """A regular blob (not a symlink, not a submodule)."""
        entry = self.entries.get(path)
        return entry is not None and entry.kind == "blob" and entry.mode != MODE_SYMLINK

    def read(self, path: str) -> bytes | None:
        """A regular blob's bytes."""
        if not self.is_file(path):
            return None
        contents = self.read_blobs([self.entries[path].oid])
        return contents.get(self.entries[path].oid)

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Contents of blobs by object id (one ``git cat-file --batch`` process); a blob over
        MAX_BLOB_BYTES is left out (read as absent), never held in memory."""
        chunks: dict[str, list[bytes]] = {}
        sizes: dict[str, int] = {}

        def keep(oid: str, chunk: bytes) -> None:
            sizes[oid] = sizes.get(oid, 0) + len(chunk)
            if sizes[oid] > MAX_BLOB_BYTES:
                chunks.pop(oid, None)
            else:
                chunks.setdefault(oid, []).append(chunk)

        self._batch(list(dict.fromkeys(oids)), keep)
        return {
            oid: b"".join(parts) for oid, parts in chunks.items() if sizes[oid] <= MAX_BLOB_BYTES
        }

    def blob_sha256(self, oids: Iterable[str]) -> dict[str, str]:
        """SHA-256 of blobs by object id, streamed: each blob is read once and never held
        whole in memory."""
        wanted = [oid for oid in dict.fromkeys(oids) if oid not in self._sha256]
        digests = {oid: hashlib.sha256() for oid in wanted}
        self._batch(wanted, lambda oid, chunk: digests[oid].update(chunk))
        for oid, digest in digests.items():
            self._sha256[oid] = digest.hexdigest()
        return self._sha256

    def stream_blobs(self, oids: Iterable[str], on_chunk: Callable[[str, bytes], None]) -> None:
        """Stream blobs through ``on_chunk(oid, chunk)`` (one ``git cat-file --batch``; called
        at least once per blob, first with b""), never holding a blob whole in memory."""
        self._batch(list(dict.fromkeys(oids)), on_chunk)

    def entries_under(self, path: str) -> list[tuple[str, TreeEntry]]:
        """(path relative to ``path``, entry) of every entry below ``path``."""
        if path == ".":
            return list(self.entries.items())
        prefix = path + "/"
        return [(p[len(prefix) :], e) for p, e in self.entries.items() if p.startswith(prefix)]

    def under(self, path: str) -> list[tuple[str, str, str, str]]:
        """(path relative to ``path``, mode, kind, object id) of every entry below ``path``."""
        return [(rel, e.mode, e.kind, e.oid) for rel, e in self.entries_under(path)]

    def _batch(self, oids: list[str], on_chunk: Callable[[str, bytes], None]) -> None:
        """Stream every blob through ``on_chunk`` (called at least once per blob, with b"" for
        an empty one)."""
        if not oids:
            return
        writer: threading.Thread | None = None
        try:
            args = ["cat-file", "--batch"]
            with git_process(self.root, args, subprocess.PIPE) as (proc, deadline):
                assert proc.stdin is not None and proc.stdout is not None
                # A writer thread: git answers while we are still writing, and both pipes can
                # fill up.
                writer = threading.Thread(target=_feed, args=(proc.stdin, oids), daemon=True)
                writer.start()
                _read_batch(proc.stdout, oids, on_chunk, deadline)
        finally:
            if writer is not None:  # after git has ended: a blocked write has failed by then
                writer.join(timeout=5)


def _feed(stdin: IO[bytes], oids: list[str]) -> None:
    try:
        stdin.write("".join(f"{oid}\n" for oid in oids).encode("ascii"))
        stdin.close()
    except OSError:
        pass


def _read_batch(
    stdout: IO[bytes],
    oids: list[str],
    on_chunk: Callable[[str, bytes], None],
    deadline: GitDeadline,
) -> None:
    """``git cat-file --batch``'s answers for ``oids``, in order, through ``on_chunk``."""
    for oid in oids:
        header = stdout.readline(200).decode("ascii", "replace").split()
        if len(header) != 3 or not header[2].isdigit():
            raise GitError(
                f"git cat-file: no answer within {deadline.seconds} s"
                if deadline.fired
                else f"git cat-file: object {oid} is missing"
            )
        remaining = int(header[2])
        on_chunk(oid, b"")
        while remaining:
            chunk = stdout.read(min(remaining, 1 << 20))
            if not chunk:
                raise GitError("git cat-file: output ended early")
            on_chunk(oid, chunk)
            remaining -= len(chunk)
        stdout.read(1)  # the newline after the contents
