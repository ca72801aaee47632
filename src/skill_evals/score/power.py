"""What an uplift gate can detect at a suite's size: the minimum detectable uplift.

With n task units, the gate ``--min-uplift X`` passes only when the interval's lower bound clears
X. The minimum detectable uplift is the least pass rate k/n whose binomial 2.5 % quantile still
reaches X: MDE = min{k/n : k = 0…n, j*/n ≥ X}, j* the least j with P(J ≤ j) ≥ 0.025 for
J ~ Bin(n, k/n). Computed exactly in integers up to 2,000 units (beyond, the binomial tail
is summed in floating point, as exact integers would take seconds); j* grows with k, so k is
found by bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

EXACT_UNITS = 2000


@dataclass(frozen=True)
class Mde:
    """The minimum detectable uplift of ``units`` task units under the gate ``gate``."""

    units: int
    gate: float
    k: int
    value: float

    def to_json(self) -> dict[str, object]:
        """The lint report's ``mde`` block."""
        return {"units": self.units, "gate": self.gate, "k": self.k, "value": self.value}


def _below(n: int, k: int, m: int) -> bool:
    """Whether P(J ≤ m − 1) < 0.025 for J ~ Bin(n, k/n), i.e. the 2.5 % quantile is ≥ m:
    40 · Σ_{i<m} C(n, i) kⁱ (n − k)ⁿ⁻ⁱ < nⁿ, all in integers."""
    if m <= 0:
        return True
    if n > EXACT_UNITS:
        return _below_float(n, k, m)
    total = 0
    for i in range(min(m, n + 1)):
        total += math.comb(n, i) * k**i * (n - k) ** (n - i)
    return bool(40 * total < n**n)


def _below_float(n: int, k: int, m: int) -> bool:
    """:func:`_below` in floating point (log-space terms), for large n."""
    if k == 0:
        return False
    if k == n:
        return m <= n
    p = k / n
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    total = math.fsum(
        math.exp(base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
        for i in range(min(m, n + 1))
    )
    return total < 0.025


def minimum_detectable_uplift(units: int, gate: float) -> Mde:
    """The MDE of ``units`` (≥ 1) task units under ``--min-uplift gate`` (exact on the gate's
    decimal form)."""
    if units < 1:
        raise ValueError("the minimum detectable uplift needs at least one unit")
    needed = math.ceil(Fraction(repr(gate)) * units)  # j* ≥ X·n ⟺ j* ≥ ⌈X·n⌉
    low, high = 0, units  # k = n always qualifies (J = n; X ≤ 1)
    while low < high:
        middle = (low + high) // 2
        if _below(units, middle, needed):
            high = middle
        else:
            low = middle + 1
    return Mde(units, gate, low, low / units)
