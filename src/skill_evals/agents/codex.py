"""Codex runner: ``codex exec --json`` in the engine's workspace (or a fresh private project)
with a fresh ``CODEX_HOME`` holding the offered skills; see docs/agents/codex.md for the
isolation it sets up and what the agent may do.

Evidence comes only from the JSONL events Codex prints, by the shared rules of :mod:`.proof`:
``command_execution`` items whose output shows a skill's content (however the command read it),
``mcp_tool_call`` items whose result holds the skill, and ``$<skill>`` in the prompt. A turn that
failed (the model request failed) voids the run, as an API failure does for the other agents.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import AgentOptions, RunnerSetupError
from .codex_events import (
    AGENT,
    ENV_BASE_URL,
    TurnResult,
    explicit,
    model_turns,
    outcome_of,
    parse_events,
    session_records,
    tool_calls,
    turn_failure,
)
from .content import SkillText
from .environment import SECRET_NAME_PATTERNS
from .evidence import Event, EvidencePatterns, Load, ToolCall
from .proof import prove

__all__ = [  # the transcript readers, for callers that know only this module
    "AGENT", "TurnResult", "explicit", "find_loads", "model_turns", "outcome_of", "parse_events",
    "run", "tool_calls", "turn_failure",
]  # fmt: skip
from .protocol import Finished, Launch, Outcome, RunSetup
from .registry import entry
from .scaffold import KEEP_HINT, agent_run

# Environment variables this runner reads (documented in docs/agents/codex.md).
ENV_API_KEYS = ("CODEX_API_KEY", "OPENAI_API_KEY")  # first one set wins
ENV_SANDBOX = "SKILL_EVALS_CODEX_SANDBOX"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Variables hidden from the commands the model runs (globs, as Codex matches them).
SECRET_PATTERNS = SECRET_NAME_PATTERNS
DEFAULT_SANDBOX = "workspace-write"  # the model may edit and run commands in its project
READ_ONLY_SANDBOX = "read-only"  # --read-only: commands may read, nothing is written
SANDBOXES = ("read-only", "workspace-write", "danger-full-access")

PROVIDER_ID = "skill_evals"
MCP_SERVER_NAME = "skills"
# Where Codex discovers a project's own skills (relative to the working directory): a
# fixture's skills there are offered in both variants.
PROJECT_SKILLS = ".agents/skills"
# Where the runner installs the offered skills: Codex's user skills folder in the fresh
# CODEX_HOME, outside the project, so nothing of the runner's lands in the engine's workspace.
USER_SKILLS = "skills"


def find_loads(
    events: Sequence[Event],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a ``codex exec --json`` transcript (see
    :func:`~.proof.prove`); ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


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


def sandbox_from_env(env: Mapping[str, str], read_only: bool = False) -> str:
    """``SKILL_EVALS_CODEX_SANDBOX``, else ``workspace-write`` (``read-only`` with
    ``--read-only``). The variable wins in both cases: it is the way out on hosts where Codex's
    sandbox cannot start."""
    value = env.get(ENV_SANDBOX, "").strip() or (
        READ_ONLY_SANDBOX if read_only else DEFAULT_SANDBOX
    )
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
    lines = _top_level(model) + _fixed_sections() + _provider_section(provider)
    if mcp_command:
        lines += _mcp_section(mcp_command, mcp_env)
    return "\n".join(lines) + "\n"


def _top_level(model: str | None) -> list[str]:
    """The top-level keys: our provider, no approvals, no project walk, no update check."""
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
    return lines


def _fixed_sections() -> list[str]:
    """The sections every invocation has the same: no analytics, plugins, sub-agents or
    history, the sandbox and shell environment rules, no bundled skills."""
    return [
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        "plugins = false  # no curated-plugin sync from github.com / chatgpt.com",
        "",
        # No sub-agents: evidence and tool calls are read from the main thread's events only.
        # (`[features].multi_agent`, the older key, makes Codex 0.169 warn twice per run.)
        "[agents]",
        "enabled = false",
        "",
        "[history]",
        'persistence = "none"',
        "",
        # workspace-write: the project and the private TMPDIR, not all of /tmp (where other
        # invocations' workspaces and the caller's files may lie).
        "[sandbox_workspace_write]",
        "exclude_slash_tmp = true",
        "network_access = false",
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
    ]


def _provider_section(provider: Provider) -> list[str]:
    """The model provider: its endpoint, the key's variable, at most one request retry."""
    lines = [
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
    return lines


def _mcp_section(mcp_command: Sequence[str], mcp_env: Mapping[str, str] | None) -> list[str]:
    """The skills' MCP server: required before the first request, its tools approved."""
    lines = [
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
    return lines


def build_command(binary: str, project: Path, model: str | None, sandbox: str) -> list[str]:
    """``codex exec --json ... -`` (the prompt goes on stdin). Not ``--ephemeral``: the session
    file in the private ``CODEX_HOME`` is where Codex records each model response (the turns)."""
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
        sandbox_from_env(env, options.read_only)

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh ``CODEX_HOME`` with a generated ``config.toml``; skills in its ``skills/``
        folder or served over MCP; the session's usage records appended to the transcript."""
        ws, options, caller_env = setup.workspace, setup.options, setup.caller_env
        codex_home = ws.home / ".codex"
        codex_home.mkdir()
        mcp_command: list[str] | None = None
        if options.delivery == "native":
            for ref in setup.offered:
                ws.install_skill(ref, codex_home / USER_SKILLS)
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
        sandbox = sandbox_from_env(caller_env, options.read_only)
        argv = build_command(setup.binary, ws.project, options.model, sandbox)
        return Launch(
            argv=argv,
            stdin=setup.invocation.prompt.encode("utf-8"),
            epilogue=lambda: session_records(codex_home),
        )

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
        meta = {
            "durationMs": round(run.duration_ms, 3),
            "inputTokens": float(result.input_tokens),
            "outputTokens": float(result.output_tokens),
        }
        turns = model_turns(events)
        if turns is not None:
            meta["turns"] = turns  # an integer (the engine checks)
        return Outcome(output=result.output, exit_code=result.exit_code, meta=meta)

    tool_calls = staticmethod(tool_calls)
    explicit = staticmethod(explicit)

    def skill_tool(self, call: ToolCall) -> str | None:
        """Codex has no skill tool: it lists skills and the model reads their files."""
        return None


PLUGIN = Codex()

run = agent_run(PLUGIN, works=entry(AGENT).works)
