"""A small, bounded JSON-over-HTTPS client for the GitHub REST API (stdlib urllib).

Bounds, because the API URL comes from the environment and a server can misbehave:

- the token goes only in the Authorization header, and only to the API's own origin: a
  redirect to another scheme, host or port (https → http included) is refused, not followed;
- a response body larger than ``Limits.max_body_bytes`` is refused;
- every request has a total deadline (``Limits.request_s``) and every operation made of
  several requests one more (``Limits.operation_s``): a server sending one byte every few
  seconds keeps each socket read within its timeout, so a watchdog shuts the request's
  sockets down when the deadline passes.

Every failure is an ``ApiError`` whose message never holds the token.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..suite.jsonl import loads_strict
from .untrusted import MAX_JSON_DEPTH, json_depth


@dataclass(frozen=True)
class Limits:
    """Time and size bounds of the API client (injectable so tests can keep them small)."""

    socket_timeout_s: float = 20.0  # one connect or read
    request_s: float = 30.0  # one request, headers and body
    operation_s: float = 60.0  # one comment operation (several requests)
    max_body_bytes: int = 10_000_000


class ApiError(Exception):
    """An API call failed; str() is safe to print."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"https": 443, "http": 80}.get(scheme)
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port


class _Deadline:
    """Shuts every socket of one request down when its time is up.

    Sockets are tracked by a duplicate of their descriptor: TLS wrapping detaches the original
    socket object, but a shutdown through any descriptor ends the connection, which wakes a
    read blocked on it."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def track(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            dup = socket.socket(fileno=socket.dup(sock.fileno()))
            self._sockets.append(dup)
            if self.expired:
                _shutdown(dup)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _tracked(base: type[http.client.HTTPConnection], deadline: _Deadline) -> Any:
    """``base`` whose new sockets are handed to ``deadline``."""

    class Tracked(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            create: Any = socket.create_connection
            self._create_connection = lambda *a, **k: deadline.track(create(*a, **k))

    return Tracked


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_tracked(http.client.HTTPConnection, self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = _tracked(http.client.HTTPSConnection, self._deadline)
        return self.do_open(connection, req, context=getattr(self, "_context", None))


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the same scheme, host and port: the Authorization header
    (the token) must never reach anyone but the API it was given for."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            fp.close()
            raise ApiError(
                f"HTTP {code}: redirected to another scheme, host or port; not followed "
                "(the token is only sent to GITHUB_API_URL)",
                code,
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class GitHubClient:
    """JSON in, JSON out; the token in the header only; every request bounded."""

    def __init__(self, api_url: str, token: str, limits: Limits | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        if _origin(self.api_url)[0] not in ("http", "https") or not _origin(self.api_url)[1]:
            raise ApiError("GITHUB_API_URL is not an http(s) URL")
        self._token = token
        self.limits = limits or Limits()
        self._operation_end = time.monotonic() + self.limits.operation_s

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """Call ``path`` (relative to the API URL); raises ApiError with a token-free message."""
        remaining = self._operation_end - time.monotonic()
        if remaining <= 0:
            raise ApiError(f"gave up after {self.limits.operation_s:g} s")
        where = f"{method} {path.split('?')[0]}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(self.api_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self._token}")
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "skill-evals")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        # The last request of an operation gets what is left of the operation's time.
        timeout = (
            f"gave up after {self.limits.operation_s:g} s"
            if remaining < self.limits.request_s
            else f"no complete answer within {self.limits.request_s:g} s"
        )
        with _Deadline(min(self.limits.request_s, remaining)) as deadline:
            opener = urllib.request.build_opener(
                _HTTPHandler(deadline), _HTTPSHandler(deadline), _SameOriginRedirects()
            )
            try:
                with opener.open(req, timeout=self.limits.socket_timeout_s) as resp:
                    raw = self._read(resp, where)
            except ApiError as exc:
                raise ApiError(f"{where}: {exc}", exc.status) from None
            except urllib.error.HTTPError as exc:
                exc.close()
                raise ApiError(f"{where}: HTTP {exc.code}", exc.code) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                if deadline.expired:
                    raise ApiError(f"{where}: {timeout}") from None
                reason = getattr(exc, "reason", None) or type(exc).__name__
                raise ApiError(f"{where}: {self.scrub(str(reason))}") from None
            if deadline.expired:  # the watchdog may have cut the body short
                raise ApiError(f"{where}: {timeout}")
        if not raw:
            return None
        try:
            value = loads_strict(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included
            raise ApiError(f"{where}: the response is not JSON") from None
        if json_depth(value) > MAX_JSON_DEPTH:
            raise ApiError(f"{where}: the response is nested too deeply")
        return value

    def _read(self, resp: http.client.HTTPResponse, where: str) -> bytes:
        cap = self.limits.max_body_bytes
        length = resp.headers.get("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > cap:
            raise ApiError(f"the response is larger than {cap} bytes")
        parts: list[bytes] = []
        total = 0
        while True:
            chunk = resp.read1(min(1 << 16, cap + 1 - total))
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
            total += len(chunk)
            if total > cap:
                raise ApiError(f"the response is larger than {cap} bytes")

    def scrub(self, text: str) -> str:
        """Remove the token from a message."""
        return text.replace(self._token, "***") if self._token else text
