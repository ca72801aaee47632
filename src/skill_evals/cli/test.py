"""`skill-evals test`: the click command only — parse, call, print, exit (docs/first-suite.md).

Heavy modules are imported inside the command so that `skill-evals --help` starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..agents import registry as agent_registry
from ..codes import INVALID
from ..escaping.terminal import terminal_safe
from ..run.interrupts import sigterm_interrupts
from .cache_options import cache_options, cache_settings
from .common import FloatRange, fail
from .helptext import CONTEXT, epilog
from .scope_options import arm_options, scope_options

# Every shipped runner, named in --help: the agents of the registry and the simulation.
BUILT_IN_RUNNERS = "|".join([*agent_registry.names(), "simulated"])

_OUTPUT_PATH = click.Path(dir_okay=False, path_type=Path)


_TEST_EXAMPLE = """
skill-evals test --skill skills/refund-policy \\
  --cases skills/refund-policy/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' --min-trigger-f1 0.9 --min-uplift 0.05
"""


@click.command(
    "test",
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
    f"without one. Built in: 'skill-evals runner {BUILT_IN_RUNNERS}'. No default: "
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
    type=FloatRange(0, 1),
    default=None,
    metavar="X",
    help="Gate: fail (exit 1) when trigger F1 is below X. Default: no gate.",
)
@click.option(
    "--min-uplift",
    type=FloatRange(-1, 1),
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
    "(rate limit, overload, 5xx), after 2 s, 8 s, 32 s, then 60 s.",
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
    "--require-verified-isolation",
    is_flag=True,
    help="Exit 7 when a without run's command named the skill's files and its result could not "
    "be matched to its text (isolation unverified). Default: off (a warning).",
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
@cache_options
@scope_options
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
    require_verified_isolation: bool = False,
    retries: int = 2,
    **scope: Any,
) -> None:
    """Evaluate one skill: does the agent load it where it should (trigger precision, recall,
    F1), do task results improve with it (paired uplift with a bootstrap interval and a sign
    test), and did each run load what it should (loading evidence). The exit code is the
    verdict (`skill-evals codes`)."""
    from ..agents.simulated import NOTICE, is_simulated_command
    from ..pipeline import TestOptions, run_test
    from ..report.outputs import close_held
    from ..run.progress import ProgressPrinter

    if include_outputs and html is None and fmt != "html":
        # Decided before anything runs: answers go only into the HTML report.
        fail("--include-outputs puts answers into the HTML report; add --html FILE")
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
        cache=cache_settings(scope),
        scope=arm_options(scope),
        require_verified_isolation=require_verified_isolation,
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
    from ..messages import by_severity, stderr_warnings
    from ..plan.files import path_inside
    from ..report.html import render_test_html
    from ..report.json import render_json
    from ..report.junit import render_junit
    from ..report.markdown import render_markdown
    from ..report.outputs import write_output
    from ..report.text import render_text

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
            fail(f"{path}: cannot write ({exc.strerror})")
    for message in stderr_warnings(report):
        click.echo(f"skill-evals: warning: {terminal_safe(message)}", err=True)
    to_person = fmt == "text" and sys.stdout.isatty()
    if report["exitCode"] in (5, 6, 7) and not to_person:
        # One clear line on stderr (stdout may be JSON/XML for a machine, or a file); the text
        # report on the user's own terminal already says it, once.
        for message in by_severity(report, "error")[:1]:
            click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
    click.echo(renderers[fmt](), nl=False)
