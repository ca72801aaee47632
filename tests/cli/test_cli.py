"""The `skill-evals` command end to end: exit codes, their precedence, outputs, formats.

These drive the real CLI in a subprocess with the real simulated runner (no mocks), so they fail
when any stage of load → plan → run → score → render breaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import junitparser
import pytest

from tests.conftest import EXAMPLE_SKILL, assert_valid_report, write_jsonl, write_skill

SIMULATED = f"{sys.executable} -m skill_evals runner simulated"
EXAMPLE_CASES = EXAMPLE_SKILL / "evals" / "cases.jsonl"
SECRET_PROMPT = "zebra-confidential-prompt-text"


def run_cli(args: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def run_test_cmd(
    tmp_path: Path, *extra: str, skill: Path = EXAMPLE_SKILL, cases: Path = EXAMPLE_CASES
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    report = tmp_path / "out" / "report.json"
    proc = run_cli(
        ["test", "--skill", str(skill), "--cases", str(cases), "--report", str(report), *extra]
    )
    data = json.loads(report.read_text()) if report.exists() else None
    if data is not None:
        assert_valid_report(data)
        assert data["exitCode"] == proc.returncode
    return proc, data


def simple_cases(n: int, *, task: bool = True, expect: bool = True) -> list[dict[str, Any]]:
    cases = []
    for i in range(n):
        case: dict[str, Any] = {
            "id": f"c{i}",
            "prompt": f"Can I get a refund for returns of item number {i}? {SECRET_PROMPT}",
            "expectTrigger": expect,
        }
        if task:
            case["task"] = {"check": "exit_code", "expected": 0}
        cases.append(case)
    return cases


# --------------------------------------------------------------------------------------- pass


def test_example_passes_with_expected_figures(tmp_path: Path) -> None:
    proc, report = run_test_cmd(
        tmp_path,
        "--runner",
        SIMULATED,
        "--min-trigger-f1",
        "0.8",
        "--min-uplift",
        "0.2",
        "--trials",
        "2",
        "--junit",
        str(tmp_path / "out" / "junit.xml"),
        "--markdown",
        str(tmp_path / "out" / "report.md"),
    )
    assert proc.returncode == 0, proc.stderr
    assert report is not None
    assert report["status"] == "pass"
    trigger = report["trigger"]
    # 8 positives all trigger; one near-miss negative triggers in every trial (the simulation
    # routes on words, and "refund … returns" in a coding question fools it).
    assert (trigger["tp"], trigger["fp"], trigger["fn"], trigger["tn"]) == (16, 2, 0, 10)
    assert trigger["precision"] == pytest.approx(16 / 18)
    assert trigger["recall"] == 1
    assert trigger["falseTriggerCaseIds"] == ["near-miss-refund-code"]
    assert trigger["missedTriggerCaseIds"] == []
    task = report["task"]
    assert task["units"] == 14
    assert task["difference"] == pytest.approx(7 / 14)
    assert task["signTest"] == {"positive": 7, "negative": 0, "ties": 7, "pValue": 0.015625}
    assert 0 < task["interval"]["lower"] <= 0.5 <= task["interval"]["upper"] <= 1
    assert report["gates"]["minUplift"]["passed"] is True
    assert report["runner"]["invocations"] == 14 * 2 * 2
    assert report["runner"]["failures"] == []
    # progress lines on stderr, the simulation labelled
    assert "[56/56]" in proc.stderr
    # text verdict on stdout
    assert proc.stdout.strip()
    suites = junitparser.JUnitXml.fromfile(str(tmp_path / "out" / "junit.xml"))
    assert sum(1 for _ in suites) == 1
    assert "refund-policy" in (tmp_path / "out" / "report.md").read_text()


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One live run of the example (trials 1, JSON on stdout, quiet) whose observations are
    recorded: the tests below read it, or score its record again without a runner."""
    tmp = tmp_path_factory.mktemp("example-run")
    record = tmp / "obs.jsonl"
    proc, report = run_test_cmd(
        tmp, "--runner", SIMULATED, "--trials", "1", "--record", str(record),
        "--format", "json", "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert report is not None
    return {"proc": proc, "report": report, "record": record}


def test_yaml_suite_gives_the_same_figures(tmp_path: Path, example_run: dict[str, Any]) -> None:
    from_jsonl = example_run["report"]
    _, from_yaml = run_test_cmd(
        tmp_path, "--runner", SIMULATED, "--trials", "1",
        cases=EXAMPLE_SKILL / "evals" / "cases.yaml",
    )  # fmt: skip
    assert from_yaml is not None
    assert from_jsonl["trigger"] == from_yaml["trigger"]
    assert from_jsonl["task"] == from_yaml["task"]


def test_json_format_is_the_report(example_run: dict[str, Any]) -> None:
    proc = example_run["proc"]
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report == example_run["report"]  # stdout is the report --report wrote
    assert proc.stderr.count("[") == 0  # --quiet: no progress lines


def test_recorded_observations_score_the_same(tmp_path: Path, example_run: dict[str, Any]) -> None:
    live = example_run["report"]
    proc, replay = run_test_cmd(
        tmp_path, "--observations", str(example_run["record"]), "--trials", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert replay is not None
    assert replay["settings"]["mode"] == "observations"
    assert live["trigger"] == replay["trigger"]
    assert live["task"] == replay["task"]


# ----------------------------------------------------------------------------------- exit 1


def test_trigger_gate_fails_with_exit_1(tmp_path: Path, example_run: dict[str, Any]) -> None:
    # the example's own observations, gated above the F1 they reach
    proc, report = run_test_cmd(
        tmp_path, "--observations", str(example_run["record"]), "--trials", "1",
        "--min-trigger-f1", "0.99",
    )  # fmt: skip
    assert proc.returncode == 1
    assert report is not None and report["status"] == "fail"
    assert report["gates"]["minTriggerF1"]["passed"] is False


def test_loading_violation_fails_with_exit_1(tmp_path: Path) -> None:
    cases = simple_cases(10)
    cases[3]["loaded"] = {"include": ["some-neighbour"]}
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    proc, report = run_test_cmd(tmp_path, "--runner", SIMULATED, "--trials", "1", cases=path)
    assert proc.returncode == 1
    assert report is not None
    violations = report["loading"]["violations"]
    assert {(v["caseId"], v["variant"]) for v in violations} == {("c3", "with"), ("c3", "without")}
    assert violations[0]["missing"] == ["some-neighbour"]


# ----------------------------------------------------------------------------------- exit 5


@pytest.mark.parametrize(
    "args",
    [
        ["--trials", "0"],
        ["--trials", "101"],
        ["--jobs", "65"],
        ["--timeout-ms", "0"],
        ["--max-bytes", "10000001"],
        ["--seed", str(2**32)],
        ["--bootstrap-samples", "999"],
        ["--min-trigger-f1", "1.5"],
        ["--min-uplift", "-1.1"],
        ["--format", "xml"],
        ["--no-such-option"],
    ],
)
def test_option_out_of_range_exits_5_with_one_line(tmp_path: Path, args: list[str]) -> None:
    proc = run_cli(
        [
            "test",
            "--skill",
            str(EXAMPLE_SKILL),
            "--cases",
            str(EXAMPLE_CASES),
            "--runner",
            SIMULATED,
            *args,
        ]
    )
    assert proc.returncode == 5
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_missing_required_option_exits_5() -> None:
    proc = run_cli(["test", "--skill", str(EXAMPLE_SKILL)])
    assert proc.returncode == 5
    assert "--cases" in proc.stderr


@pytest.mark.parametrize("mode", ["both", "neither"])
def test_runner_and_observations_exactly_one(tmp_path: Path, mode: str) -> None:
    extra = ["--runner", SIMULATED, "--observations", str(tmp_path / "o.jsonl")]
    proc, _ = run_test_cmd(tmp_path, *(extra if mode == "both" else []))
    assert proc.returncode == 5
    assert "--runner" in proc.stderr and "--observations" in proc.stderr


def test_output_inside_skill_dir_exits_5(tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    cases = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10))
    proc = run_cli(
        [
            "test",
            "--skill",
            str(skill),
            "--cases",
            str(cases),
            "--runner",
            SIMULATED,
            "--junit",
            str(skill / "junit.xml"),
        ]
    )
    assert proc.returncode == 5
    assert "inside the skill directory" in proc.stderr
    assert not (skill / "junit.xml").exists()


def test_missing_skill_dir_exits_5(tmp_path: Path) -> None:
    proc, _ = run_test_cmd(tmp_path, "--runner", SIMULATED, skill=tmp_path / "nope")
    assert proc.returncode == 5
    assert "nope" in proc.stderr


def test_invalid_case_beats_insufficient_units(tmp_path: Path) -> None:
    cases = simple_cases(9)
    cases.append(dict(cases[0]))  # duplicate id, and only 9 units
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    proc, report = run_test_cmd(tmp_path, "--runner", SIMULATED, cases=path)
    assert proc.returncode == 5
    assert f"{path}:10" in proc.stderr
    assert SECRET_PROMPT not in proc.stderr + proc.stdout
    assert report is not None and report["status"] == "invalid"
    assert SECRET_PROMPT not in json.dumps(report)


def test_missing_observation_exits_5(tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10))
    record = tmp_path / "obs.jsonl"
    run_test_cmd(
        tmp_path / "a", "--runner", SIMULATED, "--trials", "1", "--record", str(record), cases=cases
    )
    # records are appended as invocations finish: drop c0's `with` line wherever it is
    lines = record.read_text().splitlines()
    kept = [
        line
        for line in lines
        if not (json.loads(line)["caseId"] == "c0" and json.loads(line)["variant"] == "with")
    ]
    assert len(kept) == len(lines) - 1
    record.write_text("\n".join(kept) + "\n")
    proc, _ = run_test_cmd(
        tmp_path / "b", "--observations", str(record), "--trials", "1", cases=cases
    )
    assert proc.returncode == 5
    assert "c0" in proc.stderr


# ----------------------------------------------------------------------------------- exit 6


def test_nine_distinct_prompts_exit_6_before_any_run(tmp_path: Path) -> None:
    cases = simple_cases(9)
    # a tenth case that normalises to the same prompt as c0 is not a new unit
    cases.append({**cases[0], "id": "c0-again", "prompt": cases[0]["prompt"] + "  \r\n"})
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    marker = tmp_path / "ran"
    runner = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
    proc, report = run_test_cmd(tmp_path, "--runner", runner, cases=path)
    assert proc.returncode == 6
    assert not marker.exists()
    assert report is not None and report["status"] == "insufficient"


def test_min_uplift_with_fewer_than_ten_task_units_exits_6(tmp_path: Path) -> None:
    cases = simple_cases(12)
    for case in cases[:3]:
        del case["task"]
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    proc, _ = run_test_cmd(tmp_path, "--runner", SIMULATED, "--min-uplift", "0", cases=path)
    assert proc.returncode == 6


# ----------------------------------------------------------------------------------- exit 7


def test_min_uplift_without_any_task_exits_7(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10, task=False))
    proc, report = run_test_cmd(tmp_path, "--runner", SIMULATED, "--min-uplift", "0", cases=path)
    assert proc.returncode == 7
    assert report is not None and report["task"] is None


def test_no_task_checks_reports_task_null_and_passes(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10, task=False))
    proc, report = run_test_cmd(tmp_path, "--runner", SIMULATED, "--trials", "1", cases=path)
    assert proc.returncode == 0
    assert report is not None and report["task"] is None


def test_runner_failure_beats_gate_failure(tmp_path: Path) -> None:
    # `false` exits 1: every invocation is a runner failure → 7, even though F1 would also fail.
    proc, report = run_test_cmd(
        tmp_path, "--runner", "false", "--min-trigger-f1", "1", "--trials", "1"
    )
    assert proc.returncode == 7
    assert report is not None and report["status"] == "unavailable"
    failures = report["runner"]["failures"]
    assert failures and "exit" in failures[0]["reason"]
    # fail-fast: after the first failure no new invocation starts
    assert report["runner"]["invocations"] < 28


def test_f1_null_while_gated_exits_7(tmp_path: Path) -> None:
    # every case should trigger but none does: precision is 0/0 → F1 null (recall is 0)
    cases = simple_cases(10, expect=True)
    for case in cases:
        case["prompt"] = f"What time does shop {case['id']} open?"
    path = write_jsonl(tmp_path / "cases.jsonl", cases)
    proc, report = run_test_cmd(
        tmp_path, "--runner", SIMULATED, "--trials", "1", "--min-trigger-f1", "0.5", cases=path
    )
    assert proc.returncode == 7
    assert report is not None
    assert report["trigger"]["f1"] is None
    assert report["trigger"]["precision"] is None
    assert report["trigger"]["recall"] == 0


def test_isolation_breach_in_observations_exits_7(tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10))
    record = tmp_path / "obs.jsonl"
    run_test_cmd(
        tmp_path / "a", "--runner", SIMULATED, "--trials", "1", "--record", str(record), cases=cases
    )
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    for row in rows:
        if row["variant"] == "without" and row["caseId"] == "c2":
            row["invokedSkills"] = ["refund-policy"]
    write_jsonl(record, rows)
    proc, report = run_test_cmd(
        tmp_path / "b", "--observations", str(record), "--trials", "1", cases=cases
    )
    assert proc.returncode == 7
    assert report is not None
    assert any("isolation" in f["reason"] for f in report["runner"]["failures"])


# ------------------------------------------------------------------------- other commands


def test_codes_prints_the_table() -> None:
    proc = run_cli(["codes"])
    assert proc.returncode == 0
    for code in ("0", "1", "5", "6", "7", "130"):
        assert f"\n{code} " in "\n" + proc.stdout
    assert "5, then 6, then 7, then 1, then 0" in proc.stdout


def test_validate_example_is_clean() -> None:
    proc = run_cli(["validate", str(EXAMPLE_SKILL)])
    assert proc.returncode == 0, proc.stdout


def test_validate_reports_each_problem(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, name="Bad--Name", description="uses <html> tags")
    proc = run_cli(["validate", str(skill)])
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert len(lines) >= 2
    assert all(line.startswith(str(skill)) for line in lines)


def test_internal_error_is_one_line_and_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from skill_evals import pipeline
    from skill_evals.cli import main as cli

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "run_test", boom)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(
            ["test", "--skill", str(EXAMPLE_SKILL), "--cases", str(EXAMPLE_CASES), "--runner", "x"]
        )
    assert exit_info.value.code == 70
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_help_lists_every_command() -> None:
    proc = run_cli(["--help"])
    assert proc.returncode == 0
    for command in (
        "test",
        "validate",
        "codes",
        "runner",
        "mcp-serve",
        "evidence",
        "ci",
        "lock",
        "changed",
    ):
        assert command in proc.stdout


def test_example_custom_runner_template_runs_end_to_end(tmp_path: Path) -> None:
    template = Path(__file__).resolve().parents[2] / "examples" / "runners" / "custom_runner.py"
    proc, report = run_test_cmd(
        tmp_path, "--runner", f"{sys.executable} {template}", "--trials", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert report is not None
    assert report["runner"]["failures"] == []
    assert report["runner"]["meta"]["durationMs"] is not None


def test_f1_gate_without_positive_cases_exits_7_before_any_run(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cases.jsonl", simple_cases(10, expect=False))
    marker = tmp_path / "ran"
    runner = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
    proc, report = run_test_cmd(tmp_path, "--runner", runner, "--min-trigger-f1", "0.5", cases=path)
    assert proc.returncode == 7
    assert not marker.exists()
    assert report is not None and report["status"] == "unavailable"
    assert "expectTrigger" in proc.stderr
