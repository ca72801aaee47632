"""Pairwise judging that stays decisive: a pair whose two asks disagree is decided by the
absolute grades of its two answers (two more judge calls, recorded, counted, reused on a
re-score) when they differ by at least --judge-fallback-margin, else a tie; --judge-fallback tie
keeps every disagreeing pair a tie. Every figure is compared with values computed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import cli_args, judge_cmd, judge_log, make_suite, run_cli
from tests.conftest import assert_valid_report

TASK = [{"check": "judge_pairwise", "rubric": "Which answer helps the user more?"}]
# Per case: the with and the without answers' grades. Every answer holds FIRSTWINS, so the
# scripted judge names "a" in both asks: each pair is inconsistent.
GRADES = [
    (0.9, 0.2),  # with better by far: +1
    (0.2, 0.8),  # without better: -1
    (0.50, 0.53),  # closer than 0.05: a tie
    (0.60, 0.50),  # past the margin: +1
    (0.7, 0.1),
    (0.3, 0.9),
    (0.8, 0.2),
    (0.55, 0.55),  # equal: a tie
    (0.9, 0.4),
    (0.1, 0.6),
]


def _expected(margin: float) -> list[int]:
    out = []
    for w, o in GRADES:
        out.append(0 if abs(w - o) < margin - 1e-12 else 1 if w > o else -1)
    return out


def _suite(root: Path) -> None:
    rows = {
        f"c{i}": {
            "with": {"output": f"w{i} FIRSTWINS [[score={w}]]"},
            "without": {"output": f"o{i} FIRSTWINS [[score={o}]]"},
        }
        for i, (w, o) in enumerate(GRADES)
    }
    make_suite(root, rows, TASK)


def _run(root: Path, *more: str) -> tuple[int, dict[str, Any]]:
    args = cli_args(root, "--judge", judge_cmd(root), "--jobs", "1", "--record", "rec.jsonl")
    done = run_cli(root, *args, *more, "--format", "json")
    report = json.loads(done.stdout)
    assert_valid_report(report)
    return done.returncode, report


@pytest.fixture(scope="module")
def absolute(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("fallback")
    _suite(root)
    _, report = _run(root)
    return {"root": root, "report": report}


def test_disagreeing_asks_are_decided_by_the_grades(absolute: dict[str, Any]) -> None:
    report = absolute["report"]
    want = _expected(0.05)
    prefs = [report_case["preference"]["without"][0] for report_case in report["caseResults"]]
    assert prefs == want
    counts = report["task"]["pairwise"]
    assert counts["withPreferred"] == want.count(1) and counts["otherPreferred"] == want.count(-1)
    assert counts["ties"] == want.count(0) and counts["inconsistent"] == len(GRADES)
    assert report["task"]["difference"] == pytest.approx(sum(want) / len(want))
    assert report["judge"]["swapConsistency"] == 0.0  # still reported: the asks disagreed


def test_the_grades_are_two_more_calls_counted_and_recorded(absolute: dict[str, Any]) -> None:
    root, report = absolute["root"], absolute["report"]
    log = judge_log(root)
    grades = [r for r in log if r["kind"] == "absolute"]
    assert report["judge"]["calls"] == 4 * len(GRADES) == len(log) and len(grades) == 20
    assert report["runner"]["ledger"]["judge"]["calls"] == 4 * len(GRADES)
    # The absolute form of the same rubric, on a 0-1 scale; nothing says which arm is which.
    assert {(r["rubric"], tuple(r["scale"]), r["threshold"]) for r in grades} == {
        (TASK[0]["rubric"], (0, 1), None)
    }
    records = [json.loads(line) for line in (root / "rec.jsonl").read_text("utf-8").splitlines()]
    entries = [e for r in records if r.get("variant") == "with" for e in r.get("judge", [])]
    assert len(entries) == len(GRADES)
    for entry in entries:
        assert [g["arm"] for g in entry["grades"]] == ["with", "without"]


def test_a_rescore_reuses_the_grades(absolute: dict[str, Any]) -> None:
    root, report = absolute["root"], absolute["report"]
    before = len(judge_log(root))
    args = cli_args(root, "--observations", "rec.jsonl", "--judge", judge_cmd(root), runner=False)
    again = json.loads(run_cli(root, *args, "--format", "json").stdout)
    assert len(judge_log(root)) == before and again["judge"]["calls"] == 0
    assert again["task"] == report["task"]


def test_a_wider_margin_and_the_tie_rule(tmp_path: Path) -> None:
    _suite(tmp_path / "wide")
    _, wide = _run(tmp_path / "wide", "--judge-fallback-margin", "0.5")
    prefs = [c["preference"]["without"][0] for c in wide["caseResults"]]
    assert prefs == _expected(0.5)
    _suite(tmp_path / "tie")
    _, tie = _run(tmp_path / "tie", "--judge-fallback", "tie")
    assert tie["task"]["pairwise"]["ties"] == len(GRADES)
    assert tie["judge"]["calls"] == 2 * len(GRADES)
    assert all(r["kind"] == "pairwise" for r in judge_log(tmp_path / "tie"))
