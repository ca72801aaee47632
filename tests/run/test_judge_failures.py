"""A judge that breaks its contract — exits non-zero, hangs, floods, prints garbage, scores
outside the scale, leaves a process — is a runner failure of the judged observation with a
`judge: ...` reason that never quotes its output; the run exits 7 and nothing survives. Bad
judge checks and options are refused (exit 5) before anything runs, naming file and line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    cli_args,
    judge_cmd,
    judge_log,
    judge_sleepers,
    make_suite,
    run_cli,
    runner_log,
)
from tests.conftest import assert_valid_report

TASK = [{"check": "judge", "rubric": "Say whether the notes are good."}]


def _suite(root: Path, marker: str) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "no"}} for i in range(10)}
    rows["c3"]["with"] = {"output": f"GOOD {marker}"}
    make_suite(root, rows, TASK)


def _run(root: Path, *more: str) -> tuple[int, dict[str, Any]]:
    done = run_cli(root, *cli_args(root, "--judge", judge_cmd(root), *more), "--format", "json")
    report = json.loads(done.stdout)
    assert_valid_report(report)
    return done.returncode, report


@pytest.mark.parametrize(
    ("marker", "reason", "more"),
    [
        ("[[judge-exit]]", "judge: exited with code 3", ()),
        ("[[judge-hang]]", "judge: timed out after 1500 ms", ("--judge-timeout-ms", "1500")),
        ("[[judge-flood]]", "judge: output exceeded 100000 bytes (stdout + stderr)",
         ("--max-bytes", "100000")),
        ("[[judge-garbage]]", "judge: stdout is not one strict JSON object", ()),
        ("[[judge-outside]]", "judge: key 'score' lies outside the scale [0, 1]", ()),
    ],
)  # fmt: skip
def test_a_broken_judge_is_a_runner_failure(
    tmp_path: Path, marker: str, reason: str, more: tuple[str, ...]
) -> None:
    _suite(tmp_path, marker)
    code, report = _run(tmp_path, "--record", "rec.jsonl", "--keep-going", *more)
    assert code == 7 and report["status"] == "unavailable"
    assert report["runner"]["failures"] == [
        {"caseId": "c3", "trial": 1, "variant": "with", "reason": reason}
    ]
    assert "SECRET-JUDGE-TEXT" not in json.dumps(report)
    assert report["judge"]["failures"] == 1
    c3 = next(c for c in report["caseResults"] if c["id"] == "c3")
    assert c3["with"] == [None]  # never a task fail
    # The observation is recorded all the same, without a verdict: a resume re-judges it.
    records = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text().splitlines()]
    c3_with = next(r for r in records if r["caseId"] == "c3" and r["variant"] == "with")
    assert c3_with["checks"] == [None] and "judge" not in c3_with


def test_a_retryable_judge_error_is_retried_then_counted(tmp_path: Path) -> None:
    _suite(tmp_path, "[[judge-retry]]")
    code, report = _run(tmp_path, "--retries", "2", "--keep-going")
    assert code == 7
    (failure,) = report["runner"]["failures"]
    assert failure["reason"] == "judge: overloaded, try later"
    assert report["judge"]["retried"] == 2 and report["judge"]["calls"] == 22
    retried = [r for r in judge_log(tmp_path) if "[[judge-retry]]" in r["answer"]["output"]]
    assert len(retried) == 3


def test_the_judge_session_is_killed_afterwards(tmp_path: Path) -> None:
    _suite(tmp_path, "[[judge-child]]")
    code, _ = _run(tmp_path)
    assert code == 0
    assert (tmp_path / "judge.log.pids").read_text().split()  # it did leave a child
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and judge_sleepers(tmp_path):
        time.sleep(0.05)
    assert not judge_sleepers(tmp_path)


def test_no_judge_call_when_the_task_already_failed(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "x"}} for i in range(10)}
    task = [{"check": "includes_all", "expected": ["GOOD"]}, *TASK]
    make_suite(tmp_path, rows, task)
    code, report = _run(tmp_path)
    assert code == 0
    assert len(judge_log(tmp_path)) == 10 and report["judge"]["calls"] == 10
    assert {r["answer"]["output"] for r in judge_log(tmp_path)} == {"GOOD"}


def _bad(tmp_path: Path, check: dict[str, Any], *more: str, judge: bool = True) -> str:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "x"}} for i in range(10)}
    make_suite(tmp_path, rows, {**{f"c{i}": TASK for i in range(10)}, "c4": [check]})
    extra = ["--judge", judge_cmd(tmp_path)] if judge else []
    done = run_cli(tmp_path, *cli_args(tmp_path, *extra, *more))
    assert done.returncode == 5, done.stderr
    assert not runner_log(tmp_path) and not judge_log(tmp_path)
    assert "widget library" not in done.stderr  # never the prompt
    return done.stderr


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ({"check": "judge"}, 'missing "rubric"'),
        ({"check": "judge", "rubric": " "}, "field task[0].rubric: must not be empty"),
        ({"check": "judge", "rubric": "r" * 20001}, "at most 20000 characters"),
        ({"check": "judge", "rubric": "r", "scale": [5, 1]}, "task[0].scale: the first number"),
        ({"check": "judge", "rubric": "r", "scale": [0, "1"]}, "task[0].scale: must be [lo, hi]"),
        ({"check": "judge", "rubric": "r", "threshold": 2}, "must lie within the scale [0, 1]"),
        ({"check": "judge", "rubric": "r", "include": []}, "task[0].include: must list at least"),
        ({"check": "judge", "rubric": "r", "include": ["output", "output"]}, "is listed twice"),
        ({"check": "judge", "rubric": "r", "include": ["files:../x"]}, "must not contain a .."),
        ({"check": "judge", "rubric": "r", "include": ["files:/etc/*"]}, "no leading /"),
        ({"check": "judge", "rubric": "r", "include": ["stdout"]}, 'must be "output" or'),
        ({"check": "judge", "rubric": "r", "judge": ""}, "task[0].judge: must name a judge"),
        ({"check": "judge", "rubric": "r", "colour": 1}, "unknown field"),
    ],
)
def test_an_invalid_judge_check_is_refused_naming_file_and_line(
    tmp_path: Path, check: dict[str, Any], expected: str
) -> None:
    stderr = _bad(tmp_path, check)
    assert "cases.jsonl:5:" in stderr and expected in stderr


def test_a_judge_check_without_a_judge_is_refused(tmp_path: Path) -> None:
    stderr = _bad(tmp_path, TASK[0], judge=False)
    assert "cases.jsonl:1: field task[0]: a judge check needs a judge" in stderr


def test_an_empty_judge_option_is_refused(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "x"}} for i in range(10)}
    make_suite(tmp_path, rows, TASK)
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judge", "  "))
    assert done.returncode == 5 and "--judge: the command is empty" in done.stderr
    assert not runner_log(tmp_path)


def test_workspace_files_are_shown_bounded_and_never_through_a_symlink(tmp_path: Path) -> None:
    big = "é" * 40_000  # 80,000 bytes: cut at 65,536 on a character boundary
    files = {"notes/CHANGES.md": "GOOD changes", "notes/big.md": big, "other.txt": "x"}
    rows = {f"c{i}": {"with": {"files": files}, "without": {"output": "x"}} for i in range(10)}
    check = {"check": "judge", "rubric": "r", "include": ["files:notes/**"]}
    make_suite(tmp_path, rows, [check])
    (tmp_path / "outside.md").write_text("SECRET outside", "utf-8")
    code, report = _run(tmp_path, "--record", "rec.jsonl")
    assert code == 0, report["messages"]
    seen = [r for r in judge_log(tmp_path) if r["answer"]["files"]]
    assert len(seen) == 10
    shown = seen[0]["answer"]
    assert shown["output"] is None
    assert [f["path"] for f in shown["files"]] == ["notes/CHANGES.md", "notes/big.md"]
    cut = shown["files"][1]
    assert cut["truncated"] is True and cut["text"] == "é" * 32_768
    record = json.loads((tmp_path / "rec.jsonl").read_text().splitlines()[0])
    assert [f["path"] for f in record.get("judgeFiles", [])] in (
        [],
        ["notes/CHANGES.md", "notes/big.md"],
    )
    # Re-scored from the record, the files come from judgeFiles: nothing is asked again.
    before = len(judge_log(tmp_path))
    again = run_cli(
        tmp_path,
        *cli_args(tmp_path, "--observations", "rec.jsonl", "--judge", judge_cmd(tmp_path),
                  runner=False),
    )  # fmt: skip
    assert again.returncode == 0 and len(judge_log(tmp_path)) == before


def test_observations_without_judge_files_are_refused(tmp_path: Path) -> None:
    rows = {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "x"}} for i in range(10)}
    make_suite(tmp_path, rows, [{"check": "judge", "rubric": "r", "include": ["files:*.md"]}])
    lines = [
        {"caseId": f"c{i}", "trial": 1, "variant": v, "invokedSkills": [], "output": "x",
         "exitCode": 0}
        for i in range(10) for v in ("with", "without")
    ]  # fmt: skip
    (tmp_path / "obs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    done = run_cli(
        tmp_path,
        *cli_args(tmp_path, "--observations", "obs.jsonl", "--judge", judge_cmd(tmp_path),
                  runner=False),
    )  # fmt: skip
    assert done.returncode == 5 and "key 'judgeFiles' is missing" in done.stderr
    assert not judge_log(tmp_path)
