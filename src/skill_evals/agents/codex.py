"""Codex runner: ``codex exec --json`` in a fresh project and a fresh ``CODEX_HOME``.

See docs/agents/codex.md.

Evidence comes only from the JSONL events Codex prints: completed ``mcp_tool_call`` items
(``load_<name>_skill`` tools, ``read_mcp_resource`` of ``skill://<name>/SKILL.md``) and completed
``command_execution`` items (exit code 0) that read a ``…/skills/<name>/SKILL.md`` path with one of
the reader commands in ``READERS``. A turn that failed (the model request failed) voids the run,
as an API failure does for the other agents. See docs/agents/codex.md for the isolation this
module sets up.
"""

from __future__ import annotations

import posixpath
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import AgentInvocation, AgentOptions, AgentResult, RunnerSetupError
from .environment import SECRET_NAME_PATTERNS
from .evidence import (
    EvidencePatterns,
    Load,
    parse_lines,
    skill_from_path,
    skill_from_tool,
    skill_from_uri,
)
from .protocol import Event, Finished, Launch, Outcome, RunSetup
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

# Commands whose file arguments are read in full (or in part, as `head`/`sed -n` do) and shown to
# the model. `grep`/`rg` only print matching lines, so they do not count as loading a skill.
READERS = frozenset({"cat", "head", "tail", "sed", "nl", "less", "more", "bat", "batcat"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_CONTROL_OPS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})


# ------------------------------------------------------------------------------------ evidence


def find_loads(
    events: Sequence[dict[str, Any]],
    patterns: EvidencePatterns | None = None,
    known: frozenset[str] | None = None,
) -> list[Load]:
    """Completed skill loads in a ``codex exec --json`` transcript, in event order.

    ``known`` restricts path-based and MCP evidence to those skill names (the runner passes the
    skills it offered plus the tested one, so a leak into ``without`` is still reported)."""
    patterns = patterns or EvidencePatterns()
    loads: list[Load] = []
    for index, event in enumerate(events):
        if event.get("type") != "item.completed":
            continue
        item = event.get("item")
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "mcp_tool_call":
            load = _mcp_load(item, index, patterns, known)
            if load is not None:
                loads.append(load)
        elif kind == "command_execution":
            loads.extend(_command_loads(item, index, known))
    return loads


def _mcp_load(
    item: Mapping[str, Any],
    index: int,
    patterns: EvidencePatterns,
    known: frozenset[str] | None,
) -> Load | None:
    # A call that failed (declined, server error, isError result) never loaded anything.
    if item.get("status") != "completed" or item.get("error"):
        return None
    result = item.get("result")
    if isinstance(result, dict) and (result.get("is_error") or result.get("isError")):
        return None
    tool = item.get("tool")
    if not isinstance(tool, str):
        return None
    name: str | None
    if tool == "read_mcp_resource":
        args = item.get("arguments")
        uri = args.get("uri") if isinstance(args, dict) else None
        name = skill_from_uri(uri, patterns) if isinstance(uri, str) else None
        source = f"mcp resource {uri}"
    else:
        name = skill_from_tool(tool, patterns)
        source = f"mcp tool {tool}"
    if name is None or (known is not None and name not in known):
        return None
    return Load(skill=name, delivery="mcp", agent=AGENT, source=source, index=index)


def _command_loads(item: Mapping[str, Any], index: int, known: frozenset[str] | None) -> list[Load]:
    # Only a read that succeeded put the skill in front of the model.
    if item.get("status") != "completed" or item.get("exit_code") != 0:
        return []
    command = item.get("command")
    if not isinstance(command, str):
        return []
    loads: list[Load] = []
    seen: set[str] = set()
    for reader, path in skill_reads(command):
        name = skill_from_path(path, known)
        if name is not None and name not in seen:
            seen.add(name)
            loads.append(
                Load(
                    skill=name,
                    delivery="native",
                    agent=AGENT,
                    source=f"command_execution {reader} SKILL.md",
                    index=index,
                )
            )
    return loads


def skill_reads(command: str) -> list[tuple[str, str]]:
    """``(reader, path)`` for every file a shell command line reads with a reader command.

    Unwraps ``/bin/bash -lc '<script>'`` (how Codex reports commands), splits the script into
    simple commands on ``; && || | &`` and newlines, follows ``cd DIR`` within the script, and
    takes the non-option arguments of ``READERS`` commands (``sed -i`` edits, so it is skipped)
    plus any ``< FILE`` input redirection. Paths are returned as written (joined onto a preceding
    ``cd``); anything unparsable yields nothing."""
    script = _unwrap_shell(command)
    try:
        tokens = _tokenize(script)
    except ValueError:
        return []
    reads: list[tuple[str, str]] = []
    cwd = ""
    words: list[str] = []
    pending: str | None = None  # the redirection operator waiting for its file word

    def finish() -> None:
        nonlocal cwd
        while words and "=" in words[0] and not words[0].startswith("-"):
            words.pop(0)  # leading VAR=value assignments
        if not words:
            return
        program = posixpath.basename(words[0])
        args = words[1:]
        if program == "cd":
            target = next((a for a in args if not a.startswith("-")), None)
            if target is not None:
                cwd = _join(cwd, target)
        elif program in READERS and not (program == "sed" and _sed_in_place(args)):
            for arg in args:
                if not arg.startswith("-"):
                    reads.append((program, _join(cwd, arg)))
        words.clear()

    for token in tokens:
        if pending is not None:
            if pending == "<":
                reads.append(("<", _join(cwd, token)))
            pending = None
            continue
        if token == "<" or token in _WRITE_REDIRECTS:
            pending = token
        elif token in _CONTROL_OPS or set(token) <= set(";&|()\n"):
            finish()
        else:
            words.append(token)
    finish()
    return reads


def _unwrap_shell(command: str) -> str:
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) >= 3 and posixpath.basename(argv[0]) in _SHELLS:
        for i, arg in enumerate(argv[1:], start=1):
            if not arg.startswith("-") or arg.startswith("--"):
                break
            if "c" in arg[1:] and i + 1 < len(argv):
                return argv[i + 1]
    return command


def _tokenize(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"  # newlines separate commands, so they are operators here
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _sed_in_place(args: Sequence[str]) -> bool:
    return any(
        a == "--in-place" or a.startswith("--in-place=") or (a.startswith("-i") and a != "-")
        for a in args
    )


def _join(cwd: str, path: str) -> str:
    if not cwd or path.startswith("/"):
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


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


parse_events = parse_lines  # `exec --json` stdout: one event per line


def outcome_of(events: Sequence[dict[str, Any]]) -> TurnResult:
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
            usage = event.get("usage")
            if isinstance(usage, dict):
                outcome.input_tokens += _int(usage.get("input_tokens"))
                outcome.output_tokens += _int(usage.get("output_tokens"))
        elif kind == "turn.failed":
            outcome.saw_turn = outcome.turn_failed = True
    outcome.exit_code = 0 if outcome.saw_turn and not outcome.turn_failed else 1
    return outcome


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
        for key in list(setup.env):
            if key.startswith("CODEX_") and key != "CODEX_API_KEY":
                del setup.env[key]
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
            raise RunnerSetupError(
                f"{setup.binary} could not use the model API (turn.failed); check "
                f"{ENV_BASE_URL}, CODEX_API_KEY / OPENAI_API_KEY and --model; {KEEP_HINT}"
            )
        return Outcome(
            output=result.output,
            exit_code=result.exit_code,
            loads=find_loads(events, EvidencePatterns(), setup.known),
            meta={
                "durationMs": round(run.duration_ms, 3),
                "inputTokens": float(result.input_tokens),
                "outputTokens": float(result.output_tokens),
            },
            offered=[ref.name for ref in (*setup.offered, *setup.fixture_skills)],
        )

    def find_loads(
        self,
        events: Sequence[Event],
        patterns: EvidencePatterns | None = None,
        known: frozenset[str] | None = None,
    ) -> list[Load]:
        """See :func:`find_loads`."""
        return find_loads(events, patterns, known)


PLUGIN = Codex()


def run(
    invocation: AgentInvocation,
    options: AgentOptions,
    environ: Mapping[str, str] | None = None,
) -> AgentResult:
    """Run Codex once for ``invocation`` in isolation and report the runner contract's result."""
    return run_agent(PLUGIN, invocation, options, environ)
