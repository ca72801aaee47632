"""Command line: click commands only — parse, call, print, exit.

Heavy modules are imported inside the commands so that `skill-evals --help` starts fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__
from .agents.registry import ENTRIES as AGENT_ENTRIES
from .codes import INTERNAL, INVALID
from .errors import EvalError
from .helptext import CONTEXT, epilog
from .interrupts import sigterm_interrupts
from .terminal import terminal_safe


def _fail(message: str, code: int = INVALID) -> NoReturn:
    click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
    sys.exit(code)


@click.group(
    context_settings=CONTEXT,
    epilog=epilog(
        "skill-evals test --skill examples/skills/refund-policy \\\n"
        "  --cases examples/skills/refund-policy/evals/cases.jsonl \\\n"
        "  --runner 'skill-evals runner simulated' --min-trigger-f1 0.8\n"
        "skill-evals COMMAND --help",
        "docs/README.md",
        "docs/first-suite.md",
    ),
)
@click.version_option(__version__, prog_name="skill-evals")
@click.option("--debug", is_flag=True, help="Print a traceback on internal errors (exit 70).")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Gate pull requests and releases on agent skills.

    Measures trigger precision/recall/F1 and paired uplift for a skill, proves from the run's
    own records which skills were loaded, and exits with a documented code (`skill-evals codes`).
    """
    ctx.obj = {"debug": debug}


# ---------------------------------------------------------------------------------------- test

_OUTPUT_PATH = click.Path(dir_okay=False, path_type=Path)


class _FloatRange(click.FloatRange):
    """click.FloatRange that also rejects NaN: every comparison with NaN is false, so click's
    own range check lets ``nan`` through (and the gate would then compare against it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if result != result:  # NaN
            self.fail(f"{value} is not in the range {self._describe_range()}.", param, ctx)
        return result


_TEST_EXAMPLE = """
skill-evals test --skill skills/refund-policy \\
  --cases skills/refund-policy/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' --min-trigger-f1 0.9 --min-uplift 0.05
"""


@cli.command(
    context_settings=CONTEXT,
    short_help="Evaluate one skill: trigger F1, uplift, loading evidence; exit code = verdict.",
    epilog=epilog(_TEST_EXAMPLE, "docs/first-suite.md", "docs/cases.md", "docs/report.md"),
)
@click.option(
    "--skill",
    "skill",
    required=True,
    type=click.Path(path_type=Path),
    help="The skill directory (it holds SKILL.md).",
)
@click.option(
    "--cases",
    "cases",
    required=True,
    type=click.Path(path_type=Path),
    help="The case file: .jsonl, or .yaml/.yml with {cases: [...]} (docs/cases.md).",
)
@click.option(
    "--runner",
    default=None,
    metavar="CMD",
    help="The runner command, run once per case, trial and variant; split like a shell, run "
    "without one. Built in: 'skill-evals runner claude-code|codex|pi|simulated'. No default: "
    "give this or --observations.",
)
@click.option(
    "--observations",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="Score recorded observations (JSONL, docs/runner-contract.md) instead of running "
    "anything. No default: give this or --runner.",
)
@click.option("--trials", type=click.IntRange(1, 100), default=3, help="Runs per case and variant.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "junit", "html"]),
    default="text",
    help="What stdout gets: a report for people, the JSON report, Markdown, JUnit XML or HTML.",
)
@click.option(
    "--report",
    type=_OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Also write the JSON report to FILE. Default: none.",
)
@click.option(
    "--junit",
    type=_OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Also write JUnit XML to FILE. Default: none.",
)
@click.option(
    "--markdown",
    type=_OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Also write Markdown to FILE. Default: none.",
)
@click.option(
    "--html",
    type=_OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Also write a self-contained HTML report with per-case detail to FILE. Default: none.",
)
@click.option(
    "--include-outputs",
    is_flag=True,
    help="Put each run's answer text into the HTML per-case detail (--html or --format html), "
    "to see why a task failed. Off by default; never goes into JSON, JUnit or Markdown.",
)
@click.option(
    "--min-trigger-f1",
    type=_FloatRange(0, 1),
    default=None,
    metavar="X",
    help="Gate: fail (exit 1) when trigger F1 is below X. Default: no gate.",
)
@click.option(
    "--min-uplift",
    type=_FloatRange(-1, 1),
    default=None,
    metavar="X",
    help="Gate: fail (exit 1) when the lower bound of the uplift's 95% interval is below X. "
    "Default: no gate.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(1, 600_000),
    default=None,
    help="Per invocation: kill the runner after this many milliseconds (a runner failure). "
    "Default: 30000; 300000 for a built-in agent runner (skill-evals runner claude-code, ...).",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=2,
    metavar="N",
    help="Run an invocation again, up to N times, when its runner reports a retryable failure "
    "(rate limit, overload, 5xx), after 2 s, 8 s, 32 s, then 60 s. Default: 2.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(1, 10_000_000),
    default=1_000_000,
    help="Per invocation: kill the runner after this many bytes of stdout + stderr.",
)
@click.option(
    "--jobs", type=click.IntRange(1, 64), default=4, help="Runner processes at the same time."
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    default=42,
    help="Seed of the bootstrap: the same seed gives the same interval.",
)
@click.option(
    "--bootstrap-samples",
    type=click.IntRange(1000, 1_000_000),
    default=10_000,
    help="Bootstrap resamples for the uplift interval.",
)
@click.option(
    "--record",
    type=_OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Write every observation to FILE as it completes, for --resume. Default: none.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="Reuse the observations recorded in FILE; run only the missing ones. Default: none.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Keep starting invocations after a runner failure (default: stop at the first).",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="No progress on stderr (the simulation note stays)."
)
@click.option(
    "--keep-workspaces",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Move each invocation's workspace to DIR/<case>/<trial>/<variant>/ instead of "
    "deleting it (debugging; DIR must be new or empty, outside the skill). Default: none.",
)
def test(
    skill: Path,
    cases: Path,
    runner: str | None,
    observations: Path | None,
    trials: int,
    fmt: str,
    report: Path | None,
    junit: Path | None,
    markdown: Path | None,
    html: Path | None,
    include_outputs: bool,
    min_trigger_f1: float | None,
    min_uplift: float | None,
    timeout_ms: int | None,
    max_bytes: int,
    jobs: int,
    seed: int,
    bootstrap_samples: int,
    record: Path | None,
    resume: Path | None,
    keep_going: bool,
    keep_workspaces: Path | None,
    quiet: bool,
    retries: int = 2,
) -> None:
    """Evaluate one skill: does the agent load it where it should (trigger precision, recall,
    F1), do task results improve with it (paired uplift with a bootstrap interval and a sign
    test), and did each run load what it should (loading evidence). The exit code is the
    verdict (`skill-evals codes`)."""
    from .agents.simulated import NOTICE, is_simulated_command
    from .outputs import close_held
    from .pipeline import TestOptions, run_test
    from .progress import ProgressPrinter

    if include_outputs and html is None and fmt != "html":
        # Decided before anything runs: answers go only into the HTML report.
        _fail("--include-outputs puts answers into the HTML report; add --html FILE")
    outputs = tuple(p for p in (report, junit, markdown, html, record) if p is not None)
    options = TestOptions(
        skill=skill,
        cases=cases,
        runner=runner,
        observations=observations,
        trials=trials,
        seed=seed,
        bootstrap_samples=bootstrap_samples,
        timeout_ms=timeout_ms,
        max_bytes=max_bytes,
        jobs=jobs,
        min_trigger_f1=min_trigger_f1,
        min_uplift=min_uplift,
        record=record,
        resume=resume,
        keep_going=keep_going,
        keep_workspaces=keep_workspaces,
        outputs=outputs,
        retries=retries,
    )
    if is_simulated_command(runner):
        # Said on every run, --quiet or not: these figures must never pass for a model's.
        click.echo(f"skill-evals: note: {NOTICE}", err=True)
    printer = None if quiet else ProgressPrinter(sys.stderr)
    answers: dict[tuple[str, int, str], str] | None = {} if include_outputs else None
    held: dict[Path, int] = {}  # pipes and devices among the outputs, opened by the checks
    try:
        with sigterm_interrupts():
            try:
                result = run_test(options, progress=printer, held=held, answers=answers)
            finally:
                if printer is not None:
                    printer.close()
            inputs = tuple(p for p in (cases, observations, resume) if p is not None)
            paths = {"json": report, "junit": junit, "markdown": markdown, "html": html}
            _write_outputs(result, fmt, paths, skill, inputs, held, answers)
    finally:
        close_held(held)
    sys.exit(int(result["exitCode"]))


def _write_outputs(
    report: dict[str, Any],
    fmt: str,
    paths: dict[str, Path | None],
    skill_dir: Path,
    inputs: tuple[Path, ...] = (),
    held: dict[Path, int] | None = None,
    answers: dict[tuple[str, int, str], str] | None = None,
) -> None:
    """Write the report in every format a path was given for, then ``fmt`` to stdout."""
    from .messages import by_severity
    from .outputs import write_output
    from .pipeline import path_inside
    from .render.html import render_test_html
    from .render.json import render_json
    from .render.junit import render_junit
    from .render.markdown import render_markdown
    from .render.text import render_text

    # A run stopped before the skill loaded still has the name the user gave: the directory's.
    fallback = skill_dir.name or str(skill_dir)
    name = (report.get("skill") or {}).get("name") or fallback

    def junit() -> str:
        return render_junit([(name, report, None)])

    renderers: dict[str, Callable[[], str]] = {
        "text": lambda: render_text(report, fallback),
        "json": lambda: render_json(report),
        "markdown": lambda: render_markdown(report, fallback),
        "junit": junit,
        "html": lambda: render_test_html(report, name, str(skill_dir), answers),
    }
    for kind, path in paths.items():
        render = renderers[kind]
        # Never write into the skill, nor over an input file (both are exit 5 already).
        if path is None or path_inside(path, skill_dir):
            continue
        if any(path.resolve() == given.resolve() for given in inputs):
            continue
        try:
            write_output(path, render(), held)
        except OSError as exc:
            if report["exitCode"] == INVALID:
                continue  # already invalid (e.g. this very path failed the checks): say why
            _fail(f"{path}: cannot write ({exc.strerror})")
    to_person = fmt == "text" and sys.stdout.isatty()
    if report["exitCode"] in (5, 6, 7) and not to_person:
        # One clear line on stderr (stdout may be JSON/XML for a machine, or a file); the text
        # report on the user's own terminal already says it, once.
        for message in by_severity(report, "error")[:1]:
            click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
    click.echo(renderers[fmt](), nl=False)


# ------------------------------------------------------------------------------------ validate


@cli.command(
    context_settings=CONTEXT,
    short_help="Check skills against the Agent Skills format (exit 1 on any error).",
    epilog=epilog("skill-evals validate skills/*", "docs/inputs.md#skills"),
)
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(dirs: tuple[Path, ...]) -> None:
    """Check each skill directory DIRS against the Agent Skills format: print every problem as
    PATH: message; exit 1 if any is an error, 0 otherwise (warnings do not fail)."""
    from .skill_rules import check_skill

    problems = [p for d in dirs for p in check_skill(d)]
    for problem in problems:
        click.echo(terminal_safe(problem.text))  # one problem per line, whatever the path holds
    errors = sum(1 for p in problems if p.severity == "error")
    if not errors:
        click.echo(f"{len(dirs)} skill(s) valid")
    sys.exit(1 if errors else 0)


@cli.command(
    context_settings=CONTEXT,
    short_help="Print the exit codes and what each means.",
    epilog=epilog("skill-evals codes", "docs/README.md#commands", "docs/statistics.md"),
)
def codes() -> None:
    """Print the exit-code table and the precedence when several apply."""
    from .codes import render_table

    click.echo(render_table())


# -------------------------------------------------------------------------------------- runner


@cli.group(
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
    from .agents.base import AgentOptions, CatalogUnsupported, RunnerSetupError, read_invocation
    from .agents.registry import agent as load_agent
    from .agents.scaffold import run_agent

    opts = AgentOptions(
        model=kwargs["model"],
        max_turns=kwargs["max_turns"],
        with_skills=tuple(kwargs["with_skills"]),
        fixture=kwargs["fixture"],
        bin=_caller_path(kwargs["bin_"]),
        delivery=kwargs["delivery"],
        keep_workspace=kwargs["keep_workspace"],
        provider_config=kwargs.get("provider_config"),
    )
    try:
        invocation = read_invocation()
        result = run_agent(load_agent(agent), invocation, opts)
    except CatalogUnsupported as exc:  # a routing run: say why in the report, not on stderr
        sys.stdout.write(exc.to_line())
        sys.exit(0)
    except RunnerSetupError as exc:
        click.echo(f"skill-evals runner {agent}: {terminal_safe(exc)}", err=True)
        sys.exit(2)
    sys.stdout.write(result.to_line())
    sys.stdout.flush()


# Options that only some runners take (listed in their registry entry's extra_options).
_EXTRA_OPTIONS = {
    "provider-config": click.option(
        "--provider-config",
        "provider_config",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="JSON file merged as OpenCode's `provider` section (a custom provider). "
        "Default: none.",
    ),
}


def _agent_command(name: str, summary: str, extra: tuple[str, ...], doc: str) -> click.Command:
    example = (
        "skill-evals test --skill skills/refund-policy \\\n"
        "  --cases skills/refund-policy/evals/cases.jsonl \\\n"
        f"  --runner 'skill-evals runner {name} --with-skill skills/neighbour'"
    )
    help_text = (
        f"{summary}\n\nA runner for `skill-evals test --runner`: it reads one invocation (the "
        "prompt on stdin, the EVALGATE_SKILL_* variables), runs the agent in a fresh isolated "
        "workspace and prints the one result line. Not meant to be run by hand."
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
    return command


for _entry in AGENT_ENTRIES:
    runner.add_command(
        _agent_command(_entry.name, _entry.summary, _entry.extra_options, _entry.doc)
    )


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
    from .agents.base import RunnerSetupError, read_invocation
    from .agents.simulated import run as run_simulated

    try:
        result = run_simulated(read_invocation(catalog=True))
    except RunnerSetupError as exc:
        click.echo(f"skill-evals runner simulated: {terminal_safe(exc)}", err=True)
        sys.exit(2)
    sys.stdout.write(result.to_line())
    sys.stdout.flush()


# ------------------------------------------------------------------------------------ evidence


@cli.command(
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
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="A .skill-evals.yml whose evidence.toolPatterns / evidence.uriPatterns also count "
    "as loads. Default: none.",
)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def evidence(agent: str, skills: tuple[Path, ...], config_path: Path | None, file: Path) -> None:
    """Print the loading evidence found in FILE, a saved agent transcript (JSON events, e.g.
    from SKILL_EVALS_TRANSCRIPT_DIR or --keep-workspace): which skills were loaded, how, and
    where in the transcript."""
    from .agents.base import RunnerSetupError, skill_ref
    from .agents.content import SkillText
    from .agents.evidence import EvidencePatterns, read_events
    from .agents.proof import prove
    from .agents.registry import agent as load_agent

    patterns = EvidencePatterns()
    if config_path is not None:
        from .ci.config import load_config

        patterns = load_config(config_path).evidence
    try:
        texts = [SkillText.of(ref.name, ref.text) for ref in map(skill_ref, skills)]
    except RunnerSetupError as exc:
        _fail(f"--skill: {exc}")
    try:
        events = read_events(file)
    except OSError as exc:
        _fail(f"{file}: cannot read ({exc.strerror})")
    names = frozenset(text.name for text in texts)
    loads = prove(load_agent(agent), events, texts, None, patterns, names)
    click.echo(json.dumps([load.to_json() for load in loads], indent=2))


# ----------------------------------------------------------------------------------- mcp-serve


@cli.command(
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
    """MCP server offering each skill as load_<name>_skill and skill://<name>/SKILL.md."""
    from .agents import mcp_server

    try:
        server = mcp_server.SkillServer.from_dirs(list(skills))
    except ValueError as exc:
        _fail(str(exc))
    if http is None:
        mcp_server.serve_stdio(server)
        return
    try:  # a malformed address, an unknown host, a port in use: exit 5 naming --http
        host, port = mcp_server.parse_http_address(http)
        httpd = mcp_server.make_http_server(server, host, port)
    except ValueError as exc:
        _fail(str(exc))
    mcp_server.serve_http_server(httpd)


# -------------------------------------------------------------------------- ci, lock, changed

from .ci.commands import changed, ci, lock  # noqa: E402  (click commands only; lazy inside)

cli.add_command(ci)
cli.add_command(lock)
cli.add_command(changed)

from .cli_route import route  # noqa: E402  (the click command only; lazy inside)

cli.add_command(route)


# ---------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: click usage errors exit 5, internal errors 70."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="skill-evals", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("skill-evals: interrupted", err=True)
        sys.exit(130)
    except EvalError as exc:
        # A documented failure outside `test` (e.g. a bad config): its exit code, one line.
        _fail(str(exc), exc.exit_code)
    except click.ClickException as exc:
        # Usage errors (bad option, out of range, missing argument) → exit 5, one line.
        _fail(exc.format_message())
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("skill-evals: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        click.echo(
            f"skill-evals: internal error: {type(exc).__name__}: {terminal_safe(exc)} "
            "(rerun with --debug)",
            err=True,
        )
        sys.exit(INTERNAL)
    sys.exit(0)
