"""Observations → report data (docs/statistics.md, docs/report.md) and the exit code.

Owner: scoring. The report is a plain JSON-ready dict matching schemas/report.schema.json.
It never contains prompts, agent outputs or runner stderr: only ids, counts, names and figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from . import __version__
from .arms import ArmPlan
from .cases import MIN_UNITS, Case, CaseSuite
from .checks import RegexPool
from .codes import (
    GATE_FAILED,
    INSUFFICIENT,
    INTERRUPTED,
    INVALID,
    STATUS_BY_CODE,
    UNAVAILABLE,
    combine,
)
from .compare import CompareGates, comparison_gates, comparison_section
from .execute import ExecutionResult
from .gates import ALL_GATES, GateOutcome, as_settled, trigger_f1_gate, uplift_gate
from .messages import Messages
from .observations import ARMS, META_KEYS, VARIANTS, Observation, RunnerFailure
from .records import gc_paused
from .skill import Skill
from .stats import bootstrap_interval, sign_test, trigger_metrics
from .stop_notes import run_notes
from .task_results import CaseTask, efficiency_section, judge_case

Report = dict[str, Any]

SCHEMA_VERSION = 1
INTERVAL_LEVEL = 0.95
INTERVAL_METHOD = "percentile-bootstrap"


@dataclass(frozen=True)
class Settings:
    """Settings that shape the evaluation and appear in the report."""

    mode: Literal["runner", "observations"]
    trials: int = 3
    seed: int = 42
    bootstrap_samples: int = 10_000
    timeout_ms: int = 30_000
    max_bytes: int = 1_000_000
    jobs: int = 4
    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    compare: CompareGates = field(default_factory=CompareGates)


# ----------------------------------------------------------------------------- report pieces


def _num(value: float) -> str:
    """A figure for a message: short, but never rounded into looking like the threshold."""
    return format(value, ".6g")


def _skill_block(skill: Skill | None) -> dict[str, Any] | None:
    if skill is None:
        return None
    return {
        "name": skill.name,
        "path": str(skill.path),
        "skillMdSha256": skill.skill_md_sha256,
        "directorySha256": skill.directory_sha256,
        "warnings": list(skill.warnings),
    }


def _cases_block(suite: CaseSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {
        "path": str(suite.path),
        "sha256": suite.sha256,
        "total": len(suite.cases),
        "units": suite.unit_count,
        "withTask": suite.with_task,
    }


def _settings_block(settings: Settings | None) -> dict[str, Any] | None:
    if settings is None:
        return None
    return {
        "mode": settings.mode,
        "trials": settings.trials,
        "seed": settings.seed,
        "bootstrapSamples": settings.bootstrap_samples,
        "timeoutMs": settings.timeout_ms,
        "maxBytes": settings.max_bytes,
        "jobs": settings.jobs,
    }


def _gate(threshold: float | None, value: float | None, passed: bool | None) -> Any:
    if threshold is None:
        return None
    return {"threshold": threshold, "value": value, "passed": passed}


def _envelope(status_code: int) -> Report:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": STATUS_BY_CODE[status_code],
        "exitCode": status_code,
    }


def task_unit_count(suite: CaseSuite) -> int:
    """Independent units (docs/cases.md) among the cases that have a task check."""
    return len({c.unit for c in suite.cases if c.task is not None})


# ------------------------------------------------------------------------------------ scoring


# case id → 2 × trials slots: slot 2 × (trial - 1) is the trial's "with" observation, the next
# one its "without" observation; None where it is missing. row[0::2] / row[1::2] are the
# variants' rows in trial order.
Grid = dict[str, list[Observation | None]]


def _grid(suite: CaseSuite, trials: int, observations: Iterable[Observation]) -> Grid:
    """Place each observation in its slot, in one pass (docs/performance.md): every section reads
    these rows instead of looking up a (case, trial, variant) key per observation."""
    grid: Grid = {c.id: [None] * (2 * trials) for c in suite.cases}
    for obs in observations:
        # Observations outside the plan (unknown case, trial out of range) were rejected when
        # they were read; ignoring any that slip through keeps the counts honest. The first
        # observation of a key wins.
        row = grid.get(obs.case_id)
        trial = obs.trial
        if row is None or not 1 <= trial <= trials:
            continue
        if obs.variant == "with":
            index = 2 * trial - 2
        elif obs.variant == "without":
            index = 2 * trial - 1
        else:
            continue
        if row[index] is None:
            row[index] = obs
    return grid


def _trigger_section(
    suite: CaseSuite, skill_name: str, grid: Grid
) -> tuple[dict[str, Any], dict[str, list[bool | None]]]:
    tp = fp = fn = tn = 0
    missed: list[str] = []
    false_triggers: list[str] = []
    per_case: dict[str, list[bool | None]] = {}
    for case in suite.cases:
        row: list[bool | None] = [
            None if obs is None else skill_name in obs.invoked_skills for obs in grid[case.id][0::2]
        ]
        per_case[case.id] = row
        hits, misses = row.count(True), row.count(False)
        if case.expect_trigger:
            tp += hits
            fn += misses
            if misses:
                missed.append(case.id)
        else:
            fp += hits
            tn += misses
            if hits:
                false_triggers.append(case.id)
    metrics = trigger_metrics(tp, fp, fn)
    section = {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": metrics.precision,
        "recall": metrics.recall,
        "f1": metrics.f1,
        "falseTriggerCaseIds": false_triggers,
        "missedTriggerCaseIds": missed,
    }
    return section, per_case


def _task_results(suite: CaseSuite, grid: Grid, matcher: RegexPool) -> dict[str, CaseTask]:
    """Case id → its task verdicts, for the cases that have a task."""
    return {
        case.id: judge_case(case, grid[case.id], matcher)
        for case in suite.cases
        if case.task is not None
    }


def _task_section(
    suite: CaseSuite,
    settings: Settings,
    task_passes: Mapping[tuple[str, str], Sequence[bool | None]],
    grid: Grid,
) -> dict[str, Any] | None:
    task_cases = [c for c in suite.cases if c.task is not None]
    if not task_cases:
        return None  # never a zero uplift: there is nothing to measure
    counts = {v: [0, 0] for v in VARIANTS}  # variant → [passed, total]
    # unit → variant → [passed, total]; a unit may hold several cases (equal prompts).
    units: dict[int, dict[str, list[int]]] = {}
    for case in task_cases:
        per_unit = units.setdefault(case.unit, {v: [0, 0] for v in VARIANTS})
        for variant in VARIANTS:
            results = task_passes[(case.id, variant)]
            passed = results.count(True)
            total = len(results) - results.count(None)
            counts[variant][0] += passed
            counts[variant][1] += total
            per_unit[variant][0] += passed
            per_unit[variant][1] += total
    # Units in case-file order of their first case (units are numbered that way); a unit
    # needs at least one observation of each variant to give a paired difference.
    differences: list[Fraction] = []
    for unit in sorted(units):
        w, wo = units[unit]["with"], units[unit]["without"]
        if w[1] and wo[1]:
            differences.append(Fraction(w[0], w[1]) - Fraction(wo[0], wo[1]))
    n = len(differences)
    if n:
        difference: float | None = float(sum(differences, Fraction(0)) / n)
        interval = bootstrap_interval(differences, settings.bootstrap_samples, settings.seed)
        lower: float | None = interval.lower
        upper: float | None = interval.upper
    else:
        difference = lower = upper = None
    signs = sign_test(differences)
    return {
        "units": n,
        # Decided by the case file (as before the run), not by how many units a void run
        # happened to observe: missing observations are reported as exit 7 / 130 instead.
        "insufficient": task_unit_count(suite) < MIN_UNITS,
        "with": _rate(*counts["with"]),
        "without": _rate(*counts["without"]),
        "difference": difference,
        "interval": {
            "level": INTERVAL_LEVEL,
            "lower": lower,
            "upper": upper,
            "method": INTERVAL_METHOD,
            "samples": settings.bootstrap_samples,
            "seed": settings.seed,
        },
        "signTest": {
            "positive": signs.positive,
            "negative": signs.negative,
            "ties": signs.ties,
            "pValue": signs.p_value,
        },
        "efficiency": efficiency_section(suite, grid),
    }


def _rate(passed: int, total: int) -> dict[str, Any]:
    return {
        "passed": passed,
        "total": total,
        "passRate": float(Fraction(passed, total)) if total else None,
    }


def _violations(suite: CaseSuite, grid: Grid) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for case in suite.cases:
        if not case.include and not case.exclude:
            continue
        # Slots are in plan order: trial by trial, with before without.
        for index, obs in enumerate(grid[case.id]):
            if obs is None:
                continue
            invoked = set(obs.invoked_skills)
            missing = [name for name in case.include if name not in invoked]
            forbidden = [name for name in case.exclude if name in invoked]
            if missing or forbidden:
                found.append(
                    {
                        "caseId": case.id,
                        "trial": index // 2 + 1,
                        "variant": VARIANTS[index % 2],
                        "missing": missing,
                        "forbidden": forbidden,
                    }
                )
    return found


# The state of a skill in one observation's evidence, strongest first.
_STATE_RANK = ("loaded", "failed", "attempted", "offered")


def _load_state(obs: Observation | None, skill: str) -> str | None:
    """The tested skill's strongest evidence state in one observation; None without evidence
    naming it (custom runners need not report evidence)."""
    if obs is None:
        return None
    states = {item.get("state") for item in obs.evidence if item.get("skill") == skill}
    return next((state for state in _STATE_RANK if state in states), None)


def _load_states(grid: Grid, case_id: str, skill: str) -> dict[str, list[str | None]]:
    row = grid[case_id]
    return {
        variant: [_load_state(obs, skill) for obs in row[offset::2]]
        for offset, variant in enumerate(VARIANTS)
    }


def _attempted_not_loaded(suite: CaseSuite, grid: Grid, skill: str) -> list[str]:
    """Cases, in case-file order, where a ``with`` run tried to load the tested skill and its
    evidence shows no load of it (e.g. a read of a wrong path, a failed tool call)."""
    return [
        case.id
        for case in suite.cases
        if any(_load_state(obs, skill) in ("failed", "attempted") for obs in grid[case.id][0::2])
    ]


def _meta_sums(observations: Iterable[Observation]) -> dict[str, Any]:
    """Sum each recognised meta key; a key no observation reported is null (not 0)."""
    values: dict[str, list[float]] = {key: [] for key in META_KEYS}
    for obs in observations:
        if not obs.meta:
            continue  # the common case: the runner reported no meta
        for key in META_KEYS:
            value = obs.meta.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values[key].append(value)
    sums: dict[str, Any] = {}
    for key, items in values.items():
        if not items:
            sums[key] = None
        elif all(isinstance(v, int) for v in items):
            sums[key] = sum(items)
        else:
            sums[key] = math.fsum(items)
    return sums


def _failure_order(suite: CaseSuite) -> Any:
    position = {c.id: i for i, c in enumerate(suite.cases)}
    variant_rank: dict[str, int] = {v: i for i, v in enumerate(ARMS)}

    def key(f: RunnerFailure) -> tuple[int, int, int]:
        return (position.get(f.case_id, len(position)), f.trial, variant_rank.get(f.variant, 3))

    return key


def _case_result(case: Case, triggered: list[bool | None], task: CaseTask | None) -> dict[str, Any]:
    # A case without a task check has no pass/fail notion: "with"/"without" are null (not a
    # row of falses). A missing observation is null in its trial's slot.
    return {
        "id": case.id,
        "line": case.line,
        "unit": case.unit,
        "tags": list(case.tags),
        "expectTrigger": case.expect_trigger,
        "triggered": triggered,
        "with": task.passes["with"] if task is not None else None,
        "without": task.passes["without"] if task is not None else None,
        "checks": task.checks if task is not None else [],
        "failedCheck": task.failed_check if task is not None else None,
    }


# ------------------------------------------------------------------------------------- public


def evaluate(
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
    grid = _grid(suite, trials, result.observations)
    observed = [obs for row in grid.values() for obs in row if obs is not None]
    trigger, triggered = _trigger_section(suite, skill.name, grid)
    with RegexPool() as matcher:
        task_results = _task_results(suite, grid, matcher)
    task_passes = {
        (case_id, variant): passes
        for case_id, result in task_results.items()
        for variant, passes in result.passes.items()
    }
    task = _task_section(suite, settings, task_passes, grid)
    violations = _violations(suite, grid)
    # Per-case evidence states only when some runner reported evidence (custom runners need not).
    evidence = any(obs.evidence for obs in observed)
    failures = sorted(result.failures, key=_failure_order(suite))
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
        notes.append(_failures_message(failures))
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
                _baseline_passes(suite, trials, result.observations, task_passes, matcher),
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
    for outcome in outcomes:
        if outcome.code is not None:
            codes.append(outcome.code)
        if outcome.message is not None:
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

    for message in result.messages:  # e.g. a workspace that could not be kept
        notes.warning(message)
    for message in messages:
        notes.note(message)
    for message in run_notes(arm_plan, stopped, settled, settings.seed):
        notes.note(message)

    exit_code = combine(codes)
    report = _envelope(exit_code)
    gates: dict[str, dict[str, Any] | None] = {key: None for key in ALL_GATES}
    gates.update({o.key: o.report for o in outcomes})
    runner: dict[str, Any] = {
        "invocations": result.invocations,
        "failures": [
            {"caseId": f.case_id, "trial": f.trial, "variant": f.variant, "reason": f.reason}
            for f in failures
        ],
        "wallMs": round(result.wall_ms),
        "meta": _meta_sums([*observed, *others]),
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
            "skill": _skill_block(skill),
            "baseline": _baseline_block(baseline),
            "cases": _cases_block(suite),
            "settings": _settings_block(settings),
            "arms": (arm_plan or ArmPlan(arms=("with", "without"))).report_block(),
            "trigger": trigger,
            "task": task,
            "comparison": comparison,
            "loading": {
                "violations": violations,
                "attemptedNotLoaded": _attempted_not_loaded(suite, grid, skill.name),
            },
            "runner": runner,
            "gates": gates,
            "caseResults": [
                _case_result(case, triggered[case.id], task_results.get(case.id))
                | ({"loadState": _load_states(grid, case.id, skill.name)} if evidence else {})
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
            trigger_f1_gate(trigger, settings.min_trigger_f1, _why_f1_undefined(trigger))
        )
    if settings.min_uplift is not None:
        outcomes.append(uplift_gate(task, settings.min_uplift, suite, task_unit_count(suite)))
    return outcomes


def _baseline_passes(
    suite: CaseSuite,
    trials: int,
    observations: Sequence[Observation],
    task_passes: Mapping[tuple[str, str], Sequence[bool | None]],
    matcher: RegexPool,
) -> dict[tuple[str, str], Sequence[bool | None]]:
    """(case id, arm) → task pass per trial for with (as scored) and baseline."""
    rows: dict[str, list[Observation | None]] = {
        c.id: [None] * (2 * trials) for c in suite.cases if c.task is not None
    }
    for obs in observations:
        row = rows.get(obs.case_id)
        if obs.variant == "baseline" and row is not None and 1 <= obs.trial <= trials:
            # Judged like a with-run: its slot in a with/without row.
            row[2 * obs.trial - 2] = row[2 * obs.trial - 2] or obs
    out: dict[tuple[str, str], Sequence[bool | None]] = {}
    for case in suite.cases:
        if case.task is None:
            continue
        out[(case.id, "with")] = task_passes[(case.id, "with")]
        out[(case.id, "baseline")] = judge_case(case, rows[case.id], matcher).passes["with"]
    return out


def _baseline_block(baseline: Skill | None) -> dict[str, Any] | None:
    if baseline is None:
        return None
    return {
        "name": baseline.name,
        "path": str(baseline.path),
        "skillMdSha256": baseline.skill_md_sha256,
        "directorySha256": baseline.directory_sha256,
    }


def _failures_message(failures: Sequence[RunnerFailure]) -> str:
    """One line a person can act on: how many failed, and the most frequent reason (the
    runner's own words when it gave one) with the first invocation it hit."""
    counts: dict[str, int] = {}
    firsts: dict[str, RunnerFailure] = {}
    for failure in failures:
        counts[failure.reason] = counts.get(failure.reason, 0) + 1
        firsts.setdefault(failure.reason, failure)
    reason = max(counts, key=lambda r: counts[r])  # ties: the earliest (dicts keep order)
    first = firsts[reason]
    where = f"{first.case_id} trial {first.trial} {first.variant}"
    if len(counts) == 1:
        head = f"{len(failures)} runner failure(s), all: {reason} (first: {where})"
    else:
        head = (
            f"{len(failures)} runner failure(s) with {len(counts)} different reasons, most "
            f"often ({counts[reason]}×): {reason} (first: {where})"
        )
    return head + "; the evidence is void (every failure is in runner.failures)"


def _why_f1_undefined(trigger: Mapping[str, Any]) -> str:
    if trigger["tp"] + trigger["fn"] == 0:
        return "no observed case expects the skill to trigger (add cases with expectTrigger: true)"
    return "the skill never triggered in an observed with-run, so precision is undefined"


def error_report(
    exit_code: int,
    message: str,
    settings: Settings | None = None,
    skill: Skill | None = None,
    suite: CaseSuite | None = None,
) -> Report:
    """A schema-valid report for a run that stopped before scoring (exit 5, 6 or 7):
    known sections filled, unknown ones null, ``message`` in ``messages``.

    Exit 130 is accepted too (an interrupt before any observation was scored). Gates are filled
    from the settings (threshold known, value and verdict null)."""
    if exit_code not in (INVALID, INSUFFICIENT, UNAVAILABLE, INTERRUPTED):
        raise ValueError(f"error_report is for exit codes 5, 6, 7 and 130, not {exit_code}")
    report = _envelope(exit_code)
    gates = None
    if settings is not None:
        gates = {
            "minTriggerF1": _gate(settings.min_trigger_f1, None, None),
            "minUplift": _gate(settings.min_uplift, None, None),
            **{k: _gate(v, None, None) for k, v in settings.compare.as_dict().items()},
        }
    report.update(
        {
            "skill": _skill_block(skill),
            "cases": _cases_block(suite),
            "settings": _settings_block(settings),
            "baseline": None,
            "arms": None,
            "trigger": None,
            "task": None,
            "comparison": None,
            "loading": None,
            "runner": None,
            "gates": gates,
            "caseResults": None,
            "messages": [message],
            "messageSeverities": ["error"],
        }
    )
    return report
