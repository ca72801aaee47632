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
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .behaviour import BehaviourLog, current_log
from .egress_wire import (
    IDLE_TIMEOUT_S,
    Refused,
    answer,
    busy,
    host_port,
    marked,
    origin_form,
    read_head,
)
from .network_policy import NetworkPolicy, permitted_addresses
from .proxy_request import Reject, framing, parse_headers, request_line, split_head
from .usage import Meter

MAX_CONNECTIONS = 64  # per channel at once
# In the whole run at once: each connection holds at most one 64 KiB piece per direction, so
# 512 keep the run's bytes in flight within 64 MiB.
MAX_RUN_CONNECTIONS = 512
# Model requests of one sandbox at once: a quarter of a credential proxy's 64 connections.
MODEL_REQUESTS = 16
CONNECT_TIMEOUT_S = 30.0
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
        self._models = 0  # model requests of this sandbox in flight
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
                if not self._proxy.admit():
                    busy(client)
                    continue
                self._open.add(client)
                thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
                if len(self._threads) > 2 * MAX_CONNECTIONS:  # keep only the live ones
                    self._threads = [t for t in self._threads if t.is_alive()]
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
            self._proxy.release()
            with contextlib.suppress(OSError):
                client.close()

    @contextlib.contextmanager
    def model_slot(self) -> Iterator[None]:
        """Hold one of this sandbox's :data:`MODEL_REQUESTS` model requests in flight, or 503:
        the credential proxy's connections are the run's, so no one sandbox takes them all."""
        with self._lock:
            if self._models >= MODEL_REQUESTS:
                body = b"skill-evals sandbox: too many model requests at once from this sandbox"
                raise Refused(503, "Service Unavailable", body)
            self._models += 1
        try:
            yield
        finally:
            with self._lock:
                self._models -= 1

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
        self._open = 0  # connections of all channels at once
        self._count_lock = threading.Lock()

    def admit(self) -> bool:
        """Whether one more connection may open: at most :data:`MAX_RUN_CONNECTIONS` in the
        whole run, each holding at most one piece per direction, so the run's bytes in flight
        stay under 64 MiB however many sandboxes run at once."""
        with self._count_lock:
            if self._open >= MAX_RUN_CONNECTIONS:
                return False
            self._open += 1
            return True

    def release(self) -> None:
        """One admitted connection ended."""
        with self._count_lock:
            self._open -= 1

    def channel(self, by: str) -> Channel:
        """A new channel for a process of kind ``by`` (runner, setup, command), recording into
        the log of the invocation running on this thread."""
        return Channel(self, by, current_log())

    def serve(self, client: socket.socket, channel: Channel) -> None:
        """Answer one connection from a sandbox: refuse, or tunnel it to where it may go."""
        try:
            got = read_head(client)
            if got is None:
                return
            # One strict parser for every request (the credential proxy's): what is passed on
            # is rebuilt from what it accepted, so no reader behind sees another request.
            lines = split_head(got[0])
            method, target, _version = request_line(lines[0])
            headers = parse_headers(lines[1:])
            framing(headers)
            if method == "CONNECT":
                host, port = host_port(target, 443)
                self._tunnel(client, channel, "connect", host, port, None, got[1])
            elif target.startswith("http://"):
                parts = urllib.parse.urlsplit(target)
                host, port = host_port(parts.netloc, 80)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                fixed = origin_form(method, path, parts.netloc, headers)
                self._tunnel(client, channel, "http", host, port, fixed, got[1])
            elif target.startswith("/"):
                self._model(client, channel, lines[0], headers, got[1])
            else:
                raise Refused(400, "Bad Request")
        except Reject as reject:
            client.sendall(answer(reject.status, reject.reason))
        except ValueError:  # a target no parser could read: its text never reaches a log
            client.sendall(answer(400, "Bad Request"))
        except Refused as refused:
            client.sendall(answer(refused.status, refused.reason, refused.body))

    def _refusal(self, host: str) -> Refused:
        body = f"skill-evals sandbox: {host} is not allowed (network: {self.policy.mode})"
        return Refused(403, "Forbidden", body.encode("utf-8", "replace"))

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
            raise Refused(
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
            raise Refused(404, "Not Found")
        record: dict[str, object] = {
            "host": route.host, "port": route.upstream_port, "kind": "model", "by": channel.by,
        }  # fmt: skip
        with channel.model_slot():
            upstream = _connect_any(["127.0.0.1"], route.port)
            if upstream is None:
                raise Refused(502, "Bad Gateway")
            head = marked(line, headers, channel.token)
            up, down = _splice(client, upstream, head + rest, channel)
        channel.log.add({**record, "allowed": True, "bytesUp": up, "bytesDown": down})


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
