"""Figures of a suite scored by preference (``judge_pairwise``, docs/judging.md#pairwise):
pref = +1 when the ``with`` answer is preferred, −1 when the compared arm's is, 0 for a tie;
per unit p_u = the mean pref over its pairs; ``difference`` = the mean p_u, with the same
bootstrap interval and exact sign test as the uplift of pass rates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..suite.cases import MIN_UNITS, CaseSuite
from .scoring import interval_block, sign_test_block, task_unit_count
from .stats import bootstrap_interval, sign_test

COMPARED = "without"


def is_pairwise(suite: CaseSuite) -> bool:
    """Whether the suite's tasks are ``judge_pairwise`` checks."""
    return any(c.task is not None and c.task.pairwise is not None for c in suite.cases)


def _entry(obs: Any, index: int) -> Mapping[str, Any] | None:
    for entry in obs.judged:
        if entry.get("check") == index and entry.get("against") == COMPARED:
            return entry  # type: ignore[no-any-return]
    return None


def pair_preference(with_obs: Any, other: Any, index: int) -> tuple[int | None, bool | None]:
    """One pair's pref (None when not judged) and whether its asks agreed (None: not asked)."""
    if with_obs is None or other is None:
        return None, None
    if with_obs.exit_code != 0 or other.exit_code != 0:
        if with_obs.exit_code != 0 and other.exit_code != 0:
            return 0, None
        return (1 if other.exit_code != 0 else -1), None
    entry = _entry(with_obs, index)
    if entry is None:
        return None, None
    named = [
        0 if ask["winner"] == "tie" else (1 if ask["winner"] == ask["withAs"] else -1)
        for ask in entry["asks"]
    ]
    return int(entry["preference"]), len(set(named)) == 1


def preferences(suite: CaseSuite, grid: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Per pairwise case: ``{"without": [pref per trial]}`` and the asks' agreement."""
    found: dict[str, Any] = {}
    for case in suite.cases:
        if case.task is None or case.task.pairwise is None:
            continue
        index = case.task.checks.index(case.task.pairwise)
        row = grid[case.id]
        pairs = [pair_preference(row[2 * t], row[2 * t + 1], index) for t in range(len(row) // 2)]
        found[case.id] = pairs
    return found


def pairwise_section(
    suite: CaseSuite,
    pairs: Mapping[str, Sequence[tuple[int | None, bool | None]]],
    samples: int,
    seed: int,
) -> dict[str, Any]:
    """The report's ``task`` of a pairwise suite."""
    units: dict[int, list[int]] = {}
    counts = {"pairs": 0, "with": 0, "other": 0, "ties": 0, "inconsistent": 0}
    for case in suite.cases:
        for pref, consistent in pairs.get(case.id, ()):
            if pref is None:
                continue
            units.setdefault(case.unit, []).append(pref)
            counts["pairs"] += 1
            counts["with" if pref > 0 else "other" if pref < 0 else "ties"] += 1
            counts["inconsistent"] += consistent is False
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
        "with": None,
        "without": None,
        "difference": difference,
        "interval": interval_block(lower, upper, samples, seed),
        "signTest": sign_test_block(sign_test(values)),
        "efficiency": None,
        "pairwise": {
            "pairs": counts["pairs"],
            "withPreferred": counts["with"],
            "otherPreferred": counts["other"],
            "ties": counts["ties"],
            "inconsistent": counts["inconsistent"],
            "preferenceShare": counts["with"] / decided if decided else None,
        },
    }


def swap_consistency(pairs: Mapping[str, Sequence[tuple[int | None, bool | None]]]) -> float | None:
    """Consistent asked pairs / asked pairs (None when none was asked)."""
    asked = [
        consistent for row in pairs.values() for _, consistent in row if consistent is not None
    ]
    return sum(asked) / len(asked) if asked else None
