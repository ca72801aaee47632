"""Content-proven loads: did a text shown to the model contain a skill's instructions?

A skill S counts as shown when the text contains a contiguous part of S's ``SKILL.md`` of at least
``WINDOW`` characters (the whole file when it is shorter), both compared after removing
line-number prefixes (``   12→``, ``cat -n``/``nl`` style ``   12<TAB>``) and collapsing every run
of whitespace into one space.

The search is linear in the text's length: any ``WINDOW``-long match of the text contains one
whole ``BLOCK``-long block of the text at a position that is a multiple of ``BLOCK`` (because
``WINDOW`` = 2 × ``BLOCK``), so only those blocks are looked up in the skill's set of block
hashes; only the at most ``BLOCK`` + 1 windows around a block that is part of the skill are then
looked up in the skill's window table and compared. Python's string hash is keyed per process,
so a crafted text cannot force collisions, and every hit is confirmed by comparing the strings.

Only content *unique* to a skill among the skills a run could expose proves it
(:func:`index_skills`): a window of S that also occurs in another exposed skill's text (a shared
footer, a copied section) is marked shared in S's window table, so showing it proves neither. A
skill left without a unique window can be proven only by a skill tool or an explicit
invocation (:func:`not_unique_warnings`). The comparison is one pass over every skill's windows
with one shared hash table: linear in the total text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

WINDOW = 200
BLOCK = WINDOW // 2
# Only the first part of a (normalised) SKILL.md is indexed: the tables cost memory per
# character, and no real skill's instructions start deeper than this.
MAX_INDEXED_CHARS = 256 * 1024

# Line numbers agents and common readers put in front of each line: Claude Code's ``Read``
# (``     1→`` or ``     1<TAB>``), ``cat -n`` and ``nl -ba`` (``     1<TAB>``).
LINE_NUMBERS = re.compile(r"(?m)^[ \t]*\d+(?:→|\t)")


def normalize(text: str, line_numbers: re.Pattern[str] | None = LINE_NUMBERS) -> str:
    """``text`` with line-number prefixes removed and whitespace runs collapsed to one space."""
    if line_numbers is not None:
        text = line_numbers.sub("", text)
    return " ".join(text.split())


@dataclass
class SkillText:
    """One skill's ``SKILL.md``, normalised and indexed for :meth:`shown_in`."""

    name: str
    text: str  # normalised, at most MAX_INDEXED_CHARS
    _blocks: set[int] = field(default_factory=set, repr=False)
    _windows: dict[int, int] = field(default_factory=dict, repr=False)
    # Set by index_skills: hashes of the windows another exposed skill holds too, the skills
    # that hold some of this one's text, and whether any WINDOW-long part (the whole text when
    # shorter) is left that no other skill holds.
    _shared: set[int] = field(default_factory=set, repr=False)
    shared_with: tuple[str, ...] = ()
    provable: bool = True

    @classmethod
    def of(cls, name: str, raw: str) -> SkillText:
        """Index the raw ``SKILL.md`` text of skill ``name``."""
        text = normalize(raw)[:MAX_INDEXED_CHARS]
        skill = cls(name, text)
        # A text of exactly WINDOW characters is one window: indexed, so a skill that holds
        # it whole shares that window with it (showing the short one proves neither).
        if len(text) >= WINDOW:
            skill._blocks = {hash(text[i : i + BLOCK]) for i in range(len(text) - BLOCK + 1)}
            windows: dict[int, int] = {}
            for i in range(len(text) - WINDOW + 1):
                windows.setdefault(hash(text[i : i + WINDOW]), i)
            skill._windows = windows
        return skill

    def shown_in(self, shown: str, unique: bool = True) -> bool:
        """True when the normalised text ``shown`` holds a ``WINDOW``-long part of this skill
        (the whole skill when it is shorter) that no other exposed skill holds; with
        ``unique`` False, any such part (a loader that names the skill only has to return its
        text). An empty skill is never shown."""
        if not self.text or (unique and not self.provable):
            return False
        if len(self.text) <= WINDOW:
            return self.text in shown
        size = len(shown)
        for block in range(0, size - BLOCK + 1, BLOCK):
            if hash(shown[block : block + BLOCK]) not in self._blocks:
                continue
            # Windows that contain this block start in [block - BLOCK, block].
            for start in range(max(0, block - BLOCK), min(block, size - WINDOW) + 1):
                window = shown[start : start + WINDOW]
                key = hash(window)
                at = self._windows.get(key)
                if at is None or (unique and key in self._shared):
                    continue
                if self.text[at : at + WINDOW] == window:
                    return True
        return False


def skills_shown(text: str, skills: list[SkillText]) -> list[str]:
    """Names of the ``skills`` whose content the raw ``text`` shows, in the given order."""
    if not text:
        return []
    shown = normalize(text)
    return [skill.name for skill in skills if skill.shown_in(shown)]


def index_skills(named: Sequence[tuple[str, str]]) -> list[SkillText]:
    """Index each ``(name, raw SKILL.md)`` and keep, per skill, only the windows no other of
    them holds: text shared with another exposed skill never proves either."""
    skills = [SkillText.of(name, raw) for name, raw in named]
    owners: dict[int, list[int]] = {}
    for index, skill in enumerate(skills):
        for key in skill._windows:
            owners.setdefault(key, []).append(index)
    shared: list[dict[str, None]] = [{} for _ in skills]
    dropped: list[list[int]] = [[] for _ in skills]
    for index, skill in enumerate(skills):
        if not skill.text:
            continue
        if len(skill.text) < WINDOW:
            for other in skills:
                if other.name != skill.name and skill.text in other.text:
                    shared[index].setdefault(other.name, None)
            continue
        for key, at in skill._windows.items():
            window = skill.text[at : at + WINDOW]
            held = False
            for other_index in owners[key]:
                other = skills[other_index]
                if other.name == skill.name:  # the same skill (a copy of it) proves it
                    continue
                pos = other._windows[key]
                if other.text[pos : pos + WINDOW] == window:
                    # Every holder is named (the warning lists them all), not just the first.
                    shared[index].setdefault(other.name, None)
                    held = True
            if held:
                dropped[index].append(key)
    for index, skill in enumerate(skills):
        skill._shared = set(dropped[index])
        skill.shared_with = tuple(shared[index])
        if skill.text and shared[index]:
            skill.provable = len(skill.text) >= WINDOW and len(skill._windows) > len(skill._shared)
    return skills


def not_unique_warnings(skills: Sequence[SkillText]) -> list[str]:
    """One warning per skill with no unique ``WINDOW``-long part, naming who holds its text."""
    return [
        f"{skill.name}: no {WINDOW} characters are unique to it (shared with "
        f"{', '.join(skill.shared_with)}); only a skill tool or an explicit invocation can "
        "prove its load"
        for skill in skills
        if skill.text and not skill.provable
    ]
