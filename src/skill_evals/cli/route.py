"""`skill-evals route`: the click command only — parse, call, print, exit (docs/routing.md)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .cache_options import cache_options, cache_settings

# The same option helpers as `ci` (one definition of the NaN-safe range and the error line).
from .common import FloatRange, fail
from .helptext import CONTEXT, epilog
from .options import compose, option, report_file_option, sandbox_run_options
from .reports import run_and_write, write_reports

if TYPE_CHECKING:
    from ..pipeline import RouteOptions


_EXAMPLE = """\
skill-evals route --catalog 'examples/skills/*' --cases examples/evals/routing.jsonl \\
  --runner 'skill-evals runner simulated' --trials 1 --min-accuracy 0.7"""


_OPTIONS = [
    click.option(
        "--skill",
        "skills",
        multiple=True,
        type=click.Path(path_type=Path),
        help="A catalog skill directory (repeatable; catalog order is the order given).",
    ),
    click.option(
        "--catalog",
        "catalog_globs",
        multiple=True,
        help="Glob of catalog skill directories relative to the working directory, e.g. "
        "'skills/*' (repeatable; catalog order is by path).",
    ),
    option(
        "--cases",
        help="The routing case file: .jsonl, or .yaml/.yml with {cases: [...]}; each case has "
        "id, prompt, expect (skill names, [] for none) and optional tags.",
    ),
    option(
        "--runner",
        help="The runner command, run once per case and trial with the whole catalog in "
        "SKILL_EVALS_SKILL_DIRS; split like a shell, run without one. Default: none (give it or "
        "--observations).",
    ),
    option(
        "--observations",
        help="Score recorded routing observations (JSONL, variant with) instead of running a "
        "runner. Default: none.",
    ),
    option("--trials", help="Runs per case."),
    option("--jobs", help="Runner processes at once."),
    option(
        "--seed",
        help="Recorded in the report and the CI fingerprint (routing draws no random numbers).",
    ),
    option("--timeout-ms"),
    option("--max-bytes"),
    option("--retries", help="Reruns of an invocation whose runner reports a retryable error."),
    click.option(
        "--min-accuracy",
        type=FloatRange(0, 1),
        default=None,
        help="Gate: fail (exit 1) when accuracy is below X. Default: no gate.",
    ),
    click.option(
        "--min-skill-f1",
        type=FloatRange(0, 1),
        default=None,
        help="Gate: fail (exit 1) when the F1 of any skill that some case expects is below X. "
        "Default: no gate.",
    ),
    option(
        "--format",
        "fmt",
        help="What stdout gets: a report for people, the JSON report, Markdown, JUnit XML or a "
        "self-contained HTML page with the confusion matrix as a heat map.",
    ),
    report_file_option("--report", "the JSON report"),
    option("--record"),
    option("--resume"),
    option("--keep-going"),
    click.option(
        "--lint",
        is_flag=True,
        help="Run nothing: list overlapping descriptions and skills no case expects (exit 1 when "
        "it finds any).",
    ),
    option(
        "--require-verified-isolation",
        help="Accepted for the same command line as test and ci: a routing run has no without "
        "arm, so there is no isolation to verify (the report says so). Default: off.",
    ),
    option("--quiet", "-q", help="No progress on stderr."),
    *sandbox_run_options,
    cache_options,
]


@click.command(
    "route",
    context_settings=CONTEXT,
    short_help="Which skill the agent picks with the whole catalog installed; confusion matrix.",
    epilog=epilog(_EXAMPLE, "docs/routing.md", "docs/runner-contract.md"),
)
@compose(_OPTIONS)
def route(fmt: str, report: Path | None, lint: bool, quiet: bool, **given: Any) -> None:
    """Run every routing case with the whole catalog installed and report which skills
    loaded: accuracy, per-skill precision/recall/F1, micro and macro F1, the confusion matrix
    and the colliding pairs; the exit code is the verdict (skill-evals codes)."""
    from ..pipeline import RouteOptions, run_route

    cache = cache_settings(given)
    outputs = tuple(p for p in (report, given["record"]) if p is not None)
    options = RouteOptions(outputs=outputs, cache=cache, **given)
    if lint:
        _lint(options, fmt)

    def write(result: dict[str, Any], held: dict[Path, int]) -> None:
        from ..report.route import render_route

        files = [] if report is None else [(report, lambda: render_route(result, "json"))]
        offered = [Path(skill["path"]) for skill in result.get("catalog") or []]
        stdout = functools.partial(render_route, result, fmt)
        write_reports(result, files, stdout, fmt, offered, options.files().inputs, held)

    run_and_write(
        options.runner, quiet, lambda progress, held: run_route(options, progress, held), write
    )


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
