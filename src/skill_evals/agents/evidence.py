"""Loading evidence: which skills a run really loaded, from its recorded events (SPEC §2).

The shared pieces live here (the Load record, MCP tool/URI matching, SKILL.md path matching);
each agent module provides ``find_loads(events, patterns, known)`` for its own event format.
Only completed loads count; skills that were merely available never count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

Agent = Literal["claude-code", "codex", "pi"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex", "pi")


@dataclass(frozen=True)
class Load:
    """One completed skill load found in a transcript."""

    skill: str
    delivery: Literal["native", "mcp"]
    agent: str
    source: str  # what proved it, e.g. "Skill tool_use", "Read SKILL.md", "mcp tool load_x_skill"
    index: int  # 0-based index of the event (transcript line) that completed the load

    def to_json(self) -> dict[str, Any]:
        """The ``skill-evals evidence`` JSON shape."""
        return asdict(self)


_DEFAULT_TOOL = re.compile(r"^load_(?P<name>[A-Za-z0-9_-]+)_skill$")
_DEFAULT_URI = re.compile(r"^skill://(?P<name>[^/]+)/SKILL\.md$")
_SKILL_MD_PATH = re.compile(r"(?:^|/)skills/(?P<name>[^/]+)/SKILL\.md$")


@dataclass(frozen=True)
class EvidencePatterns:
    """Custom patterns from the config (``evidence.toolPatterns`` / ``evidence.uriPatterns``):
    regular expressions with a named group ``name``, tried after the defaults."""

    tool_patterns: tuple[str, ...] = ()
    uri_patterns: tuple[str, ...] = ()

    def compiled_tools(self) -> list[re.Pattern[str]]:
        return [_DEFAULT_TOOL, *(re.compile(p) for p in self.tool_patterns)]

    def compiled_uris(self) -> list[re.Pattern[str]]:
        return [_DEFAULT_URI, *(re.compile(p) for p in self.uri_patterns)]


def split_mcp_tool_name(name: str) -> tuple[str | None, str]:
    """Claude Code names MCP tools ``mcp__<server>__<tool>``: return (server, tool)."""
    if name.startswith("mcp__"):
        rest = name[len("mcp__") :]
        server, sep, tool = rest.partition("__")
        if sep:
            return server, tool
    return None, name


def skill_from_tool(name: str, patterns: EvidencePatterns | None = None) -> str | None:
    """The skill an MCP tool call loads (``load_<name>_skill``, ``_`` → ``-``), else None."""
    _, tool = split_mcp_tool_name(name)
    for pattern in (patterns or EvidencePatterns()).compiled_tools():
        match = pattern.match(tool)
        if match:
            return match.group("name").replace("_", "-")
    return None


def skill_from_uri(uri: str, patterns: EvidencePatterns | None = None) -> str | None:
    """The skill a resource read loads (``skill://<name>/SKILL.md``), else None."""
    for pattern in (patterns or EvidencePatterns()).compiled_uris():
        match = pattern.match(uri)
        if match:
            return match.group("name")
    return None


def skill_from_path(path: str, known: frozenset[str] | None = None) -> str | None:
    """The skill whose ``…/skills/<name>/SKILL.md`` a path names; restricted to ``known`` names
    when given (so an unrelated SKILL.md elsewhere does not count)."""
    match = _SKILL_MD_PATH.search(path.replace("\\", "/"))
    if not match:
        return None
    name = match.group("name")
    if known is not None and name not in known:
        return None
    return name


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read a JSON-lines transcript; lines that are not JSON objects are kept as empty events so
    that indexes keep matching transcript lines."""
    events: list[dict[str, Any]] = []
    with path.open("rb") as fh:
        for raw in fh:
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            events.append(value if isinstance(value, dict) else {})
    return events


def find_loads(
    agent: Agent,
    events: Sequence[dict[str, Any]],
    patterns: EvidencePatterns | None = None,
    known: frozenset[str] | None = None,
) -> list[Load]:
    """Dispatch to the agent's parser."""
    patterns = patterns or EvidencePatterns()
    if agent == "claude-code":
        from . import claude_code

        return claude_code.find_loads(events, patterns, known)
    if agent == "codex":
        from . import codex

        return codex.find_loads(events, patterns, known)
    from . import pi

    return pi.find_loads(events, patterns, known)


def loaded_names(loads: Iterable[Load]) -> list[str]:
    """Distinct skill names in order of first load."""
    seen: dict[str, None] = {}
    for load in loads:
        seen.setdefault(load.skill, None)
    return list(seen)
