"""The pi runner (``skill-evals runner pi``) and pi's loading evidence (docs/agents/pi.md).

pi (``@mariozechner/pi-coding-agent``) is run headless as ``pi --mode json --no-skills`` with a
fresh agent dir (``PI_CODING_AGENT_DIR``), a moved HOME, no session file and every discovery
(skills, extensions, prompt templates, themes) off; the skills of the run are offered only through
``--skill PATH`` (copies inside the workspace). pi lists offered skills in its system prompt and a
model loads one by calling the ``read`` tool on its ``SKILL.md``. Evidence follows the shared rules
of :mod:`.proof`: any tool result (``read``, ``bash``, …) that shows a skill's content, and a
``/skill:<name>`` prompt that pi expanded.

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

from . import reasons
from .base import AgentInvocation, AgentOptions, AgentResult, RunnerSetupError
from .content import SkillText
from .environment import secret_names
from .evidence import Event, EvidencePatterns, Load, ToolCall
from .proof import INJECTED, prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .scaffold import STDERR_FILE, TRANSCRIPT_FILE, run_agent

AGENT = "pi"
PROVIDER = "skill-evals"
ENV_BASE_URL = "SKILL_EVALS_PI_BASE_URL"
ENV_API = "SKILL_EVALS_PI_API"
ENV_API_KEY = "SKILL_EVALS_PI_API_KEY"
_HINT = f"check --model, {ENV_BASE_URL} and the provider's API key variable"
APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")
# The providers' key variables pi reads (pi-ai's env-api-keys), the custom provider's, and the
# cloud credentials of Bedrock, Azure and Vertex.
AUTH_VARIABLES = (
    ENV_API_KEY, "AI_GATEWAY_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN",
    "AZURE_OPENAI_*", "CEREBRAS_API_KEY", "CLOUDFLARE_API_KEY", "COPILOT_GITHUB_TOKEN",
    "DEEPSEEK_API_KEY", "FIREWORKS_API_KEY", "GEMINI_API_KEY", "GH_TOKEN", "GITHUB_TOKEN",
    "GOOGLE_CLOUD_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_PROJECT", "GROQ_API_KEY",
    "HF_TOKEN", "KIMI_API_KEY", "MINIMAX_API_KEY", "MINIMAX_CN_API_KEY", "MISTRAL_API_KEY",
    "MOONSHOT_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY", "OPENROUTER_API_KEY",
    "XAI_API_KEY", "XIAOMI_*", "ZAI_API_KEY", "AWS_*",
)  # fmt: skip
_CONTEXT_FILES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
# Where pi would discover a project's own skills; --no-skills turns that off, so the runner
# passes a fixture's skills from there with --skill (they are part of the project under test).
PROJECT_SKILLS = (".pi/skills", ".agents/skills")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ------------------------------------------------------------------------------------ evidence

# pi expands `/skill:<name>` itself into a user message that starts with this block.
_SKILL_BLOCK = re.compile(r'<skill name="(?P<name>[^"]{1,128})" location="')


def _tool_calls_of(message: Any) -> list[tuple[str, str, Any]]:
    """``(id, name, arguments)`` for every toolCall block of an assistant message, in order."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    content = message.get("content")
    calls: list[tuple[str, str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                calls.append((call_id, name, block.get("arguments")))
    return calls


def _message_of(event: Mapping[str, Any]) -> Any:
    """The message an event carries: ``message_end`` (``--mode json``) or a session-file entry
    ``{"type": "message"}``; other events carry none."""
    if event.get("type") in ("message_end", "message"):
        return event.get("message")
    return None


def _text_of(value: Any) -> str:
    """The text blocks of a message or tool result (``content`` list or string)."""
    content = value.get("content") if isinstance(value, dict) else None
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", ""))
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "text"
    )


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every tool call of a pi transcript (the ``--mode json`` stream or a session file),
    ordered by its place in the assistant message that made it — pi runs parallel calls at once
    and they may finish in any order — with the result of its ``tool_execution_end`` (or the
    ``toolResult`` message of a session file). User messages pi expanded from ``/skill:`` are
    ``INJECTED`` calls."""
    made: dict[str, tuple[str, dict[str, Any], tuple[int, int]]] = {}
    done: dict[str, ToolCall] = {}
    injected: list[ToolCall] = []

    def finish(call_id: Any, index: int, name: Any, args: Any, failed: Any, result: Any) -> None:
        if not isinstance(call_id, str) or call_id in done:
            return
        fallback = (name if isinstance(name, str) else "", args if isinstance(args, dict) else {})
        call_name, call_args, order = made.get(call_id, (*fallback, (index, 0)))
        ok = failed is False
        done[call_id] = ToolCall(call_name, call_args, order, index, ok, _text_of(result))

    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "tool_execution_start":
            call_id, name, args = event.get("toolCallId"), event.get("toolName"), event.get("args")
            if isinstance(call_id, str) and isinstance(name, str):
                made.setdefault(call_id, (name, args if isinstance(args, dict) else {}, (index, 0)))
        elif kind == "tool_execution_end":
            finish(event.get("toolCallId"), index, event.get("toolName"), event.get("args"),
                   event.get("isError"), event.get("result"))  # fmt: skip
        message = _message_of(event)
        for slot, (call_id, name, args) in enumerate(_tool_calls_of(message)):
            made.setdefault(call_id, (name, args if isinstance(args, dict) else {}, (index, slot)))
        if not isinstance(message, dict):
            continue
        if message.get("role") == "toolResult":
            finish(message.get("toolCallId"), index, message.get("toolName"), None,
                   message.get("isError"), message)  # fmt: skip
        elif message.get("role") == "user" and _SKILL_BLOCK.match(_text_of(message)):
            injected.append(ToolCall(INJECTED, {}, (index, 0), index, True, _text_of(message)))
    pending = [ToolCall(n, a, o, None, False, "") for i, (n, a, o) in made.items() if i not in done]
    return sorted([*done.values(), *pending, *injected], key=lambda call: call.order)


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """A user message pi expanded from ``/skill:<name>`` (it starts with ``<skill name=…``) for
    a skill the run offered. A prompt that itself starts with such a block is not trusted."""
    if prompt is not None and _SKILL_BLOCK.match(prompt.lstrip()):
        return []
    loads: list[Load] = []
    for index, event in enumerate(events):
        message = _message_of(event)
        if isinstance(message, dict) and message.get("role") == "user":
            match = _SKILL_BLOCK.match(_text_of(message))
            if match and match.group("name") in available:
                name = match.group("name")
                loads.append(
                    Load(name, "explicit", AGENT, "skill message", index, order=(index, 0))
                )
    return loads


def find_loads(
    events: Sequence[Event],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a pi transcript (see :func:`~.proof.prove`);
    ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


# --------------------------------------------------------------------------------- the runner


@dataclass
class _Transcript:
    """What the runner keeps from pi's event stream while it runs."""

    events: list[Event] = field(default_factory=list)
    turns: int = 0
    last_assistant: Mapping[str, Any] | None = None
    assistants: list[Mapping[str, Any]] = field(default_factory=list)
    agent_ended: bool = False
    stopped_at_max_turns: bool = False

    def add(self, event: Event) -> None:
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


def context_file(project: Path) -> Path | None:
    """The project's own instruction file, the one pi would pick in that folder."""
    return next((project / n for n in _CONTEXT_FILES if (project / n).is_file()), None)


def build_command(
    binary: str,
    skill_paths: Sequence[Path],
    model_args: Sequence[str],
    context: Path | None = None,
) -> list[str]:
    """The pi command line (the prompt goes to stdin, never to argv, so a prompt starting with
    ``@`` or ``-`` is not taken for a file argument or an option).

    pi reads AGENTS.md / CLAUDE.md from the working directory *and every ancestor* up to ``/``,
    so its discovery is always off; the project's own file (``context``) is appended to the
    system prompt instead, and nothing above the workspace is read."""
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
    argv.append("--no-context-files")
    if context is not None:
        argv += ["--append-system-prompt", str(context)]
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
    transcript: _Transcript,
    status: int,
    duration_ms: int,
    kept: Path | None,
    max_turns: int | None = None,
) -> Outcome:
    """Turn a finished pi run into its outcome, or the runner's reason when the run produced no
    evidence: pi failed to start, the model request itself failed (by its HTTP status), or pi
    was stopped at ``max_turns``. ``kept``: the workspace kept with --keep-workspace, named in
    the hint."""
    keep_hint = (
        f"see {kept / STDERR_FILE} and {kept / TRANSCRIPT_FILE}"
        if kept is not None
        else f"rerun with --keep-workspace to inspect {STDERR_FILE} and {TRANSCRIPT_FILE}"
    )
    if transcript.stopped_at_max_turns:
        raise reasons.turn_limit(max_turns)
    if not transcript.agent_ended:
        raise RunnerSetupError(
            f"pi exited with status {status} before the agent finished (no model reply; "
            f"check --model, {ENV_BASE_URL} and the provider's API key variable); {keep_hint}"
        )
    stop = transcript.last_assistant.get("stopReason") if transcript.last_assistant else None
    if stop in ("error", "aborted"):
        # The model call failed: the run says nothing about the skill, so it is void, not a
        # task failure. pi's errorMessage starts with the HTTP status ("429 …").
        message = transcript.last_assistant.get("errorMessage") if transcript.last_assistant else ""
        found = reasons.status_in(message, anchored=True) if isinstance(message, str) else None
        raise reasons.api_failure(found, None, _HINT)
    succeeded = (
        status == 0
        and transcript.last_assistant is not None
        and transcript.last_assistant.get("stopReason") == "stop"
    )
    # pi's own status when it failed after finishing; 1 for an answer that did not end normally
    # (e.g. stopReason "length").
    failed_code = status if status > 0 else 1
    meta = usage_meta(transcript.assistants)
    meta["durationMs"] = duration_ms
    return Outcome(
        output=final_text(transcript.last_assistant),
        exit_code=0 if succeeded else failed_code,
        meta=meta,
    )


class Pi:
    """pi as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "pi"
    skill_folders = PROJECT_SKILLS
    environment = AUTH_VARIABLES

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
        settings: dict[str, object] = {
            "quietStartup": True,
            "enableInstallTelemetry": False,
            # One retry of a failed model call at most (none inside the provider's SDK), so the
            # engine's --retries retries with a visible reason.
            "retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 1000,
                      "provider": {"maxRetries": 0}},
        }  # fmt: skip
        shell = _secretless_shell(ws.root, setup.caller_env)
        if shell is not None:
            settings["shellPath"] = str(shell)
        (agent_dir / "settings.json").write_text(json.dumps(settings) + "\n", encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
        env["PI_OFFLINE"] = "1"  # no version check, telemetry or package updates at startup
        model_args = _model_args(options, setup.caller_env, agent_dir)
        skill_paths = [ws.install_skill(ref, ws.root / "skills") for ref in setup.offered]
        skill_paths += [ref.path for ref in setup.fixture_skills]
        argv = build_command(setup.binary, skill_paths, model_args, context_file(ws.project))
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
        return outcome(
            transcript, run.status, round(run.duration_ms), kept, setup.options.max_turns
        )

    def tool_calls(self, events: Sequence[Event]) -> list[ToolCall]:
        """See :func:`tool_calls`."""
        return tool_calls(events)

    def skill_tool(self, call: ToolCall) -> str | None:
        """pi has no skill tool: it lists skills and the model reads their files."""
        return None

    def explicit(
        self, events: Sequence[Event], prompt: str | None, available: frozenset[str]
    ) -> list[Load]:
        """See :func:`explicit`."""
        return explicit(events, prompt, available)


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
