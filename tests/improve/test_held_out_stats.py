"""The held-out decision's statistics checked against values computed here independently: the
stratified bootstrap of the F1 difference (its own mulberry32, resampling, percentiles and
small-sample widening), the alpha-spending rule's levels, and the per-look levels summing to
5 % however the looks fall; and the rule that keeps near-copies out of the finalists."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from skill_evals.improve.figures import Counts, difference_interval
from skill_evals.improve.held_out import finalists_of
from skill_evals.improve.select import Candidate, near_copy
from skill_evals.improve.sequential import look_alpha, spent, widening
from skill_evals.suite.cases import Case


def _mulberry32(seed: int):  # the documented generator, written out again here
    state = seed

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 2**32

    return draw


# 4 positive units and 3 negative ones; per unit (candidate hits, original hits) of 3 trials.
POSITIVE = [(3, 1), (2, 2), (3, 0), (1, 1)]
NEGATIVE = [(0, 1), (1, 0), (0, 0)]
TRIALS = 3


def _cases() -> list[Case]:
    # Interleaved in the file, so the strata are not simply the first and last units.
    labels = [True, False, True, True, False, True, False]
    return [Case(f"c{i}", f"prompt {i}", label, i + 1, i) for i, label in enumerate(labels)]


def _results() -> tuple[dict[str, list[tuple[bool, tuple[str, ...]]]], ...]:
    new: dict[str, list[tuple[bool, tuple[str, ...]]]] = {}
    old: dict[str, list[tuple[bool, tuple[str, ...]]]] = {}
    pos, neg = iter(POSITIVE), iter(NEGATIVE)
    for case in _cases():
        a, b = next(pos) if case.expect_trigger else next(neg)
        new[case.id] = [(t < a, ()) for t in range(TRIALS)]
        old[case.id] = [(t < b, ()) for t in range(TRIALS)]
    return new, old


def _f1(tp: int, fp: int, fn: int) -> Fraction | None:
    return None if 2 * tp + fp + fn == 0 else Fraction(2 * tp, 2 * tp + fp + fn)


def _expected(samples: int, seed: int, alpha: Fraction) -> tuple[float, float, float]:
    """Positives resampled with mulberry32(seed), negatives with mulberry32(seed + 1), each
    index floor(draw·n); F1 difference per resample; percentile positions floor(α/2·(B'−1))
    and ceil((1−α/2)·(B'−1)); arms stretched by √(n/(n − 2)) around the observed difference."""
    pos_draw, neg_draw = _mulberry32(seed), _mulberry32(seed + 1)
    diffs = []
    for _ in range(samples):
        tp_n = fn_n = tp_o = fn_o = fp_n = fp_o = 0
        for _ in POSITIVE:
            a, b = POSITIVE[math.floor(pos_draw() * len(POSITIVE))]
            tp_n, fn_n, tp_o, fn_o = tp_n + a, fn_n + TRIALS - a, tp_o + b, fn_o + TRIALS - b
        for _ in NEGATIVE:
            a, b = NEGATIVE[math.floor(neg_draw() * len(NEGATIVE))]
            fp_n, fp_o = fp_n + a, fp_o + b
        x, y = _f1(tp_n, fp_n, fn_n), _f1(tp_o, fp_o, fn_o)
        if x is not None and y is not None:
            diffs.append(x - y)
    diffs.sort()
    k = len(diffs) - 1
    lo, hi = diffs[math.floor(alpha / 2 * k)], diffs[math.ceil((1 - alpha / 2) * k)]
    tp_n = sum(a for a, _ in POSITIVE)
    tp_o = sum(b for _, b in POSITIVE)
    observed = _f1(tp_n, sum(a for a, _ in NEGATIVE), 4 * TRIALS - tp_n)
    observed_old = _f1(tp_o, sum(b for _, b in NEGATIVE), 4 * TRIALS - tp_o)
    assert observed is not None and observed_old is not None
    d = observed - observed_old
    stretch = math.sqrt(7 / 5)
    return float(d - stretch * (d - lo)), float(d + stretch * (hi - d)), float(d)


@pytest.mark.parametrize("alpha", [Fraction(1, 20), Fraction(1, 80)])
def test_the_interval_resamples_each_label_apart_and_widens_for_few_units(
    alpha: Fraction,
) -> None:
    new, old = _results()
    got = difference_interval(_cases(), new, old, 2000, 42, alpha)
    lower, upper, observed = _expected(2000, 42, alpha)
    assert got.lower == pytest.approx(lower, abs=1e-12)
    assert got.upper == pytest.approx(upper, abs=1e-12)
    assert got.lower is not None and got.lower < observed < (got.upper or 0)
    assert got.undefined == 0


def test_the_widening_is_the_unbiased_spread_over_the_plug_in_one() -> None:
    assert widening(10, 2) == pytest.approx(math.sqrt(10 / 8))
    assert widening(7, 2) == pytest.approx(1.1832159566199232)
    assert widening(2, 2) is None and widening(1, 1) is None


def test_the_spending_rule_shares_five_percent_between_the_looks() -> None:
    # α·ln(1 + (e − 1)·t), values worked out by hand: ln(1 + 1.718281828/3) = 0.452832425...
    assert spent(1 / 3, 0.05) == pytest.approx(0.05 * 0.45283242526394133)
    assert spent(1.0, 0.05) == pytest.approx(0.05)
    assert spent(0.0, 0.05) == 0.0 and spent(2.0, 0.05) == pytest.approx(0.05)
    levels = [look_alpha(k - 1, k, 3, 0.05) for k in (1, 2, 3)]
    assert levels == pytest.approx([0.022641621263, 0.015527504506, 0.011830874230], abs=1e-11)
    assert sum(levels) == pytest.approx(0.05)
    assert look_alpha(0, 1, 1, 0.05) == pytest.approx(0.05)  # one planned look: all of it


def _candidate(round_: int, description: str, score: str) -> Candidate:
    return Candidate(round_, description, "", {}, Counts(), Fraction(score))


def test_a_near_copy_of_a_better_finalist_gives_its_place_to_the_next_distinct_one() -> None:
    base = "Audit supplier invoices - check totals and tax lines. Also for: billing, refund"
    first = _candidate(1, base + ", statement.", "0.6")
    # The same 10 words plus one ("audits") and a repeated one: a near-copy of the first.
    copy = _candidate(3, base + ", statement. Also for: audits, refund.", "0.5")
    other = _candidate(2, "Audit receipts and card statements: totals and tax lines.", "0.2")
    below = _candidate(4, "Something else entirely, never ranked above zero.", "0")
    assert near_copy(first, copy) and not near_copy(first, other)
    # Of the words of 4 characters or more either has, 9 in 10 shared: a near-copy. 9 words
    # and one more (9/10), yes; two more (9/11) or a short one changing a word (3/5), no.
    nine = "audit supplier invoices check totals lines billing refund statement"
    assert near_copy(_candidate(5, nine, "0.1"), _candidate(6, nine + " duplicate", "0.1"))
    assert not near_copy(_candidate(5, nine, "0.1"), _candidate(6, nine + " duplicate card", "0.1"))
    assert not near_copy(_candidate(5, "Audit invoice and receipt totals", "0.1"),
                         _candidate(6, "Audit invoice, billing totals", "0.1"))  # fmt: skip
    assert near_copy(_candidate(5, "Totals, audit!", "0.1"), _candidate(6, "audit totals", "0.1"))
    assert [c.round for c in finalists_of([first, copy, other, below], 2)] == [1, 2]
    # With room for more, the copy still stays out; with one place, only the best.
    assert [c.round for c in finalists_of([copy, first, other], 3)] == [1, 2]
    assert [c.round for c in finalists_of([other, copy, first], 1)] == [1]
