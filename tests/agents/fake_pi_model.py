"""A scripted model server for driving the real ``pi`` CLI in tests (OpenAI Chat Completions API,
streamed as server-sent events, on 127.0.0.1 only).

It is not a canned transcript: every reply is *decided from what pi sends*, the way a model would
decide. The system prompt pi builds lists the offered skills as
``<skill><name>…</name><description>…</description><location>…/SKILL.md</location></skill>``;
when enough words of the user prompt occur in a listed skill's description, the model calls pi's
``read`` tool on that location. After the tool results come back, the final answer is derived from
what was actually read (the first instruction line of the skill body), else a generic answer. So a
skill that leaks into a ``without`` run shows up as a real load, and a skill that is not offered can
never be loaded.

Behaviours (``Behaviour``) script the awkward cases: also load a named neighbour, or read a
non-existent SKILL.md path (a failed load).

The scripted pi runs of tests/agents/catalog_work.py use fake_openai_chat.py (pi speaks
the same API); this one keeps the behaviours of test_pi.py and shares that module's helpers.

Run standalone for manual experiments: ``python tests/agents/fake_pi_model.py [--port N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.agents.fake_openai_chat import GENERIC_ANSWER, _chunk, _text_of, _words
from tests.agents.loopback import LoopbackServer
from tests.agents.scripts import Step, fill

__all__ = ["GENERIC_ANSWER", "Behaviour", "FakePiModel", "Reply", "decide", "parse_request"]

_SKILL_BLOCK = re.compile(
    r"<skill>\s*<name>(?P<name>.*?)</name>\s*<description>(?P<description>.*?)</description>\s*"
    r"<location>(?P<location>.*?)</location>\s*</skill>",
    re.S,
)


@dataclass
class Behaviour:
    """What the scripted model does beyond its default routing."""

    load_neighbour: str | None = (
        None  # also read this offered skill's SKILL.md, whatever the prompt
    )
    fail_read: bool = False  # read a SKILL.md path that does not exist instead of the real one
    min_overlap: int = 2  # prompt words that must occur in a description to load that skill
    hang: bool = False  # never answer (until the server stops): a model that takes forever
    run_command: str | None = None  # first run this with pi's bash tool (e.g. "env")
    fail_status: int | None = None  # answer every request with this HTTP error (e.g. 401)
    fail_first: list[int] = field(default_factory=list)  # the first requests get these, one each
    fail_prompt: str | None = None  # fail_first only hits requests whose prompt holds this
    fail_offered: str | None = None  # ... and that offer this skill (one variant of one case)
    script: list[Step] = field(default_factory=list)  # tool calls, one per turn (scripts.py)


@dataclass(frozen=True)
class OfferedSkill:
    """A skill as listed in the system prompt pi sent."""

    name: str
    description: str
    location: str


def offered_skills(system_prompt: str) -> list[OfferedSkill]:
    """The skills pi listed in its system prompt (XML-unescaped)."""
    return [
        OfferedSkill(
            name=html.unescape(m.group("name")).strip(),
            description=html.unescape(m.group("description")).strip(),
            location=html.unescape(m.group("location")).strip(),
        )
        for m in _SKILL_BLOCK.finditer(system_prompt)
    ]


def first_instruction(skill_text: str) -> str | None:
    """The first non-heading line of a SKILL.md body (frontmatter skipped)."""
    lines = skill_text.splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                lines = lines[i + 1 :]
                break
    for line in lines:
        # pi's read tool may prefix lines; keep only real prose lines.
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not stripped.startswith("["):
            return stripped
    return None


@dataclass
class Conversation:
    """What one request contains, reduced to what the scripted model decides on."""

    system: str
    prompt: str
    tool_calls: dict[str, str]  # tool call id -> path read
    tool_results: dict[str, str]  # tool call id -> result text
    model: str
    calls_made: int = 0  # tool calls of every kind so far


def parse_request(body: dict[str, Any]) -> Conversation:
    """Reduce an OpenAI chat request to a Conversation."""
    system, prompt = "", ""
    calls: dict[str, str] = {}
    results: dict[str, str] = {}
    made = 0
    for message in body.get("messages", []):
        role = message.get("role")
        if role in ("system", "developer") and not system:
            system = _text_of(message.get("content"))
        elif role == "user" and not prompt:
            prompt = _text_of(message.get("content"))
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                made += 1
                try:
                    args = json.loads(call["function"]["arguments"] or "{}")
                except (KeyError, ValueError):
                    args = {}
                calls[call.get("id", "")] = str(args.get("path", ""))
        elif role == "tool":
            results[message.get("tool_call_id", "")] = _text_of(message.get("content"))
    return Conversation(system, prompt, calls, results, str(body.get("model", "")), made)


@dataclass
class Reply:
    """The scripted model's decision: tool reads, or a final text."""

    reads: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # bash tool calls
    text: str = ""
    calls: list[Step] = field(default_factory=list)  # any other tool calls (scripted)


def decide(conv: Conversation, behaviour: Behaviour) -> Reply:
    """Route like a model would: read the best-matching offered skill, then answer from it."""
    skills = offered_skills(conv.system)
    if behaviour.script:
        if conv.calls_made < len(behaviour.script):
            cwd = re.search(r"Current working directory: (\S+)", conv.system)
            paths = {s.name: s.location for s in skills}
            step = fill(behaviour.script[conv.calls_made], cwd.group(1) if cwd else ".", paths)
            return Reply(calls=[step])
        return Reply(text=GENERIC_ANSWER)
    if not conv.tool_calls and behaviour.run_command:
        return Reply(commands=[behaviour.run_command])
    if not conv.tool_calls:
        prompt_words = _words(conv.prompt)
        best: OfferedSkill | None = None
        best_score = 0
        for skill in skills:
            score = len(prompt_words & _words(skill.description))
            if score >= behaviour.min_overlap and score > best_score:
                best, best_score = skill, score
        chosen = [best] if best is not None else []
        if behaviour.load_neighbour:
            chosen += [s for s in skills if s.name == behaviour.load_neighbour and s not in chosen]
        if behaviour.fail_read:
            # Looks like a skill path of a known name, but is not there: the read must fail.
            return Reply(reads=[f"/nonexistent/skills/{s.name}/SKILL.md" for s in chosen])
        if chosen:
            return Reply(reads=[s.location for s in chosen])
        return Reply(text=GENERIC_ANSWER)
    by_location = {s.location: s for s in skills}
    answers: list[str] = []
    for call_id, path in conv.tool_calls.items():
        result = conv.tool_results.get(call_id, "")
        read = by_location.get(path)
        instruction = first_instruction(result) if read is not None else None
        if read is not None and instruction is not None:
            answers.append(f"Following the {read.name} skill: {instruction}")
    return Reply(text=" ".join(answers) if answers else GENERIC_ANSWER)


def stream_chunks(reply: Reply, model: str, call_ids: itertools.count[int]) -> list[dict[str, Any]]:
    """The SSE chunks of a reply, as OpenAI streams them (text in two deltas, usage last)."""
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    calls = [("read", {"path": p}) for p in reply.reads]
    calls += [("bash", {"command": c}) for c in reply.commands]
    calls += reply.calls
    if calls:
        for index, (tool, arguments) in enumerate(calls):
            args = json.dumps(arguments)
            call = {
                "index": index,
                "id": f"call_{next(call_ids)}",
                "type": "function",
                "function": {"name": tool, "arguments": args[: len(args) // 2]},
            }
            chunks.append(_chunk(model, {"tool_calls": [call]}))
            rest = {"index": index, "function": {"arguments": args[len(args) // 2 :]}}
            chunks.append(_chunk(model, {"tool_calls": [rest]}))
        chunks.append(_chunk(model, {}, "tool_calls"))
    else:
        half = len(reply.text) // 2
        chunks.append(_chunk(model, {"content": reply.text[:half]}))
        chunks.append(_chunk(model, {"content": reply.text[half:]}))
        chunks.append(_chunk(model, {}, "stop"))
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    chunks.append({**_chunk(model, {}), "choices": [], "usage": usage})
    return chunks


class FakePiModel(LoopbackServer):
    """The server: ``with FakePiModel() as model: model.base_url`` (…/v1). Every request body
    received is kept in ``requests`` so tests can check what the agent was shown."""

    def __init__(self, behaviour: Behaviour | None = None, port: int = 0) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.credentials: list[str] = []  # the Authorization header of each request
        self._lock = threading.Lock()
        self._call_ids = itertools.count(1)
        super().__init__(self._handler(), port)

    def system_prompts(self) -> list[str]:
        """The system prompt of every request received so far."""
        with self._lock:
            return [parse_request(body).system for body in self.requests]

    def _respond(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            reply = decide(parse_request(body), self.behaviour)
            return stream_chunks(reply, str(body.get("model", "")), self._call_ids)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404, "only /v1/chat/completions is scripted")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self.send_error(400, "request body is not JSON")
                    return
                with owner._lock:
                    owner.credentials.append(self.headers.get("Authorization") or "")
                chunks = owner._respond(body)
                conv = parse_request(body)
                want, skill = owner.behaviour.fail_prompt, owner.behaviour.fail_offered
                hit = (want is None or want in conv.prompt) and (
                    skill is None or skill in {s.name for s in offered_skills(conv.system)}
                )
                with owner._lock:
                    first = owner.behaviour.fail_first if hit else []
                    status = first.pop(0) if first else owner.behaviour.fail_status
                if status is not None:
                    error = {"error": {"message": "scripted failure", "type": "invalid_api_key"}}
                    data = json.dumps(error).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
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

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output quiet

        return Handler


def main() -> None:
    """Serve until interrupted (manual experiments)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--load-neighbour", default=None)
    parser.add_argument("--fail-read", action="store_true")
    ns = parser.parse_args()
    behaviour = Behaviour(load_neighbour=ns.load_neighbour, fail_read=ns.fail_read)
    with FakePiModel(behaviour, ns.port) as model:
        print(f"SKILL_EVALS_PI_BASE_URL={model.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
