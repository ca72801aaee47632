"""`skill-evals runner …`, `evidence` and `mcp-serve`: the click commands only (docs/agents/).

Heavy modules are imported inside the commands so that `skill-evals --help` starts fast.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from ..agents.registry import ENTRIES as AGENT_ENTRIES
from ..escaping.terminal import terminal_safe
from .common import fail
from .helptext import CONTEXT, epilog
from .options import file_option


@click.group(
    context_settings=CONTEXT,
    short_help="Built-in runners for --runner: real agents, isolated; an offline simulation.",
    epilog=epilog(
        "skill-evals test --skill S --cases C --runner 'skill-evals runner claude-code'",
        "docs/agents/README.md",
        "docs/runner-contract.md",
    ),
)
def runner() -> None:
    """Built-in runners to pass to `skill-evals test --runner` (or `runner:` in
    .skill-evals.yml): each runs a real agent in a fresh, isolated workspace per invocation,
    or (`simulated`) answers offline without a model."""


def _tested_versions() -> str:
    """The help's list of each agent's tested release, npm package and the Node it needs."""
    lines = ["\b", "Tested agent CLI versions (another release runs, with a warning):"]
    for item in AGENT_ENTRIES:
        node = f"Node ≥ {item.node_label}" if item.node_label else item.node_note or "any Node"
        lines.append(
            f"  {item.name:<12} npm install -g {item.package}@{item.tested}  ({node}; "
            f"tested {item.tested_range})"
        )
    return "\n".join(lines)


runner.help = f"{inspect.cleandoc(runner.help or '')}\n\n{_tested_versions()}"


def _agent_options(func: Any) -> Any:
    options = [
        click.option(
            "--model",
            default=None,
            help="Model passed to the agent. Default: the agent's own default.",
        ),
        click.option(
            "--max-turns",
            type=click.IntRange(1, 1000),
            default=None,
            help="Stop the agent after N turns. Default: the agent's own limit.",
        ),
        click.option(
            "--with-skill",
            "with_skills",
            multiple=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="A neighbour skill offered in both variants, so routing is tested against "
            "competition (repeatable). Default: none.",
        ),
        click.option(
            "--fixture",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Directory copied into each fresh project. Default: an empty project.",
        ),
        click.option(
            "--bin",
            "bin_",
            default=None,
            metavar="PATH",
            help="The agent's program; a relative path is resolved from the current "
            "directory. Default: the agent's usual name, looked up on PATH.",
        ),
        click.option(
            "--delivery",
            type=click.Choice(["native", "mcp"]),
            default="native",
            show_default=True,
            help="Offer skills natively or through mcp-serve.",
        ),
        click.option(
            "--keep-workspace",
            is_flag=True,
            help="Keep each invocation's workspace (transcript, agent stderr) and print its "
            "path on stderr, for debugging. Off by default.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _caller_path(program: str | None) -> str | None:
    """``--bin``: a path with a directory part is made absolute against the directory the
    runner was started in (the agent itself runs in a fresh workspace elsewhere); a bare name
    is still looked up on PATH."""
    if program is None or "/" not in program:
        return program
    return os.path.abspath(os.path.expanduser(program))


def _run_agent(agent: str, **kwargs: Any) -> None:
    from ..agents.base import AgentOptions, RunnerError, RunnerSetupError, read_invocation
    from ..agents.registry import entry
    from ..agents.scaffold import run_agent

    opts = AgentOptions(
        model=kwargs["model"],
        max_turns=kwargs["max_turns"],
        with_skills=tuple(kwargs["with_skills"]),
        fixture=kwargs["fixture"],
        bin=_caller_path(kwargs["bin_"]),
        delivery=kwargs["delivery"],
        keep_workspace=kwargs["keep_workspace"],
        provider_config=kwargs.get("provider_config"),
        read_only=kwargs.get("read_only", False),
    )
    registered = entry(agent)
    try:
        invocation = read_invocation(catalog=registered.catalog)
        result = run_agent(registered.load(), invocation, opts, works=registered.works)
    except RunnerError as exc:  # the runner's own reason: said in the report, not on stderr
        sys.stdout.write(exc.to_line())
        sys.exit(0)
    except RunnerSetupError as exc:
        click.echo(f"skill-evals runner {agent}: {terminal_safe(exc)}", err=True)
        sys.stdout.write(exc.to_line())  # the reason the engine reports: {"runnerError": …}
        sys.stdout.flush()
        sys.exit(2)
    sys.stdout.write(result.to_line())
    sys.stdout.flush()


# Options that only some runners take (listed in their registry entry's extra_options).
_EXTRA_OPTIONS = {
    "provider-config": file_option(
        "--provider-config",
        "provider_config",
        help_text="JSON file merged as OpenCode's `provider` section (a custom provider). "
        "Default: none.",
    ),
    "read-only": click.option(
        "--read-only",
        "read_only",
        is_flag=True,
        help="Run the agent in a private copy of the project, not the engine's workspace, and "
        "let it neither edit files nor run commands (the agent's page says exactly what it may "
        "do). Off by default.",
    ),
}


def _agent_command(name: str, summary: str, extra: tuple[str, ...], doc: str) -> click.Command:
    # The example must run as written: a model where the agent has no default, the
    # environment where the agent needs one (both are refused before anything starts).
    model = f" --model {_EXAMPLE_MODEL[name]}" if name in _EXAMPLE_MODEL else ""
    example = (
        _EXAMPLE_ENV.get(name, "") + "skill-evals test --skill skills/refund-policy \\\n"
        "  --cases skills/refund-policy/evals/cases.jsonl \\\n"
        f"  --runner 'skill-evals runner {name}{model} --with-skill skills/neighbour'"
    )
    help_text = (
        f"{summary}\n\nA runner for `skill-evals test --runner`: it reads one invocation (the "
        "prompt on stdin, the EVALGATE_SKILL_* variables), runs the agent in a fresh isolated "
        "workspace and prints the one result line. Not meant to be run by hand."
        + _NEEDS.get(name, "")
    )

    @click.command(
        name,
        help=help_text,
        short_help=summary,
        context_settings=CONTEXT,
        epilog=epilog(example, f"docs/agents/{doc}", "docs/runner-contract.md"),
    )
    @_agent_options
    def command(**kwargs: Any) -> None:
        _run_agent(name, **kwargs)

    for option in extra:
        command = _EXTRA_OPTIONS[option](command)
    if name in _REQUIRED_MODEL:  # no default model: the run is refused without one
        for param in command.params:
            if param.name == "model" and isinstance(param, click.Option):
                param.help = _REQUIRED_MODEL[name]
    return command


# The example model of the runners whose agent has no default model, and what else an agent
# needs from the environment before it can start.
_EXAMPLE_MODEL = {"opencode": "anthropic/claude-sonnet-4-5", "copilot": "claude-sonnet-4-5"}
_EXAMPLE_ENV = {
    "copilot": "COPILOT_PROVIDER_BASE_URL=https://api.anthropic.com \\\n"
    "COPILOT_PROVIDER_TYPE=anthropic COPILOT_PROVIDER_API_KEY=sk-ant-... \\\n"
}
_NEEDS = {
    "copilot": "\n\nNeeds your model provider in the environment: COPILOT_PROVIDER_BASE_URL "
    "(without it the run stops before it starts, exit 7), COPILOT_PROVIDER_TYPE "
    "(anthropic or openai, the default) and COPILOT_PROVIDER_API_KEY, which reaches Copilot "
    "only through the credential proxy.",
}
# The --model help of the runners whose agent has no default model.
_REQUIRED_MODEL = {
    "opencode": "Required (no default): the model as provider/model (e.g. "
    "anthropic/claude-sonnet-4-5); without it the run stops before it starts (exit 5).",
    "copilot": "Required unless COPILOT_MODEL is set (no default): the model your provider "
    "serves (e.g. claude-sonnet-4-5); without either the run stops before it starts (exit 5).",
}


for _entry in AGENT_ENTRIES:
    _extra = (*_entry.extra_options, *(("read-only",) if _entry.works else ()))
    runner.add_command(_agent_command(_entry.name, _entry.summary, _extra, _entry.doc))


@runner.command(
    "simulated",
    context_settings=CONTEXT,
    short_help="SIMULATION, not a model: offline and deterministic, for demos and self-tests.",
    epilog=epilog(
        "skill-evals test --skill examples/skills/refund-policy \\\n"
        "  --cases examples/skills/refund-policy/evals/cases.jsonl \\\n"
        "  --runner 'skill-evals runner simulated'",
        "docs/agents/simulated.md",
    ),
)
def runner_simulated() -> None:
    """SIMULATION, not a model: loads the skill when enough prompt words occur in its
    description (never in `without`) and answers from the skill's body; says so on stderr every
    time. For demos, tutorials and self-tests: its figures say nothing about a real agent."""
    from ..agents.simulated import main as simulated_main

    simulated_main()


# ------------------------------------------------------------------------------------ evidence


@click.command(
    context_settings=CONTEXT,
    short_help="Print the loading evidence found in a saved agent transcript, as JSON.",
    epilog=epilog(
        "skill-evals evidence --agent claude-code transcripts/refund-eligible.1.with.jsonl",
        "docs/agents/README.md",
    ),
)
@click.option(
    "--agent",
    required=True,
    type=click.Choice([e.name for e in AGENT_ENTRIES]),
    help="Which agent wrote the transcript.",
)
@click.option(
    "--skill",
    "skills",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A skill whose content to look for in tool results (repeatable).",
)
@file_option(
    "--config",
    "config_path",
    help_text="A .skill-evals.yml whose evidence.toolPatterns / evidence.uriPatterns also count "
    "as loads. Default: none.",
)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def evidence(agent: str, skills: tuple[Path, ...], config_path: Path | None, file: Path) -> None:
    """Print the loading evidence found in FILE, a saved agent transcript (JSON events, e.g.
    from SKILL_EVALS_TRANSCRIPT_DIR or --keep-workspace): which skills were loaded, how, and
    where in the transcript."""
    from ..agents.base import RunnerSetupError, skill_ref
    from ..agents.content import index_skills, not_unique_warnings
    from ..agents.evidence import EvidencePatterns, read_events
    from ..agents.proof import prove
    from ..agents.registry import agent as load_agent

    patterns = EvidencePatterns()
    if config_path is not None:
        from ..ci.config import load_config

        patterns = load_config(config_path).evidence
    try:
        texts = index_skills([(ref.name, ref.text) for ref in map(skill_ref, skills)])
    except RunnerSetupError as exc:
        fail(f"--skill: {exc}")
    for warning in not_unique_warnings(texts):
        click.echo(f"skill-evals: warning: {terminal_safe(warning)}", err=True)
    try:
        events = read_events(file)
    except OSError as exc:
        fail(f"{file}: cannot read ({exc.strerror})")
    names = frozenset(text.name for text in texts)
    loads = prove(load_agent(agent), events, texts, None, patterns, names, any_skill_md=not texts)
    if not texts and any(load.state == "unverified" for load in loads):
        click.echo(
            "skill-evals: note: reads cannot be proven without --skill DIR; listed as unverified",
            err=True,
        )
    click.echo(json.dumps([load.to_json() for load in loads], indent=2))


# ----------------------------------------------------------------------------------- mcp-serve


@click.command(
    "mcp-serve",
    context_settings=CONTEXT,
    short_help="An MCP server offering skills as load_<name>_skill tools and resources.",
    epilog=epilog(
        "skill-evals mcp-serve --skill skills/refund-policy --http 127.0.0.1:8765",
        "docs/agents/mcp.md",
    ),
)
@click.option(
    "--skill",
    "skills",
    multiple=True,
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A skill directory to offer (repeatable).",
)
@click.option(
    "--http",
    "http",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP on HOST:PORT. Default: stdio.",
)
def mcp_serve(skills: tuple[Path, ...], http: str | None) -> None:
    """MCP server offering each skill as load_<name>_skill and skill://<name>/SKILL.md, every
    file of it as a resource, and the Skills extension (skills/list, skills/get); it speaks the
    legacy protocol versions through initialize and 2026-07-28 statelessly."""
    from ..agents import mcp_server

    try:
        server = mcp_server.SkillServer.from_dirs(list(skills))
    except ValueError as exc:
        fail(str(exc))
    for served in server.skills:
        if served.unlisted is not None:
            click.echo(
                f"mcp-serve: {terminal_safe(served.name)} is not listed in skills/list: "
                f"{terminal_safe(served.unlisted)}",
                err=True,
            )
    if http is None:
        mcp_server.serve_stdio(server)
        return
    try:  # a malformed address, an unknown host, a port in use: exit 5 naming --http
        host, port = mcp_server.parse_http_address(http)
        httpd = mcp_server.make_http_server(server, host, port)
    except ValueError as exc:
        fail(str(exc))
    mcp_server.serve_http_server(httpd)
