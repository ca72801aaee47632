"""Workspace tasks end to end through `skill-evals test`: a runner that edits files in the
engine's workspace, checks judged there, records and --resume reusing their verdicts,
--observations carrying them, and no workspace left behind after a timeout or SIGTERM."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PYTHON_SANDBOX_PATH, assert_valid_report, write_jsonl, write_skill

EDITOR = Path(__file__).resolve().parents[1] / "runners" / "editor.py"
PROMPT_MARK = "PROMPT-MARK-5e1d"

VERIFIER = (
    "import sys; t = open('notes.md', encoding='utf-8').read(); "
    "sys.exit(0 if t.startswith('# Notes') and '## 1.2.0' in t else 1)"
)
CHECKS: list[dict[str, Any]] = [
    {"check": "file_contains", "path": "notes.md", "text": "## 1.2.0"},
    {"check": "command", "run": [sys.executable, "-c", VERIFIER]},
    {"check": "tool_called", "tool": "write", "input": {"path": "notes.md"}},
    {"check": "changes_within", "paths": ["notes.md"]},
    {"check": "unchanged", "paths": ["src/"]},
    {"check": "max_turns", "value": 4},
    {"check": "exit_code", "expected": 0},
]


def make_project(tmp_path: Path, n: int = 10, checks: Sequence[dict[str, Any]] = CHECKS) -> dict:
    skill = write_skill(tmp_path, name="notes", description="Write release notes.")
    evals = tmp_path / "evals"
    fixture = evals / "fixtures" / "repo"
    (fixture / "src").mkdir(parents=True)
    (fixture / "notes.md").write_text("# Notes\n", encoding="utf-8")
    (fixture / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    cases = [
        {
            "id": f"case-{i}",
            "prompt": f"{PROMPT_MARK} write the notes for release {i}",
            "expectTrigger": True,
            "fixture": "fixtures/repo",
            "task": list(checks),
        }
        for i in range(n)
    ]
    path = write_jsonl(evals / "cases.jsonl", cases)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {"skill": skill, "cases": path, "tmp": tmp, "root": tmp_path}


def run_cli(
    project: dict, *extra: str, runner: Sequence[str] = (), timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    command = shlex.join([sys.executable, str(EDITOR), *runner])
    args = [
        sys.executable,
        "-m",
        "skill_evals",
        "test",
        "--skill",
        str(project["skill"]),
        "--cases",
        str(project["cases"]),
        "--trials",
        "1",
        "-q",
        "--format",
        "json",
    ]
    if "--observations" not in extra:
        args += ["--runner", command, *PYTHON_SANDBOX_PATH]
    env = dict(os.environ, TMPDIR=str(project["tmp"]), LEAKED_TOKEN="tok-3f9a")
    return subprocess.run([*args, *extra], capture_output=True, text=True, timeout=timeout, env=env)


def report_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(proc.stdout)
    assert_valid_report(report)
    assert PROMPT_MARK not in proc.stdout and PROMPT_MARK not in proc.stderr
    return report


def assert_nothing_left(tmp: Path) -> None:
    assert list(tmp.iterdir()) == [], "a workspace or runner temp dir was left behind"


def test_runner_edits_files_and_checks_judge_the_workspace(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    proc = run_cli(project, "--min-uplift", "0.5")
    assert proc.returncode == 0, proc.stderr
    report = report_of(proc)
    assert report["task"]["with"]["passRate"] == 1.0
    assert report["task"]["without"]["passRate"] == 0.0
    first = report["caseResults"][0]
    by_check = {c["check"]: (c["with"], c["without"]) for c in first["checks"]}
    assert by_check == {
        "file_contains": ([True], [False]),
        "command": ([True], [False]),
        "tool_called": ([True], [True]),
        "changes_within": ([True], [True]),
        "unchanged": ([True], [True]),
        "max_turns": ([True], [False]),  # without reports 5 turns
        "exit_code": ([True], [True]),
    }
    assert first["failedCheck"] == {
        "variant": "without",
        "trial": 1,
        "index": 0,
        "check": "file_contains",
        "reason": "file_contains notes.md: '## 1.2.0' not found",
    }
    efficiency = report["task"]["efficiency"]
    assert efficiency["with"] == {"durationMs": 100.0, "tokens": 1200.0, "costUsd": 0.01}
    assert efficiency["without"] == {"durationMs": 300.0, "tokens": 1500.0, "costUsd": 0.01}
    assert efficiency["difference"] == {"durationMs": -200.0, "tokens": -300.0, "costUsd": 0.0}
    assert report["runner"]["meta"]["turns"] == 10 * 3 + 10 * 5
    # The original fixture is untouched: the runner worked on a copy.
    fixture = project["root"] / "evals" / "fixtures" / "repo" / "notes.md"
    assert fixture.read_text(encoding="utf-8") == "# Notes\n"
    assert_nothing_left(project["tmp"])


def test_failing_task_is_named_with_its_first_failing_check(tmp_path: Path) -> None:
    checks = [{"check": "file_contains", "path": "notes.md", "text": ["## 1.2.0", "## 9.9.9"]}]
    project = make_project(tmp_path, checks=checks)
    proc = run_cli(project)
    report = report_of(proc)
    failed = report["caseResults"][0]["failedCheck"]
    assert failed["variant"] == "with"
    assert failed["reason"] == "file_contains notes.md: '## 9.9.9' not found"
    text = run_cli(project, "--format", "text").stdout
    assert "Task failed with the skill: case-0 (line 1) trial 1: file_contains notes.md:" in text


def test_changes_outside_allowed_paths_and_unchanged_fail(tmp_path: Path) -> None:
    checks = [
        {"check": "changes_within", "paths": ["notes.md"]},
        {"check": "unchanged", "paths": ["src/"]},
    ]
    project = make_project(tmp_path, checks=checks)
    report = report_of(run_cli(project, runner=["--touch", "src/new.py"]))
    first = report["caseResults"][0]
    assert [c["with"] for c in first["checks"]] == [[False], [False]]
    assert [c["without"] for c in first["checks"]] == [[True], [True]]
    assert first["failedCheck"]["reason"] == (
        "changes_within: 1 file(s) changed outside the allowed paths"
    )


def test_a_runner_that_ignores_the_workspace_still_works(tmp_path: Path) -> None:
    project = make_project(tmp_path, checks=[{"check": "unchanged", "paths": ["notes.md"]}])
    proc = run_cli(project, runner=["--no-workspace"])
    assert proc.returncode == 0, proc.stderr
    report = report_of(proc)
    assert report["task"]["with"]["passRate"] == 1.0  # the fixture is as it was


def test_record_then_resume_reuses_workspace_verdicts(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    record = tmp_path / "out" / "rec.jsonl"
    first = report_of(run_cli(project, "--record", str(record)))
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 20
    assert all(len(line["checks"]) == len(CHECKS) for line in lines)
    with_line = next(line for line in lines if line["variant"] == "with")
    assert with_line["checks"] == [True] * len(CHECKS)
    assert with_line["toolCalls"][0] == {
        "name": "write",
        "input": {"path": "notes.md", "mode": "append"},
        "ok": True,
    }
    assert with_line["meta"]["turns"] == 3
    # A runner that cannot start: every observation must come from the record.
    cmd = [
        sys.executable,
        "-m",
        "skill_evals",
        "test",
        "--skill",
        str(project["skill"]),
        "--cases",
        str(project["cases"]),
        "--trials",
        "1",
        "-q",
        "--format",
        "json",
        "--runner",
        "/nonexistent/runner",
        "--resume",
        str(record),
        "--record",
        str(record),
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, TMPDIR=str(project["tmp"])),
    )
    assert proc.returncode == 0, proc.stderr
    second = report_of(proc)
    assert second["runner"]["invocations"] == 0
    for before, after in zip(first["caseResults"], second["caseResults"], strict=True):
        assert after["checks"] == before["checks"]
        assert (after["with"], after["without"]) == (before["with"], before["without"])
        # The verdict is recorded, the reason is not: the report says where it came from.
        assert after["failedCheck"]["reason"] == "file_contains notes.md: failed (recorded result)"
    assert second["task"] == first["task"]


def test_resume_runs_again_what_was_recorded_without_checks(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    record = tmp_path / "rec.jsonl"
    run_cli(project, "--record", str(record))
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    del lines[0]["checks"]  # e.g. recorded before the case had workspace checks
    lines[1]["checks"] = [True]  # recorded for another task
    record.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = run_cli(project, "--resume", str(record), "--record", str(record))
    assert proc.returncode == 0, proc.stderr
    assert report_of(proc)["runner"]["invocations"] == 2


def observations_file(project: dict, lines: list[dict[str, Any]]) -> Path:
    return write_jsonl(project["root"] / "obs.jsonl", lines)


def recorded_lines(project: dict) -> list[dict[str, Any]]:
    record = project["root"] / "rec.jsonl"
    run_cli(project, "--record", str(record))
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def test_observations_with_checks_are_scored(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    lines = recorded_lines(project)
    # Observation checks are recomputed from the fields: a claimed pass does not count.
    first_with = next(r for r in lines if (r["caseId"], r["variant"]) == ("case-0", "with"))
    first_with["exitCode"] = 3
    first_with["checks"] = [True] * len(CHECKS)
    path = observations_file(project, lines)
    proc = run_cli(project, "--observations", str(path))
    assert proc.returncode == 0, proc.stderr
    report = report_of(proc)
    first = report["caseResults"][0]
    assert first["with"] == [False]
    assert first["checks"][0]["with"] == [True]  # a workspace check: the recorded verdict
    assert first["checks"][-1]["with"] == [False]  # exit_code: recomputed
    assert first["failedCheck"]["reason"] == "exit_code: exitCode 3, expected 0"
    assert report["settings"]["mode"] == "observations"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda line: line.pop("checks"), "key 'checks' is missing"),
        (lambda line: line.update(checks=[True]), "key 'checks' has 1 value(s)"),
        (lambda line: line.update(checks=[1] * len(CHECKS)), "must be an array of booleans"),
    ],
)
def test_observations_need_checks_for_workspace_checks(
    tmp_path: Path, change: Any, message: str
) -> None:
    project = make_project(tmp_path)
    lines = sorted(recorded_lines(project), key=lambda r: (r["caseId"], r["variant"]))
    change(lines[3])  # case-1, without
    path = observations_file(project, lines)
    proc = run_cli(project, "--observations", str(path))
    assert proc.returncode == 5
    assert f"{path}:4: " in proc.stderr and message in proc.stderr
    report_of(proc)


def test_setup_commands_run_in_the_workspace_and_fail_the_invocation(tmp_path: Path) -> None:
    project = make_project(tmp_path, n=10, checks=[{"check": "file_exists", "path": "made.txt"}])
    cases = [json.loads(line) for line in project["cases"].read_text().splitlines()]
    script = (
        "import os, pathlib; assert 'LEAKED_TOKEN' not in os.environ; "
        "assert os.environ['SKILL_EVALS_WORKSPACE'] == os.getcwd(); "
        "pathlib.Path('made.txt').write_text('x')"
    )
    for case in cases:
        case["setup"] = [[sys.executable, "-c", script]]
    cases[4]["setup"].append([sys.executable, "-c", "raise SystemExit(3)"])
    write_jsonl(project["cases"], cases)
    proc = run_cli(project, "--keep-going")
    assert proc.returncode == 7
    report = report_of(proc)
    assert report["runner"]["failures"] == [
        {
            "caseId": "case-4",
            "trial": 1,
            "variant": v,
            "reason": "setup: command 2 exited with code 3",
        }
        for v in ("with", "without")
    ]
    assert report["caseResults"][0]["checks"][0]["with"] == [True]
    assert_nothing_left(project["tmp"])


def test_no_workspace_is_left_after_a_timeout(tmp_path: Path) -> None:
    project = make_project(tmp_path, n=10)
    proc = run_cli(
        project, "--timeout-ms", "300", "--jobs", "4", "--keep-going", runner=["--sleep", "30"]
    )
    assert proc.returncode == 7
    report = report_of(proc)
    assert {f["reason"] for f in report["runner"]["failures"]} == {"timed out after 300 ms"}
    assert_nothing_left(project["tmp"])


def test_no_workspace_is_left_after_sigterm(tmp_path: Path) -> None:
    project = make_project(tmp_path, n=10)
    started = tmp_path / "started.txt"
    command = shlex.join([sys.executable, str(EDITOR), "--sleep", "60", "--started", str(started)])
    args = [
        sys.executable,
        "-m",
        "skill_evals",
        "test",
        "--sandbox-path",  # the runner says it started in the test's directory
        f"{tmp_path}:rw",
        "--skill",
        str(project["skill"]),
        "--cases",
        str(project["cases"]),
        "--runner",
        command,
        "--trials",
        "1",
        "-q",
        "--jobs",
        "2",
        "--format",
        "json",
    ]
    env = dict(os.environ, TMPDIR=str(project["tmp"]))
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if started.exists() and len(started.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("the runner never started")
    workspaces = [line.split()[2] for line in started.read_text().splitlines()]
    assert all(Path(w).is_dir() for w in workspaces)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert_valid_report(json.loads(out))
    assert not any(Path(w).exists() for w in workspaces)
    assert_nothing_left(project["tmp"])


def test_keep_workspaces_moves_each_workspace(tmp_path: Path) -> None:
    project = make_project(tmp_path, n=10)
    cases = [json.loads(line) for line in project["cases"].read_text().splitlines()]
    cases[0]["id"] = "a/../b c"
    write_jsonl(project["cases"], cases)
    keep = tmp_path / "kept"
    proc = run_cli(project, "--keep-workspaces", str(keep))
    assert proc.returncode == 0, proc.stderr
    kept = keep / "a%2F%2E%2E%2Fb%20c" / "1"
    assert (kept / "with" / "notes.md").read_text(encoding="utf-8").endswith("- a/../b c\n")
    assert (kept / "without" / "notes.md").read_text(encoding="utf-8").endswith("nothing to add\n")
    assert (keep / "case-1" / "1" / "with" / "src" / "app.py").is_file()
    assert_nothing_left(project["tmp"])
    # A directory that already holds something, or one inside the skill: refused before a run.
    again = run_cli(project, "--keep-workspaces", str(keep))
    assert again.returncode == 5 and "not empty" in again.stderr
    inside = run_cli(project, "--keep-workspaces", str(project["skill"] / "kept"))
    assert inside.returncode == 5 and "outside the skill directory" in inside.stderr
