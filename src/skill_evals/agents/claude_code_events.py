"""Reading Claude Code's ``stream-json`` transcript: its tool calls (each ``tool_use`` with its
``tool_result``), its skill tool, its ``/skill`` expansions, and the final ``result`` event
(answer, task exit code, meta, the model API's failure). The loading rules themselves are the
shared ones of :mod:`.proof`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import reasons
from .base import RunnerError, RunnerSetupError
from .evidence import Load, ToolCall, parse_lines, skill_from_tool
from .proof import INJECTED

AGENT = "claude-code"
_SLASH_EXPANSION = re.compile(
    r"\s*<command-message>[^<]*</command-message>\s*<command-name>/(?P<name>[^<\s]+)</command-name>"
)
_HINT = "check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL"
_KEY_VARIABLE = "ANTHROPIC_API_KEY"
_SUBTYPE = re.compile(r"[a-z][a-z0-9_]{0,39}")
# Result events that mean "the model could not be reached", not "the task failed".
_API_FAILURE_REASONS = frozenset({"api_error", "auth_error", "authentication_failed"})


# ------------------------------------------------------------------------------------- evidence


def _content_blocks(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = event.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict)]


def _message_text(event: Mapping[str, Any]) -> str:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) for b in _content_blocks(event) if b.get("type") == "text"
    )


def _result_text(block: Mapping[str, Any]) -> str:
    """What a ``tool_result`` showed the model: its string content or its text blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _failed(block: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """A tool_result that reports failure (``is_error``, or Claude Code's own result record
    saying ``success: false``)."""
    if block.get("is_error") is True:
        return True
    extra = event.get("tool_use_result")
    return isinstance(extra, dict) and extra.get("success") is False


def tool_calls(events: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Every ``tool_use`` (in an ``assistant`` event) paired by id with its ``tool_result`` (in a
    ``user`` event), plus the messages Claude Code itself injects (``isSynthetic``/``isMeta``
    user events, e.g. a skill body after the ``Skill`` tool) as ``INJECTED`` calls."""
    pending: dict[str, tuple[str, dict[str, Any], tuple[int, int]]] = {}
    calls: list[ToolCall] = []
    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "assistant":
            for slot, block in enumerate(_content_blocks(event)):
                call_id, name = block.get("id"), block.get("name")
                if block.get("type") == "tool_use" and isinstance(call_id, str):
                    tool_input = block.get("input")
                    pending[call_id] = (
                        name if isinstance(name, str) else "",
                        tool_input if isinstance(tool_input, dict) else {},
                        (index, slot),
                    )
        elif kind == "user" and event.get("isReplay") is not True:
            if event.get("isSynthetic") is True or event.get("isMeta") is True:
                calls.append(ToolCall(INJECTED, {}, (index, 0), index, True, _message_text(event)))
            for block in _content_blocks(event):
                if block.get("type") != "tool_result":
                    continue
                call = pending.pop(str(block.get("tool_use_id")), None)
                if call is not None:
                    ok = not _failed(block, event)
                    calls.append(ToolCall(*call, index, ok, _result_text(block)))
    calls += [
        ToolCall(name, args, order, None, False, "") for name, args, order in pending.values()
    ]
    return sorted(calls, key=lambda call: call.order)


def skill_tool(call: ToolCall) -> str | None:
    """The skill a ``Skill`` call names (a leading ``/`` and a ``plugin:`` namespace removed)."""
    skill = call.input.get("skill") if call.name == "Skill" else None
    if not isinstance(skill, str) or not skill.strip():
        return None
    return skill.strip().lstrip("/").rpartition(":")[2] or None


# `@<path>` in the prompt: Claude Code attaches that file to the request itself, with no record
# in the stream but the prompt.
_AT_MENTION = re.compile(r"(?:^|(?<=\s))@(?P<path>\S{1,4096})")


def _at_mentions(prompt: str, available: frozenset[str]) -> list[Load]:
    """``@…/<name>/SKILL.md`` mentions of skills the run offered, in prompt order."""
    names: dict[str, None] = {}
    for match in _AT_MENTION.finditer(prompt):
        path = match.group("path").rstrip(",.;:!?)]}'\"")
        folder, _, file = path.rpartition("/")
        name = folder.rpartition("/")[2]
        if file == "SKILL.md" and name in available:
            names.setdefault(name, None)
    return [Load(n, "explicit", AGENT, "@ mention", 0, order=(0, 0)) for n in names]


def explicit(
    events: Sequence[Mapping[str, Any]], prompt: str | None, available: frozenset[str]
) -> list[Load]:
    """A prompt that starts with ``/<skill>`` is expanded by Claude Code itself; the replayed
    user message shows the expansion. Only skills the run offered or the init event listed
    count (an unknown ``/word`` is replayed as plain text); a prompt that itself contains such
    a record is not trusted."""
    if prompt is None:
        mentions: list[Load] = []
    else:
        mentions = _at_mentions(prompt, available)
        if "<command-" in prompt:
            return mentions
    listed = available | frozenset(available_skills(events))
    loads: list[Load] = []
    for index, event in enumerate(events):
        if event.get("type") == "user" and event.get("isReplay") is True:
            match = _SLASH_EXPANSION.match(_message_text(event))
            name = match.group("name").rpartition(":")[2] if match else None
            if name is not None and name in listed:
                loads.append(
                    Load(name, "explicit", AGENT, "slash command", index, order=(index, 0))
                )
    return mentions + loads


def available_skills(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Skills Claude Code offered in the run (the ``init`` event's ``skills`` list plus MCP
    load tools). Reported for diagnosis only; never counted as loaded."""
    names: list[str] = []
    for event in events:
        if event.get("type") == "system" and event.get("subtype") == "init":
            for name in event.get("skills") or []:
                if isinstance(name, str) and name not in names:
                    names.append(name)
            for tool in event.get("tools") or []:
                skill = skill_from_tool(tool) if isinstance(tool, str) else None
                if skill is not None and skill not in names:
                    names.append(skill)
    return names


# -------------------------------------------------------------------------------------- result


@dataclass
class Result:
    """What the final ``result`` event says."""

    output: str
    exit_code: int
    meta: dict[str, float] = field(default_factory=dict)
    max_turns: bool = False  # Claude Code stopped at --max-turns (subtype error_max_turns)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def outcome(events: Sequence[Mapping[str, Any]]) -> Result | None:
    """The last ``result`` event as output / task exit code / meta; None when there is none.

    ``exitCode`` is 0 only for ``subtype: success`` without ``is_error``; any other result
    (max turns, execution error, budget) is the task's failure, 1."""
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None:
        return None
    text = result.get("result")
    ok = result.get("subtype") == "success" and result.get("is_error") is not True
    meta: dict[str, float] = {}
    duration = _number(result.get("duration_ms"))
    if duration is not None:
        meta["durationMs"] = duration
    cost = _number(result.get("total_cost_usd"))
    if cost is not None:
        meta["costUsd"] = cost
    usage = result.get("usage")
    if isinstance(usage, dict):
        # Prompt tokens are split three ways when caching is on; report the total.
        parts = [
            _number(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        present = [p for p in parts if p is not None]
        if present:
            meta["inputTokens"] = sum(present)
        out = _number(usage.get("output_tokens"))
        if out is not None:
            meta["outputTokens"] = out
    meta["turns"] = model_turns(events)
    return Result(
        output=text if isinstance(text, str) else "",
        exit_code=0 if ok else 1,
        meta=meta,
        max_turns=result.get("subtype") == "error_max_turns",
    )


def model_turns(events: Sequence[Mapping[str, Any]]) -> int:
    """How many responses the model gave (sub-agents' included): distinct ``message.id`` of the
    ``assistant`` events, since Claude Code prints one event per content block. Claude Code's own
    ``num_turns`` (what ``--max-turns`` limits) also counts the messages it injects itself, such
    as a loaded skill's body, so it is not used. Synthetic API-error messages are no response."""
    ids: set[str] = set()
    unnamed = 0
    for event in events:
        if event.get("type") != "assistant" or event.get("is_api_error_message") is True:
            continue
        message = event.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message_id, str):
            ids.add(message_id)
        else:
            unnamed += 1
    return len(ids) + unnamed


def _error_text(result: Mapping[str, Any]) -> str:
    """The agent's words in an error result: ``result``, or (error subtypes of newer CLIs,
    which carry no ``result``) the strings of its ``errors`` list."""
    text = result.get("result")
    if isinstance(text, str) and text.strip():
        return text
    errors = result.get("errors")
    if isinstance(errors, list):
        return "; ".join(e for e in errors[:10] if isinstance(e, str))[:2000]
    return ""


def api_failure(
    events: Sequence[Mapping[str, Any]], max_turns: int | None = None
) -> RunnerSetupError | None:
    """The runner's reason for a ``result`` with ``is_error: true`` (never a task outcome), or
    None for any other result.

    No credentials first: the text names a login, an API key or credentials, or no request was
    answered (``duration_api_ms`` 0 or absent and no ``api_error_status``), whatever
    ``terminal_reason`` says — the agent's own words are quoted (bounded, escaped). Then the
    API's status (retryable only for 429, 5xx and 529), the turn limit, an API failure without
    a status, and any other error result. Nothing else of the transcript is quoted."""
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None or result.get("is_error") is not True:
        return None
    text = _error_text(result)
    status = result.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    kind = result.get("api_error_type")
    kind = kind if isinstance(kind, str) else None
    answered = _number(result.get("duration_api_ms"))
    dead = reasons.unreachable(text)
    if dead is not None:
        return dead
    if reasons.names_credentials(text) or (not answered and status is None):
        return reasons.no_credentials(text, _KEY_VARIABLE)
    if status is not None:
        failure = reasons.api_failure(status, kind, _HINT)
        failure.retryable = status == 429 or 500 <= status <= 599
        return failure
    if result.get("subtype") == "error_max_turns":
        return reasons.turn_limit(max_turns)
    # Older CLIs: the run's only assistant output is a synthetic API-error message.
    assistants = [e for e in events if e.get("type") == "assistant"]
    synthetic = bool(assistants) and all(e.get("is_api_error_message") is True for e in assistants)
    if result.get("terminal_reason") in _API_FAILURE_REASONS or synthetic:
        failure = reasons.api_failure(None, kind, _HINT)
        failure.retryable = False  # no status: nothing says a rerun would be answered
        return failure
    subtype = result.get("subtype")
    label = subtype if isinstance(subtype, str) and _SUBTYPE.fullmatch(subtype) else "unnamed"
    return RunnerError(
        f"Claude Code ended with an error result ({label}); the run says nothing about the skill"
    )


parse_stream = parse_lines  # stream-json stdout: one event per line
