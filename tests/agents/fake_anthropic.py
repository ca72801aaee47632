"""A scripted stand-in for the Anthropic Messages API, to drive the real Claude Code CLI in tests.

It listens on 127.0.0.1 only (stdlib ``http.server``, one thread per connection) and answers
``POST /v1/messages`` the way Claude Code asks for it (server-sent events when ``stream`` is set).
It is *not* a canned transcript: every answer is decided from what the agent sent, the way a
model would:

1. The skills the request offers are read from the request itself: the Skill tool's listing
   (``- name: description`` lines after "skills are available") when a ``Skill`` tool is
   present, and MCP tools named ``mcp__<server>__load_<name>_skill`` (their description).
2. If enough content words of the user's prompt occur in one offered skill's description, the
   "model" loads that skill (``Skill`` tool, a ``Read`` of its SKILL.md, or the MCP tool).
3. After the tool result comes back it answers from what was loaded (the first instruction
   line of the SKILL.md text it received); after an error result it says so; with no skill it
   answers generically.

Among several matching skills it loads only the one whose description shares the most words
with the prompt (the first listed on a tie), as a model picks among a catalog of installed
skills, so two confusable descriptions really compete. So if the runner leaks the skill into the
``without`` variant, the fake *will* load it and the test sees a genuine isolation failure.
Tests may add behaviours (``attempt`` a skill that may not be offered, force the ``Read`` route,
run commands first, write the answer into a file) through the constructor.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.agents.scripts import Step, fill

_WORD = re.compile(r"[a-z0-9]+")
# The error types the Anthropic API answers with, by HTTP status.
_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}  # fmt: skip
_STOP = frozenset(
    """a an and are as at be but by can do does for from how i in is it its me my of on or our
    please the this that to us we what when where which who why will with you your about into
    should would could get got have has had use using any all some than then there their them
    want need""".split()
)
_LISTING = re.compile(r"skills are available[^\n]*\n")
_LISTED = re.compile(r"^- (?P<name>[A-Za-z0-9_:./-]+): (?P<desc>.*)$")
_MCP_LOAD = re.compile(r"^mcp__(?P<server>[^_]+(?:_[^_]+)*?)__load_(?P<name>[A-Za-z0-9_-]+)_skill$")
_COMMAND = re.compile(r"<command-name>/([^<\s]+)</command-name>")
_CWD = re.compile(r"Primary working directory: (?P<cwd>\S+)")


def _stem(word: str) -> str:
    # Crude but enough to match "refund" with "refunds" and "purchase" with "purchases".
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased, crudely stemmed words of ``text`` without stop words and short words."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


@dataclass(frozen=True)
class Offered:
    """A skill the request makes available, and how it can be loaded."""

    name: str
    description: str
    route: Literal["skill", "mcp"]
    tool: str  # tool name to call ("Skill" or the full mcp__…__load_…_skill name)


@dataclass
class Exchange:
    """One request the fake received and what it decided (for assertions)."""

    offered: list[str]
    prompt: str
    action: str  # "load:<name>", "answer", "final", "first:<n>", "write"
    turn: int = 0  # the model's earlier responses in this conversation (0: its first request)


@dataclass
class FakeAnthropic:
    """The scripted server. Use as a context manager; ``env()`` gives the variables that point
    Claude Code at it and keep everything on loopback.

    - ``min_words``: content words of the prompt that must occur in a description to load it.
    - ``attempt``: skill names the model tries to load with the ``Skill`` tool *whatever is
      offered* (a model guessing a name); Claude Code answers an error result when the skill
      is not installed, which must not count as a load.
    - ``route``: how a natively offered skill is loaded: the ``Skill`` tool or a ``Read`` of
      ``<cwd>/.claude/skills/<name>/SKILL.md``.
    - ``fail_status``: answer every request with this HTTP error (e.g. 401, a bad API key).
    - ``fail_first``: answer the first requests with these HTTP errors, one each (a 429 that
      a retry gets past).
    - ``run``: first run this command with the ``Bash`` tool (e.g. ``env``), then answer;
      with ``run_if_offered``, only when that skill is offered (the with arm).
    - ``script``: tool calls made one per turn before answering (see ``scripts.py``).
    - ``first``: tool calls made one per turn before choosing a skill (e.g. ``Bash`` running
      ``env > env.txt``; ``{cwd}`` is replaced), after which the model goes on as usual.
    - ``write_answer``: after loading (or not), write the answer into this file with Claude
      Code's own ``Write`` tool (the path as given, relative to the working directory), then
      answer with the same text.
    """

    min_words: int = 2
    attempt: tuple[str, ...] = ()
    route: Literal["skill", "read"] = "skill"
    fail_status: int | None = None
    fail_first: list[int] = field(default_factory=list)
    fail_prompt: str | None = None  # fail_first only hits requests whose prompt holds this
    fail_offered: str | None = None  # ... and that offer this skill (one variant of one case)
    run: str | None = None
    run_if_offered: str | None = None  # ``run`` only in requests that offer this skill
    script: list[Step] = field(default_factory=list)
    first: tuple[Step, ...] = ()
    write_answer: str | None = None
    tool_results: list[str] = field(default_factory=list)  # every tool result text received
    failed: list[int] = field(
        default_factory=list
    )  # the status of every request answered with an error
    exchanges: list[Exchange] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # all text of every request, for leak checks
    credentials: list[str] = field(default_factory=list)  # x-api-key / Authorization received
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with fake._lock:
                    fake.credentials += [
                        v
                        for v in (self.headers.get("x-api-key"), self.headers.get("authorization"))
                        if v
                    ]
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send_json(
                        400, {"type": "error", "error": {"type": "invalid_request_error"}}
                    )
                    return
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
                    return
                messages = body.get("messages") if isinstance(body, dict) else None
                prompt = user_prompt([m for m in messages or [] if isinstance(m, dict)])
                hit = (fake.fail_prompt is None or fake.fail_prompt in prompt) and (
                    fake.fail_offered is None
                    or fake.fail_offered in {o.name for o in offered_skills(body)}
                )
                with fake._lock:
                    first = fake.fail_first if hit else []
                    status = first.pop(0) if first else fake.fail_status
                if status is not None:
                    with fake._lock:
                        fake.failed.append(status)
                    self._send_json(
                        status,
                        {"type": "error",
                         "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                   "message": "scripted failure"}},
                    )  # fmt: skip
                    return
                if not path.endswith("/v1/messages"):
                    self._send_json(404, {"type": "error", "error": {"type": "not_found_error"}})
                    return
                blocks, stop = fake.decide(body)
                usage = {"input_tokens": max(1, len(raw) // 4), "output_tokens": 12}
                if body.get("stream"):
                    self._send_stream(body, blocks, stop, usage)
                else:
                    self._send_json(
                        200,
                        {
                            "id": f"msg_{uuid.uuid4().hex[:24]}",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model", "fake"),
                            "content": blocks,
                            "stop_reason": stop,
                            "stop_sequence": None,
                            "usage": usage,
                        },
                    )

            def _send_json(self, status: int, obj: Mapping[str, Any]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_stream(
                self,
                body: Mapping[str, Any],
                blocks: list[dict[str, Any]],
                stop: str,
                usage: Mapping[str, int],
            ) -> None:
                events: list[tuple[str, dict[str, Any]]] = [
                    (
                        "message_start",
                        {
                            "type": "message_start",
                            "message": {
                                "id": f"msg_{uuid.uuid4().hex[:24]}",
                                "type": "message",
                                "role": "assistant",
                                "model": body.get("model", "fake"),
                                "content": [],
                                "stop_reason": None,
                                "stop_sequence": None,
                                "usage": {
                                    "input_tokens": usage["input_tokens"],
                                    "output_tokens": 1,
                                },
                            },
                        },
                    )
                ]
                for i, block in enumerate(blocks):
                    start: dict[str, Any]
                    if block["type"] == "text":
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        start = {**block, "input": {}}
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    events.append(
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": start},
                        )
                    )
                    events.append(
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": delta},
                        )
                    )
                    events.append(
                        ("content_block_stop", {"type": "content_block_stop", "index": i})
                    )
                events.append(
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]},
                        },
                    )
                )
                events.append(("message_stop", {"type": "message_stop"}))
                data = "".join(
                    f"event: {name}\ndata: {json.dumps(obj)}\n\n" for name, obj in events
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeAnthropic as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        """Variables that point Claude Code at this server and keep every request on loopback."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "dummy-key-for-fake-server",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # The fake never fails by accident; without this a scripted 401 is retried for minutes.
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "HTTPS_PROXY": "",
            "HTTP_PROXY": "",
        }

    # ---------------------------------------------------------------- the "model"
    def decide(self, body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """The assistant content blocks and stop reason for one request."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        offered = offered_skills(body)
        prompt = user_prompt(messages)
        last = messages[-1] if messages else {}
        results = [
            b
            for b in content_blocks(last.get("content"))
            if last.get("role") == "user" and b.get("type") == "tool_result"
        ]
        expanded = _COMMAND.search("\n".join(flatten_content(m.get("content")) for m in messages))
        done = sum(
            1
            for m in messages
            for b in content_blocks(m.get("content"))
            if b.get("type") == "tool_result"
        )
        with self._lock:
            self.tool_results += [flatten_content(r.get("content")) for r in results]
        if self.first or self.write_answer:
            action, blocks, stop = self._plan_step(body, messages, offered, prompt)
        elif done < len(self.script):
            cwd = _CWD.search("\n".join(_all_text(body)))
            base = cwd.group("cwd") if cwd else "."
            paths = {o.name: f"{base}/.claude/skills/{o.name}/SKILL.md" for o in offered}
            tool, args = fill(self.script[done], base, paths)
            action, blocks, stop = f"script:{done}", [_tool_use(tool, args)], "tool_use"
        elif results and self.script:
            action, blocks, stop = "final", [_text(generic_answer(prompt))], "end_turn"
        elif results:
            action, blocks = "final", [_text(self._final_text(messages, results))]
            stop = "end_turn"
        elif expanded and "Base directory for this skill" in "\n".join(_all_text(body)):
            # The user typed /<skill>: Claude Code already put the skill into the prompt, and
            # a model follows it instead of loading it again.
            loaded = "\n".join(flatten_content(m.get("content")) for m in messages)
            action, blocks = f"follow:{expanded.group(1)}", [_text(answer_from_skill(loaded))]
            stop = "end_turn"
        elif self.run and (
            self.run_if_offered is None or self.run_if_offered in {o.name for o in offered}
        ):
            action, stop = "run", "tool_use"
            blocks = [_tool_use("Bash", {"command": self.run, "description": "run"})]
        else:
            call = self._choose(prompt, offered, body)
            if call is None:
                action, blocks, stop = "answer", [_text(generic_answer(prompt))], "end_turn"
            else:
                action, blocks, stop = f"load:{call[0]}", [call[1]], "tool_use"
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        with self._lock:
            self.exchanges.append(Exchange([o.name for o in offered], prompt, action, turn))
            self.texts.append("\n".join(_all_text(body)))
        return blocks, stop

    def _choose(
        self, prompt: str, offered: list[Offered], body: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        has_skill_tool = any(t.get("name") == "Skill" for t in _tools(body))
        for name in self.attempt:
            if has_skill_tool:
                return name, _tool_use("Skill", {"skill": name})
        words = content_words(prompt)
        best: tuple[int, Offered] | None = None
        for skill in offered:
            score = len(words & content_words(skill.description))
            if score >= self.min_words and (best is None or score > best[0]):
                best = (score, skill)
        if best is None:
            return None
        skill = best[1]
        if skill.route == "mcp":
            return skill.name, _tool_use(skill.tool, {})
        if self.route == "read":
            cwd = _CWD.search("\n".join(_all_text(body)))
            base = cwd.group("cwd") if cwd else "."
            return skill.name, _tool_use(
                "Read", {"file_path": f"{base}/.claude/skills/{skill.name}/SKILL.md"}
            )
        return skill.name, _tool_use("Skill", {"skill": skill.name})

    def _plan_step(
        self,
        body: Mapping[str, Any],
        messages: list[dict[str, Any]],
        offered: list[Offered],
        prompt: str,
    ) -> tuple[str, list[dict[str, Any]], str]:
        """One step of: the ``first`` calls, loading the best-matching skill, writing the
        answer file, answering — each decided from the calls the conversation already holds."""
        calls = [
            (index, b)
            for index, m in enumerate(messages)
            if m.get("role") == "assistant"
            for b in content_blocks(m.get("content"))
            if b.get("type") == "tool_use"
        ]
        if len(calls) < len(self.first):
            cwd = _CWD.search("\n".join(_all_text(body)))
            tool, args = fill(self.first[len(calls)], cwd.group("cwd") if cwd else ".", {})
            return f"first:{len(calls)}", [_tool_use(tool, args)], "tool_use"
        later = calls[len(self.first) :]
        if not later:
            choice = self._choose(prompt, offered, body)
            if choice is not None:
                return f"load:{choice[0]}", [choice[1]], "tool_use"
        loaded = later[0][0] if later and later[0][1].get("name") != "Write" else None
        failed = loaded is not None and any(
            b.get("tool_use_id") == later[0][1].get("id") and b.get("is_error")
            for m in messages[loaded + 1 : loaded + 2]
            for b in content_blocks(m.get("content"))
        )
        if loaded is None or failed:
            answer = generic_answer(prompt)
        else:  # what came back after the load: its result and the body Claude Code injected
            answer = answer_from_skill(
                "\n".join(flatten_content(m.get("content")) for m in messages[loaded + 1 :])
            )
        if self.write_answer and not any(b.get("name") == "Write" for _, b in later):
            args = {"file_path": self.write_answer, "content": answer + "\n"}
            return "write", [_tool_use("Write", args)], "tool_use"
        return "final", [_text(answer)], "end_turn"

    def _final_text(self, messages: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
        if all(r.get("is_error") for r in results):
            return "I could not load the skill I looked for, so here is a general answer."
        # What was loaded: the tool results plus any text Claude Code injected after them
        # (the Skill tool delivers the SKILL.md body as a following user message).
        loaded = "\n".join(
            flatten_content(r.get("content")) for r in results if not r.get("is_error")
        )
        tail = "\n".join(flatten_content(m.get("content")) for m in messages[-1:])
        return answer_from_skill(loaded + "\n" + tail)


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as Anthropic blocks (a plain string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def flatten_content(content: Any) -> str:
    """The text of a message's content: its text blocks and its tool results' text."""
    parts: list[str] = []
    for block in content_blocks(content):
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(flatten_content(block.get("content")))
    return "\n".join(parts)


def _tools(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_use(name: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": dict(tool_input),
    }


def _all_text(body: Mapping[str, Any]) -> Iterable[str]:
    system = body.get("system")
    if isinstance(system, str):
        yield system
    else:
        for block in content_blocks(system):
            yield str(block.get("text", ""))
    for message in body.get("messages", []):
        if isinstance(message, dict):
            yield flatten_content(message.get("content"))


def offered_skills(body: Mapping[str, Any]) -> list[Offered]:
    """The skills this request makes available: the Skill tool's listing and MCP load tools."""
    offered: dict[str, Offered] = {}
    if any(t.get("name") == "Skill" for t in _tools(body)):
        for text in _all_text(body):
            for listing in _LISTING.finditer(text):
                for line in text[listing.end() :].splitlines():
                    if not line.strip():
                        continue
                    match = _LISTED.match(line)
                    if not match:
                        break
                    offered.setdefault(
                        match.group("name"),
                        Offered(match.group("name"), match.group("desc"), "skill", "Skill"),
                    )
    for tool in _tools(body):
        match = _MCP_LOAD.match(str(tool.get("name", "")))
        if match:
            name = match.group("name").replace("_", "-")
            offered.setdefault(
                name, Offered(name, str(tool.get("description", "")), "mcp", str(tool["name"]))
            )
    return list(offered.values())


def user_prompt(messages: list[dict[str, Any]]) -> str:
    """The user's own words: the first user message's text blocks minus Claude Code's reminders."""
    for message in messages:
        if message.get("role") != "user":
            continue
        texts = [
            str(b.get("text", ""))
            for b in content_blocks(message.get("content"))
            if b.get("type") == "text" and not str(b.get("text", "")).lstrip().startswith("<")
        ]
        if texts:
            return "\n".join(texts).strip()
    return ""


def answer_from_skill(loaded: str) -> str:
    """Answer with the first instruction line of the loaded SKILL.md text."""
    loaded = re.sub(r"^ *\d+\t", "", loaded, flags=re.MULTILINE)  # Read's `cat -n` numbering
    # Claude Code injects a skill as "Base directory for this skill: …" + body; other text
    # around it (environment, git status) is not the skill.
    marker = loaded.find("Base directory for this skill:")
    if marker >= 0:
        loaded = loaded[marker:]
    # The Skill tool announces "Base directory for this skill: …/<name>"; a Read shows the
    # frontmatter; an MCP result may show either.
    name = re.search(r"^name:\s*(\S+)|skill: \S*/(\S+)$", loaded, re.MULTILINE)
    lines = loaded.splitlines()
    # Skip frontmatter and headings; take the first prose line after a Markdown heading.
    start = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    for line in lines[start + 1 :]:
        text = line.strip()
        if text and not text.startswith(("#", "<", "---")):
            label = (name.group(1) or name.group(2)) if name else "the skill"
            return f"Following {label}: {text}"
    return "I loaded the skill but it had no instructions."


def generic_answer(prompt: str) -> str:
    """What the fake says without a skill: generic, never skill-specific facts."""
    return "Here is a general answer based on common practice; no specific policy was consulted."
