"""What the egress proxy reads from a sandbox's connection and writes on it (egress.py): the
request head, read bounded in size and time; the authority of a target, in the one spelling
of hosts (network_policy.host_key); the heads it passes on, rebuilt from what the strict parser
(proxy_request.py) accepted; and its own short answers."""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse

from .network_policy import host_key
from .usage import INVOCATION_HEADER

MAX_HEAD_BYTES = 64 * 1024
IDLE_TIMEOUT_S = 300.0
HEAD_DEADLINE_S = 60.0  # a request head, from its first byte
_CHUNK = 64 * 1024


class Refused(Exception):
    """A request the egress proxy answers itself (status, reason, body), then closes."""

    def __init__(self, status: int, reason: str, body: bytes = b"") -> None:
        super().__init__(reason)
        self.status, self.reason, self.body = status, reason, body


def answer(status: int, reason: str, body: bytes = b"") -> bytes:
    """The proxy's own short response, closing the connection."""
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
    head += "Content-Type: text/plain\r\n" if body else ""
    return (head + "Connection: close\r\n\r\n").encode("latin-1") + body


def busy(client: socket.socket) -> None:
    """Answer 503 without waiting (the answer fits the socket's buffer) and close."""
    body = b"skill-evals sandbox: too many connections in flight in this run; retry"
    with contextlib.suppress(OSError):
        client.setblocking(False)
        client.send(answer(503, "Service Unavailable", body))
    client.close()


def read_head(client: socket.socket) -> tuple[bytes, bytes] | None:
    """(the request head up to its blank line, the bytes read past it); None on a clean end.
    The first byte may take the idle time; the whole head must follow within
    HEAD_DEADLINE_S, however slowly it trickles in."""
    data = b""
    deadline: float | None = None
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise Refused(431, "Request Header Fields Too Large")
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Refused(408, "Request Timeout")
            client.settimeout(min(IDLE_TIMEOUT_S, remaining))
        try:
            chunk = client.recv(_CHUNK)
        except TimeoutError:
            raise Refused(408, "Request Timeout") from None
        if not chunk:
            if data.strip():
                raise Refused(400, "Bad Request")
            return None
        if deadline is None:
            deadline = time.monotonic() + HEAD_DEADLINE_S
        data += chunk
    client.settimeout(IDLE_TIMEOUT_S)
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def host_port(authority: str, default: int) -> tuple[str, int]:
    """The host (in its :func:`host_key` spelling) and port of a request's authority; 400 for
    userinfo, a zone id, a port that is not 1–65535 or no valid host."""
    if "@" in authority or "%" in authority:
        raise Refused(400, "Bad Request")
    try:  # a parse error never reaches the engine's stderr with the sandbox's text in it
        parts = urllib.parse.urlsplit("//" + authority)
        port, hostname = parts.port, parts.hostname
    except ValueError:
        raise Refused(400, "Bad Request") from None
    if port == 0 or authority.endswith(":") or not hostname:
        raise Refused(400, "Bad Request")
    host = host_key(hostname)
    # Brackets hold an IPv6 literal and nothing else (not an IPv4 address, not a name).
    if host is None or (authority.startswith("[") and ":" not in host):
        raise Refused(400, "Bad Request")
    return host, port or default


# Headers a proxy consumes: never passed on from a sandbox's request.
_PROXY_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "host",
     INVOCATION_HEADER.lower()}
)  # fmt: skip


def _head(line: bytes, headers: list[tuple[str, str]], *extra: tuple[str, str]) -> bytes:
    """A request head rebuilt from parsed parts: the request line, the headers a proxy does
    not consume, then ``extra``; one request per connection."""
    kept = [(k, v) for k, v in headers if k.lower() not in _PROXY_HEADERS]
    lines = [line] + [f"{k}: {v}".encode("latin-1") for k, v in (*kept, *extra)]
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def marked(line: bytes, headers: list[tuple[str, str]], token: str | None) -> bytes:
    """A model request's head for the credential proxy, marked with the invocation's token
    (any mark of the sandbox's own removed; the credential proxy sets the upstream's Host)."""
    mark = [(INVOCATION_HEADER, token)] if token is not None else []
    return _head(line, headers, ("Host", "127.0.0.1"), *mark)


def origin_form(method: str, path: str, authority: str, headers: list[tuple[str, str]]) -> bytes:
    """An absolute-form request's head for the origin server: origin-form target, ``Host``
    the request-target's authority (whatever Host the sandbox sent), no proxy headers."""
    line = f"{method} {path} HTTP/1.1".encode("latin-1")
    return _head(line, headers, ("Host", authority))
