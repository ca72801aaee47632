"""Trigger figures of one description on a set of cases, and the held-out comparison: a
permutation test of the F1 difference (docs/improve.md#held-out-finalists-corrected)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..score.stats import Mulberry32
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


@dataclass(frozen=True)
class HeldOutInterval:
    """The held-out F1 difference's bounds, each one-sided at level 1 − ``alpha``."""

    lower: float | None
    upper: float | None
    samples: int
    seed: int
    undefined: int
    alpha: Fraction = Fraction(1, 20)  # each bound is one-sided at 1 − alpha
    p_value: float | None = None  # one-sided: the chance of a difference this large by luck

    def to_json(self) -> dict[str, Any]:
        """The report's ``interval``."""
        return {
            "lower": self.lower,
            "upper": self.upper,
            "samples": self.samples,
            "seed": self.seed,
            "undefinedResamples": self.undefined,
        }


@dataclass(frozen=True)
class _Cell:
    """One held-out case: its label, and each description's trials and hits there."""

    positive: bool
    new_trials: int
    old_trials: int
    hits: int  # of both descriptions together
    cumulative: tuple[int, ...]  # the weights of k new hits, summed from the least k
    least: int  # the least number of new hits possible


def _cell(case: Case, new: Trials, old: Trials) -> tuple[_Cell, int]:
    """The case's cell and the candidate's hits there. Relabelling the pooled trials at
    random gives the candidate k hits with the hypergeometric weight C(H, k)·C(N − H, n − k)."""
    n, pooled = len(new), len(new) + len(old)
    new_hits = sum(1 for triggered, _ in new if triggered)
    hits = new_hits + sum(1 for triggered, _ in old if triggered)
    least, most = max(0, n - (pooled - hits)), min(n, hits)
    running, cumulative = 0, []
    for k in range(least, most + 1):
        running += math.comb(hits, k) * math.comb(pooled - hits, n - k)
        cumulative.append(running)
    return _Cell(case.expect_trigger, n, len(old), hits, tuple(cumulative), least), new_hits


def _difference_of(cells: Sequence[_Cell], new_hits: Sequence[int]) -> Fraction | None:
    tp_n = fp_n = fn_n = tp_o = fp_o = fn_o = 0
    for cell, k in zip(cells, new_hits, strict=True):
        if cell.positive:
            tp_n, fn_n = tp_n + k, fn_n + cell.new_trials - k
            tp_o, fn_o = tp_o + cell.hits - k, fn_o + cell.old_trials - (cell.hits - k)
        else:
            fp_n, fp_o = fp_n + k, fp_o + cell.hits - k
    a, b = f1(tp_n, fp_n, fn_n), f1(tp_o, fp_o, fn_o)
    return None if a is None or b is None else a - b


class PermutationTest:
    """Whether the candidate's held-out F1 beats the original's by more than luck.

    If the two descriptions made no difference on a held-out case, which of its trials ran
    with which description would not matter: each of ``samples`` relabellings draws, per case
    in case-file order, the candidate's share of the case's pooled hits from one mulberry32
    stream seeded with ``seed`` (the least k whose cumulative weight exceeds draw × C(N, n),
    see _cell) and takes the F1 difference; relabellings where either F1 is undefined are dropped
    and counted. The p-value is (1 + the relabellings at least as large as the observed
    difference) / (1 + the kept ones): exact, whatever the number of cases or trials."""

    def __init__(self, cases: Sequence[Case], selected: Mapping[str, Trials],
                 original: Mapping[str, Trials], samples: int, seed: int) -> None:  # fmt: skip
        built = [_cell(case, selected[case.id], original[case.id]) for case in cases]
        cells = [cell for cell, _ in built]
        self.samples, self.seed = samples, seed
        self.observed = _difference_of(cells, [hits for _, hits in built])
        rng = Mulberry32(seed & 0xFFFFFFFF)
        kept: list[Fraction] = []
        for _ in range(samples):
            draws = []
            for cell in cells:
                point = rng.next_float() * cell.cumulative[-1]
                draws.append(cell.least + bisect.bisect_right(cell.cumulative, point))
            value = _difference_of(cells, draws)
            if value is not None:
                kept.append(value)
        kept.sort()
        self.null = kept
        self.undefined = samples - len(kept)

    @property
    def p_value(self) -> float | None:
        """The one-sided p-value (None when the observed difference is undefined)."""
        if self.observed is None or not self.null:
            return None
        above = len(self.null) - bisect.bisect_left(self.null, self.observed)
        return (1 + above) / (1 + len(self.null))

    def interval(self, alpha: Fraction) -> HeldOutInterval:
        """The bounds at one-sided level 1 − ``alpha``: the observed difference minus the
        relabellings' (m+1)-th largest and (m+1)-th smallest, m = ⌊α·(B′ + 1)⌋ − 1, so the
        lower bound is above 0 exactly when the p-value is at most α. None when the
        relabellings are too few for the level."""
        kept, d = self.null, self.observed
        m = math.floor(alpha * (len(kept) + 1)) - 1
        if d is None or m < 0 or m >= len(kept):
            lower = upper = None
        else:
            lower = max(-1.0, float(d - kept[len(kept) - 1 - m]))
            upper = min(1.0, float(d - kept[m]))
        return HeldOutInterval(
            lower, upper, self.samples, self.seed, self.undefined, alpha, self.p_value
        )
