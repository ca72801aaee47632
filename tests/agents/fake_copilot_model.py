"""A scripted Anthropic Messages server on 127.0.0.1 for driving the real GitHub Copilot CLI in
tests (``COPILOT_PROVIDER_TYPE=anthropic``; Copilot streams, so replies are server-sent events).

Every reply is *decided from what the CLI sent*, as a model would decide:

* the skills it may load are the ones Copilot listed in the system prompt's
  ``<available_skills>`` block (name, description, location), and MCP tools named
  ``<server>-load_<name>_skill`` (``--delivery mcp``), loaded by calling that tool;
* it loads each skill whose description shares enough words with the user's prompt — all of
  them in one turn (several ``skill`` calls in one reply) — the way ``Behaviour.load_with``
  says: Copilot's ``skill`` tool, its ``view`` tool on the listed location, or ``cat`` through
  ``bash``;
* ``Behaviour.script`` replaces that with scripted turns of tool calls (``{cwd}`` and
  ``{skill:NAME}`` filled in);
* the answer quotes the first instruction line of every skill body that reached it.

Real servers misbehave, so can this one: ``fail`` answers the first requests with HTTP errors
(``retry-after`` set on 429/529), ``refuse`` ends the turn with ``stop_reason: "refusal"``,
``error_result`` answers every request with an ``invalid_request_error``. What reached the
model is kept (``requests``; :meth:`FakeCopilotModel.skill_bodies_received`), so tests assert
which skills the model really saw from the server side, never from our own parser.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.fake_anthropic import flatten_content
from tests.agents.loopback import LoopbackServer

GENERIC_ANSWER = "I have no specific instructions for this, so here is a general answer."
REFUSAL = "I can't help with that."
_SKILL_BLOCK = re.compile(
    r"<skill>\s*<name>(?P<name>.*?)</name>\s*<description>(?P<description>.*?)</description>"
    r"\s*<location>(?P<location>.*?)</location>\s*</skill>",
    re.S,
)
_MCP_TOOL = re.compile(r"[A-Za-z0-9_]+-load_(?P<name>[A-Za-z0-9_]+)_skill")
_CWD = re.compile(r"^\* Current working directory: (?P<cwd>.+)$", re.M)
_SKILL_PATH = re.compile(r"\{skill:([A-Za-z0-9_-]+)\}")
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and any are about can do does for from have how i in is it me my of on or our the this "
    "to use used what when where which who why with you your questions answer help please tell "
    "skill skills task tasks".split()
)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

Step = tuple[str, dict[str, Any]]


@dataclass
class Behaviour:
    """What the scripted model does; tests set the knobs they need."""

    min_overlap: int = 2  # prompt/description words in common needed to load a skill
    also_load: tuple[str, ...] = ()  # skill names loaded whatever the prompt (offered or not)
    load_with: str = "skill"  # "skill" | "view" | "bash"
    script: tuple[tuple[Step, ...], ...] = ()  # scripted turns of tool calls, then the answer
    fail: tuple[int, ...] = ()  # the first requests answered with these HTTP statuses
    retry_after: int = 0  # the retry-after header of a scripted 429/529
    fail_offered: str | None = None  # ``fail`` only hits requests offering this skill
    refuse: bool = False  # end the first turn with a refusal
    error_result: int | None = None  # answer every request with this HTTP error
    best_only: bool = False  # load only the skill sharing the most words with the prompt
    first: tuple[Step, ...] = ()  # tool calls made (in one turn) before loading
    write_answer: str | None = None  # after loading, write the answer to this project file
    # (prompt substring, behaviour): a request whose prompt holds the substring follows that
    # behaviour instead (the first that matches), so one run's cases can misbehave differently.
    by_prompt: tuple[tuple[str, Behaviour], ...] = ()

    def for_prompt(self, prompt: str) -> tuple[str, Behaviour]:
        """The behaviour a request with ``prompt`` follows, and its key ("" for this one)."""
        for key, behaviour in self.by_prompt:
            if key in prompt:
                return key, behaviour
        return "", self


@dataclass
class Request:
    """One request, reduced to what the scripted model decides on."""

    system: str
    prompt: str
    cwd: str
    skills: dict[str, str]  # offered name → its SKILL.md path
    listed: dict[str, str]  # offered name → <location> as Copilot listed it ("project")
    descriptions: dict[str, str]
    turns: int  # assistant turns so far
    texts: list[str] = field(default_factory=list)  # every user-side text (tool results too)


def parse(body: dict[str, Any]) -> Request:
    """The request as the scripted model sees it."""
    system = body.get("system")
    text = system if isinstance(system, str) else flatten_content(system)
    skills: dict[str, str] = {}
    listed: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    cwd = _CWD.search(text)
    base = cwd["cwd"].strip() if cwd else "."
    for m in _SKILL_BLOCK.finditer(text):
        name = html.unescape(m["name"]).strip()
        # Copilot's <location> is where the skill comes from ("project"); a project skill's
        # file is .github/skills/<name>/SKILL.md under the working directory.
        location = html.unescape(m["location"]).strip()
        path = (
            location if location.endswith("SKILL.md") else f"{base}/.github/skills/{name}/SKILL.md"
        )
        skills.setdefault(name, path)
        listed.setdefault(name, location)
        descriptions.setdefault(name, html.unescape(m["description"]).strip())
    for tool in body.get("tools") or []:  # --delivery mcp: skills-load_<name>_skill tools
        found = _MCP_TOOL.fullmatch(str(tool.get("name", ""))) if isinstance(tool, dict) else None
        if found:
            name = found["name"].replace("_", "-")
            skills.setdefault(name, f"mcp:{tool['name']}")
            descriptions.setdefault(name, str(tool.get("description", "")))
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    users = [flatten_content(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt = re.sub(r"<current_datetime>.*?</current_datetime>\s*", "", users[0] if users else "")
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    return Request(text, prompt.strip(), base, skills, listed, descriptions, turns, users)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _fill(value: Any, req: Request) -> Any:
    if isinstance(value, str):
        text = _SKILL_PATH.sub(
            lambda m: req.skills.get(m[1], f"{req.cwd}/.github/skills/{m[1]}/SKILL.md"), value
        )
        return text.replace("{cwd}", req.cwd)
    if isinstance(value, list):
        return [_fill(v, req) for v in value]
    return value


def _loads(req: Request, behaviour: Behaviour) -> list[Step]:
    words = _words(req.prompt)
    names = [
        n for n, d in req.descriptions.items() if len(words & _words(d)) >= behaviour.min_overlap
    ]
    if behaviour.best_only and names:
        names = [max(names, key=lambda n: len(words & _words(req.descriptions[n])))]
    names += [n for n in behaviour.also_load if n not in names]
    calls: list[Step] = []
    for name in names:
        location = req.skills.get(name, f"{req.cwd}/.github/skills/{name}/SKILL.md")
        if location.startswith("mcp:"):
            calls.append((location.removeprefix("mcp:"), {}))
        elif behaviour.load_with == "view":
            calls.append(("view", {"path": location}))
        elif behaviour.load_with == "bash":
            calls.append(("bash", {"command": f"cat '{location}'", "description": "Read skill"}))
        else:
            calls.append(("skill", {"skill": name}))
    return calls


def first_instruction(text: str) -> str | None:
    """The first prose line after a skill's frontmatter (or after Copilot's skill header), else
    None."""
    lines = text.splitlines()
    context = next((i for i, line in enumerate(lines) if line.startswith("<skill-context ")), None)
    fences = [i for i, line in enumerate(lines) if line.strip() == "---"]
    if context is not None:
        start = context + 1
    elif len(fences) >= 2:
        start = fences[1] + 1
    else:
        return None
    for line in lines[start:]:
        stripped = re.sub(r"^\s*\d+\.\s", "", line).strip()
        if stripped and not stripped.startswith(("#", "<", "[", "Base directory")):
            return stripped
    return None


def decide(req: Request, behaviour: Behaviour) -> list[Step] | str:
    """The next reply: tool calls, or the answer."""
    if behaviour.script:
        plan = [list(turn) for turn in behaviour.script]
    else:
        plan = [list(behaviour.first), _loads(req, behaviour)]
    plan = [turn for turn in plan if turn]
    if req.turns < len(plan):
        return [
            (tool, {k: _fill(v, req) for k, v in args.items()}) for tool, args in plan[req.turns]
        ]
    answer = _answer(req)
    if behaviour.write_answer and req.turns == len(plan):
        path = f"{req.cwd}/{behaviour.write_answer}"
        return [("create", {"path": path, "file_text": answer + "\n"})]
    return answer


def _answer(req: Request) -> str:
    """From the skill bodies that reached the model, else generic."""
    found = [first_instruction(text) for text in req.texts[1:]]
    answers = [f"Following the skill: {line}" for line in dict.fromkeys(found) if line]
    return " ".join(answers) if answers else GENERIC_ANSWER


def _sse(reply: list[Step] | str, model: str, ids: itertools.count[int], stop: str) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = []
    usage = {"input_tokens": 100, "output_tokens": 1}
    message = {
        "id": f"msg_{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events.append(("message_start", {"type": "message_start", "message": message}))
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if isinstance(reply, str):
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": reply}))
    else:
        for tool, args in reply:
            start = {"type": "tool_use", "id": f"toolu_{next(ids)}", "name": tool, "input": {}}
            blocks.append((start, {"type": "input_json_delta", "partial_json": json.dumps(args)}))
    for index, (start, delta) in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "usage": {"output_tokens": 12},
                "delta": {"stop_reason": stop, "stop_sequence": None},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {n}\ndata: {json.dumps(e)}\n\n" for n, e in events).encode()


class FakeCopilotModel(LoopbackServer):
    """``with FakeCopilotModel(Behaviour(...)) as model: model.url``. Every request body is kept
    in ``requests``, each ``x-api-key`` in ``credentials``, each error status sent in
    ``failed``."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.credentials: list[str] = []
        self.failed: list[int] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._failures: dict[str, int] = {}  # scripted failures sent, per by_prompt key
        super().__init__(self._handler())

    @property
    def url(self) -> str:
        """The provider's base URL (``COPILOT_PROVIDER_BASE_URL``)."""
        return self.base_url.removesuffix("/v1")

    def offered(self) -> set[str]:
        """Every skill name any request listed to the model."""
        with self._lock:
            return {name for body in self.requests for name in parse(body).skills}

    def received(self, bodies: dict[str, str]) -> dict[tuple[str, frozenset[str]], list[str]]:
        """Per conversation (user prompt, skills offered): the names of ``bodies`` (name → a
        line unique to that skill's SKILL.md) whose line reached the model in a user-side
        message or tool result, in first-seen order."""
        with self._lock:
            requests = [parse(body) for body in self.requests]
        seen: dict[tuple[str, frozenset[str]], list[str]] = {}
        for req in requests:
            names = seen.setdefault((req.prompt, frozenset(req.skills)), [])
            for text in req.texts[1:]:
                for name, line in bodies.items():
                    if line in text and name not in names:
                        names.append(name)
        return seen

    def _status(self, body: dict[str, Any]) -> tuple[int | None, int]:
        """The HTTP error this request gets (None: none) and its retry-after."""
        req = parse(body)
        key, behaviour = self.behaviour.for_prompt(req.prompt)
        hit = behaviour.fail_offered is None or behaviour.fail_offered in req.skills
        with self._lock:
            done = self._failures.get(key, 0)
            if hit and done < len(behaviour.fail):
                self._failures[key] = done + 1
                self.failed.append(behaviour.fail[done])
                return behaviour.fail[done], behaviour.retry_after
            if behaviour.error_result is not None:
                self.failed.append(behaviour.error_result)
                return behaviour.error_result, behaviour.retry_after
        return None, 0

    def _reply(self, body: dict[str, Any]) -> bytes:
        req = parse(body)
        _, behaviour = self.behaviour.for_prompt(req.prompt)
        with self._lock:
            self.requests.append(body)
            model = str(body.get("model", ""))
            if behaviour.refuse and req.turns == 0:
                return _sse(REFUSAL, model, self._ids, "refusal")
            reply = decide(req, behaviour)
            return _sse(
                reply, model, self._ids, "end_turn" if isinstance(reply, str) else "tool_use"
            )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                with owner._lock:
                    owner.credentials.append(self.headers.get("x-api-key") or "")
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"type": "error", "error": {"type": "invalid_request_error"}})
                    return
                status, retry_after = owner._status(body)
                if status is not None:
                    kind = _ERROR_TYPES.get(status, "api_error")
                    error = {"type": "error", "error": {"type": kind, "message": "scripted"}}
                    self._send(status, error, retry_after)
                    return
                data = owner._reply(body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error"}})

            def _send(self, status: int, obj: dict[str, Any], retry_after: int = 0) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if retry_after and status in (429, 529):
                    self.send_header("retry-after", str(retry_after))
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
