"""Partial figures are not verdicts: a run stopped by a runner failure (the default fail-fast)
before every planned invocation ran reports each gate's figure with ``passed: null`` and
``partial: true``, every output says "partial: k of n, not decided", and JUnit never passes it.
Real `skill-evals test` subprocesses with a scripted runner and a private TMPDIR."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import junitparser
import pytest

from tests.conftest import REPO, assert_valid_report, write_jsonl, write_skill

GOOD = REPO / "tests" / "runners" / "good.py"


def _run(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Twelve cases, the runner loads the skill on every `with` run (F1 0.667 ≥ 0.5 on what
    ran) and fails on c9: the run stops with 9 of the planned invocations done."""
    tmp = tmp_path_factory.mktemp("partial")
    skill = write_skill(tmp / "skills", name="partial-skill")
    cases = write_jsonl(
        tmp / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"question {i} about refunds", "expectTrigger": i % 2 == 0}
            for i in range(12)
        ],
    )
    runner = f"{sys.executable} {GOOD} --invoke partial-skill --fail-case c9"
    out = tmp / "out"
    out.mkdir()
    common = ["--skill", str(skill), "--cases", str(cases), "--runner", runner, "--trials", "1"]
    common += ["--jobs", "1", "--min-trigger-f1", "0.5", "--arms", "with"]
    done = _run(
        tmp,
        *common,
        "--report",
        str(out / "report.json"),
        "--junit",
        str(out / "junit.xml"),
        "--markdown",
        str(out / "report.md"),
        "--html",
        str(out / "report.html"),
    )
    return {"done": done, "out": out}


def test_the_gate_of_a_stopped_run_has_no_verdict(stopped: dict[str, Any]) -> None:
    done, out = stopped["done"], stopped["out"]
    assert done.returncode == 7, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["status"] == "unavailable"
    gate = report["gates"]["minTriggerF1"]
    assert gate["passed"] is None and gate["partial"] is True
    assert isinstance(gate["value"], float)
    observed, planned = report["coverage"]["observed"], report["coverage"]["planned"]
    assert observed < planned
    label = f"partial: {observed} of {planned}, not decided"
    for text in (
        done.stdout,
        (out / "report.md").read_text(encoding="utf-8"),
        (out / "report.html").read_text(encoding="utf-8"),
    ):
        assert re.search(rf"F1[^\n]{{0,40}}\d\.\d+ \({label}\)", text), text[-3000:]
    # one form everywhere, the report's messages included: F1 0.667, never 0.666667 or 1
    for text in (done.stdout, done.stderr, json.dumps(report["messages"])):
        for shown in re.findall(r"F1 (\S+) \(partial", text):
            assert re.fullmatch(r"\d\.\d{3}", shown), text[-3000:]
    assert "gate failed" not in json.dumps(report["messages"])


def test_junit_never_passes_a_partial_gate(stopped: dict[str, Any]) -> None:
    xml = junitparser.JUnitXml.fromfile(str(stopped["out"] / "junit.xml"))
    cases = {case.name: case for suite in xml for case in suite}
    result = cases["trigger"].result
    assert result and all(isinstance(r, junitparser.Error) for r in result)
    assert "not decided" in (result[0].message or "")


def test_a_complete_run_keeps_its_verdict(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills", name="partial-skill")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"question {i} about refunds", "expectTrigger": i % 2 == 0}
            for i in range(12)
        ],
    )
    runner = f"{sys.executable} {GOOD} --invoke partial-skill"
    done = _run(
        tmp_path,
        "--skill",
        str(skill),
        "--cases",
        str(cases),
        "--runner",
        runner,
        "--trials",
        "1",
        "--min-trigger-f1",
        "0.5",
        "--arms",
        "with",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    gate = json.loads(done.stdout)["gates"]["minTriggerF1"]
    assert gate["passed"] is True and "partial" not in gate
