"""`skill-evals lint`: the click command only — check a suite before money is spent
(docs/lint.md). No runner starts."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..escaping.terminal import terminal_safe
from .helptext import CONTEXT, epilog
from .options import TEXT_OR_JSON, option

_EXAMPLE = """
skill-evals lint --skill skills/refund-policy --cases skills/refund-policy/evals/cases.jsonl
skill-evals lint --skill skills/refund-policy --cases cases.jsonl --min-uplift 0.1 \\
  --observations run.jsonl --trials 3 --strict
"""


@click.command(
    "lint",
    context_settings=CONTEXT,
    short_help="Check a suite for cases and checks that cannot tell good from bad (no runner).",
    epilog=epilog(_EXAMPLE, "docs/lint.md"),
)
@option("--skill", help="The skill directory (it holds SKILL.md).")
@option("--cases", help="The case file (docs/cases.md).")
@option(
    "--observations",
    metavar="FILE",
    help="Recorded observations of this suite (test --record): adds the rules that read runs. "
    "Default: none.",
)
@option("--trials", help="Runs per case and variant in --observations.")
@option(
    "--min-uplift",
    help="The uplift gate you mean to use: checks the suite can support it. Default: none.",
)
@option("--timeout-ms", help="The runner timeout you mean to use (max_duration_ms checks). "
        "Default: 30000.")  # fmt: skip
@option("--seed", help="Seed of the bootstrap for uplift-gate-impossible.")
@option(
    "--bootstrap-samples",
    help="Bootstrap resamples for uplift-gate-impossible.",
)
@option("--strict", help="Exit 5 when any warning is found.")
@option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    help="What stdout gets: one line per problem, or the JSON result.",
)
def lint(fmt: str, strict: bool, **given: Any) -> None:
    """Check the cases of one skill for problems that make a run waste money or prove nothing:
    too few positives or negatives, duplicate and conflicting prompts, prompts that name the
    skill, checks that pass whatever the agent does, an uplift gate the suite is too small for;
    with --observations, task cases that never discriminate and a gate no skill could pass.
    Exit 0, or 5 with --strict and a warning."""
    from ..codes import INVALID
    from ..plan.lint import lint_suite
    from ..plan.lint_records import record_problems
    from ..suite.cases import load_cases
    from ..suite.skill import load_skill

    skill = load_skill(given["skill"])
    suite = load_cases(given["cases"], skill.name)
    timeout_ms = given["timeout_ms"] if given["timeout_ms"] is not None else 30_000
    result = lint_suite(suite, skill.name, min_uplift=given["min_uplift"], timeout_ms=timeout_ms)
    problems = list(result.problems)
    if given["observations"] is not None:
        problems += record_problems(
            suite,
            skill.name,
            given["observations"],
            given["trials"],
            min_uplift=given["min_uplift"],
            seed=given["seed"],
            bootstrap_samples=given["bootstrap_samples"],
        )
    if fmt == "json":
        document = {
            "schemaVersion": 1,
            "problems": [p.to_json() for p in problems],
            "mde": result.mde.to_json() if result.mde is not None else None,
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        for problem in problems:
            click.echo(terminal_safe(problem.text(str(suite.path))))
        if not problems:
            click.echo(terminal_safe(f"{suite.path}: no lint problems"))
    warnings = sum(1 for p in problems if p.severity == "warning")
    sys.exit(INVALID if strict and warnings else 0)
