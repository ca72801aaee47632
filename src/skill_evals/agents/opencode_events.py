"""Reading ``opencode run --format json`` transcripts (docs/agents/opencode.md, "Evidence").

OpenCode prints one JSON object per line: ``step_start`` / ``step_finish`` around each model step
(``step_finish`` carries the finish ``reason``, ``tokens`` and ``cost``), ``text`` for each finished
text part, ``tool_use`` for each tool call once it has ended (``part.state.status`` ``completed``
with its ``output``, or ``error`` with the ``error`` shown to the model) and ``error`` when the
session failed (the model API after OpenCode's retries, a missing model). Only the main session
is printed: subagents' events never appear, so the runner turns the ``task`` tool off.

This module turns those events into the shared :class:`~.evidence.ToolCall` records (the loading
rules of :mod:`.proof` then decide what was loaded): OpenCode's ``skill`` tool is its native skill
tool (``state.input.name``); MCP tools of the runner's server ``skills`` are named
``skills_<tool>`` by OpenCode and are handed on without that prefix; the ``N: `` line numbers of
``read`` results are removed, so a result is the file's own text. An explicit invocation is a
prompt starting with ``/<skill>``, which the runner runs as ``opencode run --command <skill>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import reasons
from .evidence import Event, Load, ToolCall

AGENT = "opencode"
SKILL_TOOL = "skill"
MCP_SERVER = "skills"  # the MCP server the runner configures (its tools: skills_<tool>)
RETRY_CAP = "skill_evals.retry_cap"  # opencode_guard's marker events
ERROR_NAMES = "skill_evals.errors"
# OpenCode's read tool prefixes every line of a file with its number: ``12: text``.
_READ_LINE_NUMBER = re.compile(r"(?m)^\d+: ")
_ERROR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_COMMAND = re.compile(r"/(?P<name>[A-Za-z0-9][A-Za-z0-9_-]*)(?=\s|$)")


def _part(event: Event) -> Mapping[str, Any]:
    part = event.get("part")
    return part if isinstance(part, Mapping) else {}


def _call_of(line: int, part: Mapping[str, Any]) -> ToolCall | None:
    tool, state = part.get("tool"), part.get("state")
    if not isinstance(tool, str) or not isinstance(state, Mapping):
        return None
    status = state.get("status")
    if status not in ("completed", "error"):
        return None
    raw_input = state.get("input")
    result = state.get("output") if status == "completed" else state.get("error")
    text = result if isinstance(result, str) else ""
    if tool == "read":
        text = _READ_LINE_NUMBER.sub("", text)
    prefix = f"{MCP_SERVER}_"
    name = tool[len(prefix) :] if tool.startswith(prefix) and len(tool) > len(prefix) else tool
    # A command that exited non-zero is "completed" for OpenCode, an error for the rules (`cat`
    # of a missing SKILL.md is `failed`, never `unverified`): its exit is in the metadata.
    metadata = state.get("metadata")
    exit_code = metadata.get("exit") if isinstance(metadata, Mapping) else None
    exited_non_zero = isinstance(exit_code, int) and exit_code != 0
    return ToolCall(
        name=name,
        input=raw_input if isinstance(raw_input, Mapping) else {},
        order=(line, 0),
        done=line,
        ok=status == "completed" and not exited_non_zero,
        result=text,
    )


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every ended tool call, in the order the model made them: OpenCode prints a step's calls as
    they finish, so within a step they are ordered by their part id (OpenCode's ids ascend in
    creation order); ``order`` is (line of the step's start, position in the step)."""
    calls: list[ToolCall] = []
    step: list[tuple[str, ToolCall]] = []
    start = -1

    def flush() -> None:
        for position, (_, call) in enumerate(sorted(step, key=lambda item: item[0])):
            at = start if start >= 0 else (call.done or 0)
            calls.append(ToolCall(call.name, call.input, (at, position), call.done, call.ok,
                                  call.result))  # fmt: skip
        step.clear()

    for line, event in enumerate(events):
        kind = event.get("type")
        if kind == "step_start":
            flush()
            start = line
        elif kind == "tool_use":
            part = _part(event)
            call = _call_of(line, part)
            if call is not None:
                part_id = part.get("id")
                step.append((part_id if isinstance(part_id, str) else "", call))
    flush()
    return calls


def skill_tool(call: ToolCall) -> str | None:
    """The skill a call of OpenCode's ``skill`` tool names, else None."""
    if call.name != SKILL_TOOL:
        return None
    name = call.input.get("name")
    return name if isinstance(name, str) and name else None


def explicit_command(prompt: str, available: frozenset[str]) -> tuple[str, str] | None:
    """``(skill, arguments)`` when the prompt starts with ``/<skill>`` naming an available skill:
    OpenCode's own syntax for invoking a skill (its TUI runs it as a command, which
    ``opencode run --command`` does headless)."""
    match = _COMMAND.match(prompt)
    if match is None or match.group("name") not in available:
        return None
    return match.group("name"), prompt[match.end() :].strip()


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """The explicit load of a ``/<skill>`` prompt, once OpenCode started a model step on it (the
    command put the skill's body in front of the model). A saved transcript (``prompt`` None)
    does not show the prompt, so it has none."""
    command = explicit_command(prompt, available) if prompt is not None else None
    started = next((i for i, e in enumerate(events) if e.get("type") == "step_start"), None)
    if command is None or started is None:
        return []
    name = command[0]
    return [Load(name, "explicit", AGENT, f"/{name} command", started, order=(-1, 0))]


# ------------------------------------------------------------------------------------- the run


@dataclass
class Summary:
    """What a transcript says about the run besides the loads."""

    steps: int = 0  # model steps (step_start events)
    output: str = ""  # the text of the last step that had text
    finish: str | None = None  # the last step_finish reason ("stop", "tool-calls", "length", …)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    usage: bool = False  # some step reported tokens
    error: Mapping[str, Any] | None = None  # the last ``error`` event's error
    retry_cap: Mapping[str, Any] | None = None  # opencode_guard's marker
    error_names: list[str] = field(default_factory=list)  # errors OpenCode logged (names only)
    texts: list[str] = field(default_factory=list)  # text parts of the last step


def _number(value: object) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else 0.0  # type: ignore[arg-type]


def summarize(events: Sequence[Event]) -> Summary:
    """The final answer, how the last step ended, usage sums and errors."""
    run = Summary()
    last: list[str] = []  # the text parts of the last step that had text
    for event in events:
        kind = event.get("type")
        part = _part(event)
        if kind == "step_start":
            run.steps += 1
            if run.texts:
                last = run.texts
            run.texts = []
        elif kind == "text" and isinstance(part.get("text"), str):
            run.texts.append(part["text"])
        elif kind == "step_finish":
            reason = part.get("reason")
            run.finish = reason if isinstance(reason, str) else None
            _add_usage(run, part)
        elif kind == "error" and isinstance(event.get("error"), Mapping):
            run.error = event["error"]
        elif kind == RETRY_CAP:
            run.retry_cap = event
        elif kind == ERROR_NAMES and isinstance(event.get("names"), list):
            names = [n for n in event["names"][:10] if isinstance(n, str)]
            run.error_names = [n for n in names if _ERROR_NAME.fullmatch(n)]
    run.output = "".join(run.texts or last)
    return run


def _add_usage(run: Summary, part: Mapping[str, Any]) -> None:
    tokens = part.get("tokens")
    if isinstance(tokens, Mapping):
        run.usage = True
        cache = tokens.get("cache")
        cache = cache if isinstance(cache, Mapping) else {}
        run.input_tokens += int(
            _number(tokens.get("input")) + _number(cache.get("read")) + _number(cache.get("write"))
        )
        run.output_tokens += int(_number(tokens.get("output")) + _number(tokens.get("reasoning")))
    run.cost += _number(part.get("cost"))


def failure(error: Mapping[str, Any], logged: Sequence[str] = ()) -> tuple[str, bool]:
    """``(reason, retryable)`` for an ``error`` event: the HTTP status when OpenCode reports one,
    else OpenCode's error name (an identifier; never the message, which quotes the provider);
    ``logged``: the error names OpenCode logged, which say more than its ``UnknownError``."""
    data = error.get("data")
    data = data if isinstance(data, Mapping) else {}
    for text in (data.get("message"), data.get("responseBody")):
        dead = reasons.unreachable(text) if isinstance(text, str) else None
        if dead is not None:
            return str(dead), dead.retryable
    status = data.get("statusCode")
    if isinstance(status, int) and not isinstance(status, bool):
        if status in (401, 403):
            return f"auth refused (HTTP {status}); check the provider's key variable", False
        if status == 429:
            return "rate limited (HTTP 429)", True
        if status == 529:
            return "overloaded (HTTP 529)", True
        if status >= 500:
            return f"server error (HTTP {status})", True
        return f"model request refused (HTTP {status}); check --model and the provider", False
    name = error.get("name")
    label = name if isinstance(name, str) and _ERROR_NAME.fullmatch(name) else "an unnamed error"
    said = data.get("message")
    said = said if isinstance(said, str) else ""
    if label == "ProviderAuthError" or reasons.names_credentials(said):
        return str(reasons.no_credentials(said or label, "the provider's key variable")), False
    if "ProviderModelNotFoundError" in logged:
        return (
            "model not found (ProviderModelNotFoundError): check --model provider/model, the "
            "provider's key variable (a provider without credentials is not loaded) and "
            "--provider-config",
            False,
        )
    extra = f"; logged: {', '.join(logged[:3])}" if logged else ""
    return f"OpenCode failed ({label}{extra})", False
