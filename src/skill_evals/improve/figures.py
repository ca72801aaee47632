"""Trigger figures of one description on a set of cases, and the held-out comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..score.stats import percentiles_of, resample_sums_many
from ..suite.cases import Case

Trials = Sequence[tuple[bool, tuple[str, ...]]]  # per trial: triggered, the skills it loaded


@dataclass(frozen=True)
class Counts:
    """Observation counts of the ``with`` runs (a run that triggered is one that loaded the
    skill)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.tn + other.tn
        )


def f1(tp: int, fp: int, fn: int) -> Fraction | None:
    """2TP / (2TP + FP + FN): 0 when nothing triggered right, None only when 2TP+FP+FN = 0."""
    denominator = 2 * tp + fp + fn
    return None if denominator == 0 else Fraction(2 * tp, denominator)


def _ratio(a: int, b: int) -> float | None:
    return None if b == 0 else a / b


def case_counts(case: Case, trials: Trials) -> Counts:
    """The counts of one case's trials."""
    hits = sum(1 for triggered, _ in trials if triggered)
    misses = len(trials) - hits
    if case.expect_trigger:
        return Counts(tp=hits, fn=misses)
    return Counts(fp=hits, tn=misses)


def figures(counts: Counts) -> dict[str, Any]:
    """``{tp, fp, fn, tn, precision, recall, f1}`` of the report."""
    value = f1(counts.tp, counts.fp, counts.fn)
    return {
        "tp": counts.tp,
        "fp": counts.fp,
        "fn": counts.fn,
        "tn": counts.tn,
        "precision": _ratio(counts.tp, counts.tp + counts.fp),
        "recall": _ratio(counts.tp, counts.tp + counts.fn),
        "f1": None if value is None else float(value),
    }


def total(cases: Sequence[Case], results: Mapping[str, Trials]) -> Counts:
    """The counts over ``cases``."""
    summed = Counts()
    for case in cases:
        summed = summed + case_counts(case, results[case.id])
    return summed


def _unit_counts(cases: Sequence[Case], results: Mapping[str, Trials]) -> list[Counts]:
    units: dict[int, Counts] = {}
    for case in cases:
        units[case.unit] = units.get(case.unit, Counts()) + case_counts(case, results[case.id])
    return list(units.values())  # in case-file order of each unit's first case


@dataclass(frozen=True)
class HeldOutInterval:
    """The bootstrap interval of the held-out F1 difference."""

    lower: float | None
    upper: float | None
    samples: int
    seed: int
    undefined: int
    alpha: Fraction = Fraction(1, 20)  # the two-sided level: a 1 − alpha interval
    p_value: float | None = None  # the share of kept resamples with a difference ≤ 0

    def to_json(self) -> dict[str, Any]:
        """The report's ``interval``."""
        return {
            "lower": self.lower,
            "upper": self.upper,
            "samples": self.samples,
            "seed": self.seed,
            "undefinedResamples": self.undefined,
        }


def difference_interval(
    cases: Sequence[Case],
    selected: Mapping[str, Trials],
    original: Mapping[str, Trials],
    samples: int,
    seed: int,
    alpha: Fraction = Fraction(1, 20),
) -> HeldOutInterval:
    """Resample the held-out units (a fresh mulberry32 seeded with ``seed``), sum each arm's
    TP/FP/FN, take F1(selected) − F1(original); resamples where either F1 is undefined are
    dropped and counted. The interval is the 1 − ``alpha`` percentile interval (positions
    ⌊α/2·(B′−1)⌋ and ⌈(1−α/2)·(B′−1)⌉, exact); the p-value the share of kept differences ≤ 0."""
    new, old = _unit_counts(cases, selected), _unit_counts(cases, original)
    vectors = [
        [getattr(u, name) for u in side] for side in (new, old) for name in ("tp", "fp", "fn")
    ]
    kept: list[Fraction] = []
    dropped = 0
    for tp_n, fp_n, fn_n, tp_o, fp_o, fn_o in resample_sums_many(vectors, samples, seed):
        a, b = f1(tp_n, fp_n, fn_n), f1(tp_o, fp_o, fn_o)
        if a is None or b is None:
            dropped += 1
        else:
            kept.append(a - b)
    bounds = _percentiles(kept, alpha)
    lower, upper = (None, None) if bounds is None else (float(bounds[0]), float(bounds[1]))
    p_value = sum(1 for d in kept if d <= 0) / len(kept) if kept else None
    return HeldOutInterval(lower, upper, samples, seed, dropped, alpha, p_value)


def _percentiles(values: list[Fraction], alpha: Fraction) -> tuple[Fraction, Fraction] | None:
    """The 1 − ``alpha`` percentile interval (at 5 % the engine's own positions)."""
    if alpha == Fraction(1, 20) or not values:
        return percentiles_of(values)
    values.sort()
    k = len(values) - 1
    lo = math.floor(alpha / 2 * k)
    hi = math.ceil((1 - alpha / 2) * k)
    return values[lo], values[hi]
