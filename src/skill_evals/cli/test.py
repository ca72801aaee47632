"""`skill-evals test`: the click command only — parse, call, print, exit (docs/first-suite.md).

Heavy modules are imported inside the command so that `skill-evals --help` starts fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..agents import registry as agent_registry
from .cache_options import cache_options, cache_settings
from .common import fail
from .helptext import CONTEXT, epilog
from .options import (
    compose,
    dir_option,
    option,
    report_file_option,
    sandbox_run_options,
)
from .reports import run_and_write, write_reports
from .scope_options import arm_options, scope_options

# Every shipped runner, named in --help: the agents of the registry and the simulation (spaced,
# so the help wraps between names, never inside one).
BUILT_IN_RUNNERS = " | ".join([*agent_registry.names(), "simulated"])


_TEST_EXAMPLE = """
skill-evals test --skill skills/refund-policy \\
  --cases skills/refund-policy/evals/cases.jsonl \\
  --runner 'skill-evals runner claude-code' --min-trigger-f1 0.9 --min-uplift 0.05
"""


_OPTIONS = [
    option(
        "--skill",
        "skill",
        help="The skill directory (it holds SKILL.md).",
    ),
    option(
        "--cases",
        "cases",
        help="The case file: .jsonl, or .yaml/.yml with {cases: [...]} (docs/cases.md).",
    ),
    option(
        "--runner",
        metavar="CMD",
        help="The runner command, run once per case, trial and variant; split like a shell, run "
        f"without one. Built in: 'skill-evals runner {BUILT_IN_RUNNERS}'. No default: "
        "give this or --observations.",
    ),
    option(
        "--observations",
        metavar="FILE",
        help="Score recorded observations (JSONL, docs/runner-contract.md) instead of running "
        "anything. No default: give this or --runner.",
    ),
    option("--trials", help="Runs per case and variant."),
    option(
        "--agent",
        help="The agent whose documented frontmatter fields the skill may use (claude-code: "
        "when_to_use, paths, ...). Default: the agent of a built-in runner, else the Agent "
        "Skills specification alone.",
    ),
    option(
        "--format",
        "fmt",
        help="What stdout gets: a report for people, the JSON report, Markdown, JUnit XML or HTML.",
    ),
    report_file_option("--report", "the JSON report"),
    report_file_option("--junit", "JUnit XML"),
    report_file_option("--markdown", "Markdown"),
    report_file_option("--html", "a self-contained HTML report with per-case detail"),
    click.option(
        "--include-outputs",
        is_flag=True,
        help="Put each run's answer text into the HTML per-case detail (--html or --format html), "
        "to see why a task failed. Off by default; never goes into JSON, JUnit or Markdown.",
    ),
    option(
        "--min-trigger-f1",
        help="Gate: fail (exit 1) when trigger F1 is below X. Default: no gate.",
    ),
    option(
        "--min-uplift",
        help="Gate: fail (exit 1) when the lower bound of the uplift's 95% interval is below X. "
        "Default: no gate.",
    ),
    option("--timeout-ms"),
    option(
        "--retries",
        metavar="N",
        help="Run an invocation again, up to N times, when its runner reports a retryable failure "
        "(rate limit, overload, 5xx), after 2 s, 8 s, 32 s, then 60 s.",
    ),
    option("--max-bytes"),
    option("--jobs", help="Runner processes at the same time."),
    option("--judge"),
    option("--judges", "judges"),
    option("--judge-timeout-ms"),
    option("--max-judge-calls"),
    option("--judge-fallback"),
    option("--judge-fallback-margin"),
    option("--seed", help="Seed of the bootstrap: the same seed gives the same interval."),
    option(
        "--bootstrap-samples",
        help="Bootstrap resamples for the uplift interval.",
    ),
    option("--record"),
    option("--resume", metavar="FILE"),
    option("--keep-going"),
    option(
        "--require-verified-isolation",
        help="Exit 7 when a without run's command named the skill's files and its result could "
        "not be matched to its text (isolation unverified). Default: off (a warning).",
    ),
    click.option(
        "--strict",
        is_flag=True,
        help="Exit 5 before any runner starts when the suite's lint finds a warning "
        "(skill-evals lint). Default: the warnings are printed and the run goes on.",
    ),
    option("--quiet", "-q", help="No progress on stderr (the simulation note stays)."),
    dir_option(
        "--keep-workspaces",
        help_text="Move each invocation's workspace to DIR/<case>/<trial>/<variant>/ instead of "
        "deleting it (debugging; DIR must be new or empty, outside the skill). Default: none.",
    ),
    *sandbox_run_options,
    cache_options,
    scope_options,
]

_REPORT_FILES = ("report", "junit", "markdown", "html")


@click.command(
    "test",
    context_settings=CONTEXT,
    short_help="Evaluate one skill: trigger F1, uplift, loading evidence; exit code = verdict.",
    epilog=epilog(_TEST_EXAMPLE, "docs/first-suite.md", "docs/cases.md", "docs/report.md"),
)
@compose(_OPTIONS)
def test(fmt: str, include_outputs: bool, quiet: bool, **given: Any) -> None:
    """Evaluate one skill: does the agent load it where it should (trigger precision, recall,
    F1), do task results improve with it (paired uplift with a bootstrap interval and a sign
    test), and did each run load what it should (loading evidence). The exit code is the
    verdict (`skill-evals codes`)."""
    from ..pipeline import run_test

    paths: dict[str, Path | None] = {name: given.pop(name) for name in _REPORT_FILES}
    if include_outputs and paths["html"] is None and fmt != "html":
        # Decided before anything runs: answers go only into the HTML report.
        fail("--include-outputs puts answers into the HTML report; add --html FILE")
    options = _test_options(given, paths)
    answers: dict[tuple[str, int, str], str] | None = {} if include_outputs else None

    def write(report: dict[str, Any], held: dict[Path, int]) -> None:
        inputs = options.files().inputs
        _write_outputs(report, fmt, paths, options.skill, inputs, held, answers)

    run_and_write(
        options.runner,
        quiet,
        lambda progress, held: run_test(
            options, progress=progress, held=held, answers=answers, notice=_say
        ),
        write,
    )


def _say(line: str) -> None:
    """A pre-flight lint warning, once on stderr (also with --quiet)."""
    from ..escaping.terminal import terminal_safe

    click.echo(terminal_safe(line), err=True)


def _test_options(given: dict[str, Any], paths: dict[str, Path | None]) -> Any:
    """The TestOptions of the command's remaining keyword arguments (exit 5 for a malformed
    --cache-max-age)."""
    from ..pipeline import TestOptions

    cache = cache_settings(given)
    scope = arm_options(given)
    record = given["record"]
    given["judge_fallback"] = (given.pop("judge_fallback"), given.pop("judge_fallback_margin"))
    outputs = tuple(p for p in (*paths.values(), record) if p is not None)
    return TestOptions(outputs=outputs, cache=cache, scope=scope, **given)


def _write_outputs(
    report: dict[str, Any],
    fmt: str,
    paths: dict[str, Path | None],
    skill_dir: Path,
    inputs: tuple[Path, ...] = (),
    held: dict[Path, int] | None = None,
    answers: dict[tuple[str, int, str], str] | None = None,
) -> None:
    """Write the report in every format a path was given for, then ``fmt`` to stdout. Each
    renderer is imported when its format is written (a JSON-only run loads no HTML code)."""
    # A run stopped before the skill loaded still has the name the user gave: the directory's.
    fallback = skill_dir.name or str(skill_dir)
    name = (report.get("skill") or {}).get("name") or fallback

    def text() -> str:
        from ..report.text import render_text

        return render_text(report, fallback)

    def json() -> str:
        from ..report.json import render_json

        return render_json(report)

    def markdown() -> str:
        from ..report.markdown import render_markdown

        return render_markdown(report, fallback)

    def junit() -> str:
        from ..report.junit import SuiteInput, render_junit
        from ..report.shown_paths import working_paths

        return render_junit([SuiteInput(name, report=report, paths=working_paths(report))])

    def html() -> str:
        from ..report.html import render_test_html
        from ..report.shown_paths import working_paths

        shown = working_paths(report)
        given = (report.get("skill") or {}).get("path") or str(skill_dir)
        path = shown.get("skill.path", given)
        return render_test_html(report, name, path, answers, shown.get("cases.path"))

    renderers: dict[str, Callable[[], str]] = {
        "text": text,
        "json": json,
        "markdown": markdown,
        "junit": junit,
        "html": html,
    }
    kinds = {"report": "json", "junit": "junit", "markdown": "markdown", "html": "html"}
    files = [(path, renderers[kinds[k]]) for k, path in paths.items() if path is not None]
    write_reports(report, files, renderers[fmt], fmt, [skill_dir], inputs, held)
