"""The pi runner (``skill-evals runner pi``) and pi's loading evidence (docs/agents/pi.md).

pi (``@mariozechner/pi-coding-agent``) is run headless as ``pi --mode json --no-skills`` with a
fresh agent dir (``PI_CODING_AGENT_DIR``), a moved HOME, no session file and every discovery
(skills, extensions, prompt templates, themes) off; the skills of the run are offered only through
``--skill PATH`` (copies in the runner's private directory, never in the project; a routing run's
whole catalog too). pi lists offered skills in its system prompt and a model loads one by calling
the ``read`` tool on its ``SKILL.md``. pi works in the engine's workspace with its default tools
(``read``, ``bash``, ``edit``, ``write``; ``bash`` through :func:`secretless_bash`), or, with
``--read-only``, in a private project with the tools that only read. Evidence follows the shared
rules of :mod:`.proof`: any tool result (``read``, ``bash``, …) that shows a skill's content, and
a ``/skill:<name>`` prompt that pi expanded.

Model selection: ``--model`` is passed through (``provider/id`` or a pattern). When
``SKILL_EVALS_PI_BASE_URL`` is set, a custom provider ``skill-evals`` is written to the fresh
``models.json`` with that base URL, the API type from ``SKILL_EVALS_PI_API`` (default
``openai-completions``) and ``apiKey`` = the *name* ``SKILL_EVALS_PI_API_KEY`` — pi resolves it
from the environment at request time, so no secret is ever written to disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..sandbox.credential_proxy import PI_PROVIDERS, PROXY_VARIABLE_PREFIX
from .base import AgentOptions, RunnerSetupError
from .content import SkillText
from .environment import secret_names
from .evidence import Event, EvidencePatterns, Load, ToolCall
from .pi_events import (
    AGENT,
    ENV_API_KEY,
    ENV_BASE_URL,
    NO_KEY_EVENT,
    NO_KEY_TEXT,
    Transcript,
    explicit,
    final_text,
    no_api_key,
    outcome,
    tool_calls,
    tool_calls_of,
    usage_meta,
)
from .proof import prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .scaffold import STDERR_FILE, agent_run

__all__ = [  # the transcript readers, for callers that know only this module
    "AGENT", "Transcript", "explicit", "final_text", "find_loads", "outcome", "run",
    "tool_calls", "usage_meta",
]  # fmt: skip

PROVIDER = "skill-evals"
ENV_API = "SKILL_EVALS_PI_API"
# Other variables pi takes a provider's key from.
_OTHER_KEYS = {"ANTHROPIC_API_KEY": ("ANTHROPIC_OAUTH_TOKEN",)}
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
# What the model may use: pi's default tools in the project, or only the ones that read
# (--read-only; a skill is still loaded with `read`).
WORK_TOOLS = ("read", "bash", "edit", "write")
READ_ONLY_TOOLS = ("read", "grep", "find", "ls")


def find_loads(
    events: Sequence[Event],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
) -> list[Load]:
    """Every piece of loading evidence in a pi transcript (see :func:`~.proof.prove`);
    ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, None, patterns)


def _proxied_providers(env: Mapping[str, str]) -> dict[str, Any]:
    """pi's built-in providers whose key the engine's credential proxy serves: their
    ``baseUrl`` pointed at the proxy (pi keeps their models and sends the placeholder key,
    which the proxy replaces)."""
    found: dict[str, Any] = {}
    for provider, row in PI_PROVIDERS:
        url = env.get(PROXY_VARIABLE_PREFIX + row.env, "")
        if url:
            found[provider] = {"baseUrl": url}
    return found


def _model_args(options: AgentOptions, env: Mapping[str, str], agent_dir: Path) -> list[str]:
    """``--provider/--model`` arguments, writing ``models.json`` for a custom base URL and for
    the built-in providers the credential proxy serves."""
    providers = _proxied_providers(env)
    base_url = env.get(ENV_BASE_URL, "")
    args = ["--model", options.model] if options.model else []
    if base_url:
        api = env.get(ENV_API, "") or "openai-completions"
        if api not in APIS:
            raise RunnerSetupError(f"{ENV_API}={api}: expected one of {', '.join(APIS)}")
        if not options.model:
            raise RunnerSetupError(
                f"{ENV_BASE_URL} is set: pass --model with the model id that server serves"
            )
        providers[PROVIDER] = {
            "baseUrl": base_url,
            "api": api,
            # The variable's *name*: pi reads its value from the environment per request.
            "apiKey": ENV_API_KEY,
            "models": [{"id": options.model}],
        }
        args = ["--provider", PROVIDER, "--model", options.model]
    if providers:
        text = json.dumps({"providers": providers}, indent=2) + "\n"
        (agent_dir / "models.json").write_text(text, encoding="utf-8")
    return args


def context_file(project: Path) -> Path | None:
    """The project's own instruction file, the one pi would pick in that folder."""
    return next((project / n for n in _CONTEXT_FILES if (project / n).is_file()), None)


def build_command(
    binary: str,
    skill_paths: Sequence[Path],
    model_args: Sequence[str],
    context: Path | None = None,
    tools: Sequence[str] = WORK_TOOLS,
    extension: Path | None = None,
) -> list[str]:
    """The pi command line (the prompt goes to stdin, never to argv, so a prompt starting with
    ``@`` or ``-`` is not taken for a file argument or an option).

    pi reads AGENTS.md / CLAUDE.md from the working directory *and every ancestor* up to ``/``,
    so its discovery is always off; the project's own file (``context``) is appended to the
    system prompt instead, and nothing above the workspace is read. ``tools``: pi's allowlist
    (``--tools``), ``extension``: the runner's own one (``-e``; no other is discovered)."""
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
    argv += ["--no-context-files", "--tools", ",".join(tools)]
    if extension is not None:
        argv += ["--extension", str(extension)]
    if context is not None:
        argv += ["--append-system-prompt", str(context)]
    for path in skill_paths:
        argv += ["--skill", str(path)]
    return argv + list(model_args)


# pi's own hook for the model's commands (its examples/extensions/bash-spawn-hook.ts): this
# extension replaces the bash tool by pi's own, built by createBashTool, with a spawn hook that
# drops the named variables from each command's environment. It holds variable *names* only.
_BASH_EXTENSION = """\
// skill-evals: the model's bash commands start without credential-like variables.
import { createBashTool } from "@mariozechner/pi-coding-agent";
const HIDDEN = %s;
export default function (pi) {
  pi.registerTool(createBashTool(process.cwd(), {
    spawnHook: ({ command, cwd, env }) => {
      const clean = { ...env };
      for (const name of HIDDEN) delete clean[name];
      return { command, cwd, env: clean };
    },
  }));
}
"""


def secretless_bash(root: Path, env: Mapping[str, str]) -> Path | None:
    """The extension that runs pi's ``bash`` tool without the credential-like variables of pi's
    environment ``env``, written under ``root`` (never the project); None when there are none.

    A spawn hook, not a ``shellPath`` wrapper: a project's ``.pi/settings.json`` overrides the
    agent dir's settings, so a wrapper set there could be replaced by the project."""
    names = secret_names(env)
    if not names:
        return None
    path = root / "pi-extensions" / "secretless-bash.js"
    path.parent.mkdir()
    path.write_text(_BASH_EXTENSION % json.dumps(names), encoding="utf-8")
    return path


class Pi:
    """pi as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "pi"
    skill_folders = PROJECT_SKILLS
    environment = AUTH_VARIABLES

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """``--delivery mcp`` is refused: pi has no MCP client. A ``--model provider/id`` of
        a built-in provider whose key variable is unset (and no SKILL_EVALS_PI_API_KEY) is
        refused before pi starts."""
        if options.delivery == "mcp":
            raise RunnerSetupError(
                "--delivery mcp: pi has no MCP support (it ships none by design; MCP would need "
                "a pi extension); use --delivery native"
            )
        model = options.model or ""
        row = dict(PI_PROVIDERS).get(model.split("/")[0]) if "/" in model else None
        if row is not None:
            given = (ENV_BASE_URL, ENV_API_KEY, row.env, *_OTHER_KEYS.get(row.env, ()))
            if not any(env.get(name) for name in given):
                raise no_api_key(model, row.env)

    def prepare(self, setup: RunSetup) -> Launch:
        """Fresh agent dir, every discovery off, skills passed with ``--skill``, the tools of
        the mode; ``--max-turns`` emulated by stopping pi after that many turns."""
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
        (agent_dir / "settings.json").write_text(json.dumps(settings) + "\n", encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
        env["PI_OFFLINE"] = "1"  # no version check, telemetry or package updates at startup
        model_args = _model_args(options, setup.caller_env, agent_dir)
        skill_paths = [ws.install_skill(ref, ws.root / "skills") for ref in setup.offered]
        skill_paths += [ref.path for ref in setup.fixture_skills]
        tools = READ_ONLY_TOOLS if options.read_only else WORK_TOOLS
        # pi's bash tool runs commands with pi's own environment: hide the keys in it.
        extension = None if options.read_only else secretless_bash(ws.root, env)
        argv = build_command(
            setup.binary, skill_paths, model_args, context_file(ws.project), tools, extension
        )
        return Launch(
            argv=argv,
            stdin=setup.invocation.prompt.encode("utf-8"),
            stop_after=_turn_limit(options.max_turns),
            epilogue=_no_key_note(ws.root / STDERR_FILE),
        )

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The last assistant message, usage sums and loads; a void run when pi never finished
        or its model request failed."""
        transcript = Transcript()
        for event in events:
            transcript.add(event)
        transcript.stopped_at_max_turns = run.stopped
        kept = setup.workspace.root if setup.options.keep_workspace else None
        return outcome(
            transcript,
            run.status,
            round(run.duration_ms),
            kept,
            setup.options.max_turns,
            setup.options.model,
        )

    tool_calls = staticmethod(tool_calls)
    explicit = staticmethod(explicit)

    def skill_tool(self, call: ToolCall) -> str | None:
        """pi has no skill tool: it lists skills and the model reads their files."""
        return None


PLUGIN = Pi()

run = agent_run(PLUGIN)


def _no_key_note(stderr: Path) -> Callable[[], bytes]:
    """The epilogue that notes, before the workspace goes, whether pi's stderr said the
    model has no key (its first 4 KiB): one event line for the transcript."""

    def note() -> bytes:
        try:
            with stderr.open("rb") as handle:
                said = NO_KEY_TEXT in handle.read(4096)
        except OSError:
            said = False
        return (json.dumps({"type": NO_KEY_EVENT}) + "\n").encode() if said else b""

    return note


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
        return turns >= max_turns and bool(tool_calls_of(event.get("message")))

    return stop_after
