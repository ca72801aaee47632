"""Reading requests of the proxies, bounded and strict, one parser for both: the egress proxy
reads a sandbox's request head with :func:`split_head` and passes on only what
:func:`parse_headers` accepted, the credential proxy reads the same head with :func:`read_head`,
so the two never disagree about where a head ends or what a header says (no request smuggled
past one inside another). The head (request line and headers) is at most 64 KiB and 100 header
lines, every line ends in CRLF with no other CR, LF or NUL; header names are tokens; a body has
one framing (``Content-Length`` digits or ``Transfer-Encoding: chunked``, never both) and is at
most 32 MiB, streamed in pieces of at most 64 KiB (chunked bodies decoded), never held whole."""

from __future__ import annotations

import contextlib
import io
import re
import socket
import threading
from collections.abc import Callable, Iterator

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
MAX_BODY_BYTES = 32 * 1024 * 1024
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_VALUE = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]*\Z")  # no control character but HTAB
_TARGET = re.compile(r"[\x21-\x7e]+\Z")  # visible ASCII, no space
_DIGITS = re.compile(r"[0-9]{1,19}\Z")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}\Z")
_BAD_IN_LINE = re.compile(rb"[\r\n\x00]")


class Reject(Exception):
    """A request answered by the proxy itself (status, then the connection closes)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _bad() -> Reject:
    return Reject(400, "Bad Request")


def split_head(head: bytes) -> list[bytes]:
    """A head read up to (not including) its blank line → its lines, each checked."""
    if len(head) > MAX_HEAD_BYTES:
        raise Reject(431, "Request Header Fields Too Large")
    lines = head.split(b"\r\n")
    if len(lines) > MAX_HEADERS + 1:
        raise Reject(431, "Request Header Fields Too Large")
    if any(_BAD_IN_LINE.search(line) for line in lines):
        raise _bad()  # a bare CR or LF: another reader could split the head elsewhere
    return lines


def read_head(reader: io.BufferedReader) -> list[bytes] | None:
    """The request line and header lines (as :func:`split_head` checks them), ≤ 64 KiB and
    100 header lines in all; None at a clean end of stream."""
    lines: list[bytes] = []
    total = 0
    while True:
        line = reader.readline(MAX_HEAD_BYTES + 1 - total)
        if not line:
            if not lines:
                return None
            raise _bad()
        total += len(line)
        if total > MAX_HEAD_BYTES or len(lines) > MAX_HEADERS:
            raise Reject(431, "Request Header Fields Too Large")
        if not line.endswith(b"\r\n") or _BAD_IN_LINE.search(line[:-2]):
            raise _bad()
        if line == b"\r\n":
            if not lines:
                continue  # a stray empty line between requests
            return lines
        lines.append(line[:-2])


def request_line(line: bytes) -> tuple[str, str, str]:
    """(method, target, version) of a request line: three words, one space apart."""
    words = line.decode("latin-1").split(" ")
    if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise _bad()
    method, target, version = words
    if not _TOKEN.match(method) or not _TARGET.match(target):
        raise _bad()
    return method, target, version


def parse_headers(lines: list[bytes]) -> list[tuple[str, str]]:
    """``name: value`` lines → pairs; a name that is not a token (obs-fold, spaces) or a
    value with control characters is 400."""
    headers = []
    for raw in lines:
        name, sep, value = raw.decode("latin-1").partition(":")
        value = value.strip(" \t")
        if not sep or not _TOKEN.match(name) or not _VALUE.match(value):
            raise _bad()
        headers.append((name, value))
    return headers


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k.lower() == name]
    return ", ".join(values) if values else None


def framing(headers: list[tuple[str, str]]) -> int | None:
    """The body's length: its Content-Length, None when chunked (0 without a body). Both
    framings, another transfer coding, several lengths or a length that is not plain digits
    are refused, so every reader of the request agrees where its body ends."""
    encoding = header(headers, "transfer-encoding")
    length_text = header(headers, "content-length")
    if encoding is not None:
        if length_text is not None:
            raise _bad()
        if encoding.lower() != "chunked":
            raise Reject(501, "Not Implemented")
        return None
    if length_text is None:
        return 0
    if not _DIGITS.match(length_text):
        raise _bad()
    return int(length_text)


_PIECE = 64 * 1024


def _chunked_pieces(reader: io.BufferedReader) -> Iterator[bytes]:
    total = 0
    while True:
        size_line = reader.readline(1024)
        if not size_line.endswith(b"\r\n"):
            raise _bad()
        digits = size_line[:-2].split(b";", 1)[0].strip(b" \t")
        if not _CHUNK_SIZE.match(digits):
            raise _bad()
        size = int(digits, 16)
        if total + size > MAX_BODY_BYTES:
            raise Reject(413, "Content Too Large")
        if size == 0:
            break
        total += size
        yield from _length_pieces(reader, size)
        if reader.readline(4) != b"\r\n":
            raise _bad()
    for _ in range(MAX_HEADERS):  # trailers, ignored
        line = reader.readline(MAX_HEAD_BYTES)
        if line == b"\r\n":
            return
        if not line.endswith(b"\r\n"):
            raise _bad()
    raise _bad()


def _length_pieces(reader: io.BufferedReader, length: int) -> Iterator[bytes]:
    while length:
        piece = reader.read1(min(length, _PIECE))
        if not piece:
            raise _bad()
        length -= len(piece)
        yield piece


def body_pieces(
    reader: io.BufferedReader, headers: list[tuple[str, str]], send_continue: Callable[[], None]
) -> tuple[int | None, Iterator[bytes]]:
    """The request body as it arrives: (its Content-Length, or None when chunked, and the
    pieces). A length over 32 MiB is refused before anything is read (413); a chunked body
    that grows past it stops its pieces with Reject before the chunk is read."""
    length = framing(headers)
    if length is None:
        send_continue()
        return None, _chunked_pieces(reader)
    if length > MAX_BODY_BYTES:
        raise Reject(413, "Content Too Large")
    if length:
        send_continue()
    return length, _length_pieces(reader, length) if length else iter(())


class Watchdog:
    """Cuts ``sock`` (both directions) unless cancelled within ``seconds``: the bound on a
    whole head or body however slowly it arrives (a socket timeout bounds one read only)."""

    def __init__(self, sock: socket.socket | None, seconds: float) -> None:
        self._timer: threading.Timer | None = None
        if sock is not None:
            self._timer = threading.Timer(seconds, _cut, (sock,))
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """The guarded read is done in time."""
        if self._timer is not None:
            self._timer.cancel()


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def until_done(pieces: Iterator[bytes], watchdog: Watchdog) -> Iterator[bytes]:
    """``pieces``, then ``watchdog`` cancelled (the body is in)."""
    yield from pieces
    watchdog.cancel()
