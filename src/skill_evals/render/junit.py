"""JUnit XML via junitparser (docs/ci.md), for one or many skill reports.

Mapping (decided so that a JUnit report action goes red exactly when the exit code says so):

- ``trigger[<case id>]`` per case: ``<failure>`` when the trigger gate failed and this case was
  misrouted in at least one trial; ``<error>`` when a runner failed on this case. Misroutes
  without a failed gate are noted in ``system-out`` only.
- ``trigger``: the F1 gate itself (failure when it failed, error when F1 is undefined while gated).
- ``uplift``: failure when the uplift gate failed; error when it cannot be decided (no task
  checks, fewer than ten units); skipped when there are no task checks and no gate.
- ``loading[<case id>]``: one per case with a loading violation, always a failure.
- ``evaluation``: an error carrying the report's messages when the run is invalid, insufficient,
  unavailable or interrupted and nothing above already shows an error.
- A skipped skill is a suite with one ``skill`` testcase holding ``<skipped>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from .text import fmt, fmt_p, fmt_signed, fmt_threshold

# Characters XML 1.0 cannot carry (a case id may hold them); they are replaced, never written.
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(value: object) -> str:
    return _XML_INVALID.sub("\ufffd", str(value))


def _case(name: str, classname: str) -> TestCase:
    case = TestCase(_x(name), classname=_x(classname), time=0.0)
    return case


def _result(case: TestCase, kind: type, message: str, text: str | None = None) -> None:
    entry = kind(_x(message), kind.__name__.lower() if kind is not Skipped else None)
    if text:
        entry.text = _x(text)
    case.result = [entry]


def _properties(suite: TestSuite, report: Mapping[str, Any]) -> None:
    skill = report.get("skill") or {}
    cases = report.get("cases") or {}
    settings = report.get("settings") or {}
    gates = report.get("gates") or {}
    props: list[tuple[str, object]] = [
        ("status", report.get("status")),
        ("exitCode", report.get("exitCode")),
        ("tool.version", (report.get("tool") or {}).get("version")),
        ("skill.path", skill.get("path")),
        ("skillMdSha256", skill.get("skillMdSha256")),
        ("directorySha256", skill.get("directorySha256")),
        ("cases.path", cases.get("path")),
        ("cases.sha256", cases.get("sha256")),
        ("mode", settings.get("mode")),
        ("trials", settings.get("trials")),
        ("seed", settings.get("seed")),
        ("bootstrapSamples", settings.get("bootstrapSamples")),
    ]
    for key, label in (("minTriggerF1", "min-trigger-f1"), ("minUplift", "min-uplift")):
        gate = gates.get(key)
        props.append((label, gate.get("threshold") if isinstance(gate, Mapping) else None))
    for name, value in props:
        if value is not None:
            suite.add_property(name, _x(value))


def _trial_list(trials: Sequence[int]) -> str:
    return ", ".join(str(t) for t in trials)


def _skill_suite(name: str, report: Mapping[str, Any]) -> TestSuite:
    suite = TestSuite(_x(name))
    _properties(suite, report)
    gates = report.get("gates") or {}
    f1_gate = gates.get("minTriggerF1") if isinstance(gates.get("minTriggerF1"), Mapping) else None
    up_gate = gates.get("minUplift") if isinstance(gates.get("minUplift"), Mapping) else None
    failures = (report.get("runner") or {}).get("failures") or []
    failures_by_case: dict[str, list[Mapping[str, Any]]] = {}
    for f in failures:
        failures_by_case.setdefault(str(f.get("caseId")), []).append(f)
    has_error = False
    case_results = report.get("caseResults")

    if isinstance(case_results, list):
        trigger_gate_failed = f1_gate is not None and f1_gate.get("passed") is False
        for result in case_results:
            cid = str(result.get("id"))
            tc = _case(f"trigger[{cid}]", name)
            expect = bool(result.get("expectTrigger"))
            wrong = [
                i + 1
                for i, t in enumerate(result.get("triggered") or [])
                if t is not None and t != expect
            ]
            what = "expected the skill to load" if expect else "expected the skill not to load"
            detail = f"{what}; wrong in trial(s) {_trial_list(wrong)}" if wrong else ""
            if cid in failures_by_case:
                reasons = "; ".join(
                    f"trial {f.get('trial')} {f.get('variant')}: {f.get('reason')}"
                    for f in failures_by_case[cid]
                )
                _result(tc, Error, f"runner failure: {reasons}")
                has_error = True
            elif wrong and trigger_gate_failed:
                _result(tc, Failure, f"{detail} (line {result.get('line')})")
            elif wrong:
                tc.system_out = _x(f"{detail} (no trigger gate failed)")
            suite.add_testcase(tc)

    trigger = report.get("trigger")
    if isinstance(trigger, Mapping):
        tc = _case("trigger", name)
        figures = (
            f"precision {fmt(trigger.get('precision'))}, recall {fmt(trigger.get('recall'))}, "
            f"F1 {fmt(trigger.get('f1'))}"
        )
        if f1_gate is not None and f1_gate.get("passed") is False:
            _result(
                tc,
                Failure,
                f"trigger F1 {fmt(f1_gate.get('value'))} < --min-trigger-f1 "
                f"{fmt_threshold(f1_gate.get('threshold'))}",
                figures,
            )
        elif f1_gate is not None and f1_gate.get("passed") is None:
            _result(tc, Error, "trigger F1 is undefined while --min-trigger-f1 is set", figures)
            has_error = True
        else:
            tc.system_out = _x(figures)
        suite.add_testcase(tc)

        task = report.get("task")
        tc = _case("uplift", name)
        if isinstance(task, Mapping):
            interval = task.get("interval") or {}
            figures = (
                f"difference {fmt_signed(task.get('difference'))}, 95% interval "
                f"[{fmt_signed(interval.get('lower'))}, {fmt_signed(interval.get('upper'))}], "
                f"sign test p = {fmt_p((task.get('signTest') or {}).get('pValue'))}, "
                f"{task.get('units')} unit(s)"
            )
            if up_gate is not None and up_gate.get("passed") is False:
                _result(
                    tc,
                    Failure,
                    f"uplift lower bound {fmt_signed(up_gate.get('value'))} < --min-uplift "
                    f"{fmt_threshold(up_gate.get('threshold'))}",
                    figures,
                )
            elif up_gate is not None and up_gate.get("passed") is None:
                _result(tc, Error, "the uplift gate cannot be decided", figures)
                has_error = True
            else:
                tc.system_out = _x(figures)
        elif up_gate is not None:
            _result(tc, Error, "--min-uplift is set but no case has a task check")
            has_error = True
        else:
            _result(tc, Skipped, "no case has a task check")
        suite.add_testcase(tc)

        by_case: dict[str, list[Mapping[str, Any]]] = {}
        for v in (report.get("loading") or {}).get("violations") or []:
            by_case.setdefault(str(v.get("caseId")), []).append(v)
        for cid, items in by_case.items():
            tc = _case(f"loading[{cid}]", name)
            parts = []
            for v in items:
                bits = []
                if v.get("missing"):
                    bits.append("not loaded: " + ", ".join(map(str, v["missing"])))
                if v.get("forbidden"):
                    bits.append("loaded but excluded: " + ", ".join(map(str, v["forbidden"])))
                parts.append(f"trial {v.get('trial')} {v.get('variant')}: " + "; ".join(bits))
            _result(tc, Failure, "loading violation: " + " | ".join(parts))
            suite.add_testcase(tc)

    exit_code = report.get("exitCode")
    if exit_code in (5, 6, 7, 130) and not has_error:
        tc = _case("evaluation", name)
        messages = [str(m) for m in report.get("messages") or []]
        _result(
            tc,
            Error,
            messages[0] if messages else f"status {report.get('status')}",
            "\n".join(messages),
        )
        suite.add_testcase(tc)
    return suite


def _skipped_suite(name: str, reason: str | None) -> TestSuite:
    suite = TestSuite(_x(name))
    tc = _case("skill", name)
    _result(tc, Skipped, reason or "not evaluated")
    suite.add_testcase(tc)
    return suite


def render_junit(suites: Sequence[tuple[str, dict[str, Any] | None, str | None]]) -> str:
    """``suites``: (skill name, test report or None, skip reason or None) per skill.

    <testsuites name="skill-evals"> → one <testsuite> per skill with properties (hashes, trials,
    seed, thresholds) → testcases ``trigger[<case id>]``, ``uplift``, ``loading[<case id>]`` on
    violation. Gate failures are <failure>, runner failures <error>, skipped skills <skipped>;
    ``time`` always present."""
    root = JUnitXml("skill-evals")
    walls: list[tuple[TestSuite, float]] = []
    for name, report, reason in suites:
        if report is None:
            suite = _skipped_suite(name, reason)
            wall = 0.0
        else:
            suite = _skill_suite(name, report)
            runner = report.get("runner")
            wall_ms = runner.get("wallMs") if isinstance(runner, Mapping) else None
            wall = float(wall_ms) / 1000 if isinstance(wall_ms, (int, float)) else 0.0
        root.add_testsuite(suite)
        walls.append((suite, wall))
    # Recounts every suite too (and sums testcase times into them).
    root.update_statistics()  # type: ignore[no-untyped-call]
    # A suite's time is its run's wall time (testcases carry 0: invocations interleave across
    # cases, so no per-case time exists). Set after update_statistics, which would overwrite it.
    for suite, wall in walls:
        suite.time = round(wall, 3)
    root.time = round(sum(wall for _, wall in walls), 3)
    body: bytes = root.tostring()  # type: ignore[no-untyped-call]
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body.decode("utf-8") + "\n"
