"""JUnit XML for a route report: one ``<testsuite name="routing">`` built and serialised by the
project's JUnit writer (render/junit_xml.py: one sanitiser, junit-10.xsd shape).

- ``route[<case id>]`` per case: ``<failure>`` when a routing gate failed and the case loaded
  other skills than expected in at least one trial; ``<error>`` when a runner failed on it;
  ``<skipped message="not run: …">`` when none of its observations ran. Misroutes without a
  failed gate are noted in ``system-out`` only.
- ``accuracy`` and ``skill-f1[<name>]`` (each gated skill): the gates themselves (failure when
  failed, error when undefined while gated); without gates one ``routing`` testcase carries
  the figures.
- ``evaluation``: an error with the messages when the run is invalid, insufficient,
  unavailable or interrupted and nothing above already shows an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .diagnosis import gate_partial
from .junit import not_run_reason, render_junit
from .junit_xml import (
    Suite,
    behaviour_case,
    evaluation_error,
    note_properties,
    report_properties,
)
from .numbers import fmt, fmt_threshold
from .values import mapping

SUITE_NAME = "routing"


def _properties(suite: Suite, report: Mapping[str, Any], paths: Mapping[str, str]) -> None:
    gates = mapping(report.get("gates"))
    props = [(name, paths.get(name, value)) for name, value in report_properties(report, [])]
    props += [
        ("min-accuracy", mapping(gates.get("minAccuracy")).get("threshold")),
        ("min-skill-f1", mapping(gates.get("minSkillF1")).get("threshold")),
    ]
    for skill in report.get("catalog") or []:
        skill = mapping(skill)
        props.append((f"catalog.{skill.get('name')}.skillMdSha256", skill.get("skillMdSha256")))
    props += note_properties(report)
    suite.properties = [(name, str(value)) for name, value in props if value is not None]


def _gate_failed(report: Mapping[str, Any]) -> bool:
    gates = mapping(report.get("gates"))
    return any(mapping(gates.get(k)).get("passed") is False for k in ("minAccuracy", "minSkillF1"))


def _case_tests(suite: Suite, report: Mapping[str, Any]) -> bool:
    failures: dict[str, list[Mapping[str, Any]]] = {}
    for failure in mapping(report.get("runner")).get("failures") or []:
        failure = mapping(failure)
        failures.setdefault(str(failure.get("caseId")), []).append(failure)
    gate_failed = _gate_failed(report)
    has_error = False
    for result in report.get("caseResults") or []:
        result = mapping(result)
        cid = str(result.get("id"))
        name = f"route[{cid}]"
        expect = ", ".join(str(e) for e in result.get("expect") or []) or "no skill"
        loaded = result.get("loaded") or []
        wrong = [
            f"trial {i + 1} loaded {', '.join(map(str, got)) or 'no skill'}"
            for i, (got, ok) in enumerate(zip(loaded, result.get("correct") or [], strict=False))
            if isinstance(got, list) and ok is False
        ]
        detail = f"expected {expect}; " + "; ".join(wrong) if wrong else ""
        if cid in failures:
            reasons = "; ".join(f"trial {f.get('trial')}: {f.get('reason')}" for f in failures[cid])
            suite.result(suite.case(name), "error", f"runner failure: {reasons}")
            has_error = True
        elif not any(isinstance(got, list) for got in loaded):
            suite.result(suite.case(name), "skipped", not_run_reason(report))
        elif wrong and gate_failed:
            suite.result(suite.case(name), "failure", f"{detail} (line {result.get('line')})")
        elif wrong:
            suite.case(name, system_out=f"{detail} (no routing gate failed)")
        else:
            suite.case(name)
    return has_error


def _gate_tests(suite: Suite, report: Mapping[str, Any]) -> bool:
    gates = mapping(report.get("gates"))
    figures = (
        f"accuracy {fmt(report.get('accuracy'))}, micro F1 {fmt(report.get('microF1'))}, "
        f"macro F1 {fmt(report.get('macroF1'))}"
    )
    has_error = False
    accuracy = mapping(gates.get("minAccuracy")) or None
    if accuracy is not None:
        tc = suite.case("accuracy")
        threshold = fmt_threshold(accuracy.get("threshold"))
        if accuracy.get("passed") is False:
            message = f"accuracy {fmt(accuracy.get('value'))} < --min-accuracy {threshold}"
            suite.result(tc, "failure", message, figures)
        elif accuracy.get("passed") is None:
            partial = gate_partial(accuracy, report)
            message = (  # a figure of part of the run is never a pass
                f"accuracy {fmt(accuracy.get('value'))}{partial}"
                if partial
                else "accuracy is undefined while --min-accuracy is set"
            )
            suite.result(tc, "error", message, figures)
            has_error = True
    f1_gate = mapping(gates.get("minSkillF1")) or None
    per_skill = {str(mapping(s).get("name")): mapping(s) for s in report.get("perSkill") or []}
    if f1_gate is not None:
        threshold = fmt_threshold(f1_gate.get("threshold"))
        for name in f1_gate.get("skills") or []:
            tc = suite.case(f"skill-f1[{name}]")
            f1 = per_skill.get(str(name), {}).get("f1")
            partial = gate_partial(f1_gate, report)
            if partial:
                suite.result(tc, "error", f"F1 of {name} {fmt(f1)}{partial}")
                has_error = True
            elif name in (f1_gate.get("undefined") or []):
                suite.result(tc, "error", f"F1 of {name} is undefined while --min-skill-f1 is set")
                has_error = True
            elif name in (f1_gate.get("failing") or []):
                suite.result(tc, "failure", f"F1 of {name} {fmt(f1)} < --min-skill-f1 {threshold}")
        if f1_gate.get("passed") is None and not f1_gate.get("skills"):
            suite.result(suite.case("skill-f1"), "error", "no skill's F1 could be gated")
            has_error = True
    if accuracy is None and f1_gate is None and report.get("perSkill") is not None:
        suite.case("routing", system_out=figures)
    return has_error


def routing_suite(report: Mapping[str, Any], paths: Mapping[str, str] | None = None) -> Suite:
    """The ``routing`` testsuite of a route report (also the CI gate's junit.xml uses it);
    ``paths``: how the case file is named (shown_paths.py), else as the report has it."""
    suite = Suite(SUITE_NAME)
    _properties(suite, report, paths or {})
    has_error = _case_tests(suite, report)
    has_error = _gate_tests(suite, report) or has_error
    behaviour_case(suite, report)
    if report.get("exitCode") in (5, 6, 7, 130) and not has_error:
        evaluation_error(suite, report, [str(m) for m in report.get("messages") or []])
    return suite


def render_route_junit(report: Mapping[str, Any]) -> str:
    """The whole JUnit document of one route report, its case file named from the working
    directory when it lies inside it."""
    from .shown_paths import working_paths

    return render_junit([], extra=[(routing_suite(report, working_paths(report)), report)])
