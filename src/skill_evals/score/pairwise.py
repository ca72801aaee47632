"""Figures of a suite scored by preference (``judge_pairwise``, docs/judging.md#pairwise):
pref = +1 when the ``with`` answer is preferred, −1 when the compared arm's is, 0 for a tie;
per unit p_u = the mean pref over its pairs; ``difference`` = the mean p_u, with the same
bootstrap interval and exact sign test as the uplift of pass rates. Against ``without`` it is
the report's ``task`` (the uplift); against ``baseline`` the comparison's ``task``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from ..run.judge_pairs import COMPARED_ARMS, pair_entry
from ..run.observations import Observation, Variant
from ..suite.cases import MIN_UNITS, CaseSuite
from .scoring import interval_block, sign_test_block, task_unit_count
from .stats import bootstrap_interval, sign_test

# One pair's (pref, whether its two asks agreed, whether the absolute grades named its winner):
# (None, None, False) when not judged, and agreement None when nothing was asked (decided by the
# exit codes).
PairResult = tuple[int | None, bool | None, bool]
# case id → compared arm → its pairs' results per trial.
Preferences = dict[str, dict[str, list[PairResult]]]


def is_pairwise(suite: CaseSuite) -> bool:
    """Whether the suite's tasks are ``judge_pairwise`` checks."""
    return any(c.task is not None and c.task.pairwise is not None for c in suite.cases)


def pair_preference(
    with_obs: Observation | None, other: Observation | None, index: int, arm: str
) -> PairResult:
    """One pair's pref (None when not judged), whether its asks agreed (None: not asked) and
    whether the absolute grades of the fallback named its winner."""
    if with_obs is None or other is None:
        return None, None, False
    if with_obs.exit_code != 0 or other.exit_code != 0:
        if with_obs.exit_code != 0 and other.exit_code != 0:
            return 0, None, False
        return (1 if other.exit_code != 0 else -1), None, False
    entry = pair_entry(with_obs, index, arm)
    if entry is None or entry.get("preference") is None:  # not judged, or not to the end
        return None, None, False
    named = [
        0 if ask["winner"] == "tie" else (1 if ask["winner"] == ask["withAs"] else -1)
        for ask in entry["asks"]
    ]
    consistent = len(set(named)) == 1
    pref = int(entry["preference"])
    return pref, consistent, not consistent and pref != 0 and bool(entry.get("grades"))


def preferences(
    suite: CaseSuite,
    trials: int,
    observations: Iterable[Observation],
    compared: Sequence[Variant] = ("without",),
) -> Preferences:
    """Per pairwise case and compared arm (in pair order): each trial's pair result."""
    rows: dict[tuple[str, str, int], Observation] = {}
    for obs in observations:
        rows.setdefault((obs.case_id, obs.variant, obs.trial), obs)  # the first of a key wins
    arms = [arm for arm in COMPARED_ARMS if arm in compared]
    found: Preferences = {}
    for case in suite.cases:
        if case.task is None or case.task.pairwise is None:
            continue
        index = case.task.checks.index(case.task.pairwise)
        found[case.id] = {
            arm: [
                pair_preference(
                    rows.get((case.id, "with", t)), rows.get((case.id, arm, t)), index, arm
                )
                for t in range(1, trials + 1)
            ]
            for arm in arms
        }
    return found


def preference_figures(
    suite: CaseSuite, pairs: Preferences, arm: str, samples: int, seed: int
) -> dict[str, Any]:
    """The preference of the with answers over ``arm``'s: units, difference with its interval
    and sign test, and the pairs' counts (``pairwise``)."""
    units: dict[int, list[int]] = {}
    counts = {"pairs": 0, "with": 0, "other": 0, "ties": 0, "inconsistent": 0, "graded": 0}
    for case in suite.cases:
        for pref, consistent, graded in pairs.get(case.id, {}).get(arm, ()):
            if pref is None:
                continue
            units.setdefault(case.unit, []).append(pref)
            counts["pairs"] += 1
            counts["with" if pref > 0 else "other" if pref < 0 else "ties"] += 1
            counts["inconsistent"] += consistent is False
            counts["graded"] += graded
    values = [Fraction(sum(units[u]), len(units[u])) for u in sorted(units)]
    difference = float(sum(values, Fraction(0)) / len(values)) if values else None
    lower = upper = None
    if values:
        interval = bootstrap_interval(values, samples, seed)
        lower, upper = interval.lower, interval.upper
    decided = counts["with"] + counts["other"]
    return {
        "mode": "pairwise",
        "units": len(values),
        "insufficient": task_unit_count(suite) < MIN_UNITS,
        "difference": difference,
        "interval": interval_block(lower, upper, samples, seed),
        "signTest": sign_test_block(sign_test(values)),
        "pairwise": {
            "pairs": counts["pairs"],
            "withPreferred": counts["with"],
            "otherPreferred": counts["other"],
            "ties": counts["ties"],
            "inconsistent": counts["inconsistent"],
            "decidedByGrades": counts["graded"],
            "preferenceShare": counts["with"] / decided if decided else None,
        },
    }


def pairwise_section(
    suite: CaseSuite, pairs: Preferences, samples: int, seed: int
) -> dict[str, Any]:
    """The report's ``task`` of a pairwise suite: the with answers against the without ones."""
    figures = preference_figures(suite, pairs, "without", samples, seed)
    return {**figures, "with": None, "without": None, "efficiency": None}


def pairwise_comparison(
    suite: CaseSuite, pairs: Preferences, samples: int, seed: int
) -> dict[str, Any]:
    """The comparison's ``task`` of a pairwise suite: the with answers against the baseline's
    (no pass rates, so ``with``/``baseline`` and the pass flips are null)."""
    figures = preference_figures(suite, pairs, "baseline", samples, seed)
    return {**figures, "with": None, "baseline": None, "flips": None}


def swap_consistency(pairs: Preferences) -> float | None:
    """Consistent asked pairs / asked pairs, over every compared arm (None when none was
    asked)."""
    asked = [
        consistent
        for arms in pairs.values()
        for row in arms.values()
        for _, consistent, _ in row
        if consistent is not None
    ]
    return sum(asked) / len(asked) if asked else None
