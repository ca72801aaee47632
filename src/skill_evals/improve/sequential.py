"""The held-out looks' shares of the false-accept level (docs/improve.md): the adaptive trials
look at the held-out outcome up to three times, and the planned looks share the 5 % in
proportion to their number (1/6, 2/6 and 3/6 for three), so looking again after more trials
never raises the chance of accepting a non-gain above 5 % (the union bound over the looks).
Later looks, on more trials, get more: an early pass saves nothing since the accepted finalist
runs the remaining trials anyway (held_out._confirm)."""

from __future__ import annotations


def look_alpha(before: int, look: int, looks: int, alpha: float) -> float:
    """The level of held-out look number ``look`` (1-based) of ``looks`` planned, the previous
    one being ``before``: S(look) − S(before), S(k) = α·k(k + 1)/(L(L + 1)), so look k alone
    gets α·k/(1 + … + L). Summed over the looks taken it never exceeds ``alpha``; a look
    taken after a skipped one gets both shares."""
    if looks < 1 or not 0 <= before < look <= looks:
        raise ValueError(f"look {look} after {before} is not one of {looks} planned looks")

    def spent(k: int) -> float:
        return alpha * k * (k + 1) / (looks * (looks + 1))

    return spent(look) - spent(before)
