"""Renderers: text, Markdown (escape_md), JUnit (read back with junitparser), JSON."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junitparser import Error, Failure, JUnitXml, Skipped

from skill_evals.report.blocks import Report, error_report
from skill_evals.report.json import render_json
from skill_evals.report.junit import render_junit
from skill_evals.report.markdown import escape_md, render_markdown
from skill_evals.report.md_text import code_pieces, fork_safe, md_text
from skill_evals.report.test_report import build_test_report
from skill_evals.report.text import render_text
from skill_evals.run.observations import RunnerFailure
from tests._scoring_data import (
    OUTPUT_MARK,
    PROMPT_MARK,
    STDERR_MARK,
    make_result,
    make_settings,
    make_skill,
    make_suite,
)
from tests.conftest import assert_valid_report


def report_for(
    *, loaded: bool = False, failures: tuple[RunnerFailure, ...] = (), **gates: Any
) -> Report:
    suite = make_suite(loaded=loaded)
    result = make_result(
        suite, drop=[(f.case_id, f.trial, f.variant) for f in failures], failures=failures
    )
    report = build_test_report(make_skill(), suite, make_settings(**gates), result)
    assert_valid_report(report)
    return report


def renderings(report: Report) -> dict[str, str]:
    return {
        "text": render_text(report),
        "markdown": render_markdown(report),
        "junit": render_junit([("refund-policy", report, None)]),
        "json": render_json(report),
    }


FAILURE = RunnerFailure("c04", 2, "without", "timed out after 30000 ms")

SCENARIOS = {
    "pass": {},
    "fail": {"loaded": True, "min_trigger_f1": 0.99, "min_uplift": 0.5},
    "unavailable": {"failures": (FAILURE,)},
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_prompt_output_or_stderr_in_any_rendering(name: str) -> None:
    report = report_for(**SCENARIOS[name])
    for fmt, text in renderings(report).items():
        for mark in (PROMPT_MARK, OUTPUT_MARK, STDERR_MARK):
            assert mark not in text, (fmt, mark)


# ------------------------------------------------------------------------------------- text


def test_text_verdict_first_then_tables_then_next_steps() -> None:
    text = render_text(report_for(loaded=True, min_trigger_f1=0.99))
    lines = text.splitlines()
    assert lines[0].startswith("FAIL  refund-policy — trigger F1 0.938, uplift +0.450")
    assert lines[0].endswith("(exit 1)")
    trigger_at = lines.index("Trigger (with-variant observations)")
    uplift_at = next(i for i, line in enumerate(lines) if line.startswith("Uplift ("))
    next_at = lines.index("What to do next")
    assert 0 < trigger_at < uplift_at < next_at
    assert re.search(r"TP\s+FP\s+FN\s+TN\s+precision\s+recall\s+F1", text)
    assert re.search(r"15\s+1\s+1\s+7\s+0\.938\s+0\.938\s+0\.938", text)
    assert re.search(r"with\s+16\s+22\s+72\.7%", text)
    assert re.search(r"without\s+6\s+22\s+27\.3%", text)
    assert "[+0.150, +0.750]" in text
    assert "p = 0.07031" in text
    assert "gate F1 ≥ 0.99: FAILED (value 0.938)" in text
    steps = "\n".join(lines[next_at:])
    assert "c03 (line 3)" in steps and "Missed trigger" in steps
    assert "c09 (line 9)" in steps and "False trigger" in steps
    assert "c02 trial 1 without; not loaded: brand-deck" in steps
    assert "c02 trial 2 without; loaded but excluded: bugfix-workflow" in steps


def test_text_pass_says_nothing_to_do() -> None:
    report = report_for()
    # Make the run clean: no misroutes and no failed tasks either.
    report["trigger"]["missedTriggerCaseIds"] = []
    report["trigger"]["falseTriggerCaseIds"] = []
    for case in report["caseResults"]:
        case["failedCheck"] = None
    text = render_text(report)
    assert text.startswith("PASS  refund-policy")
    assert "nothing: the evidence clears every configured gate" in text


def test_text_runner_failures_listed() -> None:
    text = render_text(report_for(failures=(FAILURE,)))
    assert text.startswith("UNAVAILABLE  refund-policy")
    assert "  - 1× timed out after 30000 ms — first: c04 trial 2 without" in text
    assert "    what to do: raise --timeout-ms" in text
    assert "(exit 7)" in text.splitlines()[0]
    assert "(partial: 47 of 48, not decided)" in text.splitlines()[0]


def test_text_shows_null_as_na_never_zero() -> None:
    report = report_for()
    report["trigger"].update(precision=None, f1=None)
    text = render_text(report)
    assert re.search(r"n/a\s+0\.938\s+n/a", text)
    assert "trigger F1 n/a" in text.splitlines()[0]


def test_text_error_report() -> None:
    report = error_report(5, "cases.jsonl:4: field 'expectTrigger': expected a boolean")
    assert_valid_report(report)
    text = render_text(report)
    assert text.splitlines()[0] == "INVALID  (unknown skill) — stopped before scoring (exit 5)"
    assert render_text(report, "my-skill").startswith("INVALID  my-skill — stopped before")
    # The reason is printed once, under what failed.
    assert text.count("field 'expectTrigger': expected a boolean") == 1
    assert "What failed\n  - cases.jsonl:4: field 'expectTrigger'" in text


def test_text_escapes_terminal_control_characters() -> None:
    report = report_for()
    report["trigger"]["missedTriggerCaseIds"] = ["evil\x1b[2Jid\u202e"]
    text = render_text(report)
    assert "\x1b" not in text and "\u202e" not in text
    assert "evil\\u001b[2Jid\\u202e" in text


# --------------------------------------------------------------------------------- markdown


def test_markdown_verdict_table_and_sections() -> None:
    md = render_markdown(report_for(loaded=True, min_uplift=0.5))
    assert md.startswith("### refund-policy: ❌ fail (exit 1)")
    assert "| skill | status | trigger F1 | uplift [95% interval] | p-value | runs |" in md
    assert "| refund-policy | ❌ fail | 0.938 |" in md
    assert "| with | 16 | 22 | 72.7% |" in md
    assert "| uplift lower bound ≥ 0.5 | 0.150 | ❌ failed |" in md
    assert "#### What to do next" in md
    assert "c03 (line 3)" in md


def test_markdown_escapes_user_strings() -> None:
    report = report_for(loaded=True)
    evil_id = "a|b`c*d_e[f](g)<img src=x>#h\nnew row @octocat"
    report["skill"]["name"] = "skill|name<script>"
    report["trigger"]["missedTriggerCaseIds"] = [evil_id]
    report["loading"]["violations"][0]["caseId"] = evil_id
    report["messages"].append("message with | pipe and <b>html</b>")
    md = render_markdown(report)
    assert not re.search(r"(?<!\\)<(script|img|b)", md)  # only escaped tags remain
    assert "\nnew row" not in md
    assert "@octocat" not in md  # no @-mention
    assert escape_md(evil_id) in md
    # The verdict row still has exactly 7 cell separators (escaped pipes are not separators).
    row = next(line for line in md.splitlines() if line.startswith("| skill\\|name"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 7


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("`code`", "` code `"),  # a code span stays one, never shown as \`
        ("use `--trials 5` then", "use ` --trials 5 ` then"),
        ("a`b", "a`` ` ``b"),  # a backtick with no partner: a code span of its own
        ("``a ` b``", "`` a ` b ``"),  # the fence is longer than any run inside
        ("`x`https://e.x", "` x ` ` https://e.x `"),  # touching fences kept apart
        ("*bold* _it_", "\\*bold\\* \\_it\\_"),
        ("[link](http://x)", "\\[link\\]\\(` http://x `\\)"),  # no autolink either
        ("<b>", "\\<b\\>"),
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("1. item", "1\\. item"),
        ("12) item", "12\\) item"),
        ("a\nb\r\nc\rd\u2028e", "a b c d\\u2028e"),
        ("back\\slash", "back\\\\slash"),
        ("&amp;", "\\&amp;"),
        ("$x$ ~~s~~", "\\$x\\$ \\~\\~s\\~\\~"),
        ("@team", "`@`team"),
        ("zero\u200bwidth\ufeff\U000e0041", "zero\\u200bwidth\\ufeff\\ue0041"),
        ("tab\there\x00\x07", "tab here"),
        ("refund-policy v1.2", "refund-policy v1.2"),
    ],
)
def test_escape_md(raw: str, escaped: str) -> None:
    assert escape_md(raw) == escaped


@given(st.text(max_size=40))
@settings(max_examples=200)
def test_escape_md_leaves_no_active_markup(text: str) -> None:
    out = escape_md(text)
    assert "\n" not in out and "\r" not in out
    # Rendered by GitHub's own engine, in a table cell and in a bullet: nothing but text and
    # code spans, and no backtick shown escaped.
    for markdown in (f"| x |\n| --- |\n| {out} |\n", f"- {out}\n"):
        html = cmarkgfm.github_flavored_markdown_to_html(markdown)
        tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9-]*)", html))
        assert tags <= {"p", "code", "ul", "li", "table", "thead", "tbody", "tr", "th", "td"}, (
            text,
            out,
        )
        assert "\\`" not in html or "\\`" in text, (text, out)
    # Outside its code spans every special character is preceded by a backslash.
    outside = "".join(piece for code, piece in code_pieces(out) if not code)
    i = 0
    while i < len(outside):
        if outside[i] == "\\":
            i += 2
            continue
        assert outside[i] not in "`*_[]<>|&$~#()", (text, out)
        i += 1


@given(st.text(max_size=40))
@settings(max_examples=200)
def test_the_fork_safe_form_is_code_spans_only(text: str) -> None:
    with fork_safe([]):
        out = md_text(text)
    html = cmarkgfm.github_flavored_markdown_to_html(f"- {out}\n")
    assert set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9-]*)", html)) <= {"ul", "li", "code", "p"}
    outside = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert re.sub(r"</?(ul|li|p)>", "", outside).strip() == "", (text, out)


def test_the_comment_shows_a_messages_code_spans_as_spans() -> None:
    with fork_safe([]):
        out = md_text("raise `--trials` to 5")
    assert out == "` raise  ` ` --trials ` `  to 5 `"
    html = cmarkgfm.github_flavored_markdown_to_html(out)
    assert "<code>--trials</code>" in html and "`" not in html


def test_markdown_notes_show_code_spans_not_escaped_backticks() -> None:
    report = report_for(loaded=True)
    report["messages"].append("raise `--trials` to 5 or see `a``b` | `x` @team")
    md = render_markdown(report)
    assert "\\`" not in md
    assert "` --trials `" in md and "``` a``b ```" in md
    html = cmarkgfm.github_flavored_markdown_to_html(md)
    assert "<code>--trials</code>" in html and "<code>a``b</code>" in html
    assert "@team" not in md.replace("`@`team", "")


# ------------------------------------------------------------------------------------ junit


def _parse(xml: str) -> JUnitXml:
    return JUnitXml.fromstring(xml.encode("utf-8"))


def _cases(suite: Any) -> dict[str, Any]:
    return {case.name: case for case in suite}


def test_junit_structure_and_counts() -> None:
    report = report_for(loaded=True, min_trigger_f1=0.99, min_uplift=0.5)
    xml = render_junit([("refund-policy", report, None), ("brand-deck", None, "no secrets")])
    root = _parse(xml)
    assert root.name == "skill-evals"
    suites = list(root)
    assert [s.name for s in suites] == ["refund-policy", "brand-deck"]
    skill = suites[0]
    cases = _cases(skill)
    assert sorted(n for n in cases if n.startswith("trigger[")) == [
        f"trigger[c{i:02d}]" for i in range(1, 13)
    ]
    assert {"trigger", "uplift", "loading[c02]"} <= set(cases)
    # The trigger gate failed: the misrouted cases and the aggregate fail; others pass.
    assert isinstance(cases["trigger[c03]"].result[0], Failure)
    assert isinstance(cases["trigger[c09]"].result[0], Failure)
    assert cases["trigger[c01]"].result == []
    assert isinstance(cases["trigger"].result[0], Failure)
    assert isinstance(cases["uplift"].result[0], Failure)
    assert "0.150" in cases["uplift"].result[0].message
    assert isinstance(cases["loading[c02]"].result[0], Failure)
    # one task[...] per case with a task check (c12 has none); c03, c05, c08, c11 failed
    tasks = {n: c for n, c in cases.items() if n.startswith("task[")}
    assert sorted(tasks) == [f"task[c{i:02d}]" for i in range(1, 12)]
    failed = sorted(n for n, c in tasks.items() if c.result)
    assert failed == ["task[c03]", "task[c05]", "task[c08]", "task[c11]"]
    assert (
        tasks["task[c03]"].result[0].message.startswith("with the skill: failed in trial(s) 2 of 2")
    )
    assert (skill.tests, skill.failures, skill.errors, skill.skipped) == (26, 9, 0, 0)
    skipped = suites[1]
    assert (skipped.tests, skipped.skipped) == (1, 1)
    assert isinstance(next(iter(skipped)).result[0], Skipped)
    assert (root.tests, root.failures, root.errors, root.skipped) == (27, 9, 0, 1)
    props = {p.name: p.value for p in skill.properties()}
    assert props["skillMdSha256"] == "a" * 64
    assert props["directorySha256"] == "b" * 64
    assert props["trials"] == "2" and props["seed"] == "42"
    assert props["min-trigger-f1"] == "0.99" and props["min-uplift"] == "0.5"


def test_junit_time_is_always_present() -> None:
    xml = render_junit([("refund-policy", report_for(), None), ("x", None, None)])
    tree = ET.fromstring(xml.split("\n", 1)[1])
    assert tree.tag == "testsuites" and "time" in tree.attrib
    for element in tree.iter():
        if element.tag in ("testsuite", "testcase"):
            assert "time" in element.attrib, element.attrib
    first = tree.find("testsuite")
    assert first is not None and first.attrib["time"] == "1.234"
    assert tree.attrib["time"] == "1.234"


def test_junit_misroutes_without_a_failed_gate_are_not_failures() -> None:
    root = _parse(render_junit([("refund-policy", report_for(min_trigger_f1=0.5), None)]))
    suite = next(iter(root))
    cases = _cases(suite)
    assert cases["trigger[c03]"].result == []
    assert "wrong in trial(s) 2" in (cases["trigger[c03]"].system_out or "")
    # no uplift gate failed: the failed tasks are noted, never failures
    failing = sorted(n for n, c in cases.items() if c.result)
    assert failing == []
    assert (suite.failures, suite.errors) == (0, 0)
    for name in ("task[c03]", "task[c05]", "task[c08]", "task[c11]"):
        assert (cases[name].system_out or "").startswith("failed in ")


def test_junit_runner_failures_are_errors() -> None:
    report = report_for(failures=(FAILURE,))
    suite = next(iter(_parse(render_junit([("refund-policy", report, None)]))))
    cases = _cases(suite)
    error = cases["trigger[c04]"].result[0]
    assert isinstance(error, Error)
    assert "trial 2 without: timed out after 30000 ms" in error.message
    assert suite.errors == 1 and "evaluation" not in cases


def test_junit_error_reports_and_unexplained_exit_codes() -> None:
    report = error_report(6, "evals/cases.jsonl: 9 independent case(s); at least 10 needed")
    assert_valid_report(report)
    suite = next(iter(_parse(render_junit([("refund-policy", report, None)]))))
    (case,) = list(suite)
    assert case.name == "evaluation"
    assert isinstance(case.result[0], Error)
    assert "9 independent case(s)" in case.result[0].message
    # skill changed during the run: exit 7 with no per-case error → an evaluation error.
    suite_obj = make_suite()
    changed = build_test_report(
        make_skill(), suite_obj, make_settings(), make_result(suite_obj), skill_changed=True
    )
    assert_valid_report(changed)
    cases = _cases(next(iter(_parse(render_junit([("refund-policy", changed, None)])))))
    assert isinstance(cases["evaluation"].result[0], Error)


def test_junit_no_task_checks_is_skipped_uplift_and_error_when_gated() -> None:
    suite = make_suite(tasks=False)
    plain = build_test_report(make_skill(), suite, make_settings(), make_result(suite))
    assert_valid_report(plain)
    cases = _cases(next(iter(_parse(render_junit([("s", plain, None)])))))
    assert isinstance(cases["uplift"].result[0], Skipped)
    gated = build_test_report(
        make_skill(), suite, make_settings(min_uplift=0.1), make_result(suite)
    )
    assert_valid_report(gated)
    cases = _cases(next(iter(_parse(render_junit([("s", gated, None)])))))
    assert isinstance(cases["uplift"].result[0], Error)


def test_junit_survives_xml_invalid_characters() -> None:
    report = report_for()
    report["caseResults"][0]["id"] = "bad\x01id\ud800"
    report["skill"]["name"] = "n\x00ame"
    xml = render_junit([("n\x00ame", report, None)])
    root = _parse(xml)
    # Characters XML cannot carry are removed (not replaced), everywhere.
    assert "trigger[badid]" in _cases(next(iter(root)))


def test_junit_written_file_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(render_junit([("refund-policy", report_for(loaded=True), None)]), "utf-8")
    root = JUnitXml.fromfile(str(path))
    assert next(iter(root)).failures == 1  # the loading violation (no uplift gate failed)


# ------------------------------------------------------------------------------------- json


def test_json_round_trips() -> None:
    report = report_for(loaded=True)
    text = render_json(report)
    assert text.endswith("\n")
    assert json.loads(text) == report


def test_renderers_accept_error_reports() -> None:
    for code in (5, 6, 7, 130):
        report = error_report(code, "something | <odd>", make_settings(), make_skill(), None)
        assert_valid_report(report)
        for text in renderings(report).values():
            assert text


def test_renderers_with_replaced_suite_ids() -> None:
    # Case ids are arbitrary user strings: renderings must not crash on any of them.
    suite = make_suite()
    cases = tuple(replace(c, id=f"{c.id} |`<*>" + "\u2028") for c in suite.cases)
    suite = replace(suite, cases=cases)
    result = make_result(make_suite())
    mapping = {c.id.split(" ")[0]: c.id for c in cases}
    result.observations = [replace(o, case_id=mapping[o.case_id]) for o in result.observations]
    report = build_test_report(make_skill(), suite, make_settings(), result)
    assert_valid_report(report)
    md = render_markdown(report)
    assert "\u2028" not in md
    assert "c03 \\|`` ` ``\\<\\*\\>" in md
    _parse(render_junit([("refund-policy", report, None)]))


def test_the_summary_and_the_comment_show_a_messages_code_spans() -> None:
    from skill_evals.ci.summary import render_comment, render_summary

    ci = {"schemaVersion": 1, "status": "pass", "exitCode": 0, "skills": [],
          "messages": ["set `require-env` or use `--base`, not a`b"]}  # fmt: skip
    for body in (render_summary(ci), render_comment(ci)):
        assert "\\`" not in body
        html = cmarkgfm.github_flavored_markdown_to_html(body)
        assert "<code>require-env</code>" in html and "<code>--base</code>" in html
        assert "a`b" in html.replace("<code>`</code>", "`")  # the lone backtick: a span
