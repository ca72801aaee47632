"""A scripted Gemini API server on 127.0.0.1 for driving the real Gemini CLI in tests
(``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``, server-sent events).

It is not a canned transcript: every reply is decided from what the CLI sends, as a model would
decide. The CLI lists the skills it offers in its system instruction
(``<available_skills><skill><name>…</name><description>…</description><location>…</location>``)
and declares ``activate_skill`` (and, with ``--delivery mcp``, ``mcp_<server>_load_<name>_skill``)
among its tools. When enough words of the user's prompt occur in a listed skill's description the
model loads it — by default with ``activate_skill``; ``Behaviour.load_with`` picks another way a
real model reads a SKILL.md (``read_file`` of the listed location, a shell ``cat``, a shell glob
over every skill folder, or the MCP tool). After the tool results come back it answers from what
was really shown to it (the skill's body), else generically. A skill that leaks into a
``without`` run is therefore listed, matched, loaded and reported — a real isolation failure.

The plan of one conversation is a pure function of its first request (system instruction and
prompt), so the server keeps no per-conversation state and serves concurrent runs.

Run standalone for manual experiments: ``python tests/agents/fake_gemini.py`` (prints the base URL
for ``GOOGLE_GEMINI_BASE_URL``).
"""

from __future__ import annotations

import html
import json
import re
import shlex
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GENERIC_ANSWER = "I have no specific instructions for this, so here is a general answer."
_SKILL_BLOCK = re.compile(
    r"<skill>\s*<name>(?P<name>.*?)</name>\s*<description>(?P<description>.*?)</description>\s*"
    r"<location>(?P<location>.*?)</location>\s*</skill>",
    re.S,
)
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and any are about can do does for from have how i in is it me my of on or our the this "
    "to use used what when where which who why with you your questions answer help please tell "
    "skill skills task tasks".split()
)
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}  # fmt: skip


@dataclass
class Behaviour:
    """What the scripted model does; tests set the knobs they need."""

    min_overlap: int = 2  # prompt/description words in common needed to load a skill
    also_load: tuple[str, ...] = ()  # listed skills to load whatever the prompt
    # How a matching skill is loaded: "activate" (activate_skill), "read_file" (its listed
    # location), "shell" (``shell_command`` with {path}), "glob" (one shell glob over every
    # skill folder), "mcp" (the MCP tool when offered, else activate).
    load_with: str = "activate"
    shell_command: str = "cat {path}"
    first_calls: tuple[dict[str, Any], ...] = ()  # calls of a turn before the loading turn
    fail_load: bool = False  # the load fails: a wrong skill name, a missing path, bad MCP args
    extra_calls: tuple[dict[str, Any], ...] = ()  # calls made alongside the loading calls
    fail_status: int | None = None  # answer every request with this HTTP error
    fail_first: int = 0  # … or only the first N requests (then answer normally)
    hang: bool = False  # never answer: a model that takes forever
    # Load only the one listed skill sharing the most words with the prompt (the first listed
    # on a tie), as a model picks among a catalog of installed skills.
    best_only: bool = False
    # After loading, write the answer to this workspace file with write_file, then answer.
    write_answer: str | None = None


@dataclass(frozen=True)
class OfferedSkill:
    """A skill as the CLI offered it in one request."""

    name: str
    description: str
    location: str | None = None  # native: the SKILL.md path in the system instruction
    mcp_tool: str | None = None  # mcp: the tool's full name, e.g. "mcp_skills_load_x_skill"


@dataclass
class Request:
    """One generateContent request, reduced to what the scripted model decides on."""

    model: str
    system: str
    prompt: str  # the user's own text (the first user turn, minus the CLI's session context)
    user_texts: list[str]  # every user text part (prompt, @-file contents, …)
    tool_results: list[str]  # functionResponse outputs, in order
    model_turns: int  # model contents so far: 0 = the first request of the conversation
    tools: list[str]
    skills: list[OfferedSkill]
    wants_json: bool  # the CLI's routing classifier (model "auto") asks for a JSON object


def words(text: str) -> set[str]:
    """Content words of a text, lower-cased."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _parts_text(parts: Any) -> list[str]:
    return [
        p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]


def parse_request(path: str, body: dict[str, Any]) -> Request:
    """Reduce a request body to a :class:`Request`."""
    system = "\n".join(_parts_text((body.get("systemInstruction") or {}).get("parts")))
    contents = body.get("contents") or []
    user_texts: list[str] = []
    results: list[str] = []
    for content in contents:
        if content.get("role") != "user":
            continue
        for part in content.get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                output = (response.get("response") or {}).get("output")
                error = (response.get("response") or {}).get("error")
                results.append(output if isinstance(output, str) else json.dumps(error or ""))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                user_texts.append(part["text"])
    prompts = [t for t in user_texts if not t.lstrip().startswith("<session_context>")]
    tools = [
        str(decl.get("name"))
        for tool in body.get("tools") or []
        for decl in tool.get("functionDeclarations") or []
    ]
    skills = [
        OfferedSkill(html.unescape(m["name"]).strip(), html.unescape(m["description"]).strip(),
                     html.unescape(m["location"]).strip())
        for m in _SKILL_BLOCK.finditer(system)
    ]  # fmt: skip
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            match = re.fullmatch(r"mcp_[^_]+_load_(.+)_skill", str(decl.get("name", "")))
            if match:
                skills.append(OfferedSkill(match[1].replace("_", "-"),
                                           str(decl.get("description", "")),
                                           mcp_tool=str(decl["name"])))  # fmt: skip
    config = body.get("generationConfig") or {}
    model = re.sub(r"^/v1(beta)?/models/|:.*$", "", path.split("?", 1)[0])
    return Request(
        model=model,
        system=system,
        prompt=prompts[0] if prompts else "",
        user_texts=user_texts,
        tool_results=results,
        model_turns=sum(1 for c in contents if c.get("role") == "model"),
        tools=tools,
        skills=skills,
        wants_json=config.get("responseMimeType") == "application/json",
    )


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": tool, "args": args}}


def plan(request: Request, behaviour: Behaviour) -> list[list[dict[str, Any]]]:
    """The tool-call turns of the conversation (the final answer follows the last)."""
    prompt_words = words(request.prompt)
    chosen = [
        s for s in request.skills
        if len(prompt_words & words(s.description)) >= behaviour.min_overlap
        or s.name in behaviour.also_load
    ]  # fmt: skip
    if behaviour.best_only and chosen:
        chosen = [max(chosen, key=lambda s: len(prompt_words & words(s.description)))]
    calls: list[dict[str, Any]] = []
    if behaviour.load_with == "glob" and chosen:
        calls.append(_call("run_shell_command", command="cat .gemini/skills/*/SKILL.md"))
    for skill in chosen if behaviour.load_with != "glob" else []:
        calls.append(_load_call(skill, behaviour))
    calls += [dict(c) for c in behaviour.extra_calls]
    turns = [[dict(c) for c in behaviour.first_calls]] if behaviour.first_calls else []
    return turns + ([calls] if calls else [])


def _load_call(skill: OfferedSkill, behaviour: Behaviour) -> dict[str, Any]:
    missing = "/nonexistent" if behaviour.fail_load else ""
    if behaviour.load_with == "mcp" and skill.mcp_tool is not None:
        return _call(skill.mcp_tool, **({"unexpected": [1]} if behaviour.fail_load else {}))
    if behaviour.load_with == "read_file" and skill.location:
        return _call("read_file", file_path=missing + skill.location)
    if behaviour.load_with == "shell" and skill.location:
        path = shlex.quote(missing + skill.location)
        return _call("run_shell_command", command=behaviour.shell_command.format(path=path))
    # A name outside the tool's enum fails validation: a failed activation of the same skill.
    return _call("activate_skill", name=skill.name.upper() if behaviour.fail_load else skill.name)


def skill_bodies(texts: list[str]) -> list[str]:
    """The skill instructions that appear in texts the model was shown (tool results, @-files)."""
    bodies = []
    for text in texts:
        activated = re.findall(r"<instructions>\s*(.*?)\s*</instructions>", text, re.S)
        if activated:
            bodies += activated
            continue
        # Whole SKILL.md files (a read, a shell cat or glob): frontmatter, then the body.
        for piece in text.split("---\nname: ")[1:]:
            _, sep, body = piece.partition("\n---\n")
            if sep:
                bodies.append(body.split("</untrusted_context>")[0])
    flat = [" ".join(ln.strip("# ").strip() for ln in b.splitlines() if ln.strip()) for b in bodies]
    return [b for b in flat if b]


def answer(request: Request) -> str:
    """The final answer: from the skill bodies the model was shown, else generic."""
    bodies = skill_bodies(request.tool_results + request.user_texts[1:])
    if not bodies:
        return GENERIC_ANSWER
    return "Following the skill: " + " ".join(dict.fromkeys(bodies))


def reply(request: Request, behaviour: Behaviour) -> list[dict[str, Any]]:
    """The parts of the model's next turn."""
    if request.wants_json:  # the routing classifier of model "auto"
        return [{"text": json.dumps({"complexity_reasoning": "simple", "complexity_score": 10})}]
    turns = plan(request, behaviour)
    if request.model_turns < len(turns):
        return turns[request.model_turns]
    if behaviour.write_answer and request.model_turns == len(turns):
        return [_call("write_file", file_path=behaviour.write_answer, content=answer(request))]
    return [{"text": answer(request)}]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        fake = self.server.fake
        with fake.lock:
            fake.requests.append(body)
            fake.paths.append(self.path)
            fake.credentials.append(self.headers.get("x-goog-api-key", ""))
            number = len(fake.requests)
        behaviour = fake.behaviour
        if behaviour.hang:
            fake.stop.wait(120)
            return
        status = behaviour.fail_status
        if status is not None and (behaviour.fail_first == 0 or number <= behaviour.fail_first):
            self._send_json(
                status,
                {
                    "error": {
                        "code": status,
                        "message": "scripted failure",
                        "status": STATUS_NAMES.get(status, "UNKNOWN"),
                    }
                },
            )
            return  # fmt: skip
        request = parse_request(self.path, body)
        with fake.lock:
            fake.seen.append(request)
        parts = reply(request, behaviour)
        usage = {"promptTokenCount": len(json.dumps(body)) // 4, "candidatesTokenCount": 7,
                 "totalTokenCount": len(json.dumps(body)) // 4 + 7}  # fmt: skip
        chunks = _chunks(parts)
        if "alt=sse" not in self.path:
            self._send_json(200, _response(parts, usage))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            event = _response(chunk, usage if last else None, "STOP" if last else None)
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def _send_json(self, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _chunks(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A text answer streams in two deltas (the CLI joins them); calls come in one chunk."""
    if len(parts) == 1 and "text" in parts[0] and len(parts[0]["text"]) > 8:
        text = parts[0]["text"]
        return [[{"text": text[:8]}], [{"text": text[8:]}]]
    return [parts]


def _response(
    parts: list[dict[str, Any]], usage: dict[str, int] | None, finish: str | None = "STOP"
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake-gemini"}
    if usage:
        out["usageMetadata"] = usage
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGemini


@dataclass
class FakeGemini:
    """``with FakeGemini(Behaviour(...)) as fake:`` then point
    ``GOOGLE_GEMINI_BASE_URL`` at ``fake.base_url``."""

    behaviour: Behaviour = field(default_factory=Behaviour)
    requests: list[dict[str, Any]] = field(default_factory=list)  # raw request bodies
    paths: list[str] = field(default_factory=list)
    seen: list[Request] = field(default_factory=list)  # parsed, answered requests
    credentials: list[str] = field(default_factory=list)  # x-goog-api-key of each request
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    _server: _Server | None = None

    def __enter__(self) -> FakeGemini:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use FakeGemini as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def offered_names(self) -> set[str]:
        """Every skill name any request offered the model."""
        with self.lock:
            return {s.name for r in self.seen for s in r.skills}


if __name__ == "__main__":
    import time

    with FakeGemini() as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)
