"""Strict, bounded JSONL reader (docs/inputs.md).

Owner: inputs. Reads incrementally as bytes, splits on b"\\n" only, strips one trailing b"\\r",
skips a UTF-8 BOM at file start and blank lines, enforces the 50 MB file / 4 MiB record limits,
strict UTF-8 and strict JSON (no NaN/Infinity, no duplicate keys, integers within ±2^53-1),
objects only. Every error is ``InvalidInput("FILE:LINE: reason")`` and never echoes the record.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InvalidInput

MAX_FILE_BYTES = 50_000_000
MAX_RECORD_BYTES = 4_194_304
MAX_SAFE_INTEGER = 9_007_199_254_740_991

_CHUNK = 1 << 20
_BOM = b"\xef\xbb\xbf"
# JSON whitespace (RFC 8259): a line made only of these is blank.
_JSON_WS = b" \t\r"
# A key is named in an error only when it looks like a field name, so no data leaks.
_SAFE_KEY = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
# A \u escape of a surrogate; only then can a decoded string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


@dataclass(frozen=True, slots=True)
class Record:
    """One JSON object and the one-based line it came from."""

    line: int
    value: dict[str, Any]


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message ("a FIFO", "a symlink", …)."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_file(path: Path, what: str = "file") -> None:
    """Raise InvalidInput unless ``path`` is a regular file (not a symlink, FIFO, device, dir)
    no larger than MAX_FILE_BYTES. Never opens a FIFO (so it cannot block)."""
    st = stat_or_fail(path, False, f"{what} does not exist", f"cannot read {what}")
    _check_stat(path, what, st)


def stat_or_fail(path: Path, follow: bool, missing: str, unreadable: str) -> os.stat_result:
    """``path``'s status (of the link itself unless ``follow``), or InvalidInput saying it is
    ``missing`` or ``unreadable`` (with the system's reason)."""
    try:
        return os.stat(path, follow_symlinks=follow)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: {missing}") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: {unreadable} ({exc.strerror})") from None


def not_regular_problem(path: Path, what: str, st: os.stat_result, max_bytes: int) -> str | None:
    """Why ``st`` is not a regular file of at most ``max_bytes``, naming ``path``; or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: {what} must be a regular file, but it is {file_kind(st.st_mode)}"
    if st.st_size > max_bytes:
        return f"{path}: {what} is {st.st_size} bytes; the limit is {max_bytes} bytes"
    return None


def _check_stat(path: Path, what: str, st: os.stat_result) -> None:
    problem = not_regular_problem(path, what, st, MAX_FILE_BYTES)
    if problem is not None:
        raise InvalidInput(problem)


def open_regular_file(path: Path, what: str = "file") -> int:
    """Open ``path`` for reading after :func:`check_regular_file`; return the descriptor.

    O_NOFOLLOW and O_NONBLOCK make the open itself safe if the file is swapped for a symlink
    or FIFO after the check; fstat then confirms it is still a regular file within the cap."""
    check_regular_file(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(f"{path}: {what} must be a regular file, not a symlink") from None
        raise InvalidInput(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        _check_stat(path, what, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_chunks(fd: int, path: Path, what: str) -> Iterator[bytes]:
    """Yield the file's bytes in chunks, failing if it grows past MAX_FILE_BYTES meanwhile."""
    limit = MAX_FILE_BYTES
    # Wrap the descriptor now: if the generator is never started, the file object still
    # closes it when collected.
    fh = os.fdopen(fd, "rb", buffering=0)
    return _chunks_of(fh, path, what, limit)


def _chunks_of(fh: BinaryIO, path: Path, what: str, limit: int) -> Iterator[bytes]:
    total = 0
    with fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                return
            total += len(chunk)
            if total > limit:
                raise InvalidInput(f"{path}: {what} exceeds the limit of {limit} bytes")
            yield chunk


def read_regular_file(path: Path, what: str = "file") -> bytes:
    """Return the bytes of a regular file of at most MAX_FILE_BYTES (docs/inputs.md)."""
    return b"".join(_read_chunks(open_regular_file(path, what), path, what))


# ------------------------------------------------------------------------------ strict JSON


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in strict JSON")


def _parse_int(text: str) -> int:
    # JSON integers have no leading zeros, so more than 17 chars ("-" + 16 digits) is unsafe;
    # this also keeps int() away from huge digit strings.
    if len(text) > 17:
        raise ValueError("integer outside ±9007199254740991")
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise ValueError("integer outside ±9007199254740991")


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number too large for a double")
    return value


class DuplicateKey(ValueError):
    """A JSON object repeats a key. str() never names it (the text may be a runner's output);
    ``key`` holds it for a reader that may name it (see :func:`describe_key`)."""

    def __init__(self, key: str) -> None:
        super().__init__("duplicate object key")
        self.key = key


def describe_key(key: str) -> str | None:
    """A key quoted for an error about the user's own file, only when it looks like a field
    name (so no data leaks into the message); None otherwise."""
    return f'"{key}"' if _SAFE_KEY.fullmatch(key) else None


def _pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


# One shared, immutable decoder: json.loads(**kwargs) would build a new one on every call.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_to_dict,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_reject_constant,
)
# Its C scanner: scan(text, index) -> (value, end index), with the same hooks.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def loads_strict(text: str) -> Any:
    """Parse one strict JSON value: no NaN/Infinity, no duplicate keys, safe integers only.

    Raises ValueError with a short reason (no input text in it)."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # Some of json's messages already end in " at" ("Invalid control character at").
        problem = exc.msg.removesuffix(" at")
        raise ValueError(f"invalid JSON: {problem} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    # A \uD800-style escape can smuggle a lone surrogate past strict UTF-8; it cannot be
    # written back as UTF-8, so it is rejected like invalid UTF-8. Cheap test first: looking
    # for one character is a memchr, far faster than a two-character substring or the regex.
    if "\\" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise ValueError("invalid JSON: string escape encodes a lone UTF-16 surrogate")
    return value


# ------------------------------------------------------------------------------------ JSONL


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number"


def iter_jsonl(
    chunks: Iterable[bytes], path: Path, *, max_records: int | None = None
) -> Iterator[Record]:
    """Parse JSONL from byte ``chunks`` (a file's content in order) with the strict JSONL rules.

    Errors name ``path`` and the one-based line. Used by :func:`read_jsonl` and by callers
    that already hold the bytes (e.g. to hash them in the same read)."""
    for line, value in iter_jsonl_values(chunks, path, max_records=max_records):
        yield Record(line, value)


def iter_jsonl_values(
    chunks: Iterable[bytes], path: Path, *, max_records: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`iter_jsonl` yielding plain ``(line, object)`` pairs: the same rules and errors,
    without building a Record per line (the observations loader reads ~10^5 lines per run)."""
    record_cap = MAX_RECORD_BYTES
    bound = max_records
    count = 0  # non-blank records seen so far
    parse = _parse_record
    for base, lines in _line_batches(chunks, path):
        # Hot loop: a line that neither starts with whitespace nor ends in "\r" (nearly
        # all of them) skips the "\r"/blank handling, which would copy it.
        # Empty lines never reach Python: compress() hands out only the non-empty ones (a file
        # of newlines would otherwise cost one loop turn per byte).
        for index in compress(range(len(lines)), lines):
            raw = lines[index]
            if raw[0] in _JSON_WS or raw[-1] == 13:
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                if not raw.strip(_JSON_WS):
                    continue  # blank: counted toward the file cap only
            count += 1
            at = base + index + 1
            if len(raw) > record_cap or (bound is not None and count > bound):
                _check_record(len(raw), at, count, path, record_cap, bound)
            yield at, parse(raw, at, path)


def _line_batches(chunks: Iterable[bytes], path: Path) -> Iterator[tuple[int, list[bytes]]]:
    """The lines of ``chunks``, a chunk's worth at a time, each batch with the number of lines
    before it; a leading BOM removed, and the last line (after the final "\n") a batch of its
    own. The record cap holds while reading: a huge unterminated line is never buffered."""
    record_cap = MAX_RECORD_BYTES
    pending = b""
    lineno = 0  # lines seen so far
    at_start = True
    long_blank = False  # the current line is whitespace only and longer than record_cap
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        if at_start:
            if len(data) < len(_BOM) and _BOM.startswith(data):
                pending = data  # too short to tell whether a BOM starts here
                continue
            at_start = False
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        lines = data.split(b"\n")
        pending = lines.pop()
        if long_blank:
            # The line continues a whitespace run already longer than a record may be.
            if (lines[0] if lines else pending).strip(_JSON_WS):
                raise InvalidInput(f"{path}:{lineno + 1}: record exceeds {record_cap} bytes")
            long_blank = not lines
        if len(pending) > record_cap + 1:
            if pending.strip(_JSON_WS):
                raise InvalidInput(
                    f"{path}:{lineno + len(lines) + 1}: record exceeds {record_cap} bytes"
                )
            pending = b""  # a long blank line is still just blank; keep only that fact
            long_blank = True
        yield lineno, lines
        lineno += len(lines)
    if at_start and pending.startswith(_BOM):
        pending = pending[len(_BOM) :]
    yield lineno, [pending]


def _check_record(
    size: int, lineno: int, count: int, path: Path, record_cap: int, bound: int | None
) -> None:
    if size > record_cap:
        raise InvalidInput(f"{path}:{lineno}: record exceeds {record_cap} bytes")
    if bound is not None and count > bound:
        raise InvalidInput(
            f"{path}:{lineno}: more than {bound} records; reading stopped here (population bound)"
        )


def _parse_record(raw: bytes, lineno: int, path: Path) -> dict[str, Any]:
    """Decode and parse one non-blank record line into an object."""
    # Fast path (docs/performance.md): the strict decoder's C scanner called directly, skipping
    # JSONDecoder.decode's Python wrapper (two whitespace regexes and a frame). It returns only
    # what the careful path below would return: the whole line scanned, an object, and the
    # same lone-surrogate test as loads_strict. Anything else (an error, surrounding
    # whitespace, ...) goes the careful way, which produces the error message.
    try:
        text = raw.decode("utf-8")
        value, end = _SCAN(text, 0)
    except (ValueError, StopIteration, RecursionError):  # UnicodeDecodeError is a ValueError
        pass
    else:
        if (
            end == len(text)
            and type(value) is dict
            and (
                "\\" not in text
                or not _SURROGATE_ESCAPE.search(text)
                or not _has_lone_surrogate(value)
            )
        ):
            return value
    return _parse_record_checked(raw, lineno, path)


def _parse_record_checked(raw: bytes, lineno: int, path: Path) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{path}:{lineno}: invalid UTF-8 at byte {exc.start + 1} of the line"
        ) from None
    try:
        value = loads_strict(text)
    except DuplicateKey as exc:
        # The file is the user's own: name a field-like key to say which one to fix.
        named = describe_key(exc.key)
        shown = f"duplicate object key {named}" if named else "duplicate object key"
        raise InvalidInput(f"{path}:{lineno}: {shown}") from None
    except ValueError as exc:
        raise InvalidInput(f"{path}:{lineno}: {exc}") from None
    if type(value) is not dict:
        raise InvalidInput(
            f"{path}:{lineno}: each record must be a JSON object, not {_json_type(value)}"
        )
    return value


def read_jsonl(path: Path, *, max_records: int | None = None) -> Iterator[Record]:
    """Yield each object record of ``path``; stop with InvalidInput at the first invalid record
    or at the first record past ``max_records`` (the population bound)."""
    fd = open_regular_file(path, "JSONL file")
    return iter_jsonl(_read_chunks(fd, path, "JSONL file"), path, max_records=max_records)


def read_jsonl_values(
    path: Path, *, max_records: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl` yielding ``(line, object)`` pairs instead of Records."""
    fd = open_regular_file(path, "JSONL file")
    return iter_jsonl_values(_read_chunks(fd, path, "JSONL file"), path, max_records=max_records)
