"""Reading a Gemini CLI run: its ``--output-format stream-json`` events and its chat session
records, as the tool calls the shared loading rules (:mod:`.proof`) judge, plus the final
answer, the usage and the ``result`` event.

A transcript the runner saves is the stream-json event stream (``init``, ``message``,
``tool_use``, ``tool_result``, ``error``, ``result``), then a ``{"type": "skill_evals_session"}``
line followed by the run's chat session file (``~/.gemini/tmp/<project>/chats/session-*.jsonl``).
The session records matter: a ``tool_result`` event carries only what the CLI *displays* (empty
for ``read_file``), while the records hold the ``functionResponse`` parts the model was really
sent, and the user turn as the model saw it — with the project's ``GEMINI.md`` and the files
``@path`` mentions attach. A raw stream-json file or a raw session file is understood too.

What the rules get from here (docs/agents/gemini.md):

- every tool call, ordered by the stream line that announced it, its result = the
  ``functionResponse`` text the model was sent (the displayed output when the session records
  are missing), ``ok`` = ``status: "success"``; MCP tools with their ``mcp_<server>_`` prefix
  removed (``mcp_skills_load_x_skill`` → ``load_x_skill``);
- Gemini CLI's native skill tool: ``activate_skill`` naming ``parameters.name``;
- the text the CLI itself put in the user turn (session context with ``GEMINI.md``, the contents
  of ``@`` mentions) as an injected message; the prompt's own text is not;
- explicit invocations: an ``@…/<skill>/SKILL.md`` mention of an available skill that the CLI
  expanded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evidence import Event, Load, ToolCall
from .proof import INJECTED

AGENT = "gemini"
SESSION_MARKER = "skill_evals_session"  # the session file's records follow this line
STREAM_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})
SKILL_TOOL = "activate_skill"
# How the CLI attaches an @-mentioned file to the user turn.
_ATTACHED = re.compile(r"^\s*Content from @(?P<path>\S+?):\s*$")
_MENTION = re.compile(r"(?:^|\s)@(?P<path>[^\s]+/(?P<name>[^/\s]+)/SKILL\.md)\b")
# The line run_shell_command adds to what the model is sent when a command exits non-zero.
_EXIT_CODE = re.compile(r"^Exit Code: (?P<code>-?\d+)$", re.M)
SHELL_TOOL = "run_shell_command"


@dataclass
class _Call:
    name: str
    args: Mapping[str, Any]
    line: int  # where the call was announced (its order)
    position: int  # its place among the calls of that line (session records hold several)
    status: str | None = None  # "success" | "error" once completed
    done: int | None = None
    display: str = ""  # what the CLI displayed (stream)
    sent: list[str] = field(default_factory=list)  # what the model was sent (session records)


@dataclass
class Transcript:
    """A Gemini CLI run, indexed by transcript line (index = line number − 1)."""

    calls: dict[str, _Call] = field(default_factory=dict)
    prompt: str | None = None  # the user's message as the stream recorded it
    prompt_line: int | None = None
    # The user turns the model was sent: (line, the prompt's own text, every other text part).
    user_turns: list[tuple[int, list[str]]] = field(default_factory=list)
    assistant: list[tuple[int, str]] = field(default_factory=list)  # stream text deltas
    tool_lines: list[int] = field(default_factory=list)  # stream tool_use/tool_result lines
    result: dict[str, Any] | None = None
    model_turns: set[str] = field(default_factory=set)  # ids of the model's session records


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _args(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _stream_event(t: Transcript, event: Mapping[str, Any], line: int) -> None:
    kind = event.get("type")
    tool_id = event.get("tool_id")
    if kind == "tool_use" and isinstance(tool_id, str) and isinstance(event.get("tool_name"), str):
        if tool_id not in t.calls:
            t.calls[tool_id] = _Call(event["tool_name"], _args(event.get("parameters")), line, 0)
        t.tool_lines.append(line)
    elif kind == "tool_result" and isinstance(tool_id, str):
        call = t.calls.get(tool_id)
        if call is not None and call.status is None:
            call.status, call.done = _text(event.get("status")), line
            call.display = _text(event.get("output"))
        t.tool_lines.append(line)
    elif kind == "message" and event.get("role") == "assistant":
        t.assistant.append((line, _text(event.get("content"))))
    elif kind == "message" and event.get("role") == "user" and t.prompt is None:
        t.prompt, t.prompt_line = _text(event.get("content")), line
    elif kind == "result":
        t.result = dict(event)


def _response(part: Any) -> tuple[str | None, str]:
    """``(call id, text)`` of a ``functionResponse`` part (its output, else its error)."""
    response = part.get("functionResponse") if isinstance(part, Mapping) else None
    if not isinstance(response, Mapping):
        return None, ""
    body = _args(response.get("response"))
    text = body.get("output", body.get("error", ""))
    call_id = response.get("id")
    return (call_id if isinstance(call_id, str) else None), (
        text if isinstance(text, str) else json.dumps(text)
    )


def _user_record(t: Transcript, record: Mapping[str, Any], line: int) -> None:
    content = record.get("content")
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        call_id, sent = _response(part)
        if call_id is not None:
            if call_id in t.calls:
                t.calls[call_id].sent.append(sent)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    if isinstance(content, str):
        texts.append(content)
    if texts:
        t.user_turns.append((line, texts))


def _model_record(t: Transcript, record: Mapping[str, Any], line: int) -> None:
    if isinstance(record.get("id"), str):
        t.model_turns.add(record["id"])
    items = record.get("toolCalls")
    for position, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        call = t.calls.get(item["id"])
        if call is None:
            if not isinstance(item.get("name"), str):
                continue
            call = _Call(item["name"], _args(item.get("args")), line, position)
            t.calls[item["id"]] = call
        if call.status is None and item.get("status") in ("success", "error"):
            call.status, call.done = item["status"], line
        results = item.get("result")
        if not call.sent and isinstance(results, list):
            call.sent = [_response(part)[1] for part in results]


def _session_record(t: Transcript, record: Mapping[str, Any], line: int) -> None:
    kind = record.get("type")
    if kind == "user":
        _user_record(t, record, line)
    elif kind == "gemini":
        _model_record(t, record, line)
    update = record.get("$set")
    messages = update.get("messages") if isinstance(update, Mapping) else None
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping) and message.get("type") in ("user", "gemini"):
            _session_record(t, message, line)


def read_transcript(events: Sequence[Mapping[str, Any]]) -> Transcript:
    """Index a transcript: stream-json events, then (after the marker line) session records; a
    raw session file's records are recognised by their shape without the marker."""
    t = Transcript()
    in_session = False
    for line, event in enumerate(events):
        kind = event.get("type")
        if kind == SESSION_MARKER:
            in_session = True
        elif kind in ("user", "gemini") or "$set" in event:
            _session_record(t, event, line)
        elif kind in STREAM_TYPES and not in_session:
            _stream_event(t, event, line)
    return t


def _tool_name(name: str) -> str:
    """Gemini names MCP tools ``mcp_<server>_<tool>`` (the server ends at the first ``_``)."""
    if name.startswith("mcp_"):
        _, sep, tool = name[len("mcp_") :].partition("_")
        if sep and tool:
            return tool
    return name


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool call with what the model was shown, in the order the model made them, and the
    text the CLI put in the user turns (context, attached files) as injected messages."""
    t = read_transcript(events)
    calls: list[ToolCall] = []
    for call in t.calls.values():
        shown = "\n".join(call.sent) if call.sent else call.display
        done = call.done if call.status is not None else None
        ok = call.status == "success" and not _exited_non_zero(call.name, shown)
        calls.append(ToolCall(_tool_name(call.name), call.args, (call.line, call.position),
                              done, ok, shown))  # fmt: skip
    for line, texts in t.user_turns:
        added = [text for text in texts if text != t.prompt]
        if added:
            # The CLI sends these before the model's first turn: order them with the prompt.
            at = t.prompt_line if t.prompt_line is not None else line
            calls.append(ToolCall(INJECTED, {}, (at, -1), line, True, "\n".join(added)))
    return sorted(calls, key=lambda c: c.order)


def _exited_non_zero(tool: str, shown: str) -> bool:
    """A shell command that exited non-zero: Gemini CLI reports it as a success whose text ends
    with ``Exit Code: N``; like a failed read elsewhere, it is an error (``cat`` of a missing
    SKILL.md is ``failed``, never ``unverified``)."""
    if tool != SHELL_TOOL:
        return False
    codes = _EXIT_CODE.findall(shown)
    return bool(codes) and codes[-1] != "0"


def skill_tool(call: ToolCall) -> str | None:
    """The skill a call of ``activate_skill`` names, else None."""
    if call.name != SKILL_TOOL:
        return None
    name = call.input.get("name")
    return name if isinstance(name, str) and name else None


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """``@…/<skill>/SKILL.md`` mentions of an available skill in the prompt: loaded when the CLI
    attached that file to the user turn (``Content from @<path>:`` and some content), failed
    when it did not (a missing file)."""
    t = read_transcript(events)
    text = prompt if prompt is not None else t.prompt
    if not text:
        return []
    attached: dict[str, int] = {}
    for line, texts in t.user_turns:
        for i, part in enumerate(texts[:-1]):
            match = _ATTACHED.match(part)
            if match and texts[i + 1].strip():
                attached.setdefault(match["path"], line)
    at = t.prompt_line if t.prompt_line is not None else 0
    loads: list[Load] = []
    for match in _MENTION.finditer(text):
        name = match["name"]
        if name not in available:
            continue
        done = attached.get(match["path"])
        if done is not None:
            loads.append(Load(name, "explicit", AGENT, "@ mention", done, "loaded", (at, -2)))
        else:
            loads.append(Load(name, "explicit", AGENT, "@ mention", at, "failed", (at, -2)))
    return loads


# ------------------------------------------------------------------- answer, usage, the result


def final_text(t: Transcript) -> str:
    """The assistant's text after its last tool call (what ``--output-format json`` reports)."""
    last_tool = t.tool_lines[-1] if t.tool_lines else -1
    return "".join(text for line, text in t.assistant if line > last_tool)


def usage_meta(t: Transcript) -> dict[str, float]:
    """Tokens from the ``result`` event's stats (Gemini CLI reports no price) and the number of
    model turns from the session records."""
    meta: dict[str, float] = {}
    stats = t.result.get("stats") if t.result else None
    if isinstance(stats, Mapping):
        for key, name in (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens")):
            value = stats.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                meta[name] = value
    if t.model_turns:
        meta["turns"] = len(t.model_turns)
    return meta
