"""The egress proxy: the one way out of a contained sandbox (docs/sandbox.md, "The network").

Each sandboxed process (a runner invocation, a setup command, a verifier) gets its own
*channel*: a unix socket the engine listens on, bound into its sandbox, where the relay inside
(relay.py) sends every connection made to its ``127.0.0.1:PORT``. On a channel the proxy serves

- origin-form requests under a credential proxy's secret prefix (``/<prefix>/…``): passed on to
  that credential proxy on the engine's loopback (kind ``model``);
- ``CONNECT host:port``: a tunnel, to allowed hosts only (kind ``connect``);
- absolute-form ``http://host[:port]/…`` requests: forwarded, to allowed hosts only (kind
  ``http``).

Which hosts are allowed is the trusted side's ``network`` setting: ``model`` (none: only the
credential proxies), ``allow`` (also the listed ``host[:port]`` entries; a host without a port
allows 443 and 80). The proxy resolves names itself (there is no DNS inside) and refuses any
loopback, link-local, private, multicast or reserved address unless that literal address is
listed; a refusal is a ``403`` sent before any upstream connection is tried. Bodies stream
through in both directions (nothing is buffered whole). Every attempt lands in the invocation's
:class:`BehaviourLog`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from .behaviour import BehaviourLog, current_log
from .network_policy import NetworkPolicy, host_key, permitted_addresses
from .proxy_request import Reject, framing, parse_headers, request_line, split_head
from .usage import INVOCATION_HEADER, Meter

MAX_HEAD_BYTES = 64 * 1024
MAX_CONNECTIONS = 64  # per channel at once
CONNECT_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 300.0
HEAD_DEADLINE_S = 60.0  # a request head, from its first byte
INSIDE_PORT = 3128  # the relay's port on each sandbox's own loopback
INSIDE_SOCKET = "/run/skill-evals/egress.sock"
_CHUNK = 64 * 1024
_SOCKET_PATH_MAX = 100  # sun_path holds 107 bytes; keep a margin


@dataclass(frozen=True)
class Route:
    """Where origin-form requests under one credential proxy's prefix go."""

    port: int  # the credential proxy's port on the engine's loopback
    host: str  # its upstream, for the record
    upstream_port: int


def _socket_dir() -> str:
    """A private directory for one channel's socket, on a path short enough for ``sun_path``."""
    base = tempfile.gettempdir()
    if len(base) + 40 > _SOCKET_PATH_MAX:
        base = "/tmp"
    return tempfile.mkdtemp(prefix="skill-evals-net-", dir=base)


class _Refused(Exception):
    def __init__(self, status: int, reason: str, body: bytes = b"") -> None:
        super().__init__(reason)
        self.status, self.reason, self.body = status, reason, body


def _answer(status: int, reason: str, body: bytes = b"") -> bytes:
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
    head += "Content-Type: text/plain\r\n" if body else ""
    return (head + "Connection: close\r\n\r\n").encode("latin-1") + body


def _read_head(client: socket.socket) -> tuple[bytes, bytes] | None:
    """(the request head up to its blank line, the bytes read past it); None on a clean end.
    The first byte may take the idle time; the whole head must follow within
    HEAD_DEADLINE_S, however slowly it trickles in."""
    data = b""
    deadline: float | None = None
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise _Refused(431, "Request Header Fields Too Large")
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Refused(408, "Request Timeout")
            client.settimeout(min(IDLE_TIMEOUT_S, remaining))
        try:
            chunk = client.recv(_CHUNK)
        except TimeoutError:
            raise _Refused(408, "Request Timeout") from None
        if not chunk:
            if data.strip():
                raise _Refused(400, "Bad Request")
            return None
        if deadline is None:
            deadline = time.monotonic() + HEAD_DEADLINE_S
        data += chunk
    client.settimeout(IDLE_TIMEOUT_S)
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _host_port(authority: str, default: int) -> tuple[str, int]:
    """The host (in its :func:`host_key` spelling) and port of a request's authority; 400 for
    userinfo, a zone id, a port that is not 1–65535 or no valid host."""
    if "@" in authority or "%" in authority:
        raise _Refused(400, "Bad Request")
    parts = urllib.parse.urlsplit("//" + authority)
    try:
        port = parts.port
    except ValueError:
        raise _Refused(400, "Bad Request") from None
    if port == 0 or authority.endswith(":"):
        raise _Refused(400, "Bad Request")
    host = host_key(parts.hostname or "")
    if host is None:
        raise _Refused(400, "Bad Request")
    return host, port or default


class Channel:
    """One sandboxed process's way out: a listening unix socket at :attr:`path`."""

    def __init__(self, proxy: EgressProxy, by: str, log: BehaviourLog) -> None:
        self._proxy = proxy
        self.by = by
        self.log = log
        self.token = proxy.meter.open() if proxy.meter is not None else None
        self.directory = _socket_dir()
        self.path = os.path.join(self.directory, "egress.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(64)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._accepter = threading.Thread(target=self._accept, name="egress", daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed or len(self._open) >= MAX_CONNECTIONS:
                    client.close()
                    continue
                self._open.add(client)
                thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, client: socket.socket) -> None:
        try:
            client.settimeout(IDLE_TIMEOUT_S)
            self._proxy.serve(client, self)
        except (OSError, TimeoutError):
            pass
        finally:
            with self._lock:
                self._open.discard(client)
            with contextlib.suppress(OSError):
                client.close()

    def track(self, sock: socket.socket) -> None:
        """An upstream socket of this channel: cut too when the channel closes."""
        with self._lock:
            self._open.add(sock)

    def close(self) -> BehaviourLog:
        """Stop listening, cut what is still open, wait for the records; the log."""
        with self._lock:
            self._closed = True
            open_now = list(self._open)
            threads = list(self._threads)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for sock in open_now:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(timeout=2)
        self._accepter.join(timeout=2)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)
        if self.token is not None and self._proxy.meter is not None:
            self.log.spent(self._proxy.meter.close(self.token))
        return self.log


class EgressProxy:
    """The run's egress rules and the credential routes; one :class:`Channel` per sandbox."""

    def __init__(
        self,
        policy: NetworkPolicy,
        routes: Mapping[str, Route] | None = None,
        meter: Meter | None = None,
    ) -> None:
        self.policy = policy
        self.routes = dict(routes or {})
        self.meter = meter

    def channel(self, by: str) -> Channel:
        """A new channel for a process of kind ``by`` (runner, setup, command), recording into
        the log of the invocation running on this thread."""
        return Channel(self, by, current_log())

    def serve(self, client: socket.socket, channel: Channel) -> None:
        """Answer one connection from a sandbox: refuse, or tunnel it to where it may go."""
        try:
            got = _read_head(client)
            if got is None:
                return
            # One strict parser for every request (the credential proxy's): what is passed on
            # is rebuilt from what it accepted, so no reader behind sees another request.
            lines = split_head(got[0])
            method, target, _version = request_line(lines[0])
            headers = parse_headers(lines[1:])
            framing(headers)
            if method == "CONNECT":
                host, port = _host_port(target, 443)
                self._tunnel(client, channel, "connect", host, port, None, got[1])
            elif target.startswith("http://"):
                parts = urllib.parse.urlsplit(target)
                host, port = _host_port(parts.netloc, 80)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                fixed = _origin_form(method, path, parts.netloc, headers)
                self._tunnel(client, channel, "http", host, port, fixed, got[1])
            elif target.startswith("/"):
                self._model(client, channel, lines[0], headers, got[1])
            else:
                raise _Refused(400, "Bad Request")
        except Reject as reject:
            client.sendall(_answer(reject.status, reject.reason))
        except _Refused as refused:
            client.sendall(_answer(refused.status, refused.reason, refused.body))

    def _refusal(self, host: str) -> _Refused:
        body = f"skill-evals sandbox: {host} is not allowed (network: {self.policy.mode})"
        return _Refused(403, "Forbidden", body.encode("utf-8", "replace"))

    def _tunnel(
        self,
        client: socket.socket,
        channel: Channel,
        kind: str,
        host: str,
        port: int,
        head: bytes | None,
        rest: bytes,
    ) -> None:
        record: dict[str, object] = {"host": host, "port": port, "kind": kind, "by": channel.by}
        addresses = permitted_addresses(self.policy, host, port)
        if not addresses:
            channel.log.add({**record, "allowed": False, "bytesUp": 0, "bytesDown": 0})
            raise self._refusal(host)
        upstream = _connect_any(addresses, port)
        if upstream is None:
            channel.log.add({**record, "allowed": True, "bytesUp": 0, "bytesDown": 0})
            raise _Refused(
                502, "Bad Gateway", f"skill-evals sandbox: {host} is unreachable".encode()
            )
        if head is None:
            client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            first = rest
        else:
            first = head + rest
        up, down = _splice(client, upstream, first, channel)
        channel.log.add({**record, "allowed": True, "bytesUp": up, "bytesDown": down})

    def _model(
        self,
        client: socket.socket,
        channel: Channel,
        line: bytes,
        headers: list[tuple[str, str]],
        rest: bytes,
    ) -> None:
        target = line.decode("latin-1").split(" ")[1]
        prefix = target[1:].split("/", 1)[0].split("?", 1)[0]
        route = self.routes.get(prefix)
        if route is None:
            raise _Refused(404, "Not Found")
        record: dict[str, object] = {
            "host": route.host, "port": route.upstream_port, "kind": "model", "by": channel.by,
        }  # fmt: skip
        upstream = _connect_any(["127.0.0.1"], route.port)
        if upstream is None:
            raise _Refused(502, "Bad Gateway")
        marked = _marked(line, headers, channel.token)
        up, down = _splice(client, upstream, marked + rest, channel)
        channel.log.add({**record, "allowed": True, "bytesUp": up, "bytesDown": down})


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


def _marked(line: bytes, headers: list[tuple[str, str]], token: str | None) -> bytes:
    """A model request's head for the credential proxy, marked with the invocation's token
    (any mark of the sandbox's own removed; the credential proxy sets the upstream's Host)."""
    mark = [(INVOCATION_HEADER, token)] if token is not None else []
    return _head(line, headers, ("Host", "127.0.0.1"), *mark)


def _origin_form(method: str, path: str, authority: str, headers: list[tuple[str, str]]) -> bytes:
    """An absolute-form request's head for the origin server: origin-form target, ``Host``
    the request-target's authority (whatever Host the sandbox sent), no proxy headers."""
    line = f"{method} {path} HTTP/1.1".encode("latin-1")
    return _head(line, headers, ("Host", authority))


def _connect_any(addresses: list[str], port: int) -> socket.socket | None:
    for address in addresses:
        try:
            sock = socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
        except OSError:
            continue
        sock.settimeout(IDLE_TIMEOUT_S)
        return sock
    return None


def _splice(
    client: socket.socket, upstream: socket.socket, first: bytes, channel: Channel
) -> tuple[int, int]:
    """Copy both ways until both sides are done; (bytes up, bytes down)."""
    channel.track(upstream)
    counts = [len(first), 0]
    try:
        if first:
            upstream.sendall(first)

        def down() -> None:
            counts[1] = _pump(upstream, client)

        back = threading.Thread(target=down, daemon=True)
        back.start()
        counts[0] += _pump(client, upstream)
        back.join()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            upstream.close()
    return counts[0], counts[1]


def _pump(source: socket.socket, sink: socket.socket) -> int:
    total = 0
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
            total += len(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
    return total
