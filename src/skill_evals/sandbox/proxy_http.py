"""The HTTP/1.1 forwarding of the credential proxy (standard library only).

One :class:`ProxyServer` listens on 127.0.0.1 and forwards ``GET``/``POST`` requests under its
secret path prefix to one upstream, with the caller's credentials replaced by the real one. Every
read is bounded in size and time: request heads 64 KiB and 100 lines (431) within 60 s of
their first byte, bodies 32 MiB (413) within 600 s, 64 connections at once (503), upstream
connect 30 s, 300 s without an upstream byte or 600 s per request. Bodies stream both
ways in pieces of at most 64 KiB (server-sent events arrive as the upstream sends them), so a
server holds at most 64 × 64 KiB of bodies at once. With a :class:`~.usage.Meter`, each
response's token usage is counted for the invocation that asked, and an invocation past its
token budget gets ``429``. Nothing is logged.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .proxy_request import (
    Reject,
    Watchdog,
    body_pieces,
    header,
    parse_headers,
    read_head,
    request_line,
    until_done,
)
from .upstream import HOP_BY_HOP, Scrubber, Upstream, upstream_target
from .usage import BUDGET_BODY, INVOCATION_HEADER, Meter, UsageScanner

MAX_CONNECTIONS = 64
CONNECT_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 300.0
REQUEST_DEADLINE_S = 600.0
HEAD_DEADLINE_S = 60.0  # a request head, from its first byte
_CHUNK = 64 * 1024


def _unreachable(upstream: Upstream, exc: BaseException) -> bytes:
    """The 502 body of an upstream the proxy could not reach: why (connection refused, timed
    out, name not resolved) and where (scheme, host and port only), in the error shape the
    providers' SDKs show, so the agent's error text carries it to the runner's reason."""
    if isinstance(exc, ConnectionRefusedError):
        cause = "connection refused"
    elif isinstance(exc, socket.gaierror):
        cause = "name not resolved"
    elif isinstance(exc, TimeoutError):  # socket.timeout too
        cause = "timed out"
    else:
        cause = "connection failed"
    host = f"[{upstream.host}]" if ":" in upstream.host else upstream.host
    origin = f"{upstream.scheme}://{host}:{upstream.port}"
    message = f"skill-evals proxy: the model API at {origin} is unreachable ({cause})"
    return json.dumps({"error": {"type": "upstream_unreachable", "message": message}}).encode()


@dataclass
class _Request:
    method: str
    rest: str  # path and query after the prefix
    headers: list[tuple[str, str]]
    length: int | None  # the body's Content-Length; None: chunked
    body: Iterator[bytes]  # its pieces as they arrive
    keep_alive: bool

    @property
    def invocation(self) -> str | None:
        """The invocation that asked (set by the egress proxy of a contained sandbox)."""
        return header(self.headers, INVOCATION_HEADER.lower())


def _connect(upstream: Upstream) -> http.client.HTTPConnection:
    conn: http.client.HTTPConnection
    if upstream.scheme == "https":
        context = ssl.create_default_context()
        conn = http.client.HTTPSConnection(
            upstream.host, upstream.port, timeout=CONNECT_TIMEOUT_S, context=context
        )
    else:
        conn = http.client.HTTPConnection(upstream.host, upstream.port, timeout=CONNECT_TIMEOUT_S)
    conn.connect()
    assert conn.sock is not None
    conn.sock.settimeout(IDLE_TIMEOUT_S)
    return conn


def _status_line(status: int, reason: str) -> bytes:
    return f"HTTP/1.1 {status} {reason}\r\n".encode("latin-1")


def _simple_response(status: int, reason: str, body: bytes, close: bool) -> bytes:
    head = _status_line(status, reason)
    head += b"Content-Type: application/json\r\n" if body else b""
    head += f"Content-Length: {len(body)}\r\n".encode()
    head += b"Connection: close\r\n" if close else b""
    return head + b"\r\n" + body


def _response_head(response: http.client.HTTPResponse, framing: str, scrub: Scrubber) -> bytes:
    listed = {
        t.strip().lower() for t in (response.getheader("connection") or "").split(",") if t.strip()
    }
    lines = [_status_line(response.status, response.reason or "")]
    for name, value in response.getheaders():
        lower = name.lower()
        if lower in HOP_BY_HOP or lower in listed or lower == "content-length":
            continue
        lines.append(f"{name}: {scrub.text(value)}\r\n".encode("latin-1", "replace"))
    if framing == "length":
        lines.append(f"Content-Length: {response.length}\r\n".encode())
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: chunked\r\n")
    return b"".join(lines) + b"\r\n"


def _body_chunks(
    response: http.client.HTTPResponse, sock: socket.socket, deadline: float
) -> Iterator[bytes]:
    """The upstream body as it arrives; stops (raising TimeoutError) past the request deadline
    or after 300 s without a byte."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("request deadline")
        sock.settimeout(min(IDLE_TIMEOUT_S, remaining))
        chunk = response.read1(_CHUNK)
        if not chunk:
            return
        yield chunk


def close_gently(sock: socket.socket) -> None:
    """Close after an answer sent before the request was read: stop writing, read what the
    client still sends (≤ 1 MiB, ≤ 1 s) so that it sees the answer rather than a reset."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(1)
        for _ in range(16):
            if not sock.recv(_CHUNK):
                break
    except OSError:
        pass
    finally:
        sock.close()


class _Connection:
    """One client connection: requests are read, forwarded and answered in turn."""

    def __init__(
        self, client: socket.socket, prefix: str, upstream: Upstream, meter: Meter | None
    ) -> None:
        self._client = client
        self._prefix = "/" + prefix + "/"
        self._upstream = upstream
        self._meter = meter
        self._reader = client.makefile("rb")
        self._watchdog = Watchdog(None, 0)

    def serve(self) -> None:
        try:
            while self._serve_one():
                self._watchdog.cancel()
        except (OSError, TimeoutError, ValueError, http.client.HTTPException):
            pass  # ValueError: the reader of a connection a watchdog cut
        finally:
            self._watchdog.cancel()
            self._reader.close()

    def _send_continue(self, headers: list[tuple[str, str]]) -> None:
        if (header(headers, "expect") or "").lower() == "100-continue":
            self._client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _read_request(self) -> _Request | None:
        # The first byte may take the idle time (a kept-alive connection between requests);
        # from then on the head must be complete within HEAD_DEADLINE_S, however slowly it
        # trickles in (every recv would otherwise restart the idle clock).
        if not self._reader.peek(1):
            return None
        self._watchdog = Watchdog(self._client, HEAD_DEADLINE_S)
        lines = read_head(self._reader)
        if lines is None:
            return None
        method, target, version = request_line(lines[0])
        headers = parse_headers(lines[1:])
        if not target.startswith(self._prefix):
            raise Reject(404, "Not Found")
        if method not in ("GET", "POST"):
            raise Reject(405, "Method Not Allowed")
        length, body = body_pieces(self._reader, headers, lambda: self._send_continue(headers))
        connection = (header(headers, "connection") or "").lower()
        keep_alive = version == "HTTP/1.1" and "close" not in connection
        rest = target[len(self._prefix) - 1 :]
        # The body must be in within the request's deadline too: a trickled upload is cut.
        self._watchdog.cancel()
        self._watchdog = Watchdog(self._client, REQUEST_DEADLINE_S)
        return _Request(method, rest, headers, length, until_done(body, self._watchdog), keep_alive)

    def _serve_one(self) -> bool:
        try:
            request = self._read_request()
        except Reject as reject:
            self._client.sendall(_simple_response(reject.status, reject.reason, b"", True))
            close_gently(self._client)
            return False
        if request is None:
            return False
        if self._meter is not None and self._meter.exhausted(request.invocation):
            self._client.sendall(_simple_response(429, "Too Many Requests", BUDGET_BODY, True))
            close_gently(self._client)
            return False
        return self._forward(request)

    def _forward(self, request: _Request) -> bool:
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        target, headers = upstream_target(request.rest, request.headers, self._upstream)
        try:
            conn = _connect(self._upstream)
        except OSError as exc:
            body = _unreachable(self._upstream, exc)
            self._client.sendall(_simple_response(502, "Bad Gateway", body, True))
            return False
        sock = conn.sock  # getresponse() detaches it when the body ends with the connection
        assert sock is not None
        try:
            _send_request(conn, request, target, headers)
            response = conn.getresponse()
        except Reject as reject:  # the body broke off or grew too large on its way
            conn.close()
            self._client.sendall(_simple_response(reject.status, reject.reason, b"", True))
            return False
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            body = _unreachable(self._upstream, exc)
            self._client.sendall(_simple_response(502, "Bad Gateway", body, True))
            return False
        try:
            scanner = None
            if self._meter is not None and self._meter.known(request.invocation):
                kind = (response.getheader("content-type") or "").lower()
                scanner = UsageScanner("text/event-stream" in kind)
            kept = self._relay(response, sock, request.keep_alive, deadline, scanner)
            if scanner is not None and self._meter is not None:
                scanner.finish()
                self._meter.add(request.invocation, scanner.tokens)
            return kept
        finally:
            conn.close()

    def _relay(
        self,
        response: http.client.HTTPResponse,
        sock: socket.socket,
        keep_alive: bool,
        deadline: float,
        scanner: UsageScanner | None = None,
    ) -> bool:
        bodiless = response.status in (204, 304) or 100 <= response.status < 200
        framing = "none" if bodiless else "length" if response.length is not None else "chunked"
        scrub = Scrubber(self._upstream.secret)
        head = _response_head(response, framing, scrub)
        if not keep_alive:
            head = head[:-2] + b"Connection: close\r\n\r\n"
        self._client.sendall(head)
        if bodiless:
            return keep_alive
        for chunk in _body_chunks(response, sock, deadline):
            if scanner is not None:
                scanner.feed(chunk)
            self._send_piece(scrub.feed(chunk), framing)
        self._send_piece(scrub.flush(), framing)
        if framing == "chunked":
            self._client.sendall(b"0\r\n\r\n")
        return keep_alive

    def _send_piece(self, piece: bytes, framing: str) -> None:
        if piece and framing == "chunked":
            piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        if piece:
            self._client.sendall(piece)


def _send_request(
    conn: http.client.HTTPConnection,
    request: _Request,
    target: str,
    headers: list[tuple[str, str]],
) -> None:
    """The request line, headers and body, the body streamed piece by piece (re-chunked when
    it came chunked)."""
    conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
    for name, value in headers:
        conn.putheader(name, value)
    if request.length is None:
        conn.putheader("Transfer-Encoding", "chunked")
    elif request.method == "POST" or request.length:
        conn.putheader("Content-Length", str(request.length))
    conn.endheaders()
    for piece in request.body:
        conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if request.length is None
                  else piece)  # fmt: skip
    if request.length is None:
        conn.send(b"0\r\n\r\n")


class ProxyServer:
    """One loopback server forwarding to one upstream; ``port`` is set by :meth:`start`."""

    def __init__(self, prefix: str, upstream: Upstream, meter: Meter | None = None) -> None:
        self._prefix = prefix
        self._upstream = upstream
        self._meter = meter
        self._listener: socket.socket | None = None
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._refusals = threading.BoundedSemaphore(16)
        self.port = 0

    def start(self) -> None:
        """Bind 127.0.0.1 on an ephemeral port and accept in a background thread."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="credential-proxy", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                full = len(self._clients) >= MAX_CONNECTIONS
                if not full:
                    self._clients.add(client)
            if full:
                self._refuse(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _refuse(self, client: socket.socket) -> None:
        if not self._refusals.acquire(blocking=False):
            client.close()  # a flood: no answer at all
            return

        def answer() -> None:
            try:
                client.settimeout(1)
                client.sendall(_simple_response(503, "Service Unavailable", b"", True))
                close_gently(client)
            except OSError:
                client.close()
            finally:
                self._refusals.release()

        threading.Thread(target=answer, daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(IDLE_TIMEOUT_S)
        try:
            _Connection(client, self._prefix, self._upstream, self._meter).serve()
        finally:
            with self._lock:
                self._clients.discard(client)
            client.close()

    def close(self) -> None:
        """Stop accepting and cut every open connection."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
