"""The held-out looks' share of the false-accept level (docs/improve.md): the adaptive trials
look at the held-out outcome up to three times, and each planned look gets an equal share of
the 5 %, so looking again after more trials never raises the chance of accepting a
non-gain above 5 % (the union bound over the looks)."""

from __future__ import annotations


def look_alpha(before: int, look: int, looks: int, alpha: float) -> float:
    """The level of held-out look number ``look`` (1-based) of ``looks`` planned, the previous
    one being ``before``: α·(look − before)/looks. Summed over the looks taken it never
    exceeds ``alpha``; a look taken after a skipped one gets both shares."""
    if looks < 1 or not 0 <= before < look <= looks:
        raise ValueError(f"look {look} after {before} is not one of {looks} planned looks")
    return alpha * (look - before) / looks
