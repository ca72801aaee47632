"""Case files (docs/cases.md): JSONL and YAML, the Agent Skill Evals shape, units."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skill_evals.checks import Task
from skill_evals.checks.model import ExitCode, IncludesAll, JsonEquals
from skill_evals.errors import InvalidInput
from skill_evals.suite import case_objects, jsonl
from skill_evals.suite import cases as cases_mod
from skill_evals.suite.cases import Case, load_cases, normalize_prompt
from tests.conftest import write_jsonl

SKILL = "brand-deck"
SECRET = "SECRET PROMPT TEXT"


def _case(i: int = 0, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": f"c{i}", "prompt": f"{SECRET} {i}", "expectTrigger": True}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def _jsonl(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    return write_jsonl(tmp_path / "cases.jsonl", records)


def _yaml(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path, skill: str = SKILL) -> str:
    with pytest.raises(InvalidInput) as info:
        load_cases(path, skill)
    assert info.value.exit_code == 5
    message = str(info.value)
    assert SECRET not in message, message
    assert "\n" not in message
    return message


# -------------------------------------------------------------------------------- JSONL


def test_load_jsonl(tmp_path: Path) -> None:
    records = [
        _case(0, tags=["a", "b"]),
        _case(1, expectTrigger=False, loaded={"include": ["x"], "exclude": ["y", "y"]}),
        _case(2, task={"check": "exit_code", "expected": 3}),
        _case(3, task={"check": "includes_all", "expected": ["30 days", "receipt"]}),
        _case(4, task={"check": "json_equals", "expected": {"a": [1, 2.5, None, True]}}),
    ]
    path = _jsonl(tmp_path, records)
    suite = load_cases(path, SKILL)
    assert suite.path == path
    assert suite.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert suite.unit_count == 5 and suite.with_task == 3
    assert suite.cases[0] == Case(
        id="c0", prompt=f"{SECRET} 0", expect_trigger=True, line=1, unit=0, tags=("a", "b")
    )
    assert suite.cases[1].include == ("x",) and suite.cases[1].exclude == ("y",)
    assert suite.cases[1].expect_trigger is False
    assert suite.cases[2].task == Task((ExitCode(3),))
    assert suite.cases[3].task == Task((IncludesAll(("30 days", "receipt")),))
    assert suite.cases[4].task == Task((JsonEquals({"a": [1, 2.5, None, True]}),))
    assert [c.line for c in suite.cases] == [1, 2, 3, 4, 5]
    assert set(suite.by_id()) == {"c0", "c1", "c2", "c3", "c4"}


def test_null_optional_fields_mean_absent(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [_case(0, task=None, loaded=None, tags=None)])
    case = load_cases(path, SKILL).cases[0]
    assert case.task is None and case.include == () and case.tags == ()


def test_line_numbers_skip_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n" + json.dumps(_case(0)) + "\n\n" + json.dumps(_case(1)) + "\n")
    assert [c.line for c in load_cases(path, SKILL).cases] == [2, 4]


@pytest.mark.parametrize(
    ("fields", "field", "needle"),
    [
        ({"extra": 1}, '"extra"', "unknown field"),
        ({"should": []}, '"should"', "unknown field"),
        ({"id": ...}, "", 'missing required field "id"'),
        ({"id": 5}, "field id", "must be a string, got a number"),
        ({"id": ""}, "field id", "1-200"),
        ({"id": "x" * 201}, "field id", "1-200"),
        ({"id": "a\nb"}, "field id", "control characters"),
        ({"prompt": ...}, "", 'missing required field "prompt"'),
        ({"prompt": ""}, "field prompt", "empty"),
        ({"prompt": " \n\t "}, "field prompt", "empty"),
        ({"prompt": ["x"]}, "field prompt", "got an array"),
        ({"expectTrigger": ...}, "", 'missing required field "expectTrigger"'),
        ({"expectTrigger": "true"}, "field expectTrigger", "true or false, got a string"),
        ({"expectTrigger": 1}, "field expectTrigger", "got a number"),
        ({"expectTrigger": None}, "field expectTrigger", "got null"),
        ({"task": "exit_code"}, "field task", "must be an object"),
        ({"task": {"check": "exit_code"}}, "field task", 'missing "expected"'),
        ({"task": {"expected": 1}}, "field task", 'missing "check"'),
        ({"task": {"check": "regex", "expected": 1}}, "field task.check", "one of exit_code"),
        ({"task": {"check": "exit_code", "expected": 0, "x": 1}}, "task.x", "unknown field"),
        ({"task": {"check": "exit_code", "expected": True}}, "task.expected", "integer"),
        ({"task": {"check": "exit_code", "expected": 1.5}}, "task.expected", "integer"),
        ({"task": {"check": "exit_code", "expected": "0"}}, "task.expected", "integer"),
        ({"task": {"check": "includes_all", "expected": []}}, "task.expected", "at least one"),
        ({"task": {"check": "includes_all", "expected": "x"}}, "task.expected", "array"),
        ({"task": {"check": "includes_all", "expected": ["a", ""]}}, "expected[1]", "empty"),
        ({"task": {"check": "includes_all", "expected": ["a", 1]}}, "expected[1]", "string"),
        ({"loaded": []}, "field loaded", "must be an object"),
        ({"loaded": {"require": ["x"]}}, "loaded.require", "unknown field"),
        ({"loaded": {"include": "x"}}, "loaded.include", "array"),
        ({"loaded": {"include": [""]}}, "loaded.include[0]", "empty"),
        ({"loaded": {"include": [SKILL]}}, "loaded.include", "skill under test"),
        ({"loaded": {"exclude": [SKILL]}}, "loaded.exclude", "expectTrigger is true"),
        ({"loaded": {"include": ["x"], "exclude": ["x"]}}, "field loaded", "both"),
        ({"tags": "x"}, "field tags", "array"),
        ({"tags": ["x", 2]}, "field tags[1]", "string"),
    ],
)
def test_jsonl_field_errors(
    tmp_path: Path, fields: dict[str, Any], field: str, needle: str
) -> None:
    path = _jsonl(tmp_path, [_case(0), _case(1), _case(2, **fields)])
    message = _error(path)
    assert message.startswith(f"{path}:3: "), message
    assert field in message and needle in message


def test_exclude_of_the_tested_skill_is_allowed_for_negative_cases(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [_case(0, expectTrigger=False, loaded={"exclude": [SKILL]})])
    assert load_cases(path, SKILL).cases[0].exclude == (SKILL,)


def test_duplicate_id(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [_case(0), _case(1), _case(0)])
    message = _error(path)
    assert message.startswith(f'{path}:3: field id: duplicate id "c0"')
    assert "line 1" in message


def test_first_error_in_file_order_wins(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [_case(0), _case(0), _case(1, extra=True)])
    assert _error(path).startswith(f"{path}:2: ")


def test_reader_errors_surface_with_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(_case(0)) + "\n" + '{"id":"x","prompt":"' + SECRET + '",}\n')
    assert _error(path).startswith(f"{path}:2: ")
    path.write_text(json.dumps(_case(0, task={"check": "exit_code", "expected": 2**60})) + "\n")
    assert "9007199254740991" in _error(path)


def test_unsafe_integer_inside_json_equals_expected_jsonl(tmp_path: Path) -> None:
    record = json.dumps(_case(0, task={"check": "json_equals", "expected": {"a": [0]}}))
    path = tmp_path / "c.jsonl"
    path.write_text(record.replace("[0]", "[9007199254740992]") + "\n")
    message = _error(path)
    assert message.startswith(f"{path}:1: ") and "9007199254740991" in message


def test_cases_file_must_be_regular(tmp_path: Path) -> None:
    real = _jsonl(tmp_path, [_case(0)])
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert "symlink" in _error(link)
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert "FIFO" in _error(fifo)
    (tmp_path / "d.jsonl").mkdir()
    assert "directory" in _error(tmp_path / "d.jsonl")


def test_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text("[]")
    assert ".jsonl, .yaml or .yml" in _error(path)


def test_cases_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_FILE_BYTES", 200)
    path = _jsonl(tmp_path, [_case(i) for i in range(5)])
    assert "200" in _error(path)
    ypath = _yaml(tmp_path, "cases:\n" + "  - {id: a, prompt: b, expectTrigger: true}\n" * 10)
    assert "200" in _error(ypath)


def test_population_bound_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_objects, "MAX_CASES", 3)
    assert len(load_cases(_jsonl(tmp_path, [_case(i) for i in range(3)]), SKILL).cases) == 3
    path = _jsonl(tmp_path, [_case(i) for i in range(5)])
    message = _error(path)
    assert message.startswith(f"{path}:4: ") and "3" in message


def test_population_bound_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_objects, "MAX_CASES", 2)
    items = "".join(f"  - id: c{i}\n    prompt: p{i}\n    expectTrigger: true\n" for i in range(3))
    path = _yaml(tmp_path, "cases:\n" + items)
    message = _error(path)
    assert message.startswith(f"{path}:8: ") and "2" in message


def test_real_population_bound_constant() -> None:
    assert case_objects.MAX_CASES == 10_000 and cases_mod.MIN_UNITS == 10


# ----------------------------------------------------------------------------------- units


def test_normalize_prompt() -> None:
    assert normalize_prompt("  Ｈｅｌｌｏ\u00a0world \t\r\nline2\t\rline3  \n\n") == (
        "Hello world\nline2\nline3"
    )
    assert normalize_prompt("ﬁ") == "fi"  # NFKC ligature
    assert normalize_prompt("a\u2028 b") == "a\u2028 b"  # separators are not line breaks here
    assert normalize_prompt("a \u2028b") == "a \u2028b"


def test_units_in_order_of_first_appearance(tmp_path: Path) -> None:
    prompts = ["Refund?", "Other", "Refund?  ", "ｏｔｈｅｒ", "Other\r\n", "third"]
    path = _jsonl(
        tmp_path,
        [{"id": f"c{i}", "prompt": p, "expectTrigger": True} for i, p in enumerate(prompts)],
    )
    suite = load_cases(path, SKILL)
    assert [c.unit for c in suite.cases] == [0, 1, 0, 2, 1, 3]
    assert suite.unit_count == 4
    assert suite.cases[2].prompt == "Refund?  "  # the prompt itself is kept as written


def test_fewer_than_ten_units_is_not_an_error_here(tmp_path: Path) -> None:
    suite = load_cases(_jsonl(tmp_path, [_case(0)]), SKILL)
    assert suite.unit_count == 1


def test_empty_file_has_no_cases(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"")
    suite = load_cases(path, SKILL)
    assert suite.cases == () and suite.unit_count == 0


@given(st.text(max_size=40))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize_prompt(text)
    assert normalize_prompt(once) == once
    assert "\r" not in once and once == once.strip()


# ------------------------------------------------------------------------------------ YAML

YAML_OK = """\
# a comment
cases:
  - id: brand-deck-q3
    prompt: Make a deck for the Q3 review
    should:
      - skill.loaded:
          should_include: [brand-deck]
          should_exclude: [bugfix-workflow]
  - id: fix-bug
    prompt: |
      Fix the failing test
      in utils.py
    should:
      - skill.loaded:
          should_include: [bugfix-workflow]
    tags: [negative]
  - id: excluded
    prompt: "Write release notes"
    should:
      - skill.loaded:
          should_exclude: [brand-deck, other]
  - id: plain
    prompt: 'Plain case'
    expectTrigger: false
    loaded: {include: [x], exclude: [y]}
    task: {check: json_equals, expected: {a: [1, 2.5, null, true, "yes", yes]}}
  - {id: exit, prompt: Exit, expectTrigger: true, task: {check: exit_code, expected: -3}}
"""


def test_yaml_cases_and_agent_skill_evals_shape(tmp_path: Path) -> None:
    path = _yaml(tmp_path, YAML_OK)
    suite = load_cases(path, SKILL)
    by_id = suite.by_id()
    assert [c.id for c in suite.cases] == ["brand-deck-q3", "fix-bug", "excluded", "plain", "exit"]
    assert [c.line for c in suite.cases] == [3, 9, 17, 22, 27]
    q3 = by_id["brand-deck-q3"]
    assert q3.expect_trigger is True and q3.include == () and q3.exclude == ("bugfix-workflow",)
    fix = by_id["fix-bug"]
    assert fix.expect_trigger is False and fix.include == ("bugfix-workflow",)
    assert fix.prompt == "Fix the failing test\nin utils.py\n" and fix.tags == ("negative",)
    excluded = by_id["excluded"]
    assert excluded.expect_trigger is False and excluded.exclude == ("other",)
    plain = by_id["plain"]
    assert plain.include == ("x",) and plain.exclude == ("y",)
    assert plain.task == Task((JsonEquals({"a": [1, 2.5, None, True, "yes", "yes"]}),))
    assert by_id["exit"].task == Task((ExitCode(-3),))
    assert suite.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert _yaml(tmp_path, YAML_OK, "c.yml").exists()
    assert load_cases(tmp_path / "c.yml", SKILL).cases == suite.cases


def test_should_and_expect_trigger_agreeing_is_fine(tmp_path: Path) -> None:
    text = (
        "cases:\n  - id: a\n    prompt: p\n    expectTrigger: true\n"
        "    should:\n      - skill.loaded: {should_include: [brand-deck, helper]}\n"
        "      - skill.loaded: {should_exclude: [nope]}\n"
    )
    case = load_cases(_yaml(tmp_path, text), SKILL).cases[0]
    assert case.expect_trigger and case.include == ("helper",) and case.exclude == ("nope",)


def test_expect_trigger_disambiguates_should_without_the_skill(tmp_path: Path) -> None:
    text = (
        "cases:\n  - id: a\n    prompt: p\n    expectTrigger: true\n"
        "    should:\n      - skill.loaded: {should_exclude: [other]}\n"
    )
    case = load_cases(_yaml(tmp_path, text), SKILL).cases[0]
    assert case.expect_trigger is True and case.exclude == ("other",)


def _yaml_case(body: str) -> str:
    return "cases:\n  - id: ok\n    prompt: fine\n    expectTrigger: true\n  - id: a\n" + body


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        # Contradiction: should_include names the skill, expectTrigger says false.
        (
            f"    prompt: {SECRET}\n    expectTrigger: false\n    should:\n"
            "      - skill.loaded: {should_include: [brand-deck]}\n",
            7,
            "contradicts should",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    should:\n"
            "      - skill.loaded: {should_exclude: [brand-deck]}\n",
            7,
            "contradicts should",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    should:\n"
            "      - skill.loaded: {should_include: [other]}\n",
            7,
            "contradicts should",
        ),
        # Neither list names the skill and expectTrigger is absent.
        (
            f"    prompt: {SECRET}\n    should:\n      - skill.loaded: {{should_exclude: [x]}}\n",
            7,
            "neither should_include nor should_exclude",
        ),
        (
            f"    prompt: {SECRET}\n    should:\n      - skill.loaded: {{should_include: []}}\n",
            7,
            "neither should_include nor should_exclude",
        ),
        (
            f"    prompt: {SECRET}\n    should:\n"
            "      - skill.loaded: {should_include: [brand-deck], should_exclude: [brand-deck]}\n",
            7,
            "both should_include and should_exclude",
        ),
        (f"    prompt: {SECRET}\n    should:\n      - output.contains: x\n", 8, "unsupported"),
        (f"    prompt: {SECRET}\n    should: {{a: b}}\n", 7, "array"),
        (f"    prompt: {SECRET}\n    should:\n      - x\n", 8, "one key"),
        (
            f"    prompt: {SECRET}\n    should:\n      - skill.loaded: {{must: [x]}}\n",
            8,
            "unknown field",
        ),
        # Strict types.
        (f"    prompt: {SECRET}\n    expectTrigger: yes\n", 7, "YAML 1.1"),
        (f"    prompt: {SECRET}\n    expectTrigger: 'true'\n", 7, "got a string"),
        (f"    prompt: {SECRET}\n    expectTrigger: 1\n", 7, "got a number"),
        (f"    prompt: {SECRET}\n    expectTrigger:\n", 7, "got null"),
        (f"    prompt: {SECRET}\n    expectTrigger: true\n    extra: 1\n", 8, "unknown field"),
        ("    prompt: 42\n    expectTrigger: true\n", 6, "field prompt"),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    task:\n      check: exit_code\n"
            "      expected: 9007199254740992\n",
            10,
            "9007199254740991",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    task:\n      check: json_equals\n"
            "      expected:\n        deep: [1, -9007199254740992]\n",
            11,
            "9007199254740991",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    task:\n      check: json_equals\n"
            "      expected: .nan\n",
            10,
            "NaN",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    task:\n      check: json_equals\n"
            "      expected: {1: a}\n",
            10,
            "keys must be strings",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    task:\n      check: includes_all\n"
            "      expected: [a, '']\n",
            10,
            "expected[1]",
        ),
        (
            f"    prompt: {SECRET}\n    expectTrigger: true\n    tags: [a, 2]\n",
            8,
            "tags[1]",
        ),
        (f"    prompt: {SECRET}\n    prompt: again\n    expectTrigger: true\n", 7, "duplicate"),
        ("    prompt: !!binary aGVsbG8=\n    expectTrigger: true\n", 6, "unsupported YAML tag"),
    ],
)
def test_yaml_errors_name_line_and_field(tmp_path: Path, body: str, line: int, needle: str) -> None:
    path = _yaml(tmp_path, _yaml_case(body))
    message = _error(path)
    assert message.startswith(f"{path}:{line}: "), message
    assert needle in message, message


def test_yaml_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    text = "cases:\n" + "  - id: same\n    prompt: p\n    expectTrigger: true\n" * 2
    message = _error(_yaml(tmp_path, text))
    assert ":5: field id: duplicate id" in message and "line 2" in message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty YAML"),
        ("# only a comment\n", "empty YAML"),
        ("- id: a\n", "top level must be a mapping"),
        ("cases: {}\n", "must be a list"),
        ("other: []\n", "unknown top-level field"),
        ("cases: []\nskill: x\n", "unknown top-level field"),
        ("cases:\n  - just a string\n", "must be a mapping"),
        ("cases: [\n", "invalid YAML"),
        ("cases: []\n---\ncases: []\n", "single YAML document"),
        (
            "cases:\n  - &a {id: a, prompt: p, expectTrigger: true,\n"
            "       task: {check: json_equals, expected: *a}}\n",
            "recursive alias",
        ),
        (
            "cases: " + "[" * 100_000 + "]" * 100_000 + "\n",
            "nest",
        ),  # ours, or PyYAML>=6.0.4's own limit
        ("cases:\n  - *nope\n", "alias"),
        ("cases:\n  - id: a\n    prompt: p\n    expectTrigger: true\n    tags: [1e999]\n", "large"),
    ],
)
def test_yaml_document_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = _yaml(tmp_path, text)
    message = _error(path)
    assert message.startswith(f"{path}:"), message
    assert needle in message, message


def test_yaml_parse_error_does_not_echo_content(tmp_path: Path) -> None:
    text = f"cases:\n  - id: a\n    prompt: {SECRET}\n   bad: [\n"
    message = _error(_yaml(tmp_path, text))
    assert "invalid YAML" in message


def test_yaml_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"cases:\n  - id: a\n    prompt: \xff\n")
    assert _error(path).startswith(f"{path}:3: invalid UTF-8")


def test_yaml_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(
        b"\xef\xbb\xbfcases:\r\n  - id: a\r\n    prompt: p\r\n    expectTrigger: true\r\n"
    )
    case = load_cases(path, SKILL).cases[0]
    assert case.id == "a" and case.line == 2 and case.expect_trigger


def test_yaml_scalars_follow_the_core_schema(tmp_path: Path) -> None:
    text = (
        "cases:\n  - id: 2024-01-01\n    prompt: on\n    expectTrigger: True\n"
        "    tags: [yes, no, '1', null-ish, ~x]\n"
        "    task: {check: json_equals, expected: [0x1F, 0o17, 1e3, -.5, ~, Null, FALSE, 007]}\n"
    )
    case = load_cases(_yaml(tmp_path, text), SKILL).cases[0]
    assert case.id == "2024-01-01" and case.prompt == "on" and case.expect_trigger is True
    assert case.tags == ("yes", "no", "1", "null-ish", "~x")
    assert case.task == Task((JsonEquals([31, 15, 1000.0, -0.5, None, None, False, 7]),))


def test_yaml_id_must_be_a_string(tmp_path: Path) -> None:
    text = "cases:\n  - id: 12\n    prompt: p\n    expectTrigger: true\n"
    assert "field id: must be a string, got a number" in _error(_yaml(tmp_path, text))


def test_yaml_alias_bomb_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["defs: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    text = (
        "cases:\n  - id: a\n    prompt: p\n    expectTrigger: true\n"
        "    task:\n      check: json_equals\n      expected:\n"
        + "".join(f"        {line}\n" for line in lines)
    )
    message = _error(_yaml(tmp_path, text))
    assert "nodes" in message


def test_yaml_aliases_within_budget_work(tmp_path: Path) -> None:
    text = (
        "cases:\n  - id: a\n    prompt: p\n    expectTrigger: true\n    tags: &t [x, y]\n"
        "  - id: b\n    prompt: q\n    expectTrigger: false\n    tags: *t\n"
    )
    suite = load_cases(_yaml(tmp_path, text), SKILL)
    assert suite.cases[1].tags == ("x", "y")


def test_yaml_lines_count_only_newlines(tmp_path: Path) -> None:
    # PyYAML treats U+2028/U+2029/U+0085 as line breaks; reported lines must not.
    text = (
        'cases:\n  - id: a\n    prompt: "x\u2028y\u2029z\x85w"\n    expectTrigger: true\n'
        "  - id: b\n    prompt: p\n    expectTrigger: 1\n"
    )
    path = _yaml(tmp_path, text)
    assert _error(path).startswith(f"{path}:7: field expectTrigger")
    bad_syntax = text.replace("    expectTrigger: 1", "   expectTrigger: 1")
    assert _error(_yaml(tmp_path, bad_syntax, "b.yaml")).startswith(f"{tmp_path / 'b.yaml'}:7: ")
    ok = _yaml(tmp_path, text.replace("expectTrigger: 1", "expectTrigger: false"), "ok.yaml")
    suite = load_cases(ok, SKILL)
    # U+2028/U+2029 stay data; a raw NEL is a YAML 1.1 line break and folds (docs/inputs.md).
    assert suite.cases[0].prompt.startswith("x\u2028y\u2029z")
    assert [c.line for c in suite.cases] == [2, 5]


def test_jsonl_prompt_with_unicode_separators(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record = json.dumps(_case(0, prompt="a\u2028b\u2029c\x85d"), ensure_ascii=False)
    path.write_text(record + "\n" + json.dumps(_case(1, id=5)) + "\n", encoding="utf-8")
    assert _error(path).startswith(f"{path}:2: field id")
