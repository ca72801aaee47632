"""The lifecycle the scripted model servers share: a handler served on 127.0.0.1 by daemon
threads while a ``with`` block runs, stopped when it ends."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TypeVar

S = TypeVar("S", bound="LoopbackServer")


class LoopbackServer:
    """``handler`` on 127.0.0.1 (``port``; 0: any free one) from ``__enter__`` on; on exit
    ``_release`` is set (handlers that hang on purpose wait on it), then the server stops."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The API's base: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self: S) -> S:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
