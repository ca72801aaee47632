"""Choosing candidates without fooling ourselves (docs/improve.md#how-candidates-are-chosen):
train is cut into two seeded halves; a round's proposer sees the failures of one half and its
candidate is ranked on the other (the halves alternate by round), so a candidate that merely
fixes the prompts it was shown gains nothing where it is ranked. A candidate that adds words of
the prompts it was shown which appear in no prompt of the ranking half loses COPY_PENALTY of F1
per such word. The best ranked candidates become finalists on held-out, decided there with
Holm's step-down correction so the chance of accepting a non-gain stays at 5 %."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..score.stats import Mulberry32
from ..suite.cases import Case
from .figures import Counts, Trials, f1

COPY_PENALTY = Fraction(3, 100)  # F1 lost per copied word in the ranking score
ALPHA = 0.05
_WORD = re.compile(r"[a-z0-9]+")
MIN_WORD = 4  # shorter words (the, and, for …) are not counted as copied
NEAR_COPY = Fraction(9, 10)  # finalists sharing this share of their words or more are one


def words(text: str) -> set[str]:
    """The lower-cased words of ``text`` of at least MIN_WORD characters."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= MIN_WORD}


def train_halves(train: Sequence[Case], seed: int) -> tuple[tuple[Case, ...], tuple[Case, ...]]:
    """Train's units cut in two, per label: the positive units, then the negative ones (each in
    case-file order), shuffled by one mulberry32 stream seeded with ``seed`` + 1 (Fisher-Yates
    from the end); the first ⌈m/2⌉ of each label go to the first half."""
    units: dict[int, list[Case]] = {}
    for case in train:
        units.setdefault(case.unit, []).append(case)
    rng = Mulberry32(seed + 1)
    first: set[int] = set()
    for label in (True, False):
        order = [u for u, cases in units.items() if cases[0].expect_trigger is label]
        for i in range(len(order) - 1, 0, -1):
            j = math.floor(rng.next_float() * (i + 1))
            order[i], order[j] = order[j], order[i]
        first.update(order[: (len(order) + 1) // 2])
    one = tuple(c for c in train if c.unit in first)
    two = tuple(c for c in train if c.unit not in first)
    return one, two


def copied_words(new: str, old: str, shown: Sequence[Case], ranked_on: Sequence[Case]) -> list[str]:
    """Words ``new`` has and ``old`` had not, found in a prompt of ``shown`` and in none of
    ``ranked_on``: pasted from the prompts the proposer saw, without generalising."""
    seen = set().union(*(words(c.prompt) for c in shown)) if shown else set()
    other = set().union(*(words(c.prompt) for c in ranked_on)) if ranked_on else set()
    return sorted((words(new) - words(old)) & seen - other)


@dataclass
class Candidate:
    """A description evaluated on train (round 0 is the original)."""

    round: int
    description: str
    text: str  # the SKILL.md that carries it
    train: Mapping[str, Trials]
    counts: Counts
    score: Fraction | None = None  # the ranking score (docs/improve.md); None: the original
    gain: Fraction | None = None  # F1 gain over the original on the half it is ranked on
    copied: tuple[str, ...] = ()  # words pasted from the prompts shown, never seen elsewhere

    @property
    def f1(self) -> Fraction:
        value = f1(self.counts.tp, self.counts.fp, self.counts.fn)
        return Fraction(0) if value is None else value


def holm_levels(p_values: Sequence[float], alpha: float = ALPHA) -> list[tuple[int, float]]:
    """(finalist index, its Holm level) in step order: the smallest one-sided p first at α/K,
    the next at α/(K − 1), …; ties keep the finalists' order."""
    order = sorted(range(len(p_values)), key=lambda i: (p_values[i], i))
    k = len(p_values)
    return [(i, alpha / (k - rank)) for rank, i in enumerate(order)]


def near_copy(one: Candidate, other: Candidate) -> bool:
    """Whether two descriptions are near-copies: of the words (MIN_WORD characters or more,
    lower-cased) either has, at least NEAR_COPY are in both: a long description with a word
    appended is a near-copy, a short one that changes a word is not."""
    a, b = words(one.description), words(other.description)
    union = a | b
    return not union or Fraction(len(a & b), len(union)) >= NEAR_COPY
