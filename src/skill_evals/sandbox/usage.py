"""Usage at the wire: the tokens each invocation really spent, read by the credential proxy from
the provider's own responses (whatever the agent reports), and the per-invocation token budget.

A contained sandbox's model requests reach the credential proxy through its invocation's
channel; the egress proxy marks each with the invocation's random token
(:data:`INVOCATION_HEADER`, one request per connection), so the credential proxy knows whose
tokens a response carries. The scanner understands Anthropic Messages (``usage``; streamed:
``message_start`` then cumulative ``message_delta``), OpenAI Chat Completions and Responses
(``usage``, ``response.completed``) and Gemini (``usageMetadata``, cumulative), as whole JSON
bodies or server-sent events. Every read is bounded: an event line over 1 MiB or a JSON body
over 8 MiB is skipped, never buffered further.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

INVOCATION_HEADER = "X-Skill-Evals-Invocation"
BUDGET_BODY = b"skill-evals: token budget of this invocation spent"
MAX_LINE = 1 << 20
MAX_JSON_BODY = 8 << 20


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def _anthropic_input(usage: Mapping[str, Any]) -> int:
    return sum(
        _int(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


class UsageScanner:
    """Fed a response body chunk by chunk (``sse``: an event stream); :attr:`tokens` is the
    (input, output) it reported, or None when it reported none."""

    def __init__(self, sse: bool) -> None:
        self._sse = sse
        self._buffer = b""
        self._skipping = False
        self._input: int | None = None
        self._output: int | None = None

    @property
    def tokens(self) -> tuple[int, int] | None:
        """(input, output) tokens, once the body said any."""
        if self._input is None and self._output is None:
            return None
        return (self._input or 0, self._output or 0)

    def feed(self, chunk: bytes) -> None:
        """The next piece of the body."""
        if not self._sse:
            if len(self._buffer) + len(chunk) <= MAX_JSON_BODY:
                self._buffer += chunk
            else:
                self._buffer, self._skipping = b"", True
            return
        data = self._buffer + chunk
        lines = data.split(b"\n")
        self._buffer = lines.pop()
        if len(self._buffer) > MAX_LINE:
            self._buffer, self._skipping = b"", True
        for line in lines:
            if self._skipping:  # the rest of an over-long line
                self._skipping = False
                continue
            if line.startswith(b"data:"):
                self._event(line[5:].strip())

    def finish(self) -> None:
        """The body ended."""
        if not self._sse and not self._skipping and self._buffer:
            self._event(self._buffer)
        elif self._sse and self._buffer.startswith(b"data:"):
            self._event(self._buffer[5:].strip())
        self._buffer = b""

    def _event(self, payload: bytes) -> None:
        try:
            value = json.loads(payload)
        except (ValueError, RecursionError):
            return
        if isinstance(value, dict):
            self._read(value)

    def _read(self, value: Mapping[str, Any]) -> None:
        kind = value.get("type")
        message = value.get("message")
        if kind == "message_start" and isinstance(message, Mapping):
            self._read_usage(message.get("usage"))
            return
        response = value.get("response")
        if kind == "response.completed" and isinstance(response, Mapping):
            self._read_usage(response.get("usage"))
            return
        self._read_usage(value.get("usage"))
        meta = value.get("usageMetadata")
        if isinstance(meta, Mapping):  # Gemini: cumulative in every chunk
            self._input = _int(meta.get("promptTokenCount"))
            self._output = _int(meta.get("candidatesTokenCount")) + _int(
                meta.get("thoughtsTokenCount")
            )

    def _read_usage(self, usage: object) -> None:
        if not isinstance(usage, Mapping):
            return
        if "prompt_tokens" in usage or "completion_tokens" in usage:  # OpenAI Chat
            self._input = _int(usage.get("prompt_tokens"))
            self._output = _int(usage.get("completion_tokens"))
            return
        if any(k in usage for k in ("input_tokens", "cache_read_input_tokens")):
            self._input = _anthropic_input(usage)  # Anthropic, OpenAI Responses
        if "output_tokens" in usage:
            # Anthropic's message_delta and OpenAI's Responses give the running total.
            self._output = _int(usage.get("output_tokens"))


@dataclass
class Spent:
    """One invocation's tokens at the wire."""

    input: int = 0
    output: int = 0
    responses: int = 0  # responses that said their usage
    refused: bool = False  # a model request was answered 429: the budget was spent

    @property
    def total(self) -> int:
        """Input and output tokens together."""
        return self.input + self.output


@dataclass
class Meter:
    """The run's wire usage per invocation token, and its per-invocation budget."""

    max_tokens: int | None = None
    _spent: dict[str, Spent] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self) -> str:
        """A new invocation's token."""
        token = secrets.token_hex(16)
        with self._lock:
            self._spent[token] = Spent()
        return token

    def close(self, token: str) -> Spent:
        """What the invocation spent (it takes no more)."""
        with self._lock:
            return self._spent.pop(token, Spent())

    def known(self, token: str | None) -> bool:
        """Whether ``token`` names a running invocation."""
        with self._lock:
            return token is not None and token in self._spent

    def exhausted(self, token: str | None) -> bool:
        """Whether the invocation has spent its budget (its next model request gets 429)."""
        if self.max_tokens is None or token is None:
            return False
        with self._lock:
            spent = self._spent.get(token)
            if spent is None or spent.total <= self.max_tokens:
                return False
            spent.refused = True
            return True

    def add(self, token: str | None, tokens: tuple[int, int] | None) -> None:
        """Count one response's usage."""
        if token is None or tokens is None:
            return
        with self._lock:
            spent = self._spent.get(token)
            if spent is not None:
                spent.input += tokens[0]
                spent.output += tokens[1]
                spent.responses += 1
