"""Reading a GitHub Copilot CLI run: its ``--output-format json`` event stream and its session
records, as the tool calls the shared loading rules (:mod:`.proof`) judge, plus the answer, the
usage, the ``result`` line and the error the CLI reported.

A transcript the runner saves is the JSONL stream (``session.skills_loaded``,
``assistant.message``, ``tool.execution_start``, ``tool.execution_complete``, ``session.error``,
``result``, …), then a ``{"type": "skill_evals_session"}`` line followed by the session's
``~/.copilot/session-state/<id>/events.jsonl``. The session records matter: the ``skill`` tool's
result says only "loaded successfully", while the session's ``skill.invoked`` event holds the
body Copilot put in front of the model. A raw stream or a raw session file is understood too
(records seen twice, by their ``toolCallId``, count once).

What the rules get from here (docs/agents/copilot.md):

- every tool call, ordered by its place in the model's reply (``assistant.message``
  ``toolRequests``), not by when it finished; its result = the text the model was shown;
  ``ok`` = ``success`` and, for a shell command, exit code 0 (a failed ``cat`` of a missing file
  is a failed read);
- Copilot's native skill tool: ``skill`` naming ``arguments.skill``, a load only when the
  session's ``skill.invoked`` for that name holds content (its result is then that content);
  without session records the call is only ``attempted``;
- a ``skill.invoked`` no ``skill`` call accounts for as a message the CLI injected (prompt mode
  sends a ``/skill`` prompt as text: there is no explicit invocation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence import Event, Load, ToolCall
from .proof import INJECTED

AGENT = "copilot"
SESSION_MARKER = "skill_evals_session"  # the session records follow this line
SKILL_TOOL = "skill"


@dataclass
class _Call:
    name: str
    args: Mapping[str, Any]
    order: tuple[int, int]  # (line of the model's reply, position in it)
    done: int | None = None
    success: bool = False
    exit_code: int | None = None  # a shell command's
    shown: str = ""


@dataclass
class Transcript:
    """A Copilot CLI run, indexed by transcript line (index = line number − 1)."""

    calls: dict[str, _Call] = field(default_factory=dict)
    invoked: dict[str, tuple[int, str, str]] = field(
        default_factory=dict
    )  # name → line, body, trigger
    # Top-level assistant text and tool-event lines, each (line, text or "", from the session
    # records): the answer is read from the stream when it has one.
    messages: list[tuple[int, str, bool]] = field(default_factory=list)
    tool_lines: list[tuple[int, bool]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # the last session.error
    turns: dict[bool, int] = field(default_factory=dict)  # from the session records or not
    tokens: dict[str, int] = field(default_factory=dict)
    sessions: bool = False  # the session records are part of the transcript
    offered: list[str] = field(default_factory=list)  # session.skills_loaded, enabled ones


def _data(event: Mapping[str, Any]) -> Mapping[str, Any]:
    data = event.get("data")
    return data if isinstance(data, Mapping) else {}


def _args(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _shown(data: Mapping[str, Any]) -> str:
    """What a completed call showed the model: its result's content, else its error message."""
    result, error = _args(data.get("result")), _args(data.get("error"))
    return _text(result.get("content")) or _text(error.get("message"))


def _tool_name(item: Mapping[str, Any]) -> str | None:
    """The tool's name; an MCP tool's as its server names it (Copilot calls it
    ``<server>-<tool>``)."""
    for key in ("mcpToolName", "name", "toolName"):
        if isinstance(item.get(key), str) and item[key]:
            return str(item[key])
    return None


def _requests(t: Transcript, data: Mapping[str, Any], line: int) -> None:
    requests = data.get("toolRequests")
    for position, item in enumerate(requests if isinstance(requests, list) else []):
        if isinstance(item, Mapping) and isinstance(item.get("toolCallId"), str):
            name = _tool_name(item)
            if item["toolCallId"] not in t.calls and name is not None:
                call = _Call(name, _args(item.get("arguments")), (line, position))
                t.calls[item["toolCallId"]] = call


def _tool_event(
    t: Transcript, kind: str, data: Mapping[str, Any], line: int, session: bool
) -> None:
    call_id = data.get("toolCallId")
    if not isinstance(call_id, str):
        return
    t.tool_lines.append((line, session))
    call = t.calls.get(call_id)
    if kind == "tool.execution_start":
        name = _tool_name(data)
        if call is None and name is not None:
            t.calls[call_id] = _Call(name, _args(data.get("arguments")), (line, 0))
    elif call is not None and call.done is None:
        call.done, call.success = line, data.get("success") is True
        code = _args(data.get("shellExecution")).get("exitCode")
        call.exit_code = code if isinstance(code, int) else None
        call.shown = _shown(data)


def _usage(t: Transcript, data: Mapping[str, Any]) -> None:
    usage = _args(data.get("usage"))
    for key, name in (("inputTokens", "inputTokens"), ("outputTokens", "outputTokens")):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            t.tokens[name] = t.tokens.get(name, 0) + value


def _event(t: Transcript, event: Mapping[str, Any], line: int, session: bool) -> None:
    kind, data = event.get("type"), _data(event)
    if kind == "assistant.message":
        _requests(t, data, line)  # a sub-agent's calls too: their results reach a model
        if not data.get("parentToolCallId"):
            t.messages.append((line, _text(data.get("content")), session))
    elif kind in ("tool.execution_start", "tool.execution_complete"):
        _tool_event(t, kind, data, line, session)
    elif kind == "skill.invoked" and isinstance(data.get("name"), str):
        body = _text(data.get("content"))
        if body and data["name"] not in t.invoked:
            t.invoked[data["name"]] = (line, body, _text(data.get("trigger")))
    elif kind == "session.usage_record":
        _usage(t, data)
    elif kind == "session.error":
        t.error = dict(data)
    elif kind == "assistant.turn_start" and not data.get("parentToolCallId"):  # a sub-agent's
        t.turns[session] = t.turns.get(session, 0) + 1
    elif kind == "session.skills_loaded" and not t.offered:
        skills = data.get("skills")
        for item in skills if isinstance(skills, list) else []:
            if (
                isinstance(item, Mapping)
                and item.get("enabled")
                and isinstance(item.get("name"), str)
            ):
                t.offered.append(item["name"])
    elif kind == "result" and t.result is None:
        t.result = dict(event)


def read_transcript(events: Sequence[Mapping[str, Any]]) -> Transcript:
    """Index a transcript: the stream, then (after the marker line) the session records; a
    raw session file (``session.start`` first) is read as session records."""
    t = Transcript()
    session = False
    for line, event in enumerate(events):
        kind = event.get("type")
        if kind in (SESSION_MARKER, "session.start"):
            session = t.sessions = True
            continue
        _event(t, event, line, session)
    return t


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool call with what the model was shown, in the order the model made them; a
    ``skill`` call is complete only when its ``skill.invoked`` body is on record."""
    t = read_transcript(events)
    calls: list[ToolCall] = []
    claimed: set[str] = set()
    for call in t.calls.values():
        ok = call.success and call.exit_code in (None, 0)
        done, shown = call.done, call.shown
        name = _skill_name(call.name, call.args)
        if name is not None and call.success:
            invoked = t.invoked.get(name)
            if invoked is None:  # "loaded successfully", and nothing on record shows the body
                done = None
            else:
                done, shown = max(invoked[0], call.done or 0), invoked[1]
                claimed.add(name)
        calls.append(ToolCall(call.name, call.args, call.order, done, ok, shown))
    for name, (line, body, _trigger) in t.invoked.items():
        if name not in claimed:
            calls.append(ToolCall(INJECTED, {}, (line, -1), line, True, body))
    return sorted(calls, key=lambda c: c.order)


def _skill_name(tool: str, args: Mapping[str, Any]) -> str | None:
    name = args.get("skill")
    return name if tool == SKILL_TOOL and isinstance(name, str) and name else None


def skill_tool(call: ToolCall) -> str | None:
    """The skill a call of Copilot's ``skill`` tool names, else None."""
    return _skill_name(call.name, call.input)


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """None: Copilot's prompt mode sends a ``/skill`` prompt to the model as text; a body the
    CLI injects is proven by its ``skill.invoked`` record (see :func:`tool_calls`)."""
    return []


def final_text(t: Transcript) -> str:
    """The assistant's text after its last tool call (from the stream when it has any)."""
    session = not any(not from_session for _, _, from_session in t.messages)
    tools = [line for line, from_session in t.tool_lines if from_session == session]
    last_tool = tools[-1] if tools else -1
    texts = (text for line, text, s in t.messages if s == session and line > last_tool)
    return "\n".join(text for text in texts if text)


def usage_meta(t: Transcript) -> dict[str, float]:
    """Tokens from the session's usage records and the number of model turns."""
    meta: dict[str, float] = {name: float(value) for name, value in t.tokens.items()}
    turns = t.turns.get(False) or t.turns.get(True)
    if turns:
        meta["turns"] = turns
    return meta
