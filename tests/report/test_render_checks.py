"""The first failing check of a failing task, and the efficiency figures, in every output —
each through that output's own escaping."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from typing import Any

from skill_evals.ci.console import failing_cases
from skill_evals.ci.summary import failure_details
from skill_evals.report.blocks import Report
from skill_evals.report.html import render_test_html
from skill_evals.report.junit import render_junit
from skill_evals.report.markdown import render_markdown
from skill_evals.report.test_report import build_test_report
from skill_evals.report.text import render_text
from tests._scoring_data import make_result, make_settings, make_skill, make_suite
from tests.conftest import assert_valid_report

HOSTILE = "file_contains a.md: '<script>x</script> |*_`@team \x1b[31m\u202e' not found"


def scored() -> Report:
    suite = make_suite()
    report = build_test_report(make_skill(), suite, make_settings(), make_result(suite))
    assert_valid_report(report)
    return report


def case(report: Report, case_id: str) -> dict[str, Any]:
    return next(c for c in report["caseResults"] if c["id"] == case_id)


def test_every_output_names_the_failing_check() -> None:
    report = scored()
    # c03 fails its exit_code task with the skill in trial 2 (the scoring fixture).
    assert case(report, "c03")["failedCheck"] == {
        "variant": "with",
        "trial": 2,
        "index": 0,
        "check": "exit_code",
        "reason": "exit_code: exitCode 3, expected 0",
    }
    expected = "c03 (line 3) trial 2: exit_code: exitCode 3, expected 0"
    assert f"Task failed with the skill: {expected}" in render_text(report)
    assert "Task failed with the skill: c03 (line 3) trial 2: exit\\_code: exitCode 3" in (
        render_markdown(report)
    )
    junit = ET.fromstring(render_junit([("refund-policy", report, None)]))
    uplift = next(tc for tc in junit.iter("testcase") if tc.get("name") == "uplift")
    assert "task failed with the skill: c03 trial 2: exit_code: exitCode 3" in ET.tostring(
        uplift, encoding="unicode"
    )
    html = render_test_html(report, "refund-policy", "skills/refund-policy")
    assert "with, trial 2: exit_code: exitCode 3, expected 0" in html
    assert any(
        case_id == "c03" and "the task failed with the skill: exit_code: exitCode 3" in why
        for case_id, _line, why in failing_cases(report)
    )
    skill = {"name": "refund-policy", "exitCode": 1, "report": report, "reason": None}
    assert any("Task failed with the skill: c03 trial 2" in line for line in failure_details(skill))


def test_a_task_failing_only_without_the_skill_is_not_a_next_step() -> None:
    report = scored()
    failed = case(report, "c01")["failedCheck"]
    assert failed is not None and failed["variant"] == "without"
    assert "Task failed with the skill: c01" not in render_text(report)


def test_reasons_are_escaped_in_every_output() -> None:
    report = copy.deepcopy(scored())
    case(report, "c03")["failedCheck"]["reason"] = HOSTILE
    text = render_text(report)
    assert "\x1b" not in text and "\u202e" not in text and "\\u001b" in text
    markdown = render_markdown(report)
    assert "<script>" not in markdown and "\\<script\\>" in markdown
    assert "\x1b" not in markdown and "`@`team" in markdown
    html = render_test_html(report, "refund-policy", "skills/refund-policy")
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    junit = render_junit([("refund-policy", report, None)])
    assert "\x1b" not in junit
    ET.fromstring(junit)  # well-formed


def test_efficiency_is_printed_when_reported() -> None:
    report = scored()
    assert "efficiency (medians): with 0.1 s, $0.2500" in render_text(report)
    assert "Efficiency (medians): with 0.1 s, \\$0.2500" in render_markdown(report)
    report["task"]["efficiency"] = {
        key: {"durationMs": None, "tokens": None, "costUsd": None}
        for key in ("with", "without", "difference")
    }
    assert "efficiency" not in render_text(report)
