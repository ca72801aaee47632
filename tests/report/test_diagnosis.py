"""What the outputs say about a run: message severities (each in its place), runner failures
grouped by reason with advice, partial figures marked with their coverage — in text, Markdown,
HTML and the CI summary and comment alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from skill_evals.ci.summary import failure_details, notes_lines, render_comment, render_summary
from skill_evals.messages import Messages, by_severity, severities_of
from skill_evals.report.blocks import Report
from skill_evals.report.diagnosis import advice_for, failure_groups, partial_note
from skill_evals.report.html import render_html
from skill_evals.report.markdown import render_markdown
from skill_evals.report.test_report import build_test_report
from skill_evals.report.text import render_text
from skill_evals.run.observations import RunnerFailure
from tests._scoring_data import make_result, make_settings, make_skill, make_suite
from tests.conftest import assert_valid_report


def ci_report(report: Report) -> dict[str, Any]:
    skill = {
        "name": "refund-policy",
        "path": "skills/refund-policy",
        "cases": "skills/refund-policy/evals/cases.jsonl",
        "fingerprint": "f" * 64,
        "status": "evaluated",
        "reason": "changed",
        "exitCode": report["exitCode"],
        "report": report,
        "simulated": False,
    }
    return {
        "schemaVersion": 1,
        "tool": {"name": "skill-evals", "version": "0"},
        "status": report["status"],
        "exitCode": report["exitCode"],
        "base": {"mode": "all"},
        "skills": [skill],
        "changedSkills": ["refund-policy"],
        "simulated": False,
        "messages": [],
    }


def few_task_units_f1_gate_failed() -> Report:
    """F1 gate failed; uplift reported on 5 task units (no uplift gate): one error, one note."""
    suite = make_suite()
    cases = tuple(c if c.id <= "c05" else replace(c, task=None) for c in suite.cases)
    suite = replace(suite, cases=cases)
    report = build_test_report(
        make_skill(), suite, make_settings(min_trigger_f1=0.99), make_result(suite)
    )
    assert_valid_report(report)
    return report


def fail_fast_report(failures: tuple[RunnerFailure, ...]) -> Report:
    """Runner failures, and every observation after c04 never ran (fail-fast)."""
    suite = make_suite()
    late = [
        (c.id, t, v)
        for c in suite.cases
        if c.id > "c04"
        for t in (1, 2)
        for v in ("with", "without")
    ]
    dropped = [*late, *((f.case_id, f.trial, f.variant) for f in failures)]
    result = make_result(suite, drop=dropped, failures=failures)
    report = build_test_report(make_skill(), suite, make_settings(), result)
    assert_valid_report(report)
    return report


# ------------------------------------------------------------------------------- severities


def test_a_note_is_never_listed_as_what_failed() -> None:
    report = few_task_units_f1_gate_failed()
    assert report["exitCode"] == 1
    levels = dict((text.split(":")[0], level) for level, text in severities_of(report))
    assert levels["gate failed"] == "error"
    (note,) = by_severity(report, "note")
    assert note.startswith("uplift rests on 5 independent case(s)")
    assert len(report["messageSeverities"]) == len(report["messages"])

    text = render_text(report)
    failed = text[text.index("What failed") : text.index("Notes")]
    assert "gate failed: trigger F1" in failed and "uplift rests on" not in failed
    assert "Notes\n  - uplift rests on 5" in text

    md = render_markdown(report)
    failed_md = md[md.index("#### What failed") : md.index("#### Notes")]
    assert "uplift rests on" not in failed_md and "uplift rests on" in md

    entry = ci_report(report)["skills"][0]
    assert not any("uplift rests on" in line for line in failure_details(entry))
    assert any("note: uplift rests on" in line for line in notes_lines(entry))
    summary = render_summary(ci_report(report))
    what_failed = summary[summary.index(": what failed") : summary.index("### Warnings and notes")]
    assert "uplift rests on" not in what_failed
    html = render_html(ci_report(report))
    assert "<h4>What failed</h4>" in html and "<h4>Notes</h4>" in html


def test_reports_without_severities_fall_back_safely() -> None:
    # A report written before messageSeverities existed: nothing that explains a failure
    # may turn into a note.
    failing = {"exitCode": 1, "messages": ["gate failed: x"]}
    assert severities_of(failing) == [("error", "gate failed: x")]
    passing = {"exitCode": 0, "messages": ["fyi"], "messageSeverities": ["bogus"]}
    assert severities_of(passing) == [("note", "fyi")]
    messages = Messages()
    messages.append("e")
    messages.warning("w")
    messages.note("n")
    assert messages.severities() == ["error", "warning", "note"]
    assert messages.texts() == ["e", "w", "n"]


def test_skill_format_warnings_are_warnings() -> None:
    suite = make_suite()
    skill = make_skill(warnings=("SKILL.md: description contains '<'",))
    report = build_test_report(skill, suite, make_settings(), make_result(suite))
    text = render_text(report)
    assert "Warnings\n  - skill format: SKILL.md: description contains '<'" in text
    assert "What failed" not in text


# ---------------------------------------------------------------------------- failures


def test_failures_are_grouped_by_reason_with_count_first_case_and_advice() -> None:
    failures = (
        RunnerFailure("c01", 1, "with", "exited with code 2 (a runner must exit 0)"),
        RunnerFailure("c02", 1, "without", "timed out after 30000 ms"),
        RunnerFailure("c03", 2, "with", "timed out after 30000 ms"),
        RunnerFailure("c04", 1, "with", "runner: rate limited (HTTP 429)"),
    )
    report = fail_fast_report(failures)
    groups = failure_groups(report)
    assert [(g.reason, g.count, g.first) for g in groups] == [
        ("timed out after 30000 ms", 2, "c02 trial 1 without"),
        ("exited with code 2 (a runner must exit 0)", 1, "c01 trial 1 with"),
        ("runner: rate limited (HTTP 429)", 1, "c04 trial 1 with"),
    ]
    assert "--timeout-ms" in groups[0].advice
    assert "run it by hand" in groups[1].advice
    assert "--jobs" in groups[2].advice
    # The one-line message (also the stderr line) names the most frequent reason.
    first = by_severity(report, "error")[0]
    assert first.startswith("4 runner failure(s) with 3 different reasons, most often (2×): ")
    assert "timed out after 30000 ms (first: c02 trial 1 without)" in first

    text = render_text(report)
    assert "Runner failures: 4 in 3 distinct reason(s)" in text
    assert "  - 2× timed out after 30000 ms — first: c02 trial 1 without" in text
    md = render_markdown(report)
    assert "| timed out after 30000 ms | 2 | c02 trial 1 without |" in md
    html = render_html(ci_report(report))
    assert "Runner failures by reason" in html and "<td>timed out after 30000 ms</td>" in html
    details = "\n".join(failure_details(ci_report(report)["skills"][0]))
    assert "Runner failure ×2: timed out after 30000 ms (first: c02 trial 1 without)" in details


def test_advice_for_every_engine_reason() -> None:
    assert "installed" in advice_for("cannot start 'claude': No such file or directory")
    assert "--max-bytes" in advice_for("output exceeded 1000000 bytes (stdout + stderr)")
    assert "without" in advice_for("isolation breach: the without variant reported …")
    assert "one JSON object" in advice_for("stdout has more than one line (2)")
    assert "API key" in advice_for("runner: authentication failed (HTTP 401)")
    assert "docs/runner-contract.md" in advice_for("something new")


# ---------------------------------------------------------------------------- partial


def test_partial_figures_are_marked_everywhere() -> None:
    report = fail_fast_report((RunnerFailure("c04", 1, "with", "timed out after 30000 ms"),))
    assert report["coverage"] == {"observed": 15, "planned": 48}
    assert partial_note(report) == "partial: 15 of 48, not decided"
    text = render_text(report)
    headline = text.splitlines()[0]
    assert headline.startswith("UNAVAILABLE  refund-policy — trigger F1 ")
    assert "(partial: 15 of 48, not decided)" in headline
    assert "Trigger (with-variant observations; partial: 15 of 48, not decided)" in text
    md = render_markdown(report)
    assert "partial: 15 of 48, not decided" in md
    row = next(line for line in md.splitlines() if line.startswith("| refund-policy |"))
    assert row.count("(partial: 15 of 48, not decided)") == 2
    summary = render_summary(ci_report(report))
    assert summary.count("(partial: 15 of 48, not decided)") == 2  # F1 and uplift cells
    assert "(partial: 15 of 48, not decided)" in render_comment(ci_report(report))
    html = render_html(ci_report(report))
    assert "(partial: 15 of 48, not decided)" in html and "Partial figures" in html


def test_complete_runs_are_not_marked_partial() -> None:
    suite = make_suite()
    report = build_test_report(make_skill(), suite, make_settings(), make_result(suite))
    assert report["coverage"] == {"observed": 48, "planned": 48}
    assert "partial" not in render_text(report)
    assert "partial" not in render_markdown(report).lower()
    assert "partial" not in render_summary(ci_report(report)).lower()


def test_errors_come_first_and_junit_explains_with_an_error_not_a_note() -> None:
    from junitparser import Error, JUnitXml

    from skill_evals.report.junit import render_junit

    suite = make_suite()
    report = build_test_report(
        make_skill(),
        suite,
        make_settings(),
        make_result(suite),
        skill_changed=True,
        messages=("the runner is simulated",),
    )
    assert_valid_report(report)
    assert report["messageSeverities"][0] == "error"
    assert report["messages"][-1] == "the runner is simulated"
    xml = JUnitXml.fromstring(render_junit([("refund-policy", report, None)]).encode())
    (case,) = [c for s in xml for c in s if c.name == "evaluation"]
    assert isinstance(case.result[0], Error)
    assert "changed during the run" in (case.result[0].message or "")


@pytest.mark.parametrize(
    ("reason", "advice"),
    [
        ("runner: Authentication failed", "no usable credentials"),
        ("runner: API key expired", "no usable credentials"),
        ("runner: Too Many Requests", "rate-limited"),
        ("runner: quota exceeded for this month", "rate-limited"),
        ("runner: Service Unavailable", "did not answer"),
        ("runner: ECONNREFUSED 127.0.0.1:443", "did not answer"),
        ("runner: request timed out after 60 s", "did not answer"),
        ("runner: spawn gemini ENOENT", "program is missing"),
        ("runner: command not found: opencode", "program is missing"),
        ("runner: 'codex' not found on PATH; install it or pass --bin PATH", "program is missing"),
        ("runner: model 'claude-x' not found", "its own documentation"),
        ("runner: model not found (ProviderModelNotFoundError): check --model", "its own"),
    ],
)
def test_advice_follows_the_class_of_a_runner_s_own_words(reason: str, advice: str) -> None:
    assert advice in advice_for(reason)
