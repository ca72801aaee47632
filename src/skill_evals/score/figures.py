"""The figures of a test run: every measured section of the test report from the run's
observations (score/scoring.py), gathered once, before any gate decides a verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..run.execute import ExecutionResult
from ..run.observations import VARIANTS, Observation, Variant
from ..run.regex import RegexPool
from ..suite.cases import CaseSuite
from .pairwise import Preferences, is_pairwise, pairwise_section, preferences, swap_consistency
from .scoring import (
    Grid,
    build_grid,
    isolation_unverified,
    judge_tasks,
    loading_violations,
    task_section,
    trigger_section,
)
from .task_results import CaseTask


@dataclass(frozen=True)
class Figures:
    """What the observations of a test run measure, before any verdict: the grid and each
    section of the report."""

    grid: Grid
    observed: list[Observation]  # with and without observations that were placed in the grid
    others: list[Observation]  # baseline observations (a comparison's third arm)
    trigger: dict[str, Any]
    triggered: dict[str, list[bool | None]]
    task_results: dict[str, CaseTask]
    task_passes: Mapping[tuple[str, str], Sequence[bool | None]]
    task: dict[str, Any] | None
    violations: list[dict[str, Any]]
    # Pairwise suites: case id → compared arm → (pref, asks agreed) per trial; the asks' swap
    # consistency over every compared arm.
    pairs: Preferences
    swap_consistency: float | None
    unverified: list[dict[str, Any]]
    without_runs: int
    expected: int  # planned observations

    @property
    def observed_count(self) -> int:
        """Observations scored, baseline ones included."""
        return len(self.observed) + len(self.others)

    @property
    def missing(self) -> int:
        """Planned observations that were not scored."""
        return self.expected - self.observed_count


def measure(
    suite: CaseSuite,
    skill: str,
    trials: int,
    samples: int,
    seed: int,
    result: ExecutionResult,
    compared: Sequence[Variant] = ("without",),
) -> Figures:
    """Score the observations of ``result``: every figure of the test report, no verdict
    (``samples`` and ``seed`` are those of the uplift's bootstrap; ``compared``: the arms a
    pairwise suite compares the with answers with)."""
    grid = build_grid(suite, trials, result.observations)
    trigger, triggered = trigger_section(suite, skill, grid)
    with RegexPool() as matcher:
        task_results = judge_tasks(suite, grid, matcher)
    task_passes = {
        (case_id, variant): passes
        for case_id, result in task_results.items()
        for variant, passes in result.passes.items()
    }
    unverified, without_runs = isolation_unverified(suite, grid, skill)
    pairwise = is_pairwise(suite)
    pairs = preferences(suite, trials, result.observations, compared) if pairwise else {}
    task: dict[str, Any] | None
    if pairwise:  # scored by preference, never pass/fail
        task_results = {k: v for k, v in task_results.items() if k not in pairs}
        task = pairwise_section(suite, pairs, samples, seed)
    else:
        task = task_section(suite, samples, seed, task_passes, grid)
    return Figures(
        grid=grid,
        observed=[obs for row in grid.values() for obs in row if obs is not None],
        others=[o for o in result.observations if o.variant == "baseline"],
        trigger=trigger,
        triggered=triggered,
        task_results=task_results,
        task_passes=task_passes,
        task=task,
        violations=loading_violations(suite, grid),
        pairs=pairs,
        swap_consistency=swap_consistency(pairs) if pairwise else None,
        unverified=unverified,
        without_runs=without_runs,
        expected=(
            result.planned
            if result.planned is not None
            else len(suite.cases) * trials * len(VARIANTS)
        ),
    )
