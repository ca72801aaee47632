"""The streamable HTTP transport (MCP 2025-03-26 … 2025-11-25): ``POST /mcp`` on one address.

A thread serves each connection, within :class:`HttpLimits`: bounded connections, a deadline
for each request (however slowly its bytes arrive), for each write and for idle keep-alive
connections, and a capped body. Header values are read strictly (``http_headers``).
"""

from __future__ import annotations

import errno
import re
import socket
import sys
import threading
import time
from typing import Any

from .connections import ConnectionSlots, HttpLimits
from .http_handler import ContextServer, HttpContext, HttpSessions, McpRequestHandler, log_line
from .http_headers import allowed_hosts
from .jsonrpc import SERVER_ERROR, encode_message, error_response, short
from .protocol import SkillServer

_PORT = re.compile(r"[0-9]{1,5}", re.ASCII)
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class SkillHTTPServer(ContextServer):
    """The listening socket and its connections; one handler thread per admitted connection."""

    allow_reuse_address = True
    request_queue_size = 128  # connections beyond the cap wait in the kernel, not in threads

    def __init__(
        self,
        skill_server: SkillServer,
        address: tuple[Any, ...],
        family: int,
        bound_host: str,
        limits: HttpLimits,
    ) -> None:
        self.address_family = family
        self.limits = limits
        self.slots = ConnectionSlots(limits.connection_cap())
        self.context = HttpContext(
            skill_server=skill_server,
            sessions=HttpSessions(),
            allowed_hosts=allowed_hosts(bound_host),
            limits=limits,
            slots=self.slots,
        )
        super().__init__(address, McpRequestHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[0], self.server_address[1]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"http://{shown}:{port}/mcp"

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in _OUT_OF_DESCRIPTORS:
                time.sleep(0.1)  # the listener stays readable: back off instead of spinning
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.admit(request, self.limits.queue_timeout):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # no thread could be started: refuse like a full server
            _refuse_busy(request)
            self.shutdown_request(request)
            self.slots.release(request)

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.slots.release(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return  # the client reset, went away or timed out: nothing to report
        log_line(f"internal error serving a connection: {type(exc).__name__}")

    def server_close(self) -> None:
        super().server_close()
        self.slots.shut_all()


def _refuse_busy(sock: socket.socket) -> None:
    """A best-effort ``503`` that can never block the accept loop."""
    body = encode_message(
        error_response(None, SERVER_ERROR, "Service Unavailable: too many connections")
    )
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    try:
        sock.setblocking(False)
        sock.send(head.encode("ascii") + body)
    except OSError:
        pass


def parse_http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` of ``--http`` (IPv6 in brackets) → (host without brackets, port).

    Raises ValueError with a one-line message naming the option and what to fix."""
    shown = short(text, 100)
    host, sep, port_text = text.rpartition(":")
    if not sep or host in ("", "[]"):
        raise ValueError(f"--http {shown}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise ValueError(
            f"--http {shown}: the port must be a number from 0 to 65535 (0 picks a free port)"
        )
    if host.startswith("[") and host.endswith("]") and len(host) > 2:
        host = host[1:-1]
    elif ":" in host or "[" in host or "]" in host:
        raise ValueError(f"--http {shown}: write an IPv6 address in brackets, e.g. [::1]:8765")
    if not host.isprintable() or any(char.isspace() for char in host):
        raise ValueError(f"--http {shown}: the host must not contain spaces or control characters")
    return host, int(port_text)


def make_http_server(
    server: SkillServer, host: str, port: int, limits: HttpLimits | None = None
) -> SkillHTTPServer:
    """Bind the streamable HTTP transport to exactly ``host:port`` (``[v6]`` brackets allowed;
    port 0 picks a free one, see ``.url``). Raises ValueError naming ``--http`` when the
    address cannot be used: unknown host, port out of range, in use, or not permitted."""
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    shown = short(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", 100)
    if not 0 <= port <= 65535:
        raise ValueError(f"--http {shown}: the port must be a number from 0 to 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "invalid name"
        raise ValueError(f"--http {shown}: cannot resolve the host ({reason})") from None
    family, _, _, _, sockaddr = infos[0]
    try:
        return SkillHTTPServer(server, sockaddr, family, host, limits or HttpLimits())
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            reason = f"port {port} is already in use; stop the other server or use another port"
        elif exc.errno == errno.EADDRNOTAVAIL:
            reason = "that address is not one of this machine's (use 127.0.0.1 or localhost)"
        elif exc.errno == errno.EACCES:
            reason = f"permission denied for port {port} (ports below 1024 need privileges)"
        else:
            reason = exc.strerror or type(exc).__name__
        raise ValueError(f"--http {shown}: cannot listen there: {reason}") from None


def serve_http(server: SkillServer, host: str, port: int, limits: HttpLimits | None = None) -> None:
    """Serve streamable HTTP on ``host:port`` at ``/mcp`` until interrupted. Raises ValueError
    (see :func:`make_http_server`) before serving when the address cannot be used."""
    serve_http_server(make_http_server(server, host, port, limits))


def serve_http_server(httpd: SkillHTTPServer) -> None:
    """Serve a bound server until interrupted (Ctrl-C ends it quietly), then close it."""
    names = ", ".join(s.name for s in httpd.context.skill_server.skills)  # [A-Za-z0-9-] only
    log_line(f"serving {names} at {httpd.url}")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
