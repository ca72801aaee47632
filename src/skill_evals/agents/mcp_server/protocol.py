"""The MCP protocol core: JSON-RPC messages in, responses out, no transport and no I/O.

``initialize`` negotiates one of ``SUPPORTED_PROTOCOL_VERSIONS``; the tools are the skills'
``load_<name>_skill`` and the resources their ``skill://<name>/SKILL.md``. Per-connection state
lives in :class:`Session`, so stdio and HTTP share one :class:`SkillServer`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import __version__
from ...escaping.terminal import terminal_safe
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_BATCH_MESSAGES,
    METHOD_NOT_FOUND,
    MessageError,
    RpcError,
    decode_message,
    error_response,
    parse_error,
    short,
    valid_id,
)
from .modern import (
    LEGACY_ONLY,
    capabilities,
    check_envelope,
    discover,
    finish,
    modern_version,
)
from .skills import ServedSkill, load_skills
from .skills_ext import get_skill, list_skills, read_file

# The legacy era's versions, newest first (initialize negotiates one). The modern revision
# 2026-07-28 is served statelessly, per request (modern.py).
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = (
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
)
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]
# JSON-RPC batches were part of MCP in 2025-03-26 only (added there, removed in 2025-06-18).
BATCH_PROTOCOL_VERSIONS = frozenset({"2025-03-26"})
MIME_TYPE = "text/markdown"

SERVER_INSTRUCTIONS = (
    "Each tool load_<name>_skill returns the SKILL.md instructions of one skill (also readable "
    "as the resource skill://<name>/SKILL.md); the tool description says what the skill is for."
)


@dataclass
class Session:
    """Per-connection protocol state (one for stdio, one per ``Mcp-Session-Id`` over HTTP)."""

    protocol_version: str | None = None  # set by initialize
    initialized: bool = False  # the client sent notifications/initialized


class SkillServer:
    """Turns parsed JSON-RPC messages into responses; holds no per-connection state."""

    def __init__(self, skills: Sequence[ServedSkill]) -> None:
        self.skills: tuple[ServedSkill, ...] = tuple(skills)
        self._by_tool = {s.tool_name: s for s in self.skills}

    @classmethod
    def from_dirs(cls, dirs: Sequence[Path]) -> SkillServer:
        """A server for these skill folders; raises ValueError naming the path (see
        :func:`load_skills`)."""
        return cls(load_skills(dirs))

    # ------------------------------------------------------------------------------ messages

    def handle_bytes(self, data: bytes, session: Session) -> Any:
        """Handle one raw message (a stdio line or an HTTP body), whatever its bytes: the
        response to send, or None when nothing is to be sent (notifications, responses)."""
        try:
            payload = decode_message(data)
        except MessageError as exc:
            return parse_error(exc)
        return self.handle_payload(payload, session)

    def handle_payload(self, payload: Any, session: Session) -> Any:
        """Handle a decoded message or batch; see ``handle_bytes``."""
        if not isinstance(payload, list):
            return self.handle_message(payload, session)
        if not payload:
            return error_response(None, INVALID_REQUEST, "Invalid Request: empty batch")
        version = session.protocol_version
        if version not in BATCH_PROTOCOL_VERSIONS:
            return error_response(
                None,
                INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are only part of MCP protocol version "
                f"2025-03-26; this session uses {version or 'no version yet (send initialize)'}",
            )
        if len(payload) > MAX_BATCH_MESSAGES:
            return error_response(
                None,
                INVALID_REQUEST,
                f"Invalid Request: a batch holds at most {MAX_BATCH_MESSAGES} messages",
            )
        responses = []
        for message in payload:
            if isinstance(message, dict) and message.get("method") == "initialize":
                # 2025-03-26: "The initialization request MUST NOT be part of a JSON-RPC batch".
                msg_id = message.get("id")
                response: Any = error_response(
                    msg_id if valid_id(msg_id) else None,
                    INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch",
                )
            else:
                response = self.handle_message(message, session)
            if response is not None:
                responses.append(response)
        return responses or None

    def handle_message(self, message: Any, session: Session) -> dict[str, Any] | None:
        """Handle one decoded JSON-RPC message; None for notifications and client responses."""
        if not isinstance(message, dict):
            return error_response(
                None, INVALID_REQUEST, "Invalid Request: a message must be an object"
            )
        has_id = "id" in message
        msg_id = message.get("id")
        reply_id = msg_id if valid_id(msg_id) else None
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                return None  # a response to a request we never send: nothing to answer
            return error_response(reply_id, INVALID_REQUEST, "Invalid Request: no method")
        method = message["method"]
        if message.get("jsonrpc") != "2.0":
            return error_response(
                reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
            )
        if not isinstance(method, str):
            return error_response(
                reply_id, INVALID_REQUEST, "Invalid Request: method must be a string"
            )
        if has_id and not valid_id(msg_id):
            return error_response(
                None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
            )
        params = message.get("params")
        if not has_id:
            self._notification(method, session)
            return None
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_response(
                msg_id, INVALID_PARAMS, f"Invalid params: {short(method)} takes an object"
            )
        modern = method != "initialize" and modern_version(params) is not None
        try:
            if modern:
                result = self._modern(method, params)
            else:
                result = self._dispatch(method, params, session)
        except RpcError as exc:
            return error_response(msg_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug here must not kill the connection
            print(
                "skill-evals mcp-serve: internal error in "
                f"{terminal_safe(short(method))}: {type(exc).__name__}",
                file=sys.stderr,
            )
            return error_response(msg_id, INTERNAL_ERROR, "Internal error")
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _notification(self, method: str, session: Session) -> None:
        if method == "notifications/initialized":
            session.initialized = True
        # notifications/cancelled: every request is answered at once, nothing to cancel.
        # Unknown notifications are ignored, as JSON-RPC requires (never answered).

    def _modern(self, method: str, params: Mapping[str, Any]) -> Any:
        """A stateless request of the 2026-07-28 era: no session, no initialize."""
        check_envelope(params)
        if method in LEGACY_ONLY:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (not in 2026-07-28)")
        stateless = Session(protocol_version=LATEST_PROTOCOL_VERSION, initialized=True)
        return finish(method, self._dispatch(method, params, stateless, modern=True))

    def _dispatch(
        self, method: str, params: Mapping[str, Any], session: Session, modern: bool = False
    ) -> Any:
        if method == "server/discover":
            return finish(method, discover(SERVER_INSTRUCTIONS))
        if method == "skills/list":
            return finish(method, list_skills(self.skills, params))
        if method == "skills/get":
            return finish(method, get_skill(self.skills, params))
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
            return read_file(self.skills, params, modern)
        if method == "resources/templates/list":
            _check_cursor(params)
            return {"resourceTemplates": []}
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {short(method)}")

    def _initialize(self, params: Mapping[str, Any], session: Session) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: initialize needs protocolVersion")
        # The spec's negotiation: echo the client's version when supported, else our latest.
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        session.protocol_version = version
        session.initialized = False
        server_info: dict[str, Any] = {"name": "skill-evals", "version": __version__}
        if _at_least(version, "2025-06-18"):
            server_info["title"] = "skill-evals skill server"
        return {
            "protocolVersion": version,
            "capabilities": capabilities(),
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
            raise RpcError(INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: arguments must be an object")
        skill = self._by_tool.get(name)
        if skill is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {short(name)}")
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


def _check_cursor(params: Mapping[str, Any]) -> None:
    # Everything fits one page and no nextCursor is ever sent, so any cursor is not ours.
    if params.get("cursor") is not None:
        raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor")


def _at_least(version: str, minimum: str) -> bool:
    return SUPPORTED_PROTOCOL_VERSIONS.index(version) <= SUPPORTED_PROTOCOL_VERSIONS.index(minimum)
