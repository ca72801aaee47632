"""The pi runner (``skill-evals runner pi``) and pi's loading evidence (docs/agents/pi.md).

pi (``@mariozechner/pi-coding-agent``) is run headless as ``pi --mode json --no-skills`` with a
fresh agent dir (``PI_CODING_AGENT_DIR``), a moved HOME, no session file and every discovery
(skills, extensions, prompt templates, themes) off; the skills of the run are offered only through
``--skill PATH`` (copies inside the workspace). pi lists offered skills in its system prompt and a
model loads one by calling the ``read`` tool on its ``SKILL.md``; a completed, non-error ``read``
of a known skill's ``SKILL.md`` is the loading evidence.

Model selection: ``--model`` is passed through (``provider/id`` or a pattern). When
``SKILL_EVALS_PI_BASE_URL`` is set, a custom provider ``skill-evals`` is written to the fresh
``models.json`` with that base URL, the API type from ``SKILL_EVALS_PI_API`` (default
``openai-completions``) and ``apiKey`` = the *name* ``SKILL_EVALS_PI_API_KEY`` — pi resolves it
from the environment at request time, so no secret is ever written to disk.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import AgentInvocation, AgentOptions, AgentResult, RunnerSetupError
from .environment import secret_names
from .evidence import (
    EvidencePatterns,
    Load,
    skill_from_path,
    skill_from_tool,
    skills_from_command,
)
from .protocol import Event, Finished, Launch, Outcome, RunSetup
from .scaffold import STDERR_FILE, TRANSCRIPT_FILE, run_agent

AGENT = "pi"
PROVIDER = "skill-evals"
ENV_BASE_URL = "SKILL_EVALS_PI_BASE_URL"
ENV_API = "SKILL_EVALS_PI_API"
ENV_API_KEY = "SKILL_EVALS_PI_API_KEY"
APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")
# Variables that would point pi at the user's own sessions (isolated_env does not know it).
_CONTEXT_FILES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
_SKILL_MD = re.compile(r"(?:^|/)(?P<name>[^/]+)/SKILL\.md$")
# Where pi would discover a project's own skills; --no-skills turns that off, so the runner
# passes a fixture's skills from there with --skill (they are part of the project under test).
PROJECT_SKILLS = (".pi/skills", ".agents/skills")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ------------------------------------------------------------------------------------ evidence


def _read_path(args: Any) -> str | None:
    """The path argument of a ``read`` tool call (pi accepts ``path`` and ``file_path``)."""
    if not isinstance(args, dict):
        return None
    value = args.get("path", args.get("file_path"))
    if not isinstance(value, str):
        return None
    # pi strips one leading "@" from paths before reading (path-utils normalizeAtPrefix).
    return value[1:] if value.startswith("@") else value


def _skill_of_path(path: str, known: frozenset[str] | None) -> str | None:
    """The skill a read path loads: ``…/skills/<name>/SKILL.md``; with ``known`` names also any
    ``…/<name>/SKILL.md`` whose folder is a known skill (pi's ``--skill`` takes any folder)."""
    name = skill_from_path(path, known)
    if name is not None or known is None:
        return name
    match = _SKILL_MD.search(path.strip().replace("\\", "/"))
    if match and match.group("name") in known:
        return match.group("name")
    return None


@dataclass
class _Call:
    name: str
    args: Any


def _tool_calls_of(message: Any) -> list[tuple[str, _Call]]:
    """``(id, call)`` for every toolCall block of an assistant message."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    content = message.get("content")
    calls: list[tuple[str, _Call]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                calls.append((call_id, _Call(name, block.get("arguments"))))
    return calls


def _message_of(event: Mapping[str, Any]) -> Any:
    """The message an event carries: ``message_end`` (``--mode json``) or a session-file entry
    ``{"type": "message"}``; other events carry none."""
    if event.get("type") in ("message_end", "message"):
        return event.get("message")
    return None


def find_loads(
    events: Sequence[Mapping[str, Any]],
    patterns: EvidencePatterns | None = None,
    known: frozenset[str] | None = None,
) -> list[Load]:
    """Completed skill loads in a pi transcript: the ``--mode json`` event stream, or a pi session
    file. A load is a ``read`` of a known skill's ``SKILL.md`` (also a ``bash`` command naming one
    as a word, e.g. ``cat …/skills/x/SKILL.md``; or a tool named like an MCP skill loader,
    ``load_<name>_skill``) whose execution ended without error. Calls that never completed, or
    completed with ``isError``, are not loads."""
    patterns = patterns or EvidencePatterns()
    calls: dict[str, _Call] = {}
    finished: set[str] = set()
    loads: list[Load] = []

    def record(call: _Call, index: int) -> None:
        if call.name == "read":
            path = _read_path(call.args)
            name = _skill_of_path(path, known) if path is not None else None
            if name is not None:
                loads.append(Load(name, "native", AGENT, "read SKILL.md", index))
            return
        if call.name == "bash":
            command = call.args.get("command") if isinstance(call.args, dict) else None
            if isinstance(command, str):
                for name in skills_from_command(command, known):
                    loads.append(Load(name, "native", AGENT, "bash SKILL.md", index))
            return
        tool_skill = skill_from_tool(call.name, patterns)
        if tool_skill is not None and (known is None or tool_skill in known):
            loads.append(Load(tool_skill, "mcp", AGENT, f"mcp tool {call.name}", index))

    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "tool_execution_start":
            call_id, name = event.get("toolCallId"), event.get("toolName")
            if isinstance(call_id, str) and isinstance(name, str):
                calls[call_id] = _Call(name, event.get("args"))
            continue
        if kind == "tool_execution_end":
            call_id = event.get("toolCallId")
            if not isinstance(call_id, str) or call_id in finished:
                continue
            finished.add(call_id)
            call = calls.get(call_id)
            if call is None and isinstance(event.get("toolName"), str):
                call = _Call(event["toolName"], event.get("args"))
            if call is not None and event.get("isError") is False:
                record(call, index)
            continue
        message = _message_of(event)
        for call_id, call in _tool_calls_of(message):
            calls.setdefault(call_id, call)
        # Session files have no tool_execution events: the toolResult message completes the call.
        if isinstance(message, dict) and message.get("role") == "toolResult":
            call_id = message.get("toolCallId")
            if not isinstance(call_id, str) or call_id in finished:
                continue
            finished.add(call_id)
            call = calls.get(call_id)
            if call is not None and message.get("isError") is False:
                record(call, index)
    return loads


# --------------------------------------------------------------------------------- the runner


@dataclass
class _Transcript:
    """What the runner keeps from pi's event stream while it runs."""

    events: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    last_assistant: dict[str, Any] | None = None
    assistants: list[dict[str, Any]] = field(default_factory=list)
    agent_ended: bool = False
    stopped_at_max_turns: bool = False

    def add(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        kind = event.get("type")
        if kind == "turn_end":
            self.turns += 1
        elif kind == "agent_end":
            self.agent_ended = True
        message = event.get("message") if kind == "message_end" else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            self.last_assistant = message
            self.assistants.append(message)


def final_text(message: Mapping[str, Any] | None) -> str:
    """The text blocks of an assistant message, joined."""
    if message is None:
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [
        block["text"]
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "".join(parts)


def usage_meta(messages: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Token and cost sums over the assistant messages (pi reports ``usage`` on each).

    ``costUsd`` is included only when pi priced something: models pi does not know (custom
    providers without a ``cost`` table) are priced at 0, which would read as "free"."""
    input_tokens = output_tokens = 0
    cost = 0.0
    seen = False
    for message in messages:
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        seen = True
        for key in ("input", "cacheRead", "cacheWrite"):
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                input_tokens += int(value)
        value = usage.get("output")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            output_tokens += int(value)
        price = usage.get("cost")
        total = price.get("total") if isinstance(price, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            cost += float(total)
    meta: dict[str, float] = {}
    if seen:
        meta["inputTokens"] = input_tokens
        meta["outputTokens"] = output_tokens
    if cost > 0:
        meta["costUsd"] = round(cost, 10)
    return meta


def _model_args(options: AgentOptions, env: Mapping[str, str], agent_dir: Path) -> list[str]:
    """``--provider/--model`` arguments, writing ``models.json`` for a custom base URL."""
    base_url = env.get(ENV_BASE_URL, "")
    if not base_url:
        return ["--model", options.model] if options.model else []
    api = env.get(ENV_API, "") or "openai-completions"
    if api not in APIS:
        raise RunnerSetupError(f"{ENV_API}={api}: expected one of {', '.join(APIS)}")
    if not options.model:
        raise RunnerSetupError(
            f"{ENV_BASE_URL} is set: pass --model with the model id that server serves"
        )
    models = {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": api,
                # The variable's *name*: pi reads its value from the environment per request.
                "apiKey": ENV_API_KEY,
                "models": [{"id": options.model}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2) + "\n", encoding="utf-8")
    return ["--provider", PROVIDER, "--model", options.model]


def _has_context_file(project: Path) -> bool:
    return any((project / name).is_file() for name in _CONTEXT_FILES)


def build_command(
    binary: str, skill_paths: Sequence[Path], model_args: Sequence[str], context_files: bool
) -> list[str]:
    """The pi command line (the prompt goes to stdin, never to argv, so a prompt starting with
    ``@`` or ``-`` is not taken for a file argument or an option)."""
    argv = [
        binary,
        "--mode",
        "json",
        "--no-session",
        "--no-skills",
        "--no-extensions",
        "--no-prompt-templates",
        "--no-themes",
    ]
    if not context_files:
        argv.append("--no-context-files")
    for path in skill_paths:
        argv += ["--skill", str(path)]
    return argv + list(model_args)


def _secretless_shell(root: Path, env: Mapping[str, str]) -> Path | None:
    """A wrapper around bash that starts it without the credential-like variables (pi runs every
    ``bash`` tool call as ``<shellPath> -c CMD`` with its own environment), so commands the model
    runs cannot print a key — as Codex's ``shell_environment_policy`` does. The wrapper holds
    variable *names* only. None when there is nothing to hide or no bash (pi then uses its
    default shell)."""
    names = [n for n in secret_names(env) if _SHELL_NAME.fullmatch(n)]
    bash = shutil.which("bash", path=env.get("PATH"))
    if not names or bash is None:
        return None
    wrapper = root / "bin" / "bash"
    wrapper.parent.mkdir()
    unset = " ".join(f"-u {name}" for name in names)
    wrapper.write_text(f'#!/bin/sh\nexec env {unset} {shlex.quote(bash)} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def outcome(
    transcript: _Transcript, status: int, known: frozenset[str], duration_ms: int, kept: Path | None
) -> Outcome:
    """Turn a finished pi run into its outcome, or a setup error when the run produced no
    evidence (pi failed to start, or the model request itself failed). ``kept``: the workspace
    kept with --keep-workspace, named in the hint."""
    keep_hint = (
        f"see {kept / STDERR_FILE} and {kept / TRANSCRIPT_FILE}"
        if kept is not None
        else f"rerun with --keep-workspace to inspect {STDERR_FILE} and {TRANSCRIPT_FILE}"
    )
    if not transcript.stopped_at_max_turns:
        if not transcript.agent_ended:
            raise RunnerSetupError(
                f"pi exited with status {status} before the agent finished (no model reply; "
                f"check --model, {ENV_BASE_URL} and the provider's API key variable); {keep_hint}"
            )
        stop = transcript.last_assistant.get("stopReason") if transcript.last_assistant else None
        if stop in ("error", "aborted"):
            # The model call failed: the run says nothing about the skill, so it is void, not a
            # task failure.
            raise RunnerSetupError(f"pi's model request failed (stopReason '{stop}'); {keep_hint}")
    succeeded = (
        status == 0
        and not transcript.stopped_at_max_turns
        and transcript.last_assistant is not None
        and transcript.last_assistant.get("stopReason") == "stop"
    )
    # pi's own status when it failed after finishing; 1 for a stop at --max-turns (pi was ended
    # by our SIGTERM) or an answer that did not end normally (e.g. stopReason "length").
    failed_code = status if status > 0 and not transcript.stopped_at_max_turns else 1
    meta = usage_meta(transcript.assistants)
    meta["durationMs"] = duration_ms
    return Outcome(
        output=final_text(transcript.last_assistant),
        exit_code=0 if succeeded else failed_code,
        loads=find_loads(transcript.events, EvidencePatterns(), known),
        meta=meta,
    )


class Pi:
    """pi as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "pi"
    skill_folders = PROJECT_SKILLS

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """``--delivery mcp`` is refused: pi has no MCP client."""
        if options.delivery == "mcp":
            raise RunnerSetupError(
                "--delivery mcp: pi has no MCP support (it ships none by design; MCP would need "
                "a pi extension); use --delivery native"
            )

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh agent dir, every discovery off, skills passed with ``--skill``; ``--max-turns``
        emulated by stopping pi after that many turns."""
        ws, options, env = setup.workspace, setup.options, setup.env
        agent_dir = ws.home / ".pi" / "agent"
        agent_dir.mkdir(parents=True)
        settings: dict[str, object] = {"quietStartup": True, "enableInstallTelemetry": False}
        shell = _secretless_shell(ws.root, setup.caller_env)
        if shell is not None:
            settings["shellPath"] = str(shell)
        (agent_dir / "settings.json").write_text(json.dumps(settings) + "\n", encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
        env["PI_OFFLINE"] = "1"  # no version check, telemetry or package updates at startup
        model_args = _model_args(options, env, agent_dir)
        skill_paths = [ws.install_skill(ref, ws.root / "skills") for ref in setup.offered]
        skill_paths += [ref.path for ref in setup.fixture_skills]
        argv = build_command(setup.binary, skill_paths, model_args, _has_context_file(ws.project))
        return Launch(
            argv=argv,
            stdin=setup.invocation.prompt.encode("utf-8"),
            stop_after=_turn_limit(options.max_turns),
        )

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The last assistant message, usage sums and loads; a void run when pi never finished
        or its model request failed."""
        transcript = _Transcript()
        for event in events:
            transcript.add(event)
        transcript.stopped_at_max_turns = run.stopped
        kept = setup.workspace.root if setup.options.keep_workspace else None
        result = outcome(transcript, run.status, setup.known, round(run.duration_ms), kept)
        result.offered = [ref.name for ref in (*setup.offered, *setup.fixture_skills)]
        return result

    def find_loads(
        self,
        events: Sequence[Event],
        patterns: EvidencePatterns | None = None,
        known: frozenset[str] | None = None,
    ) -> list[Load]:
        """See :func:`find_loads`."""
        return find_loads(events, patterns, known)


PLUGIN = Pi()


def run(
    invocation: AgentInvocation,
    options: AgentOptions,
    environ: Mapping[str, str] | None = None,
) -> AgentResult:
    """One isolated pi run for the invocation."""
    return run_agent(PLUGIN, invocation, options, environ)


def _turn_limit(max_turns: int | None) -> Callable[[Event], bool] | None:
    """pi has no turn limit: stop it after the N-th turn that still asked for a tool."""
    if max_turns is None:
        return None
    turns = 0

    def stop_after(event: Event) -> bool:
        nonlocal turns
        if event.get("type") != "turn_end":
            return False
        turns += 1
        return turns >= max_turns and bool(_tool_calls_of(event.get("message")))

    return stop_after
