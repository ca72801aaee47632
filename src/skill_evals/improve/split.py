"""The train/held-out split of a suite's units: stratified by label, seeded, exact."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..errors import InsufficientUnits
from ..score.stats import Mulberry32
from ..suite.cases import Case, CaseSuite

MIN_UNITS = 10
MIN_LABEL_UNITS = 2


@dataclass(frozen=True)
class Split:
    """The cases of each side, in case-file order; a unit's cases stay together."""

    train: tuple[Case, ...]
    held_out: tuple[Case, ...]


def _units(suite: CaseSuite) -> dict[int, list[Case]]:
    units: dict[int, list[Case]] = {}
    for case in suite.cases:
        units.setdefault(case.unit, []).append(case)
    return units


def _shuffle(items: list[int], rng: Mulberry32) -> None:
    for i in range(len(items) - 1, 0, -1):
        j = math.floor(rng.next_float() * (i + 1))
        items[i], items[j] = items[j], items[i]


def held_out_count(n: int, holdout: float) -> int:
    """h = min(n − 1, max(1, ⌊F·n + ½⌋)), exact on the decimal F."""
    return min(n - 1, max(1, math.floor(Fraction(repr(holdout)) * n + Fraction(1, 2))))


def split_suite(suite: CaseSuite, holdout: float, seed: int) -> Split:
    """Positive units, then negative ones (each in case-file order) shuffled by one mulberry32
    stream seeded with ``seed`` (Fisher-Yates from the end); the first h of each are held out.
    Exit 6 when a label has fewer than 2 units or the suite fewer than 10."""
    units = _units(suite)
    if len(units) < MIN_UNITS:
        raise InsufficientUnits(
            f"{suite.path}: {len(units)} independent case(s); improve needs at least {MIN_UNITS}"
        )
    by_label = {
        label: [u for u, cases in units.items() if cases[0].expect_trigger is label]
        for label in (True, False)
    }
    for label, members in by_label.items():
        if len(members) < MIN_LABEL_UNITS:
            word = "true" if label else "false"
            raise InsufficientUnits(
                f"{suite.path}: {len(members)} independent case(s) with expectTrigger {word}; "
                f"improve needs at least {MIN_LABEL_UNITS} of each label to hold one out"
            )
    rng = Mulberry32(seed)
    held: set[int] = set()
    for label in (True, False):
        order = list(by_label[label])
        _shuffle(order, rng)
        held.update(order[: held_out_count(len(order), holdout)])
    train = tuple(c for c in suite.cases if c.unit not in held)
    held_out = tuple(c for c in suite.cases if c.unit in held)
    return Split(train, held_out)
