"""`skill-evals cases draft`: the click commands only — parse, draft, print, exit
(docs/drafting.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .common import FloatRange
from .helptext import CONTEXT, epilog
from .options import OUTPUT_PATH, TEXT_OR_JSON, option

_EXAMPLE = """
skill-evals cases draft --skill examples/skills/refund-policy \\
  --drafter 'python3 examples/drafters/template.py' --catalog 'examples/skills/*' \\
  --out drafted-cases.jsonl
skill-evals cases draft --skill skills/xlsx --catalog 'skills/*' --min-uplift 0.2 \\
  --drafter 'skill-evals draft anthropic --model claude-sonnet-4-5'
"""


@click.group(
    "cases",
    context_settings=CONTEXT,
    short_help="Work on case files: draft a first suite for a skill.",
    epilog=epilog("skill-evals cases draft --help", "docs/drafting.md", "docs/cases.md"),
)
def cases() -> None:
    """Commands that write case files (docs/cases.md)."""


@cases.command(
    "draft",
    context_settings=CONTEXT,
    short_help="Draft a labelled suite for a skill with a drafter program (a model or offline).",
    epilog=epilog(_EXAMPLE, "docs/drafting.md"),
)
@option("--skill", help="The skill directory (it holds SKILL.md).")
@click.option(
    "--drafter",
    required=True,
    metavar="CMD",
    help="The drafter command: one JSON request on stdin, one JSON object of cases back "
    "(docs/drafting.md). Built in: 'skill-evals draft anthropic|openai --model M'; offline: "
    "'python3 examples/drafters/template.py'.",
)
@click.option(
    "--catalog",
    multiple=True,
    metavar="GLOB",
    help="The other skills the agent may have installed (directories holding SKILL.md, "
    "relative to the working directory): their names and descriptions are shown to the "
    "drafter for near-misses. Repeatable. Default: none.",
)
@click.option(
    "--out",
    type=OUTPUT_PATH,
    default=None,
    metavar="FILE",
    help="The .jsonl file to write; an existing one is never overwritten (exit 5). "
    "Default: DIR/evals/cases.jsonl.",
)
@click.option("--append", is_flag=True, help="Add new cases (new ids) to an existing --out.")
@click.option(
    "--count",
    type=click.IntRange(10, 1000),
    default=20,
    metavar="N",
    help="Cases in all, the default buckets (explicit 4, implicit 4, contextual 2, near-miss 6, "
    "unrelated 4) scaled to N.",
)
@click.option(
    "--min-uplift",
    type=FloatRange(0, 1),
    default=None,
    metavar="X",
    help="The uplift gate the suite must support: tasks are drafted, and enough should-trigger "
    "cases that lint raises neither few-task-cases nor uplift-mde. Default: the skill's "
    "min-uplift gate in ./.skill-evals.yml, else none.",
)
@click.option(
    "--with-tasks",
    is_flag=True,
    help="Ask for a task check on the should-trigger cases (implied by --min-uplift).",
)
@option("--body-chars", help="Characters of the skill's body the drafter sees.")
@option("--drafter-timeout-ms", help="Kill a drafter call after N milliseconds.")
@option("--seed", help="Given to the drafter as SKILL_EVALS_SEED.")
@option(
    "--retries", metavar="N", help="Re-runs of a drafter call that reports a retryable failure."
)
@option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    help="What stdout gets: a summary and lint's warnings, or the JSON result.",
)
@option(
    "--sandbox",
    help="Run the drafter in a bubblewrap sandbox: auto (when usable, else a warning), required "
    "(exit 7 when unusable), off. Default: SKILL_EVALS_SANDBOX, else auto (docs/sandbox.md).",
)
@option("--sandbox-path", "sandbox_path")
def draft(fmt: str, catalog: tuple[str, ...], sandbox_path: tuple[str, ...], **given: Any) -> None:
    """Draft a first suite for one skill: a drafter writes should-trigger prompts (explicit,
    implicit, contextual) and should-not ones (near-misses of its neighbours, unrelated);
    each is checked (duplicates, empty or over-long prompts, prompts naming the skill, invalid
    checks are dropped), written with "source": "drafted" and linted. Exit 0 written; 5 bad
    options or --out exists; 6 fewer than 10 independent cases or 5 of a label; 7 the drafter
    failed."""
    from ..draft.run import DraftOptions, failed, run_draft
    from ..errors import EvalError
    from ..escaping.terminal import terminal_safe

    try:
        if given["min_uplift"] is None:
            given["min_uplift"], given["min_uplift_from"] = _config_gate(given["skill"])
        result = run_draft(
            DraftOptions(catalog=tuple(catalog), sandbox_path=tuple(sandbox_path), **given)
        )
    except EvalError as exc:  # a config that cannot be read: the same result, every format
        result = failed(exc)
    if result["reason"] is not None:
        click.echo(f"skill-evals: error: {terminal_safe(result['reason'])}", err=True)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        for line in render_text(result):
            click.echo(terminal_safe(line))
    sys.exit(int(result["exitCode"]))


def _config_gate(skill: Path) -> tuple[float | None, str]:
    """The skill's ``min-uplift`` gate in the working directory's .skill-evals.yml, if any,
    and how messages name it."""
    from ..ci.config import find_config, load_config
    from ..suite.skill import load_skill

    found = find_config(Path.cwd())
    if found is None:
        return None, "--min-uplift {}"
    gate = load_config(found).for_skill(load_skill(skill).name).gates.min_uplift
    if gate is None or gate <= 0:
        return None, "--min-uplift {}"
    click.echo(f"skill-evals: note: sizing for min-uplift {gate:g} from {found.name}", err=True)
    return gate, "gates.min-uplift {} in " + found.name


def render_text(result: dict[str, Any]) -> list[str]:
    """The summary: what was written, what was dropped and why, then lint's warnings."""
    lines = []
    written = result.get("written") or {}
    if result["exitCode"] == 0:
        parts = ", ".join(f"{b} {n}" for b, n in written.items())
        lines.append(
            f"drafted {sum(written.values())} case(s) for {result['skill']} into "
            f"{result['out']} ({parts}); drafter calls: {result['drafter']['calls']}"
        )
    dropped = result.get("dropped") or {}
    if dropped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(dropped.items()))
        lines.append(f"dropped {sum(dropped.values())}: {reasons}")
    lint = result.get("lint")
    if lint is not None:
        shown = Path(str(result["out"]))
        for problem in lint["problems"]:
            where = f"{shown}:{problem['lines'][0]}" if problem["lines"] else str(shown)
            if problem["severity"] == "warning":
                lines.append(f"{where}: warning: {problem['rule']}: {problem['message']}")
        warnings = sum(1 for p in lint["problems"] if p["severity"] == "warning")
        lines.append(f"lint: {warnings} warning(s)" + ("" if warnings else ", ready to run"))
    return lines
