"""The held-out decision's two corrections (docs/improve.md#held-out-finalists-and-the-decision):
a small-sample widening of the bootstrap interval (the unbiased spread over the plug-in one),
and the alpha-spending rule that shares the false-accept level between the repeated held-out
looks of the adaptive trials."""

from __future__ import annotations

import math


def widening(units: int, strata: int) -> float | None:
    """How much the percentile interval's arms are stretched around the observed difference
    for ``units`` resampled units in ``strata`` label strata: √(n/(n − s)). The bootstrap's
    spread is the plug-in one (divisor n per stratum); this is the unbiased spread's, which a
    few units need. None when n ≤ s (no interval can be claimed)."""
    df = units - strata
    if df < 1:
        return None
    return math.sqrt(units / df)


def spent(fraction: float, alpha: float) -> float:
    """The share of ``alpha`` spent once ``fraction`` (0–1) of the planned looks were taken:
    the Lan–DeMets Pocock-type rule α·ln(1 + (e − 1)·t)."""
    return alpha * math.log(1 + (math.e - 1) * min(1.0, max(0.0, fraction)))


def look_alpha(before: int, look: int, looks: int, alpha: float) -> float:
    """The level of held-out look number ``look`` (1-based) of ``looks`` planned, the previous
    one being ``before``: what the spending rule allows between the two. Summed over the looks
    it never exceeds ``alpha``, so looking again after more trials does not raise the
    false-accept chance by the number of looks."""
    return spent(look / looks, alpha) - spent(before / looks, alpha)
