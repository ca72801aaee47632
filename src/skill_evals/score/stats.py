"""Statistics: mulberry32, percentile bootstrap, exact sign test, trigger metrics
(docs/statistics.md).

Owner: scoring.

Exactness: every per-unit difference d_u is a rational number (a difference of two pass
fractions). The bootstrap turns them into integer numerators over one common denominator, so a
resample's sum is an exact integer and sorting the B resample means cannot be disturbed by
floating-point rounding. Only the two chosen order statistics are converted to floats, each
rounded once (correctly) by Python's int/int true division. See docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

Number = int | float | Fraction

_MASK = 0xFFFFFFFF
_GOLDEN = 0x6D2B79F5  # mulberry32's Weyl-sequence increment


class Mulberry32:
    """The mulberry32 generator, bit-exact with the JavaScript reference.

    JavaScript's ``Math.imul`` and ``>>>`` act on the low 32 bits, so every step below is the
    same arithmetic on Python ints masked to 32 bits (signedness only changes how the same bit
    pattern is printed, never the bits)."""

    def __init__(self, seed: int) -> None:
        if not 0 <= seed <= _MASK:
            raise ValueError(f"seed must be within 0..{_MASK}, got {seed}")
        self._state = seed

    def next_uint32(self) -> int:
        """Next draw as the unsigned 32-bit integer u; the float draw is u / 2**32."""
        s = self._state = (self._state + _GOLDEN) & _MASK
        t = ((s ^ (s >> 15)) * (s | 1)) & _MASK  # t = imul(t ^ t >>> 15, t | 1)
        # t ^= t + imul(t ^ t >>> 7, t | 61): only the low 32 bits of the sum matter.
        t = (t ^ (t + (((t ^ (t >> 7)) * (t | 61)) & _MASK))) & _MASK
        return t ^ (t >> 14)

    def next_float(self) -> float:
        """Next draw in [0, 1)."""
        return self.next_uint32() / 4294967296


@dataclass(frozen=True)
class Interval:
    lower: float
    upper: float


def percentile_positions(samples: int) -> tuple[int, int]:
    """The sorted-means positions ``floor(0.025 (B-1))`` and ``ceil(0.975 (B-1))``, computed
    with integers (0.025 = 1/40, 0.975 = 39/40) so no float artefact can move them."""
    if samples < 1:
        raise ValueError("samples must be at least 1")
    k = samples - 1
    return k // 40, -((-39 * k) // 40)


def _common_numerators(values: Sequence[Number]) -> tuple[list[int], int]:
    """Write every value as numerator / denominator with one common denominator."""
    fractions = [Fraction(v) for v in values]
    denominator = 1
    for f in fractions:
        denominator = denominator * f.denominator // math.gcd(denominator, f.denominator)
    return [f.numerator * (denominator // f.denominator) for f in fractions], denominator


def bootstrap_interval(
    values: Sequence[Number], samples: int, seed: int, *, accelerate: bool = True
) -> Interval:
    """Percentile bootstrap of the mean, exactly as docs/statistics.md describes it. O(samples × n).

    ``values`` are the per-unit differences in case-file order of each unit's first case.
    Resample b draws n indices ``floor(draw × n)`` from one mulberry32 stream seeded with
    ``seed`` (draws are consumed resample by resample, index by index). With ``accelerate``
    the sums come from stats_numpy when NumPy is importable (bit-exact; see that module)."""
    n = len(values)
    if n == 0:
        raise ValueError("the bootstrap needs at least one value")
    if n >= 1 << 21:
        raise ValueError("too many values for exact index arithmetic")
    if not 0 <= seed <= _MASK:
        raise ValueError(f"seed must be within 0..{_MASK}, got {seed}")
    lo_pos, hi_pos = percentile_positions(samples)
    numerators, denominator = _common_numerators(values)

    if accelerate:
        from .stats_numpy import resample_sums

        fast = resample_sums(numerators, samples, seed)
        if fast is not None:
            fast.sort()
            scale = n * denominator
            return Interval(lower=fast[lo_pos] / scale, upper=fast[hi_pos] / scale)

    # The hot loop (B × n draws): generator inlined, locals only, integers only.
    # draw × n = u × n / 2**32 is exact in binary64 for n < 2**21, so floor(draw × n) is
    # exactly (u × n) >> 32. The state before draw k is seed + k × increment (mod 2**32), so a
    # range() with the increment as its step walks the state; one mask per draw reduces it.
    step = _GOLDEN
    sums: list[int] = []
    append = sums.append
    start = seed + step
    span = n * step
    for _ in range(samples):
        stop = start + span
        acc = 0
        for s in range(start, stop, step):
            s &= 0xFFFFFFFF
            t = ((s ^ (s >> 15)) * (s | 1)) & 0xFFFFFFFF
            t = (t ^ (t + ((t ^ (t >> 7)) * (t | 61)))) & 0xFFFFFFFF
            acc += numerators[((t ^ (t >> 14)) * n) >> 32]
        append(acc)
        # Keep the range bounds small: restart from the reduced state.
        start = (stop - step) & 0xFFFFFFFF
        start += step
    sums.sort()
    scale = n * denominator
    return Interval(lower=sums[lo_pos] / scale, upper=sums[hi_pos] / scale)


@dataclass(frozen=True)
class SignTest:
    positive: int
    negative: int
    ties: int
    p_value: float | None  # None when there are no nonzero differences


def sign_test(differences: Sequence[Number]) -> SignTest:
    """Exact two-sided sign test on the nonzero differences, computed with integers.

    p = min(1, 2 · Σ_{i=0..k} C(n, i) / 2ⁿ) with n = positives + negatives, k = the smaller
    count; the fraction is exact and rounded to a float once."""
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    ties = len(differences) - positive - negative
    n = positive + negative
    if n == 0:
        return SignTest(positive, negative, ties, None)
    k = min(positive, negative)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    p = min(Fraction(1), Fraction(2 * tail, 2**n))
    return SignTest(positive, negative, ties, float(p))


@dataclass(frozen=True)
class TriggerMetrics:
    """Precision, recall and F1; None where a denominator is zero (undefined, never 0)."""

    precision: float | None
    recall: float | None
    f1: float | None


def exact_f1(tp: int, fp: int, fn: int) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
    """(precision, recall, F1) as exact fractions; None where undefined (see trigger_metrics)."""
    p = Fraction(tp, tp + fp) if tp + fp else None
    r = Fraction(tp, tp + fn) if tp + fn else None
    if p is None or r is None:
        f1: Fraction | None = None
    elif p + r == 0:
        f1 = Fraction(0)
    else:
        f1 = 2 * p * r / (p + r)
    return p, r, f1


def trigger_metrics(tp: int, fp: int, fn: int) -> TriggerMetrics:
    """precision = TP/(TP+FP), recall = TP/(TP+FN), F1 = 2PR/(P+R) (0 when P+R = 0).

    Computed as exact fractions and rounded once, so e.g. F1 = 9/10 is exactly the float 0.9
    and compares as a user expects against ``--min-trigger-f1 0.9``."""
    p, r, f1 = exact_f1(tp, fp, fn)
    return TriggerMetrics(
        precision=None if p is None else float(p),
        recall=None if r is None else float(r),
        f1=None if f1 is None else float(f1),
    )


def exact_mean(values: Sequence[Number]) -> Fraction:
    """The exact mean of ``values`` (which must not be empty)."""
    if not values:
        raise ValueError("mean of no values")
    return sum((Fraction(v) for v in values), Fraction(0)) / len(values)


def resample_sums_many(
    vectors: Sequence[Sequence[int]], samples: int, seed: int, *, accelerate: bool = True
) -> list[tuple[int, ...]]:
    """Per resample b, the sums over its n drawn units of each of the k ``vectors``
    (non-negative integers, one entry per unit): the draws of :func:`bootstrap_interval`
    (one mulberry32 stream seeded with ``seed``, index = floor(draw × n)).

    The pure-Python loop packs a unit's k values into one integer with fields wide enough that
    no sum can carry into the next field, so each draw is one addition whatever k is."""
    k = len(vectors)
    if k == 0:
        raise ValueError("no vectors to sum")
    n = len(vectors[0])
    if n == 0 or any(len(v) != n for v in vectors):
        raise ValueError("the vectors must have one equal, non-zero length")
    if n >= 1 << 21:
        raise ValueError("too many values for exact index arithmetic")
    if any(x < 0 for v in vectors for x in v):
        raise ValueError("the values must be non-negative")
    if not 0 <= seed <= _MASK:
        raise ValueError(f"seed must be within 0..{_MASK}, got {seed}")
    if accelerate:
        from .stats_numpy import resample_sums_many as fast_sums

        fast = fast_sums(vectors, samples, seed)
        if fast is not None:
            return fast
    width = (max(max(v) for v in vectors) * n).bit_length() + 1
    packed = [sum(v[u] << (j * width) for j, v in enumerate(vectors)) for u in range(n)]
    mask = (1 << width) - 1
    step = _GOLDEN
    out: list[tuple[int, ...]] = []
    start = seed + step
    span = n * step
    for _ in range(samples):
        stop = start + span
        acc = 0
        for s in range(start, stop, step):  # the generator inlined, as in bootstrap_interval
            s &= 0xFFFFFFFF
            t = ((s ^ (s >> 15)) * (s | 1)) & 0xFFFFFFFF
            t = (t ^ (t + ((t ^ (t >> 7)) * (t | 61)))) & 0xFFFFFFFF
            acc += packed[((t ^ (t >> 14)) * n) >> 32]
        out.append(tuple((acc >> (j * width)) & mask for j in range(k)))
        start = (stop - step) & 0xFFFFFFFF
        start += step
    return out


def percentiles_of(values: list[Fraction]) -> tuple[Fraction, Fraction] | None:
    """(lower, upper) of the 95 % percentile interval over ``values`` (sorted here):
    values[floor(0.025·(B′−1))], values[ceil(0.975·(B′−1))]; None when there are none."""
    if not values:
        return None
    values.sort()
    lo, hi = percentile_positions(len(values))
    return values[lo], values[hi]
