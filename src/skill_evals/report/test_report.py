"""Observations → the test report and its exit code (docs/statistics.md, docs/report.md): the
measured sections (score/scoring.py), the gates and the comparison, then the verdict with the
exit-code precedence and the messages that explain it.

The report is a plain JSON-ready dict matching schemas/report.schema.json. It never contains
prompts, agent outputs or runner stderr: only ids, counts, names and figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..codes import (
    GATE_FAILED,
    INTERRUPTED,
    UNAVAILABLE,
    combine,
)
from ..messages import Messages, failures_message, runner_warnings
from ..plan.arms import ArmPlan
from ..run.execute import ExecutionResult
from ..run.observations import VARIANTS
from ..run.records import gc_paused
from ..run.regex import RegexPool
from ..score.compare import comparison_gates, comparison_section
from ..score.gates import (
    ALL_GATES,
    GateOutcome,
    as_settled,
    partial_outcomes,
    trigger_f1_gate,
    uplift_gate,
)
from ..score.scoring import (
    ISOLATION_UNVERIFIED,
    attempted_not_loaded,
    baseline_passes,
    build_grid,
    case_result,
    failure_order,
    isolation_unverified,
    judge_tasks,
    load_states,
    loading_violations,
    meta_sums,
    task_section,
    task_unit_count,
    trigger_section,
    why_f1_undefined,
)
from ..suite.cases import MIN_UNITS, CaseSuite
from ..suite.skill import Skill
from .blocks import (
    Report,
    Settings,
    baseline_block,
    cases_block,
    envelope,
    settings_block,
    skill_block,
)
from .stop_notes import run_notes


def build_test_report(
    skill: Skill,
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    *,
    skill_changed: bool = False,
    messages: tuple[str, ...] = (),
    arm_plan: ArmPlan | None = None,
    baseline: Skill | None = None,
    baseline_changed: bool = False,
) -> Report:
    """Score the run and decide status/exitCode with the exit-code precedence.

    Runner failures, an interrupt or ``skill_changed`` / ``baseline_changed`` make the evidence
    void (7 / 130); scores are still computed from the valid observations so the reader sees
    what was measured, and ``coverage`` says how many of the planned observations they rest on.
    A run that stopped early with a settled verdict (``result.settled``) has that verdict.
    ``messages`` from the caller are notes (information that does not change the exit code)."""
    # All observations stay alive while scoring: each collection would walk every one of them
    # (docs/performance.md); nothing built here forms a reference cycle.
    with gc_paused():
        return _evaluate(
            skill,
            suite,
            settings,
            result,
            skill_changed,
            messages,
            arm_plan,
            baseline,
            baseline_changed,
        )


def _evaluate(
    skill: Skill,
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    skill_changed: bool,
    messages: tuple[str, ...],
    arm_plan: ArmPlan | None,
    baseline: Skill | None,
    baseline_changed: bool,
) -> Report:
    trials = settings.trials
    grid = build_grid(suite, trials, result.observations)
    observed = [obs for row in grid.values() for obs in row if obs is not None]
    trigger, triggered = trigger_section(suite, skill.name, grid)
    with RegexPool() as matcher:
        task_results = judge_tasks(suite, grid, matcher)
    task_passes = {
        (case_id, variant): passes
        for case_id, result in task_results.items()
        for variant, passes in result.passes.items()
    }
    task = task_section(suite, settings.bootstrap_samples, settings.seed, task_passes, grid)
    violations = loading_violations(suite, grid)
    unverified, without_runs = isolation_unverified(suite, grid, skill.name)
    # Per-case evidence states only when some runner reported evidence (custom runners need not).
    evidence = any(obs.evidence for obs in observed)
    failures = sorted(result.failures, key=failure_order(suite))
    others = [o for o in result.observations if o.variant == "baseline"]
    expected = (
        result.planned if result.planned is not None else len(suite.cases) * trials * len(VARIANTS)
    )
    observed_count = len(observed) + len(others)
    missing = expected - observed_count
    stopped = result.stopped
    settled = result.settled if stopped is not None else None

    codes: list[int] = []
    notes = Messages()  # most important first: errors as found, then warnings and notes
    if failures:
        codes.append(UNAVAILABLE)
        notes.append(failures_message(failures))
    for label, path, changed in (
        ("skill", skill.path, skill_changed),
        ("baseline", baseline.path if baseline is not None else None, baseline_changed),
    ):
        if changed:
            codes.append(UNAVAILABLE)
            notes.append(
                f"the {label} directory {path} changed during the run (its hash differs after "
                f"the last invocation): the evidence is void; do not edit the {label} while it "
                "is evaluated"
            )
    if result.interrupted:
        codes.append(INTERRUPTED)
        notes.append(
            f"interrupted: {missing} of {expected} observation(s) are missing; "
            "rerun with --resume FILE (from --record FILE) to complete them"
        )
    elif stopped is not None and stopped.reason == "budget" and settled is None:
        codes.append(UNAVAILABLE)
        notes.append(
            f"budget reached after {stopped.invocations} invocations: {missing} of {expected} "
            "planned observation(s) did not run and the verdict is not settled; raise "
            "--max-invocations / --max-cost-usd, or rerun with --resume FILE (from --record "
            "FILE) to complete them"
        )
    elif missing and not failures and settled is None:
        codes.append(UNAVAILABLE)
        notes.append(f"{missing} of {expected} observation(s) are missing: the evidence is void")

    outcomes = _gate_outcomes(suite, settings, trigger, task)
    comparison = None
    if baseline is not None:
        with RegexPool() as matcher:
            comparison = comparison_section(
                suite,
                skill.name,
                trials,
                result.observations,
                baseline_passes(suite, trials, result.observations, task_passes, matcher),
                settings.bootstrap_samples,
                settings.seed,
                baseline.directory_sha256 == skill.directory_sha256,
            )
        outcomes += comparison_gates(comparison, settings.compare)
    if settled is not None and stopped is not None:
        not_run = stopped.planned - stopped.after
        outcomes = [
            as_settled(o, settled[o.key], not_run) if o.key in settled else o for o in outcomes
        ]
    provisional = combine([*codes, *(o.code for o in outcomes if o.code is not None)])
    settled_keys = set(settled) if settled is not None and stopped is not None else None
    outcomes = partial_outcomes(outcomes, settled_keys, provisional, observed_count, expected)
    for outcome in outcomes:
        if outcome.code is not None:
            codes.append(outcome.code)
        if outcome.message is not None and outcome.partial:
            notes.note(outcome.message)
        elif outcome.message is not None:
            notes.append(outcome.message)
    if settings.min_uplift is None and task is not None and task["insufficient"]:
        notes.note(
            f"uplift rests on {task_unit_count(suite)} independent case(s) with a task check "
            f"(fewer than {MIN_UNITS}): reported, but too few to gate on"
        )

    if violations:
        codes.append(GATE_FAILED)
        notes.append(
            f"{len(violations)} loading violation(s): a required skill was not loaded or a "
            "forbidden one was; see loading.violations"
        )

    if unverified:
        line = ISOLATION_UNVERIFIED.format(count=len(unverified), runs=without_runs)
        if settings.require_verified_isolation:
            codes.append(UNAVAILABLE)
            notes.error(line)
        else:
            notes.warning(line)
    for message in result.messages:  # e.g. a workspace that could not be kept
        notes.warning(message)
    for message in runner_warnings([*observed, *others]):
        notes.warning(message)
    for message in messages:
        notes.note(message)
    for message in run_notes(arm_plan, stopped, settled, settings.seed):
        notes.note(message)

    exit_code = combine(codes)
    report = envelope(exit_code)
    gates: dict[str, dict[str, Any] | None] = {key: None for key in ALL_GATES}
    gates.update({o.key: o.report for o in outcomes})
    runner: dict[str, Any] = {
        "invocations": result.invocations,
        "failures": [
            {"caseId": f.case_id, "trial": f.trial, "variant": f.variant, "reason": f.reason}
            for f in failures
        ],
        "wallMs": round(result.wall_ms),
        "meta": meta_sums([*observed, *others]),
        "retried": result.retried,
    }
    if result.ledger is not None:
        runner["ledger"] = result.ledger
        runner["cached"] = result.ledger["cached"]
    if stopped is not None:
        runner["stoppedEarly"] = {
            "after": stopped.after,
            "planned": stopped.planned,
            "reason": stopped.reason,
            "settled": settled is not None,
        }
    report.update(
        {
            "skill": skill_block(skill),
            "baseline": baseline_block(baseline),
            "cases": cases_block(suite),
            "settings": settings_block(settings),
            "arms": (arm_plan or ArmPlan(arms=("with", "without"))).report_block(),
            "trigger": trigger,
            "task": task,
            "comparison": comparison,
            "loading": {
                "violations": violations,
                "attemptedNotLoaded": attempted_not_loaded(suite, grid, skill.name),
                "isolationUnverified": len(unverified),
                "unverified": unverified,
            },
            "runner": runner,
            "gates": gates,
            "caseResults": [
                case_result(case, triggered[case.id], task_results.get(case.id))
                | ({"loadState": load_states(grid, case.id, skill.name)} if evidence else {})
                for case in suite.cases
            ],
            "messages": notes.texts(),
            "messageSeverities": notes.severities(),
            "coverage": {"observed": observed_count, "planned": expected},
        }
    )
    return report


def _gate_outcomes(
    suite: CaseSuite, settings: Settings, trigger: Mapping[str, Any], task: Mapping[str, Any] | None
) -> list[GateOutcome]:
    """The trigger-F1 and uplift gates, when configured."""
    outcomes: list[GateOutcome] = []
    if settings.min_trigger_f1 is not None:
        outcomes.append(
            trigger_f1_gate(trigger, settings.min_trigger_f1, why_f1_undefined(trigger, suite))
        )
    if settings.min_uplift is not None:
        outcomes.append(uplift_gate(task, settings.min_uplift, suite, task_unit_count(suite)))
    return outcomes
