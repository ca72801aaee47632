"""Appending observations to a --record file (docs/runner-contract.md): one JSON line each,
flushed and fsynced, so a run killed at any moment leaves at most its last line damaged (which
--resume reports). Only valid observations are written: a runner failure never is."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from ..errors import InvalidInput
from .observations import Observation
from .record_lock import hold_file


class RecordWriter:
    """Appends observations to a --record file, flushing and fsyncing each line. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        try:
            # Never open a FIFO or device (opening a FIFO for writing can block forever).
            if path.exists() and not stat.S_ISREG(path.stat().st_mode):
                raise InvalidInput(f"--record {path}: must be a regular file")
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InvalidInput(
                f"--record {path}: cannot open for appending ({exc.strerror})"
            ) from None
        try:
            hold_file(self._fd, path)  # the same file under another name (a hard link)
        except InvalidInput:
            os.close(self._fd)
            raise
        try:
            # A previous run killed mid-line leaves no final newline: start on a fresh line so the
            # damage stays on that one line (which --resume then reports).
            size = os.fstat(self._fd).st_size
            if size > 0 and os.pread(self._fd, 1, size - 1) != b"\n":
                os.write(self._fd, b"\n")
        except OSError as exc:
            os.close(self._fd)
            raise InvalidInput(f"--record {path}: cannot write ({exc.strerror})") from None
        self._closed = False

    @property
    def path(self) -> Path:
        """The file being appended to."""
        return self._path

    def write(self, observation: Observation) -> None:
        """Append one recorded observation, flushed to disk (raises InvalidInput if that fails)."""
        line = (
            json.dumps(
                observation.to_record(), ensure_ascii=False, allow_nan=False, separators=(",", ":")
            )
            + "\n"
        ).encode("utf-8")
        with self._lock:
            if self._closed:
                raise ValueError("RecordWriter is closed")
            try:
                view = memoryview(line)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                os.fsync(self._fd)
            except OSError as exc:
                raise InvalidInput(
                    f"--record {self._path}: cannot write ({exc.strerror})"
                ) from None

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._fd)
