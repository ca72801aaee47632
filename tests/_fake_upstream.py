"""A loopback stand-in for a model provider's API, for the credential proxy's tests.

It records what it receives (method, path, headers, body), answers from a script of routes, and is
bounded: at most ``max_requests`` requests and ``lifetime_s`` seconds, after which it stops by
itself, so a test that goes wrong cannot leave it running.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[["http.server.BaseHTTPRequestHandler", "Received"], None]


def _read_chunked(rfile: Any) -> bytes:
    body = b""
    while True:
        size = int(rfile.readline(1024).split(b";", 1)[0].strip(), 16)
        if size == 0:
            rfile.readline(1024)
            return body
        body += rfile.read(size)
        rfile.readline(4)


@dataclass
class Received:
    """One request as the upstream saw it."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


@dataclass
class FakeUpstream:
    """Start with :meth:`start`; ``url`` is its base; ``received`` what reached it."""

    routes: dict[str, Handler] = field(default_factory=dict)
    max_requests: int = 200
    lifetime_s: float = 120.0
    received: list[Received] = field(default_factory=list)
    url: str = ""

    def start(self) -> FakeUpstream:
        upstream = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                if len(upstream.received) >= upstream.max_requests:
                    self.send_error(503)
                    return
                if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
                    body = _read_chunked(self.rfile)  # as any HTTP/1.1 server does
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(min(length, 64 * 1024 * 1024))
                got = Received(self.command, self.path, list(self.headers.items()), body)
                upstream.received.append(got)
                handler = upstream.routes.get(self.path.split("?", 1)[0], _echo)
                handler(self, got)

            do_GET = _handle
            do_POST = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self._server.shutdown)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _echo(handler: http.server.BaseHTTPRequestHandler, got: Received) -> None:
    """The default route: 200 with a JSON body naming the path."""
    send_json(handler, 200, {"path": got.path})


def send_json(handler: http.server.BaseHTTPRequestHandler, status: int, body: object) -> None:
    """Answer with a JSON body and its length."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
