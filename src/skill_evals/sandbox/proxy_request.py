"""Reading one request of the credential proxy from its client, bounded: the head (request
line and headers) to 64 KiB, the body to 32 MiB, streamed in pieces of at most 64 KiB (chunked
bodies decoded) so that no body is ever held whole."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024


class Reject(Exception):
    """A request answered by the proxy itself (status, then the connection closes)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def read_head(reader: io.BufferedReader) -> list[bytes] | None:
    """The request line and header lines, ≤ 64 KiB in all; None at a clean end of stream."""
    lines: list[bytes] = []
    total = 0
    while True:
        line = reader.readline(MAX_HEAD_BYTES + 1 - total)
        if not line:
            if not lines:
                return None
            raise Reject(400, "Bad Request")
        total += len(line)
        if total > MAX_HEAD_BYTES:
            raise Reject(431, "Request Header Fields Too Large")
        if line in (b"\r\n", b"\n"):
            if not lines:
                continue  # a stray empty line between requests
            return lines
        lines.append(line.rstrip(b"\r\n"))


def parse_headers(lines: list[bytes]) -> list[tuple[str, str]]:
    headers = []
    for raw in lines:
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip() or any(c in name for c in " \t"):
            raise Reject(400, "Bad Request")
        headers.append((name, value.strip()))
    return headers


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k.lower() == name]
    return ", ".join(values) if values else None


_PIECE = 64 * 1024


def _chunked_pieces(reader: io.BufferedReader) -> Iterator[bytes]:
    total = 0
    while True:
        size_line = reader.readline(1024)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Reject(400, "Bad Request") from None
        if size < 0 or total + size > MAX_BODY_BYTES:
            raise Reject(413, "Content Too Large")
        if size == 0:
            break
        total += size
        yield from _length_pieces(reader, size)
        if reader.readline(4) not in (b"\r\n", b"\n"):
            raise Reject(400, "Bad Request")
    for _ in range(100):  # trailers, ignored
        line = reader.readline(MAX_HEAD_BYTES)
        if line in (b"\r\n", b"\n", b""):
            return
    raise Reject(400, "Bad Request")


def _length_pieces(reader: io.BufferedReader, length: int) -> Iterator[bytes]:
    while length:
        piece = reader.read(min(length, _PIECE))
        if not piece:
            raise Reject(400, "Bad Request")
        length -= len(piece)
        yield piece


def body_pieces(
    reader: io.BufferedReader, headers: list[tuple[str, str]], send_continue: Callable[[], None]
) -> tuple[int | None, Iterator[bytes]]:
    """The request body as it arrives: (its Content-Length, or None when chunked, and the
    pieces). A length over 32 MiB is refused before anything is read (413); a chunked body
    that grows past it stops its pieces with Reject."""
    encoding = header(headers, "transfer-encoding")
    length_text = header(headers, "content-length")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise Reject(501, "Not Implemented")
        send_continue()
        return None, _chunked_pieces(reader)
    if length_text is None:
        return 0, iter(())
    if not length_text.isdigit():
        raise Reject(400, "Bad Request")
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        raise Reject(413, "Content Too Large")
    send_continue()
    return length, _length_pieces(reader, length)
