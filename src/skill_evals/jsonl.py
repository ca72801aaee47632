"""Strict, bounded JSONL reader (SPEC §1.3).

Owner: inputs. Reads incrementally as bytes, splits on b"\\n" only, strips one trailing b"\\r",
skips a UTF-8 BOM at file start and blank lines, enforces the 50 MB file / 4 MiB record limits,
strict UTF-8 and strict JSON (no NaN/Infinity, no duplicate keys, integers within ±2^53-1),
objects only. Every error is ``InvalidInput("FILE:LINE: reason")`` and never echoes the record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 50_000_000
MAX_RECORD_BYTES = 4_194_304
MAX_SAFE_INTEGER = 9_007_199_254_740_991


@dataclass(frozen=True)
class Record:
    """One JSON object and the one-based line it came from."""

    line: int
    value: dict[str, Any]


def check_regular_file(path: Path, what: str = "file") -> None:
    """Raise InvalidInput unless ``path`` is a regular file (not a symlink, FIFO, device, dir)
    no larger than MAX_FILE_BYTES. Never opens a FIFO (so it cannot block)."""
    raise NotImplementedError


def loads_strict(text: str) -> Any:
    """Parse one strict JSON value: no NaN/Infinity, no duplicate keys, safe integers only.

    Raises ValueError with a short reason (no input text in it)."""
    raise NotImplementedError


def read_jsonl(path: Path, *, max_records: int | None = None) -> Iterator[Record]:
    """Yield each object record of ``path``; stop with InvalidInput at the first invalid record
    or at the first record past ``max_records`` (the population bound)."""
    raise NotImplementedError
