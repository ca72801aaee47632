"""A case file is data: a check picks its judge only by a name the trusted side defines
(--judges NAME=CMD, config judges:, `default` for --judge). A command, a path or an unknown
name in a case is exit 5 before anything runs, naming the file, line and field — and the
program it names never starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import cli_args, judge_cmd, judge_log, make_suite, run_cli, runner_log

RUBRIC = "Say whether the notes are good."


def _rows() -> dict[str, Any]:
    return {f"c{i}": {"with": {"output": "GOOD"}, "without": {"output": "x"}} for i in range(10)}


def _named_suite(root: Path, name: str | None) -> None:
    check: dict[str, Any] = {"check": "judge", "rubric": RUBRIC}
    if name is not None:
        check["judge"] = name
    make_suite(root, _rows(), [check])


def _attack(root: Path, value: str, *more: str) -> str:
    """Case c4 names ``value`` as its judge; the run must refuse it before anything starts."""
    plain = {"check": "judge", "rubric": RUBRIC}
    tasks = {f"c{i}": [plain] for i in range(10)}
    tasks["c4"] = [{**plain, "judge": value}]
    make_suite(root, _rows(), tasks)
    done = run_cli(root, *cli_args(root, "--judge", judge_cmd(root), *more))
    assert done.returncode == 5, done.stderr
    assert not runner_log(root) and not judge_log(root)
    assert not (root / "PWNED").exists()  # the named program never ran
    assert "widget library" not in done.stderr  # never the prompt
    return done.stderr


@pytest.mark.parametrize(
    "value",
    [
        "sh -c 'touch PWNED'",  # a command
        "./pwn.sh",  # a relative path
        "{root}/pwn.sh",  # an absolute path
        "pwn.sh x",
        "",
    ],
)
def test_a_case_naming_a_program_is_refused_and_nothing_runs(tmp_path: Path, value: str) -> None:
    script = tmp_path / "pwn.sh"
    script.write_text("#!/bin/sh\ntouch PWNED\n", "utf-8")
    script.chmod(0o755)
    stderr = _attack(tmp_path, value.replace("{root}", str(tmp_path)))
    assert "cases.jsonl:5: field task[0].judge: must name a judge the trusted side" in stderr


@pytest.mark.parametrize("value", ["pwn.sh", "sh", "strict"])
def test_a_case_naming_an_undefined_judge_is_refused(tmp_path: Path, value: str) -> None:
    script = tmp_path / "pwn.sh"
    script.write_text("#!/bin/sh\ntouch PWNED\n", "utf-8")
    script.chmod(0o755)
    stderr = _attack(tmp_path, value, "--judges", f"other={judge_cmd(tmp_path)}")
    assert f"cases.jsonl:5: field task[0].judge: no judge is named '{value}'" in stderr
    assert "(defined: other)" in stderr


def test_a_named_judge_from_the_command_line_grades_the_checks_that_name_it(
    tmp_path: Path,
) -> None:
    _named_suite(tmp_path, "notes")
    # --judge would fail every request: only the named judge may be asked.
    args = cli_args(tmp_path, "--judge", "false", "--judges", f"notes={judge_cmd(tmp_path)}")
    done = run_cli(tmp_path, *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["judge"]["calls"] == 20 and len(judge_log(tmp_path)) == 20
    assert report["judge"]["failures"] == 0


def test_default_names_the_judge_option(tmp_path: Path) -> None:
    _named_suite(tmp_path, "default")
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judge", judge_cmd(tmp_path)), "-q")
    assert done.returncode == 0, done.stderr
    assert len(judge_log(tmp_path)) == 20


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("default=true", "--judges: 'default' is --judge's name"),
        ("notes", "--judges: expected NAME=CMD"),
        ("bad name=true", "--judges: 'bad name' is not a judge name"),
        ("notes=", "--judges notes: the command is empty"),
        ("notes='x", "--judges notes: cannot split the command"),
    ],
)
def test_a_bad_judges_option_is_refused(tmp_path: Path, given: str, expected: str) -> None:
    _named_suite(tmp_path, "notes")
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judges", given))
    assert done.returncode == 5 and expected in done.stderr, done.stderr
    assert not runner_log(tmp_path)


def test_a_judges_name_given_twice_is_refused(tmp_path: Path) -> None:
    _named_suite(tmp_path, "notes")
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judges", "notes=true", "--judges", "notes=x"))
    assert done.returncode == 5 and "the judge 'notes' is defined twice" in done.stderr
