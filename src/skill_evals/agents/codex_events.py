"""Reading Codex's ``exec --json`` transcript: its tool calls (``command_execution``,
``file_change``, ``mcp_tool_call`` and ``web_search`` items, with what they showed the model),
``$skill`` mentions, how the turn ended (the answer, usage, and the reason of a ``turn.failed``)
and the model responses Codex recorded in its session file (appended by the runner after a
marker line). The loading rules themselves are the shared ones of :mod:`.proof`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from . import reasons
from .base import RunnerError
from .evidence import MAX_TRANSCRIPT_BYTES, Event, Load, ToolCall, parse_lines

AGENT = "codex"
ENV_BASE_URL = "OPENAI_BASE_URL"
# The item types that are tool calls (the others are messages, reasoning, plans, errors).
TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")
# The session file's per-response usage records follow this line in a runner's transcript.
SESSION_MARKER = "skill_evals_session"
_USAGE_RECORD = b'"type":"token_usage_record"'
_RESPONSE_ITEM = b'"type":"response_item"'
_FUNCTION_CALL = b'"type":"function_call"'
MAX_CHANGES = 100  # paths reported per file_change item (one apply_patch may touch many)

# ------------------------------------------------------------------------------------ evidence

# `$name` anywhere in the prompt: Codex puts that skill's body in front of the model without
# recording an event, so the prompt itself is the evidence.
_DOLLAR_MENTION = re.compile(r"(?<![\w$])\$(?P<name>[A-Za-z0-9][A-Za-z0-9_-]{0,127})")


def _texts(value: Any, depth: int = 0) -> list[str]:
    """Every string inside an MCP result (content blocks, resource contents, structured data)."""
    if isinstance(value, str):
        return [value]
    if depth > 6:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _texts(item, depth + 1)]


def _call(item: Mapping[str, Any], order: tuple[int, int], index: int) -> ToolCall | None:
    kind = item.get("type")
    completed = item.get("status") == "completed"
    if kind == "command_execution":
        command = item.get("command")
        output = item.get("aggregated_output")
        return ToolCall(
            "command_execution",
            {"command": command if isinstance(command, str) else ""},
            order,
            index,
            completed and item.get("exit_code") == 0,
            output if isinstance(output, str) else "",
        )
    if kind == "file_change":
        changes = item.get("changes")
        listed = [
            {"path": str(c.get("path", "")), "kind": str(c.get("kind", ""))}
            for c in (changes if isinstance(changes, list) else [])[:MAX_CHANGES]
            if isinstance(c, dict)
        ]
        return ToolCall("file_change", {"changes": listed}, order, index, completed, "")
    if kind == "web_search":
        query = item.get("query")
        shown = {"query": query if isinstance(query, str) else ""}
        return ToolCall(
            "web_search", shown, order, index, item.get("status", "completed") != "failed", ""
        )
    if kind == "mcp_tool_call":
        tool, args, result = item.get("tool"), item.get("arguments"), item.get("result")
        failed = bool(item.get("error")) or (
            isinstance(result, dict) and bool(result.get("is_error") or result.get("isError"))
        )
        return ToolCall(
            tool if isinstance(tool, str) else "",
            args if isinstance(args, dict) else {},
            order,
            index,
            completed and not failed,
            "\n".join(_texts(result)),
        )
    return None


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool item (:data:`TOOL_ITEMS`; a command's output and an MCP result are what the
    model saw), ordered by its ``item.started`` event; items that never completed have no
    result."""
    started: dict[str, tuple[int, Mapping[str, Any]]] = {}
    calls: dict[str, ToolCall] = {}
    for index, event in enumerate(events):
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") not in TOOL_ITEMS:
            continue
        item_id = str(item.get("id", index))
        if event.get("type") == "item.started":
            started.setdefault(item_id, (index, item))
        elif event.get("type") == "item.completed" and item_id not in calls:
            at = started.get(item_id, (index, item))[0]
            call = _call(item, (at, 0), index)
            if call is not None:
                calls[item_id] = call
    for item_id, (at, item) in started.items():
        if item_id not in calls:
            call = _call(item, (at, 0), at)
            if call is not None:
                calls[item_id] = replace(call, done=None, ok=False, result="")
    return sorted(_model_order(list(calls.values()), events), key=lambda call: call.order)


def _commands(arguments: Any) -> list[str]:
    """The command texts a function call's JSON arguments hold (``exec_command``'s ``cmd``,
    the shell tool's ``command`` list)."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else {}
    except ValueError:
        return []
    value = args.get("cmd", args.get("command")) if isinstance(args, dict) else None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        value = value[-1]
    return [value, shlex.quote(value)] if isinstance(value, str) and value else []


def model_calls(events: Sequence[Event]) -> list[tuple[int, list[str]]]:
    """``(response, command texts)`` of each command the model asked for, in the order it
    asked, from the session file's ``function_call`` records after the marker line; a new
    response starts after each usage record."""
    found: list[tuple[int, list[str]]] = []
    response, marked = 0, False
    for event in events:
        kind = event.get("type")
        if kind == SESSION_MARKER:
            marked = True
        elif marked and kind == "token_usage_record":
            response += 1
        elif marked and kind == "response_item":
            payload = event.get("payload")
            if isinstance(payload, dict) and payload.get("type") == "function_call":
                found.append((response, _commands(payload.get("arguments"))))
    return found


def _model_order(calls: list[ToolCall], events: Sequence[Event]) -> list[ToolCall]:
    """Commands Codex ran in parallel, put in the order the model asked for them: ``exec
    --json`` reports them as they run, so each is matched to its ``function_call`` record and
    the calls of one response share the first one's line, ordered by their position."""
    commands = [c for c in calls if c.name == "command_execution"]
    matched: dict[int, tuple[int, int]] = {}  # id(call) -> (response, position)
    positions: dict[int, int] = {}
    for response, texts in model_calls(events):
        position = positions.get(response, 0)
        positions[response] = position + 1
        for call in commands:
            command = str(call.input.get("command", ""))
            if id(call) not in matched and any(text in command for text in texts):
                matched[id(call)] = (response, position)
                break
    first: dict[int, int] = {}
    for call in commands:
        if id(call) in matched:
            response = matched[id(call)][0]
            first[response] = min(first.get(response, call.order[0]), call.order[0])
    return [
        replace(call, order=(first[matched[id(call)][0]], matched[id(call)][1]))
        if id(call) in matched
        else call
        for call in calls
    ]


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """``$<skill>`` in the prompt for a skill the run offered (Codex injects its body)."""
    if prompt is None:
        return []
    names = dict.fromkeys(m.group("name") for m in _DOLLAR_MENTION.finditer(prompt))
    return [
        Load(name, "explicit", AGENT, "$ mention", 0, order=(0, 0))
        for name in names
        if name in available
    ]


# ------------------------------------------------------------------------------ session file

_MAX_LINE = 64 * 1024  # a usage record is about 1 KB; longer lines are something else
MAX_SESSION_FILES = 100  # one per thread; sub-agents are off, so normally exactly one


def _is_usage_record(line: bytes) -> bool:
    """A session-file line whose *top-level* ``type`` is ``token_usage_record`` (before the
    first nested object, so no text inside a payload can pass for one)."""
    return line.startswith(b"{") and _USAGE_RECORD in line[1:].split(b"{", 1)[0]


def _kept(line: bytes) -> bool:
    """A usage record, or a ``response_item`` that is a ``function_call`` (the model's own
    order of its calls), by the top-level keys before the payload."""
    if _is_usage_record(line):
        return True
    head, _, rest = line[1:].partition(b"{")
    return line.startswith(b"{") and _RESPONSE_ITEM in head and rest.startswith(_FUNCTION_CALL)


def _open_regular(path: Path) -> BinaryIO | None:
    """``path`` opened for reading when it is a regular file (never through a symlink, never a
    FIFO or device that could block or never end), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def session_records(codex_home: Path, limit: int = MAX_TRANSCRIPT_BYTES) -> bytes:
    """The marker line, the per-response usage records and the model's function calls of the
    session files Codex wrote under ``codex_home/sessions`` (``codex exec --json`` prints no
    event per model response, and its items in the order Codex ran them).
    Regular files only, at most :data:`MAX_SESSION_FILES` of them, at most ``limit`` bytes read
    in all and at most 64 KiB of any line."""
    out = [b"\n" + json.dumps({"type": SESSION_MARKER}).encode() + b"\n"]
    budget = limit
    paths = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))
    for path in paths[:MAX_SESSION_FILES]:
        fh = _open_regular(path)
        if fh is None:
            continue
        with fh:
            whole = True  # the previous read ended its line
            while budget > 0:
                try:
                    line = fh.readline(min(_MAX_LINE, budget))
                except OSError:
                    break  # unreadable: its turns are then not counted
                if not line:
                    break
                budget -= len(line)
                if whole and line.endswith(b"\n") and _kept(line):
                    out.append(line)
                whole = line.endswith(b"\n")
    return b"".join(out)


def model_turns(events: Sequence[Event]) -> int | None:
    """The number of model responses of the run's own thread, from the usage records after the
    session marker; None when the transcript has none (then no turns are reported)."""
    thread = next((e.get("thread_id") for e in events if e.get("type") == "thread.started"), None)
    responses: set[str] = set()
    marked = False
    for at, event in enumerate(events):
        kind = event.get("type")
        if kind == SESSION_MARKER:
            marked = True
        elif marked and kind == "token_usage_record":
            payload = event.get("payload")
            if isinstance(payload, dict) and (thread is None or payload.get("thread_id") == thread):
                response = payload.get("response_id")
                responses.add(response if isinstance(response, str) else f"#{at}")
    return len(responses) or None


# ------------------------------------------------------------------------------------- results


@dataclass
class TurnResult:
    """What one ``codex exec --json`` run reported."""

    output: str = ""
    exit_code: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    saw_turn: bool = False  # a turn.completed or turn.failed event was seen
    turn_failed: bool = False  # the last turn ended with turn.failed
    failure: str = ""  # that turn.failed event's error message (never shown to a user)


parse_events = parse_lines  # `exec --json` stdout: one event per line


def outcome_of(events: Sequence[Event]) -> TurnResult:
    """Final message, how the turn ended, and usage.

    ``exit_code`` is 0 when the last turn event is ``turn.completed``. Top-level ``error``
    events alone decide nothing: Codex also prints them for a retried stream ("Reconnecting…")
    that then completes. ``turn.failed`` sets ``turn_failed`` (the runner voids such a run)."""
    outcome = TurnResult()
    for event in events:
        kind = event.get("type")
        if kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                if isinstance(text, str):
                    outcome.output = text
        elif kind == "turn.completed":
            outcome.saw_turn = True
            outcome.turn_failed = False
            outcome.failure = ""
            usage = event.get("usage")
            if isinstance(usage, dict):
                outcome.input_tokens += _int(usage.get("input_tokens"))
                outcome.output_tokens += _int(usage.get("output_tokens"))
        elif kind == "turn.failed":
            outcome.saw_turn = outcome.turn_failed = True
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            outcome.failure = message if isinstance(message, str) else ""
    outcome.exit_code = 0 if outcome.saw_turn and not outcome.turn_failed else 1
    return outcome


_HINT = f"check CODEX_API_KEY / OPENAI_API_KEY, {ENV_BASE_URL} and --model"


def turn_failure(message: str) -> RunnerError:
    """The reason of a ``turn.failed``: Codex names the HTTP status ("unexpected status 401
    Unauthorized", "exceeded retry limit, last status: 429"; a 500 only as "We're currently
    experiencing high demand"), or quotes the API's error body (a refused request; its ``type``
    only is kept), or neither (no answer at all)."""
    dead = reasons.unreachable(message)
    if dead is not None:
        return dead
    if reasons.names_credentials(message):
        return reasons.no_credentials(message, "OPENAI_API_KEY (or CODEX_API_KEY)")
    status = reasons.status_in(message)
    if status is None and "experiencing high demand" in message[:500]:
        status = 500  # Codex words an HTTP 500 this way and names no status
    if status is not None:
        return reasons.api_failure(status, None, _HINT)
    try:
        body = json.loads(message[:10_000])
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        kind = error.get("type")
        label = f" ({kind})" if isinstance(kind, str) and kind.isidentifier() else ""
        return RunnerError(f"the model API refused the request{label}; {_HINT}"[:300])
    return reasons.api_failure(None, None, _HINT)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
