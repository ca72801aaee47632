"""Reading files the gate does not control: shard reports from artifacts, the lock file, the
GitHub event payload, the config. Each read is bounded (a regular file, opened without
blocking, at most ``max_bytes``) and JSON is parsed strictly (no NaN/Infinity, no duplicate
keys, safe integers) with a nesting bound, so a hostile file is an error naming it — never a
hang, a crash or unbounded memory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..suite.jsonl import loads_strict, not_regular_problem

MAX_JSON_DEPTH = 64
_CHUNK = 1 << 20


class UntrustedFileError(InvalidInput):
    """A file that cannot be used; str() names it and says why (never its contents)."""


def read_bounded(path: Path, what: str, max_bytes: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``.

    Opened with O_NONBLOCK (a FIFO cannot block the open) and checked with fstat on the open
    descriptor (so a swap after a check cannot slip a device in); reading stops past the cap
    even if the file grows meanwhile."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UntrustedFileError(f"{path}: {what} does not exist") from None
    except OSError as exc:
        reason = "a symlink" if not follow_symlinks and os.path.islink(path) else exc.strerror
        raise UntrustedFileError(f"{path}: cannot read {what} ({reason})") from None
    try:
        problem = not_regular_problem(path, what, os.fstat(fd), max_bytes)
        if problem is not None:
            raise UntrustedFileError(problem)
        # O_NONBLOCK means nothing for a regular file; clear it so reads behave alike anywhere.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    parts: list[bytes] = []
    total = 0
    with os.fdopen(fd, "rb", buffering=0) as fh:
        while True:
            chunk = fh.read(min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise UntrustedFileError(
                    f"{path}: {what} grew past the limit of {max_bytes} bytes while being read"
                )
    return b"".join(parts)


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0); iterative."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def parse_json(data: bytes, source: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Strict JSON from ``data`` (UTF-8, an optional BOM skipped); errors name ``source``."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(f"{source}: {what} is not UTF-8 (byte {exc.start})") from None
    try:
        value = loads_strict(text)
    except ValueError as exc:
        raise UntrustedFileError(f"{source}: {what}: {exc}") from None
    if json_depth(value) > max_depth:
        raise UntrustedFileError(f"{source}: {what}: nested deeper than {max_depth} levels")
    return value


def load_json_file(
    path: Path,
    what: str,
    max_bytes: int,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    follow_symlinks: bool = True,
) -> Any:
    """:func:`read_bounded` then :func:`parse_json`."""
    data = read_bounded(path, what, max_bytes, follow_symlinks=follow_symlinks)
    return parse_json(data, str(path), what, max_depth)
