"""Reading pi's transcript (the ``--mode json`` stream or a session file): its tool calls in the
order the model made them, the ``/skill:`` expansions, and the final answer, usage and how the
run ended. The loading rules themselves are the shared ones of :mod:`.proof`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import reasons
from .base import RunnerSetupError
from .evidence import Event, Load, ToolCall
from .proof import INJECTED
from .protocol import Outcome
from .scaffold import STDERR_FILE, TRANSCRIPT_FILE

AGENT = "pi"
ENV_BASE_URL = "SKILL_EVALS_PI_BASE_URL"
ENV_API_KEY = "SKILL_EVALS_PI_API_KEY"
# What pi prints (and exits) when the model's provider has no key: said before any request.
NO_KEY_TEXT = b"No API key found"
NO_KEY_EVENT = "skill_evals_no_api_key"  # the runner's note of it in the transcript
_HINT = f"check --model, {ENV_BASE_URL} and the provider's API key variable"

# ------------------------------------------------------------------------------------ evidence

# pi expands `/skill:<name>` itself into a user message that starts with this block.
_SKILL_BLOCK = re.compile(r'<skill name="(?P<name>[^"]{1,128})" location="')


def tool_calls_of(message: Any) -> list[tuple[str, str, Any]]:
    """``(id, name, arguments)`` for every toolCall block of an assistant message, in order."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    content = message.get("content")
    calls: list[tuple[str, str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                calls.append((call_id, name, block.get("arguments")))
    return calls


def _message_of(event: Mapping[str, Any]) -> Any:
    """The message an event carries: ``message_end`` (``--mode json``) or a session-file entry
    ``{"type": "message"}``; other events carry none."""
    if event.get("type") in ("message_end", "message"):
        return event.get("message")
    return None


def _text_of(value: Any) -> str:
    """The text blocks of a message or tool result (``content`` list or string)."""
    content = value.get("content") if isinstance(value, dict) else None
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", ""))
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "text"
    )


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool call of a pi transcript (the ``--mode json`` stream or a session file),
    ordered by its place in the assistant message that made it — pi runs parallel calls at once
    and they may finish in any order — with the result of its ``tool_execution_end`` (or the
    ``toolResult`` message of a session file). User messages pi expanded from ``/skill:`` are
    ``INJECTED`` calls."""
    made: dict[str, tuple[str, dict[str, Any], tuple[int, int]]] = {}
    done: dict[str, ToolCall] = {}
    injected: list[ToolCall] = []

    def finish(call_id: Any, index: int, name: Any, args: Any, failed: Any, result: Any) -> None:
        if not isinstance(call_id, str) or call_id in done:
            return
        fallback = (name if isinstance(name, str) else "", args if isinstance(args, dict) else {})
        call_name, call_args, order = made.get(call_id, (*fallback, (index, 0)))
        ok = failed is False
        done[call_id] = ToolCall(call_name, call_args, order, index, ok, _text_of(result))

    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "tool_execution_start":
            call_id, name, args = event.get("toolCallId"), event.get("toolName"), event.get("args")
            if isinstance(call_id, str) and isinstance(name, str):
                made.setdefault(call_id, (name, args if isinstance(args, dict) else {}, (index, 0)))
        elif kind == "tool_execution_end":
            finish(event.get("toolCallId"), index, event.get("toolName"), event.get("args"),
                   event.get("isError"), event.get("result"))  # fmt: skip
        message = _message_of(event)
        for slot, (call_id, name, args) in enumerate(tool_calls_of(message)):
            made.setdefault(call_id, (name, args if isinstance(args, dict) else {}, (index, slot)))
        if not isinstance(message, dict):
            continue
        if message.get("role") == "toolResult":
            finish(message.get("toolCallId"), index, message.get("toolName"), None,
                   message.get("isError"), message)  # fmt: skip
        elif message.get("role") == "user" and _SKILL_BLOCK.match(_text_of(message)):
            injected.append(ToolCall(INJECTED, {}, (index, 0), index, True, _text_of(message)))
    pending = [ToolCall(n, a, o, None, False, "") for i, (n, a, o) in made.items() if i not in done]
    return sorted([*done.values(), *pending, *injected], key=lambda call: call.order)


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """A user message pi expanded from ``/skill:<name>`` (it starts with ``<skill name=…``) for
    a skill the run offered. A prompt that itself starts with such a block is not trusted."""
    if prompt is not None and _SKILL_BLOCK.match(prompt.lstrip()):
        return []
    loads: list[Load] = []
    for index, event in enumerate(events):
        message = _message_of(event)
        if isinstance(message, dict) and message.get("role") == "user":
            match = _SKILL_BLOCK.match(_text_of(message))
            if match and match.group("name") in available:
                name = match.group("name")
                loads.append(
                    Load(name, "explicit", AGENT, "skill message", index, order=(index, 0))
                )
    return loads


# ------------------------------------------------------------------------------------- result


@dataclass
class Transcript:
    """What the runner keeps from pi's event stream while it runs."""

    events: list[Event] = field(default_factory=list)
    turns: int = 0
    last_assistant: Mapping[str, Any] | None = None
    assistants: list[Mapping[str, Any]] = field(default_factory=list)
    agent_ended: bool = False
    stopped_at_max_turns: bool = False
    no_api_key: bool = False  # pi said it found no key for the model before it started

    def add(self, event: Event) -> None:
        self.events.append(event)
        kind = event.get("type")
        if kind == "turn_end":
            self.turns += 1
        elif kind == "agent_end":
            self.agent_ended = True
        elif kind == NO_KEY_EVENT:
            self.no_api_key = True
        message = event.get("message") if kind == "message_end" else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            self.last_assistant = message
            self.assistants.append(message)


def no_api_key(model: str | None, variable: str | None) -> RunnerSetupError:
    """The reason of a run whose model has no key, naming what to set (the provider's
    variable too, when known)."""
    named = f" ({variable})" if variable else ""
    return RunnerSetupError(
        f"no API key: set {ENV_API_KEY} or the provider's variable{named} for --model "
        f"{model or '<provider/model>'}"
    )


def final_text(message: Mapping[str, Any] | None) -> str:
    """The text blocks of an assistant message, joined."""
    if message is None:
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [
        block["text"]
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "".join(parts)


def usage_meta(messages: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Token and cost sums over the assistant messages (pi reports ``usage`` on each).

    ``costUsd`` is included only when pi priced something: models pi does not know (custom
    providers without a ``cost`` table) are priced at 0, which would read as "free"."""
    input_tokens = output_tokens = 0
    cost = 0.0
    seen = False
    for message in messages:
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        seen = True
        for key in ("input", "cacheRead", "cacheWrite"):
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                input_tokens += int(value)
        value = usage.get("output")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            output_tokens += int(value)
        price = usage.get("cost")
        total = price.get("total") if isinstance(price, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            cost += float(total)
    meta: dict[str, float] = {}
    if seen:
        meta["inputTokens"] = input_tokens
        meta["outputTokens"] = output_tokens
    if cost > 0:
        meta["costUsd"] = round(cost, 10)
    return meta


def outcome(
    transcript: Transcript,
    status: int,
    duration_ms: int,
    kept: Path | None,
    max_turns: int | None = None,
    model: str | None = None,
) -> Outcome:
    """Turn a finished pi run into its outcome, or the runner's reason when the run produced no
    evidence: pi failed to start, the model request itself failed (by its HTTP status), or pi
    was stopped at ``max_turns``. ``kept``: the workspace kept with --keep-workspace, named in
    the hint."""
    keep_hint = (
        f"see {kept / STDERR_FILE} and {kept / TRANSCRIPT_FILE}"
        if kept is not None
        else f"rerun with --keep-workspace to inspect {STDERR_FILE} and {TRANSCRIPT_FILE}"
    )
    if transcript.stopped_at_max_turns:
        raise reasons.turn_limit(max_turns)
    if not transcript.agent_ended:
        if transcript.no_api_key:
            raise no_api_key(model, None)
        raise RunnerSetupError(
            f"pi exited with status {status} before the agent finished (no model reply; "
            f"check --model, {ENV_BASE_URL} and the provider's API key variable); {keep_hint}"
        )
    stop = transcript.last_assistant.get("stopReason") if transcript.last_assistant else None
    if stop in ("error", "aborted"):
        # The model call failed: the run says nothing about the skill, so it is void, not a
        # task failure. pi's errorMessage starts with the HTTP status ("429 …").
        message = transcript.last_assistant.get("errorMessage") if transcript.last_assistant else ""
        message = message if isinstance(message, str) else ""
        dead = reasons.unreachable(message)
        if dead is not None:
            raise dead
        if reasons.names_credentials(message):
            raise reasons.no_credentials(message, "the provider's API key variable")
        found = reasons.status_in(message, anchored=True)
        raise reasons.api_failure(found, None, _HINT)
    succeeded = (
        status == 0
        and transcript.last_assistant is not None
        and transcript.last_assistant.get("stopReason") == "stop"
    )
    # pi's own status when it failed after finishing; 1 for an answer that did not end normally
    # (e.g. stopReason "length").
    failed_code = status if status > 0 else 1
    meta = usage_meta(transcript.assistants)
    meta["durationMs"] = duration_ms
    meta["turns"] = transcript.turns  # model replies (pi's turn_end events), an integer
    return Outcome(
        output=final_text(transcript.last_assistant),
        exit_code=0 if succeeded else failed_code,
        meta=meta,
    )
