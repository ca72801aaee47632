"""Reading a Qwen Code run: its ``--output-format stream-json`` events (shaped like Claude
Code's: ``system``/``assistant``/``user``/``result``) and its chat log, as the tool calls the
shared loading rules (:mod:`.proof`) judge, plus the final answer, the usage and the failure.

A transcript the runner saves is the event stream, then (when the run stopped at the retry
cap) a ``{"type": "skill_evals.retry_cap", …}`` line, then a ``{"type": "skill_evals_chat"}``
line followed by the run's chat log (``~/.qwen/projects/<project>/chats/<session>.jsonl``). The
chat log matters: the stream's ``tool_result`` of the ``skill`` tool shows only the skill's
description, while the chat log's ``functionResponse`` holds what the model was really sent
(the skill's body), and its ``user`` records hold a ``/<skill>`` prompt as Qwen Code expanded it.
A raw stream-json file is understood too (then what the stream shows is what counts).

What the rules get from here (docs/agents/qwen.md):

- every tool call, ordered by the stream line and the position the model made it in, its result
  = the chat log's ``functionResponse`` (``output``, else ``error``), else the stream's
  ``tool_result`` content; ``ok`` = no ``is_error`` and, for the ``skill`` tool when the chat log
  is there, a non-empty ``output`` in it (the body reached the model);
- the native skill tool: ``skill`` naming ``input.skill`` (a leading ``/`` and an extension's
  ``<extension>:`` prefix removed); a deferred tool called through ``tool_call`` (MCP tools:
  ``mcp__<server>__<tool>``) as a call of that tool;
- text Qwen Code put in a user turn itself (a ``/<skill>`` expansion) as an injected message;
- explicit invocations: a prompt ``/<skill> …`` that Qwen Code expanded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence import Event, Load, ToolCall
from .proof import INJECTED

AGENT = "qwen"
CHAT_MARKER = "skill_evals_chat"  # the chat log's records follow this line
RETRY_CAP = "skill_evals.retry_cap"  # written by qwen_guard.py
SKILL_TOOL = "skill"
BRIDGE = "tool_call"  # Qwen Code's bridge to its deferred tools (MCP tools among them)
_EXPANSION = re.compile(r"\s*Base directory for this skill: (?P<dir>[^\n]+)\n")
_SLASH = re.compile(r"\s*/(?P<name>[A-Za-z0-9][A-Za-z0-9._:-]*)(?:\s|$)")


@dataclass
class _Call:
    name: str
    args: Mapping[str, Any]
    order: tuple[int, int]  # (stream line, position in the model's message)
    done: int | None = None
    error: bool = False
    shown: str = ""  # the stream's tool_result content
    sent: str | None = None  # the chat log's functionResponse (what the model was sent)
    sent_error: bool = False


@dataclass
class Transcript:
    """A Qwen Code run, indexed by transcript line (index = line number − 1)."""

    calls: dict[str, _Call] = field(default_factory=dict)
    chat: bool = False  # the chat log follows the stream
    chat_records: int = 0  # how many records it holds
    user_turns: list[tuple[int, str]] = field(default_factory=list)  # chat log user texts
    result: dict[str, Any] | None = None
    retry_cap: dict[str, Any] | None = None
    assistant_ids: set[str] = field(default_factory=set)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content blocks
        return "\n".join(
            str(b.get("text", "")) for b in value if isinstance(b, dict) and "text" in b
        )
    return ""


def _blocks(event: Mapping[str, Any], key: str = "content") -> list[dict[str, Any]]:
    message = event.get("message")
    content = message.get(key) if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _stream_event(t: Transcript, event: Mapping[str, Any], line: int) -> None:
    kind = event.get("type")
    if kind == "assistant":
        message = event.get("message")
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            t.assistant_ids.add(message["id"])
        for slot, block in enumerate(_blocks(event)):
            call_id = block.get("id")
            if block.get("type") == "tool_use" and isinstance(call_id, str):
                args = block.get("input")
                name = block.get("name")
                t.calls.setdefault(call_id, _Call(name if isinstance(name, str) else "",
                                                  args if isinstance(args, dict) else {},
                                                  (line, slot)))  # fmt: skip
    elif kind == "user":
        for block in _blocks(event):
            call = t.calls.get(str(block.get("tool_use_id")))
            if block.get("type") == "tool_result" and call is not None and call.done is None:
                call.done, call.error = line, block.get("is_error") is True
                call.shown = _text(block.get("content"))
    elif kind == "result":
        t.result = dict(event)
    elif kind == RETRY_CAP:
        t.retry_cap = dict(event)


def _chat_record(t: Transcript, record: Mapping[str, Any], line: int) -> None:
    kind = record.get("type")
    parts = _blocks(record, "parts")
    if kind == "user":
        text = "".join(str(p.get("text", "")) for p in parts if isinstance(p.get("text"), str))
        t.user_turns.append((line, text))
    elif kind == "tool_result":
        for part in parts:
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            call = t.calls.get(str(response.get("id")))
            body = response.get("response")
            if call is None or not isinstance(body, dict):
                continue
            value = body.get("output", body.get("error", ""))
            call.sent = value if isinstance(value, str) else json.dumps(value)
            call.sent_error = "output" not in body


def read_transcript(events: Sequence[Mapping[str, Any]]) -> Transcript:
    """Index a transcript: stream-json events, then (after the marker line) chat log records."""
    t = Transcript()
    for line, event in enumerate(events):
        if event.get("type") == CHAT_MARKER:
            t.chat = True
        elif t.chat:
            t.chat_records += bool(event)
            _chat_record(t, event, line)
        else:
            _stream_event(t, event, line)
    return t


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool call with what the model was shown, in the order the model made them, and a
    user turn Qwen Code expanded itself (a ``/<skill>`` prompt) as an injected message."""
    t = read_transcript(events)
    calls: list[ToolCall] = []
    for call in t.calls.values():
        _unbridge(call)
        ok = call.done is not None and not call.error
        if t.chat and call.name == SKILL_TOOL:
            # The stream shows the description only: the body in the chat log confirms it.
            ok = ok and bool(call.sent and call.sent.strip()) and not call.sent_error
        shown = call.sent if call.sent is not None else call.shown
        calls.append(ToolCall(call.name, call.args, call.order, call.done, ok, shown))
    for line, text in t.user_turns:
        if _EXPANSION.match(text):
            calls.append(ToolCall(INJECTED, {}, (0, -1), line, True, text))
    return sorted(calls, key=lambda c: c.order)


def _unbridge(call: _Call) -> None:
    """A ``tool_call`` of a deferred tool (Qwen Code offers MCP tools that way) as a call of
    that tool: ``{"name": "mcp__skills__load_x_skill", "arguments": {…}}``."""
    name, arguments = call.args.get("name"), call.args.get("arguments")
    if call.name == BRIDGE and isinstance(name, str) and name:
        call.name, call.args = name, arguments if isinstance(arguments, dict) else {}


def skill_tool(call: ToolCall) -> str | None:
    """The skill a ``skill`` call names (a leading ``/`` and an ``<extension>:`` removed)."""
    skill = call.input.get("skill") if call.name == SKILL_TOOL else None
    if not isinstance(skill, str) or not skill.strip():
        return None
    return skill.strip().lstrip("/").rpartition(":")[2] or None


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """A prompt ``/<skill> …`` of an available skill that Qwen Code expanded: a user turn of the
    chat log starting ``Base directory for this skill: …/<skill>`` (``prompt`` None: a saved
    transcript, where that turn alone is the record)."""
    wanted = None
    if prompt is not None:
        match = _SLASH.match(prompt)
        if match is None:
            return []
        wanted = match["name"].rpartition(":")[2]
    for line, turn in read_transcript(events).user_turns:
        expanded = _EXPANSION.match(turn)
        name = expanded["dir"].rstrip("/").rpartition("/")[2] if expanded else None
        if name is not None and name in available and wanted in (None, name):
            return [Load(name, "explicit", AGENT, "slash command", line, "loaded", (0, -2))]
    return []
