"""`skill-evals judge-check`: calibrate a judge against human labels before gating on it —
the click command only (docs/judging.md#calibrate-before-gating)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .common import FloatRange
from .helptext import CONTEXT, epilog
from .options import TEXT_OR_JSON, option, report_file_option

_EXAMPLE = """
skill-evals judge-check --cases examples/judging/labels.jsonl \\
  --judge 'python3 examples/judging/judge.py' --min-agreement 0.8
"""


@click.command(
    "judge-check",
    context_settings=CONTEXT,
    short_help="Calibrate a judge: its agreement and kappa with human-labelled examples.",
    epilog=epilog(_EXAMPLE, "docs/judging.md"),
)
@click.option(
    "--cases",
    "cases",
    required=True,
    type=click.Path(path_type=Path),
    help="Labelled examples, one JSON object per line, all absolute or all pairwise.",
)
@option(
    "--judge",
    required=True,
    help="The judge to check, split like a shell, run without one; or the NAME of one of "
    "--judges (to calibrate the judge your cases name).",
)
@option("--judges", "judges")
@click.option(
    "--min-agreement",
    type=FloatRange(0, 1),
    default=None,
    metavar="X",
    help="Gate: exit 1 when the judge agrees with the labels on less than X of the examples. "
    "Default: no gate.",
)
@option("--format", "fmt", type=TEXT_OR_JSON, show_default=True, help="What stdout gets.")
@report_file_option("--report", "the JSON report")
@option("--jobs", help="Judge processes at the same time.")
@option("--judge-timeout-ms")
@option("--retries", metavar="N", help="Ask again, up to N times, after a retryable judge error.")
@option("--max-bytes", help="Per request: kill the judge after this many bytes of output.")
@option(
    "--cache",
    help="Reuse verdicts stored in DIR by request key, and store new ones there. Default: none.",
)
@option(
    "--sandbox",
    help="Run the judge in a bubblewrap sandbox: auto (when usable, else a warning), required "
    "(exit 7 when unusable), off. Default: SKILL_EVALS_SANDBOX, else auto (docs/sandbox.md).",
)
@option("--sandbox-path", "sandbox_path")
def judge_check(fmt: str, report: Path | None, **given: Any) -> None:
    """Ask the judge about every labelled example (pairwise ones both ways round) and say how
    often it agrees with the labels: agreement, Cohen's kappa, the confusion of labels and
    verdicts, the disagreements; swap consistency for pairwise examples. Exit 5 for bad labels
    or mixed kinds, 6 for fewer than ten examples, 7 when the judge failed, 1 below
    --min-agreement."""
    import json
    import sys

    from ..report.judge_check_report import render_text
    from ..report.outputs import write_output
    from .judge_check_run import run_judge_check

    result = run_judge_check(**given)
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if report is not None:
        try:
            write_output(report, text)
        except OSError as exc:
            click.echo(f"skill-evals: error: --report {report}: {exc.strerror}", err=True)
            sys.exit(5)
    click.echo(text if fmt == "json" else render_text(result), nl=False)
    sys.exit(result["exitCode"])
