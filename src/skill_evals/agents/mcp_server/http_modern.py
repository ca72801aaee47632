"""The HTTP rules of a 2026-07-28 request (``POST /mcp`` with ``params._meta``): the standard
headers must mirror the body, and each refusal has its own status.

- ``MCP-Protocol-Version`` equal to the ``_meta`` version, ``Mcp-Method`` equal to
  ``method``, and for ``tools/call``, ``resources/read`` and ``prompts/get`` an ``Mcp-Name``
  equal to ``params.name`` / ``params.uri`` (its ``=?base64?…?=`` form decoded first);
  missing or different → ``400`` with ``-32020``;
- a version not offered → ``400`` with ``-32022``; ``_meta`` without the client's
  capabilities → ``400`` with ``-32602``; an unknown method → ``404`` with ``-32601``;
- every other JSON-RPC error, and every result, → ``200``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from email.message import Message
from typing import Any

from .http_headers import single_header
from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, error_response, short, valid_id
from .modern import (
    CLIENT_CAPABILITIES_KEY,
    HEADER_MISMATCH,
    MODERN_VERSION,
    modern_version,
    unsupported,
)

_NAME_SOURCE = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


def is_modern(payload: Any) -> bool:
    """Whether ``payload`` is one request or notification of the 2026-07-28 era."""
    return (
        isinstance(payload, dict)
        and payload.get("method") != "initialize"
        and modern_version(payload.get("params")) is not None
    )


def decode_name(value: str) -> str | None:
    """An ``Mcp-Name`` value, its ``=?base64?…?=`` form decoded (None: not decodable)."""
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    return value


def _header_problem(headers: Message, payload: Mapping[str, Any], version: str) -> str | None:
    method = payload.get("method")
    if single_header(headers, "MCP-Protocol-Version") != version:
        return "the MCP-Protocol-Version header must equal the request's protocol version"
    if single_header(headers, "Mcp-Method") != method:
        return "the Mcp-Method header must equal the request's method"
    source = _NAME_SOURCE.get(method) if isinstance(method, str) else None
    if source is not None:
        given = single_header(headers, "Mcp-Name")
        wanted = (payload.get("params") or {}).get(source)
        if given is None or decode_name(given) != wanted:
            return f"the Mcp-Name header must equal params.{source}"
    return None


def refusal(headers: Message, payload: Mapping[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The status and error response that refuse a modern request before it is served, or
    None when it may be served."""
    msg_id = payload.get("id")
    reply_id = msg_id if valid_id(msg_id) else None
    params = payload.get("params") or {}
    version = modern_version(params) or ""
    if version != MODERN_VERSION:
        error = unsupported(version)
        return 400, error_response(reply_id, error.code, error.message, error.data)
    problem = _header_problem(headers, payload, version)
    if problem is not None and "id" in payload:
        return 400, error_response(reply_id, HEADER_MISMATCH, f"Header mismatch: {problem}")
    meta = params.get("_meta") or {}
    if "id" in payload and not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), Mapping):
        error = RpcError(
            INVALID_PARAMS, f"Invalid params: _meta needs {CLIENT_CAPABILITIES_KEY} (an object)"
        )
        return 400, error_response(reply_id, error.code, error.message)
    return None


def status_of(response: Any) -> int:
    """The HTTP status of a served modern request's response."""
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
        return 404
    return 200


__all__ = ["decode_name", "is_modern", "refusal", "short", "status_of"]
