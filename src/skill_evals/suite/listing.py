"""The agent's skill listing: does every description of a catalog reach the model?

Agents list the installed skills' descriptions in the model's context under a budget; past it,
descriptions are cut or dropped without an error. This module models the documented budgets:

- Claude Code: each entry (``description``, plus a newline and ``when_to_use``) is cut at 1,536
  characters; the listing may take 1 % of the context window at 4 characters per token (8,000
  characters at 200,000 tokens). An entry costs ``- <name>: <text>`` plus a newline, a dropped
  one ``- <name>`` plus a newline, a skill with ``disable-model-invocation: true`` nothing. While
  over budget, the last still-described entry in name order loses its description (Claude Code
  drops the least-invoked first, which depends on use: the output says so).
- Codex: entries ``- <name>: <description> (file: <path>)``; 2 % of the window in tokens (a
  token per 4 bytes) when the window is given, else 8,000 characters; past it Codex shortens
  descriptions (one warning).
- Other agents document no limit: nothing is checked (one info line).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CLAUDE_CODE = "claude-code"
CODEX = "codex"
DEFAULT_CONTEXT_TOKENS = 200_000
DEFAULT_FRACTION = 0.01
DEFAULT_ENTRY_CHARS = 1536
CODEX_FRACTION = 0.02
CODEX_DEFAULT_CHARS = 8000
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class ListingSettings:
    """The budget's parameters (``context_tokens`` None: the agent's default window)."""

    context_tokens: int | None = None
    fraction: float = DEFAULT_FRACTION
    budget: int | None = None  # characters; wins over the window
    max_entry_chars: int = DEFAULT_ENTRY_CHARS


@dataclass(frozen=True)
class ListedSkill:
    """One skill of the catalog as the listing sees it."""

    name: str
    md: Path  # its SKILL.md, for the lines that name it
    frontmatter: Mapping[str, object]


@dataclass(frozen=True)
class Line:
    """One printed finding: ``severity`` is ``warning`` or ``info``."""

    text: str
    severity: str = "warning"


@dataclass(frozen=True)
class Listing:
    """The outcome for one agent: the budget, the demand, and which entries lose text."""

    agent: str
    budget: int | None
    chars: int
    skills: int
    unit: str = "characters"
    cut: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    lines: tuple[Line, ...] = field(default=())

    @property
    def overflows(self) -> bool:
        """Whether any description is cut, dropped or shortened."""
        return any(line.severity == "warning" for line in self.lines)

    def to_json(self) -> dict[str, object]:
        """The report's ``listing`` block."""
        return {
            "agent": self.agent,
            "budget": self.budget,
            "unit": self.unit,
            "chars": self.chars,
            "skills": self.skills,
            "cut": list(self.cut),
            "dropped": list(self.dropped),
        }


def _text(front: Mapping[str, object], key: str) -> str:
    value = front.get(key)
    return value if isinstance(value, str) else ""


def _ordered(skills: Sequence[ListedSkill]) -> list[ListedSkill]:
    return sorted(skills, key=lambda s: s.name.encode("utf-8", "surrogatepass"))


def claude_code_listing(skills: Sequence[ListedSkill], settings: ListingSettings) -> Listing:
    """Claude Code's listing of ``skills`` under ``settings``."""
    tokens = settings.context_tokens or DEFAULT_CONTEXT_TOKENS
    budget = settings.budget or math.floor(tokens * CHARS_PER_TOKEN * settings.fraction)
    cap = settings.max_entry_chars
    lines: list[Line] = []
    listed = [
        s for s in _ordered(skills) if _text(s.frontmatter, "disable-model-invocation") != "true"
    ]
    costs: dict[str, tuple[int, int]] = {}  # name → (described cost, name-only cost)
    cut: list[str] = []
    for skill in listed:
        text = _text(skill.frontmatter, "description")
        when = _text(skill.frontmatter, "when_to_use")
        entry = text + ("\n" + when if when else "")
        if len(entry) > cap:
            cut.append(skill.name)
            lines.append(
                Line(f"{skill.md}: warning: claude-code listing: the entry is {len(entry)} "
                     f"characters, cut at {cap}")
            )  # fmt: skip
        shown = entry[:cap]
        costs[skill.name] = (len(f"- {skill.name}: {shown}\n"), len(f"- {skill.name}\n"))
    demand = sum(described for described, _ in costs.values())
    total = demand
    dropped: list[ListedSkill] = []
    for skill in reversed(listed):
        if total <= budget:
            break
        described, bare = costs[skill.name]
        total -= described - bare
        dropped.append(skill)
    count = len(skills)
    for skill in reversed(dropped):
        lines.append(
            Line(f"{skill.md}: warning: claude-code listing: {demand} of {budget} characters for "
                 f"{count} skills: this description is dropped (name only)")
        )  # fmt: skip
    lines.append(
        Line(f"claude-code listing: {demand} of {budget} characters, {count} skills, "
             f"{len(cut)} cut, {len(dropped)} dropped", "info")
    )  # fmt: skip
    if dropped:
        lines.append(
            Line("claude-code listing: Claude Code drops the descriptions of the least-invoked "
                 "skills first, so which ones it drops depends on use; this check drops the last "
                 "in name order", "info")
        )  # fmt: skip
    return Listing(
        CLAUDE_CODE,
        budget,
        demand,
        count,
        cut=tuple(cut),
        dropped=tuple(s.name for s in reversed(dropped)),
        lines=tuple(lines),
    )


def _tokens(entry: str) -> int:
    return math.ceil(len(entry.encode("utf-8", "surrogatepass")) / CHARS_PER_TOKEN)


def codex_listing(skills: Sequence[ListedSkill], settings: ListingSettings) -> Listing:
    """Codex's listing of ``skills``: in tokens when the window is given, else in characters."""
    entries = [
        f"- {s.name}: {_text(s.frontmatter, 'description')} (file: {s.md})\n"
        for s in _ordered(skills)
    ]
    if settings.budget is not None:
        unit, budget, demand = "characters", settings.budget, sum(len(e) for e in entries)
    elif settings.context_tokens is not None:
        unit = "tokens"
        budget = math.floor(settings.context_tokens * CODEX_FRACTION)
        demand = sum(
            math.ceil(len(e.encode("utf-8", "surrogatepass")) / CHARS_PER_TOKEN) for e in entries
        )
    else:
        unit, budget, demand = "characters", CODEX_DEFAULT_CHARS, sum(len(e) for e in entries)
    lines: tuple[Line, ...] = ()
    if demand > budget:
        lines = (Line(f"codex listing: {demand} of {budget} {unit}: Codex shortens descriptions"),)
    return Listing(CODEX, budget, demand, len(skills), unit=unit, lines=lines)


def listing(agent: str, skills: Sequence[ListedSkill], settings: ListingSettings) -> Listing:
    """The listing check of ``agent``; agents without a documented budget get one info line."""
    if agent == CLAUDE_CODE:
        return claude_code_listing(skills, settings)
    if agent == CODEX:
        return codex_listing(skills, settings)
    info = Line(f"{agent} listing: {agent} documents no listing limit; not checked", "info")
    return Listing(agent, None, 0, len(skills), lines=(info,))
