"""JSON-RPC 2.0 framing: bounded, strict decoding of one message and compact encoding.

Every transport hands the raw bytes of one message (a stdio line, an HTTP body) to
:func:`decode_message`; whatever the bytes are, it returns a value or raises
:class:`MessageError` with a short reason that never quotes the input. It runs in time linear in
the input: the nesting depth is measured before the JSON parser (which recurses) sees the text.
"""

from __future__ import annotations

import json
import operator
import re
from itertools import accumulate, repeat
from typing import Any

from ...suite.jsonl import loads_strict

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # implementation-defined range: used for HTTP-level refusals
RESOURCE_NOT_FOUND = -32002  # the code the 2024-11-05 … 2025-11-25 specs recommend

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one JSON-RPC message (a stdio line, an HTTP body)
# Arrays and objects nested deeper than this are refused. MCP messages nest a handful of levels;
# the bound keeps the recursive JSON parser, and anything that walks a value, far from any limit.
MAX_NESTING = 64
MAX_BATCH_MESSAGES = 100  # so one batch cannot ask for an unbounded number of responses

# A JSON string, or an unterminated one up to the end: the pattern can always match once it has
# seen the opening quote, so no starting point is ever scanned twice (linear time).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # opening 2, closing 0 (then -1)


class MessageError(ValueError):
    """The bytes are not one acceptable JSON value; ``str()`` is a short reason, no input text."""


class RpcError(Exception):
    """A JSON-RPC error to answer a request with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def nesting_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in ``data`` (brackets inside strings do not count).

    Exact for valid JSON and cheap for the common case; for anything else it is only an upper
    guess, which is fine: such input fails to parse anyway. UTF-8 continuation bytes are never
    ASCII, so working on bytes is exact."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return MAX_NESTING  # cannot be deeper, whatever the layout
    unquoted = _STRING.sub(b"", data) if b'"' in data else data
    steps = unquoted.translate(None, _NOT_BRACKET).translate(_BRACKET_STEP)
    return max(accumulate(map(operator.sub, steps, repeat(1))), default=0)


def decode_message(data: bytes, max_bytes: int = MAX_MESSAGE_BYTES) -> Any:
    """Parse one message: strict UTF-8 and strict JSON (no NaN/Infinity, no duplicate keys, safe
    integers), at most ``max_bytes`` bytes and ``MAX_NESTING`` levels. Raises MessageError."""
    if len(data) > max_bytes:
        raise MessageError(f"message longer than {max_bytes} bytes")
    if nesting_depth(data) > MAX_NESTING:
        raise MessageError(f"arrays/objects nested deeper than {MAX_NESTING} levels")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return loads_strict(text.removeprefix("\ufeff"))
    except (ValueError, RecursionError) as exc:
        # loads_strict's reasons hold no input text ("invalid JSON: … at column N").
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise MessageError(reason) from None


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def parse_error(exc: MessageError) -> dict[str, Any]:
    """The ``-32700`` response to bytes that could not be decoded."""
    return error_response(None, PARSE_ERROR, f"Parse error: {exc}")


def encode_message(message: Any) -> bytes:
    """One JSON-RPC message (or batch) as compact ASCII JSON without embedded newlines."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode(
        "ascii"
    )


def short(text: str, limit: int = 200) -> str:
    """A client-supplied string for an error message, cut so a message stays one short line."""
    return text if len(text) <= limit else text[:limit] + "…"


def valid_id(value: Any) -> bool:
    """MCP: "Requests MUST include a string or integer ID" (not null; a bool is not an int)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
