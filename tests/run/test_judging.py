"""Judge checks end to end: the real CLI with a table runner and the scripted judge
(tests/runners/judge.py), asserting from the judge's own log what it saw and how often it was
called, and comparing the figures with values computed here from the constructed table."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    cli_args,
    judge_cmd,
    judge_log,
    make_suite,
    report_of,
    run_cli,
    runner_log,
)
from tests.conftest import assert_valid_report

RUBRIC = "The notes have a title, a one-line summary and a list of changes."
TASK = [
    {"check": "exit_code", "expected": 0},
    {"check": "judge", "rubric": RUBRIC, "scale": [1, 5], "threshold": 3},
]
WITH_GOOD = range(9)  # c0..c8 answer GOOD with the skill
WITHOUT_GOOD = range(3)  # c0..c2 answer GOOD without it
FAILED_WITHOUT = "c5"  # exits 1 without the skill: no judge call for it


def _rows() -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for i in range(12):
        without: dict[str, Any] = {"output": "GOOD notes" if i in WITHOUT_GOOD else "a list"}
        if f"c{i}" == FAILED_WITHOUT:
            without["exitCode"] = 1
        reason_marker = "plain notes \u202e" if i == 10 else "plain notes"
        rows[f"c{i}"] = {
            "with": {"output": "GOOD notes" if i in WITH_GOOD else reason_marker},
            "without": without,
        }
    return rows


def _mulberry32(seed: int) -> Any:
    state = seed & 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 2**32

    return draw


def _bootstrap(values: list[float], samples: int, seed: int) -> tuple[float, float]:
    draw, n = _mulberry32(seed), len(values)
    means = sorted(
        sum(values[math.floor(draw() * n)] for _ in range(n)) / n for _ in range(samples)
    )
    return means[math.floor(0.025 * (samples - 1))], means[math.ceil(0.975 * (samples - 1))]


def _sign_p(positive: int, negative: int) -> float:
    n, k = positive + negative, min(positive, negative)
    return float(min(Fraction(1), 2 * Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("judged")
    make_suite(root, _rows(), TASK)
    args = cli_args(root, "--judge", judge_cmd(root), "--record", "rec.jsonl", "--min-uplift", "0")
    done = run_cli(
        root,
        *args,
        "--report",
        "r.json",
        "--junit",
        "r.xml",
        "--markdown",
        "r.md",
        "--html",
        "r.html",
        "--bootstrap-samples",
        "2000",
        env={
            "EVALGATE_SECRET": "x",
            "SKILL_EVALS_X": "y",
            "GITHUB_TOKEN": "t",
            "GH_TOKEN": "t",
            "GITHUB_OUTPUT": "/dev/null",
            "GITHUB_STEP_SUMMARY": "/dev/null",
            "ACTIONS_RUNTIME_TOKEN": "t",
            "ACTIONS_ID_TOKEN_REQUEST_URL": "u",
            "ACTIONS_CACHE_URL": "u",
            "ACTIONS_RESULTS_URL": "u",
            "JUDGE_KEEPS_THIS": "1",
        },
    )
    return {"root": root, "done": done, "report": report_of(root / "r.json")}


def test_the_judged_suite_gates_on_uplift_with_exact_figures(run: dict[str, Any]) -> None:
    report = run["report"]
    assert run["done"].returncode == 0, run["done"].stderr
    assert_valid_report(report)
    task = report["task"]
    assert task["with"] == {"passed": 9, "total": 12, "passRate": 0.75}
    assert task["without"] == {"passed": 3, "total": 12, "passRate": 0.25}
    d = [(i in WITH_GOOD) - (i in WITHOUT_GOOD and f"c{i}" != FAILED_WITHOUT) for i in range(12)]
    assert task["difference"] == pytest.approx(sum(d) / 12)
    lower, upper = _bootstrap([float(x) for x in d], 2000, 42)
    assert (task["interval"]["lower"], task["interval"]["upper"]) == pytest.approx((lower, upper))
    positive, negative = sum(x > 0 for x in d), sum(x < 0 for x in d)
    assert task["signTest"]["pValue"] == pytest.approx(_sign_p(positive, negative))
    assert report["gates"]["minUplift"]["passed"] is True


def test_the_judge_saw_only_the_request_and_no_engine_variable(run: dict[str, Any]) -> None:
    requests = judge_log(run["root"])
    assert len(requests) == 23  # 24 observations, one exited 1 before its judge
    for request in requests:
        env = request.pop("_env")
        assert not [n for n in env if n.startswith(("EVALGATE_", "SKILL_EVALS_"))]
        dropped = {"GITHUB_TOKEN", "GH_TOKEN", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"}
        assert not dropped & set(env) and not [n for n in env if n.startswith("ACTIONS_")]
        # The runners' allowlist of the caller's environment only: no other variable of its.
        assert "JUDGE_KEEPS_THIS" not in env and "PATH" in env
        assert set(request) == {"kind", "prompt", "rubric", "scale", "threshold", "answer"}
        assert request["kind"] == "absolute" and request["rubric"] == RUBRIC
        assert request["scale"] == [1, 5] and request["threshold"] == 3
        assert set(request["answer"]) == {"output", "files"} and request["answer"]["files"] == []
        text = json.dumps(request)
        assert "c1" not in text.split('"prompt"')[0] and "without" not in text
        assert "release-notes" not in text
    assert "a list" not in [r["answer"]["output"] for r in requests if r["answer"]["output"]][:0]


def test_the_report_counts_judge_calls_apart_from_the_runner(run: dict[str, Any]) -> None:
    report = run["report"]
    assert report["judge"] == {
        "calls": 23,
        "cached": 0,
        "resumed": 0,
        "retried": 0,
        "failures": 0,
        "swapConsistency": None,
    }
    ledger = report["runner"]["ledger"]
    assert ledger["invocations"] == 24 and ledger["costUsd"] is None
    assert ledger["judge"] == {
        "calls": 23,
        "cached": 0,
        "resumed": 0,
        "retried": 0,
        "inputTokens": 230,
        "outputTokens": 46,
        "costUsd": pytest.approx(0.023),
        "costUnreported": 0,
    }


def test_case_results_name_the_judge_check_and_its_reason(run: dict[str, Any]) -> None:
    results = {c["id"]: c for c in run["report"]["caseResults"]}
    c5 = results["c5"]["checks"]
    assert c5[1] == {"check": "judge", "label": "judge", "with": [True], "without": [None]}
    failed = results["c9"]["failedCheck"]
    assert failed["check"] == "judge" and failed["variant"] == "with"
    assert failed["reason"] == "judge: no GOOD[31m in the answer"  # the ESC removed
    assert "\\u202e" not in failed["reason"]
    root = run["root"]
    for name in ("r.md", "r.html", "r.xml"):
        text = (root / name).read_text("utf-8")
        assert "judge: no GOOD" in text and "31m in the answer" in text, name
        assert "\x1b" not in text and "\u202e" not in text and "plain notes" not in text, name


def test_records_hold_each_verdict_with_its_request_key(run: dict[str, Any]) -> None:
    lines = [json.loads(x) for x in (run["root"] / "rec.jsonl").read_text().splitlines()]
    assert len(lines) == 24
    by_key = {(x["caseId"], x["variant"]): x for x in lines}
    c0 = by_key[("c0", "with")]
    assert c0["checks"] == [True, True]
    (entry,) = c0["judge"]
    assert entry["check"] == 1 and len(entry["key"]) == 64 and entry["score"] == 5
    assert entry["pass"] is True and entry["meta"]["inputTokens"] == 10
    assert by_key[("c5", "without")]["checks"] == [False, None]
    assert "judge" not in by_key[("c5", "without")]


def _rescore(run: dict[str, Any], name: str, *more: str) -> tuple[Any, dict[str, Any]]:
    root = run["root"]
    before_judge, before_runner = len(judge_log(root)), len(runner_log(root))
    done = run_cli(root, *cli_args(root, *more, runner=False), "--report", name)
    report = report_of(root / name)
    assert_valid_report(report)
    calls = len(judge_log(root)) - before_judge
    assert len(runner_log(root)) == before_runner  # never an agent run
    return (done, calls), report


def test_rescoring_the_record_asks_the_judge_nothing(run: dict[str, Any]) -> None:
    root = run["root"]
    (done, calls), report = _rescore(
        run, "again.json", "--observations", "rec.jsonl", "--judge", judge_cmd(root)
    )
    assert done.returncode == 0 and calls == 0
    assert report["judge"]["calls"] == 0 and report["judge"]["resumed"] == 23
    assert report["task"]["difference"] == run["report"]["task"]["difference"]


def test_a_rubric_edit_rejudges_only(run: dict[str, Any], tmp_path: Path) -> None:
    root = run["root"]
    cases = (root / "cases.jsonl").read_text("utf-8")
    edited = tmp_path / "edited.jsonl"
    edited.write_text(cases.replace("a list of changes", "a LIST of changes"), "utf-8")
    before = len(judge_log(root))
    done = run_cli(
        root,
        "test", "--skill", "release-notes", "--cases", str(edited), "--trials", "1", "-q",
        "--observations", "rec.jsonl", "--judge", judge_cmd(root), "--report", "edit.json",
        "--sandbox-path", f"{root}:rw",
    )  # fmt: skip
    report = report_of(root / "edit.json")
    assert done.returncode == 0, done.stderr
    assert len(judge_log(root)) - before == 23
    assert report["judge"]["calls"] == 23 and report["judge"]["resumed"] == 0
    assert all(r["rubric"].endswith("a LIST of changes.") for r in judge_log(root)[before:])


def test_resume_reuses_verdicts_and_runs_nothing(run: dict[str, Any], tmp_path: Path) -> None:
    root = run["root"]
    copy = tmp_path / "resume.jsonl"
    copy.write_text((root / "rec.jsonl").read_text("utf-8"), "utf-8")
    before_judge, before_runner = len(judge_log(root)), len(runner_log(root))
    done = run_cli(
        root,
        *cli_args(root, "--judge", judge_cmd(root), "--resume", str(copy), "--record", str(copy)),
        "--report",
        "resumed.json",
    )
    assert done.returncode == 0, done.stderr
    assert len(judge_log(root)) == before_judge and len(runner_log(root)) == before_runner
    assert report_of(root / "resumed.json")["judge"]["resumed"] == 23


def test_the_cache_reuses_runs_and_verdicts(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "no"}} for i in range(10)}
    make_suite(tmp_path, rows, TASK)
    args = cli_args(tmp_path, "--judge", judge_cmd(tmp_path), "--cache", "cache")
    first = run_cli(tmp_path, *args, "--report", "one.json")
    assert first.returncode == 0, first.stderr
    assert len(runner_log(tmp_path)) == 20 and len(judge_log(tmp_path)) == 20
    second = run_cli(tmp_path, *args, "--report", "two.json")
    report = report_of(tmp_path / "two.json")
    assert second.returncode == 0 and report["runner"]["cached"] == 20
    assert len(runner_log(tmp_path)) == 20 and len(judge_log(tmp_path)) == 20
    assert report["judge"]["cached"] == 20 and report["runner"]["ledger"]["judge"]["calls"] == 0
    # A new rubric is judged again, and never run again.
    text = (tmp_path / "cases.jsonl").read_text("utf-8").replace("a title", "a heading")
    (tmp_path / "cases.jsonl").write_text(text, "utf-8")
    third = run_cli(tmp_path, *args, "--report", "three.json")
    assert third.returncode == 0 and len(runner_log(tmp_path)) == 20
    assert len(judge_log(tmp_path)) == 40
    assert report_of(tmp_path / "three.json")["runner"]["cached"] == 20


def test_the_judge_budget_stops_judging(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "no"}} for i in range(10)}
    make_suite(tmp_path, rows, TASK)
    done = run_cli(
        tmp_path,
        *cli_args(tmp_path, "--judge", judge_cmd(tmp_path), "--max-judge-calls", "3"),
        "--format",
        "json",
        "--jobs",
        "1",
    )
    report = json.loads(done.stdout)
    assert_valid_report(report)
    assert done.returncode == 7 and report["status"] == "unavailable"
    assert len(judge_log(tmp_path)) == 3 and report["judge"]["calls"] == 3
    assert "judge budget reached after 3 judge calls" in report["messages"]
    assert os.environ.get("SKILL_EVALS_AGENT_BIN_DIR", "x")  # the caller's own are untouched
