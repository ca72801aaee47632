"""The Gemini CLI runner (``skill-evals runner gemini``): one isolated ``gemini`` run per
invocation, headless with ``--output-format stream-json`` (docs/agents/gemini.md).

Per invocation: a fresh workspace whose ``home/`` is HOME (so ``~/.gemini`` — settings, policies,
user skills, extensions, memory, sessions — is new and empty), the machine-wide settings files
not read, an environment built from an allowlist, the skills of the run copied to
the project's ``.gemini/skills/<name>/`` (or served by ``skill-evals mcp-serve``), and a user
policy that lets ``activate_skill``, shell commands and edits run without a prompt.

The stream-json events carry only what the CLI *displays* of a tool result (nothing for
``read_file``), so Gemini CLI runs under a small ``sh`` wrapper that, once it exits, appends the
run's chat session records (what the model was really sent) to the event stream
(:mod:`.gemini_events` reads both).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .base import AgentOptions, RunnerSetupError, skill_ref
from .environment import find_binary, mcp_serve_args, secret_names
from .evidence import Event
from .gemini_events import AGENT, SESSION_MARKER, explicit, skill_tool, tool_calls
from .gemini_outcome import RunnerError, outcome
from .protocol import Finished, Launch, Outcome, RunSetup
from .registry import entry
from .scaffold import KEEP_HINT, STDERR_FILE, TRANSCRIPT_FILE, agent_run
from .workspace import Workspace

__all__ = ["PLUGIN", "RunnerError", "run"]

KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # the first one set is passed as GEMINI_API_KEY
# The caller's variables Gemini CLI gets besides the shared base allowlist.
ENVIRONMENT = (*KEY_VARS, "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION")
PROJECT_SKILLS = (".gemini/skills", ".agents/skills")
# Skills Gemini CLI 0.61 bundles (bundle/builtin/); read from the installed bundle when found.
BUNDLED_SKILLS = entry(AGENT).bundled_skills
MCP_SERVER = "skills"  # no "_": Gemini splits mcp_<server>_<tool> at the first one
# sh WRAPPER gemini ARGS...: runs Gemini CLI with the prompt on stdin (saved on fd 3 first: a
# background job's stdin would be /dev/null), forwards SIGTERM to it, then appends the session
# records after a marker line; exits with Gemini CLI's status.
WRAPPER = f"""\
#!/bin/sh
exec 3<&0
"$@" <&3 3<&- &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
wait "$pid"
status=$?
printf '\\n%s\\n' '{json.dumps({"type": SESSION_MARKER})}'
cat "$HOME"/.gemini/tmp/*/chats/session-*.jsonl 2>/dev/null
exit "$status"
"""
POLICY = """\
# skill-evals: what the model may do without a prompt (headless runs cannot ask).
[[rule]]
toolName = ["activate_skill", "run_shell_command", "write_file", "replace"]
decision = "allow"
priority = 900
allowRedirection = true

[[rule]]
mcpName = "skills"
toolName = "*"
decision = "allow"
priority = 900
"""
# --read-only: skills load, nothing is edited and no command runs (a denied call fails, and the
# model is told so).
READ_ONLY_POLICY = """\
# skill-evals --read-only: skills load; no edits, no shell commands.
[[rule]]
toolName = "activate_skill"
decision = "allow"
priority = 900

[[rule]]
toolName = ["run_shell_command", "write_file", "replace"]
decision = "deny"
priority = 950

[[rule]]
mcpName = "skills"
toolName = "*"
decision = "allow"
priority = 900
"""


def bundled_skills(binary: str) -> dict[str, str]:
    """``{lower-cased name: SKILL.md path}`` of the skills the installed Gemini CLI bundles
    (``<bundle>/builtin/<dir>/SKILL.md`` next to the resolved binary), else the known ones."""
    builtin = Path(os.path.realpath(binary)).parent / "builtin"
    found: dict[str, str] = {}
    if builtin.is_dir():
        for entry in sorted(builtin.iterdir()):
            if (entry / "SKILL.md").is_file():
                try:
                    found[skill_ref(entry).name.lower()] = str(entry / "SKILL.md")
                except RunnerSetupError:
                    continue
    return found or {name: f"(bundled with Gemini CLI) {name}" for name in BUNDLED_SKILLS}


def bundled_names(bundled: Mapping[str, str]) -> list[str]:
    """The bundled skills' names as Gemini CLI offers them."""
    names = []
    for key, path in bundled.items():
        try:
            names.append(skill_ref(Path(path).parent).name)
        except RunnerSetupError:
            names.append(key)
    return names


def gemini_env(env: Mapping[str, str], root: Path) -> dict[str, str]:
    """Gemini CLI's variables on top of the shared allowlisted environment ``env`` (which holds
    only :data:`ENVIRONMENT` of the caller's agent variables): the key as ``GEMINI_API_KEY``,
    and the settings that keep the machine's own configuration out."""
    out = {k: v for k, v in env.items() if k not in KEY_VARS}
    key = next((env[k] for k in KEY_VARS if env.get(k)), None)
    if key is None:
        raise RunnerSetupError("no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
    out.update(
        GEMINI_API_KEY=key,
        # Machine-wide settings files (e.g. /etc/gemini-cli/settings.json) are not read: they
        # could add skills, context files or MCP servers. These paths never exist.
        GEMINI_CLI_SYSTEM_SETTINGS_PATH=str(root / "no-system-settings.json"),
        GEMINI_CLI_SYSTEM_DEFAULTS_PATH=str(root / "no-system-defaults.json"),
        GEMINI_CLI_NO_RELAUNCH="true",  # one process: no second Node start-up, signals reach it
        NO_COLOR="1",
    )
    return out


def build_settings(
    options: AgentOptions, hidden: Sequence[str], mcp_args: Sequence[str] | None
) -> dict[str, Any]:
    """The fresh user ``settings.json``: API-key auth, no telemetry, update checks, IDE,
    sub-agents or memory above the workspace, one attempt per model request, and the key names
    redacted from the commands the model runs."""
    settings: dict[str, Any] = {
        "security": {
            "auth": {"selectedType": "gemini-api-key"},
            "environmentVariableRedaction": {"enabled": True, "blocked": list(hidden)},
        },
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": 1,  # the engine's --retries retries, with a visible reason
            "checkpointing": {"enabled": False},
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
        "context": {"memoryBoundaryMarkers": []},  # GEMINI.md only from the workspace down
        "experimental": {"enableAgents": False},  # sub-agents' reads are not in the transcript
        "advanced": {"autoConfigureMemory": False},
    }
    if options.max_turns is not None:
        settings["model"] = {"maxSessionTurns": options.max_turns}
    if mcp_args is not None:
        settings["mcpServers"] = {
            MCP_SERVER: {"command": sys.executable, "args": list(mcp_args), "trust": True}
        }
    return settings


def build_command(binary: str, model: str | None) -> list[str]:
    """The command line; the prompt goes to stdin (headless because stdin is not a terminal),
    never to argv."""
    argv = [binary, "--output-format", "stream-json", "--skip-trust", "--approval-mode", "default"]
    return argv + (["--model", model] if model else [])


def _write_config(ws: Workspace, settings: Mapping[str, Any], read_only: bool) -> None:
    config = ws.home / ".gemini"
    (config / "policies").mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    policy = READ_ONLY_POLICY if read_only else POLICY
    (config / "policies" / "skill-evals.toml").write_text(policy, encoding="utf-8")
    # Gemini CLI looks for .env files from the project upwards (a .gemini/.env in any ancestor
    # too); an empty one in the project ends that search unless the fixture brings its own.
    if not (ws.project / ".env").exists() and not (ws.project / ".gemini" / ".env").exists():
        (ws.project / ".gemini").mkdir(exist_ok=True)
        (ws.project / ".gemini" / ".env").write_text("", encoding="utf-8")


class Gemini:
    """Gemini CLI as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "gemini"
    skill_folders = PROJECT_SKILLS
    environment = ENVIRONMENT

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """A key must be set, and the binary found (a runner error the engine reports)."""
        if not any(env.get(k) for k in KEY_VARS):
            raise RunnerError("no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)", False)
        try:
            find_binary(options.bin, self.binary, env)
        except RunnerSetupError as exc:
            raise RunnerError(str(exc), retryable=False) from exc

    def prepare(self, setup: RunSetup) -> Launch:
        """Allowlisted environment, fresh settings and policy, skills in ``.gemini/skills`` (or
        ``mcp-serve``), and the wrapper that appends the session records."""
        ws, options = setup.workspace, setup.options
        bundled = bundled_skills(setup.binary)
        check_names(setup, bundled)
        env = gemini_env(setup.env, ws.root)
        setup.env.clear()
        setup.env.update(env)
        served = ws.offer(setup.offered, options.delivery, ws.project / ".gemini" / "skills")
        mcp_args = mcp_serve_args(served) if served else None
        settings = build_settings(options, secret_names(env), mcp_args)
        _write_config(ws, settings, options.read_only)
        wrapper = ws.root / "run-gemini.sh"
        wrapper.write_text(WRAPPER, encoding="utf-8")
        shell = shutil.which("sh", path=env.get("PATH")) or "/bin/sh"
        command = build_command(setup.binary, options.model)
        return Launch(
            argv=[shell, str(wrapper), *command],
            stdin=setup.invocation.prompt.encode("utf-8"),
        )

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """Answer, task exit code and usage; a runner error when the run was void. The bundled
        skills are reported as offered by the agent itself."""
        kept = setup.workspace.root if setup.options.keep_workspace else None
        hint = f"see {kept / STDERR_FILE} and {kept / TRANSCRIPT_FILE}" if kept else KEEP_HINT
        result = outcome(events, run.status, run.duration_ms, setup.options, hint)
        result.offered = bundled_names(bundled_skills(setup.binary))
        return result

    # the transcript readers of :mod:`.gemini_events`
    tool_calls = staticmethod(tool_calls)
    skill_tool = staticmethod(skill_tool)
    explicit = staticmethod(explicit)


PLUGIN = Gemini()

run = agent_run(PLUGIN)


def check_names(setup: RunSetup, bundled: Mapping[str, str]) -> None:
    """Gemini CLI keeps one skill per name, case-insensitively: refuse a tested skill named like
    a bundled one (the bundled copy would answer ``without`` under that name) and offered or
    fixture skills whose names differ only in case (one would hide the other)."""
    tested = setup.tested.name.lower()
    if tested in bundled:
        raise RunnerError(
            f"skill '{setup.tested.name}' has the name of a skill Gemini CLI bundles "
            f"({bundled[tested]}); it is offered in both variants, so the result would mean "
            "nothing — rename the skill",
            retryable=False,
        )
    seen: dict[str, str] = {}
    for ref in (setup.tested, *setup.neighbours, *setup.fixture_skills):
        other = seen.setdefault(ref.name.lower(), ref.name)
        if other != ref.name:
            raise RunnerSetupError(
                f"skills '{other}' and '{ref.name}' differ only in case; Gemini CLI would offer "
                "one of them — give each skill its own name"
            )
