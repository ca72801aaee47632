"""The five buckets of a drafted suite, their counts scaled to ``--count``, and the task units a
``--min-uplift`` gate needs so that lint raises neither ``few-task-cases`` nor ``uplift-mde``."""

from __future__ import annotations

from fractions import Fraction

from ..plan.lint import MDE_WARNING, MIN_TASK_UNITS
from ..score.power import minimum_detectable_uplift
from ..suite.cases import MIN_UNITS

# In the order a suite lists them: should-trigger first, then should-not.
BUCKETS = ("explicit", "implicit", "contextual", "near-miss", "unrelated")
SHOULD_TRIGGER = frozenset({"explicit", "implicit", "contextual"})
DEFAULTS = {"explicit": 4, "implicit": 4, "contextual": 2, "near-miss": 6, "unrelated": 4}
DEFAULT_COUNT = sum(DEFAULTS.values())
MAX_TASK_UNITS = 400  # a gate that needs more is refused (exit 5): no drafted suite reaches it


def scaled(count: int) -> dict[str, int]:
    """The default counts scaled to ``count`` cases in all (largest remainder, ties in bucket
    order); at least one per bucket when ``count`` allows it."""
    shares = {b: Fraction(DEFAULTS[b] * count, DEFAULT_COUNT) for b in BUCKETS}
    counts = {b: int(shares[b]) for b in BUCKETS}
    left = count - sum(counts.values())
    by_remainder = sorted(BUCKETS, key=lambda b: (-(shares[b] - counts[b]), BUCKETS.index(b)))
    for bucket in by_remainder[:left]:
        counts[bucket] += 1
    for bucket in BUCKETS:
        if counts[bucket] == 0 and count >= len(BUCKETS):
            donor = max(BUCKETS, key=lambda b: counts[b])
            counts[donor] -= 1
            counts[bucket] += 1
    return counts


def task_units_needed(min_uplift: float, where: str = "--min-uplift {}") -> int:
    """The fewest task units (at least lint's minimum) whose minimum detectable uplift under
    ``min_uplift`` is below lint's warning level; ValueError (naming the gate as ``where``,
    ``{}`` its value) when none up to MAX_TASK_UNITS."""
    where = where.format(f"{min_uplift:g}")
    if min_uplift >= MDE_WARNING:
        raise ValueError(
            f"{where}: no suite size brings the minimum "
            f"detectable uplift below {MDE_WARNING:g}; use a gate below {MDE_WARNING:g}"
        )
    for units in range(MIN_TASK_UNITS, MAX_TASK_UNITS + 1):
        if minimum_detectable_uplift(units, min_uplift).value < MDE_WARNING:
            return units
    raise ValueError(f"{where} needs more than {MAX_TASK_UNITS} task cases")


def plan_buckets(count: int, task_units: int) -> dict[str, int]:
    """The counts to ask for: ``count`` scaled, then the should-trigger buckets (which carry the
    tasks) raised in proportion until they hold ``task_units`` cases; never under the minimum
    of independent units, nor under five per label."""
    counts = scaled(max(count, MIN_UNITS))
    positives = sum(counts[b] for b in SHOULD_TRIGGER)
    if positives < task_units:
        total = count
        while sum(scaled(total)[b] for b in SHOULD_TRIGGER) < task_units:
            total += 1
        counts = scaled(total)
    return counts
