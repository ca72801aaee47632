"""Trigger figures of one description on a set of cases, and the held-out comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..score.stats import percentiles_of, resample_sums_many
from ..suite.cases import Case
from .sequential import widening

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


def _strata(cases: Sequence[Case]) -> list[list[Case]]:
    """The cases of the positive units, then of the negative ones (a unit's label is its first
    case's)."""
    label: dict[int, bool] = {}
    for case in cases:
        label.setdefault(case.unit, case.expect_trigger)
    parts = [[c for c in cases if label[c.unit] is side] for side in (True, False)]
    return [part for part in parts if part]


def difference_interval(
    cases: Sequence[Case],
    selected: Mapping[str, Trials],
    original: Mapping[str, Trials],
    samples: int,
    seed: int,
    alpha: Fraction = Fraction(1, 20),
) -> HeldOutInterval:
    """Resample the held-out units per label, as the split drew them (the positive units with a
    fresh mulberry32 seeded with ``seed``, the negative ones with ``seed`` + 1), sum each arm's
    TP/FP/FN, take F1(selected) − F1(original); resamples where either F1 is undefined are
    dropped and counted. The percentile interval (positions ⌊α/2·(B′−1)⌋ and
    ⌈(1−α/2)·(B′−1)⌉) is stretched around the observed difference by sequential.widening for
    the few units resampled; the p-value is the share of kept differences ≤ 0."""
    strata = _strata(cases)
    sums: list[tuple[int, ...]] | None = None
    for index, part in enumerate(strata):
        new, old = _unit_counts(part, selected), _unit_counts(part, original)
        vectors = [
            [getattr(u, name) for u in side] for side in (new, old) for name in ("tp", "fp", "fn")
        ]
        drawn = resample_sums_many(vectors, samples, (seed + index) & 0xFFFFFFFF)
        if sums is None:
            sums = drawn
        else:  # both strata drew the same number of resamples
            sums = [
                tuple(x + y for x, y in zip(a, b, strict=True))
                for a, b in zip(sums, drawn, strict=True)
            ]
    kept: list[Fraction] = []
    dropped = 0
    for tp_n, fp_n, fn_n, tp_o, fp_o, fn_o in sums or []:
        a, b = f1(tp_n, fp_n, fn_n), f1(tp_o, fp_o, fn_o)
        if a is None or b is None:
            dropped += 1
        else:
            kept.append(a - b)
    p_value = sum(1 for d in kept if d <= 0) / len(kept) if kept else None
    bounds = _percentiles(kept, alpha)
    units = len({c.unit for c in cases})
    stretch = widening(units, len(strata))
    observed = _difference(cases, selected, original)
    if bounds is None or stretch is None or observed is None:
        return HeldOutInterval(None, None, samples, seed, dropped, alpha, p_value)
    # An F1 difference lies within [−1, 1]: the stretched arms stop there.
    lower = max(-1.0, float(observed) - stretch * float(observed - bounds[0]))
    upper = min(1.0, float(observed) + stretch * float(bounds[1] - observed))
    return HeldOutInterval(lower, upper, samples, seed, dropped, alpha, p_value)


def _difference(
    cases: Sequence[Case], selected: Mapping[str, Trials], original: Mapping[str, Trials]
) -> Fraction | None:
    new, old = total(cases, selected), total(cases, original)
    a, b = f1(new.tp, new.fp, new.fn), f1(old.tp, old.fp, old.fn)
    return None if a is None or b is None else a - b


def _percentiles(values: list[Fraction], alpha: Fraction) -> tuple[Fraction, Fraction] | None:
    """The 1 − ``alpha`` percentile interval (at 5 % the engine's own positions)."""
    if alpha == Fraction(1, 20) or not values:
        return percentiles_of(values)
    values.sort()
    k = len(values) - 1
    lo = math.floor(alpha / 2 * k)
    hi = math.ceil((1 - alpha / 2) * k)
    return values[lo], values[hi]
