"""`skill-evals route`: the click command only — parse, call, print, exit (docs/routing.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..escaping.terminal import terminal_safe
from .cache_options import cache_options, cache_settings

# The same option helpers as `ci` (one definition of the NaN-safe range and the error line).
from .common import FloatRange, fail
from .helptext import CONTEXT, epilog

if TYPE_CHECKING:
    from ..pipeline import RouteOptions

_OUTPUT_PATH = click.Path(dir_okay=False, path_type=Path)
FORMATS = ("text", "json", "markdown", "junit", "html")


_EXAMPLE = """\
skill-evals route --catalog 'examples/skills/*' --cases examples/evals/routing.jsonl \\
  --runner 'skill-evals runner simulated' --trials 1 --min-accuracy 0.7"""


@click.command(
    "route",
    context_settings=CONTEXT,
    short_help="Which skill the agent picks with the whole catalog installed; confusion matrix.",
    epilog=epilog(_EXAMPLE, "docs/routing.md", "docs/runner-contract.md"),
)
@click.option(
    "--skill",
    "skills",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A catalog skill directory (repeatable; catalog order is the order given).",
)
@click.option(
    "--catalog",
    "catalog_globs",
    multiple=True,
    help="Glob of catalog skill directories relative to the working directory, e.g. "
    "'skills/*' (repeatable; catalog order is by path).",
)
@click.option(
    "--cases",
    required=True,
    type=click.Path(path_type=Path),
    help="The routing case file: .jsonl, or .yaml/.yml with {cases: [...]}; each case has id, "
    "prompt, expect (skill names, [] for none) and optional tags.",
)
@click.option(
    "--runner",
    default=None,
    help="The runner command, run once per case and trial with the whole catalog in "
    "SKILL_EVALS_SKILL_DIRS; split like a shell, run without one. Default: none (give it or "
    "--observations).",
)
@click.option(
    "--observations",
    type=click.Path(path_type=Path),
    default=None,
    help="Score recorded routing observations (JSONL, variant with) instead of running a "
    "runner. Default: none.",
)
@click.option("--trials", type=click.IntRange(1, 100), default=3, help="Runs per case.")
@click.option("--jobs", type=click.IntRange(1, 64), default=4, help="Runner processes at once.")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**32 - 1),
    default=42,
    help="Recorded in the report and the CI fingerprint (routing draws no random numbers).",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(1, 600_000),
    default=None,
    help="Per invocation: kill the runner after this many milliseconds (a runner failure). "
    "Default: 30000; 300000 for a built-in agent runner (skill-evals runner claude-code, ...).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(1, 10_000_000),
    default=1_000_000,
    help="Per invocation: kill the runner after this many bytes of stdout + stderr.",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=2,
    help="Reruns of an invocation whose runner reports a retryable error.",
)
@click.option(
    "--min-accuracy",
    type=FloatRange(0, 1),
    default=None,
    help="Gate: fail (exit 1) when accuracy is below X. Default: no gate.",
)
@click.option(
    "--min-skill-f1",
    type=FloatRange(0, 1),
    default=None,
    help="Gate: fail (exit 1) when the F1 of any skill that some case expects is below X. "
    "Default: no gate.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    help="What stdout gets: a report for people, the JSON report, Markdown, JUnit XML or a "
    "self-contained HTML page with the confusion matrix as a heat map.",
)
@click.option(
    "--report",
    type=_OUTPUT_PATH,
    default=None,
    help="Also write the JSON report to FILE. Default: none.",
)
@click.option(
    "--record",
    type=_OUTPUT_PATH,
    default=None,
    help="Write every observation to FILE as it completes, for --resume. Default: none.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    default=None,
    help="Reuse the observations recorded in FILE; run only the missing ones. Default: none.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Keep starting invocations after a runner failure (default: stop at the first).",
)
@click.option(
    "--lint",
    is_flag=True,
    help="Run nothing: list overlapping descriptions and skills no case expects (exit 1 when "
    "it finds any).",
)
@click.option(
    "--require-verified-isolation",
    is_flag=True,
    help="Accepted for the same command line as test and ci: a routing run has no without arm, "
    "so there is no isolation to verify (the report says so). Default: off.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@cache_options
def route(
    skills: tuple[Path, ...],
    catalog_globs: tuple[str, ...],
    cases: Path,
    runner: str | None,
    observations: Path | None,
    trials: int,
    jobs: int,
    seed: int,
    timeout_ms: int | None,
    max_bytes: int,
    retries: int,
    min_accuracy: float | None,
    min_skill_f1: float | None,
    fmt: str,
    report: Path | None,
    record: Path | None,
    resume: Path | None,
    keep_going: bool,
    lint: bool,
    quiet: bool,
    require_verified_isolation: bool = False,
    **cache: Any,
) -> None:
    """Run every routing case with the whole catalog installed and report which skills
    loaded: accuracy, per-skill precision/recall/F1, micro and macro F1, the confusion matrix
    and the colliding pairs; the exit code is the verdict (skill-evals codes)."""
    from ..pipeline import RouteOptions

    options = RouteOptions(
        cases=cases,
        skills=skills,
        catalog_globs=catalog_globs,
        runner=runner,
        observations=observations,
        trials=trials,
        seed=seed,
        timeout_ms=timeout_ms,
        max_bytes=max_bytes,
        jobs=jobs,
        retries=retries,
        min_accuracy=min_accuracy,
        min_skill_f1=min_skill_f1,
        record=record,
        resume=resume,
        keep_going=keep_going,
        outputs=tuple(p for p in (report, record) if p is not None),
        cache=cache_settings(cache),
        require_verified_isolation=require_verified_isolation,
    )
    if lint:
        _lint(options, fmt)
    _run(options, fmt, report, quiet)


def _lint(options: RouteOptions, fmt: str) -> NoReturn:
    from ..errors import EvalError
    from ..suite.route_lint import lint_catalog, render_lint_json, render_lint_text

    if fmt not in ("text", "json"):
        fail("--lint prints --format text or json")
    try:
        catalog = options.catalog()
        result = lint_catalog(catalog, options.cases)
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    text = render_lint_json(result) if fmt == "json" else render_lint_text(result)
    click.echo(text, nl=False)
    sys.exit(1 if result.findings else 0)


def _run(options: RouteOptions, fmt: str, report_path: Path | None, quiet: bool) -> NoReturn:
    from ..agents.simulated import NOTICE, is_simulated_command
    from ..pipeline import run_route
    from ..report.outputs import close_held
    from ..run.interrupts import sigterm_interrupts
    from ..run.progress import ProgressPrinter

    if is_simulated_command(options.runner):
        # Said on every run, --quiet or not: these figures must never pass for a model's.
        click.echo(f"skill-evals: note: {NOTICE}", err=True)
    printer = None if quiet else ProgressPrinter(sys.stderr)
    held: dict[Path, int] = {}
    try:
        with sigterm_interrupts():
            try:
                report = run_route(options, progress=printer, held=held)
            finally:
                if printer is not None:
                    printer.close()
            inputs = tuple(p for p in (options.cases, options.observations, options.resume) if p)
            _write(report, fmt, inputs, report_path, held)
    finally:
        close_held(held)
    sys.exit(int(report["exitCode"]))


def _write(
    report: dict[str, Any],
    fmt: str,
    inputs: tuple[Path, ...],
    report_path: Path | None,
    held: dict[Path, int],
) -> None:
    from ..codes import INVALID
    from ..messages import by_severity, stderr_warnings
    from ..report.outputs import write_output
    from ..report.route import render_route

    if report_path is not None and _writable(report, report_path, inputs):
        try:
            write_output(report_path, render_route(report, "json"), held)
        except OSError as exc:
            if report["exitCode"] != INVALID:  # already invalid (maybe this very path): say why
                fail(f"{report_path}: cannot write ({exc.strerror})")
    for message in stderr_warnings(report):
        click.echo(f"skill-evals: warning: {terminal_safe(message)}", err=True)
    to_person = fmt == "text" and sys.stdout.isatty()
    if report["exitCode"] in (5, 6, 7) and not to_person:
        for message in by_severity(report, "error")[:1]:
            click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
    click.echo(render_route(report, fmt), nl=False)


def _writable(report: dict[str, Any], path: Path, inputs: tuple[Path, ...]) -> bool:
    """Never write into a catalog skill, nor over an input file (both are exit 5 already)."""
    from ..plan.files import path_inside

    for skill in report.get("catalog") or []:
        if path_inside(path, Path(skill["path"])):
            return False
    return not any(path.resolve() == given.resolve() for given in inputs)
