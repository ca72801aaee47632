"""Statistics: mulberry32, the percentile bootstrap, the sign test, trigger metrics."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skill_evals.score.stats import (
    Mulberry32,
    bootstrap_interval,
    percentile_positions,
    sign_test,
    trigger_metrics,
)

# ---------------------------------------------------------------- an independent reference
# Written the way the JavaScript reference reads: every operand converted with ToInt32 /
# ToUint32 exactly as the JS operators do, Math.imul on signed 32-bit values, the float draw
# multiplied by n and floored. Nothing is shared with the implementation under test.


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _uint32(x: int) -> int:
    return x & 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return _int32(_int32(a) * _int32(b))


def _xor(a: int, b: int) -> int:
    return _int32(_int32(a) ^ _int32(b))


def _or(a: int, b: int) -> int:
    return _int32(_int32(a) | _int32(b))


def _urshift(a: int, n: int) -> int:
    return _uint32(a) >> n


class JsMulberry32:
    def __init__(self, seed: int) -> None:
        self.a = seed

    def next(self) -> float:
        self.a = (self.a + 0x6D2B79F5) % 2**32
        t = self.a
        t = _imul(_xor(t, _urshift(t, 15)), _or(t, 1))
        t = _xor(t, t + _imul(_xor(t, _urshift(t, 7)), _or(t, 61)))
        return _urshift(_xor(t, _urshift(t, 14)), 0) / 4294967296


def reference_bootstrap(values: list[Fraction], samples: int, seed: int) -> tuple[float, float]:
    gen = JsMulberry32(seed)
    n = len(values)
    means = []
    for _ in range(samples):
        total = Fraction(0)
        for _ in range(n):
            total += values[math.floor(gen.next() * n)]
        means.append(total / n)
    means.sort()
    lower = means[math.floor(0.025 * (samples - 1))]
    upper = means[math.ceil(0.975 * (samples - 1))]
    return float(lower), float(upper)


# ------------------------------------------------------------------------------ mulberry32


def test_mulberry32_reference_draws_for_seed_42() -> None:
    gen = Mulberry32(42)
    assert [gen.next_float() for _ in range(3)] == [
        0.6011037519201636,
        0.44829055899754167,
        0.8524657934904099,
    ]


@given(st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=200)
def test_mulberry32_matches_javascript_semantics(seed: int) -> None:
    ours, js = Mulberry32(seed), JsMulberry32(seed)
    for _ in range(20):
        assert ours.next_float() == js.next()


def test_mulberry32_state_wraps_at_2_32() -> None:
    gen = Mulberry32(2**32 - 1)
    draws = [gen.next_float() for _ in range(5)]
    js = JsMulberry32(2**32 - 1)
    assert draws == [js.next() for _ in range(5)]
    assert all(0 <= d < 1 for d in draws)


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_mulberry32_rejects_seed_out_of_range(seed: int) -> None:
    with pytest.raises(ValueError, match="seed"):
        Mulberry32(seed)


# ------------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize(
    ("samples", "expected"),
    [(1000, (24, 975)), (10_000, (249, 9750)), (1, (0, 0)), (41, (1, 39))],
)
def test_percentile_positions(samples: int, expected: tuple[int, int]) -> None:
    assert percentile_positions(samples) == expected


def test_percentile_positions_agree_with_float_formula_over_allowed_range() -> None:
    for samples in [*range(1000, 5001), 10_000, 99_999, 100_001, 1_000_000]:
        lo, hi = percentile_positions(samples)
        assert lo == math.floor(0.025 * (samples - 1))
        assert hi == math.ceil(0.975 * (samples - 1))


HAND_DIFFERENCES = [1, 0.5, 0.5, 0, -0.5, 1, 0.5, 0, 1, 0.5]


def test_bootstrap_matches_reference_on_the_hand_example() -> None:
    values = [Fraction(v) for v in HAND_DIFFERENCES]
    expected = reference_bootstrap(values, 1000, 42)
    interval = bootstrap_interval(HAND_DIFFERENCES, 1000, 42)
    assert (interval.lower, interval.upper) == expected
    # Pinned so a change of draw order, indexing or percentile positions shows up as a diff.
    assert (interval.lower, interval.upper) == (0.15, 0.75)


def test_bootstrap_first_resample_uses_the_seed_42_draws() -> None:
    # n = 10: indexes floor(0.6011 × 10) = 6, floor(0.4483 × 10) = 4, floor(0.8525 × 10) = 8.
    gen = Mulberry32(42)
    assert [math.floor(gen.next_float() * 10) for _ in range(3)] == [6, 4, 8]
    # B = 1 → the interval is that single resample's mean.
    values = [10**k for k in range(10)]
    gen = Mulberry32(42)
    indexes = [math.floor(gen.next_float() * 10) for _ in range(10)]
    interval = bootstrap_interval(values, 1, 42)
    assert interval.lower == interval.upper == sum(values[i] for i in indexes) / 10


@given(
    st.lists(st.fractions(min_value=-1, max_value=1, max_denominator=12), min_size=1, max_size=25),
    st.integers(min_value=1, max_value=80),
    st.integers(min_value=0, max_value=2**32 - 1),
)
@settings(max_examples=30, deadline=None)
def test_bootstrap_matches_reference(values: list[Fraction], samples: int, seed: int) -> None:
    interval = bootstrap_interval(values, samples, seed)
    assert (interval.lower, interval.upper) == reference_bootstrap(values, samples, seed)


def test_bootstrap_means_are_exact_not_float_sums() -> None:
    # Thirds summed as floats drift (0.1 + 0.2 style); the exact mean of a resample of
    # identical values is the value itself, correctly rounded once.
    third = Fraction(1, 3)
    interval = bootstrap_interval([third] * 7, 1000, 9)
    assert interval.lower == interval.upper == 1 / 3
    interval = bootstrap_interval([0.1] * 10, 1000, 3)
    assert interval.lower == interval.upper == 0.1


def test_bootstrap_interval_is_ordered_and_within_range() -> None:
    values = [1, -1, 0.5, 0, 0, 1, 1, -0.5, 0.25, 0.75, 1, 0]
    interval = bootstrap_interval(values, 2000, 7)
    assert min(values) <= interval.lower <= interval.upper <= max(values)


def test_bootstrap_rejects_no_values() -> None:
    with pytest.raises(ValueError):
        bootstrap_interval([], 1000, 42)


# ------------------------------------------------------------------------------- sign test


@pytest.mark.parametrize(
    ("pos", "neg", "p"),
    [
        (10, 0, 0.001953125),
        (9, 1, 0.021484375),
        (8, 2, 0.109375),
        (5, 0, 0.0625),
        (0, 10, 0.001953125),
    ],
)
def test_sign_test_exact_values(pos: int, neg: int, p: float) -> None:
    result = sign_test([0.5] * pos + [-1] * neg + [0, 0.0])
    assert (result.positive, result.negative, result.ties) == (pos, neg, 2)
    assert result.p_value == p


def test_sign_test_is_capped_at_one_and_null_without_nonzero() -> None:
    assert sign_test([1, -1, 1, -1]).p_value == 1.0
    assert sign_test([1, -1]).p_value == 1.0
    empty = sign_test([0, 0, 0])
    assert empty.p_value is None and empty.ties == 3
    assert sign_test([]).p_value is None


def test_sign_test_large_n_is_exact() -> None:
    # 60 vs 40: p = 2 · Σ_{i≤40} C(100, i) / 2^100, computed independently.
    tail = sum(math.comb(100, i) for i in range(41))
    expected = float(Fraction(2 * tail, 2**100))
    assert sign_test([1] * 60 + [-1] * 40).p_value == expected


# --------------------------------------------------------------------------------- trigger


def test_trigger_metrics_basic() -> None:
    m = trigger_metrics(tp=15, fp=1, fn=1)
    assert (m.precision, m.recall, m.f1) == (0.9375, 0.9375, 0.9375)


def test_trigger_metrics_f1_is_rounded_once() -> None:
    # P = 9/10, R = 9/10 → F1 = 9/10 exactly: must compare equal to a 0.9 threshold.
    m = trigger_metrics(tp=9, fp=1, fn=1)
    assert m.f1 == 0.9
    m = trigger_metrics(tp=2, fp=1, fn=3)  # P = 2/3, R = 2/5 → F1 = 1/2
    assert m.f1 == 0.5


def test_trigger_metrics_nulls_and_zero() -> None:
    nothing_triggered = trigger_metrics(tp=0, fp=0, fn=4)
    assert nothing_triggered.precision is None and nothing_triggered.recall == 0.0
    assert nothing_triggered.f1 is None
    no_positives = trigger_metrics(tp=0, fp=3, fn=0)
    assert no_positives.recall is None and no_positives.precision == 0.0
    assert no_positives.f1 is None
    both_zero = trigger_metrics(tp=0, fp=2, fn=2)
    assert (both_zero.precision, both_zero.recall, both_zero.f1) == (0.0, 0.0, 0.0)
