"""Task verdicts per case and check, and the efficiency figures, for the report.

Observation checks are judged from the observation's fields every time (recorded verdicts of
those are never trusted); workspace checks use the verdicts the engine computed after the run
(or that the observations file carries), since the workspace is gone by now.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..checks import NOT_CALLED, Matcher, Task, judge_task
from ..checks.model import ExitCode
from ..checks.observed import budget_figure
from ..suite.cases import Case, CaseSuite

VARIANTS = ("with", "without")
Row = Sequence[Any]  # Observation | None per slot: 2 × (trial - 1) is "with", the next "without"


@dataclass
class CaseTask:
    """One case's task verdicts: pass per trial and variant, per check, the first failure."""

    passes: dict[str, list[bool | None]] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    failed_check: dict[str, Any] | None = None


def task_passed(task: Task, obs: Any, matcher: Matcher) -> bool:
    """Whether one observation passes every check of ``task``, judged as the report judges it
    (observation checks from its fields, workspace checks from the engine's verdicts)."""
    return all(outcome.passed for outcome in judge_task(task, obs, matcher, None))


def _judge_exit_code(only: ExitCode, row: Row) -> CaseTask:
    """The verdicts of a task that is one ``exit_code`` check."""
    result = CaseTask()
    failures: dict[str, dict[str, Any]] = {}
    expected = only.expected
    for offset, variant in enumerate(VARIANTS):
        observed = row[offset::2]
        row_passes = [
            None if obs is None else (obs.exit_code == expected and type(expected) is int)
            for obs in observed
        ]
        result.passes[variant] = row_passes
        if False in row_passes:
            trial = row_passes.index(False) + 1
            code = observed[trial - 1].exit_code
            failures[variant] = _failure(
                variant,
                trial,
                0,
                only.name,
                f"{only.label}: exitCode {code}, expected {expected}",
            )
    result.checks = [{"check": only.name, "label": only.label, **result.passes}]
    result.failed_check = failures.get("with") or failures.get("without")
    return result


def judge_case(case: Case, row: Row, matcher: Matcher) -> CaseTask:
    """The task verdicts of one case from its row of observations."""
    result = CaseTask()
    task = case.task
    if task is None:
        return result
    failures: dict[str, dict[str, Any]] = {}
    only = task.checks[0] if len(task.checks) == 1 else None
    if isinstance(only, ExitCode):
        # The most common task, scored without a call per observation (scoring stays a few
        # microseconds per observation).
        return _judge_exit_code(only, row)
    per_check: list[dict[str, list[bool | None]]] = [
        {variant: [] for variant in VARIANTS} for _ in task.checks
    ]
    for offset, variant in enumerate(VARIANTS):
        passes: list[bool | None] = []
        for trial, obs in enumerate(row[offset::2], 1):
            if obs is None:
                passes.append(None)
                for item in per_check:
                    item[variant].append(None)
                continue
            outcomes = judge_task(task, obs, matcher, None)
            for item, outcome in zip(per_check, outcomes, strict=True):
                # A judge check not asked (the task failed before it) is null, not false.
                item[variant].append(None if outcome is NOT_CALLED else outcome.passed)
            passes.append(all(o.passed for o in outcomes))
            first = next((i for i, o in enumerate(outcomes) if not o.passed), None)
            if first is not None and variant not in failures:
                check = task.checks[first]
                reason = outcomes[first].reason or f"{check.label}: failed"
                failures[variant] = _failure(variant, trial, first, check.name, reason)
        result.passes[variant] = passes
    result.checks = [
        {"check": check.name, "label": check.label, **item}
        for check, item in zip(task.checks, per_check, strict=True)
    ]
    # The failure worth naming is the one with the skill; without it, the other one.
    result.failed_check = failures.get("with") or failures.get("without")
    return result


def _failure(variant: str, trial: int, index: int, name: str, reason: str) -> dict[str, Any]:
    return {"variant": variant, "trial": trial, "index": index, "check": name, "reason": reason}


# ---------------------------------------------------------------------------- efficiency

METRICS = ("durationMs", "tokens", "costUsd")


_BUDGET_OF = {"durationMs": "max_duration_ms", "tokens": "max_tokens", "costUsd": "max_cost_usd"}


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def efficiency_section(suite: CaseSuite, grid: Mapping[str, Row]) -> dict[str, Any]:
    """Per variant the median duration, tokens (input + output) and cost over the task cases'
    observations that report them, and the median over units of the paired difference
    (mean with − mean without within the unit)."""
    values: dict[str, dict[str, list[float]]] = {v: {m: [] for m in METRICS} for v in VARIANTS}
    units: dict[int, dict[str, dict[str, list[float]]]] = {}
    for case in suite.cases:
        if case.task is None:
            continue
        per_unit = units.setdefault(case.unit, {v: {m: [] for m in METRICS} for v in VARIANTS})
        row = grid[case.id]
        for offset, variant in enumerate(VARIANTS):
            for obs in row[offset::2]:
                if obs is None or not obs.meta:
                    continue  # most runners report no meta: skip them at once
                for metric in METRICS:
                    figure = budget_figure(_BUDGET_OF[metric], obs.meta)
                    if figure is not None:
                        values[variant][metric].append(figure)
                        per_unit[variant][metric].append(figure)
    differences: dict[str, list[float]] = {m: [] for m in METRICS}
    for unit in sorted(units):
        for metric in METRICS:
            with_values = units[unit]["with"][metric]
            without_values = units[unit]["without"][metric]
            if with_values and without_values:
                differences[metric].append(
                    statistics.fmean(with_values) - statistics.fmean(without_values)
                )
    section: dict[str, Any] = {
        variant: {m: _median(values[variant][m]) for m in METRICS} for variant in VARIANTS
    }
    section["difference"] = {m: _median(differences[m]) for m in METRICS}
    return section
