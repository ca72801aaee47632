"""The loading rules, the same for every agent: from a transcript's tool calls (read by the
agent's own :class:`TranscriptReader`) to the evidence of which skills reached the model.

A load of skill S is counted only when the run's own records show S's instructions reached the
model:

1. the agent's native skill tool completed naming S (:meth:`TranscriptReader.skill_tool`);
2. an MCP ``load_<S>_skill`` call or a ``skill://S/SKILL.md`` resource read completed and its
   result holds S's text (a "not found" result never does);
3. any tool result shown to the model holds S's content (:mod:`.content`) — however it was read;
4. the prompt invoked S in the agent's own syntax, or the agent injected S's body
   (:meth:`TranscriptReader.explicit`).

Only content unique to S among the exposed skills proves S (:func:`.content.index_skills`).

A call that names S's ``SKILL.md`` path or S's folder, completed, and showed nothing that proves
S is ``unverified``: its result may hold S in a form no text match sees (base64, reversed, a
hex dump, an archive, a few lines). ``failed`` when the call reported an error, ``attempted``
when it never completed. A loader call (skill tool, MCP) that showed nothing is ``failed``.
Naming a path is never a load.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from .content import SkillText, normalize, skills_shown
from .evidence import (
    Delivery,
    Event,
    EvidencePatterns,
    Load,
    State,
    ToolCall,
    folders_named,
    skill_from_tool,
    skill_from_uri,
    skills_named,
)

MAX_EVIDENCE = 1000  # items in a runner line
# An archiver run by a command (tar, zip, …): its operands are folders, bare names included.
_ARCHIVER = re.compile(
    r"(?:^|[\s;&|(`'\"])(?:[^\s'\"]*/)?(?:tar|gtar|bsdtar|zip|7z|7za|7zr|cpio|pax|jar|rar|ar)(?=\s|$)"
)
# A folder that holds skills (a skills root or an agent's config folder): archived whole, it
# may hold any skill.
_SKILL_ROOT = re.compile(
    r"(?:^|[\s/'\"=])(?:\.?skills|\.claude|\.agents|\.codex|\.qwen|\.gemini|\.opencode|\.github)"
    r"/?(?=$|[\s'\";|&)])"
)
_OPERAND = re.compile(r"[^\s;&|()<>'\"`]+")
_MAX_LABEL = 80
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/-@")


class TranscriptReader(Protocol):
    """What an agent module knows about its own transcript format."""

    @property
    def name(self) -> str:
        """The agent's runner name (recorded in every :class:`~.evidence.Load`)."""
        ...

    def tool_calls(self, events: Sequence[Event]) -> list[ToolCall]:
        """Every tool call with the result shown to the model, plus any text the agent itself
        put in front of the model mid-run (e.g. a skill body it injected) as a call named
        ``INJECTED``."""
        ...

    def skill_tool(self, call: ToolCall) -> str | None:
        """The skill this call of the agent's native skill tool names, else None."""
        ...

    def explicit(
        self, events: Sequence[Event], prompt: str | None, available: frozenset[str]
    ) -> list[Load]:
        """Loads by explicit invocation: the prompt invoked an ``available`` skill in the
        agent's own syntax and the agent acted on it (``prompt`` None: a saved transcript)."""
        ...


INJECTED = "injected message"


def label(text: str) -> str:
    """A tool name or URI as a short, safe ``source`` label (other characters become ``?``)."""
    return "".join(c if c in _LABEL_CHARS else "?" for c in text[:_MAX_LABEL])


def _state(call: ToolCall, shown: bool) -> State:
    if shown:
        return "loaded"
    return "failed" if call.done is not None else "attempted"


def _named_state(call: ToolCall) -> State:
    """The state of a call that named a skill's files without proving it."""
    if call.done is None:
        return "attempted"
    return "unverified" if call.ok else "failed"


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """The string values of a tool input (nested at most a few levels)."""
    if isinstance(value, str):
        yield value
    elif depth < 4 and isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 4 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def _mcp_target(call: ToolCall, patterns: EvidencePatterns) -> tuple[str, str] | None:
    """(skill, source) when the call is an MCP skill load or a skill resource read."""
    uri = call.input.get("uri")
    if isinstance(uri, str):
        skill = skill_from_uri(uri, patterns)
        if skill is not None:
            return skill, f"mcp resource {label(uri)}"
    skill = skill_from_tool(call.name, patterns)
    if skill is not None:
        return skill, f"mcp tool {label(call.name)}"
    return None


def _holds(result: str, skill: SkillText | None) -> bool:
    """Does an MCP result hold the skill's text? Without the text (a saved transcript read
    without ``--skill``), any non-empty result that is not a "not found" answer does."""
    if skill is not None:
        # The loader named the skill: its own text, shared parts included, is the proof.
        return skill.shown_in(normalize(result), unique=False)
    return bool(result.strip()) and "not found" not in result.lower()


def prove(
    reader: TranscriptReader,
    events: Sequence[Event],
    skills: Sequence[SkillText],
    prompt: str | None = None,
    patterns: EvidencePatterns | None = None,
    available: frozenset[str] = frozenset(),
    aliases: Mapping[str, str] | None = None,
    any_skill_md: bool = False,
) -> list[Load]:
    """Every piece of loading evidence in ``events``, ordered by where each call was made.

    ``skills``: the skills whose content is looked for (every skill the run could have exposed,
    the tested one in both variants). ``available``: names the agent could resolve (offered,
    listed), for explicit invocations and attempts. ``aliases``: folder name → skill name for
    skills whose folder (seen in paths) is named differently. ``any_skill_md``: every
    ``…/<dir>/SKILL.md`` a call names counts as skill ``<dir>`` (a transcript read without the
    skills' text: such reads can only be ``unverified``)."""
    patterns = patterns or EvidencePatterns()
    aliases = aliases or {}
    texts = {skill.name: skill for skill in skills}
    known = frozenset(texts) | available | frozenset(aliases)
    folders = [*texts, *(a for a in aliases if a not in texts)]
    found: list[Load] = []
    for call in reader.tool_calls(events):
        loaded: set[str] = set()  # the skills this call proves loaded
        named: set[str] = set()  # and those it names, loaded or not
        found += _tool_loads(reader, call, patterns, texts, loaded, named)
        found += _shown_loads(reader.name, call, skills, loaded)
        in_paths = None if any_skill_md else known
        found += _named_reads(reader.name, call, in_paths, folders, aliases, loaded, named)
    found += reader.explicit(events, prompt, available)
    return sorted(found, key=lambda load: load.order)


def _at(call: ToolCall) -> int:
    """Where a call counts: when it completed, else when it started."""
    return call.done if call.done is not None else call.order[0]


def _tool_loads(
    reader: TranscriptReader,
    call: ToolCall,
    patterns: EvidencePatterns,
    texts: Mapping[str, SkillText],
    loaded: set[str],
    named: set[str],
) -> list[Load]:
    """A call of the agent's skill tool, and an MCP skill load or resource read."""
    found: list[Load] = []
    agent, at = reader.name, _at(call)
    native = reader.skill_tool(call)
    if native is not None:
        state = _state(call, call.ok and call.done is not None)
        found.append(
            Load(native, "native", agent, f"{label(call.name)} tool", at, state, call.order)
        )
        named.add(native)
        if state == "loaded":
            loaded.add(native)
    target = _mcp_target(call, patterns)
    if target is not None:
        skill, source = target
        shown = call.ok and call.done is not None and _holds(call.result, texts.get(skill))
        found.append(Load(skill, "mcp", agent, source, at, _state(call, shown), call.order))
        named.add(skill)
        if shown:
            loaded.add(skill)
    return found


def _shown_loads(
    agent: str, call: ToolCall, skills: Sequence[SkillText], loaded: set[str]
) -> list[Load]:
    """The skills whose content a call's result holds (an injected skill: a native load)."""
    found: list[Load] = []
    delivery: Delivery = "native" if call.name == INJECTED else "read"
    for skill in skills_shown(call.result, list(skills)):
        if skill not in loaded:
            source = INJECTED if call.name == INJECTED else f"{label(call.name)} result"
            found.append(Load(skill, delivery, agent, source, _at(call), "loaded", call.order))
            loaded.add(skill)
    return found


def _named_reads(
    agent: str,
    call: ToolCall,
    in_paths: frozenset[str] | None,
    folders: Sequence[str],
    aliases: Mapping[str, str],
    loaded: set[str],
    named: set[str],
) -> list[Load]:
    """The skills a call's input names by a SKILL.md path or a folder (reads not proven by
    their content); ``in_paths`` None: every SKILL.md path names a skill."""
    found: list[Load] = []
    for text in _strings(call.input):
        if text.startswith("skill://"):
            continue  # an MCP resource: a load only as its SKILL.md (see _mcp_target)
        paths = skills_named(text, in_paths)
        for folder in [*paths, *folders_named(text, folders), *archived(text, folders)]:
            skill = aliases.get(folder, folder)
            if skill not in loaded and skill not in named:
                state = _named_state(call)
                tool = label(call.name)
                source = f"{tool} result" if state == "unverified" else tool
                found.append(Load(skill, "read", agent, source, _at(call), state, call.order))
                named.add(skill)
    return found


def archived(text: str, folders: Sequence[str]) -> list[str]:
    """The skill folders an archiver command (``tar``, ``zip``, ``cpio``, …) may have packed:
    each named as an operand, bare names included (``cd .claude/skills && tar c x``, ``tar c -C
    skills x``), and every one when it archives a folder that holds skills (``tar c
    .claude/skills``, ``zip -r - .agents``). An archive is what encodes a skill past any text
    match (``tar c … | base64``), so such a call is ``unverified`` unless its result proves the
    skill. The project root (``tar c .``) is not matched: nothing says it holds a skill."""
    if not _ARCHIVER.search(text[:4096]):
        return []
    if _SKILL_ROOT.search(text[:65536]):
        return list(folders)
    operands = {word.rstrip("/") for word in _OPERAND.findall(text[:65536])}
    return [folder for folder in folders if folder in operands]


def runner_evidence(
    offered: Sequence[tuple[str, str, str]], loads: Sequence[Load]
) -> list[dict[str, str]]:
    """The runner line's ``evidence``: ``offered`` items ``(skill, delivery, source)`` first, then
    each distinct (skill, state, delivery, source) of ``loads`` in order, at most MAX_EVIDENCE."""
    items: dict[tuple[str, str, str, str], None] = {}
    for skill, delivery, source in offered:
        items.setdefault((skill, "offered", delivery, source), None)
    for load in loads:
        items.setdefault((load.skill, load.state, load.delivery, load.source), None)
    keys = ("skill", "state", "delivery", "source")
    return [dict(zip(keys, item, strict=True)) for item in list(items)[:MAX_EVIDENCE]]
