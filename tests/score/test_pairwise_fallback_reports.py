"""What every output says about pairs the absolute fallback decided: the JSON report's
``pairwise.decidedByGrades``, the text and Markdown tables, the HTML report and the JUnit uplift
case name how many inconsistent pairs the grades decided — and none under --judge-fallback tie,
also when the recorded observations are re-scored with the other rule."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import cli_args, judge_cmd, judge_log, make_suite, run_cli
from tests.conftest import assert_valid_report
from tests.score.test_pairwise_fallback import GRADES, TASK, _expected, _run, _suite

DECIDED = sum(1 for pref in _expected(0.05) if pref != 0)  # every pair is inconsistent


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("fallback-reports")
    _suite(root)
    _, report = _run(root, "--junit", "r.xml", "--html", "r.html", "--markdown", "r.md")
    return {"root": root, "report": report}


def test_the_json_report_counts_the_pairs_the_grades_decided(run: dict[str, Any]) -> None:
    counts = run["report"]["task"]["pairwise"]
    assert counts["inconsistent"] == len(GRADES) and counts["decidedByGrades"] == DECIDED
    assert counts["ties"] == len(GRADES) - DECIDED


def test_markdown_html_and_junit_name_them(run: dict[str, Any]) -> None:
    root = run["root"]
    wanted = f"({len(GRADES)} inconsistent, {DECIDED} decided by grades)"
    page = re.sub(r"<[^>]+>", " ", (root / "r.html").read_text("utf-8"))
    assert wanted in page
    uplift = [c for c in ET.parse(root / "r.xml").iter("testcase") if c.get("name") == "uplift"]
    assert wanted in (uplift[0].findtext("system-out") or "")
    table = (root / "r.md").read_text("utf-8")
    assert "| inconsistent | decided by grades |" in table
    assert f"| {len(GRADES)} | {DECIDED} |" in table


def test_a_rescore_with_the_tie_rule_counts_none(run: dict[str, Any]) -> None:
    root = run["root"]
    args = cli_args(root, "--observations", "rec.jsonl", "--judge", judge_cmd(root),
                    "--judge-fallback", "tie", runner=False)  # fmt: skip
    report = json.loads(run_cli(root, *args, "--format", "json").stdout)
    assert_valid_report(report)
    assert report["task"]["pairwise"]["decidedByGrades"] == 0
    text = run_cli(root, *args, "--format", "text").stdout
    lines = text.splitlines()
    header = next(n for n, line in enumerate(lines) if "decided by grades" in line)
    assert lines[header + 1].split() == [str(len(GRADES)), "0", "0", str(len(GRADES)),
                                         str(len(GRADES)), "0", "n/a"]  # fmt: skip


def test_equal_grades_are_a_tie_even_with_no_margin(tmp_path: Path) -> None:
    _suite(tmp_path)
    _, report = _run(tmp_path, "--judge-fallback-margin", "0")
    prefs = [c["preference"]["without"][0] for c in report["caseResults"]]
    want = [0 if w == o else 1 if w > o else -1 for w, o in GRADES]
    assert prefs == want and want.count(0) == 1  # (0.55, 0.55): neither answer graded higher
    assert report["task"]["pairwise"]["decidedByGrades"] == len(GRADES) - 1


def test_a_failed_grade_keeps_the_answered_asks_for_a_rescore(tmp_path: Path) -> None:
    # c0's without answer makes the judge exit 3 when it is graded alone: its pair fails after
    # both asks and the with answer's grade were answered; a re-score of the recorded
    # observations asks only what is still missing (the failing grade), nothing twice.
    rows = {
        f"c{i}": {
            "with": {"output": f"w{i} FIRSTWINS [[score=0.9]]"},
            "without": {"output": f"o{i} FIRSTWINS [[score=0.1]]"
                        + (" [[judge-exit]]" if i == 0 else "")},
        }
        for i in range(10)
    }  # fmt: skip
    make_suite(tmp_path, rows, TASK)
    args = cli_args(tmp_path, "--judge", judge_cmd(tmp_path), "--jobs", "1", "--record",
                    "rec.jsonl")  # fmt: skip
    first = run_cli(tmp_path, *args, "--format", "json")
    assert first.returncode == 7 and json.loads(first.stdout)["judge"]["failures"] == 1
    before = len(judge_log(tmp_path))
    assert before == 4 * 10  # two asks and two grades per pair, the failing grade included
    args = cli_args(tmp_path, "--observations", "rec.jsonl", "--judge", judge_cmd(tmp_path),
                    runner=False)  # fmt: skip
    again = run_cli(tmp_path, *args, "--format", "json")
    report = json.loads(again.stdout)
    assert_valid_report(report)
    asked = judge_log(tmp_path)[before:]
    assert [r["kind"] for r in asked] == ["absolute"]  # only the grade that failed
    assert report["judge"]["calls"] == 1 and report["judge"]["resumed"] == 4 * 10 - 1
