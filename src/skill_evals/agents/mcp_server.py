"""``skill-evals mcp-serve``: skills offered over the Model Context Protocol (docs/agents/).

Each skill becomes a tool ``load_<name>_skill`` (``-`` → ``_``; its description is the skill's
description, its result the ``SKILL.md`` text) and a resource ``skill://<name>/SKILL.md``. The
protocol is implemented with the standard library only (JSON-RPC 2.0, the ``initialize``
handshake of MCP 2024-11-05 … 2025-11-25); transports are stdio (one JSON message per line,
logs on stderr only) and streamable HTTP (``POST /mcp``).

Decision: every ``SKILL.md`` is read once, when the server starts, and served from memory. The
tool list and the text served can then never disagree, and a file changed or removed mid-session
cannot turn a load into an error; ``skill-evals test`` hashes the skill directory before and after
a run, so an edit during a run voids that run anyway. Restart the server to serve an edit.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import urlsplit

from .. import __version__
from .base import RunnerSetupError, skill_ref

# Newest first. 2026-07-28 (stateless, ``server/discover``) is not offered: its probe gets
# "method not found", and the official clients then fall back to ``initialize``.
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = (
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
)
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]
# JSON-RPC batches were part of MCP in 2025-03-26 only (added there, removed in 2025-06-18).
BATCH_PROTOCOL_VERSIONS = frozenset({"2025-03-26"})

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002  # the code the 2024-11-05 … 2025-11-25 specs recommend

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one JSON-RPC message (a stdio line, an HTTP body)
MAX_HTTP_SESSIONS = 1000  # oldest session is dropped past this, so memory stays bounded
ENDPOINT = "/mcp"
MIME_TYPE = "text/markdown"

# Names a tool name can carry and map back unambiguously (``load_<name>_skill``, ``-`` ↔ ``_``).
_SERVABLE_NAME = re.compile(r"[A-Za-z0-9-]{1,117}")
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})

SERVER_INSTRUCTIONS = (
    "Each tool load_<name>_skill returns the SKILL.md instructions of one skill (also readable "
    "as the resource skill://<name>/SKILL.md); the tool description says what the skill is for."
)


def tool_name_for(skill_name: str) -> str:
    """The MCP tool that loads a skill: ``load_<name>_skill`` with ``-`` → ``_``."""
    return f"load_{skill_name.replace('-', '_')}_skill"


def uri_for(skill_name: str) -> str:
    """The MCP resource URI of a skill's SKILL.md."""
    return f"skill://{skill_name}/SKILL.md"


@dataclass(frozen=True)
class ServedSkill:
    """One skill as the server offers it; ``text`` is the SKILL.md content read at start."""

    name: str
    description: str
    path: Path
    text: str

    @property
    def tool_name(self) -> str:
        return tool_name_for(self.name)

    @property
    def uri(self) -> str:
        return uri_for(self.name)


@dataclass
class Session:
    """Per-connection protocol state (one for stdio, one per ``Mcp-Session-Id`` over HTTP)."""

    protocol_version: str | None = None  # set by initialize
    initialized: bool = False  # the client sent notifications/initialized


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _short(value: object, limit: int = 200) -> str:
    """A client-supplied value for an error message, cut so a message stays one short line."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True)
    return text if len(text) <= limit else text[:limit] + "…"


def _error(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def encode_message(message: Any) -> bytes:
    """One JSON-RPC message (or batch) as compact UTF-8 JSON without embedded newlines."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class SkillServer:
    """The protocol core: turns parsed JSON-RPC messages into responses. Transport-free, so
    stdio and HTTP share it, and it holds no per-connection state (that lives in ``Session``)."""

    def __init__(self, skills: Sequence[ServedSkill]) -> None:
        self.skills: tuple[ServedSkill, ...] = tuple(skills)
        self._by_tool = {s.tool_name: s for s in self.skills}
        self._by_uri = {s.uri: s for s in self.skills}

    @classmethod
    def from_dirs(cls, dirs: Sequence[Path]) -> SkillServer:
        """Load each skill folder (name and description via ``skill_ref``, SKILL.md text once).

        Raises ValueError naming the path for a missing/unreadable SKILL.md, a name that cannot be
        a tool name, or two folders with the same skill name."""
        if not dirs:
            raise ValueError("mcp-serve: give at least one --skill DIR")
        skills: list[ServedSkill] = []
        seen: dict[str, Path] = {}
        for raw in dirs:
            path = Path(raw)
            md = path / "SKILL.md"
            if not md.is_file():
                raise ValueError(f"--skill {path}: no SKILL.md file in that directory")
            try:
                ref = skill_ref(path)
                data = md.read_bytes()
            except RunnerSetupError as exc:
                raise ValueError(f"--skill {path}: {exc}") from exc
            except OSError as exc:
                raise ValueError(f"--skill {path}: cannot read SKILL.md ({exc.strerror})") from exc
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{md}: not valid UTF-8 (byte {exc.start})") from exc
            if not _SERVABLE_NAME.fullmatch(ref.name):
                raise ValueError(
                    f"{md}: skill name {ref.name!r} cannot be offered as MCP tool "
                    "load_<name>_skill; use 1-117 characters of a-z, A-Z, 0-9 and '-'"
                )
            if ref.name in seen:
                raise ValueError(
                    f"--skill {path}: skill name {ref.name!r} is already served from "
                    f"{seen[ref.name]}; give each name once"
                )
            seen[ref.name] = ref.path
            skills.append(
                ServedSkill(
                    name=ref.name,
                    description=ref.description,
                    path=ref.path,
                    text=text.removeprefix("\ufeff"),
                )
            )
        return cls(skills)

    # ------------------------------------------------------------------------------ messages

    def handle_bytes(self, data: bytes, session: Session) -> Any:
        """Handle one raw message (a stdio line or an HTTP body): the response to send, or None
        when nothing is to be sent (notifications and responses only)."""
        try:
            payload = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError):
            return _error(None, PARSE_ERROR, "Parse error: the message is not valid UTF-8 JSON")
        return self.handle_payload(payload, session)

    def handle_payload(self, payload: Any, session: Session) -> Any:
        """Handle a parsed message or batch; see ``handle_bytes``."""
        if not isinstance(payload, list):
            return self.handle_message(payload, session)
        if not payload:
            return _error(None, INVALID_REQUEST, "Invalid Request: empty batch")
        version = session.protocol_version
        if version not in BATCH_PROTOCOL_VERSIONS:
            return _error(
                None,
                INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are only part of MCP protocol version "
                f"2025-03-26; this session uses {version or 'no version yet (send initialize)'}",
            )
        responses = []
        for message in payload:
            if isinstance(message, dict) and message.get("method") == "initialize":
                # 2025-03-26: "The initialization request MUST NOT be part of a JSON-RPC batch".
                msg_id = message.get("id")
                response: Any = _error(
                    msg_id if _valid_id(msg_id) else None,
                    INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch",
                )
            else:
                response = self.handle_message(message, session)
            if response is not None:
                responses.append(response)
        return responses or None

    def handle_message(self, message: Any, session: Session) -> dict[str, Any] | None:
        """Handle one parsed JSON-RPC message; None for notifications and client responses."""
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request: a message must be an object")
        has_id = "id" in message
        msg_id = message.get("id")
        reply_id = msg_id if _valid_id(msg_id) else None
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                return None  # a response to a request we never send: nothing to answer
            return _error(reply_id, INVALID_REQUEST, "Invalid Request: no method")
        method = message["method"]
        if message.get("jsonrpc") != "2.0":
            return _error(reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
        if not isinstance(method, str):
            return _error(reply_id, INVALID_REQUEST, "Invalid Request: method must be a string")
        if has_id and not _valid_id(msg_id):
            return _error(
                None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
            )
        params = message.get("params")
        if not has_id:
            self._notification(method, params, session)
            return None
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, f"Invalid params: {method} takes an object")
        try:
            result = self._dispatch(method, params, session)
        except _RpcError as exc:
            return _error(msg_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug here must not kill the connection
            print(f"skill-evals mcp-serve: internal error in {method}: {exc!r}", file=sys.stderr)
            return _error(msg_id, INTERNAL_ERROR, "Internal error")
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _notification(self, method: str, params: Any, session: Session) -> None:
        if method == "notifications/initialized":
            session.initialized = True
        # notifications/cancelled: every request is answered at once, nothing to cancel.
        # Unknown notifications are ignored, as JSON-RPC requires (never answered).

    def _dispatch(self, method: str, params: Mapping[str, Any], session: Session) -> Any:
        if method == "initialize":
            return self._initialize(params, session)
        if method == "ping":
            return {}
        if method == "tools/list":
            _check_cursor(params)
            return {"tools": [self._tool(s, session) for s in self.skills]}
        if method == "tools/call":
            return self._call_tool(params)
        if method == "resources/list":
            _check_cursor(params)
            return {"resources": [self._resource(s, session) for s in self.skills]}
        if method == "resources/read":
            return self._read_resource(params)
        if method == "resources/templates/list":
            _check_cursor(params)
            return {"resourceTemplates": []}
        raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {_short(method)}")

    def _initialize(self, params: Mapping[str, Any], session: Session) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: initialize needs protocolVersion")
        # The spec's negotiation: echo the client's version when supported, else our latest.
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        session.protocol_version = version
        session.initialized = False
        server_info: dict[str, Any] = {"name": "skill-evals", "version": __version__}
        if _at_least(version, "2025-06-18"):
            server_info["title"] = "skill-evals skill server"
        return {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
            },
            "serverInfo": server_info,
            "instructions": SERVER_INSTRUCTIONS,
        }

    def _tool(self, skill: ServedSkill, session: Session) -> dict[str, Any]:
        version = session.protocol_version or LATEST_PROTOCOL_VERSION
        tool: dict[str, Any] = {
            "name": skill.tool_name,
            "description": skill.description,
            # No parameters: the form the 2025-11-25 spec recommends for an argument-less tool.
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        }
        if _at_least(version, "2025-06-18"):
            tool["title"] = f"Load the {skill.name} skill"
        if _at_least(version, "2025-03-26"):
            tool["annotations"] = {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            }
        return tool

    def _call_tool(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise _RpcError(INVALID_PARAMS, "Invalid params: arguments must be an object")
        skill = self._by_tool.get(name)
        if skill is None:
            raise _RpcError(INVALID_PARAMS, f"Unknown tool: {_short(name)}")
        # Stray arguments are ignored rather than failing the load: the tool takes none, and a
        # model that adds one still loaded the skill.
        return {"content": [{"type": "text", "text": skill.text}], "isError": False}

    def _resource(self, skill: ServedSkill, session: Session) -> dict[str, Any]:
        resource: dict[str, Any] = {
            "uri": skill.uri,
            "name": skill.name,
            "description": skill.description,
            "mimeType": MIME_TYPE,
            "size": len(skill.text.encode("utf-8")),
        }
        if _at_least(session.protocol_version or LATEST_PROTOCOL_VERSION, "2025-06-18"):
            resource["title"] = f"{skill.name} SKILL.md"
        return resource

    def _read_resource(self, params: Mapping[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: resources/read needs a uri")
        skill = self._by_uri.get(uri)
        if skill is None:
            raise _RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": _short(uri)})
        return {"contents": [{"uri": skill.uri, "mimeType": MIME_TYPE, "text": skill.text}]}


def _valid_id(value: Any) -> bool:
    # MCP: "Requests MUST include a string or integer ID" (null is not allowed; bool is not int).
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _check_cursor(params: Mapping[str, Any]) -> None:
    # Everything fits one page and no nextCursor is ever sent, so any cursor is not ours.
    if params.get("cursor") is not None:
        raise _RpcError(INVALID_PARAMS, "Invalid params: unknown cursor")


def _at_least(version: str, minimum: str) -> bool:
    return SUPPORTED_PROTOCOL_VERSIONS.index(version) <= SUPPORTED_PROTOCOL_VERSIONS.index(minimum)


# ------------------------------------------------------------------------------------- stdio


def serve_stdio(
    server: SkillServer,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: TextIO | None = None,
) -> None:
    """Serve one session over stdio until EOF: one JSON message per line in and out; stdout
    carries MCP messages only, logs go to stderr."""
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else sys.stdout.buffer
    log = stderr if stderr is not None else sys.stderr
    names = ", ".join(s.name for s in server.skills)
    print(f"skill-evals mcp-serve: serving {names} over stdio", file=log, flush=True)
    session = Session()
    try:
        while True:
            line = reader.readline(MAX_MESSAGE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
                _skip_rest_of_line(reader)
                response: Any = _error(
                    None, PARSE_ERROR, f"Parse error: message longer than {MAX_MESSAGE_BYTES} bytes"
                )
            else:
                line = line.removesuffix(b"\n").removesuffix(b"\r")
                if not line.strip():
                    continue
                response = server.handle_bytes(line, session)
            if response is not None:
                writer.write(encode_message(response) + b"\n")
                writer.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        return  # the client went away or the user stopped us: a normal end of a stdio server


def _skip_rest_of_line(reader: BinaryIO) -> None:
    while True:
        chunk = reader.readline(MAX_MESSAGE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


# -------------------------------------------------------------------------------------- HTTP


class _HttpSessions:
    """Live HTTP sessions by id, bounded, shared by the handler threads under one lock."""

    def __init__(self, limit: int = MAX_HTTP_SESSIONS) -> None:
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._limit = limit
        # Handler threads run one request per session at a time in practice; the lock guards
        # the dict, and Session fields are only plain assignments.

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


class SkillHTTPServer(ThreadingHTTPServer):
    """Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25) at ``/mcp``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, skill_server: SkillServer, host: str, port: int, family: int) -> None:
        self.address_family = family
        self.skill_server = skill_server
        self.sessions = _HttpSessions()
        self.allowed_hosts = _allowed_hosts(host)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host = self.server_address[0]
        port = self.server_address[1]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"http://{shown}:{port}{ENDPOINT}"


def _allowed_hosts(host: str) -> frozenset[str] | None:
    """Host names accepted in ``Host``/``Origin`` headers; None = any Host (wildcard bind)."""
    if host in _WILDCARD_HOSTS:
        return None
    return _LOOPBACK_HOSTS | {host.lower()}


def make_http_server(server: SkillServer, host: str, port: int) -> SkillHTTPServer:
    """Bind the streamable HTTP transport to exactly ``host:port`` (``[v6]`` brackets allowed;
    port 0 picks a free one, see ``.url``). Raises ValueError when the address cannot be bound."""
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return SkillHTTPServer(server, host, port, infos[0][0])
    except OSError as exc:
        raise ValueError(
            f"--http {host}:{port}: cannot listen there ({exc.strerror or exc})"
        ) from exc


def serve_http(server: SkillServer, host: str, port: int) -> None:
    """Serve streamable HTTP on ``host:port`` at ``/mcp`` until interrupted."""
    httpd = make_http_server(server, host, port)
    names = ", ".join(s.name for s in server.skills)
    print(f"skill-evals mcp-serve: serving {names} at {httpd.url}", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


def _media_types(header: str | None) -> set[str]:
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


class _Handler(BaseHTTPRequestHandler):
    server: SkillHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive; every response carries Content-Length
    server_version = f"skill-evals/{__version__}"

    # --------------------------------------------------------------------------- verbs

    def do_POST(self) -> None:
        if not self._preflight():
            return
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            self._http_error(
                415, "Unsupported Media Type: POST a JSON-RPC message as application/json"
            )
            return
        accepted = _media_types(self.headers.get("Accept"))
        wants_json = bool(accepted & {"application/json", "application/*", "*/*"})
        wants_sse = bool(accepted & {"text/event-stream", "text/*", "*/*"})
        if not (wants_json or wants_sse):
            self._http_error(406, "Not Acceptable: accept application/json or text/event-stream")
            return
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.strip().isdigit():
            self._http_error(411, "Length Required: send a Content-Length header")
            return
        length = int(length_text)
        if length > MAX_MESSAGE_BYTES:
            self._http_error(413, f"Payload Too Large: at most {MAX_MESSAGE_BYTES} bytes")
            return
        body = self.rfile.read(length)
        self._body_read = True

        app = self.server.skill_server
        try:
            payload = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError):
            self._send_json(400, _error(None, PARSE_ERROR, "Parse error: the body is not JSON"))
            return

        session_id = self.headers.get("Mcp-Session-Id")
        is_initialize = isinstance(payload, dict) and payload.get("method") == "initialize"
        new_session_id: str | None = None
        if is_initialize and "id" in payload:
            # A new session per initialize; the id is handed out only if initialize succeeds.
            session = Session()
            response = app.handle_payload(payload, session)
            if isinstance(response, dict) and "result" in response:
                new_session_id = self.server.sessions.create(session)
        else:
            if session_id is None:
                self._http_error(
                    400, "Bad Request: no Mcp-Session-Id header; send initialize first"
                )
                return
            found = self.server.sessions.get(session_id)
            if found is None:
                self._http_error(404, "Not Found: unknown or ended session; initialize again")
                return
            response = app.handle_payload(payload, found)

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
        if not self._preflight():
            return
        # No server-initiated messages exist here, so no standalone SSE stream is offered.
        self._http_error(
            405,
            "Method Not Allowed: this server offers no SSE stream; POST instead",
            {"Allow": "POST, DELETE"},
        )

    def do_DELETE(self) -> None:
        if not self._preflight():
            return
        session_id = self.headers.get("Mcp-Session-Id")
        if session_id is None:
            self._http_error(400, "Bad Request: DELETE needs an Mcp-Session-Id header")
        elif self.server.sessions.delete(session_id):
            self._send(204, b"", None)
        else:
            self._http_error(404, "Not Found: unknown or ended session")

    def _not_allowed(self) -> None:
        if self._preflight():
            self._http_error(405, "Method Not Allowed: use POST", {"Allow": "POST, GET, DELETE"})

    do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _not_allowed

    # ------------------------------------------------------------------------- helpers

    _body_read = False

    def parse_request(self) -> bool:
        self._body_read = False  # per request: the handler object serves a whole connection
        return super().parse_request()

    def _discard_body(self) -> None:
        """Keep-alive needs the unread body of a refused request consumed (or the connection
        closed); otherwise its bytes would be read as the next request."""
        self._body_read = True
        length_text = (self.headers.get("Content-Length") or "0").strip()
        if self.headers.get("Transfer-Encoding") or not length_text.isdigit():
            self.close_connection = True
        elif int(length_text) > 65536:
            self.close_connection = True  # not worth reading for a refusal
        elif int(length_text):
            self.rfile.read(int(length_text))

    def _preflight(self) -> bool:
        """Endpoint, DNS-rebinding (Host/Origin) and protocol-version header checks."""
        if urlsplit(self.path).path != ENDPOINT:
            self._http_error(404, f"Not Found: the MCP endpoint is {ENDPOINT}")
            return False
        allowed = self.server.allowed_hosts
        if allowed is not None:
            host = _hostname(f"//{self.headers.get('Host', '')}")
            if host not in allowed:
                self._http_error(403, "Forbidden: Host header is not this server")
                return False
        origin = self.headers.get("Origin")
        if origin is not None:
            origin_host = _hostname(origin) if origin.startswith(("http://", "https://")) else None
            if origin_host is None or origin_host not in (allowed or _LOOPBACK_HOSTS):
                self._http_error(403, "Forbidden: Origin not allowed")
                return False
        version = self.headers.get("MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            self._http_error(
                400,
                "Bad Request: unsupported MCP-Protocol-Version; supported: "
                + ", ".join(SUPPORTED_PROTOCOL_VERSIONS),
            )
            return False
        return True

    def _http_error(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_json(
            status, _error(None, -32000 if status != 400 else INVALID_REQUEST, message), headers
        )

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
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"skill-evals mcp-serve: {self.address_string()} {format % args}\n")


def _hostname(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower() if host else None
