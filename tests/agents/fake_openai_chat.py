"""A scripted OpenAI Chat Completions server on 127.0.0.1 for driving the real OpenCode CLI in tests
(streamed as server-sent events, the way ``@ai-sdk/openai-compatible`` reads them), and pi where
it speaks the same API (tests/agents/catalog_work.py: ``path_arg="path"``).

It is not a canned transcript: every reply is *decided from what the agent sends*, as a model
would decide:

* the skills it may load are the ones OpenCode listed in the request (the ``<available_skills>``
  block of the system prompt, or the ``skill`` tool's description) plus MCP tools named
  ``…load_<name>_skill``;
* it picks a skill when enough words of the user's prompt occur in that skill's description (or
  ``Behaviour.also_load`` names it) and loads it the way ``Behaviour.load_with`` says: the
  ``skill`` tool, the ``read`` tool on the listed location, ``cat`` through ``bash``, or a
  ``glob`` for the SKILL.md followed by a ``read`` of what the glob returned;
* ``Behaviour.first`` scripts tool calls made before that (exploring the workspace, probing a
  path), with ``{cwd}`` replaced by the working directory OpenCode announced;
* the final answer is derived from what the tool results really showed (the first instruction
  line of every skill body that came back), else a generic answer.

So a skill that leaks into a ``without`` run is listed, picked, loaded and reported — a real
isolation failure rather than a scripted one — and a skill that is not offered can never be
loaded by the ``skill`` tool. Run ``python tests/agents/fake_openai_chat.py`` to serve it by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import itertools
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.loopback import LoopbackServer

GENERIC_ANSWER = "I have no specific instructions for this, so here is a general answer."
TITLE = "Skill question"
STEPS_ANSWER = "Maximum steps reached; the task is not finished."
_STEPS_EXHAUSTED = "MAXIMUM STEPS REACHED"

_SKILL_BLOCK = re.compile(
    r"<skill>\s*<name>(?P<name>.*?)</name>\s*<description>(?P<description>.*?)</description>"
    r"\s*(?:<location>(?P<location>.*?)</location>\s*)?</skill>",
    re.S,
)
# OpenCode's "Working directory: …", pi's "Current working directory: …"
_WORKING_DIR = re.compile(r"^\s*(?:Current working|Working) directory: (?P<cwd>.+)$", re.M)
_MCP_TOOL = re.compile(r"(?:.*_)?load_(?P<name>[A-Za-z0-9_-]+)_skill")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and any are about can do does for from have how i in is it me my of on or our the this "
    "to use used what when where which who why with you your questions answer help please tell "
    "skill skills task tasks".split()
)
# What a tool result holding a skill body looks like: OpenCode's skill tool output, or a file
# that starts with YAML frontmatter (possibly behind the read tool's ``1: `` line prefixes).
_LINE_PREFIX = re.compile(r"^\s*\d+: ?", re.M)


@dataclass(frozen=True)
class Call:
    """One scripted tool call: the tool's name and its arguments (``{cwd}`` is replaced in every
    string argument)."""

    tool: str
    args: dict[str, Any]


@dataclass
class Behaviour:
    """What the scripted model does; tests set the knobs they need."""

    min_overlap: int = 2  # prompt/description words in common needed to pick a skill
    also_load: tuple[str, ...] = ()  # offered skills to load whatever the prompt
    load_with: str = "skill"  # "skill" | "read" | "bash" | "glob"
    first: tuple[Call, ...] = ()  # tool calls made (in parallel) before routing
    wrong_name: bool = False  # call the skill tool with a name that does not exist
    fail_status: int | None = None  # answer requests with this HTTP status (401, 429, 500, …)
    fail_times: int | None = None  # … only the first N requests (None: all of them)
    fail_prompt: str | None = None  # … only requests whose user prompt contains this
    loop_tools: bool = False  # never stop calling tools (an agent that hits its step limit)
    hang: bool = False  # never answer (until the server stops): a model that takes forever
    # Pick only the one offered skill sharing the most words with the prompt (the first listed
    # on a tie), as a model picks among a catalog of installed skills.
    best_only: bool = False
    # After loading, write the answer to this workspace file with the write tool, then answer.
    write_answer: str | None = None
    path_arg: str = "filePath"  # the read and write tools' path argument (pi: "path")


@dataclass(frozen=True)
class OfferedSkill:
    """A skill as the agent offered it in one request."""

    name: str
    description: str
    location: str = ""  # native: where OpenCode says the SKILL.md is ("<built-in>" for its own)
    mcp_tool: str | None = None  # mcp: the tool name as OpenCode sent it


@dataclass
class Conversation:
    """What one request contains, reduced to what the scripted model decides on."""

    system: str
    prompt: str
    cwd: str
    skills: list[OfferedSkill]
    steps: list[list[tuple[str, dict[str, Any], str]]]  # per tool step: (tool, args, result)
    title_request: bool
    steps_exhausted: bool  # OpenCode told the model its step budget is used up


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _text_of(content: Any) -> str:
    """The text of an OpenAI message ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def offered_skills(system: str, tools: list[dict[str, Any]]) -> list[OfferedSkill]:
    """Skills listed in the system prompt or the ``skill`` tool's description, then MCP skill
    loader tools; each name once."""
    texts = [system]
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == "skill":
            texts.append(str(function.get("description", "")))
    found: dict[str, OfferedSkill] = {}
    for text in texts:
        for m in _SKILL_BLOCK.finditer(text):
            name = html.unescape(m.group("name")).strip()
            found.setdefault(
                name,
                OfferedSkill(
                    name=name,
                    description=html.unescape(m.group("description")).strip(),
                    location=html.unescape(m.group("location") or "").strip(),
                ),
            )
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        tool_name = str(function.get("name", ""))
        match = _MCP_TOOL.fullmatch(tool_name)
        if match:
            name = match.group("name").replace("_", "-")
            found.setdefault(
                name,
                OfferedSkill(
                    name=name,
                    description=str(function.get("description", "")),
                    mcp_tool=tool_name,
                ),
            )
    return list(found.values())


def parse_request(body: dict[str, Any]) -> Conversation:
    """Reduce a chat-completions request to a Conversation."""
    system_parts: list[str] = []
    prompts: list[str] = []
    calls: list[list[tuple[str, dict[str, Any], str]]] = []  # per step: (tool, args, call id)
    results: dict[str, str] = {}
    for message in body.get("messages", []):
        role = message.get("role")
        if role in ("system", "developer"):
            system_parts.append(_text_of(message.get("content")))
        elif role == "user":
            prompts.append(_text_of(message.get("content")))
        elif role == "assistant" and message.get("tool_calls"):
            step = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    args = {}
                step.append((str(function.get("name", "")), args, str(call.get("id", ""))))
            calls.append(step)
        elif role == "tool":
            results[str(message.get("tool_call_id", ""))] = _text_of(message.get("content"))
    resolved = [[(t, a, results.get(i, "")) for t, a, i in step] for step in calls]
    system = "\n".join(system_parts)
    cwd = _WORKING_DIR.search(system)
    return Conversation(
        system=system,
        prompt=prompts[-1] if prompts else "",
        cwd=cwd.group("cwd").strip() if cwd else "",
        skills=offered_skills(system, body.get("tools") or []),
        steps=resolved,
        title_request=system.lstrip().startswith("You are a title generator"),
        steps_exhausted=any(
            _STEPS_EXHAUSTED in _text_of(m.get("content")) for m in body.get("messages", [])[-2:]
        ),
    )


def first_instruction(text: str) -> str | None:
    """The first prose line of a skill body in a tool result, else None (an error message, a
    directory listing, a path)."""
    text = _LINE_PREFIX.sub("", text) if re.match(r"\s*\d+: ", text) else text
    inside = re.search(r"<skill_content[^>]*>(?P<body>.*?)(?:</skill_content>|\Z)", text, re.S)
    if inside:
        text = inside.group("body")
    elif not re.search(r"^---\s*$", text, re.M):
        return None
    lines = text.splitlines()
    start = 0
    fences = [i for i, line in enumerate(lines) if line.strip() == "---"]
    if len(fences) >= 2:
        start = fences[1] + 1
    for line in lines[start:]:
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "<", "[", "Base directory", "Relative")):
            return stripped
    return None


def _choose(conv: Conversation, behaviour: Behaviour) -> list[OfferedSkill]:
    prompt_words = _words(conv.prompt)
    chosen = []
    for skill in conv.skills:
        overlap = len(prompt_words & _words(skill.description))
        if overlap >= behaviour.min_overlap or skill.name in behaviour.also_load:
            chosen.append(skill)
    if behaviour.best_only and chosen:
        return [max(chosen, key=lambda s: len(prompt_words & _words(s.description)))]
    return chosen


def _load_calls(skills: list[OfferedSkill], behaviour: Behaviour) -> list[Call]:
    calls = []
    for skill in skills:
        if skill.mcp_tool is not None:
            calls.append(Call(skill.mcp_tool, {}))
        elif behaviour.load_with == "skill" or not skill.location.endswith("SKILL.md"):
            name = f"{skill.name}-missing" if behaviour.wrong_name else skill.name
            calls.append(Call("skill", {"name": name}))
        elif behaviour.load_with == "read":
            calls.append(Call("read", {behaviour.path_arg: skill.location}))
        elif behaviour.load_with == "bash":
            calls.append(
                Call("bash", {"command": f"cat '{skill.location}'", "description": "Read skill"})
            )
        else:  # glob
            calls.append(Call("glob", {"pattern": f"**/{skill.name}/SKILL.md"}))
    return calls


def _glob_reads(results: list[str]) -> list[Call]:
    paths = [line.strip() for text in results for line in text.splitlines()]
    return [Call("read", {"filePath": p}) for p in paths if p.endswith("/SKILL.md")]


def _format(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace("{cwd}", cwd)
    if isinstance(value, dict):
        return {k: _format(v, cwd) for k, v in value.items()}
    return value


def decide(conv: Conversation, behaviour: Behaviour) -> list[Call] | str:
    """The next step: tool calls, or the final answer text."""
    if conv.title_request:
        return TITLE
    if behaviour.loop_tools:
        if conv.steps_exhausted:  # a real model obeys OpenCode's "respond with text only"
            return STEPS_ANSWER
        return [Call("glob", {"pattern": f"*.step{len(conv.steps)}"})]
    plan: list[list[Call]] = []
    if behaviour.first:
        plan.append([Call(c.tool, _format(c.args, conv.cwd)) for c in behaviour.first])
    chosen = _choose(conv, behaviour)
    if chosen:
        plan.append(_load_calls(chosen, behaviour))
        if behaviour.load_with == "glob" and len(conv.steps) >= len(plan):
            reads = _glob_reads([result for _, _, result in conv.steps[len(plan) - 1]])
            if reads:
                plan.append(reads)
    if len(conv.steps) < len(plan):
        return plan[len(conv.steps)]
    if behaviour.write_answer and len(conv.steps) == len(plan):
        path = f"{conv.cwd}/{behaviour.write_answer}"
        return [Call("write", {behaviour.path_arg: path, "content": _answer(conv)})]
    return _answer(conv)


def _answer(conv: Conversation) -> str:
    """The final answer: from the skill bodies the tool results showed, else generic."""
    answers = []
    for step in conv.steps:
        for tool, args, result in step:
            instruction = first_instruction(result)
            if instruction is not None:
                name = args.get("name") if tool == "skill" else None
                answers.append(f"Following the {name or 'skill'} instructions: {instruction}")
    return " ".join(dict.fromkeys(answers)) if answers else GENERIC_ANSWER


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_chunks(
    reply: list[Call] | str, model: str, call_ids: itertools.count[int], input_tokens: int
) -> list[dict[str, Any]]:
    """The SSE chunks of a reply as OpenAI streams them (arguments and text split over two
    deltas, usage in a last chunk without choices)."""
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    if isinstance(reply, list):
        for index, call in enumerate(reply):
            args = json.dumps(call.args)
            head = {
                "index": index,
                "id": f"call_{next(call_ids)}",
                "type": "function",
                "function": {"name": call.tool, "arguments": args[: len(args) // 2]},
            }
            chunks.append(_chunk(model, {"tool_calls": [head]}))
            rest = {"index": index, "function": {"arguments": args[len(args) // 2 :]}}
            chunks.append(_chunk(model, {"tool_calls": [rest]}))
        chunks.append(_chunk(model, {}, "tool_calls"))
    else:
        half = len(reply) // 2
        chunks.append(_chunk(model, {"content": reply[:half]}))
        chunks.append(_chunk(model, {"content": reply[half:]}))
        chunks.append(_chunk(model, {}, "stop"))
    usage = {"prompt_tokens": input_tokens, "completion_tokens": 10}
    usage["total_tokens"] = input_tokens + 10
    chunks.append({**_chunk(model, {}), "choices": [], "usage": usage})
    return chunks


class FakeChat(LoopbackServer):
    """The server: ``with FakeChat(Behaviour(...)) as model: model.base_url`` (…/v1). Every
    request body is kept in ``requests`` and each Authorization header in ``credentials``."""

    def __init__(self, behaviour: Behaviour | None = None, port: int = 0) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.credentials: list[str] = []
        self._lock = threading.Lock()
        self._call_ids = itertools.count(1)
        self._failures = 0
        super().__init__(self._handler(), port)

    def conversations(self) -> list[Conversation]:
        """Every request received so far, parsed (title requests left out)."""
        with self._lock:
            parsed = [parse_request(body) for body in self.requests]
        return [conv for conv in parsed if not conv.title_request]

    def offered_names(self) -> set[str]:
        """Every skill name any (non-title) request offered the model."""
        return {skill.name for conv in self.conversations() for skill in conv.skills}

    def _should_fail(self, body: dict[str, Any]) -> int | None:
        status = self.behaviour.fail_status
        if status is None:
            return None
        wanted = self.behaviour.fail_prompt
        if wanted is not None and wanted not in parse_request(body).prompt:
            return None
        with self._lock:
            limit = self.behaviour.fail_times
            if limit is not None and self._failures >= limit:
                return None
            self._failures += 1
        return status

    def _respond(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            reply = decide(parse_request(body), self.behaviour)
            tokens = len(json.dumps(body)) // 4
            return stream_chunks(reply, str(body.get("model", "")), self._call_ids, tokens)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404, "only /v1/chat/completions is scripted")
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self.send_error(400, "request body is not JSON")
                    return
                with owner._lock:
                    owner.credentials.append(self.headers.get("Authorization") or "")
                status = owner._should_fail(body)
                if status is not None:
                    with owner._lock:
                        owner.requests.append(body)
                    error = {"error": {"message": f"scripted HTTP {status}", "type": "scripted"}}
                    data = json.dumps(error).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                chunks = owner._respond(body)
                if owner.behaviour.hang:
                    owner._release.wait()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:
                self.send_error(404, "nothing to GET here")

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output quiet

        return Handler


def main() -> None:
    """Serve until interrupted (manual experiments)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--load-with", default="skill", choices=["skill", "read", "bash", "glob"])
    parser.add_argument("--fail-status", type=int, default=None)
    ns = parser.parse_args()
    behaviour = Behaviour(load_with=ns.load_with, fail_status=ns.fail_status)
    with FakeChat(behaviour, ns.port) as model:
        print(model.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
