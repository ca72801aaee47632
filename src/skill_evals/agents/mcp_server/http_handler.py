"""One HTTP connection of the streamable HTTP transport: requests in, MCP answers out.

Each request must arrive whole within ``request_timeout`` of its first byte (a trickle of bytes
does not extend it), an idle keep-alive connection is closed after ``idle_timeout``, and every
refusal is a JSON-RPC error body with a plain status; a refused request's body is read and
dropped (or the connection closed) so keep-alive stays in step.
"""

from __future__ import annotations

import contextlib
import io
import secrets
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from ... import __version__
from ...escaping.terminal import terminal_safe
from .connections import ConnectionSlots, DeadlineReader, DeadlineWriter, HttpLimits
from .http_headers import (
    LOOPBACK_HOSTS,
    HttpRefusal,
    content_length,
    endpoint_path,
    hostname,
    media_types,
    single_header,
)
from .http_modern import is_modern, refusal, status_of
from .jsonrpc import (
    INVALID_REQUEST,
    SERVER_ERROR,
    MessageError,
    decode_message,
    encode_message,
    error_response,
    parse_error,
    short,
)
from .protocol import SUPPORTED_PROTOCOL_VERSIONS, Session, SkillServer

ENDPOINT = "/mcp"
MAX_HTTP_SESSIONS = 1000  # oldest session is dropped past this, so memory stays bounded
_SINGLE_VALUED = ("Content-Type", "Mcp-Session-Id")  # and Host, Origin, … where they are read
_DISCARD_LIMIT = 65536  # a refused request's body up to this size is read to keep the connection


def log_line(message: str) -> None:
    """One line on stderr, escaped; a closed stderr must not end the server."""
    with contextlib.suppress(OSError, ValueError):
        print(f"skill-evals mcp-serve: {terminal_safe(message)}", file=sys.stderr, flush=True)


class HttpSessions:
    """Live HTTP sessions by id, bounded, shared by the handler threads under one lock."""

    def __init__(self, limit: int = MAX_HTTP_SESSIONS) -> None:
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._limit = limit

    def create(self, session: Session) -> str:
        session_id = secrets.token_hex(16)  # visible ASCII, unguessable, as the spec asks
        with self._lock:
            self._sessions[session_id] = session
            while len(self._sessions) > self._limit:
                self._sessions.popitem(last=False)
        return session_id

    def get(self, session_id: str) -> Session | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                self._sessions.move_to_end(session_id)
            return session

    def delete(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None


@dataclass(frozen=True)
class HttpContext:
    """What every connection of one server shares."""

    skill_server: SkillServer
    sessions: HttpSessions
    allowed_hosts: frozenset[str] | None  # None: any Host (wildcard bind)
    limits: HttpLimits
    slots: ConnectionSlots


class ContextServer(HTTPServer):
    """An HTTP server carrying an :class:`HttpContext` for its handlers."""

    context: HttpContext


class McpRequestHandler(BaseHTTPRequestHandler):
    server: ContextServer
    protocol_version = "HTTP/1.1"  # keep-alive; every response carries Content-Length
    server_version = f"skill-evals/{__version__}"

    def setup(self) -> None:
        # No makefile(): reads and writes go through deadline-aware wrappers of the socket.
        self.connection = self.request
        self._reader = DeadlineReader(self.connection)
        self._input = io.BufferedReader(self._reader, 65536)
        self.rfile = self._input
        self.wfile = DeadlineWriter(self.connection, self.server.context.limits.write_timeout)
        self._body_read = True
        self._responded = False

    def handle_one_request(self) -> None:
        limits = self.server.context.limits
        self.server.context.slots.set_waiting(self.request, True)
        self._reader.deadline = time.monotonic() + limits.idle_timeout
        try:
            started = self._input.peek(1)
        except OSError:  # idle too long (TimeoutError), reset, or evicted for a newcomer
            started = b""
        if not started:
            self.close_connection = True
            return
        self._reader.deadline = time.monotonic() + limits.request_timeout
        self._reader.expired = False
        self._body_read = False
        self._responded = False
        # Until parse_request sets them: what an early error response needs.
        self.command, self.request_version, self.requestline = "", "HTTP/1.1", ""
        super().handle_one_request()  # catches TimeoutError and closes the connection
        if self._reader.expired and not self._responded:
            self._body_read = True  # unknown where it ends: the connection closes
            self._send_json(
                408,
                error_response(None, SERVER_ERROR, "Request Timeout: send the whole request"),
            )

    # ---------------------------------------------------------------------------- verbs

    def do_POST(self) -> None:
        try:
            self._preflight()
            self._post()
        except HttpRefusal as refusal:
            self._refuse(refusal)

    def _post(self) -> None:
        context = self.server.context
        content_type = (single_header(self.headers, "Content-Type") or "").split(";")[0]
        if content_type.strip().lower() != "application/json":
            raise HttpRefusal(
                415, "Unsupported Media Type: POST a JSON-RPC message as application/json"
            )
        accepted = media_types(", ".join(self.headers.get_all("Accept") or []) or None)
        wants_json = bool(accepted & {"application/json", "application/*", "*/*"})
        wants_sse = bool(accepted & {"text/event-stream", "text/*", "*/*"})
        if not (wants_json or wants_sse):
            raise HttpRefusal(406, "Not Acceptable: accept application/json or text/event-stream")
        length = content_length(self.headers, context.limits.max_body_bytes)
        if length is None:
            raise HttpRefusal(411, "Length Required: send a Content-Length header")
        body = self.rfile.read(length)  # within the request deadline
        self._body_read = True
        if len(body) < length:
            self.close_connection = True  # the client went away mid-body: nobody to answer
            return
        context.slots.set_waiting(self.request, False)  # being answered: not evictable
        try:
            payload = decode_message(body, context.limits.max_body_bytes)
        except MessageError as exc:
            self._send_json(400, parse_error(exc))
            return
        if is_modern(payload):  # stateless: no session; Mcp-Session-Id is ignored
            self._modern(payload, wants_json)
            return
        self._legacy_version()
        session_id = single_header(self.headers, "Mcp-Session-Id")
        is_initialize = isinstance(payload, dict) and payload.get("method") == "initialize"
        new_session_id: str | None = None
        if is_initialize and "id" in payload:
            # A new session per initialize; the id is handed out only if initialize succeeds.
            session = Session()
            response = context.skill_server.handle_payload(payload, session)
            if isinstance(response, dict) and "result" in response:
                new_session_id = context.sessions.create(session)
        else:
            if session_id is None:
                raise HttpRefusal(
                    400, "Bad Request: no Mcp-Session-Id header; send initialize first"
                )
            found = context.sessions.get(session_id)
            if found is None:
                raise HttpRefusal(404, "Not Found: unknown or ended session; initialize again")
            response = context.skill_server.handle_payload(payload, found)
        self._answer(response, wants_json, new_session_id)

    def _modern(self, payload: dict[str, Any], wants_json: bool) -> None:
        """A 2026-07-28 request: the header rules first, then the answer with its status."""
        refused = refusal(self.headers, payload)
        if refused is not None:
            self._send_json(*refused)
            return
        response = self.server.context.skill_server.handle_payload(payload, Session())
        if response is None:
            self._send(202, b"", None)
        elif wants_json:
            self._send_json(status_of(response), response)
        else:
            event = b"event: message\ndata: " + encode_message(response) + b"\n\n"
            headers = {"Cache-Control": "no-cache"}
            self._send(status_of(response), event, "text/event-stream", headers)

    def _answer(self, response: Any, wants_json: bool, new_session_id: str | None) -> None:
        if response is None:  # notifications and responses only
            self._send(202, b"", None)
            return
        extra = {"Mcp-Session-Id": new_session_id} if new_session_id else {}
        if isinstance(response, dict) and response.get("id") is None and "error" in response:
            self._send_json(400, response, extra)  # the input could not be accepted at all
        elif wants_json:
            self._send_json(200, response, extra)
        else:
            event = b"event: message\ndata: " + encode_message(response) + b"\n\n"
            self._send(200, event, "text/event-stream", {**extra, "Cache-Control": "no-cache"})

    def do_GET(self) -> None:
        try:
            self._preflight()
            # No server-initiated messages exist here, so no standalone SSE stream is offered.
            raise HttpRefusal(
                405,
                "Method Not Allowed: this server offers no SSE stream; POST instead",
                {"Allow": "POST, DELETE"},
            )
        except HttpRefusal as refusal:
            self._refuse(refusal)

    def do_DELETE(self) -> None:
        try:
            self._preflight()
            session_id = single_header(self.headers, "Mcp-Session-Id")
            if session_id is None:
                raise HttpRefusal(400, "Bad Request: DELETE needs an Mcp-Session-Id header")
            if not self.server.context.sessions.delete(session_id):
                raise HttpRefusal(404, "Not Found: unknown or ended session")
            self._send(204, b"", None)
        except HttpRefusal as refusal:
            self._refuse(refusal)

    def _not_allowed(self) -> None:
        try:
            self._preflight()
            raise HttpRefusal(405, "Method Not Allowed: use POST", {"Allow": "POST, GET, DELETE"})
        except HttpRefusal as refusal:
            self._refuse(refusal)

    do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _not_allowed

    # ------------------------------------------------------------------------- checks

    def _preflight(self) -> None:
        """Endpoint, Host, DNS-rebinding (Origin) and protocol-version checks; every header
        read as one value must have one value."""
        if endpoint_path(self.path) != ENDPOINT:
            raise HttpRefusal(404, f"Not Found: the MCP endpoint is {ENDPOINT}")
        if any("\n" in value or "\r" in value for value in self.headers.values()):
            raise HttpRefusal(400, "Bad Request: folded header lines are not accepted", close=True)
        for name in _SINGLE_VALUED:
            single_header(self.headers, name)
        content_length(self.headers, self.server.context.limits.max_body_bytes)  # any method
        host_header = single_header(self.headers, "Host")
        if host_header is None and self.request_version == "HTTP/1.1":
            raise HttpRefusal(400, "Bad Request: an HTTP/1.1 request needs a Host header")
        allowed = self.server.context.allowed_hosts
        if allowed is not None and hostname(f"//{host_header or ''}") not in allowed:
            raise HttpRefusal(403, "Forbidden: Host header is not this server")
        origin = single_header(self.headers, "Origin")
        if origin is not None:
            origin_host = hostname(origin) if origin.startswith(("http://", "https://")) else None
            if origin_host is None or origin_host not in (allowed or LOOPBACK_HOSTS):
                raise HttpRefusal(403, "Forbidden: Origin not allowed")
        if self.command != "POST":  # a POST's body says its era: checked once it is read
            self._legacy_version()

    def _legacy_version(self) -> None:
        """A legacy request's MCP-Protocol-Version, when given, is one initialize offers."""
        version = single_header(self.headers, "MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise HttpRefusal(
                400,
                "Bad Request: unsupported MCP-Protocol-Version; supported: "
                + ", ".join(SUPPORTED_PROTOCOL_VERSIONS),
            )

    # ------------------------------------------------------------------------ responses

    def _refuse(self, refusal: HttpRefusal) -> None:
        if refusal.close:
            self.close_connection = True
            self._body_read = True
        code = INVALID_REQUEST if refusal.status == 400 else SERVER_ERROR
        self._send_json(
            refusal.status, error_response(None, code, refusal.message), refusal.headers
        )

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # no status line or headers: refused
            self.send_error(400)
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors found by the request-line/header parser: a JSON body naming only the status
        (never the request text), and the connection closes."""
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):
            self.request_version = "HTTP/1.1"  # so the answer has a status line and headers
        self.log_error("code %d", code)
        phrase = self.responses.get(code, ("Error", ""))[0]
        self.close_connection = True
        self._body_read = True
        code_rpc = INVALID_REQUEST if code == 400 else SERVER_ERROR
        self._send_json(code, error_response(None, code_rpc, f"{code} {phrase}"))

    def _discard_body(self) -> None:
        """Keep-alive needs a refused request's unread body consumed (or the connection
        closed); otherwise its bytes would be read as the next request."""
        self._body_read = True
        try:
            length = content_length(self.headers, _DISCARD_LIMIT)
        except HttpRefusal:
            self.close_connection = True  # not worth reading for a refusal, or no safe end
            return
        if length and len(self.rfile.read(length)) < length:
            self.close_connection = True

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, encode_message(body), "application/json", headers)

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not self._body_read:
            self._discard_body()
        self._responded = True
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        else:  # lets clients drop an idle connection before the server does (no reuse race)
            idle = int(self.server.context.limits.idle_timeout)
            self.send_header("Keep-Alive", f"timeout={idle}")
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log_line(f"{self.address_string()} {short(format % args)}")
