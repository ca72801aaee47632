"""A scripted OpenAI Chat Completions server on 127.0.0.1 for driving the real Qwen Code CLI in
tests, misbehaving as real model APIs do when asked to (429/529 with ``Retry-After``, a 500, a
refusal).

Every reply is decided from what Qwen Code sends, as a model would decide: the skills it may load
are the ones listed in the ``<available_skills>`` block of the request (Qwen Code puts it in a
``<system-reminder>`` of the user turn); it picks a skill when enough words of the user's prompt
occur in that skill's description (or ``Behaviour.also_load`` names it) and loads it the way
``Behaviour.load_with`` says (the ``skill`` tool, or ``cat`` of its ``SKILL.md`` through
``run_shell_command``); all picked skills are loaded in one turn (parallel calls). The final
answer quotes the first instruction of every skill body the tool results really showed, else a
generic answer. So a skill that leaks into a ``without`` run is listed, picked, loaded and
reported — and which skill bodies reached the model is read from the requests themselves
(:meth:`FakeQwenModel.bodies_received`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.agents.fake_openai_chat import Call, stream_chunks
from tests.agents.fake_openai_chat import _words as words_of
from tests.agents.loopback import LoopbackServer

GENERIC_ANSWER = "I have no specific instructions for this, so here is a general answer."
REFUSAL = "I'm sorry, but I can't help with that request."
_SKILL = re.compile(
    r"<skill>\s*<name>\s*(?P<name>.*?)\s*</name>\s*<description>\s*(?P<description>.*?)\s*"
    r"</description>",
    re.S,
)
# A deferred MCP tool as Qwen Code lists it: - "mcp__skills__load_x_skill": "description"
_MCP_TOOL = re.compile(
    r'^- "(?P<tool>mcp__\w+?__load_(?P<name>\w+)_skill)": "(?P<description>.*)"$', re.M
)
_CWD = re.compile(r"I'm currently working in the directory: (?P<cwd>\S+)")
_BASE_DIR = re.compile(r"Base directory for this skill: (?P<dir>\S+)")
_NOT_PROSE = ("#", "Base directory", "Important:", "Error", "Exit", "Signal", "Process Group",
              "Command:", "Directory:", "Output:")  # fmt: skip


@dataclass
class Behaviour:
    """What the scripted model does; tests set the knobs they need."""

    min_overlap: int = 2  # prompt/description words in common needed to pick a skill
    also_load: tuple[str, ...] = ()  # listed skills to load whatever the prompt
    load_with: str = "skill"  # "skill" | "bash" | "read" (read_file)
    first: tuple[Call, ...] = ()  # tool calls made (in parallel) before loading
    wrong_name: bool = False  # call the skill tool with a name that does not exist
    fail_status: int | None = None  # answer requests with this HTTP status
    fail_times: int | None = None  # … only the first N requests (None: all of them)
    fail_prompt: str | None = None  # … only requests whose user prompt contains this
    retry_after: str | None = None  # the failure's Retry-After header
    refuse: bool = False  # answer with a refusal (finish_reason content_filter)
    # Pick only the listed skill sharing the most words with the prompt (the first listed on a
    # tie), as a model picks among a catalog of installed skills.
    best_only: bool = False
    # After loading, write the answer to this workspace file with write_file, then answer.
    write_answer: str | None = None


@dataclass
class Request:
    """One chat request, reduced to what the scripted model decides on."""

    prompt: str
    cwd: str
    skills: dict[str, str]  # listed skills: name -> description
    mcp_tools: dict[str, str] = field(default_factory=dict)  # skill name -> its MCP tool
    steps: list[list[tuple[str, dict[str, Any], str]]] = field(default_factory=list)
    tool_texts: list[str] = field(default_factory=list)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
    return []


def parse(body: dict[str, Any]) -> Request:
    """Reduce a Chat Completions request as Qwen Code sends it."""
    prompt, cwd, skills, tools = "", "", {}, {}
    steps: list[list[tuple[str, dict[str, Any], str]]] = []
    results: dict[str, str] = {}
    for message in body.get("messages", []):
        role = message.get("role")
        for text in _texts(message.get("content")):
            for m in _SKILL.finditer(text):
                skills.setdefault(
                    m["name"], re.sub(r"\s*\((project|bundled|user)\)$", "", m["description"])
                )
            for m in _MCP_TOOL.finditer(text):
                name = m["name"].replace("_", "-")
                skills.setdefault(name, m["description"])
                tools[name] = m["tool"]
            found = _CWD.search(text)
            cwd = found["cwd"] if found else cwd
            if role == "user" and not text.lstrip().startswith("<system-reminder>"):
                prompt = text
        if role == "assistant" and message.get("tool_calls"):
            step = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                args = json.loads(function.get("arguments") or "{}")
                step.append((str(function.get("name")), args, str(call.get("id"))))
            steps.append(step)
        elif role == "tool":
            results[str(message.get("tool_call_id"))] = "".join(_texts(message.get("content")))
    request = Request(prompt, cwd, skills, tools)
    request.steps = [[(t, a, results.get(i, "")) for t, a, i in step] for step in steps]
    request.tool_texts = list(results.values())
    return request


def instruction(text: str) -> str | None:
    """The first prose line of a skill body a tool result showed (the skill tool's output or a
    ``cat`` of SKILL.md), else None."""
    if "Base directory for this skill:" not in text and "\n---" not in text:
        return None
    body = text.split("\n---", 2)[-1] if "\n---" in text else text
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(_NOT_PROSE):
            return line
    return None


def decide(request: Request, behaviour: Behaviour) -> list[Call] | str:
    """The next step: tool calls, or the final answer."""
    if behaviour.refuse:
        return REFUSAL
    plan: list[list[Call]] = []
    if behaviour.first:
        cwd = request.cwd
        plan.append([Call(c.tool, {k: str(v).replace("{cwd}", cwd) for k, v in c.args.items()})
                     for c in behaviour.first])  # fmt: skip
    words = words_of(request.prompt)
    overlap = {name: len(words & words_of(text)) for name, text in request.skills.items()}
    chosen = [name for name in request.skills
              if overlap[name] >= behaviour.min_overlap or name in behaviour.also_load]  # fmt: skip
    if behaviour.best_only and chosen:
        chosen = [max(chosen, key=lambda name: overlap[name])]
    if chosen:
        if behaviour.load_with == "read":
            calls = [Call("read_file", {"file_path": f"{request.cwd}/.qwen/skills/{n}/SKILL.md"})
                     for n in chosen]  # fmt: skip
        elif behaviour.load_with == "bash":
            calls = [Call("run_shell_command", {"command": f"cat .qwen/skills/{n}/SKILL.md"})
                     for n in chosen]  # fmt: skip
        else:
            suffix = "-missing" if behaviour.wrong_name else ""
            calls = [Call("tool_call", {"name": request.mcp_tools[n], "arguments": {}})
                     if n in request.mcp_tools else Call("skill", {"skill": n + suffix})
                     for n in chosen]  # fmt: skip
        plan.append(calls)
    if len(request.steps) < len(plan):
        return plan[len(request.steps)]
    answers = [f"Following the skill instructions: {found}" for text in request.tool_texts
               if (found := instruction(text))]  # fmt: skip
    answer = " ".join(dict.fromkeys(answers)) or GENERIC_ANSWER
    if behaviour.write_answer and len(request.steps) == len(plan):
        path = f"{request.cwd}/{behaviour.write_answer}"  # Qwen Code wants an absolute path
        return [Call("write_file", {"file_path": path, "content": answer})]
    return answer


def link_short_tmpdir(tmp: Path) -> Path:
    """``tmp/tmpdir`` as a symlink to a fresh short folder under /tmp (removed when the test
    process ends), for the TMPDIR of a run: Qwen Code names its chat log folder after the
    (resolved) working directory and cannot write it past 255 characters, which pytest's
    folders under a long TMPDIR (as .ci/run sets) pass."""
    link = tmp / "tmpdir"
    if not link.exists():
        short = tempfile.mkdtemp(prefix="sq-", dir="/tmp")
        atexit.register(shutil.rmtree, short, True)
        link.symlink_to(short, target_is_directory=True)
    return link


@contextlib.contextmanager
def short_tmpdir(tmp: Path) -> Iterator[Path]:
    """:func:`link_short_tmpdir`, its folder removed when the block ends."""
    link = link_short_tmpdir(tmp)
    try:
        yield link
    finally:
        shutil.rmtree(link.resolve(), ignore_errors=True)


class FakeQwenModel(LoopbackServer):
    """``with FakeQwenModel(Behaviour(...)) as model: model.base_url`` (…/v1). Every request
    body is kept in ``requests``."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.credentials: list[str] = []  # each request's bearer token
        self.failures = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        super().__init__(self._handler())

    def parsed(self) -> list[Request]:
        """Every request received so far, parsed."""
        with self._lock:
            return [parse(body) for body in self.requests]

    def parse_first(self) -> Request:
        """The first request received, parsed."""
        with self._lock:
            return parse(self.requests[0])

    def listings(self) -> list[dict[str, str]]:
        """``{name: ""}`` of the skills each conversation's first request listed (Qwen Code
        names where a skill comes from, "project", never its path)."""
        return [dict.fromkeys(r.skills, "") for r in self.parsed() if not r.steps]

    def offered_names(self) -> set[str]:
        """Every skill any request listed."""
        return {name for request in self.parsed() for name in request.skills}

    def bodies_received(self) -> set[str]:
        """The skills whose body came back to the model in a tool result (the folder named by
        the skill tool's ``Base directory`` line, or a SKILL.md's ``name:``)."""
        names: set[str] = set()
        for request in self.parsed():
            for text in request.tool_texts:
                names.update(
                    m["dir"].rstrip("/").rpartition("/")[2] for m in _BASE_DIR.finditer(text)
                )
                names.update(re.findall(r"^name: (\S+)$", text, re.M))
                names.update(re.findall(r"^---\s*name: (\S+)", text, re.M))
        return names

    def _fail(self, body: dict[str, Any]) -> int | None:
        status, limit = self.behaviour.fail_status, self.behaviour.fail_times
        wanted = self.behaviour.fail_prompt
        if wanted is not None and wanted not in parse(body).prompt:
            return None
        with self._lock:
            if status is None or (limit is not None and self.failures >= limit):
                return None
            self.failures += 1
            return status

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                auth = self.headers.get("Authorization") or ""
                with owner._lock:
                    owner.requests.append(body)
                    owner.credentials.append(auth.removeprefix("Bearer "))
                status = owner._fail(body)
                if status is not None:
                    data = json.dumps({"error": {"message": f"scripted HTTP {status}",
                                                 "type": "scripted"}}).encode()  # fmt: skip
                    self.send_response(status)
                    if owner.behaviour.retry_after is not None:
                        self.send_header("Retry-After", owner.behaviour.retry_after)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                reply = decide(parse(body), owner.behaviour)
                chunks = stream_chunks(reply, str(body.get("model")), owner._ids, 100)
                if owner.behaviour.refuse:
                    chunks[-2]["choices"][0]["finish_reason"] = "content_filter"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
