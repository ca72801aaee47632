"""The Claude Code runner: one isolated, headless ``claude -p`` run per invocation.

See docs/agents/claude-code.md.

Isolation, per invocation:

- a fresh :class:`~.base.Workspace` (``project`` = cwd, ``home`` = HOME), removed afterwards;
- ``CLAUDE_CONFIG_DIR`` = a fresh dir inside that home, HOME and XDG dirs moved
  (:func:`~.base.isolated_env`), ``--setting-sources project,local`` so no user-level settings or
  skills are read even if Claude Code looked elsewhere, ``--no-session-persistence``;
- the project is made a git root (``git init``) because Claude Code walks up from the working
  directory to the git root looking for ``.claude/skills``; CLAUDE.md files above the project are
  excluded with the ``claudeMdExcludes`` setting;
- ``--strict-mcp-config`` always, so only the MCP servers this runner configures exist.

Evidence comes only from the ``stream-json`` events, by the shared rules of :mod:`.proof`: a
``Skill`` call that completed, MCP calls whose result holds the skill, any tool result that shows
a skill's content (``Read``, ``Bash cat``, …; ``Read``'s line numbers are removed first), and a
``/<skill>`` prompt's expansion.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import reasons
from .base import AgentInvocation, AgentOptions, AgentResult, RunnerSetupError
from .content import SkillText
from .evidence import Event, EvidencePatterns, Load, ToolCall, parse_lines, skill_from_tool
from .proof import INJECTED, prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .scaffold import KEEP_HINT, run_agent

AGENT = "claude-code"
MCP_SERVER_NAME = "skills"
_SLASH_EXPANSION = re.compile(
    r"\s*<command-message>[^<]*</command-message>\s*<command-name>/(?P<name>[^<\s]+)</command-name>"
)
# Set by the runner: no update checks, telemetry or error reports (the only traffic is the model
# API), and one API retry at most, so the engine's --retries retries with a visible reason.
_RUNNER_VARIABLES = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "1",
}
_HINT = "check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL"
# Result events that mean "the model could not be reached", not "the task failed".
_API_FAILURE_REASONS = frozenset({"api_error", "auth_error", "authentication_failed"})


# ------------------------------------------------------------------------------------- evidence


def _content_blocks(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = event.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict)]


def _message_text(event: Mapping[str, Any]) -> str:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) for b in _content_blocks(event) if b.get("type") == "text"
    )


def _result_text(block: Mapping[str, Any]) -> str:
    """What a ``tool_result`` showed the model: its string content or its text blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _failed(block: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """A tool_result that reports failure (``is_error``, or Claude Code's own result record
    saying ``success: false``)."""
    if block.get("is_error") is True:
        return True
    extra = event.get("tool_use_result")
    return isinstance(extra, dict) and extra.get("success") is False


def tool_calls(events: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Every ``tool_use`` (in an ``assistant`` event) paired by id with its ``tool_result`` (in a
    ``user`` event), plus the messages Claude Code itself injects (``isSynthetic``/``isMeta``
    user events, e.g. a skill body after the ``Skill`` tool) as ``INJECTED`` calls."""
    pending: dict[str, tuple[str, dict[str, Any], tuple[int, int]]] = {}
    calls: list[ToolCall] = []
    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "assistant":
            for slot, block in enumerate(_content_blocks(event)):
                call_id, name = block.get("id"), block.get("name")
                if block.get("type") == "tool_use" and isinstance(call_id, str):
                    tool_input = block.get("input")
                    pending[call_id] = (
                        name if isinstance(name, str) else "",
                        tool_input if isinstance(tool_input, dict) else {},
                        (index, slot),
                    )
        elif kind == "user" and event.get("isReplay") is not True:
            if event.get("isSynthetic") is True or event.get("isMeta") is True:
                calls.append(ToolCall(INJECTED, {}, (index, 0), index, True, _message_text(event)))
            for block in _content_blocks(event):
                if block.get("type") != "tool_result":
                    continue
                call = pending.pop(str(block.get("tool_use_id")), None)
                if call is not None:
                    ok = not _failed(block, event)
                    calls.append(ToolCall(*call, index, ok, _result_text(block)))
    calls += [
        ToolCall(name, args, order, None, False, "") for name, args, order in pending.values()
    ]
    return sorted(calls, key=lambda call: call.order)


def skill_tool(call: ToolCall) -> str | None:
    """The skill a ``Skill`` call names (a leading ``/`` and a ``plugin:`` namespace removed)."""
    skill = call.input.get("skill") if call.name == "Skill" else None
    if not isinstance(skill, str) or not skill.strip():
        return None
    return skill.strip().lstrip("/").rpartition(":")[2] or None


def explicit(
    events: Sequence[Mapping[str, Any]], prompt: str | None, available: frozenset[str]
) -> list[Load]:
    """A prompt that starts with ``/<skill>`` is expanded by Claude Code itself; the replayed
    user message shows the expansion. Only skills the run offered or the init event listed
    count (an unknown ``/word`` is replayed as plain text); a prompt that itself contains such
    a record is not trusted."""
    if prompt is not None and "<command-" in prompt:
        return []
    listed = available | frozenset(available_skills(events))
    loads: list[Load] = []
    for index, event in enumerate(events):
        if event.get("type") == "user" and event.get("isReplay") is True:
            match = _SLASH_EXPANSION.match(_message_text(event))
            name = match.group("name").rpartition(":")[2] if match else None
            if name is not None and name in listed:
                loads.append(
                    Load(name, "explicit", AGENT, "slash command", index, order=(index, 0))
                )
    return loads


def find_loads(
    events: Sequence[Mapping[str, Any]],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a Claude Code ``stream-json`` transcript (see
    :func:`~.proof.prove`); ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


def available_skills(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Skills Claude Code offered in the run (the ``init`` event's ``skills`` list plus MCP
    load tools). Reported for diagnosis only; never counted as loaded."""
    names: list[str] = []
    for event in events:
        if event.get("type") == "system" and event.get("subtype") == "init":
            for name in event.get("skills") or []:
                if isinstance(name, str) and name not in names:
                    names.append(name)
            for tool in event.get("tools") or []:
                skill = skill_from_tool(tool) if isinstance(tool, str) else None
                if skill is not None and skill not in names:
                    names.append(skill)
    return names


# -------------------------------------------------------------------------------------- result


@dataclass
class Result:
    """What the final ``result`` event says."""

    output: str
    exit_code: int
    meta: dict[str, float] = field(default_factory=dict)
    max_turns: bool = False  # Claude Code stopped at --max-turns (subtype error_max_turns)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def outcome(events: Sequence[Mapping[str, Any]]) -> Result | None:
    """The last ``result`` event as output / task exit code / meta; None when there is none.

    ``exitCode`` is 0 only for ``subtype: success`` without ``is_error``; any other result
    (max turns, execution error, budget) is the task's failure, 1."""
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None:
        return None
    text = result.get("result")
    ok = result.get("subtype") == "success" and result.get("is_error") is not True
    meta: dict[str, float] = {}
    duration = _number(result.get("duration_ms"))
    if duration is not None:
        meta["durationMs"] = duration
    cost = _number(result.get("total_cost_usd"))
    if cost is not None:
        meta["costUsd"] = cost
    usage = result.get("usage")
    if isinstance(usage, dict):
        # Prompt tokens are split three ways when caching is on; report the total.
        parts = [
            _number(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        present = [p for p in parts if p is not None]
        if present:
            meta["inputTokens"] = sum(present)
        out = _number(usage.get("output_tokens"))
        if out is not None:
            meta["outputTokens"] = out
    return Result(
        output=text if isinstance(text, str) else "",
        exit_code=0 if ok else 1,
        meta=meta,
        max_turns=result.get("subtype") == "error_max_turns",
    )


def api_failure(events: Sequence[Mapping[str, Any]]) -> RunnerSetupError | None:
    """Why the run ended without the model (auth refused, rate limit, overload, a server error,
    no answer), or None when it did not: that is missing evidence, not a task result. The reason
    holds only the API's status and error type."""
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None or result.get("is_error") is not True:
        return None
    status = result.get("api_error_status")
    kind = result.get("api_error_type")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    kind = kind if isinstance(kind, str) else None
    api_error = result.get("terminal_reason") in _API_FAILURE_REASONS or status is not None
    # Older CLIs: the run's only assistant output is a synthetic API-error message.
    assistants = [e for e in events if e.get("type") == "assistant"]
    synthetic = bool(assistants) and all(e.get("is_api_error_message") is True for e in assistants)
    if not (api_error or synthetic):
        return None
    return reasons.api_failure(status, kind, _HINT)


parse_stream = parse_lines  # stream-json stdout: one event per line


# ----------------------------------------------------------------------------------------- run


def _ancestor_excludes(project: Path) -> list[str]:
    """``claudeMdExcludes`` entries for every instruction file Claude Code would pick up above
    the project (it walks up to /), so only the fixture's own CLAUDE.md / AGENTS.md apply."""
    patterns: list[str] = []
    for parent in project.resolve().parents:
        base = str(parent).rstrip("/")
        patterns += [
            f"{base}/CLAUDE.md",
            f"{base}/CLAUDE.local.md",
            # Claude Code's built-in AGENTS.md plugin loads these where CLAUDE.md would be
            # loaded, and honours the same excludes.
            f"{base}/AGENTS.md",
            f"{base}/.claude/AGENTS.md",
            f"{base}/.claude/CLAUDE.md",
            f"{base}/.claude/rules/**",
        ]
    return patterns


def _settings(project: Path) -> dict[str, Any]:
    """The ``--settings`` of a run: every instruction file above the project excluded."""
    return {"claudeMdExcludes": _ancestor_excludes(project)}


def _make_git_root(project: Path, env: Mapping[str, str]) -> None:
    """Make ``project`` a git root so Claude Code's upward search for ``.claude/skills`` and
    commands stops there; without git, refuse if anything above could leak in."""
    if (project / ".git").exists():
        return
    git = shutil.which("git", path=env.get("PATH"))
    if git is not None:
        done = subprocess.run(
            [git, "init", "-q", str(project)],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if done.returncode == 0:
            return
    for parent in project.resolve().parents:
        if (parent / ".claude").is_dir():
            raise RunnerSetupError(
                f"{parent / '.claude'} would be visible to Claude Code above the temporary "
                "project and git is unavailable to stop the search; set TMPDIR to a clean "
                "directory or install git"
            )


def _mcp_config(skill_dirs: Sequence[Path], env: Mapping[str, str]) -> dict[str, Any]:
    args = ["-m", "skill_evals", "mcp-serve"]
    for path in skill_dirs:
        args += ["--skill", str(path)]
    server_env = {k: env[k] for k in ("PYTHONPATH",) if env.get(k)}
    return {
        "mcpServers": {
            MCP_SERVER_NAME: {
                "type": "stdio",
                "command": sys.executable,
                "args": args,
                "env": server_env,
            }
        }
    }


def build_command(
    binary: str,
    options: AgentOptions,
    settings_file: Path,
    mcp_config: Path | None,
) -> list[str]:
    """The ``claude`` argv. The prompt is not in it: it goes on stdin (argv is visible to
    every local user in ``ps``)."""
    cmd = [
        binary,
        "-p",
        "--verbose",
        "--output-format",
        "stream-json",
        # The prompt goes in as one stream-json user message and is replayed into the output,
        # so a prompt that invokes a skill as /<name> leaves a record of the expansion.
        "--input-format",
        "stream-json",
        "--replay-user-messages",
        # Headless without prompts and without bypassing anything: tools that would ask
        # (Bash, edits) are denied; reads inside the project and the Skill tool are allowed.
        "--permission-mode",
        "dontAsk",
        "--setting-sources",
        "project,local",
        "--settings",
        str(settings_file),
        "--no-session-persistence",
        "--strict-mcp-config",
    ]
    if mcp_config is not None:
        # dontAsk denies MCP tools unless allowed: allow this runner's own server (and the
        # resource reader, which can only reach it because of --strict-mcp-config).
        cmd += [
            "--mcp-config",
            str(mcp_config),
            "--allowedTools",
            f"mcp__{MCP_SERVER_NAME},ReadMcpResourceTool,ListMcpResourcesTool",
        ]
    if options.model:
        cmd += ["--model", options.model]
    if options.max_turns is not None:
        cmd += ["--max-turns", str(options.max_turns)]
    return cmd


def _stdin_message(prompt: str) -> bytes:
    """The prompt as the one stream-json user message Claude Code reads from stdin."""
    message = {"type": "user", "message": {"role": "user", "content": prompt}}
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


class ClaudeCode:
    """Claude Code as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "claude"
    skill_folders = (".claude/skills",)
    # Auth and endpoints: the Anthropic API, or Bedrock / Vertex with their cloud credentials.
    # The two CLAUDE_CODE_USE_* switches pick the provider; no other CLAUDE_* variable passes.
    environment = (
        "ANTHROPIC_*", "AWS_*", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
        "CLOUD_ML_REGION", "VERTEX_REGION_*", "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT",
    )  # fmt: skip

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """Claude Code honours every agent option."""

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh ``CLAUDE_CONFIG_DIR``, the project a git root, skills under ``.claude/skills``
        (or served over MCP), memory files above the project excluded."""
        ws, options, env = setup.workspace, setup.options, setup.env
        config_dir = ws.home / ".claude-config"
        config_dir.mkdir()
        env.update(_RUNNER_VARIABLES)
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
        if options.delivery == "mcp":
            # Claude Code otherwise defers MCP tools behind ToolSearch, showing the model only
            # their names; skills must compete on their descriptions, as native ones do.
            env.setdefault("ENABLE_TOOL_SEARCH", "false")
        _make_git_root(ws.project, env)
        mcp_path: Path | None = None
        if options.delivery == "mcp":
            # Copies, so the agent can never touch the caller's skill folders.
            served = [ws.install_skill(ref, ws.root / "mcp-skills") for ref in setup.offered]
            if served:
                mcp_path = ws.root / "mcp.json"
                config = _mcp_config(served, setup.caller_env)
                mcp_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        else:
            for ref in setup.offered:
                ws.install_skill(ref, ws.project / ".claude" / "skills")
        settings = ws.root / "settings.json"
        settings.write_text(json.dumps(_settings(ws.project)), encoding="utf-8")
        argv = build_command(setup.binary, options, settings, mcp_path)
        return Launch(argv=argv, stdin=_stdin_message(setup.invocation.prompt))

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The ``result`` event's answer and meta; the skills Claude Code listed."""
        result = outcome(events)
        binary = setup.binary
        if result is None:
            raise RunnerSetupError(
                f"{binary} exited with code {run.status} without a result event; {KEEP_HINT}"
            )
        failure = api_failure(events)
        if failure is not None:
            raise failure
        if result.max_turns:
            raise reasons.turn_limit(setup.options.max_turns)
        return Outcome(
            output=result.output,
            exit_code=result.exit_code,
            meta=result.meta,
            offered=available_skills(events),
        )

    def tool_calls(self, events: Sequence[Event]) -> list[ToolCall]:
        """See :func:`tool_calls`."""
        return tool_calls(events)

    def skill_tool(self, call: ToolCall) -> str | None:
        """See :func:`skill_tool`."""
        return skill_tool(call)

    def explicit(
        self, events: Sequence[Event], prompt: str | None, available: frozenset[str]
    ) -> list[Load]:
        """See :func:`explicit`."""
        return explicit(events, prompt, available)


PLUGIN = ClaudeCode()


def run(
    invocation: AgentInvocation,
    options: AgentOptions,
    environ: Mapping[str, str] | None = None,
) -> AgentResult:
    """Run Claude Code once for ``invocation`` in a fresh isolated workspace."""
    return run_agent(PLUGIN, invocation, options, environ)
