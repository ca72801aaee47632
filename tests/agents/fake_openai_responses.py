"""A scripted OpenAI Responses API server on 127.0.0.1 for driving the real Codex CLI in tests.

It is not a model, but it decides from what the agent sends, so the runner's isolation is tested
for real:

* the skills it may load are the ones Codex itself listed in the request (the "### Available
  skills" block, aliases like ``r0/foo/SKILL.md`` expanded through the "### Skill roots" table)
  or offered as MCP tools ``load_<name>_skill``;
* ``Behaviour.first`` shell commands run before anything else, one per turn (exploring the
  workspace, dumping its environment);
* it loads a skill when enough words of the user's prompt occur in that skill's description
  (or when ``Behaviour.also_load`` names it; with ``Behaviour.best_only`` only the one sharing
  the most words, as a model picks among a catalog), by answering with an ``exec_command``
  function call that reads the SKILL.md path it saw (``Behaviour.read_command``), or an MCP
  tool call;
* with ``Behaviour.write_answer`` it then writes its answer into that workspace file the way
  Codex tells a model to edit files: ``apply_patch`` (through ``exec_command``, as Codex's
  instructions for models without their own patch tool say; Codex applies it itself and
  records a ``file_change``);
* after the tool output comes back it answers from what was read (the SKILL.md body), and
  without a load it answers generically.

So a skill that leaks into the ``without`` variant is listed, matched, read and reported — a real
isolation failure rather than a scripted one. Run ``python fake_openai_responses.py`` to serve
it by hand (prints the base URL for ``OPENAI_BASE_URL``).
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.agents.scripts import fill

GENERIC_ANSWER = "I don't have specific guidance for that; please check the relevant policy."
_STOP = frozenset(
    "about after again also and any are can could does for from have how into its may more "
    "not off our out over should than that the their them then there these they this those "
    "use used using was what when where which while who why will with would you your".split()
)


@dataclass
class Behaviour:
    """What the scripted model does; tests set the knobs they need."""

    min_overlap: int = 2  # prompt/description words in common needed to load a skill
    also_load: tuple[str, ...] = ()  # listed skills to load regardless of the prompt
    read_command: str = "cat {path}"  # {path} is shell-quoted
    fail_reads: bool = False  # reads fail (a missing path; MCP: bad arguments)
    fail_turn: bool = False  # answer every request with HTTP 400: the turn fails
    fail_status: int | None = None  # answer every request with this HTTP status
    fail_first: list[int] = field(default_factory=list)  # the first requests get these, one each
    script: list[str] = field(default_factory=list)  # shell commands, one per turn (scripts.py)
    yield_ms: int | None = None  # exec_command's wait for output (Codex's default: 10 s)
    first: tuple[str, ...] = ()  # shell commands run first, one per turn, before routing
    # Load only the listed skill sharing the most words with the prompt (the first on a tie).
    best_only: bool = False
    # After loading, write the answer to this workspace file with apply_patch, then answer.
    write_answer: str | None = None


@dataclass
class OfferedSkill:
    """A skill as the agent offered it in one request."""

    name: str
    description: str
    path: str | None = None  # native: absolute SKILL.md path
    mcp_namespace: str | None = None  # mcp: e.g. "mcp__skills"
    mcp_tool: str | None = None  # mcp: e.g. "load_foo_skill"


@dataclass
class Seen:
    """What one request showed the model (for assertions)."""

    prompt: str
    skills: list[OfferedSkill]
    tool_outputs: list[str]
    outputs: dict[str, str] = field(default_factory=dict)  # by call id
    call_ids: list[str] = field(default_factory=list)  # of the calls made so far, in order


def words(text: str) -> set[str]:
    """Content words, lower-cased, a plural ``s`` dropped."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if len(word) < 4 or word in _STOP:
            continue
        out.add(word[:-1] if word.endswith("s") and len(word) > 4 else word)
    return out


def _texts(request: dict[str, Any], role: str) -> list[str]:
    texts = []
    for item in request.get("input", []):
        if item.get("type", "message") == "message" and item.get("role") == role:
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return texts


def offered_skills(request: dict[str, Any]) -> list[OfferedSkill]:
    """Skills listed in the context plus ``load_<name>_skill`` MCP tools."""
    skills: list[OfferedSkill] = []
    context = "\n".join(_texts(request, "developer") + _texts(request, "user"))
    roots = dict(re.findall(r"^- `(r\d+)` = `([^`]+)`$", context, flags=re.M))
    for name, desc, file in re.findall(r"^- ([^:\n]+): (.*) \(file: ([^)]+)\)$", context, re.M):
        alias, sep, rest = file.partition("/")
        path = f"{roots[alias]}/{rest}" if sep and alias in roots else file
        skills.append(OfferedSkill(name=name.strip(), description=desc, path=path))
    for tool in request.get("tools", []):
        children = tool.get("tools", []) if tool.get("type") == "namespace" else [tool]
        for child in children:
            match = re.fullmatch(r"load_(.+)_skill", str(child.get("name", "")))
            if match and tool.get("type") == "namespace":
                skills.append(
                    OfferedSkill(
                        name=match.group(1).replace("_", "-"),
                        description=str(child.get("description", "")),
                        mcp_namespace=str(tool.get("name")),
                        mcp_tool=str(child.get("name")),
                    )
                )
    return skills


# What exec_command answers when the command is still running after its wait.
_RUNNING = re.compile(r"Process running with session ID (\d+)")


def _cwd(request: dict[str, Any]) -> str:
    """The working directory Codex states in its ``<environment_context>``."""
    found = re.search(r"<cwd>([^<]+)</cwd>", "\n".join(_texts(request, "user")))
    return found.group(1) if found else "."


def user_prompt(request: dict[str, Any]) -> str:
    """The last user message that is not harness context (``<environment_context>`` …)."""
    prompts = [t for t in _texts(request, "user") if not t.lstrip().startswith("<")]
    return prompts[-1] if prompts else ""


def _output_text(item: dict[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, list):
        output = "\n".join(c.get("text", "") for c in output if isinstance(c, dict))
    return output if isinstance(output, str) else json.dumps(output)


def answer_from(outputs: list[str]) -> str:
    """The final message after tool calls: the SKILL.md bodies that were read, else generic."""
    bodies = []
    for text in outputs:
        _, sep, rest = text.partition("Output:\n")
        text = rest if sep else text
        try:  # MCP tool results arrive as {"result": "..."}
            value = json.loads(text)
            if isinstance(value, dict) and isinstance(value.get("result"), str):
                text = value["result"]
        except ValueError:
            pass
        if "---" not in text and "#" not in text:
            continue  # an error message, not a skill
        body = re.sub(r"\A\s*---\n.*?\n---\n", "", text, flags=re.S)
        bodies.append(" ".join(line.strip("# ").strip() for line in body.splitlines()).strip())
    bodies = [b for b in bodies if b]
    if not bodies:
        return GENERIC_ANSWER
    return "Following the skill: " + " ".join(bodies)


def _loaded(seen: Seen) -> list[str]:
    """The outputs of the skill-loading calls (and of polls of them)."""
    return [o for c, o in seen.outputs.items() if c.startswith(("load_", "poll_load_"))]


def _exec(call_id: str, args: dict[str, Any]) -> dict[str, Any]:
    """An ``exec_command`` function call."""
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
            "name": "exec_command", "arguments": json.dumps(args)}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        fake = self.server.fake
        behaviour = fake.behaviour
        items = request.get("input", [])
        results = [i for i in items if i.get("type") == "function_call_output"]
        seen = Seen(
            prompt=user_prompt(request),
            skills=offered_skills(request),
            tool_outputs=[_output_text(i) for i in results],
            outputs={str(i.get("call_id")): _output_text(i) for i in results},
            call_ids=[str(i.get("call_id")) for i in items if i.get("type") == "function_call"],
        )
        with fake.lock:
            fake.requests.append(request)
            fake.seen.append(seen)
            fake.credentials.append(self.headers.get("Authorization", ""))
            number = len(fake.seen)
        with fake.lock:
            status = behaviour.fail_first.pop(0) if behaviour.fail_first else None
        status = status or behaviour.fail_status or (400 if behaviour.fail_turn else None)
        if status is not None:
            kinds = {400: "invalid_request_error", 401: "invalid_api_key",
                     429: "rate_limit_exceeded"}  # fmt: skip
            kind = kinds.get(status, "server_error")
            body = json.dumps({"error": {"message": "scripted failure", "type": kind}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        called = any(i.get("type") == "function_call" for i in request.get("input", []))
        running = _RUNNING.search(seen.tool_outputs[-1]) if seen.tool_outputs else None
        if running:
            # The command outlived exec_command's wait (a slow, loaded machine): like a real
            # model, wait for the rest of its output instead of answering without it.
            # The poll's id names the polled call's, so its output counts as that call's.
            last = seen.call_ids[-1] if seen.call_ids else "call"
            poll = {"type": "function_call", "id": f"fc_{number}",
                    "call_id": f"poll_{last}_{number}",
                    "name": "write_stdin", "arguments": json.dumps(
                        {"session_id": int(running.group(1)), "chars": "",
                         "yield_time_ms": 30000})}  # fmt: skip
            self._stream([poll], number, len(json.dumps(request)) // 4)
            return
        done = sum(
            1
            for i in request.get("input", [])
            if i.get("type") == "function_call" and i.get("name") == "exec_command"
        )
        if done < len(behaviour.script):
            paths = {skill.name: skill.path for skill in seen.skills if skill.path}
            _, args = fill(("exec_command", {"cmd": behaviour.script[done]}), _cwd(request), paths)
            call = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                    "name": "exec_command", "arguments": json.dumps(args)}  # fmt: skip
            self._stream([call], number, len(json.dumps(request)) // 4)
            return
        # After a script the model answers from what its calls showed it.
        if behaviour.script:
            items = []
        elif behaviour.first or behaviour.write_answer or behaviour.best_only:
            items = self._plan(seen, behaviour, number, _cwd(request))
        else:
            items = self._decide(seen, behaviour, number) if not called else []
        if not items:
            loaded = _loaded(seen)
            if behaviour.first or behaviour.write_answer:
                called = bool(loaded)
            text = answer_from(loaded or seen.tool_outputs) if called else GENERIC_ANSWER
            items = [
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{number}",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        self._stream(items, number, len(json.dumps(request)) // 4)

    @classmethod
    def _plan(cls, seen: Seen, behaviour: Behaviour, number: int, cwd: str) -> list[dict[str, Any]]:
        """The next calls of a model that explores first, routes, then writes its answer; the
        phase follows from the ids of the calls made so far (``first_``, ``load_``,
        ``write_``)."""
        made = seen.call_ids
        done_first = sum(1 for c in made if c.startswith("first_"))
        if done_first < len(behaviour.first):
            cmd = behaviour.first[done_first]
            return [_exec(f"first_{number}", {"cmd": cmd.replace("{cwd}", cwd)})]
        if not any(c.startswith(("load_", "write_")) for c in made):
            loads = cls._decide(seen, behaviour, number)
            if loads:
                return loads
        if behaviour.write_answer and not any(c.startswith("write_") for c in made):
            loaded = _loaded(seen)
            text = answer_from(loaded) if loaded else GENERIC_ANSWER
            patch = "\n".join(["*** Begin Patch", f"*** Add File: {behaviour.write_answer}",
                               f"+{text}", "*** End Patch"])  # fmt: skip
            return [_exec(f"write_{number}", {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF\n"})]
        return []

    @staticmethod
    def _decide(seen: Seen, behaviour: Behaviour, number: int) -> list[dict[str, Any]]:
        prompt_words = words(seen.prompt)
        chosen = [
            (i, skill)
            for i, skill in enumerate(seen.skills)
            if len(prompt_words & words(skill.description)) >= behaviour.min_overlap
            or skill.name in behaviour.also_load
        ]
        if behaviour.best_only and chosen:
            chosen = [max(chosen, key=lambda c: len(prompt_words & words(c[1].description)))]
        calls: list[dict[str, Any]] = []
        for i, skill in chosen:
            call_id = f"load_{number}_{i}"
            if skill.mcp_tool is not None:
                calls.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{number}_{i}",
                        "call_id": call_id,
                        "namespace": skill.mcp_namespace,
                        "name": skill.mcp_tool,
                        # Arguments that are not an object: the MCP server rejects the call.
                        "arguments": "[1]" if behaviour.fail_reads else "{}",
                    }
                )
            elif skill.path is not None:
                # A failing read of a path that still looks like the skill's SKILL.md.
                path = ("/nonexistent" if behaviour.fail_reads else "") + skill.path
                cmd = behaviour.read_command.format(path=shlex.quote(path))
                args: dict[str, Any] = {"cmd": cmd}
                if behaviour.yield_ms is not None:
                    args["yield_time_ms"] = behaviour.yield_ms
                calls.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{number}_{i}",
                        "call_id": call_id,
                        "name": "exec_command",
                        "arguments": json.dumps(args),
                    }
                )
        return calls

    def _stream(self, items: list[dict[str, Any]], number: int, input_tokens: int) -> None:
        response_id = f"resp_{number}"
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": response_id}}
        ]
        events += [{"type": "response.output_item.done", "item": item} for item in items]
        events.append(
            {
                "type": "response.completed",
                "response": {
                    "id": response_id,
                    "usage": {
                        "input_tokens": input_tokens,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 7,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": input_tokens + 7,
                    },
                },
            }
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeResponses


@dataclass
class FakeResponses:
    """``with FakeResponses(Behaviour(...)) as fake: env["OPENAI_BASE_URL"] = fake.base_url``."""

    behaviour: Behaviour = field(default_factory=Behaviour)
    seen: list[Seen] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # raw request bodies
    credentials: list[str] = field(default_factory=list)  # Authorization header of each request
    lock: threading.Lock = field(default_factory=threading.Lock)
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def __enter__(self) -> FakeResponses:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use FakeResponses as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def offered_names(self) -> set[str]:
        """Every skill name any request offered the model."""
        with self.lock:
            return {s.name for seen in self.seen for s in seen.skills}


if __name__ == "__main__":
    import time

    with FakeResponses() as fake:
        print(fake.base_url, flush=True)
        while True:
            time.sleep(3600)
