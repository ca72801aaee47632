"""Where the credential proxy sends a request: its upstream, and the request's target and
headers there, with the caller's credentials (the placeholder) dropped and the real one set in
the upstream's style."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from .proxy_request import header
from .usage import INVOCATION_HEADER

HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "trailers", "transfer-encoding", "upgrade", "proxy-connection",
    }
)  # fmt: skip
# Incoming headers the proxy never forwards: the caller's credentials (the placeholder), and the
# ones it sets itself.
_DROPPED = frozenset(
    {"x-api-key", "authorization", "x-goog-api-key", "host", "content-length",
     INVOCATION_HEADER.lower()}
)  # fmt: skip


@dataclass(frozen=True)
class Upstream:
    """Where requests go and which credential they carry."""

    scheme: str
    host: str
    port: int
    base_path: str
    style: str
    secret: str = field(repr=False)

    @classmethod
    def from_url(cls, url: str, style: str, secret: str) -> Upstream:
        """Split an ``http(s)://`` upstream URL (validated by the caller)."""
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname or "", port, parts.path.rstrip("/"), style, secret)

    @property
    def netloc(self) -> str:
        """The ``Host`` header value."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def _without_key(query: str) -> list[str]:
    return [
        part
        for part in query.split("&")
        if part and urllib.parse.unquote_plus(part.split("=", 1)[0]) != "key"
    ]


def _forward_headers(headers: list[tuple[str, str]], upstream: Upstream) -> list[tuple[str, str]]:
    listed = {
        token.strip().lower()
        for token in (header(headers, "connection") or "").split(",")
        if token.strip()
    }
    dropped = HOP_BY_HOP | _DROPPED | listed | {"expect"}
    kept = [(k, v) for k, v in headers if k.lower() not in dropped]
    kept.insert(0, ("Host", upstream.netloc))
    return kept


def upstream_target(
    rest: str, incoming: list[tuple[str, str]], upstream: Upstream
) -> tuple[str, list[tuple[str, str]]]:
    """The upstream path (for ``rest``, the path and query after the prefix) and headers, the
    caller's credentials dropped and the real one set in the upstream's style."""
    path, _, query = rest.partition("?")
    had_key = any(
        urllib.parse.unquote_plus(p.split("=", 1)[0]) == "key" for p in query.split("&") if p
    )
    params = _without_key(query)
    headers = _forward_headers(incoming, upstream)
    style = upstream.style
    if style == "key-query" or (style == "x-goog-api-key" and had_key):
        params.append("key=" + urllib.parse.quote(upstream.secret, safe=""))
    elif style == "x-api-key":
        headers.append(("x-api-key", upstream.secret))
    elif style == "bearer":
        headers.append(("Authorization", "Bearer " + upstream.secret))
    else:
        headers.append(("x-goog-api-key", upstream.secret))
    target = (upstream.base_path + path) or "/"
    if params:
        target += "?" + "&".join(params)
    return target, headers


class Scrubber:
    """Masks the real credential (as sent, and percent-encoded) wherever it comes back in a
    response — a ``Location`` that repeats the query's ``key``, an error body that quotes the
    request — with as many ``*``: the sandbox may use the key, never read it. Lengths stay
    as they were; a body's last bytes are held back only while they could begin the key."""

    def __init__(self, secret: str) -> None:
        forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
        self._forms = sorted((f.encode() for f in forms if f), key=len, reverse=True)
        self._held = b""

    def text(self, value: str) -> str:
        """A header value with the credential masked."""
        for form in self._forms:
            value = value.replace(form.decode(), "*" * len(form))
        return value

    def feed(self, chunk: bytes) -> bytes:
        """The next piece of a body, masked; what could begin the key waits for the next."""
        data = self._held + chunk
        for form in self._forms:
            data = data.replace(form, b"*" * len(form))
        keep = 0
        for form in self._forms:
            for size in range(min(len(form) - 1, len(data)), keep, -1):
                if data.endswith(form[:size]):
                    keep = size
                    break
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        """What was held back when the body ended."""
        held, self._held = self._held, b""
        return held
