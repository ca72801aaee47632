"""The agent's skill listing over the gate's skills, checked before any runner (docs/ci.md,
docs/skill-listing.md): its lines on stderr, ``listing`` in report.json, a section in the
summary, and exit 5 with ``strict: true`` when a description would be cut or dropped."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..agents.registry import builtin_agent
from ..errors import InvalidInput
from ..report.md_text import code_span
from ..suite.listing import DEFAULT_ENTRY_CHARS, DEFAULT_FRACTION, ListingSettings, listing
from ..suite.skill_rules import listed_skill
from .console import Console
from .fingerprint import SkillState
from .settings import CiConfig


def _settings(config: CiConfig) -> ListingSettings:
    given = config.listing
    return ListingSettings(
        context_tokens=given.get("context-tokens"),
        fraction=given.get("listing-fraction", DEFAULT_FRACTION),
        budget=given.get("listing-budget"),
        max_entry_chars=given.get("max-entry-chars", DEFAULT_ENTRY_CHARS),
    )


def check_listing(
    config: CiConfig, root: Path, states: Sequence[SkillState], console: Console
) -> dict[str, Any] | None:
    """The listing of the agent (``agent:``, else a built-in runner's) over every skill of the
    gate, also those not evaluated; None without an agent. InvalidInput (exit 5) with ``strict``
    when a description would be cut or dropped."""
    settings = config.routing_settings()  # the top level with the CLI's flags
    agent = settings.agent or builtin_agent(settings.runner)
    if agent is None:
        return None
    skills = []
    for state in states:
        found = listed_skill(root / state.path)
        if found is not None:
            skills.append(dataclasses.replace(found, md=Path(state.path) / "SKILL.md"))
    result = listing(agent, skills, _settings(config))
    for line in result.lines:
        console.line(line.text)
    if settings.strict and result.overflows:
        raise InvalidInput(
            f"{agent} listing: {result.chars} of {result.budget} {result.unit} for "
            f"{result.skills} skills: descriptions would be cut or dropped, and strict is on; "
            "shorten them or raise the budget (listing: in the config)"
        )
    return result.to_json()


def listing_markdown(block: dict[str, Any] | None) -> list[str]:
    """``### Skill listing`` of the summary: the figures and the skills that lose text (each
    name a code span: inert, and never shown with escapes)."""
    if not block or block.get("budget") is None:
        return []
    agent, unit = block["agent"], block.get("unit", "characters")
    lines = [
        "### Skill listing",
        "",
        f"{agent}: {block['chars']} of {block['budget']} {unit} for {block['skills']} skills.",
    ]
    if block["cut"]:
        lines.append("Cut at the entry cap: " + ", ".join(code_span(n) for n in block["cut"]))
    if block["dropped"]:
        names = ", ".join(code_span(n) for n in block["dropped"])
        lines.append(f"Description dropped (name only): {names}")
    if block["chars"] > block["budget"] and not block["dropped"]:
        lines.append(f"{agent} shortens the descriptions to fit.")
    return [*lines, ""]
