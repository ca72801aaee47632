"""The GitHub Copilot CLI runner (``skill-evals runner copilot``): one isolated ``copilot`` run
per invocation, headless with ``--output-format json`` against your own model provider
(docs/agents/copilot.md).

Per invocation: a fresh workspace whose ``home/`` is HOME (so ``~/.copilot`` — settings,
sessions, personal skills, plugins, MCP servers, logs — is new and empty), the project made its
own git root (Copilot reads skills and instructions up to the git root), an environment built
from an allowlist, offline mode (``COPILOT_OFFLINE=true``: no GitHub login, telemetry, web tools
or updates) with the provider of ``COPILOT_PROVIDER_BASE_URL``, the skills of the run copied to
the project's ``.github/skills/<name>/`` (or served by ``skill-evals mcp-serve``), and Copilot's
own bundled skills disabled in its settings.

Copilot prints the prompt's answer and tool calls on stdout; the body of a loaded skill is
recorded only in the session's ``events.jsonl`` (``skill.invoked``), so once Copilot exits the
runner appends that file to the transcript (:mod:`.copilot_events` reads both).
"""

from __future__ import annotations

import json
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .base import AgentOptions, RunnerError, RunnerSetupError
from .copilot_events import (
    AGENT,
    SESSION_MARKER,
    explicit,
    skill_tool,
    tool_calls,
)
from .copilot_outcome import LOG_DIR, failures_line, outcome, stopper
from .copilot_package import link_shared, native_binary
from .environment import find_binary, mcp_serve_args, secret_names
from .evidence import MAX_TRANSCRIPT_BYTES, Event
from .protocol import Finished, Launch, Outcome, RunSetup
from .registry import entry
from .scaffold import KEEP_HINT, agent_run
from .workspace import git_root, refuse_bundled_names

__all__ = ["PLUGIN", "native_binary", "run"]

BASE_URL, PROVIDER_TYPE, API_KEY = (
    "COPILOT_PROVIDER_BASE_URL",
    "COPILOT_PROVIDER_TYPE",
    "COPILOT_PROVIDER_API_KEY",
)
PROVIDER_TYPES = ("openai", "anthropic")  # Copilot's default first
# The caller's variables Copilot gets besides the shared base allowlist: the provider (its key
# through the credential proxy) and how Copilot talks to it. No GitHub token: runs are offline.
ENVIRONMENT = (
    BASE_URL,
    PROVIDER_TYPE,
    API_KEY,
    "COPILOT_MODEL",
    "COPILOT_PROVIDER_WIRE_API",
    "COPILOT_PROVIDER_MODEL_ID",
    "COPILOT_PROVIDER_WIRE_MODEL",
    "COPILOT_PROVIDER_MAX_PROMPT_TOKENS",
    "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
)
# Where Copilot discovers a project's own skills.
PROJECT_SKILLS = (".github/skills", ".claude/skills", ".agents/skills")
# Skills Copilot 1.0.102 bundles: disabled in every run's settings, and a tested skill of one of
# these names is refused (the setting would disable it too).
BUNDLED_SKILLS = entry(AGENT).bundled_skills
MCP_SERVER = "skills"  # Copilot names its tools skills-load_<name>_skill
_FIXED_ENV = {
    "COPILOT_OFFLINE": "true",  # no GitHub auth, telemetry, web tools, GitHub MCP, updates
    "COPILOT_AUTO_UPDATE": "false",
    "NO_COLOR": "1",
}


def provider_problem(env: Mapping[str, str]) -> str | None:
    """What is wrong with the provider variables (None: usable)."""
    url = env.get(BASE_URL, "").strip()
    if not url:
        return (
            f"no model provider: set {BASE_URL} (and {PROVIDER_TYPE}=anthropic|openai, "
            f"{API_KEY}); Copilot runs offline with your own provider"
        )
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{BASE_URL} must be an http:// or https:// URL"
    kind = env.get(PROVIDER_TYPE, "").strip() or "openai"
    if kind not in PROVIDER_TYPES:
        return f"{PROVIDER_TYPE} must be anthropic or openai"
    return None


def model_of(options: AgentOptions, env: Mapping[str, str]) -> str | None:
    """``--model``, else the caller's ``COPILOT_MODEL``."""
    return options.model or env.get("COPILOT_MODEL", "").strip() or None


def build_command(
    binary: str, env: Mapping[str, str], read_only: bool, log_dir: Path | None = None
) -> list[str]:
    """The command line; the prompt goes to stdin (piped stdin is a prompt-mode run), never to
    argv. The credential-like variables are stripped from the model's commands."""
    argv = [
        binary,
        "--output-format",
        "json",
        "--allow-all-tools",
        "--no-ask-user",
        "--no-auto-update",
        "--disable-builtin-mcps",
        "--disable-client-telemetry",
        "--log-level",
        "warning",  # the failed requests' HTTP status, for the reason (copilot_outcome.py)
    ]
    if log_dir is not None:
        argv += ["--log-dir", str(log_dir)]
    hidden = secret_names(env)
    if hidden:
        argv.append("--secret-env-vars=" + ",".join(hidden))
    if read_only:  # skills load and files are read; no commands, no edits
        argv += ["--deny-tool", "shell", "--deny-tool", "write"]
    return argv


def mcp_config(skill_dirs: Sequence[Path]) -> dict[str, Any]:
    """An ``--additional-mcp-config`` document serving ``skill_dirs`` with ``mcp-serve``. The
    package's location goes into the code: Copilot does not pass PYTHONPATH to MCP servers."""
    args = mcp_serve_args(skill_dirs)
    server = {"type": "local", "command": sys.executable, "args": args, "tools": ["*"]}
    return {"mcpServers": {MCP_SERVER: server}}


def _session_records(home: Path, log_dir: Path) -> Callable[[], bytes]:
    """The epilogue: a marker line, the session's events.jsonl (what reached the model), then
    the statuses of the failed model requests Copilot logged."""

    def epilogue() -> bytes:
        marker = (json.dumps({"type": SESSION_MARKER}) + "\n").encode()
        parts = [marker]
        size = 0
        for path in sorted((home / ".copilot" / "session-state").glob("*/events.jsonl")):
            size += path.stat().st_size
            if size > MAX_TRANSCRIPT_BYTES:
                raise RunnerSetupError(
                    f"copilot's session records hold more than "
                    f"{MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB; {KEEP_HINT}"
                )
            data = path.read_bytes()
            parts.append(data if data.endswith(b"\n") or not data else data + b"\n")
        parts.append(failures_line(log_dir))
        return b"".join(parts)

    return epilogue


class Copilot:
    """GitHub Copilot CLI as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "copilot"
    skill_folders = PROJECT_SKILLS
    environment = ENVIRONMENT

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """The binary must be found, and a provider and a model set."""
        try:
            find_binary(options.bin, self.binary, env)
        except RunnerSetupError as exc:
            raise RunnerError(str(exc), False) from exc
        problem = provider_problem(env)
        if problem is not None:
            raise RunnerError(problem, False)
        if model_of(options, env) is None:
            raise RunnerError("no model: pass --model (or set COPILOT_MODEL)", False)

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh settings with the bundled skills disabled, the project its own git root, skills
        in ``.github/skills`` (or MCP), offline mode and the session records appended."""
        ws, options = setup.workspace, setup.options
        refs = (setup.tested, *setup.neighbours)
        why = "the runner disables Copilot's own copy by that name"
        refuse_bundled_names(refs, BUNDLED_SKILLS, "Copilot CLI bundles", why)
        env = setup.env
        env.update(_FIXED_ENV)
        env["COPILOT_MODEL"] = model_of(options, setup.caller_env) or ""
        config = ws.home / ".copilot"
        config.mkdir(parents=True, exist_ok=True)
        settings = {
            "disabledSkills": list(BUNDLED_SKILLS),
            "autoUpdate": False,
            "banner": "never",
            "memory": False,
        }
        (config / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", "utf-8")
        # The package the engine unpacked once for the run, when it is bound (read-only).
        link_shared(setup.caller_env.get("HOME"), ws.home)
        git_root(ws.project, env, "Copilot", "skills and instructions of folders above it")
        log_dir = ws.root / LOG_DIR
        argv = build_command(native_binary(setup.binary), env, options.read_only, log_dir)
        served = ws.offer(setup.offered, options.delivery, ws.project / ".github" / "skills")
        if served:
            path = ws.root / "mcp-config.json"
            path.write_text(json.dumps(mcp_config(served)), encoding="utf-8")
            argv += ["--additional-mcp-config", f"@{path}"]
        return Launch(
            argv=argv,
            stdin=setup.invocation.prompt.encode("utf-8"),
            stop_after=stopper(options.max_turns),
            epilogue=_session_records(ws.home, log_dir),
        )

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """Answer, task exit code and usage; a runner error when the run was void."""
        return outcome(events, run, setup.options)

    # the transcript readers of :mod:`.copilot_events`
    tool_calls = staticmethod(tool_calls)
    skill_tool = staticmethod(skill_tool)
    explicit = staticmethod(explicit)


PLUGIN = Copilot()

run = agent_run(PLUGIN)
