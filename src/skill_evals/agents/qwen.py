"""The Qwen Code runner (``skill-evals runner qwen``; docs/agents/qwen.md).

Qwen Code (``@qwen-code/qwen-code``) runs headless as ``qwen --output-format stream-json`` with
the prompt on stdin, against an OpenAI-compatible Chat Completions API (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``), in a project made its own git root (Qwen Code reads ``QWEN.md`` and
``AGENTS.md`` of every folder up to the one above it), with a fresh HOME holding only the
runner's ``~/.qwen/settings.json``: bundled, user and extension skills off, no memory agent,
telemetry, usage statistics or update checks. Skills are copies under the project's
``.qwen/skills/<name>/``. Qwen Code runs under :mod:`.qwen_guard`, which caps its own API
retries at one and appends its chat log (what the model was really sent) to the event stream;
:mod:`.qwen_events` reads both.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import reasons
from .base import AgentOptions, RunnerError, RunnerSetupError
from .environment import find_binary, mcp_serve_args, secretless_shell
from .evidence import Event
from .protocol import Finished, Launch, Outcome, RunSetup
from .qwen_events import AGENT, explicit, read_transcript, skill_tool, tool_calls
from .scaffold import KEEP_HINT, agent_run
from .workspace import git_root

KEY_VAR, BASE_URL_VAR, MODEL_VAR = "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"
ENVIRONMENT = (KEY_VAR, BASE_URL_VAR, MODEL_VAR)
PROJECT_SKILLS = ".qwen/skills"
SKILL_FOLDERS = (PROJECT_SKILLS,)
_HINT = f"check {KEY_VAR} and {BASE_URL_VAR}"
_TURN_LIMIT = "max session turns"
# Qwen Code's own exit statuses for runs that end without a result event.
TURN_LIMIT_STATUS = 53  # FatalTurnLimitedError: --max-turns (model.maxSessionTurns) reached
_EXIT_REASONS = {42: "the prompt or an option was refused",
                 44: "the sandbox could not start", 52: "its configuration could not be used",
                 55: "a run budget was exceeded"}  # fmt: skip
MCP_SERVER = "skills"
# Qwen Code names its chat log folder after the whole working directory (every character but
# letters and digits a "-"), one path component: past this many characters it cannot write it.
MAX_PROJECT_PATH = 255  # its tools reach the model as mcp__skills__load_<name>_skill


def mcp_server(skill_dirs: Sequence[Path]) -> dict[str, Any]:
    """The ``skills`` MCP server: this package's ``mcp-serve`` for ``skill_dirs``, started by
    this Python with the package first on ``sys.path`` (no ``PYTHONPATH`` needed), trusted."""
    args = mcp_serve_args(skill_dirs)
    return {"command": sys.executable, "args": args, "trust": True}


def build_settings(options: AgentOptions, mcp: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fresh ``~/.qwen/settings.json``: OpenAI auth, only the project's skills, no memory
    agent, sub-agents, telemetry, statistics or updates, the chat log kept (it is the
    evidence), no retry inside a request (:mod:`.qwen_guard` caps Qwen Code's own at one)."""
    model: dict[str, Any] = {"generationConfig": {"maxRetries": 0}}
    if options.max_turns is not None:
        model["maxSessionTurns"] = options.max_turns
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "openai"}},
        # Qwen Code's own skills (review, dataviz, …) would compete in both variants.
        "skills": {"disabledLevels": ["user", "extension", "bundled"]},
        "memory": {
            "enableManagedAutoMemory": False,  # a second model request after every answer
            "enableManagedAutoDream": False,
            "enableAutoSkill": False,
        },
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "chatRecording": True,
        },
        # No sub-agents: evidence and tool calls are read from the main session's records.
        "tools": {"exclude": ["agent", "list_agents"]},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "model": model,
    }
    if mcp is not None:
        settings["mcpServers"] = {MCP_SERVER: dict(mcp)}
    if options.read_only:
        # Blocked whatever the approval mode: the model may read and load skills only.
        settings["permissions"] = {"deny": ["ShellTool", "WriteFileTool", "EditTool"]}
    return settings


def _check_path_length(project: Path) -> None:
    """Refuse, before anything runs, a working directory too long for Qwen Code's chat log."""
    length = len(os.path.realpath(project))
    if length > MAX_PROJECT_PATH:
        raise RunnerSetupError(
            f"the workspace path is {length} characters long: Qwen Code names its chat log "
            f"folder after it and cannot write one past {MAX_PROJECT_PATH} (the chat log is "
            "this runner's evidence); use a shorter TMPDIR"
        )


class Qwen:
    """Qwen Code as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "qwen"
    skill_folders = SKILL_FOLDERS
    environment = ENVIRONMENT

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """The binary and a key."""
        find_binary(options.bin, self.binary, env)
        if not env.get(KEY_VAR):
            raise RunnerError(f"no API key: set {KEY_VAR} (and {BASE_URL_VAR})", False)

    def prepare(self, setup: RunSetup) -> Launch:
        """Skills under ``.qwen/skills``, the settings in the fresh home, the project a git
        root, the model's commands run by a shell without the key, and Qwen Code under the
        guard."""
        ws, options = setup.workspace, setup.options
        env = setup.env
        env["TMPDIR"] = str(ws.tmp)
        env["QWEN_CODE_SUPPRESS_YOLO_WARNING"] = "1"
        env["NO_COLOR"] = "1"
        env["QWEN_CODE_NO_RELAUNCH"] = "true"  # one Node process less, signals reach the CLI
        # Machine-wide settings (e.g. /etc/qwen-code/settings.json) are not read: these paths
        # never exist.
        env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] = str(ws.root / "no-system-settings.json")
        env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = str(ws.root / "no-system-defaults.json")
        _check_path_length(ws.project)
        above = "QWEN.md and AGENTS.md of every folder above the workspace"
        git_root(ws.project, env, "Qwen Code", above)
        served = ws.offer(setup.offered, options.delivery, ws.project / PROJECT_SKILLS)
        mcp = mcp_server(served) if served else None
        config = ws.home / ".qwen"
        config.mkdir(parents=True, exist_ok=True)
        settings = json.dumps(build_settings(options, mcp), indent=2) + "\n"
        (config / "settings.json").write_text(settings, encoding="utf-8")
        # Qwen Code runs the model's commands with `bash` from PATH: a wrapper without the key.
        shell = secretless_shell(ws.root / "bin", env)
        env["PATH"] = f"{shell.parent}:{env.get('PATH', '')}"
        guard = Path(__file__).with_name("qwen_guard.py")
        argv = [sys.executable, "-I", str(guard), setup.binary, "--output-format", "stream-json"]
        argv += ["--auth-type", "openai", "--approval-mode", "yolo"]  # headless cannot ask
        if options.model:
            argv += ["--model", options.model]
        return Launch(argv=argv, stdin=setup.invocation.prompt.encode("utf-8"))

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The ``result`` event's answer and usage; a void run when the model API failed, the
        retry cap ended Qwen Code, the turn limit was reached or no result came."""
        t = read_transcript(events)
        if t.retry_cap is not None:
            status = t.retry_cap.get("status")
            failure = reasons.api_failure(status if isinstance(status, int) else None, None, _HINT)
            raise RunnerError(
                f"{failure} twice; Qwen Code's own retries are stopped after one, the engine's "
                "--retries runs it again",
                failure.retryable,
            )
        result = t.result
        if result is None:
            if run.status == TURN_LIMIT_STATUS:
                raise reasons.turn_limit(setup.options.max_turns)
            why = _EXIT_REASONS.get(run.status, "no result event")
            raise RunnerError(f"qwen exited with status {run.status} ({why}); {KEEP_HINT}")
        if result.get("is_error") is True:
            raise _error(result, setup.options.max_turns)
        if t.chat and not t.chat_records:
            raise RunnerError(
                "Qwen Code kept no chat log, so what the model was sent cannot be checked; "
                + KEEP_HINT
            )
        meta: dict[str, float] = {"durationMs": round(run.duration_ms, 3)}
        usage = result.get("usage")
        for key, name in (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens")):
            value = usage.get(key) if isinstance(usage, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                meta[name] = value
        meta["turns"] = len(t.assistant_ids)
        text = result.get("result")
        ok = result.get("subtype") == "success" and run.status == 0
        return Outcome(output=text if isinstance(text, str) else "", exit_code=0 if ok else 1,
                       meta=meta)  # fmt: skip

    # the transcript readers of :mod:`.qwen_events`
    tool_calls = staticmethod(tool_calls)
    skill_tool = staticmethod(skill_tool)
    explicit = staticmethod(explicit)


def _error(result: Mapping[str, Any], max_turns: int | None) -> RunnerSetupError:
    """The reason of a ``result`` with ``is_error: true`` (never a task outcome); the agent's
    text is quoted only when it says it has no credentials."""
    error = result.get("error")
    text = str(error.get("message", "")) if isinstance(error, dict) else ""
    dead = reasons.unreachable(text)
    if dead is not None:
        return dead
    if _TURN_LIMIT in text.lower():
        return reasons.turn_limit(max_turns)
    status = reasons.status_in(text.removeprefix("[API Error: "), anchored=True)
    if status is None and reasons.names_credentials(text):
        return reasons.no_credentials(text, KEY_VAR)
    if status is not None or "API Error" in text:
        return reasons.api_failure(status, None, _HINT)
    return RunnerError(
        "Qwen Code ended with an error result; the run says nothing about the skill; " + KEEP_HINT
    )


PLUGIN = Qwen()

run = agent_run(PLUGIN)
