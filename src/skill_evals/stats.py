"""Statistics (SPEC §1.5): mulberry32, percentile bootstrap, exact sign test, trigger metrics.

Owner: scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class Mulberry32:
    """The mulberry32 generator, bit-exact with the JavaScript reference."""

    def __init__(self, seed: int) -> None:
        raise NotImplementedError

    def next_float(self) -> float:
        """Next draw in [0, 1)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Interval:
    lower: float
    upper: float


def bootstrap_interval(values: Sequence[float], samples: int, seed: int) -> Interval:
    """Percentile bootstrap of the mean, SPEC §1.5 step 3 exactly. O(samples × n)."""
    raise NotImplementedError


@dataclass(frozen=True)
class SignTest:
    positive: int
    negative: int
    ties: int
    p_value: float | None  # None when there are no nonzero differences


def sign_test(differences: Sequence[float]) -> SignTest:
    """Exact two-sided sign test on the nonzero differences, computed with integers."""
    raise NotImplementedError
