"""Codex runner: ``codex exec --json`` in a fresh project and a fresh ``CODEX_HOME``; see
docs/agents/codex.md for the isolation it sets up.

Evidence comes only from the JSONL events Codex prints, by the shared rules of :mod:`.proof`:
``command_execution`` items whose output shows a skill's content (however the command read it),
``mcp_tool_call`` items whose result holds the skill, and ``$<skill>`` in the prompt. A turn that
failed (the model request failed) voids the run, as an API failure does for the other agents.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import reasons
from .base import AgentInvocation, AgentOptions, AgentResult, RunnerError, RunnerSetupError
from .content import SkillText
from .environment import SECRET_NAME_PATTERNS
from .evidence import Event, EvidencePatterns, Load, ToolCall, parse_lines
from .proof import prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .scaffold import KEEP_HINT, run_agent

AGENT = "codex"

# Environment variables this runner reads (documented in docs/agents/codex.md).
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEYS = ("CODEX_API_KEY", "OPENAI_API_KEY")  # first one set wins
ENV_SANDBOX = "SKILL_EVALS_CODEX_SANDBOX"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Variables hidden from the commands the model runs (globs, as Codex matches them).
SECRET_PATTERNS = SECRET_NAME_PATTERNS
DEFAULT_SANDBOX = "workspace-write"
SANDBOXES = ("read-only", "workspace-write", "danger-full-access")

PROVIDER_ID = "skill_evals"
MCP_SERVER_NAME = "skills"
# Where Codex discovers a project's own skills (relative to the working directory).
PROJECT_SKILLS = ".agents/skills"

# ------------------------------------------------------------------------------------ evidence

# `$name` anywhere in the prompt: Codex puts that skill's body in front of the model without
# recording an event, so the prompt itself is the evidence.
_DOLLAR_MENTION = re.compile(r"(?<![\w$])\$(?P<name>[A-Za-z0-9][A-Za-z0-9_-]{0,127})")


def _texts(value: Any, depth: int = 0) -> list[str]:
    """Every string inside an MCP result (content blocks, resource contents, structured data)."""
    if isinstance(value, str):
        return [value]
    if depth > 6:
        return []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _texts(item, depth + 1)]


def _call(item: Mapping[str, Any], order: tuple[int, int], index: int) -> ToolCall | None:
    kind = item.get("type")
    completed = item.get("status") == "completed"
    if kind == "command_execution":
        command = item.get("command")
        output = item.get("aggregated_output")
        return ToolCall(
            "command_execution",
            {"command": command if isinstance(command, str) else ""},
            order,
            index,
            completed and item.get("exit_code") == 0,
            output if isinstance(output, str) else "",
        )
    if kind == "mcp_tool_call":
        tool, args, result = item.get("tool"), item.get("arguments"), item.get("result")
        failed = bool(item.get("error")) or (
            isinstance(result, dict) and bool(result.get("is_error") or result.get("isError"))
        )
        return ToolCall(
            tool if isinstance(tool, str) else "",
            args if isinstance(args, dict) else {},
            order,
            index,
            completed and not failed,
            "\n".join(_texts(result)),
        )
    return None


def tool_calls(events: Sequence[Event]) -> list[ToolCall]:
    """Every ``command_execution`` (its output is what the model saw) and ``mcp_tool_call``
    item, ordered by its ``item.started`` event; items that never completed have no result."""
    started: dict[str, tuple[int, Mapping[str, Any]]] = {}
    calls: dict[str, ToolCall] = {}
    for index, event in enumerate(events):
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") not in (
            "command_execution",
            "mcp_tool_call",
        ):
            continue
        item_id = str(item.get("id", index))
        if event.get("type") == "item.started":
            started.setdefault(item_id, (index, item))
        elif event.get("type") == "item.completed" and item_id not in calls:
            at = started.get(item_id, (index, item))[0]
            call = _call(item, (at, 0), index)
            if call is not None:
                calls[item_id] = call
    for item_id, (at, item) in started.items():
        if item_id not in calls:
            call = _call(item, (at, 0), at)
            if call is not None:
                calls[item_id] = replace(call, done=None, ok=False, result="")
    return sorted(calls.values(), key=lambda call: call.order)


def explicit(events: Sequence[Event], prompt: str | None, available: frozenset[str]) -> list[Load]:
    """``$<skill>`` in the prompt for a skill the run offered (Codex injects its body)."""
    if prompt is None:
        return []
    names = dict.fromkeys(m.group("name") for m in _DOLLAR_MENTION.finditer(prompt))
    return [
        Load(name, "explicit", AGENT, "$ mention", 0, order=(0, 0))
        for name in names
        if name in available
    ]


def find_loads(
    events: Sequence[Event],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a ``codex exec --json`` transcript (see
    :func:`~.proof.prove`); ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


# ------------------------------------------------------------------------------------- results


@dataclass
class TurnResult:
    """What one ``codex exec --json`` run reported."""

    output: str = ""
    exit_code: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    saw_turn: bool = False  # a turn.completed or turn.failed event was seen
    turn_failed: bool = False  # the last turn ended with turn.failed
    failure: str = ""  # that turn.failed event's error message (never shown to a user)


parse_events = parse_lines  # `exec --json` stdout: one event per line


def outcome_of(events: Sequence[Event]) -> TurnResult:
    """Final message, how the turn ended, and usage.

    ``exit_code`` is 0 when the last turn event is ``turn.completed``. Top-level ``error``
    events alone decide nothing: Codex also prints them for a retried stream ("Reconnecting…")
    that then completes. ``turn.failed`` sets ``turn_failed`` (the runner voids such a run)."""
    outcome = TurnResult()
    for event in events:
        kind = event.get("type")
        if kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                if isinstance(text, str):
                    outcome.output = text
        elif kind == "turn.completed":
            outcome.saw_turn = True
            outcome.turn_failed = False
            outcome.failure = ""
            usage = event.get("usage")
            if isinstance(usage, dict):
                outcome.input_tokens += _int(usage.get("input_tokens"))
                outcome.output_tokens += _int(usage.get("output_tokens"))
        elif kind == "turn.failed":
            outcome.saw_turn = outcome.turn_failed = True
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            outcome.failure = message if isinstance(message, str) else ""
    outcome.exit_code = 0 if outcome.saw_turn and not outcome.turn_failed else 1
    return outcome


_HINT = f"check CODEX_API_KEY / OPENAI_API_KEY, {ENV_BASE_URL} and --model"


def turn_failure(message: str) -> RunnerError:
    """The reason of a ``turn.failed``: Codex names the HTTP status ("unexpected status 401
    Unauthorized", "exceeded retry limit, last status: 429"; a 500 only as "We're currently
    experiencing high demand"), or quotes the API's error body (a refused request; its ``type``
    only is kept), or neither (no answer at all)."""
    status = reasons.status_in(message)
    if status is None and "experiencing high demand" in message[:500]:
        status = 500  # Codex words an HTTP 500 this way and names no status
    if status is not None:
        return reasons.api_failure(status, None, _HINT)
    try:
        body = json.loads(message[:10_000])
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        kind = error.get("type")
        label = f" ({kind})" if isinstance(kind, str) and kind.isidentifier() else ""
        return RunnerError(f"the model API refused the request{label}; {_HINT}"[:300])
    return reasons.api_failure(None, None, _HINT)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -------------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Provider:
    """The model provider written into the generated config (never a secret, only its name)."""

    base_url: str
    env_key: str | None  # the variable Codex reads the API key from; None for a keyless server


def provider_from_env(env: Mapping[str, str]) -> Provider:
    """``OPENAI_BASE_URL`` (default api.openai.com) and the first of ``CODEX_API_KEY`` /
    ``OPENAI_API_KEY`` that is set. No key is fine only with an explicit base URL (a local
    server)."""
    base_url = env.get(ENV_BASE_URL, "").strip()
    key_var = next((k for k in ENV_API_KEYS if env.get(k)), None)
    if key_var is None and not base_url:
        raise RunnerSetupError(
            "no API key: set CODEX_API_KEY or OPENAI_API_KEY "
            f"(or {ENV_BASE_URL} for a server that needs none)"
        )
    return Provider(base_url=base_url or DEFAULT_BASE_URL, env_key=key_var)


def sandbox_from_env(env: Mapping[str, str]) -> str:
    """``SKILL_EVALS_CODEX_SANDBOX`` (default ``workspace-write``)."""
    value = env.get(ENV_SANDBOX, "").strip() or DEFAULT_SANDBOX
    if value not in SANDBOXES:
        raise RunnerSetupError(f"{ENV_SANDBOX}={value}: expected one of {', '.join(SANDBOXES)}")
    return value


def toml_string(value: str) -> str:
    """A TOML basic string (quotes, backslashes and control characters escaped)."""
    out = ['"']
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def build_config(
    provider: Provider,
    model: str | None,
    mcp_command: Sequence[str] | None,
    mcp_env: Mapping[str, str] | None = None,
) -> str:
    """The whole ``$CODEX_HOME/config.toml`` for one invocation."""
    lines = [
        "# Generated by skill-evals runner codex for one invocation; removed afterwards.",
        f"model_provider = {toml_string(PROVIDER_ID)}",
        'approval_policy = "never"',
        # Without this Codex walks up to the nearest .git and loads every .agents/skills it
        # passes, e.g. a repository's skills when TMPDIR lies inside a checkout.
        "project_root_markers = []",
        "check_for_update_on_startup = false",
    ]
    if model:
        lines.append(f"model = {toml_string(model)}")
    lines += [
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        "plugins = false  # no curated-plugin sync from github.com / chatgpt.com",
        "",
        "[history]",
        'persistence = "none"',
        "",
        # Commands the model runs must not see the API key (Codex 0.169 passes it through by
        # default); the caller's other variables stay available to the task.
        "[shell_environment_policy]",
        'inherit = "all"',
        "ignore_default_excludes = false",
        "exclude = [" + ", ".join(toml_string(p) for p in (*ENV_API_KEYS, *SECRET_PATTERNS)) + "]",
        "",
        "[skills.bundled]",
        "enabled = false  # Codex's own system skills would compete with the skill under test",
        "",
        f"[model_providers.{PROVIDER_ID}]",
        'name = "skill-evals"',
        f"base_url = {toml_string(provider.base_url)}",
        'wire_api = "responses"',
        # One retry of a failed model request at most, so the engine's --retries retries with a
        # visible reason instead of Codex retrying silently until the timeout.
        "request_max_retries = 1",
        "stream_max_retries = 0",  # a stream error is the request retry's to make
    ]
    if provider.env_key:
        lines.append(f"env_key = {toml_string(provider.env_key)}")
    if mcp_command:
        lines += [
            "",
            f"[mcp_servers.{MCP_SERVER_NAME}]",
            f"command = {toml_string(mcp_command[0])}",
            "args = [" + ", ".join(toml_string(a) for a in mcp_command[1:]) + "]",
            # required: Codex waits for the server before the first model request (otherwise
            # the first request goes out without the skill tools).
            "required = true",
            "startup_timeout_sec = 30",
            # approval_policy "never" would otherwise fail every MCP call.
            'default_tools_approval_mode = "approve"',
        ]
        if mcp_env:
            lines.append("")
            lines.append(f"[mcp_servers.{MCP_SERVER_NAME}.env]")
            lines += [f"{toml_string(k)} = {toml_string(v)}" for k, v in sorted(mcp_env.items())]
    return "\n".join(lines) + "\n"


def build_command(
    binary: str, project: Path, model: str | None, sandbox: str, ephemeral: bool
) -> list[str]:
    """``codex exec --json ... -`` (the prompt goes on stdin)."""
    cmd = [
        binary,
        "exec",
        "--json",
        "--color",
        "never",
        "--skip-git-repo-check",
        "--ignore-rules",
        "--sandbox",
        sandbox,
        "--cd",
        str(project),
    ]
    if ephemeral:
        cmd.append("--ephemeral")
    if model:
        cmd += ["--model", model]
    cmd.append("-")
    return cmd


# ----------------------------------------------------------------------------------------- run


class Codex:
    """Codex as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "codex"
    skill_folders = (PROJECT_SKILLS,)
    environment = ("CODEX_API_KEY", "OPENAI_*")  # the key Codex is told to read (env_key)

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """``--max-turns`` is refused (``codex exec`` has no turn limit); the provider and the
        sandbox choice must be usable."""
        if options.max_turns is not None:
            raise RunnerSetupError("--max-turns: codex exec has no turn limit; remove the option")
        provider_from_env(env)
        sandbox_from_env(env)

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh ``CODEX_HOME`` with a generated ``config.toml``; skills under
        ``.agents/skills`` or served over MCP."""
        ws, options, caller_env = setup.workspace, setup.options, setup.caller_env
        codex_home = ws.home / ".codex"
        codex_home.mkdir()
        mcp_command: list[str] | None = None
        if options.delivery == "native":
            for ref in setup.offered:
                ws.install_skill(ref, ws.project / PROJECT_SKILLS)
        elif setup.offered:
            served = [ws.install_skill(ref, ws.root / "mcp-skills") for ref in setup.offered]
            mcp_command = [sys.executable, "-m", "skill_evals", "mcp-serve"]
            for path in served:
                mcp_command += ["--skill", str(path)]
        pythonpath = caller_env.get("PYTHONPATH")
        mcp_env = {"PYTHONPATH": pythonpath} if pythonpath else None
        provider = provider_from_env(caller_env)
        (codex_home / "config.toml").write_text(
            build_config(provider, options.model, mcp_command, mcp_env), encoding="utf-8"
        )
        setup.env["CODEX_HOME"] = str(codex_home)
        argv = build_command(
            setup.binary,
            ws.project,
            options.model,
            sandbox_from_env(caller_env),
            ephemeral=not options.keep_workspace,
        )
        return Launch(argv=argv, stdin=setup.invocation.prompt.encode("utf-8"))

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The last agent message, how the turn ended, usage; loads of known skills."""
        result = outcome_of(events)
        if not result.saw_turn:
            raise RunnerSetupError(
                f"{setup.binary} exited with code {run.status} without finishing a turn; check "
                f"--bin, --model, {ENV_BASE_URL} and the API key variables; {KEEP_HINT}"
            )
        if result.turn_failed:
            # The model request failed (auth, network, rate limit, a refused request): the run
            # says nothing about the skill, so it is void, not a failed task.
            raise turn_failure(result.failure)
        return Outcome(
            output=result.output,
            exit_code=result.exit_code,
            meta={
                "durationMs": round(run.duration_ms, 3),
                "inputTokens": float(result.input_tokens),
                "outputTokens": float(result.output_tokens),
            },
        )

    def tool_calls(self, events: Sequence[Event]) -> list[ToolCall]:
        """See :func:`tool_calls`."""
        return tool_calls(events)

    def skill_tool(self, call: ToolCall) -> str | None:
        """Codex has no skill tool: it lists skills and the model reads their files."""
        return None

    def explicit(
        self, events: Sequence[Event], prompt: str | None, available: frozenset[str]
    ) -> list[Load]:
        """See :func:`explicit`."""
        return explicit(events, prompt, available)


PLUGIN = Codex()


def run(
    invocation: AgentInvocation,
    options: AgentOptions,
    environ: Mapping[str, str] | None = None,
) -> AgentResult:
    """Run Codex once for ``invocation`` in isolation and report the runner contract's result."""
    return run_agent(PLUGIN, invocation, options, environ)
