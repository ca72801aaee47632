"""Loading-evidence primitives shared by every agent: the Load record, MCP tool/URI matching,
SKILL.md path matching and transcript reading. This module sits below the agent modules and
imports none of them; each agent module parses its own event format with these pieces, and
``agents/registry.py`` dispatches ``skill-evals evidence --agent`` to the right one.

Matching rules (exact, case-sensitive):

- MCP tool: Claude's ``mcp__<server>__<tool>`` is split first; the tool name must be *entirely*
  ``load_<name>_skill`` (or match a custom ``evidence.toolPatterns`` regex entirely); ``_`` in the
  captured name becomes ``-`` (skill names never contain ``_``; tool names cannot always carry
  ``-``).
- MCP resource: the URI must be entirely ``skill://[<prefix>/]<name>/SKILL.md`` (or match a custom
  ``evidence.uriPatterns`` regex entirely); the captured name is used as is.
- SKILL.md path: ``…/skills/<name>/SKILL.md``; with ``known`` given, only those names count.

Custom patterns are regular expressions with a named group ``name``; they are tried after the
built-in pattern and the first match wins. An invalid one is refused when ``EvidencePatterns`` is
built (``InvalidPattern``, exit 5); the config loader reports it with the file and JSON path first.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..run.regex import RegexPool

# One transcript line, decoded (a line that is not a JSON object is an empty mapping).
Event = Mapping[str, Any]
State = Literal["offered", "attempted", "loaded", "failed", "unverified"]
Delivery = Literal["native", "mcp", "read", "explicit"]


@dataclass(frozen=True)
class Load:
    """One piece of loading evidence found in a transcript; by default a completed load.

    ``state``: ``loaded`` (the skill's instructions reached the model), ``unverified`` (a call
    naming the skill's ``SKILL.md`` or folder completed, and what it showed could not be matched
    to the skill's text: encoded, reversed, archived, partly shown, or no text to match against),
    ``failed`` (such a call reported an error), ``attempted`` (it never completed) or
    ``offered`` (the runner made it available). ``delivery``: ``native`` (the agent's own
    skill tool), ``mcp`` (an MCP tool or resource), ``read`` (any other tool result showing the
    content), ``explicit`` (the prompt invoked it in the agent's syntax)."""

    skill: str
    delivery: Delivery
    agent: str
    source: str  # what proved it, e.g. "Skill tool", "Read result", "mcp tool load_x_skill"
    index: int  # 0-based index of the event (transcript line) that completed the call
    state: State = "loaded"
    # Where the call was made (line, position in that line's message): loads are ordered by
    # this, so parallel calls keep the order the model made them in, whatever finished first.
    order: tuple[int, int] = (0, 0)

    def to_json(self) -> dict[str, Any]:
        """The ``skill-evals evidence`` JSON shape."""
        return {
            "skill": self.skill,
            "state": self.state,
            "delivery": self.delivery,
            "agent": self.agent,
            "source": self.source,
            "index": self.index,
        }


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a transcript, with the result the model was shown."""

    name: str  # the tool name as the agent recorded it
    input: Mapping[str, Any]  # its arguments (an empty mapping when they were not an object)
    order: tuple[int, int]  # (line of the call, position within that line's message)
    done: int | None  # line of its result; None when it never completed
    ok: bool  # completed without an error
    result: str  # the text the model was shown ("" when none)


class InvalidPattern(InvalidInput, ValueError):
    """A custom evidence pattern that is not a usable regular expression (exit 5)."""


# The time bound of one custom pattern on one tool name or URI (a sane pattern takes microseconds).
PATTERN_SECONDS = 2.0

_DEFAULT_TOOL = re.compile(r"load_(?P<name>[A-Za-z0-9_-]+)_skill")
# ``skill://[<prefix>/]<S>/SKILL.md``: any number of prefix segments, S the one before SKILL.md
# (a server may serve skills under a path, as the Skills extension allows).
_DEFAULT_URI = re.compile(r"skill://(?:[^/]+/)*(?P<name>[^/]+)/SKILL\.md")
_SKILL_MD_PATH = re.compile(r"(?:^|/)skills/(?P<name>[^/]+)/SKILL\.md$")


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise InvalidPattern(f"{where}: must be a string (a regular expression)")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InvalidPattern(f"{where}: not a regular expression ({exc})") from None
    if "name" not in compiled.groupindex:
        raise InvalidPattern(
            f"{where}: needs a named group (?P<name>...) that captures the skill name"
        )
    return compiled


@dataclass(frozen=True)
class EvidencePatterns:
    """Custom patterns from the config (``evidence.toolPatterns`` / ``evidence.uriPatterns``):
    regular expressions with a named group ``name``, tried after the defaults, each matched
    against the whole tool name / URI. Raises InvalidPattern when one does not compile or has
    no ``name`` group."""

    tool_patterns: tuple[str, ...] = ()
    uri_patterns: tuple[str, ...] = ()
    _tools: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _uris: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _pool: RegexPool | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        # Compiled once here so a bad pattern fails before any run, not mid-transcript.
        tools = tuple(
            _compile(p, f"evidence.toolPatterns[{i}]") for i, p in enumerate(self.tool_patterns)
        )
        uris = tuple(
            _compile(p, f"evidence.uriPatterns[{i}]") for i, p in enumerate(self.uri_patterns)
        )
        object.__setattr__(self, "_tools", (_DEFAULT_TOOL, *tools))
        object.__setattr__(self, "_uris", (_DEFAULT_URI, *uris))
        if tools or uris:
            from ..run.regex import RegexPool

            # Its helper processes start on the first custom match and end with this process
            # (they read their questions from a pipe that closes with it).
            object.__setattr__(self, "_pool", RegexPool(PATTERN_SECONDS))

    def compiled_tools(self) -> list[re.Pattern[str]]:
        """The built-in tool pattern, then the custom ones."""
        return list(self._tools)

    def compiled_uris(self) -> list[re.Pattern[str]]:
        """The built-in URI pattern, then the custom ones."""
        return list(self._uris)

    def first_name(self, kind: Literal["tool", "uri"], text: str) -> str | None:
        """The skill name the first matching pattern of ``kind`` captures from ``text``.

        The built-in pattern runs here; a custom one (any regular expression a config brings)
        runs in a helper process within the check time bound, since Python's ``re`` cannot be
        interrupted and the text comes from the agent. A custom pattern past the bound raises
        InvalidPattern naming it: the evidence is then undecidable, never silently absent."""
        compiled = self._tools if kind == "tool" else self._uris
        found = _first_name(compiled[:1], text)
        if found is not None or len(compiled) == 1:
            return found
        from ..run.regex import RegexTimeout

        sources = self.tool_patterns if kind == "tool" else self.uri_patterns
        key = "toolPatterns" if kind == "tool" else "uriPatterns"
        assert self._pool is not None  # made in __post_init__ with the first custom pattern
        for index, pattern in enumerate(sources):
            try:
                name = self._pool.fullmatch_name(pattern, text)
            except RegexTimeout as exc:
                raise InvalidPattern(
                    f"evidence.{key}[{index}]: {exc} on a {kind} name; simplify the pattern "
                    "(nested repetition such as (a+)+ backtracks badly)"
                ) from None
            if name:
                return name
        return None


_NO_PATTERNS = EvidencePatterns()


def split_mcp_tool_name(name: str) -> tuple[str | None, str]:
    """Claude Code names MCP tools ``mcp__<server>__<tool>``: return (server, tool).

    Other names come back as (None, name)."""
    if name.startswith("mcp__"):
        server, sep, tool = name[len("mcp__") :].partition("__")
        if sep and server and tool:
            return server, tool
    return None, name


def _first_name(patterns: Iterable[re.Pattern[str]], text: str) -> str | None:
    for pattern in patterns:
        match = pattern.fullmatch(text)
        if match:
            name = match.group("name")
            if name:
                return name
    return None


def skill_from_tool(name: str, patterns: EvidencePatterns | None = None) -> str | None:
    """The skill an MCP tool call loads (``load_<name>_skill``, ``_`` → ``-``), else None.

    Claude's ``mcp__<server>__<tool>`` is split first; the bare name is tried too, so a tool whose
    own name starts with ``mcp__`` still matches."""
    patterns = patterns or _NO_PATTERNS
    _, tool = split_mcp_tool_name(name)
    found = patterns.first_name("tool", tool)
    if found is None and tool != name:
        found = patterns.first_name("tool", name)
    return found.replace("_", "-") if found is not None else None


def skill_from_uri(uri: str, patterns: EvidencePatterns | None = None) -> str | None:
    """The skill a resource read loads (``skill://[<prefix>/]<name>/SKILL.md``), else None."""
    return (patterns or _NO_PATTERNS).first_name("uri", uri)


def skill_from_path(path: str, known: frozenset[str] | None = None) -> str | None:
    """The skill whose ``…/skills/<name>/SKILL.md`` a path names; restricted to ``known`` names
    when given (so an unrelated SKILL.md elsewhere does not count)."""
    match = _SKILL_MD_PATH.search(path.strip().replace("\\", "/"))
    if not match:
        return None
    name = match.group("name")
    if name in (".", "..") or (known is not None and name not in known):
        return None
    return name


def skills_from_command(command: str, known: frozenset[str] | None = None) -> list[str]:
    """Skills whose SKILL.md a shell command line names as a word (``cat .agents/skills/x/
    SKILL.md``, ``sed -n 1,200p '…/SKILL.md'``), in order, each once. Words are split like a
    POSIX shell; an unbalanced quote falls back to whitespace splitting."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: dict[str, None] = {}
    for word in words:
        # `bash -lc "cat skills/x/SKILL.md"` nests a command in one word: split that too.
        for part in (word, *word.split()) if " " in word else (word,):
            name = skill_from_path(part.strip("\"'`;|&()<>"), known)
            if name is not None:
                found.setdefault(name, None)
    return list(found)


# A transcript larger than this is refused rather than held in memory (real runs stay far below).
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


def parse_lines(data: bytes) -> list[dict[str, Any]]:
    """Decode JSON-lines output into events; lines that are not JSON objects (blank ones too)
    become ``{}`` so that indexes keep matching transcript lines (index = line number − 1)."""
    events: list[dict[str, Any]] = []
    for raw in data.splitlines():
        try:
            value = json.loads(raw)
        except ValueError:  # also UnicodeDecodeError
            value = None
        events.append(value if isinstance(value, dict) else {})
    return events


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read a saved JSON-lines transcript (see :func:`parse_lines`).

    Raises OSError when the file cannot be read, InvalidInput when it exceeds
    ``MAX_TRANSCRIPT_BYTES``."""
    with path.open("rb") as fh:
        data = fh.read(MAX_TRANSCRIPT_BYTES + 1)
    if len(data) > MAX_TRANSCRIPT_BYTES:
        raise InvalidInput(
            f"{path}: larger than {MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB; not a transcript"
        )
    return parse_lines(data)


def loaded_names(loads: Iterable[Load]) -> list[str]:
    """Distinct names of the loaded skills, in order of first load (by where the call was made;
    ties keep the given order)."""
    seen: dict[str, None] = {}
    for load in sorted((ld for ld in loads if ld.state == "loaded"), key=lambda ld: ld.order):
        seen.setdefault(load.skill, None)
    return list(seen)


_NAME_END = "/SKILL.md"
_NAME_STOP = frozenset("/\\ \t\r\n'\"`*?[]=:;|&<>(){}$")
# A folder name taken from any path (no known names to match): what a skill folder can be.
_ANY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MAX_NAME = 128  # skill names are at most 64 characters; folders a little more


_MAX_SCANNED = 256 * 1024  # characters of one tool-input string looked at for paths


def _name_end(text: str, at: int) -> int:
    """Where the folder name before the ``/SKILL.md`` at ``at`` ends: past a closing quote
    (``"…/x"/SKILL.md`` is the path ``…/x/SKILL.md`` to a shell) and ``/.`` parts
    (``x/./SKILL.md``); bounded steps."""
    end = at
    for _ in range(8):
        if end > 0 and text[end - 1] in "'\"":
            end -= 1
        elif end > 1 and text[end - 2 : end] == "/.":
            end -= 2
        else:
            break
    return end


def skills_named(text: str, known: frozenset[str] | None) -> list[str]:
    """Skills whose ``<name>/SKILL.md`` path a text (a command, an argument) names, in order,
    each once: only ``known`` names, or (``known`` None) any folder name. Naming a path is
    never a load. Linear in the text: each ``/SKILL.md`` is looked back from by at most
    ``_MAX_NAME`` characters."""
    text = text[:_MAX_SCANNED]
    found: dict[str, None] = {}
    at = text.find(_NAME_END)
    while at >= 0:
        end = _name_end(text, at)
        start = end
        while start > 0 and end - start < _MAX_NAME and text[start - 1] not in _NAME_STOP:
            start -= 1
        name = text[start:end]
        if known is not None:
            if name in known:
                found.setdefault(name, None)
        elif _ANY_NAME.fullmatch(name) and not (start > 0 and text[start - 1] == "$"):
            found.setdefault(name, None)  # not a shell variable ($d/SKILL.md)
        at = text.find(_NAME_END, at + 1)
    return list(found)


def folders_named(text: str, known: Iterable[str]) -> list[str]:
    """Skills of ``known`` whose folder a text names as a path part (``…/<name>``,
    ``<name>/…``: ``cd .claude/skills/x``, ``tar czf - skills/x``), in ``known`` order. A bare
    word equal to a name is not a path."""
    text = text[:_MAX_SCANNED]
    found: list[str] = []
    for name in known:
        at = text.find(name)
        while at >= 0:
            before = text[at - 1] if at > 0 else " "
            end = at + len(name)
            after = text[end] if end < len(text) else " "
            if (before == "/" and (after in _NAME_STOP or after == "/")) or (
                before in _NAME_STOP and before != "/" and after == "/"
            ):
                found.append(name)
                break
            at = text.find(name, at + 1)
    return found


def rename_loads(loads: Iterable[Load], aliases: Mapping[str, str]) -> list[Load]:
    """The loads with folder names (found in paths) replaced by skill names."""
    return [replace(ld, skill=aliases.get(ld.skill, ld.skill)) for ld in loads]
