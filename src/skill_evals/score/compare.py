"""The comparison with a baseline version of the skill (docs/comparison.md): the report's
``comparison`` block and its four gates.

Trigger: F1 of ``with`` and of ``baseline``, each over its own observations, and the difference
with − baseline with a 95 % percentile-bootstrap interval over units. Each resample draws n
units with replacement (mulberry32 seeded with --seed, the uplift's draws), sums TP, FP and FN of
the drawn units' observations per arm and takes the difference of the two F1; a resample where
either F1 is undefined is dropped and counted (``undefinedResamples``), and the percentiles are
taken over the B′ kept ones. Every F1 is an exact fraction, so sorting is exact.

Task: per unit d_u = mean pass (with) − mean pass (baseline); difference, interval and sign test
exactly as the uplift's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..codes import UNAVAILABLE
from ..run.observations import Observation
from ..suite.cases import MIN_UNITS, CaseSuite
from .gates import (
    MAX_F1_DROP,
    MAX_PASS_DROP,
    MIN_F1_GAIN,
    MIN_PASS_GAIN,
    GateOutcome,
    decided,
    num,
    undecided,
)
from .scoring import interval_block, paired_uplift, rate_block
from .stats import (
    exact_f1,
    percentiles_of,
    resample_sums_many,
    trigger_metrics,
)


@dataclass(frozen=True)
class CompareGates:
    """The four comparison gates (None: off)."""

    max_f1_drop: float | None = None
    max_pass_drop: float | None = None
    min_f1_gain: float | None = None
    min_pass_gain: float | None = None

    @property
    def any_set(self) -> bool:
        """Whether any comparison gate is configured."""
        return any(v is not None for v in self.as_dict().values())

    @property
    def on_f1(self) -> bool:
        """Whether a gate reads the F1 difference."""
        return self.max_f1_drop is not None or self.min_f1_gain is not None

    @property
    def on_pass(self) -> bool:
        """Whether a gate reads the pass-rate difference."""
        return self.max_pass_drop is not None or self.min_pass_gain is not None

    def as_dict(self) -> dict[str, float | None]:
        """Report key → threshold."""
        return {
            MAX_F1_DROP: self.max_f1_drop,
            MAX_PASS_DROP: self.max_pass_drop,
            MIN_F1_GAIN: self.min_f1_gain,
            MIN_PASS_GAIN: self.min_pass_gain,
        }


# ------------------------------------------------------------------------------- statistics

Counts = tuple[int, int, int]  # (TP, FP, FN)


def resample_f1_difference(
    tp_fp_fn: Sequence[tuple[Counts, Counts]], samples: int, seed: int
) -> tuple[list[Fraction], int]:
    """The kept resample differences F1(with) − F1(baseline) and the number of resamples
    dropped because either F1 was undefined. ``tp_fp_fn``: per unit (in unit order), the
    (TP, FP, FN) of its with and of its baseline observations."""
    vectors = [[unit[arm][i] for unit in tp_fp_fn] for arm in (0, 1) for i in (0, 1, 2)]
    kept: list[Fraction] = []
    dropped = 0
    for tp_w, fp_w, fn_w, tp_b, fp_b, fn_b in resample_sums_many(vectors, samples, seed):
        f1_with = f1_fraction(tp_w, fp_w, fn_w)
        f1_base = f1_fraction(tp_b, fp_b, fn_b)
        if f1_with is None or f1_base is None:
            dropped += 1
        else:
            kept.append(f1_with - f1_base)
    return kept, dropped


def f1_difference_interval(
    tp_fp_fn: Sequence[tuple[Counts, Counts]], samples: int, seed: int
) -> tuple[float | None, float | None, int]:
    """(lower, upper, undefinedResamples) of the F1 difference; bounds None when B′ = 0."""
    kept, dropped = resample_f1_difference(tp_fp_fn, samples, seed)
    bounds = percentiles_of(kept)
    if bounds is None:
        return None, None, dropped
    return float(bounds[0]), float(bounds[1]), dropped


def pass_differences(
    units: Mapping[int, tuple[tuple[int, int], tuple[int, int]]],
) -> list[Fraction]:
    """d_u = passed/total (with) − passed/total (other arm) for the units where both arms have
    observations, in unit order. ``units``: unit → ((passed, total) with, (passed, total))."""
    out: list[Fraction] = []
    for unit in sorted(units):
        (pw, nw), (po, no) = units[unit]
        if nw and no:
            out.append(Fraction(pw, nw) - Fraction(po, no))
    return out


# ------------------------------------------------------------------------------- the section


def _arm_rows(
    suite: CaseSuite, observations: Sequence[Observation], trials: int
) -> dict[str, dict[str, list[Observation | None]]]:
    """case id → arm → observation per trial (None where missing), for with and baseline."""
    rows: dict[str, dict[str, list[Observation | None]]] = {
        c.id: {"with": [None] * trials, "baseline": [None] * trials} for c in suite.cases
    }
    for obs in observations:
        row = rows.get(obs.case_id)
        if row is None or obs.variant not in row or not 1 <= obs.trial <= trials:
            continue
        if row[obs.variant][obs.trial - 1] is None:
            row[obs.variant][obs.trial - 1] = obs
    return rows


def comparison_section(
    suite: CaseSuite,
    skill_name: str,
    trials: int,
    observations: Sequence[Observation],
    passes: Mapping[tuple[str, str], Sequence[bool | None]],
    samples: int,
    seed: int,
    aa: bool,
) -> dict[str, Any]:
    """The report's ``comparison``. ``passes``: (case id, arm) → task pass per trial (None
    where not observed) for the cases with a task check, arms with and baseline."""
    rows = _arm_rows(suite, observations, trials)
    return {
        "aa": aa,
        "trigger": _trigger_comparison(suite, skill_name, rows, samples, seed),
        "task": _task_comparison(suite, passes, samples, seed),
    }


ArmCounts = list[list[int]]  # per arm (with, baseline): [tp, fp, fn]


def _trigger_counts(
    suite: CaseSuite,
    skill_name: str,
    rows: Mapping[str, Mapping[str, Sequence[Observation | None]]],
) -> tuple[ArmCounts, list[tuple[Counts, Counts]]]:
    """The arms' totals, and the counts of each unit observed in both arms (unit order)."""
    counts: dict[int, ArmCounts] = {}  # unit → [[tp, fp, fn], [tp, fp, fn]]
    seen: dict[int, list[bool]] = {}  # unit → [has with obs, has baseline obs]
    totals = [[0, 0, 0], [0, 0, 0]]
    for case in suite.cases:
        unit = counts.setdefault(case.unit, [[0, 0, 0], [0, 0, 0]])
        has = seen.setdefault(case.unit, [False, False])
        for index, arm in enumerate(("with", "baseline")):
            for obs in rows[case.id][arm]:
                if obs is None:
                    continue
                has[index] = True
                hit = skill_name in obs.invoked_skills
                slot = (0 if hit else 2) if case.expect_trigger else (1 if hit else -1)
                if slot >= 0:
                    unit[index][slot] += 1
                    totals[index][slot] += 1
    paired = [
        ((u[0][0], u[0][1], u[0][2]), (u[1][0], u[1][1], u[1][2]))
        for key, u in sorted(counts.items())
        if all(seen[key])
    ]
    return totals, paired


def _trigger_comparison(
    suite: CaseSuite,
    skill_name: str,
    rows: Mapping[str, Mapping[str, Sequence[Observation | None]]],
    samples: int,
    seed: int,
) -> dict[str, Any]:
    """Trigger F1 with the skill and with the baseline, the paired difference with its
    interval, and the trials whose trigger flipped."""
    totals, paired = _trigger_counts(suite, skill_name, rows)
    metrics = [trigger_metrics(*totals[0]), trigger_metrics(*totals[1])]
    if paired:
        lower, upper, undefined = f1_difference_interval(paired, samples, seed)
    else:
        lower, upper, undefined = None, None, 0
    f1_with, f1_base = metrics[0].f1, metrics[1].f1
    exact_with, exact_base = exact_f1(*totals[0])[2], exact_f1(*totals[1])[2]
    difference = (
        float(exact_with - exact_base)
        if exact_with is not None and exact_base is not None
        else None
    )
    trigger_flips = _flips(
        (
            (
                w is not None and skill_name in w.invoked_skills,
                b is not None and skill_name in b.invoked_skills,
            )
            for case in suite.cases
            for w, b in zip(rows[case.id]["with"], rows[case.id]["baseline"], strict=True)
            if w is not None and b is not None
        )
    )
    return {
        "with": {"tp": totals[0][0], "fp": totals[0][1], "fn": totals[0][2], "f1": f1_with},
        "baseline": {"tp": totals[1][0], "fp": totals[1][1], "fn": totals[1][2], "f1": f1_base},
        "units": len(paired),
        "f1Difference": difference,
        "interval": {
            **interval_block(lower, upper, samples, seed),
            "undefinedResamples": undefined,
        },
        "flips": trigger_flips,
    }


def _task_comparison(
    suite: CaseSuite,
    passes: Mapping[tuple[str, str], Sequence[bool | None]],
    samples: int,
    seed: int,
) -> dict[str, Any] | None:
    task_cases = [c for c in suite.cases if c.task is not None]
    if not task_cases:
        return None
    totals = {"with": [0, 0], "baseline": [0, 0]}
    units: dict[int, dict[str, list[int]]] = {}
    for case in task_cases:
        per_unit = units.setdefault(case.unit, {"with": [0, 0], "baseline": [0, 0]})
        for arm in ("with", "baseline"):
            results = passes.get((case.id, arm), ())
            passed = sum(1 for r in results if r is True)
            total = sum(1 for r in results if r is not None)
            totals[arm][0] += passed
            totals[arm][1] += total
            per_unit[arm][0] += passed
            per_unit[arm][1] += total
    differences = pass_differences(
        {
            u: ((v["with"][0], v["with"][1]), (v["baseline"][0], v["baseline"][1]))
            for u, v in units.items()
        }
    )
    point, interval, signs = paired_uplift(differences, samples, seed)
    flips = _flips(
        (w, b)
        for case in task_cases
        for w, b in zip(
            passes.get((case.id, "with"), ()), passes.get((case.id, "baseline"), ()), strict=False
        )  # one entry per trial in each (none for an arm that did not run)
        if w is not None and b is not None
    )
    return {
        "units": len(differences),
        "insufficient": len(units) < MIN_UNITS,
        "flips": flips,
        "with": rate_block(*totals["with"]),
        "baseline": rate_block(*totals["baseline"]),
        "difference": point,
        "interval": interval,
        "signTest": signs,
    }


def _flips(pairs: Iterable[tuple[bool, bool]]) -> dict[str, Any]:
    """How many (case, trial) pairs of a with and a baseline run disagree (loaded / passed in
    one, not in the other): in an A/A run, the agent's own run-to-run noise."""
    total = flipped = 0
    for a, b in pairs:
        total += 1
        flipped += a != b
    return {"flipped": flipped, "pairs": total, "rate": flipped / total if total else None}


# ------------------------------------------------------------------------------------ gates


def comparison_gates(
    comparison: Mapping[str, Any] | None, gates: CompareGates
) -> list[GateOutcome]:
    """The configured comparison gates judged on ``comparison`` (fail: exit 1; an undefined
    interval: exit 7)."""
    outcomes: list[GateOutcome] = []
    trigger = (comparison or {}).get("trigger") or {}
    task = (comparison or {}).get("task")
    for key, threshold in gates.as_dict().items():
        if threshold is None:
            continue
        on_f1 = key in (MAX_F1_DROP, MIN_F1_GAIN)
        block = trigger if on_f1 else task
        preferred = not on_f1 and isinstance(task, Mapping) and task.get("mode") == "pairwise"
        what = "F1" if on_f1 else "preference" if preferred else "pass-rate"
        option = {
            MAX_F1_DROP: "--max-f1-drop",
            MAX_PASS_DROP: "--max-pass-drop",
            MIN_F1_GAIN: "--min-f1-gain",
            MIN_PASS_GAIN: "--min-pass-gain",
        }[key]
        interval = (block or {}).get("interval") or {}
        drop = key in (MAX_F1_DROP, MAX_PASS_DROP)
        bound = interval.get("upper" if drop else "lower")
        if bound is None:
            why = (
                "no case has a task check"
                if block is None
                else "no pair of a with and a baseline answer was judged"
                if preferred
                else "the interval is undefined (no resample had a defined F1 in both arms, or "
                "no unit has observations of both arms)"
            )
            outcomes.append(undecided(key, threshold, UNAVAILABLE, f"{option} is set but {why}"))
            continue
        if drop:
            outcomes.append(
                decided(
                    key,
                    threshold,
                    bound,
                    bound >= -threshold,
                    f"the {what} difference to the baseline has upper bound {num(bound)}, below "
                    f"−{num(threshold)} ({option} {num(threshold)}): confidently worse than the "
                    f"baseline by more than {num(threshold)}",
                )
            )
        else:
            outcomes.append(
                decided(
                    key,
                    threshold,
                    bound,
                    bound >= threshold,
                    f"the {what} difference to the baseline has lower bound {num(bound)}, below "
                    f"{option} {num(threshold)}",
                )
            )
    return outcomes


def f1_fraction(tp: int, fp: int, fn: int) -> Fraction | None:
    """F1 = 2TP / (2TP + FP + FN) exactly (equal to 2PR/(P+R), 0 when P+R = 0); None when
    precision or recall is undefined (TP+FP = 0 or TP+FN = 0)."""
    if tp + fp == 0 or tp + fn == 0:
        return None
    return Fraction(2 * tp, 2 * tp + fp + fn)
