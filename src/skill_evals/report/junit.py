"""JUnit XML for one or many skill reports (``test --junit``, the CI gate's junit.xml).

Mapping (decided so that a JUnit report action goes red when the exit code says so, and marks
the very case a reviewer must fix):

- ``trigger[<case id>]`` per case: ``<failure>`` when the trigger gate failed and this case was
  misrouted in at least one trial; ``<error>`` when a runner failed on this case; ``<skipped
  message="not run: …">`` when none of the case's observations ran (fail-fast after a runner
  failure, an interrupt, a stopped run). Misroutes without a failed gate are noted in
  ``system-out`` only.
- ``task[<case id>]`` per case with a task check (report/junit_task.py): failure when the task
  failed with the skill in a trial that ran and the uplift gate failed; else the failed trials
  are noted in ``system-out`` and a suite property (a passing gate has no failure anywhere).
- ``trigger``: the F1 gate itself (failure when it failed; error when F1 is undefined while gated
  or the figure is partial — the run stopped before every invocation ran: never a pass).
- ``uplift``: failure when the uplift gate failed; error when it cannot be decided (no task
  checks, fewer than ten units); skipped when there are no task checks and no gate.
- ``loading[<case id>]``: one per case with a loading violation, always a failure.
- ``evaluation``: an error carrying the report's messages when the run is invalid, insufficient,
  unavailable or interrupted and nothing above already shows an error.
- A skill that was not evaluated is a suite with one ``skill`` testcase holding ``<skipped>``;
  one that fails without a report (no cases file) holds ``<failure>``.

The XML itself (the element builder, times, the sanitiser) is render/junit_xml.py.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import severities_of
from .comparison import pairs_text
from .diagnosis import gate_partial
from .junit_comparison import comparison_case, scope_properties
from .junit_task import task_cases
from .junit_xml import (
    Suite,
    behaviour_case,
    evaluation_error,
    junit_time,
    note_properties,
    report_properties,
    serialise,
)
from .lists import LIST_LIMIT
from .next_steps import task_failures
from .numbers import fmt, fmt_p, fmt_signed, fmt_threshold
from .values import mapping


@dataclass(frozen=True)
class SuiteInput:
    """One skill's suite: its report, or why it has none (``skipped`` or ``failed``)."""

    name: str
    report: Mapping[str, Any] | None = None
    skipped: str | None = None  # not evaluated: the reason, as a <skipped> testcase
    failed: str | None = None  # fails without a report (no cases file), as a <failure>
    failure_type: str = "no-cases"
    # How the path properties name the skill, cases and baseline (shown_paths.py); a path
    # not given here is shown as the report has it.
    paths: Mapping[str, str] = field(default_factory=dict)


def _properties(suite: Suite, report: Mapping[str, Any], paths: Mapping[str, str]) -> None:
    skill = mapping(report.get("skill"))
    gates = mapping(report.get("gates"))
    identity: list[tuple[str, object]] = [
        ("skill.path", skill.get("path")),
        ("skillMdSha256", skill.get("skillMdSha256")),
        ("directorySha256", skill.get("directorySha256")),
    ]
    props = report_properties(report, identity)
    props.append(("bootstrapSamples", mapping(report.get("settings")).get("bootstrapSamples")))
    for key, label in (("minTriggerF1", "min-trigger-f1"), ("minUplift", "min-uplift")):
        props.append((label, mapping(gates.get(key)).get("threshold")))
    props += scope_properties(report)
    props += note_properties(report)
    props = [(name, paths.get(name, value)) for name, value in props]
    suite.properties = [(name, str(value)) for name, value in props if value is not None]


def _trial_list(trials: Sequence[int]) -> str:
    return ", ".join(str(t) for t in trials)


def _ran(result: Mapping[str, Any]) -> bool:
    """True when at least one observation of the case was recorded."""
    return any(
        isinstance(values, list) and any(v is not None for v in values)
        for values in (result.get("triggered"), result.get("with"), result.get("without"))
    )


def not_run_reason(report: Mapping[str, Any]) -> str:
    """``not run: …`` for a case none of whose observations ran, saying why the run stopped."""
    if report.get("status") == "interrupted" or report.get("exitCode") == 130:
        return "not run: the run was interrupted before this case"
    if mapping(report.get("runner")).get("failures"):
        return "not run: the run stopped after a runner failure (fail-fast; see --keep-going)"
    stop = mapping(mapping(report.get("runner")).get("stoppedEarly"))
    if stop.get("settled") is True:
        return "not run: the verdict was settled before this case (--stop-when-settled)"
    if stop.get("reason") == "budget":
        return "not run: the budget was reached before this case"
    return "not run: the run stopped before this case"


def _case_suite(suite: Suite, report: Mapping[str, Any], case_results: list[Any]) -> bool:
    """The ``trigger[<id>]`` testcases; returns True when one holds an error."""
    gates = mapping(report.get("gates"))
    trigger_gate_failed = mapping(gates.get("minTriggerF1")).get("passed") is False
    failures_by_case: dict[str, list[Mapping[str, Any]]] = {}
    for f in mapping(report.get("runner")).get("failures") or []:
        if isinstance(f, Mapping):
            failures_by_case.setdefault(str(f.get("caseId")), []).append(f)
    has_error = False
    for result in case_results:
        if not isinstance(result, Mapping):
            continue
        cid = str(result.get("id"))
        expect = bool(result.get("expectTrigger"))
        wrong = [
            i + 1
            for i, t in enumerate(result.get("triggered") or [])
            if t is not None and t != expect
        ]
        what = "expected the skill to load" if expect else "expected the skill not to load"
        detail = f"{what}; wrong in trial(s) {_trial_list(wrong)}" if wrong else ""
        if cid in failures_by_case:
            tc = suite.case(f"trigger[{cid}]")
            reasons = "; ".join(
                f"trial {f.get('trial')} {f.get('variant')}: {f.get('reason')}"
                for f in failures_by_case[cid]
            )
            suite.result(tc, "error", f"runner failure: {reasons}")
            has_error = True
        elif not _ran(result):
            suite.result(suite.case(f"trigger[{cid}]"), "skipped", not_run_reason(report))
        elif wrong and trigger_gate_failed:
            tc = suite.case(f"trigger[{cid}]")
            suite.result(tc, "failure", f"{detail} (line {result.get('line')})")
        elif wrong:
            suite.case(f"trigger[{cid}]", system_out=f"{detail} (no trigger gate failed)")
        else:
            suite.case(f"trigger[{cid}]")
    return has_error


def _trigger_case(suite: Suite, report: Mapping[str, Any], trigger: Mapping[str, Any]) -> bool:
    f1_gate = mapping(mapping(report.get("gates")).get("minTriggerF1")) or None
    figures = (
        f"precision {fmt(trigger.get('precision'))}, recall {fmt(trigger.get('recall'))}, "
        f"F1 {fmt(trigger.get('f1'))}"
    )
    if f1_gate is not None and f1_gate.get("passed") is False:
        tc = suite.case("trigger")
        suite.result(
            tc,
            "failure",
            f"trigger F1 {fmt(f1_gate.get('value'))} < --min-trigger-f1 "
            f"{fmt_threshold(f1_gate.get('threshold'))}",
            figures,
        )
    elif f1_gate is not None and f1_gate.get("passed") is None:
        tc = suite.case("trigger")
        partial = gate_partial(f1_gate, report)
        message = (  # a figure of part of the run is never a pass: an error, like exit 7
            f"trigger F1 {fmt(f1_gate.get('value'))}{partial}"
            if partial
            else "trigger F1 is undefined while --min-trigger-f1 is set"
        )
        suite.result(tc, "error", message, figures)
        return True
    elif not _any_ran(report):
        suite.result(suite.case("trigger"), "skipped", not_run_reason(report))
    else:
        suite.case("trigger", system_out=figures)
    return False


def _any_ran(report: Mapping[str, Any]) -> bool:
    results = report.get("caseResults")
    return isinstance(results, list) and any(isinstance(r, Mapping) and _ran(r) for r in results)


def _uplift_case(suite: Suite, report: Mapping[str, Any]) -> bool:
    task = report.get("task")
    up_gate = mapping(mapping(report.get("gates")).get("minUplift")) or None
    if isinstance(task, Mapping):
        interval = mapping(task.get("interval"))
        figures = (
            f"difference {fmt_signed(task.get('difference'))}, 95% interval "
            f"[{fmt_signed(interval.get('lower'))}, {fmt_signed(interval.get('upper'))}], "
            f"sign test p = {fmt_p(mapping(task.get('signTest')).get('pValue'))}, "
            f"{task.get('units')} unit(s)"
        )
        if task.get("mode") == "pairwise":
            figures += "\n" + pairs_text(task, "without")
        failed = task_failures(report)
        for item in failed[:LIST_LIMIT]:
            figures += (
                f"\ntask failed with the skill: {item['caseId']} trial {item['trial']}: "
                f"{item['reason']}"
            )
        if len(failed) > LIST_LIMIT:
            figures += f"\n… and {len(failed) - LIST_LIMIT} more (see the JSON report)"
        if up_gate is not None and up_gate.get("passed") is False:
            suite.result(
                suite.case("uplift"),
                "failure",
                f"uplift lower bound {fmt_signed(up_gate.get('value'))} < --min-uplift "
                f"{fmt_threshold(up_gate.get('threshold'))}",
                figures,
            )
        elif up_gate is not None and up_gate.get("passed") is None:
            partial = gate_partial(up_gate, report)
            message = (
                f"uplift lower bound {fmt_signed(up_gate.get('value'))}{partial}"
                if partial
                else "the uplift gate cannot be decided"
            )
            suite.result(suite.case("uplift"), "error", message, figures)
            return True
        elif not _any_ran(report):
            suite.result(suite.case("uplift"), "skipped", not_run_reason(report))
        else:
            suite.case("uplift", system_out=figures)
        return False
    if up_gate is not None:
        suite.result(
            suite.case("uplift"), "error", "--min-uplift is set but no case has a task check"
        )
        return True
    suite.result(suite.case("uplift"), "skipped", "no case has a task check")
    return False


def _isolation_case(suite: Suite, report: Mapping[str, Any]) -> bool:
    """An ``isolation`` testcase when some without runs are isolation unverified: an error when
    that made the run unavailable (--require-verified-isolation), else passing with the line in
    system-out. True when it added an error."""
    count = mapping(report.get("loading")).get("isolationUnverified")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return False
    line = next(
        (m for _, m in severities_of(report) if m.startswith("isolation unverified on ")), None
    )
    if line is None:
        return False
    errors = [m for severity, m in severities_of(report) if severity == "error"]
    if line in errors:
        suite.result(suite.case("isolation"), "error", line)
        return True
    suite.case("isolation", system_out=line)
    return False


def _loading_cases(suite: Suite, report: Mapping[str, Any]) -> None:
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for v in mapping(report.get("loading")).get("violations") or []:
        if isinstance(v, Mapping):
            by_case.setdefault(str(v.get("caseId")), []).append(v)
    for cid, items in by_case.items():
        parts = []
        for v in items:
            bits = []
            if v.get("missing"):
                bits.append("not loaded: " + ", ".join(map(str, v["missing"])))
            if v.get("forbidden"):
                bits.append("loaded but excluded: " + ", ".join(map(str, v["forbidden"])))
            parts.append(f"trial {v.get('trial')} {v.get('variant')}: " + "; ".join(bits))
        tc = suite.case(f"loading[{cid}]")
        suite.result(tc, "failure", "loading violation: " + " | ".join(parts))


def _skill_suite(name: str, report: Mapping[str, Any], paths: Mapping[str, str]) -> Suite:
    suite = Suite(name)
    _properties(suite, report, paths)
    has_error = False
    case_results = report.get("caseResults")
    if isinstance(case_results, list):
        has_error = _case_suite(suite, report, case_results)
        has_error = task_cases(suite, report, case_results, not_run_reason) or has_error
    trigger = report.get("trigger")
    if isinstance(trigger, Mapping):
        has_error = _trigger_case(suite, report, trigger) or has_error
        has_error = _uplift_case(suite, report) or has_error
        has_error = comparison_case(suite, report) or has_error
        _loading_cases(suite, report)
        has_error = _isolation_case(suite, report) or has_error
    behaviour_case(suite, report)
    if report.get("exitCode") in (5, 6, 7, 130) and not has_error:
        # The errors explain the exit code; warnings and notes follow them.
        ranked = sorted(severities_of(report), key=lambda item: item[0] != "error")
        evaluation_error(suite, report, [text for _, text in ranked])
    return suite


def _as_input(item: SuiteInput | tuple[str, Mapping[str, Any] | None, str | None]) -> SuiteInput:
    if isinstance(item, SuiteInput):
        return item
    name, report, reason = item
    if report is None:
        return SuiteInput(name, skipped=reason or "not evaluated")
    return SuiteInput(name, report=report)


def _wall_seconds(report: Mapping[str, Any] | None) -> float:
    wall_ms = mapping(mapping(report).get("runner")).get("wallMs")
    if isinstance(wall_ms, bool) or not isinstance(wall_ms, (int, float)):
        return 0.0
    return float(wall_ms) / 1000 if math.isfinite(wall_ms) and wall_ms > 0 else 0.0


def render_junit(
    suites: Sequence[SuiteInput | tuple[str, Mapping[str, Any] | None, str | None]],
    extra: Sequence[tuple[Suite, Mapping[str, Any] | None]] = (),
) -> str:
    """``suites``: a :class:`SuiteInput` per skill, or (skill name, report or None, skip reason
    or None).

    <testsuites name="skill-evals"> → one <testsuite> per skill with properties (hashes, trials,
    seed, thresholds) → testcases ``trigger[<case id>]``, ``task[<case id>]``, ``uplift``,
    ``loading[<case id>]`` on violation. Gate failures are <failure>, runner failures <error>,
    skipped skills and cases that did not run <skipped>; ``time`` always present. ``extra``:
    suites built elsewhere (the routing suite, route/render_junit.py) with the report whose wall
    time they take."""
    root = ET.Element("testsuites", name="skill-evals")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    built: list[tuple[Suite, Mapping[str, Any] | None]] = []
    for item in map(_as_input, suites):
        if item.report is not None:
            suite = _skill_suite(item.name, item.report, item.paths)
        else:
            suite = Suite(item.name)
            tc = suite.case("cases" if item.failed is not None else "skill")
            if item.failed is not None:
                suite.result(tc, "failure", item.failed).set("type", item.failure_type)
            else:
                suite.result(tc, "skipped", item.skipped or "not evaluated")
        built.append((suite, item.report))
    for suite, report in [*built, *extra]:
        # A suite's time is its run's wall time (testcases carry 0: invocations interleave
        # across cases, so no per-case time exists).
        wall = _wall_seconds(report)
        total_time += wall
        root.append(suite.element(wall))
        totals["tests"] += len(suite.cases)
        totals["failures"] += suite.counts["failures"]
        totals["errors"] += suite.counts["errors"]
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("time", junit_time(total_time))
    return serialise(root)
