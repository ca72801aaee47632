"""`skill-evals improve`: the click command only — parse, run, print, exit (docs/improve.md)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .common import FloatRange
from .helptext import CONTEXT, epilog
from .options import (
    OUTPUT_PATH,
    TEXT_OR_JSON,
    option,
    report_file_option,
    show_runner_stderr_option,
)

_EXAMPLE = """
skill-evals improve --skill examples/improve/invoice-audit \\
  --cases examples/improve/invoice-audit-cases.jsonl --runner 'skill-evals runner simulated' \\
  --proposer 'python3 examples/proposers/keywords.py' --diff invoice-audit.diff
"""


@click.command(
    "improve",
    context_settings=CONTEXT,
    short_help="Propose a better description and validate it on held-out cases.",
    epilog=epilog(_EXAMPLE, "docs/improve.md"),
)
@option("--skill", help="The skill directory.")
@option("--cases", help="The case file (docs/cases.md).")
@click.option("--runner", required=True, metavar="CMD", help="The runner command, as for test.")
@click.option(
    "--proposer",
    required=True,
    metavar="CMD",
    help="The proposer command: one JSON request on stdin, one line with a description back "
    "(docs/improve.md). Built in: 'skill-evals propose anthropic|openai --model M'; an offline "
    "example: examples/proposers/keywords.py.",
)
@click.option(
    "--holdout",
    type=FloatRange(0.1, 0.9),
    default=0.4,
    metavar="F",
    help="Share of each label's units held out (never shown to the proposer).",
)
@click.option(
    "--rounds", type=click.IntRange(1, 20), default=3, metavar="K", help="Proposer rounds at most."
)
@click.option(
    "--min-gain",
    type=FloatRange(0, 1),
    default=0.05,
    metavar="X",
    help="Accept only a held-out F1 gain of at least X (and a lower bound above 0).",
)
@option("--body-chars", help="Characters of the skill's body the proposer sees.")
@option("--proposer-timeout-ms", help="Kill a proposer call after N milliseconds.")
@option(
    "--agent",
    help="The agent whose listing entry cap a candidate must keep (claude-code: 1536). "
    "Default: none, no cap.",
)
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Rewrite SKILL.md with an accepted description (nothing else changes).",
)
@click.option(
    "--diff",
    type=OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="Write the accepted description's diff to FILE. Default: none.",
)
@report_file_option("--report", "the JSON report")
@option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    help="What stdout gets: the verdict and diff, or the JSON report.",
)
@option("--trials", help="Runs per case.")
@option("--seed", help="Seed of the split and the held-out test's relabellings.")
@option(
    "--bootstrap-samples",
    help="Relabellings drawn by the held-out permutation test.",
)
@option("--jobs", help="Runner processes at the same time.")
@option(
    "--timeout-ms",
    help="Per invocation: kill the runner after this many milliseconds. Default: test's for "
    "the runner (300000 for a built-in agent, else 30000).",
)
@option(
    "--retries",
    metavar="N",
    help="Re-runs of a runner or proposer call that reports a retryable failure.",
)
@option(
    "--max-invocations",
    help="Budget: runner processes at most, the held-out step reserved. Default: no limit.",
)
@option(
    "--max-cost-usd",
    help="Budget: reported dollars (runners and proposer) at most. Default: no limit.",
)
@option(
    "--sandbox",
    help="Run the runner and the proposer in a bubblewrap sandbox: auto (when usable, else a "
    "warning), required (exit 7 when unusable), off. Default: SKILL_EVALS_SANDBOX, else auto "
    "(docs/sandbox.md).",
)
@option("--sandbox-path", "sandbox_path")
@click.option(
    "--finalists",
    type=click.IntRange(1, 10),
    default=2,
    show_default=True,
    metavar="K",
    help="The best ranked candidates run on held-out; the decision corrects for K (Holm).",
)
@click.option(
    "--max-heldout-trials",
    type=click.IntRange(1, 100),
    default=9,
    show_default=True,
    metavar="N",
    help="While a finalist's held-out interval straddles 0, run more trials (the finalists and "
    "the original only) up to N, in at most three looks that share the 5 % level; an accepted "
    "finalist and the original run the rest up to N (as --max-invocations allows) so that the "
    "reported gain is steadier, and it must pass again over all of them.",
)
@show_runner_stderr_option
def improve(fmt: str, apply_: bool, **given: Any) -> None:  # fmt: skip
    """Try better descriptions for one skill: a proposer suggests them from the failures of one
    half of the train cases, each valid one is ranked on the other half, and the best ones run
    on held-out cases next to the original. Accepted (exit 0) only with a held-out F1 gain of
    at least --min-gain whose lower bound (an exact permutation test, corrected for the
    finalists and the held-out looks) is above 0; else exit 1 and nothing changes."""
    from ..escaping.terminal import terminal_safe
    from ..improve.report import render_text
    from ..improve.run import ImproveOptions, run_improve
    from ..plan.run_settings import default_timeout_ms

    timeout = given.pop("timeout_ms")
    if timeout is None:  # test's default for the same runner: a real agent needs minutes
        timeout = default_timeout_ms(given.get("runner"))
    options = ImproveOptions(apply=apply_, timeout_ms=timeout, notice=_say, **given)
    report = run_improve(options)
    if options.report is not None:
        try:
            options.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            click.echo(
                f"skill-evals: error: {options.report}: cannot write ({exc.strerror})", err=True
            )
    if report["exitCode"] not in (0, 1):
        click.echo(f"skill-evals: error: {terminal_safe(report['decision']['reason'])}", err=True)
    click.echo(
        json.dumps(report, indent=2) if fmt == "json" else render_text(report), nl=fmt == "json"
    )
    sys.exit(int(report["exitCode"]))


def _say(line: str) -> None:
    """The pre-flight power line, on stderr."""
    click.echo(line, err=True)
