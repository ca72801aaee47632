"""`validate` agrees with the Agent Skills reference validator (`skills-ref`, in the public
repository agentskills/agentskills): the inputs of its own tests, with its verdicts, written out
here as our test data. Where we deliberately differ (the specification says otherwise), the case
says so. Plus the checks of the skill's cases file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.suite.skill_rules import check_skill

VALID, INVALID = "valid", "invalid"

# (directory name, SKILL.md text or None for no file, verdict, a word the problem must contain)
REFERENCE_CASES: dict[str, tuple[str, str | None, str, str]] = {
    "valid skill": ("my-skill", "name: my-skill\ndescription: A test skill\n", VALID, ""),
    "missing SKILL.md": ("my-skill", None, INVALID, "missing SKILL.md"),
    "uppercase name": (
        "MySkill",
        "name: MySkill\ndescription: A test skill\n",
        INVALID,
        "lowercase",
    ),
    "name over 64 characters": ("a" * 70, f"name: {'a' * 70}\ndescription: d\n", INVALID, "1-64"),
    "leading hyphen": ("-my-skill", "name: -my-skill\ndescription: d\n", INVALID, "hyphen"),
    "consecutive hyphens": (
        "my--skill",
        "name: my--skill\ndescription: d\n",
        INVALID,
        "two hyphens",
    ),
    "underscore": ("my_skill", "name: my_skill\ndescription: d\n", INVALID, "lowercase letters"),
    "directory mismatch": (
        "wrong-name",
        "name: correct-name\ndescription: d\n",
        INVALID,
        "directory",
    ),
    "unexpected field": (
        "my-skill",
        "name: my-skill\ndescription: d\nunknown_field: should not be here\n",
        INVALID,
        "unknown frontmatter key",
    ),
    "all optional fields": (
        "my-skill",
        "name: my-skill\ndescription: d\nlicense: MIT\nmetadata:\n  author: Test\n",
        VALID,
        "",
    ),
    "allowed-tools": (
        "my-skill",
        "name: my-skill\ndescription: d\nallowed-tools: Bash(jq:*) Bash(git:*)\n",
        VALID,
        "",
    ),
    "Chinese name": ("技能", "name: 技能\ndescription: A skill with Chinese name\n", VALID, ""),
    "Russian name with hyphens": ("мой-навык", "name: мой-навык\ndescription: d\n", VALID, ""),
    "Russian lowercase name": ("навык", "name: навык\ndescription: d\n", VALID, ""),
    "Russian uppercase name": ("НАВЫК", "name: НАВЫК\ndescription: d\n", INVALID, "lowercase"),
    "description over 1024": (
        "my-skill",
        f"name: my-skill\ndescription: {'x' * 1100}\n",
        INVALID,
        "1024",
    ),
    "compatibility": (
        "my-skill",
        "name: my-skill\ndescription: d\ncompatibility: Requires Python 3.11+\n",
        VALID,
        "",
    ),
    "compatibility over 500": (
        "my-skill",
        f"name: my-skill\ndescription: d\ncompatibility: {'x' * 550}\n",
        INVALID,
        "500",
    ),
    # The directory in composed form, the name decomposed: one name after NFKC.
    "NFKC: decomposed name, composed directory": (
        "caf\u00e9",
        "name: cafe\u0301\ndescription: d\n",
        VALID,
        "",
    ),
    "NFKC: composed name, decomposed directory": (
        "cafe\u0301",
        "name: caf\u00e9\ndescription: d\n",
        VALID,
        "",
    ),
    "metadata values that look like numbers": (
        "my-skill",
        "name: my-skill\ndescription: d\nmetadata:\n  author: Test Author\n  version: 1.0\n",
        VALID,
        "",
    ),
    "missing name": ("my-skill", "description: d\n", INVALID, "'name'"),
    "missing description": ("my-skill", "name: my-skill\n", INVALID, "'description'"),
}

# Frontmatter shapes of the reference's parser tests (SKILL.md text, whole).
PARSER_CASES: dict[str, tuple[str, str, str]] = {
    "valid frontmatter": (
        "---\nname: my-skill\ndescription: A test skill\n---\n# My Skill\n\nInstructions.\n",
        VALID,
        "",
    ),
    "no frontmatter": ("# No frontmatter here\n", INVALID, "missing frontmatter"),
    "unclosed frontmatter": (
        "---\nname: my-skill\ndescription: A test skill\n",
        INVALID,
        "not closed",
    ),
    "invalid YAML": (
        "---\nname: [invalid\ndescription: broken\n---\nBody\n",
        INVALID,
        "invalid YAML",
    ),
    "a list, not a mapping": ("---\n- just\n- a\n- list\n---\nBody\n", INVALID, "mapping"),
}

# Where we decide differently from skills-ref, because the specification says so.
OUR_DECISIONS: dict[str, tuple[str, str | None, str, str]] = {
    # skills-ref accepts an empty compatibility; the specification says 1-500 characters.
    "empty compatibility": (
        "my-skill",
        "name: my-skill\ndescription: d\ncompatibility: ''\n",
        INVALID,
        "must not be empty",
    ),
    # skills-ref does not look inside metadata; the specification makes it string → string.
    "a list in metadata": (
        "my-skill",
        "name: my-skill\ndescription: d\nmetadata:\n  tags: [a, b]\n",
        INVALID,
        "'metadata' value of 'tags'",
    ),
    "a blank description": ("my-skill", "name: my-skill\ndescription: '   '\n", INVALID, "blank"),
}


def _write(tmp_path: Path, dirname: str, front: str | None, *, raw: bool = False) -> Path:
    skill = tmp_path / dirname
    skill.mkdir()
    if front is not None:
        text = front if raw else f"---\n{front}---\nBody\n"
        (skill / "SKILL.md").write_text(text, encoding="utf-8")
    return skill


def _verdict(skill: Path) -> tuple[str, list[str]]:
    problems = check_skill(skill)
    errors = [p.text for p in problems if p.severity == "error"]
    return (INVALID if errors else VALID), [p.text for p in problems]


@pytest.mark.parametrize("name", [*REFERENCE_CASES, *OUR_DECISIONS])
def test_verdicts(name: str, tmp_path: Path) -> None:
    dirname, front, expected, word = {**REFERENCE_CASES, **OUR_DECISIONS}[name]
    verdict, problems = _verdict(_write(tmp_path, dirname, front))
    assert verdict == expected, problems
    if word:
        assert any(word in p for p in problems), problems


@pytest.mark.parametrize("name", PARSER_CASES)
def test_parser_verdicts(name: str, tmp_path: Path) -> None:
    text, expected, word = PARSER_CASES[name]
    verdict, problems = _verdict(_write(tmp_path, "my-skill", text, raw=True))
    assert verdict == expected, problems
    if word:
        assert any(word in p for p in problems), problems


def test_nonexistent_path_and_file_instead_of_directory(tmp_path: Path) -> None:
    assert _verdict(tmp_path / "nonexistent")[0] == INVALID
    plain = tmp_path / "file.txt"
    plain.write_text("test")
    verdict, problems = _verdict(plain)
    assert verdict == INVALID and "not a directory" in problems[0]


def test_lowercase_skill_md_is_refused_with_a_hint(tmp_path: Path) -> None:
    # skills-ref falls back to skill.md; the specification names the file SKILL.md.
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "skill.md").write_text("---\nname: my-skill\ndescription: d\n---\n")
    verdict, problems = _verdict(skill)
    if (skill / "SKILL.md").exists():  # a case-insensitive file system: the same file
        pytest.skip("case-insensitive file system")
    assert verdict == INVALID
    assert "found 'skill.md'" in problems[0] and "rename" in problems[0]


def test_both_spellings_present_uses_skill_md(tmp_path: Path) -> None:
    skill = _write(tmp_path, "my-skill", "name: my-skill\ndescription: d\n")
    if not (skill / "skill.md").exists():
        (skill / "skill.md").write_text("lowercase")
    assert _verdict(skill)[0] == VALID


def test_angle_brackets_are_a_warning_naming_whose_rule(tmp_path: Path) -> None:
    skill = _write(tmp_path, "my-skill", "name: my-skill\ndescription: Use <b>bold</b>\n")
    verdict, problems = _verdict(skill)
    assert verdict == VALID
    assert len(problems) == 1 and "warning:" in problems[0] and "Anthropic" in problems[0]


# ------------------------------------------------------------------------------ cases file


def _cli(*dirs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "validate", *map(str, dirs)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _cases(n: int) -> str:
    return "".join(
        json.dumps({"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": True}) + "\n"
        for i in range(n)
    )


def test_validate_checks_the_cases_file_with_file_and_line(tmp_path: Path) -> None:
    skill = _write(tmp_path, "my-skill", "name: my-skill\ndescription: d\n")
    (skill / "evals").mkdir()
    cases = skill / "evals" / "cases.jsonl"
    cases.write_text(_cases(10) + '{"id": "bad", "prompt": "p"}\n')
    proc = _cli(skill)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f'{cases}:11: missing required field "expectTrigger" (true or false)'
    ]


def test_validate_checks_yaml_cases_and_warns_about_too_few_units(tmp_path: Path) -> None:
    skill = _write(tmp_path, "my-skill", "name: my-skill\ndescription: d\n")
    (skill / "evals").mkdir()
    cases = skill / "evals" / "cases.yaml"
    cases.write_text("cases:\n  - {id: a, prompt: p, expectTrigger: yes}\n")
    proc = _cli(skill)
    assert proc.returncode == 1 and f"{cases}:2: field expectTrigger" in proc.stdout
    cases.write_text("cases:\n  - {id: a, prompt: p, expectTrigger: true}\n")
    proc = _cli(skill)
    assert proc.returncode == 0
    assert "warning: 1 independent case(s)" in proc.stdout


def test_validate_prints_one_line_per_problem_with_paths_escaped(tmp_path: Path) -> None:
    skill = _write(tmp_path, "bad\nname\x1b[31m", "name: other\ndescription: <x>\n")
    proc = _cli(skill, _write(tmp_path, "my-skill", "name: my-skill\ndescription: d\n"))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 2  # the directory mismatch and the '<' warning
    assert all(
        line.startswith(str(tmp_path) + "/bad\\u000aname\\u001b[31m/SKILL.md:") for line in lines
    )
    assert "\x1b" not in proc.stdout


def test_validate_names_the_line_of_each_key_it_refuses(tmp_path: Path) -> None:
    """`FILE:LINE: message` for a problem of one key (its line in SKILL.md), `FILE: message`
    for a missing key; the same lines in `ci`'s invalid-skill listing."""
    front = "# a comment\nname: Other\nversion: 1\n'license':\n  - MIT\n"
    skill = _write(tmp_path, "my-skill", front)
    md = skill / "SKILL.md"
    proc = _cli(skill)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert f"{md}:3: 'name' may only contain lowercase letters, digits and hyphens" in lines[1]
    assert any(line.startswith(f"{md}:4: unknown frontmatter key 'version'") for line in lines)
    assert f"{md}:5: 'license' must be a string" in lines
    assert f"{md}: missing required key 'description'" in lines
