"""Reading one request of the credential proxy from its client, bounded: the head (request
line and headers) to 64 KiB, the body to 32 MiB, chunked bodies decoded."""

from __future__ import annotations

import io
from collections.abc import Callable

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


def _read_chunked(reader: io.BufferedReader) -> bytes:
    body = bytearray()
    while True:
        size_line = reader.readline(1024)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Reject(400, "Bad Request") from None
        if size < 0 or len(body) + size > MAX_BODY_BYTES:
            raise Reject(413, "Content Too Large")
        if size == 0:
            break
        chunk = reader.read(size)
        if len(chunk) != size or reader.readline(4) not in (b"\r\n", b"\n"):
            raise Reject(400, "Bad Request")
        body += chunk
    for _ in range(100):  # trailers, ignored
        line = reader.readline(MAX_HEAD_BYTES)
        if line in (b"\r\n", b"\n", b""):
            return bytes(body)
    raise Reject(400, "Bad Request")


def read_body(
    reader: io.BufferedReader, headers: list[tuple[str, str]], send_continue: Callable[[], None]
) -> bytes:
    encoding = header(headers, "transfer-encoding")
    length_text = header(headers, "content-length")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise Reject(501, "Not Implemented")
        send_continue()
        return _read_chunked(reader)
    if length_text is None:
        return b""
    if not length_text.isdigit():
        raise Reject(400, "Bad Request")
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        raise Reject(413, "Content Too Large")
    send_continue()
    body = reader.read(length)
    if len(body) != length:
        raise Reject(400, "Bad Request")
    return bytes(body)
