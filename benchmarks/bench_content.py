"""Content-proven loads stay linear in the text searched: time to search texts of n and 4n
characters for a skill's content (the skill's 100-character blocks interleaved with noise, so
every block hits and no window does: the worst case). Baseline: 4 × the time for n; linear
means a ratio near 1."""

from __future__ import annotations

import random
import sys

from _common import median_seconds, verdict

from skill_evals.agents.content import SkillText, normalize


def hostile(skill: str, size: int, rng: random.Random) -> str:
    """Blocks of the skill (100 characters, a hit) separated by noise, never a whole window."""
    parts: list[str] = []
    total = 0
    while total < size:
        start = rng.randrange(0, len(skill) - 100)
        part = skill[start : start + 100] + "#" + "".join(rng.choice("xyz") for _ in range(99))
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def seconds(skill: SkillText, text: str) -> float:
    shown = normalize(text)
    return median_seconds(lambda: skill.shown_in(shown))


def main() -> int:
    rng = random.Random(7)
    raw = "".join(rng.choice("abcdefghij") for _ in range(20_000))
    skill = SkillText.of("s", raw)
    small = seconds(skill, hostile(skill.text, 250_000, rng))
    large = seconds(skill, hostile(skill.text, 1_000_000, rng))
    ok = verdict("content search, 4x the text vs 4x the time", large, 4 * small, 1.3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
