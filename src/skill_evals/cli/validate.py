"""`skill-evals validate`: the click command only — check skills, print, exit (docs/inputs.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..escaping.terminal import terminal_safe
from .common import FloatRange
from .helptext import CONTEXT, epilog
from .options import option

_EXAMPLE = (
    "skill-evals validate skills/*\nskill-evals validate --agent claude-code --strict skills/*"
)


@click.command(
    context_settings=CONTEXT,
    short_help="Check skills against the Agent Skills format (exit 1 on any error).",
    epilog=epilog(_EXAMPLE, "docs/inputs.md#skills", "docs/skill-listing.md"),
)
@option(
    "--agent",
    help="Also accept this agent's documented frontmatter fields (claude-code: when_to_use, "
    "paths, ...; each with an info line) and check its skill listing budget over DIRS. "
    "Default: the Agent Skills specification alone, no listing check.",
)
@click.option(
    "--context-tokens",
    type=click.IntRange(1, 100_000_000),
    default=None,
    metavar="N",
    help="The model's context window in tokens, for the listing budget. Default: 200000 "
    "(Claude Code); Codex: 8000 characters unless this is given.",
)
@click.option(
    "--listing-fraction",
    type=FloatRange(0, 1, min_open=True),
    default=0.01,
    metavar="X",
    help="Claude Code's share of the window for the listing (skillListingBudgetFraction).",
)
@click.option(
    "--listing-budget",
    type=click.IntRange(1, 100_000_000),
    default=None,
    metavar="CHARS",
    help="The listing budget in characters (SLASH_COMMAND_TOOL_CHAR_BUDGET); wins over the "
    "window. Default: none.",
)
@click.option(
    "--max-entry-chars",
    type=click.IntRange(1, 1_000_000),
    default=1536,
    metavar="N",
    help="Claude Code's cap on one entry, description plus when_to_use (skillListingMaxDescChars).",
)
@option("--strict", help="Exit 1 on warnings too (listing overflows included).")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(
    dirs: tuple[Path, ...],
    agent: str | None,
    context_tokens: int | None,
    listing_fraction: float,
    listing_budget: int | None,
    max_entry_chars: int,
    strict: bool,
) -> None:
    """Check each skill directory DIRS against the Agent Skills format: print every problem as
    PATH: message; exit 1 if any is an error (with --strict, also a warning), 0 otherwise."""
    from ..suite.listing import ListingSettings, listing
    from ..suite.skill_rules import check_skill, listed_skill

    problems = [p for d in dirs for p in check_skill(d, agent)]
    lines: list[tuple[str, str]] = [(p.text, p.severity) for p in problems]
    if agent is not None:
        settings = ListingSettings(
            context_tokens, listing_fraction, listing_budget, max_entry_chars
        )
        skills = [s for s in (listed_skill(d) for d in dirs) if s is not None]
        lines += [(line.text, line.severity) for line in listing(agent, skills, settings).lines]
    for text, _ in lines:
        click.echo(terminal_safe(text))  # one problem per line, whatever the path holds
    errors = sum(1 for _, severity in lines if severity == "error")
    warnings = sum(1 for _, severity in lines if severity == "warning")
    if errors:
        sys.exit(1)
    if strict and warnings:
        click.echo(f"{warnings} warning(s); --strict makes them fail")
        sys.exit(1)
    click.echo(f"{len(dirs)} skill(s) valid")
    sys.exit(0)
