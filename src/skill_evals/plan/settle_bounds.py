"""The bounds a settle check compares (settle.py): trigger F1, the per-unit pass-rate
differences and the F1 difference's interval, each under the best and the worst completion of
the run."""

from __future__ import annotations

from fractions import Fraction

from ..score.compare import f1_fraction
from ..score.stats import percentiles_of, resample_sums_many
from .settle_state import SettleState

Bounds = tuple[float | None, float | None]  # (lower, upper) of an interval


def trigger_verdict(s: SettleState, threshold: float) -> tuple[bool | None] | None:
    """(the settled verdict,) of --min-trigger-f1, or None while it is open."""
    best = f1_fraction(s.tp + s.rem_pos, s.fp, s.fn)
    worst = f1_fraction(s.tp, s.fp + s.rem_neg, s.fn + s.rem_pos)
    outcomes = {None if f is None else float(f) >= threshold for f in (best, worst)}
    if s.tp + s.fp == 0:
        outcomes.add(None)  # no run triggered yet: an undefined F1 is still reachable
    return (outcomes.pop(),) if len(outcomes) == 1 else None


def pass_differences(s: SettleState, other: str, best: bool) -> list[Fraction]:
    """The per-unit pass-rate differences (with − ``other``) over the task units under the
    best (``best``) or the worst completion."""
    mine, theirs = s.arms["with"], s.arms[other]
    diffs: list[Fraction] = []
    for i in s.task_units:
        nw, no = mine.planned[i], theirs.planned[i]
        if not nw or not no:
            continue
        rest_w, rest_o = nw - mine.observed[i], no - theirs.observed[i]
        pw = mine.passed[i] + (rest_w if best else 0)
        po = theirs.passed[i] + (0 if best else rest_o)
        diffs.append(Fraction(pw, nw) - Fraction(po, no))
    return diffs


def f1_difference_bounds(
    s: SettleState, unit_count: int, samples: int, seed: int
) -> tuple[Bounds, Bounds] | None:
    """((lower, upper) best, (lower, upper) worst) of the F1 difference, or None when the
    set of kept resamples is not yet fixed."""
    w, b = s.arms["with"], s.arms["baseline"]
    units = [i for i in range(unit_count) if w.planned[i] and b.planned[i]]
    if not units:
        return ((None, None), (None, None))

    def col(values: list[int]) -> list[int]:
        return [values[i] for i in units]

    vectors = [
        # best: with's remaining runs right, baseline's wrong
        [w.tp[i] + w.rem_pos[i] for i in units], col(w.fp), col(w.fn),
        col(b.tp), [b.fp[i] + b.rem_neg[i] for i in units],
        [b.fn[i] + b.rem_pos[i] for i in units],
        # worst: the opposite
        col(w.tp), [w.fp[i] + w.rem_neg[i] for i in units],
        [w.fn[i] + w.rem_pos[i] for i in units],
        [b.tp[i] + b.rem_pos[i] for i in units], col(b.fp), col(b.fn),
        # definedness: planned positives, observed triggers, remaining runs, per arm
        col(w.pos), [w.tp[i] + w.fp[i] for i in units],
        [w.rem_pos[i] + w.rem_neg[i] for i in units],
        col(b.pos), [b.tp[i] + b.fp[i] for i in units],
        [b.rem_pos[i] + b.rem_neg[i] for i in units],
    ]  # fmt: skip
    best: list[Fraction] = []
    worst: list[Fraction] = []
    for sums in resample_sums_many(vectors, samples, seed):
        for pos, trig, rem in (sums[12:15], sums[15:18]):
            if pos and not trig and rem:
                return None
        fb_w, fb_b = f1_fraction(*sums[0:3]), f1_fraction(*sums[3:6])
        fw_w, fw_b = f1_fraction(*sums[6:9]), f1_fraction(*sums[9:12])
        if fb_w is None or fb_b is None or fw_w is None or fw_b is None:
            continue  # undefined in every completion: dropped in every one
        best.append(fb_w - fb_b)
        worst.append(fw_w - fw_b)
    return _bounds(best), _bounds(worst)


def _bounds(values: list[Fraction]) -> Bounds:
    found = percentiles_of(values)
    return (None, None) if found is None else (float(found[0]), float(found[1]))
