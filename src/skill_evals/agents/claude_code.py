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
- ``--strict-mcp-config`` always, so only the MCP servers this runner configures exist;
- the model's Bash commands run in a wrapper shell (``CLAUDE_CODE_SHELL``) started without
  credential-like variables.

The agent works in the project (the engine's workspace when given): ``acceptEdits`` with Bash
allowed; ``--read-only`` runs ``dontAsk`` in a private project instead. A routing run's whole
catalog is installed under ``.claude/skills`` like any offered skill.

Evidence comes only from the ``stream-json`` events, by the shared rules of :mod:`.proof`: a
``Skill`` call that completed, MCP calls whose result holds the skill, any tool result that shows
a skill's content (``Read``, ``Bash cat``, …; ``Read``'s line numbers are removed first), and a
``/<skill>`` prompt's expansion.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import reasons
from .base import AgentOptions, RunnerSetupError
from .claude_code_events import (
    AGENT,
    Result,
    api_failure,
    available_skills,
    explicit,
    model_turns,
    outcome,
    parse_stream,
    skill_tool,
    tool_calls,
)
from .content import SkillText
from .environment import secretless_shell
from .evidence import Event, EvidencePatterns, Load
from .proof import prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .scaffold import KEEP_HINT, agent_run

__all__ = [  # the transcript readers, for callers that know only this module
    "AGENT", "Result", "api_failure", "available_skills", "explicit", "find_loads", "model_turns",
    "outcome", "parse_stream", "run", "skill_tool", "tool_calls",
]  # fmt: skip

MCP_SERVER_NAME = "skills"
# Hidden from the model's commands besides every credential-like name of the agent's
# environment: custom API headers (they may carry auth) and the session token Claude Code sets
# for the commands it starts.
_HIDDEN_FROM_COMMANDS = ("ANTHROPIC_CUSTOM_HEADERS", "CLAUDE_CODE_MESSAGING_TOKEN")
# Set by the runner: no update checks, telemetry or error reports (the only traffic is the model
# API), and one API retry at most, so the engine's --retries retries with a visible reason.
_RUNNER_VARIABLES = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "1",
}


def find_loads(
    events: Sequence[Mapping[str, Any]],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a Claude Code ``stream-json`` transcript (see
    :func:`~.proof.prove`); ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


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
        # Headless without prompts and without bypassing anything (what would ask is denied).
        # The agent works: edits inside the project are accepted, Bash commands allowed.
        # --read-only: edits and commands beyond Claude Code's read-only ones are denied.
        "--permission-mode",
        "dontAsk" if options.read_only else "acceptEdits",
        "--setting-sources",
        "project,local",
        "--settings",
        str(settings_file),
        "--no-session-persistence",
        "--strict-mcp-config",
    ]
    allowed = [] if options.read_only else ["Bash"]
    if mcp_config is not None:
        # MCP tools ask unless allowed: allow this runner's own server (and the resource
        # reader, which can only reach it because of --strict-mcp-config).
        cmd += ["--mcp-config", str(mcp_config)]
        allowed += [f"mcp__{MCP_SERVER_NAME}", "ReadMcpResourceTool", "ListMcpResourcesTool"]
    if allowed:
        cmd += ["--allowedTools", ",".join(allowed)]
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
        # The model's Bash commands run in a shell started without the key (Claude Code itself
        # needs it in its own environment, which its commands would otherwise inherit).
        shell = secretless_shell(ws.root / "bin", env, _HIDDEN_FROM_COMMANDS, ("bash", "zsh"))
        env["CLAUDE_CODE_SHELL"] = str(shell)
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
        failure = api_failure(events, setup.options.max_turns)
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

    tool_calls = staticmethod(tool_calls)
    skill_tool = staticmethod(skill_tool)
    explicit = staticmethod(explicit)


PLUGIN = ClaudeCode()

run = agent_run(PLUGIN)
