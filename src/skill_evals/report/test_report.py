"""Observations → the test report and its exit code (docs/statistics.md, docs/report.md): the
measured sections (score/scoring.py), the gates and the comparison, then the verdict with the
exit-code precedence and the messages that explain it.

The report is a plain JSON-ready dict matching schemas/report.schema.json. It never contains
prompts, agent outputs or runner stderr: only ids, counts, names and figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..codes import (
    GATE_FAILED,
    INTERRUPTED,
    UNAVAILABLE,
    combine,
)
from ..messages import Messages, failures_message, runner_warnings
from ..plan.arms import ArmPlan
from ..plan.settle import Verdict
from ..run.execute import ExecutionResult
from ..run.gc_pause import gc_paused
from ..run.observations import RunnerFailure, Variant
from ..run.regex import RegexPool
from ..score.compare import comparison_gates, comparison_section
from ..score.figures import Figures, measure
from ..score.gates import (
    ALL_GATES,
    GateOutcome,
    as_settled,
    partial_outcomes,
    trigger_f1_gate,
    uplift_gate,
)
from ..score.pairwise import pairwise_comparison
from ..score.scoring import (
    ISOLATION_UNVERIFIED,
    baseline_passes,
    failure_order,
    task_unit_count,
    why_f1_undefined,
)
from ..suite.cases import MIN_UNITS, CaseSuite
from ..suite.skill import Skill
from .behaviour import behaviour_notes
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
from .test_blocks import case_results, loading_block, runner_block


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
    arms = arm_plan.arms if arm_plan is not None else ("with", "without", "baseline")
    figures = _figures(skill, suite, settings, result, arms, baseline)
    failures = sorted(result.failures, key=failure_order(suite))
    stopped = result.stopped
    settled = result.settled if stopped is not None else None
    codes: list[int] = []
    notes = Messages()  # most important first: errors as found, then warnings and notes
    _void_evidence(codes, notes, failures)
    _void_changed(codes, notes, skill, skill_changed, baseline, baseline_changed)
    _void_interrupted(codes, notes, figures, result, failures, settled)
    comparison = _comparison(skill, suite, settings, result, figures, baseline)
    outcomes = _judged_gates(suite, settings, result, figures, comparison, codes)
    _gate_notes(codes, notes, outcomes, suite, settings, figures)
    _loading_notes(codes, notes, settings, figures)
    behaviour = behaviour_notes(result.observations, codes, notes, settings.fail_on_finding)
    for message in [*result.messages, *runner_warnings([*figures.observed, *figures.others])]:
        notes.warning(message)  # result.messages: e.g. a workspace that could not be kept
    for message in [*messages, *run_notes(arm_plan, stopped, settled, settings.seed)]:
        notes.note(message)

    report = envelope(combine(codes))
    gates: dict[str, dict[str, Any] | None] = {key: None for key in ALL_GATES}
    gates.update({o.key: o.report for o in outcomes})
    report.update(
        {
            "skill": skill_block(skill),
            "baseline": baseline_block(baseline),
            "cases": cases_block(suite),
            "settings": settings_block(settings),
            "arms": (arm_plan or ArmPlan(arms=("with", "without"))).report_block(),
            "trigger": figures.trigger,
            "task": figures.task,
            "comparison": comparison,
            "loading": loading_block(suite, skill.name, figures),
            "runner": runner_block(result, failures, figures, settled),
            "gates": gates,
            "caseResults": case_results(suite, skill.name, figures),
            "messages": notes.texts(),
            "messageSeverities": notes.severities(),
            "coverage": {"observed": figures.observed_count, "planned": figures.expected},
            "judge": {"swapConsistency": figures.swap_consistency} if figures.pairs else None,
            "behaviour": behaviour,
        }
    )
    return report


def _figures(
    skill: Skill,
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    arms: Sequence[Variant],
    baseline: Skill | None,
) -> Figures:
    """The run's measured figures, compared with each arm the plan ran against ``with``."""
    return measure(
        suite,
        skill.name,
        settings.trials,
        settings.bootstrap_samples,
        settings.seed,
        result,
        compared=[a for a in arms if a == "without" or (a == "baseline" and baseline is not None)],
    )


def _void_evidence(codes: list[int], notes: Messages, failures: Sequence[RunnerFailure]) -> None:
    """Runner failures make the evidence void (exit 7)."""
    if failures:
        codes.append(UNAVAILABLE)
        notes.append(failures_message(failures))


def _void_changed(
    codes: list[int],
    notes: Messages,
    skill: Skill,
    skill_changed: bool,
    baseline: Skill | None,
    baseline_changed: bool,
) -> None:
    """A skill or baseline directory edited during the run makes the evidence void (exit 7)."""
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


def _void_interrupted(
    codes: list[int],
    notes: Messages,
    figures: Figures,
    result: ExecutionResult,
    failures: Sequence[RunnerFailure],
    settled: Verdict | None,
) -> None:
    """An interrupt (130), a budget reached before the verdict settled, or observations that
    are missing for another reason (7)."""
    missing, expected, stopped = figures.missing, figures.expected, result.stopped
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


def _comparison(
    skill: Skill,
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    figures: Figures,
    baseline: Skill | None,
) -> dict[str, Any] | None:
    """The report's ``comparison`` with the baseline, or None without one."""
    if baseline is None:
        return None
    trials, samples, seed = settings.trials, settings.bootstrap_samples, settings.seed
    with RegexPool() as matcher:
        passes = (
            {}  # scored by preference: the pass rates are not compared
            if figures.pairs
            else baseline_passes(suite, trials, result.observations, figures.task_passes, matcher)
        )
        section = comparison_section(
            suite,
            skill.name,
            trials,
            result.observations,
            passes,
            samples,
            seed,
            baseline.directory_sha256 == skill.directory_sha256,
        )
    if figures.pairs:
        section["task"] = pairwise_comparison(suite, figures.pairs, samples, seed)
    return section


def _judged_gates(
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    figures: Figures,
    comparison: dict[str, Any] | None,
    codes: list[int],
) -> list[GateOutcome]:
    """Every configured gate's outcome: settled by an early stop where it was, and partial
    (no verdict) when the run rests on part of the plan."""
    outcomes = _gate_outcomes(suite, settings, figures.trigger, figures.task)
    if comparison is not None:
        outcomes += comparison_gates(comparison, settings.compare)
    stopped = result.stopped
    settled = result.settled if stopped is not None else None
    if settled is not None and stopped is not None:
        not_run = stopped.planned - stopped.after
        outcomes = [
            as_settled(o, settled[o.key], not_run) if o.key in settled else o for o in outcomes
        ]
    provisional = combine([*codes, *(o.code for o in outcomes if o.code is not None)])
    settled_keys = set(settled) if settled is not None and stopped is not None else None
    return partial_outcomes(
        outcomes, settled_keys, provisional, figures.observed_count, figures.expected
    )


def _gate_notes(
    codes: list[int],
    notes: Messages,
    outcomes: Sequence[GateOutcome],
    suite: CaseSuite,
    settings: Settings,
    figures: Figures,
) -> None:
    """Each gate's code and message; and an ungated uplift that rests on too few units."""
    for outcome in outcomes:
        if outcome.code is not None:
            codes.append(outcome.code)
        if outcome.message is not None and outcome.partial:
            notes.note(outcome.message)
        elif outcome.message is not None:
            notes.append(outcome.message)
    task = figures.task
    if settings.min_uplift is None and task is not None and task["insufficient"]:
        notes.note(
            f"uplift rests on {task_unit_count(suite)} independent case(s) with a task check "
            f"(fewer than {MIN_UNITS}): reported, but too few to gate on"
        )


def _loading_notes(codes: list[int], notes: Messages, settings: Settings, figures: Figures) -> None:
    """Loading violations fail the run (exit 1); an unverified isolation is a warning, or
    exit 7 with --require-verified-isolation."""
    if figures.violations:
        codes.append(GATE_FAILED)
        notes.append(
            f"{len(figures.violations)} loading violation(s): a required skill was not loaded "
            "or a forbidden one was; see loading.violations"
        )
    if figures.unverified:
        line = ISOLATION_UNVERIFIED.format(count=len(figures.unverified), runs=figures.without_runs)
        if settings.require_verified_isolation:
            codes.append(UNAVAILABLE)
            notes.error(line)
        else:
            notes.warning(line)


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
