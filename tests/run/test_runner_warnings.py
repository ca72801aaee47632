"""A runner line's ``warnings``: each distinct text printed once on stderr and added to the
report's messages; validated strictly like the other keys; kept in records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_jsonl, write_skill

RUNNER = """\
import json, os, sys
sys.stdin.read()
case = os.environ["EVALGATE_SKILL_CASE_ID"]
variant = os.environ["EVALGATE_SKILL_VARIANT"]
warnings = ["agent CLI 2.1.197 is older than the tested 2.1.328",
            "config \\x1b[31mred\\u202e ignored", "line\\u2028sep\\u2029para \\t\\n  end"]
if case == "c03":
    warnings.append("only c03 says this")
if case == "bad-type" :
    warnings = [3]
line = {"variant": variant, "invokedSkills": [], "output": "ok", "exitCode": 0,
        "warnings": warnings}
print(json.dumps(line))
"""


def _run(tmp: Path, ids: list[str], *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    skill = write_skill(tmp / "skills")
    cases = write_jsonl(
        tmp / "cases.jsonl",
        [{"id": i, "prompt": f"prompt {i}", "expectTrigger": n % 2 == 0} for n, i in
         enumerate(ids)],
    )  # fmt: skip
    runner = tmp / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    (tmp / "t").mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp / "t"))
    report = tmp / "report.json"
    argv = ["skill-evals", "test", "--skill", str(skill), "--cases", str(cases), "--trials", "1",
            "--runner", f"{sys.executable} {runner}", "--report", str(report), "-q",
            *extra]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return proc, json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("warnings")
    ids = [f"c{n:02d}" for n in range(1, 11)]
    proc, report = _run(tmp, ids, "--record", str(tmp / "rec.jsonl"))
    return {"tmp": tmp, "proc": proc, "report": report, "ids": ids}


OLD = "runner: agent CLI 2.1.197 is older than the tested 2.1.328"


def test_each_distinct_warning_is_printed_once_and_kept_in_messages(
    recorded: dict[str, Any],
) -> None:
    proc, report = recorded["proc"], recorded["report"]
    assert proc.returncode == 0, proc.stderr
    assert_valid_report(report)
    lines = proc.stderr.splitlines()
    assert lines.count(f"skill-evals: warning: {OLD}") == 1
    assert lines.count("skill-evals: warning: runner: only c03 says this") == 1
    hostile = [line for line in lines if "config" in line]
    assert len(hostile) == 1 and "\x1b" not in hostile[0] and "\u202e" not in hostile[0]
    assert hostile[0] == "skill-evals: warning: runner: config \\u001b[31mred\\u202e ignored"
    # line and paragraph separators are shown like every invisible character, not blanked
    assert lines.count("skill-evals: warning: runner: line\\u2028sep\\u2029para end") == 1
    pairs = list(zip(report["messageSeverities"], report["messages"], strict=True))
    assert ("warning", OLD) in pairs
    assert ("warning", "runner: only c03 says this") in pairs
    assert sum(1 for _, m in pairs if m == OLD) == 1


def test_warnings_are_recorded_and_come_back_when_scored_again(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]
    lines = (tmp / "rec.jsonl").read_text(encoding="utf-8").split("\n")[:-1]  # not at U+2028
    assert all("agent CLI 2.1.197" in json.loads(line)["warnings"][0] for line in lines)
    argv = ["skill-evals", "test", "--skill", str(tmp / "skills" / "refund-policy"), "--cases",
            str(tmp / "cases.jsonl"), "--trials", "1", "--observations", str(tmp / "rec.jsonl"),
            "--format", "json"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert OLD in json.loads(proc.stdout)["messages"]
    assert proc.stderr.count(OLD) == 1


@pytest.mark.parametrize(
    ("warnings", "words"),
    [
        ("one text", "wrong-typed key 'warnings': must be an array, got string"),
        ([3], "wrong-typed key 'warnings[0]': must be a string of at most 300 characters"),
        (["x" * 301], "wrong-typed key 'warnings[0]': must be a string of at most 300"),
        (["w"] * 11, "key 'warnings': more than 10 items"),
    ],
)
def test_malformed_warnings_are_refused_naming_the_item(warnings: Any, words: str) -> None:
    from skill_evals.run.observations import ContractError, parse_runner_object

    line = {"variant": "with", "invokedSkills": [], "output": "", "exitCode": 0}
    with pytest.raises(ContractError, match=words.replace("(", r"\(").replace("[", r"\[")):
        parse_runner_object({**line, "warnings": warnings}, "with")
    assert parse_runner_object({**line, "warnings": ["x" * 300] * 10}, "with")["warnings"]


def test_a_malformed_warnings_key_is_a_runner_failure(tmp_path: Path) -> None:
    ids = ["bad-type", *(f"c{n:02d}" for n in range(1, 10))]
    proc, report = _run(tmp_path, ids, "--jobs", "1")
    assert proc.returncode == 7
    reasons = {f["reason"] for f in report["runner"]["failures"]}
    assert any("'warnings[0]'" in r for r in reasons), reasons
