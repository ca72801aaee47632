"""The held-out decision's statistics checked against values computed here independently: the
permutation test of the F1 difference (its own mulberry32, relabelling of each case's trials,
p-value and bounds), its level kept for a non-gain, the looks' shares of 5 %; and the
rule that keeps near-copies out of the finalists."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from skill_evals.improve.figures import Counts, PermutationTest
from skill_evals.improve.held_out import finalists_of
from skill_evals.improve.select import Candidate, near_copy
from skill_evals.improve.sequential import look_alpha
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


# 4 positive cases and 3 negative ones; per case (candidate hits, original hits) of 3 trials.
POSITIVE = [(3, 1), (2, 2), (3, 0), (1, 1)]
NEGATIVE = [(0, 1), (1, 0), (0, 0)]
TRIALS = 3


def _cases() -> list[Case]:
    # Interleaved in the file: the relabelling draws follow the case-file order.
    labels = [True, False, True, True, False, True, False]
    return [Case(f"c{i}", f"prompt {i}", label, i + 1, i) for i, label in enumerate(labels)]


def _counts() -> list[tuple[bool, int, int]]:
    pos, neg = iter(POSITIVE), iter(NEGATIVE)
    return [(c.expect_trigger, *(next(pos) if c.expect_trigger else next(neg))) for c in _cases()]


def _results() -> tuple[dict[str, list[tuple[bool, tuple[str, ...]]]], ...]:
    new: dict[str, list[tuple[bool, tuple[str, ...]]]] = {}
    old: dict[str, list[tuple[bool, tuple[str, ...]]]] = {}
    for case, (_, a, b) in zip(_cases(), _counts(), strict=True):
        new[case.id] = [(t < a, ()) for t in range(TRIALS)]
        old[case.id] = [(t < b, ()) for t in range(TRIALS)]
    return new, old


def _f1(tp: int, fp: int, fn: int) -> Fraction | None:
    return None if 2 * tp + fp + fn == 0 else Fraction(2 * tp, 2 * tp + fp + fn)


def _difference(counts: list[tuple[bool, int, int]]) -> Fraction:
    tp_n = sum(a for label, a, _ in counts if label)
    tp_o = sum(b for label, _, b in counts if label)
    positives = TRIALS * sum(1 for label, _, _ in counts if label)
    x = _f1(tp_n, sum(a for label, a, _ in counts if not label), positives - tp_n)
    y = _f1(tp_o, sum(b for label, _, b in counts if not label), positives - tp_o)
    assert x is not None and y is not None
    return x - y


def _relabelled(draw, counts: list[tuple[bool, int, int]]) -> list[tuple[bool, int, int]]:
    """Each case's pooled hits dealt out again: the 2·TRIALS trials shuffled (Fisher-Yates,
    written out here differently from the engine's cumulative weights, so only the law of the
    draws is shared) — the candidate's hits are the hits among the first TRIALS."""
    out = []
    for label, a, b in counts:
        hits = a + b
        # The chance of k hits for the candidate: C(H, k)·C(2T − H, T − k) / C(2T, T).
        weights = [math.comb(hits, k) * math.comb(2 * TRIALS - hits, TRIALS - k)
                   for k in range(TRIALS + 1)]  # fmt: skip
        point, k = draw() * sum(weights), 0
        while point >= weights[k]:
            point -= weights[k]
            k += 1
        out.append((label, k, hits - k))
    return out


def _expected(samples: int, seed: int, alpha: Fraction) -> tuple[float, float, float]:
    """The relabellings drawn in case-file order from one mulberry32(seed); p = (1 + the
    relabelled differences ≥ observed) / (1 + B); bounds the observed minus the (m+1)-th
    largest and smallest, m = ⌊α·(B + 1)⌋ − 1."""
    draw = _mulberry32(seed)
    counts = _counts()
    observed = _difference(counts)
    null = sorted(_difference(_relabelled(draw, counts)) for _ in range(samples))
    p = (1 + sum(1 for d in null if d >= observed)) / (1 + samples)
    m = math.floor(alpha * (samples + 1)) - 1
    return float(observed - null[samples - 1 - m]), float(observed - null[m]), p


@pytest.mark.parametrize("alpha", [Fraction(1, 20), Fraction(1, 80)])
def test_the_permutation_test_relabels_each_case_s_trials_and_bounds_at_its_level(
    alpha: Fraction,
) -> None:
    new, old = _results()
    test = PermutationTest(_cases(), new, old, 2000, 42)
    got = test.interval(alpha)
    lower, upper, p = _expected(2000, 42, alpha)
    assert got.lower == pytest.approx(lower, abs=1e-12)
    assert got.upper == pytest.approx(upper, abs=1e-12)
    assert test.p_value == pytest.approx(p, abs=1e-12) and got.p_value == test.p_value
    assert got.undefined == 0
    # The lower bound is above 0 exactly when the p-value is within the level.
    assert (got.lower > 0) is (p <= alpha)


def test_the_permutation_test_keeps_a_non_gain_within_its_level() -> None:
    """No difference between the descriptions: over many seeds of the draws and of the trial
    outcomes, the share of lower bounds above 0 stays within the level (exact, not asymptotic)."""
    rng = random.Random(7)
    cases = _cases()
    accepted = 0
    for run in range(200):
        chance = {c.id: rng.uniform(0.1, 0.9) for c in cases}
        new = {c.id: [(rng.random() < chance[c.id], ()) for _ in range(TRIALS)] for c in cases}
        old = {c.id: [(rng.random() < chance[c.id], ()) for _ in range(TRIALS)] for c in cases}
        accepted += (
            PermutationTest(cases, new, old, 1000, run).interval(Fraction(1, 10)).lower or 0
        ) > 0
    assert accepted / 200 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 200)


def test_too_few_relabellings_for_the_level_claim_no_bound() -> None:
    new, old = _results()
    got = PermutationTest(_cases(), new, old, 1000, 1).interval(Fraction(1, 2000))
    assert got.lower is None and got.upper is None


def test_the_planned_looks_share_five_percent_growing_with_the_look() -> None:
    # Look k of L gets α·k / (1 + 2 + … + L): 1/6, 2/6 and 3/6 of 5 % for three looks.
    levels = [look_alpha(k - 1, k, 3, 0.05) for k in (1, 2, 3)]
    assert levels == pytest.approx([0.05 / 6, 0.05 * 2 / 6, 0.05 * 3 / 6])
    assert sum(levels) == pytest.approx(0.05)
    assert [look_alpha(k - 1, k, 2, 0.05) for k in (1, 2)] == pytest.approx([0.05 / 3, 0.1 / 3])
    assert look_alpha(0, 1, 1, 0.05) == pytest.approx(0.05)  # one planned look: all of it
    assert look_alpha(1, 3, 3, 0.05) == pytest.approx(0.05 * 5 / 6)  # a skipped look's shares
    with pytest.raises(ValueError):
        look_alpha(2, 2, 3, 0.05)


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
