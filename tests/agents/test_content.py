"""Content-proven loads: the window search against a brute-force reference, and the
normalisation (line numbers, whitespace)."""

from __future__ import annotations

import random

import pytest

from skill_evals.agents.content import (
    MAX_INDEXED_CHARS,
    WINDOW,
    SkillText,
    normalize,
    skills_shown,
)


def brute_force(skill: str, shown: str) -> bool:
    need = min(WINDOW, len(skill))
    if need == 0:
        return False
    return any(skill[i : i + need] in shown for i in range(len(skill) - need + 1))


@pytest.mark.parametrize("seed", range(40))
def test_the_window_search_agrees_with_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "ab" if seed % 2 else "abcdefgh"
    skill = "".join(rng.choice(alphabet) for _ in range(rng.randint(150, 700)))
    # Texts that hold a part of the skill of some length around the window, amid noise.
    for _ in range(20):
        start = rng.randrange(len(skill))
        part = skill[start : start + rng.randint(WINDOW - 3, WINDOW + 3)]
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))
        cut = rng.randint(0, len(noise))
        shown = noise[:cut] + part + noise[cut:]
        assert SkillText.of("s", skill).shown_in(shown) == brute_force(skill, shown), (seed, start)


def test_whole_file_when_shorter_than_the_window() -> None:
    short = SkillText.of("s", "---\nname: s\n---\nBe brief.\n")
    assert short.shown_in(normalize("cat output:\n---\nname: s\n---\n\nBe   brief.\n"))
    assert not short.shown_in(normalize("---\nname: s\n---\n"))  # a part of a short file
    assert not SkillText.of("e", " \n\t").shown_in("anything")  # an empty skill never shows


def test_line_numbers_and_whitespace_are_ignored() -> None:
    text = "\n".join(f"Line {i} of the skill says something specific." for i in range(12))
    skill = SkillText.of("s", text)
    claude_read = "".join(f"{i + 1:6}→{line}\n" for i, line in enumerate(text.splitlines()))
    cat_n = "".join(f"{i + 1:6}\t{line}\n" for i, line in enumerate(text.splitlines()))
    reflowed = text.replace(" ", "\n  ")
    for shown in (claude_read, cat_n, reflowed):
        assert skills_shown(shown, [skill]) == ["s"]
    assert skills_shown(skill.text[: WINDOW - 1], [skill]) == []
    assert skills_shown(skill.text[7 : 7 + WINDOW], [skill]) == ["s"]  # no edge spaces


def test_only_the_indexed_start_of_a_huge_skill_is_compared() -> None:
    huge = "".join(f"{i:08d} " for i in range(MAX_INDEXED_CHARS // 9 + 100))
    skill = SkillText.of("h", huge)
    assert len(skill.text) == MAX_INDEXED_CHARS
    assert skill.shown_in(normalize(huge[:1000]))
    assert not skill.shown_in(normalize(huge[-1000:]))
