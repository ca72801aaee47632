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
"""

from __future__ import annotations

import re
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

    @classmethod
    def of(cls, name: str, raw: str) -> SkillText:
        """Index the raw ``SKILL.md`` text of skill ``name``."""
        text = normalize(raw)[:MAX_INDEXED_CHARS]
        skill = cls(name, text)
        if len(text) > WINDOW:
            skill._blocks = {hash(text[i : i + BLOCK]) for i in range(len(text) - BLOCK + 1)}
            windows: dict[int, int] = {}
            for i in range(len(text) - WINDOW + 1):
                windows.setdefault(hash(text[i : i + WINDOW]), i)
            skill._windows = windows
        return skill

    def shown_in(self, shown: str) -> bool:
        """True when the normalised text ``shown`` holds a ``WINDOW``-long part of this skill
        (the whole skill when it is shorter). An empty skill is never shown."""
        if not self.text:
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
                at = self._windows.get(hash(window))
                if at is not None and self.text[at : at + WINDOW] == window:
                    return True
        return False


def skills_shown(text: str, skills: list[SkillText]) -> list[str]:
    """Names of the ``skills`` whose content the raw ``text`` shows, in the given order."""
    if not text:
        return []
    shown = normalize(text)
    return [skill.name for skill in skills if skill.shown_in(shown)]
