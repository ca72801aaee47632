"""Pairwise judging end to end: the real CLI with a table runner and the scripted judge. Both
orders are asked, the first chosen by the seeded per-pair draw; inconsistent asks are ties; the
preference per unit gates with the same bootstrap and sign test — every figure compared with
values computed here from the constructed table."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    bootstrap,
    cli_args,
    judge_cmd,
    judge_log,
    make_suite,
    mulberry32_draws,
    report_of,
    run_cli,
    sign_test,
)
from tests.conftest import assert_valid_report

TASK = [{"check": "judge_pairwise", "rubric": "Which release notes are clearer for users?"}]
TRIALS = 2
# Per case: which arm's answer holds BETTER, per trial ("w" with, "o" the other, "" neither).
PLAN = ["w", "w", "w", "w", "o", "", "wo", "w", "w", "o", "w", "w"]
WITH_FAILS = "c10"  # exits 1 with the skill: the other is preferred, nothing asked
BOTH_FAIL = "c11"  # both exit 1: a tie, nothing asked


def _rows() -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for i, plan in enumerate(PLAN):
        cells: dict[str, list[dict[str, Any]]] = {"with": [], "without": []}
        for t in range(1, TRIALS + 1):
            w = f"w{i}t{t} " + ("BETTER" if "w" in plan else "plain")
            o = f"o{i}t{t} " + ("BETTER" if "o" in plan else "plain")
            cells["with"].append(
                {"output": w, "exitCode": 1 if f"c{i}" in (WITH_FAILS, BOTH_FAIL) else 0}
            )
            cells["without"].append({"output": o, "exitCode": 1 if f"c{i}" == BOTH_FAIL else 0})
        rows[f"c{i}"] = cells
    return rows


def _expected_pref(i: int) -> int:
    if f"c{i}" == BOTH_FAIL:
        return 0
    if f"c{i}" == WITH_FAILS:
        return -1
    plan = PLAN[i]
    return 1 if plan == "w" else -1 if plan == "o" else 0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("pairwise")
    make_suite(root, _rows(), TASK)
    args = cli_args(
        root, "--judge", judge_cmd(root), "--record", "rec.jsonl", "--min-uplift", "-0.5",
        "--trials", str(TRIALS), "--jobs", "1", "--bootstrap-samples", "2000",
    )  # fmt: skip
    done = run_cli(root, *args, "--report", "r.json", "--markdown", "r.md", "--junit", "r.xml")
    return {"root": root, "done": done, "report": report_of(root / "r.json")}


def test_the_figures_are_exact_on_the_constructed_table(run: dict[str, Any]) -> None:
    report = run["report"]
    assert_valid_report(report)
    assert run["done"].returncode == 0, run["done"].stdout
    task = report["task"]
    assert task["mode"] == "pairwise" and task["with"] is None and task["without"] is None
    prefs = [_expected_pref(i) for i in range(len(PLAN))]  # one unit per case, same per trial
    values = [Fraction(p) for p in prefs]
    assert task["difference"] == pytest.approx(float(sum(values) / len(values)))
    lower, upper = bootstrap(values, 2000, 42)
    assert (task["interval"]["lower"], task["interval"]["upper"]) == pytest.approx((lower, upper))
    positive, negative = prefs.count(1), prefs.count(-1)
    assert task["signTest"] == sign_test(values)
    assert task["pairwise"] == {
        "pairs": 24,
        "withPreferred": 2 * positive,
        "otherPreferred": 2 * negative,
        "ties": 2 * prefs.count(0),
        "inconsistent": 0,
        "decidedByGrades": 0,
        "preferenceShare": positive / (positive + negative),
    }
    results = {c["id"]: c for c in report["caseResults"]}
    for i, pref in enumerate(prefs):
        assert results[f"c{i}"]["preference"] == {"without": [pref, pref]}
    assert report["judge"]["swapConsistency"] == 1.0
    assert report["judge"]["calls"] == 2 * 2 * 10  # two asks per pair, c10 and c11 not asked


def test_both_orders_are_asked_the_first_by_the_seeded_draw(run: dict[str, Any]) -> None:
    requests = judge_log(run["root"])
    draws = mulberry32_draws(42, len(PLAN) * TRIALS)
    for i in range(len(PLAN)):
        for t in range(1, TRIALS + 1):
            tag = f"w{i}t{t} "
            asks = [r for r in requests if tag in r["a"]["output"] or tag in r["b"]["output"]]
            if f"c{i}" in (WITH_FAILS, BOTH_FAIL):
                assert asks == []
                continue
            first, second = asks
            draw = draws[i * TRIALS + t - 1]
            assert (tag in first["a"]["output"]) is (draw < 0.5)
            assert first["a"] == second["b"] and first["b"] == second["a"]
            assert set(first) == {"kind", "prompt", "rubric", "a", "b", "_env"}


def test_rescoring_the_record_asks_nothing(run: dict[str, Any]) -> None:
    root = run["root"]
    before = len(judge_log(root))
    args = cli_args(root, "--observations", "rec.jsonl", "--judge", judge_cmd(root), runner=False)
    more = ("--trials", str(TRIALS), "--bootstrap-samples", "2000", "--min-uplift", "-0.5")
    done = run_cli(root, *args, *more, "--report", "again.json")
    report = report_of(root / "again.json")
    assert done.returncode == 0 and len(judge_log(root)) == before
    assert report["judge"]["calls"] == 0 and report["judge"]["resumed"] == 40
    assert report["task"] == run["report"]["task"]


def test_the_outputs_show_the_preference(run: dict[str, Any]) -> None:
    text = run["done"].stdout
    header = "pairs  with preferred  without preferred  ties  inconsistent  decided by grades"
    assert header in text
    assert "swap consistency 1.000" in text
    assert "None" not in (run["root"] / "r.md").read_text("utf-8")


def test_a_judge_that_always_prefers_one_position_yields_only_ties(tmp_path: Path) -> None:
    make_suite(tmp_path, _rows(), TASK)
    args = cli_args(tmp_path, "--judge", judge_cmd(tmp_path, "--mode", "first"), "--trials", "2")
    done = run_cli(tmp_path, *args, "--format", "json")
    report = json.loads(done.stdout)
    assert_valid_report(report)
    counts = report["task"]["pairwise"]
    assert counts["withPreferred"] == 0 and counts["inconsistent"] == 20
    assert counts["otherPreferred"] == 2  # c10: the with answer failed, decided without asking
    assert report["judge"]["swapConsistency"] == 0.0


def test_pairwise_mixed_with_other_checks_is_refused(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "x"}, "without": {"output": "y"}} for i in range(10)}
    tasks: dict[str, Any] = {f"c{i}": TASK for i in range(10)}
    tasks["c6"] = [{"check": "exit_code", "expected": 0}]
    make_suite(tmp_path, rows, tasks)
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judge", judge_cmd(tmp_path)))
    assert done.returncode == 5
    assert "cases.jsonl:7: field task: a suite with judge_pairwise checks" in done.stderr
    assert not judge_log(tmp_path)


def test_a_failing_pairwise_judge_fails_the_with_observation(tmp_path: Path) -> None:
    make_suite(tmp_path, _rows(), TASK)
    args = cli_args(tmp_path, "--judge", "python3 -c 'import sys; sys.exit(4)'", "--keep-going")
    done = run_cli(tmp_path, *args, "--format", "json")
    report = json.loads(done.stdout)
    assert_valid_report(report)
    assert done.returncode == 7
    failures = report["runner"]["failures"]
    assert {f["variant"] for f in failures} == {"with"} and len(failures) == 10
    assert {f["reason"] for f in failures} == {"judge: exited with code 4"}
