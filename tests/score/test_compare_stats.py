"""The comparison statistics against hand-computed values (undefined-F1 resamples included),
the monotonicity the early stop relies on (hypothesis), and the settle check's soundness by
enumerating every completion of small runs (docs/comparison.md)."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from skill_evals.plan.settle import Settler
from skill_evals.plan.settle_state import SettleGates
from skill_evals.run.observations import Observation
from skill_evals.score.compare import (
    CompareGates,
    comparison_section,
    f1_fraction,
    resample_f1_difference,
)
from skill_evals.score.stats import Mulberry32, bootstrap_interval, resample_sums_many
from skill_evals.suite.cases import CaseSuite, load_cases
from tests.conftest import write_jsonl

SKILL = "refund-policy"


def _obs(case: str, arm: str, trigger: bool, exit_code: int = 0, trial: int = 1) -> Observation:
    return Observation(case, trial, arm, (SKILL,) if trigger else (), "x", exit_code)  # type: ignore[arg-type]


def _suite(tmp: Path, labels: list[bool], task: bool = False) -> CaseSuite:
    records = []
    for i, expect in enumerate(labels):
        record: dict[str, object] = {
            "id": f"c{i}",
            "prompt": f"prompt {i}",
            "expectTrigger": expect,
        }
        if task:
            record["task"] = {"check": "exit_code", "expected": 0}
        records.append(record)
    return load_cases(write_jsonl(tmp / "cases.jsonl", records), SKILL)


def _naive_f1(tp: int, fp: int, fn: int) -> Fraction | None:
    """F1 = 2PR/(P+R) with the null rules, written out from the definition."""
    if tp + fp == 0 or tp + fn == 0:
        return None
    p, r = Fraction(tp, tp + fp), Fraction(tp, tp + fn)
    return Fraction(0) if p + r == 0 else 2 * p * r / (p + r)


def test_f1_comparison_by_hand_with_undefined_resamples(tmp_path: Path) -> None:
    # Four one-case units. with: c0 hit, c1 miss (positives), c2 false trigger, c3 clean.
    # baseline: c0 miss, c1 hit, c2 clean, c3 clean.
    suite = _suite(tmp_path, [True, True, False, False])
    observations = [
        _obs("c0", "with", True), _obs("c1", "with", False),
        _obs("c2", "with", True), _obs("c3", "with", False),
        _obs("c0", "baseline", False), _obs("c1", "baseline", True),
        _obs("c2", "baseline", False), _obs("c3", "baseline", False),
    ]  # fmt: skip
    samples, seed = 1000, 42
    block = comparison_section(suite, SKILL, 1, observations, {}, samples, seed, aa=False)
    trigger = block["trigger"]
    # with: TP 1, FP 1, FN 1 → P = R = 1/2 → F1 1/2; baseline: TP 1, FP 0, FN 1 → F1 2/3.
    assert trigger["with"] == {"tp": 1, "fp": 1, "fn": 1, "f1": 0.5}
    assert trigger["baseline"] == {"tp": 1, "fp": 0, "fn": 1, "f1": 2 / 3}
    assert trigger["f1Difference"] == float(Fraction(1, 2) - Fraction(2, 3))
    # The bootstrap, written out: n = 4 draws per resample from one mulberry32 stream.
    per_unit = {  # unit → ((tp, fp, fn) with, (tp, fp, fn) baseline)
        0: ((1, 0, 0), (0, 0, 1)),
        1: ((0, 0, 1), (1, 0, 0)),
        2: ((0, 1, 0), (0, 0, 0)),
        3: ((0, 0, 0), (0, 0, 0)),
    }
    rng = Mulberry32(seed)
    kept: list[Fraction] = []
    dropped = 0
    for _ in range(samples):
        sums = [[0, 0, 0], [0, 0, 0]]
        for _ in range(4):
            unit = math.floor(rng.next_float() * 4)
            for arm in (0, 1):
                for i in range(3):
                    sums[arm][i] += per_unit[unit][arm][i]
        f_with, f_base = _naive_f1(*sums[0]), _naive_f1(*sums[1])
        if f_with is None or f_base is None:
            dropped += 1
        else:
            kept.append(f_with - f_base)
    kept.sort()
    kept_n = len(kept)
    lower = kept[math.floor(Fraction(1, 40) * (kept_n - 1))]
    upper = kept[math.ceil(Fraction(39, 40) * (kept_n - 1))]
    assert dropped > 0  # some resamples hold no true positive and no false trigger
    interval = trigger["interval"]
    assert interval["undefinedResamples"] == dropped
    assert (interval["lower"], interval["upper"]) == (float(lower), float(upper))
    assert block["task"] is None and block["aa"] is False


def test_task_comparison_by_hand(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [True] * 10, task=True)
    # with passes every case; baseline fails c0..c3 in both trials, c4 in trial 1 only.
    passes: dict[tuple[str, str], list[bool | None]] = {}
    for i in range(10):
        passes[(f"c{i}", "with")] = [True, True]
        passes[(f"c{i}", "baseline")] = (
            [False, False] if i < 4 else [False, True] if i == 4 else [True, True]
        )
    block = comparison_section(suite, SKILL, 2, [], passes, 1000, 42, aa=False)
    task = block["task"]
    d = [Fraction(1)] * 4 + [Fraction(1, 2)] + [Fraction(0)] * 5  # d_u per unit
    assert task["difference"] == float(sum(d) / 10) == 0.45
    assert task["with"] == {"passed": 20, "total": 20, "passRate": 1.0}
    assert task["baseline"] == {"passed": 11, "total": 20, "passRate": 0.55}
    interval = bootstrap_interval(d, 1000, 42)
    assert (task["interval"]["lower"], task["interval"]["upper"]) == (
        interval.lower,
        interval.upper,
    )
    # sign test: 5 positive, 0 negative → p = 2 · C(5,0) / 2^5 = 1/16
    assert task["signTest"] == {"positive": 5, "negative": 0, "ties": 5, "pValue": 1 / 16}
    assert task["insufficient"] is False


# ------------------------------------------------------------------------------- monotone

_fractions = st.fractions(min_value=-1, max_value=1, max_denominator=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(_fractions, min_size=1, max_size=8), st.data())
def test_adding_a_pass_never_lowers_a_bootstrap_percentile(
    values: list[Fraction], data: st.DataObject
) -> None:
    # A pass in unit u (with passing, or the other arm failing) raises d_u.
    index = data.draw(st.integers(0, len(values) - 1))
    raised = list(values)
    raised[index] = min(Fraction(1), raised[index] + data.draw(_fractions.filter(lambda f: f > 0)))
    seed = data.draw(st.integers(0, 2**32 - 1))
    before = bootstrap_interval(values, 1000, seed)
    after = bootstrap_interval(raised, 1000, seed)
    assert after.lower >= before.lower and after.upper >= before.upper


_counts = st.integers(0, 6)


@given(_counts, _counts, _counts)
def test_f1_rises_with_every_right_outcome(tp: int, fp: int, fn: int) -> None:
    f1 = f1_fraction(tp, fp, fn)
    assert f1 == _naive_f1(tp, fp, fn)
    if fn:  # a miss turned into a hit
        hit = f1_fraction(tp + 1, fp, fn - 1)
        assert hit is not None and (f1 is None or hit >= f1)
    if fp:  # a false trigger turned into a clean run
        clean = f1_fraction(tp, fp - 1, fn)
        assert f1 is None or clean is None or clean >= f1


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(*[_counts] * 6), min_size=1, max_size=5),
    st.data(),
)
def test_f1_difference_per_resample_is_monotone(
    units: list[tuple[int, ...]], data: st.DataObject
) -> None:
    # with's miss turned into a hit in one unit: every resample's difference that is defined
    # before and after does not fall, and its with-F1 never becomes undefined.
    index = data.draw(st.integers(0, len(units) - 1))
    if units[index][2] == 0:
        return
    better = list(units)
    u = list(better[index])
    u[0], u[2] = u[0] + 1, u[2] - 1
    better[index] = tuple(u)

    def per_resample(rows: list[tuple[int, ...]]) -> list[Fraction | None]:
        vectors = [[row[i] for row in rows] for i in range(6)]
        out: list[Fraction | None] = []
        for s in resample_sums_many(vectors, 1000, 3):
            a, b = f1_fraction(*s[0:3]), f1_fraction(*s[3:6])
            out.append(None if a is None or b is None else a - b)
        return out

    for old, new in zip(per_resample(units), per_resample(better), strict=True):
        if old is not None and new is not None:
            assert new >= old
    kept, dropped = resample_f1_difference(
        [((r[0], r[1], r[2]), (r[3], r[4], r[5])) for r in units], 1000, 3
    )
    assert len(kept) + dropped == 1000


def test_resample_sums_many_matches_one_vector_at_a_time() -> None:
    vectors = [[3, 0, 5, 1], [0, 2, 2, 7], [1, 1, 1, 1]]
    together = resample_sums_many(vectors, 1000, 9, accelerate=False)
    fast = resample_sums_many(vectors, 1000, 9)
    assert together == fast
    rng = Mulberry32(9)
    for sums in together[:50]:
        drawn = [math.floor(rng.next_float() * 4) for _ in range(4)]
        assert sums == tuple(sum(v[i] for i in drawn) for v in vectors)


# ---------------------------------------------------------------------------- soundness


def _settler(suite: CaseSuite, gates: SettleGates, arms: tuple[str, ...]) -> Settler:
    planned = [(c.id, 1, arm) for c in suite.cases for arm in arms]
    return Settler(
        suite,
        planned,  # type: ignore[arg-type]
        SKILL,
        gates,
        1000,
        5,
        lambda case, obs: obs.exit_code == 0,
    )


def _final_uplift_lower(outcomes: dict[tuple[str, str], bool], n: int) -> float:
    d = [
        Fraction(int(outcomes[(f"c{i}", "with")])) - int(outcomes[(f"c{i}", "without")])
        for i in range(n)
    ]
    return bootstrap_interval(d, 1000, 5).lower


def test_a_settled_uplift_verdict_holds_in_every_completion(tmp_path: Path) -> None:
    n = 10
    suite = _suite(tmp_path, [True] * n, task=True)
    keys = [(f"c{i}", arm) for i in range(n) for arm in ("with", "without")]
    rng = random.Random(11)
    checked = settled_seen = 0
    for _ in range(40):
        threshold = rng.choice([-0.2, 0.0, 0.3, 0.6])
        truth = {key: rng.random() < (0.8 if key[1] == "with" else 0.3) for key in keys}
        remaining = rng.sample(keys, rng.randint(1, 5))
        settler = _settler(suite, SettleGates(min_uplift=threshold), ("with", "without"))
        for key in keys:
            if key not in remaining:
                settler.observe(
                    (key[0], 1, key[1]), _obs(key[0], key[1], True, 0 if truth[key] else 1)
                )  # type: ignore[arg-type]
        verdict = settler.decide(settler.snapshot(), force=True)
        finals = set()
        for bits in itertools.product([False, True], repeat=len(remaining)):
            outcome = dict(truth)
            outcome.update(zip(remaining, bits, strict=True))
            finals.add(_final_uplift_lower(outcome, n) >= threshold)
        checked += 1
        if verdict is not None:
            settled_seen += 1
            assert finals == {verdict["minUplift"]}
        else:  # forced, the check is exact: open means some completion passes, some fails
            assert len(finals) == 2
    assert checked == 40 and settled_seen > 5


def test_a_settled_trigger_verdict_holds_in_every_completion(tmp_path: Path) -> None:
    labels = [True] * 6 + [False] * 4
    suite = _suite(tmp_path, labels)
    rng = random.Random(3)
    settled_seen = 0
    for _ in range(60):
        threshold = rng.choice([0.5, 0.7, 0.9])
        truth = {f"c{i}": rng.random() < (0.85 if labels[i] else 0.2) for i in range(10)}
        remaining = rng.sample(sorted(truth), rng.randint(1, 6))
        settler = _settler(suite, SettleGates(min_trigger_f1=threshold), ("with",))
        for case_id, hit in truth.items():
            if case_id not in remaining:
                settler.observe((case_id, 1, "with"), _obs(case_id, "with", hit))
        verdict = settler.decide(settler.snapshot(), force=True)
        finals = set()
        for bits in itertools.product([False, True], repeat=len(remaining)):
            hits = dict(truth)
            hits.update(zip(remaining, bits, strict=True))
            tp = sum(1 for i, label in enumerate(labels) if label and hits[f"c{i}"])
            fp = sum(1 for i, label in enumerate(labels) if not label and hits[f"c{i}"])
            f1 = _naive_f1(tp, fp, 6 - tp)
            finals.add(None if f1 is None else float(f1) >= threshold)
        if verdict is not None:
            settled_seen += 1
            assert finals == {verdict["minTriggerF1"]}
        else:
            assert len(finals) > 1  # the trigger check is exact: open means open
    assert settled_seen > 10


def test_a_settled_f1_difference_verdict_holds_in_every_completion(tmp_path: Path) -> None:
    labels = [True] * 5 + [False] * 3
    suite = _suite(tmp_path, labels)
    keys = [(f"c{i}", arm) for i in range(8) for arm in ("with", "baseline")]
    rng = random.Random(5)
    settled_seen = 0
    for _ in range(60):
        threshold = rng.choice([0.0, 0.2, 0.5])
        truth = {key: rng.random() < (0.9 if labels[int(key[0][1:])] else 0.15) for key in keys}
        remaining = rng.sample(keys, rng.randint(1, 3))
        settler = _settler(
            suite,
            SettleGates(compare=CompareGates(max_f1_drop=threshold)),
            ("with", "baseline"),
        )
        for key in keys:
            if key not in remaining:
                settler.observe((key[0], 1, key[1]), _obs(key[0], key[1], truth[key]))  # type: ignore[arg-type]
        verdict = settler.decide(settler.snapshot(), force=True)
        if verdict is None:
            continue
        settled_seen += 1
        finals = set()
        for bits in itertools.product([False, True], repeat=len(remaining)):
            hits = dict(truth)
            hits.update(zip(remaining, bits, strict=True))
            observations = [_obs(c, arm, hit) for (c, arm), hit in hits.items()]
            block = comparison_section(suite, SKILL, 1, observations, {}, 1000, 5, aa=False)
            upper = block["trigger"]["interval"]["upper"]
            finals.add(None if upper is None else upper >= -threshold)
        assert finals == {verdict["maxF1Drop"]}
    assert settled_seen > 3
