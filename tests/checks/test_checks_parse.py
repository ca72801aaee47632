"""Task checks as the cases file declares them: every refusal happens when the cases load
(exit 5), naming file, line and field — never the prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from skill_evals.checks.model import (
    Budget,
    ChangesWithin,
    Command,
    FileContains,
    FileMatches,
    OutputMatches,
    Task,
    ToolCalled,
)
from skill_evals.errors import InvalidInput
from skill_evals.suite.cases import load_cases

PROMPT = "PROMPT-MARK-77aa do the thing"


def load_one(tmp_path: Path, **fields: Any) -> Any:
    """Load a JSONL file whose second line is a case with ``fields``."""
    cases = [
        {"id": "first", "prompt": "first prompt", "expectTrigger": True},
        {"id": "c1", "prompt": PROMPT, "expectTrigger": True, **fields},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return load_cases(path, "skill").cases[1]


def refused(tmp_path: Path, **fields: Any) -> str:
    with pytest.raises(InvalidInput) as info:
        load_one(tmp_path, **fields)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'cases.jsonl'}:2: "), message
    assert "PROMPT-MARK" not in message
    return message


def test_one_check_or_a_list(tmp_path: Path) -> None:
    one = load_one(tmp_path, task={"check": "file_exists", "path": "a.txt"}).task
    assert isinstance(one, Task) and len(one.checks) == 1 and one.workspace
    many = load_one(
        tmp_path,
        task=[
            {"check": "output_matches", "pattern": "^ok$", "flags": "im"},
            {"check": "file_contains", "path": "docs/a.md", "text": "x"},
            {"check": "file_matches", "path": "a", "pattern": "b+"},
            {"check": "changes_within", "paths": ["src/", "README.md"]},
            {"check": "command", "run": ["python3", "-c", "1"], "timeoutMs": 5, "expectExit": 2},
            {"check": "tool_called", "tool": "Edit", "input": {"path": "a"}, "min": 2, "max": 3},
            {"check": "max_cost_usd", "value": 0.5},
        ],
    ).task
    assert many.checks == (
        OutputMatches("^ok$", "im"),
        FileContains("docs/a.md", ("x",)),
        FileMatches("a", "b+", ""),
        ChangesWithin(("src/", "README.md")),
        Command(("python3", "-c", "1"), 5, 2),
        ToolCalled("Edit", {"path": "a"}, 2, 3),
        Budget("max_cost_usd", 0.5),
    )
    assert many.workspace and many.needs_snapshot
    only_output = load_one(tmp_path, task=[{"check": "max_turns", "value": 3}]).task
    assert not only_output.workspace and not only_output.needs_snapshot


@pytest.mark.parametrize(
    ("task", "field", "reason"),
    [
        ([], "field task", "at least one check"),
        ("file_exists", "field task", "must be an object"),
        ([1], "field task[0]", "must be an object"),
        ({"check": "file_exist", "path": "a"}, "field task.check", "unknown check 'file_exist'"),
        ({"check": "file_exists"}, "field task", 'missing "path"'),
        ({"check": "file_exists", "path": "a", "text": "x"}, "field task.text", "unknown field"),
        ([{"check": "command", "run": []}], "field task[0].run", "must name a program"),
        ({"check": "command", "run": "ls -l"}, "field task.run", "an array of strings"),
        ({"check": "command", "run": ["ls", 1]}, "field task.run[1]", "must be a string"),
        ({"check": "command", "run": [""]}, "field task.run[0]", "must not be empty"),
        ({"check": "command", "run": ["ls"], "timeoutMs": 0}, "task.timeoutMs", "at least 1"),
        ({"check": "command", "run": ["x"], "timeoutMs": 600_001}, "task.timeoutMs", "at most"),
        ({"check": "command", "run": ["x"], "expectExit": True}, "task.expectExit", "integer"),
        ({"check": "output_matches", "pattern": "("}, "field task.pattern", "invalid regular"),
        ({"check": "output_matches", "pattern": "a" * 1001}, "task.pattern", "at most 1000"),
        ({"check": "output_matches", "pattern": ""}, "field task.pattern", "must not be empty"),
        ({"check": "output_matches", "pattern": "a", "flags": "q"}, "task.flags", "imsx"),
        ({"check": "output_matches", "pattern": "a", "flags": "ii"}, "task.flags", "at most once"),
        ({"check": "file_contains", "path": "a", "text": []}, "task.text", "at least one"),
        ({"check": "file_contains", "path": "a", "text": ""}, "task.text", "empty string"),
        ({"check": "file_contains", "path": "a", "text": ["x", 2]}, "task.text[1]", "a string"),
        ({"check": "json_file_equals", "path": "a"}, "field task", 'missing "expected"'),
        ({"check": "changes_within", "paths": []}, "field task.paths", "at least one path"),
        ({"check": "unchanged", "paths": "src/"}, "field task.paths", "an array"),
        ({"check": "tool_called", "tool": ""}, "field task.tool", "non-empty"),
        ({"check": "tool_called", "tool": "a", "min": 3, "max": 2}, "task.max", "at least min"),
        ({"check": "tool_called", "tool": "a", "min": 0}, "field task", "always passes"),
        ({"check": "tool_called", "tool": "a", "input": [1]}, "field task.input", "an object"),
        ({"check": "tool_not_called", "tool": "a", "min": 1}, "field task.min", "unknown"),
        ({"check": "max_turns", "value": 0}, "field task.value", "greater than 0"),
        ({"check": "max_turns", "value": 1.5}, "field task.value", "positive integer"),
        ({"check": "max_tokens", "value": "10"}, "field task.value", "positive integer"),
        ({"check": "max_cost_usd", "value": -1}, "field task.value", "greater than 0"),
        ({"check": "max_duration_ms", "value": True}, "field task.value", "positive number"),
        ({"check": "exit_code", "expected": "0"}, "field task.expected", "integer"),
        ({"check": "includes_all", "expected": "x"}, "field task.expected", "array"),
    ],
)
def test_bad_checks_are_refused_at_load(tmp_path: Path, task: Any, field: str, reason: str) -> None:
    message = refused(tmp_path, task=task)
    assert field in message and reason in message


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "no leading /"),
        ("..", ".. segment"),
        ("a/../b", ".. segment"),
        ("a//b", "empty or . segments"),
        ("./a", "empty or . segments"),
        ("a/", "not a directory"),
        ("a\\b", "no backslash"),
        ("", "must not be empty"),
        ("a\u0000b", "NUL"),
    ],
)
def test_paths_stay_inside_the_workspace(tmp_path: Path, path: str, reason: str) -> None:
    message = refused(tmp_path, task={"check": "file_exists", "path": path})
    assert "field task.path" in message and reason in message


def test_directory_entries_need_changes_checks(tmp_path: Path) -> None:
    task = load_one(tmp_path, task={"check": "unchanged", "paths": ["src/", "a.txt"]}).task
    assert task.checks[0].paths == ("src/", "a.txt")
    message = refused(tmp_path, task={"check": "unchanged", "paths": ["ok/", "../up/"]})
    assert "field task.paths[1]" in message and ".. segment" in message


def make_fixture(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixtures" / "repo"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "a.py").write_text("x\n", encoding="utf-8")
    return fixture


def test_fixture_is_resolved_against_the_cases_file(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path)
    case = load_one(tmp_path, fixture="fixtures/repo/")
    assert case.fixture == fixture.resolve()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("/abs/fixture", "no leading /"),
        ("../fixtures", ".. segment"),
        ("fixtures/missing", "no such directory"),
        ("fixtures/repo/src/a.py", "not a directory"),
        (3, "must be a directory relative to the cases file"),
    ],
)
def test_bad_fixtures_are_refused(tmp_path: Path, value: Any, reason: str) -> None:
    make_fixture(tmp_path)
    message = refused(tmp_path, fixture=value)
    assert "field fixture" in message and reason in message


def test_fixtures_may_not_hold_or_pass_through_symlinks(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path)
    (fixture / "link").symlink_to("/etc/passwd")
    assert "symlink" in refused(tmp_path, fixture="fixtures/repo")
    (fixture / "link").unlink()
    (tmp_path / "alias").symlink_to(fixture)
    assert "symlink" in refused(tmp_path, fixture="alias")
    os.mkfifo(fixture / "pipe")
    assert "not a regular file" in refused(tmp_path, fixture="fixtures/repo")


@pytest.mark.parametrize(
    ("setup", "field", "reason"),
    [
        ("make", "field setup", "an array of commands"),
        (["make"], "field setup[0]", "an argv array"),
        ([[]], "field setup[0]", "must name a program"),
        ([["make", 1]], "field setup[0][1]", "a string"),
        ([[""]], "field setup[0][0]", "must not be empty"),
    ],
)
def test_bad_setup_is_refused(tmp_path: Path, setup: Any, field: str, reason: str) -> None:
    message = refused(tmp_path, setup=setup)
    assert field in message and reason in message


def test_setup_commands_load_as_argv_tuples(tmp_path: Path) -> None:
    case = load_one(tmp_path, setup=[["git", "init", "-q"], ["touch", "{workspace}/x"]])
    assert case.setup == (("git", "init", "-q"), ("touch", "{workspace}/x"))


def test_yaml_checks_report_the_line_of_the_field(tmp_path: Path) -> None:
    make_fixture(tmp_path)
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n"
        "  - id: c1\n"
        f"    prompt: {PROMPT}\n"
        "    expectTrigger: true\n"
        "    fixture: fixtures/repo\n"
        "    setup:\n"
        "      - [git, init]\n"
        "    task:\n"
        "      - check: file_exists\n"
        "        path: a.txt\n"
        "      - check: file_matches\n"
        "        path: a.txt\n"
        "        pattern: '[unclosed'\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidInput) as info:
        load_cases(path, "skill")
    assert str(info.value).startswith(f"{path}:13: field task[1].pattern: invalid regular")
    text = path.read_text(encoding="utf-8").replace("'[unclosed'", "'[closed]'")
    path.write_text(text, encoding="utf-8")
    case = load_cases(path, "skill").cases[0]
    assert case.setup == (("git", "init"),) and case.fixture is not None
    assert len(case.task.checks) == 2
