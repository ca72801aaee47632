"""The OpenCode runner (``skill-evals runner opencode``; docs/agents/opencode.md).

OpenCode (``opencode-ai``) runs headless as ``opencode run --format json`` with the prompt on
stdin, in a project made its own git root (else OpenCode reads ``AGENTS.md``, ``opencode.json`` and
skills of every folder above it), with fresh XDG dirs and HOME and its whole configuration in
``OPENCODE_CONFIG_CONTENT``. Skills are copies under the project's ``.opencode/skills/<name>/``, or
served by ``skill-evals mcp-serve`` as OpenCode's MCP server ``skills``. OpenCode runs under
:mod:`.opencode_guard`, which caps its own API retries at one. Transcript reading lives in
:mod:`.opencode_events`, the configuration in :mod:`.opencode_config`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .base import AgentOptions, RunnerError, RunnerSetupError
from .content import SkillText
from .environment import agent_env, find_binary, secretless_shell
from .evidence import Event, EvidencePatterns, Load
from .opencode_config import auth_variables, build_config, load_provider_config
from .opencode_events import (
    AGENT,
    explicit,
    explicit_command,
    failure,
    skill_tool,
    summarize,
    tool_calls,
)
from .opencode_guard import KINDS
from .opencode_keys import routed_providers
from .proof import prove
from .protocol import Finished, Launch, Outcome, RunSetup
from .registry import entry
from .scaffold import KEEP_HINT, agent_run
from .workspace import git_root, refuse_bundled_names

PROJECT_SKILLS = ".opencode/skills"
# Where OpenCode finds a project's own skills (its own folders and the Claude Code / agents
# compatibility ones); a fixture's skills there are offered in both variants.
SKILL_FOLDERS = (PROJECT_SKILLS, ".opencode/skill", ".claude/skills", ".agents/skills")
# Skills OpenCode 1.18 ships inside its binary; offered in every run (both variants). Listed in
# the registry, so the engine refuses a tested skill of such a name before anything runs.
BUNDLED_SKILLS = entry(AGENT).bundled_skills
TITLE = "skill-evals"  # a fixed session title: no title request to the model
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/\S+")
# OpenCode installs its plugin package into every config dir at start (from the npm registry);
# a lock file that already lists it makes that a no-op.
_PLUGIN_LOCK = {
    "lockfileVersion": 3,
    "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}},
}
# Set for OpenCode itself; removed again for the commands the model runs.
_OPENCODE_VARS = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # the bundled model list, no models.dev download
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DB": ":memory:",  # no session database on disk
    "npm_config_offline": "true",  # a plugin install it still tries never leaves the machine
}


def _available(setup: RunSetup) -> frozenset[str]:
    return frozenset([*(r.name for r in (*setup.offered, *setup.fixture_skills)), *BUNDLED_SKILLS])


def _skip_plugin_install(config_dir: Path) -> None:
    """Keep OpenCode from installing its plugin package into ``config_dir`` (a registry download
    and ~4 s at every start). A dir with its own ``package.json`` is left alone."""
    if (config_dir / "package.json").exists():
        return
    (config_dir / "node_modules").mkdir(parents=True, exist_ok=True)
    lock = config_dir / "package-lock.json"
    if not lock.exists():
        lock.write_text(json.dumps(_PLUGIN_LOCK) + "\n", encoding="utf-8")


class OpenCode:
    """OpenCode as an agent plug-in (:class:`~.protocol.Agent`)."""

    name = AGENT
    binary = "opencode"
    skill_folders = SKILL_FOLDERS
    # prepare() builds the environment itself: its auth variables depend on the caller's names
    # and on --provider-config (opencode_config.auth_variables).
    environment: tuple[str, ...] = ()

    def check(self, options: AgentOptions, env: Mapping[str, str]) -> None:
        """The binary first (its error is the most useful), then ``--model provider/model`` and
        ``--provider-config``."""
        find_binary(options.bin, self.binary, env)
        if not options.model or not _MODEL.fullmatch(options.model):
            raise RunnerSetupError(
                "--model: OpenCode needs provider/model, e.g. anthropic/claude-sonnet-4-5 or a "
                "provider of --provider-config"
            )
        if options.provider_config is not None:
            load_provider_config(options.provider_config)

    def prepare(self, setup: RunSetup) -> Launch:
        """Refuse a skill named like OpenCode's bundled one; then the git root, skills under
        ``.opencode/skills`` (or MCP), the configuration in the environment, and ``opencode run``
        under the retry guard."""
        ws, options = setup.workspace, setup.options
        refs = (setup.tested, *setup.neighbours)
        why = "OpenCode would offer its own copy in both variants"
        refuse_bundled_names(refs, BUNDLED_SKILLS, "OpenCode ships itself", why)
        providers, referenced = (
            load_provider_config(options.provider_config)
            if options.provider_config is not None
            else (None, [])
        )
        env = agent_env(setup.caller_env, ws.home, auth_variables(setup.caller_env, referenced))
        env["TMPDIR"] = str(ws.tmp)
        env["PWD"] = str(ws.project)  # OpenCode takes its directory from PWD, not the cwd
        above = "instructions and skills of every folder above the workspace"
        git_root(ws.project, env, "OpenCode", above)
        mcp_command = _install_skills(setup)
        config_home = Path(env["XDG_CONFIG_HOME"]) / "opencode"
        _skip_plugin_install(config_home)
        if (ws.project / ".opencode").is_dir():
            _skip_plugin_install(ws.project / ".opencode")
        pythonpath = setup.caller_env.get("PYTHONPATH")
        mcp_env = {"PYTHONPATH": pythonpath} if pythonpath else {}
        # The model's commands run in a wrapper shell without the key (and without the runner's
        # own OpenCode settings); OpenCode picks the arguments by the shell's name.
        shell = secretless_shell(ws.root / "bin", env, ["OPENCODE_CONFIG_CONTENT", *_OPENCODE_VARS])
        assert options.model is not None  # check() refused a run without it
        config = build_config(
            options.model,
            shell,
            routed_providers(providers, setup.caller_env) if providers else None,
            options.max_turns,
            mcp_command,
            mcp_env,
            options.read_only,
        )
        env.update(_OPENCODE_VARS)
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
        setup.env.clear()
        setup.env.update(env)
        return _launch(setup, options.model)

    def finish(self, events: Sequence[Event], setup: RunSetup, run: Finished) -> Outcome:
        """The last step's text, how it ended, usage; a void run when the model API failed,
        OpenCode ended before the model answered, or the turn limit was reached."""
        summary = summarize(events)
        if summary.retry_cap is not None:
            kind = summary.retry_cap.get("kind")
            if kind not in {known for known, _ in KINDS}:
                kind = "retryable error"
            raise RunnerError(
                f"the model API failed twice ({kind}); OpenCode's own retries are stopped "
                "after one, the engine's --retries run it again",
                retryable=True,
            )
        if summary.error is not None:
            reason, retryable = failure(summary.error, summary.error_names)
            raise RunnerError(f"{reason}; {KEEP_HINT}", retryable=retryable)
        if summary.steps == 0 or summary.finish is None:
            raise RunnerError(
                f"opencode exited with status {run.status} before the model answered; "
                f"check --bin, --model and the provider's key variable; {KEEP_HINT}"
            )
        limit = setup.options.max_turns
        if limit is not None and summary.steps >= limit:
            raise RunnerError(
                f"turn limit reached (--max-turns {limit}): OpenCode told the model to stop at "
                "its last step; raise --max-turns"
            )
        meta: dict[str, float] = {"durationMs": round(run.duration_ms, 3)}
        if summary.usage:
            meta["inputTokens"] = float(summary.input_tokens)
            meta["outputTokens"] = float(summary.output_tokens)
        if summary.cost > 0:  # custom providers are priced at 0, which would read as "free"
            meta["costUsd"] = round(summary.cost, 10)
        meta["turns"] = summary.steps  # an integer (the engine checks)
        succeeded = run.status == 0 and summary.finish == "stop"
        return Outcome(
            output=summary.output,
            exit_code=0 if succeeded else 1,
            meta=meta,
            offered=list(BUNDLED_SKILLS),
        )

    # the transcript readers of :mod:`.opencode_events`
    tool_calls = staticmethod(tool_calls)
    skill_tool = staticmethod(skill_tool)

    def explicit(
        self, events: Sequence[Event], prompt: str | None, available: frozenset[str]
    ) -> list[Load]:
        """See :func:`.opencode_events.explicit`."""
        return explicit(events, prompt, available | frozenset(BUNDLED_SKILLS))


PLUGIN = OpenCode()


def find_loads(
    events: Sequence[Event],
    patterns: EvidencePatterns | None = None,
    skills: Sequence[SkillText] = (),
    prompt: str | None = None,
    available: frozenset[str] = frozenset(),
) -> list[Load]:
    """Every piece of loading evidence in an OpenCode transcript (see :func:`~.proof.prove`);
    ``skills`` are the skills whose content is looked for."""
    return prove(PLUGIN, events, skills, prompt, patterns, available)


run = agent_run(PLUGIN)


def _install_skills(setup: RunSetup) -> list[str] | None:
    """The offered skills under ``.opencode/skills``, or (MCP delivery) served by our MCP
    server: its command line then, else None."""
    ws = setup.workspace
    if setup.options.delivery == "native":
        for ref in setup.offered:
            ws.install_skill(ref, ws.project / PROJECT_SKILLS)
        return None
    if not setup.offered:
        return None
    served = [ws.install_skill(ref, ws.root / "mcp-skills") for ref in setup.offered]
    mcp_command = [sys.executable, "-m", "skill_evals", "mcp-serve"]
    for path in served:
        mcp_command += ["--skill", str(path)]
    return mcp_command


def _launch(setup: RunSetup, model: str) -> Launch:
    """``opencode run`` under the retry guard; an explicit ``/skill`` prompt as its command."""
    # The guard is a stdlib-only script, run isolated (-I: no PYTHON* variables, no script
    # dir on sys.path), so it works with whatever environment the agent gets.
    guard = Path(__file__).with_name("opencode_guard.py")
    argv = [sys.executable, "-I", str(guard), setup.binary, "run"]
    argv += ["--format", "json", "--model", model, "--title", TITLE]
    argv += ["--print-logs", "--log-level", "ERROR"]  # what opencode_guard watches
    prompt = setup.invocation.prompt
    command = explicit_command(prompt, _available(setup))
    if command is not None:
        argv += ["--command", command[0]]
        prompt = command[1]  # the command's arguments
    return Launch(argv=argv, stdin=prompt.encode("utf-8"))
