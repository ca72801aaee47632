"""Strict reading of the HTTP request head: one value per header, lengths as ASCII digits.

Every check raises :class:`HttpRefusal` (status, one-line message); the handler turns it into an
error response. Nothing here echoes a header value into a message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.message import Message
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})

# ``int()`` accepts "²", "٣", "+5", " 5 " and "5_0"; a length is plain ASCII digits only.
_ASCII_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_MAX_LENGTH_DIGITS = 15  # beyond any limit here; keeps int() away from huge digit strings


class HttpRefusal(Exception):
    """A request the server will not serve: answered with ``status`` and ``message``.

    ``close`` ends the connection after the answer (the end of the body cannot be trusted)."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
        self.close = close


def single_header(headers: Message, name: str) -> str | None:
    """The one value of header ``name`` (None when absent). Repeats with the same value are
    accepted, as HTTP allows; different values are a 400, as no reading of them is safe."""
    values = [value.strip(" \t") for value in headers.get_all(name) or []]
    if len(set(values)) > 1:
        raise HttpRefusal(400, f"Bad Request: more than one {name} header", close=True)
    return values[0] if values else None


def content_length(headers: Message, max_bytes: int) -> int | None:
    """The body length of a request (None when it has no Content-Length).

    A Transfer-Encoding (chunked bodies are not accepted), a length that is not ASCII digits,
    differing repeated lengths, or one above ``max_bytes`` are refused, and the connection is
    closed: where the body ends is then unknown."""
    length_text = single_header(headers, "Content-Length")
    if headers.get_all("Transfer-Encoding"):
        if length_text is not None:
            raise HttpRefusal(
                400, "Bad Request: both Transfer-Encoding and Content-Length", close=True
            )
        raise HttpRefusal(
            411, "Length Required: send the body with a Content-Length, not chunked", close=True
        )
    if length_text is None:
        return None
    if not _ASCII_DIGITS.fullmatch(length_text):
        raise HttpRefusal(
            400, "Bad Request: Content-Length must be a number in ASCII digits", close=True
        )
    if len(length_text) > _MAX_LENGTH_DIGITS or int(length_text) > max_bytes:
        raise HttpRefusal(413, f"Payload Too Large: at most {max_bytes} bytes", close=True)
    return int(length_text)


def endpoint_path(target: str) -> str | None:
    """The path of a request target (origin form ``/mcp?…`` or absolute form), or None."""
    if target.startswith("/") and not target.startswith("//"):
        return target.split("?", 1)[0].split("#", 1)[0]
    if target.lower().startswith(("http://", "https://")):
        try:
            return urlsplit(target).path or "/"
        except ValueError:
            return None
    return None


def hostname(url: str) -> str | None:
    """The lower-case host of a URL (``//host:port`` works too), None if there is none."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def allowed_hosts(bound_host: str) -> frozenset[str] | None:
    """Host names accepted in ``Host``/``Origin`` headers; None = any Host (wildcard bind)."""
    if bound_host in WILDCARD_HOSTS:
        return None
    return LOOPBACK_HOSTS | {bound_host.lower()}


def media_types(header: str | None) -> set[str]:
    """Media ranges of an Accept header, without parameters; q=0 ranges are refused ones."""
    if header is None:
        return {"*/*"}
    types = set()
    for part in header.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        refused = any(f.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for f in fields)
        if not refused:
            types.add(fields[0].lower())
    return types
