"""What mcp-serve lists in skills/list and how it reads a Skill entry's frontmatter: the
listing rules on hostile folders (symlinks, FIFOs, control characters, too many files) and the
YAML 1.2 core-schema reading on hostile frontmatter — fast, no client."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skill_evals.agents.mcp_server import SkillServer
from skill_evals.agents.mcp_server.catalog import MAX_FILES
from skill_evals.agents.mcp_server.core_yaml import FrontmatterError, yaml_core_frontmatter
from tests.conftest import write_skill


def _served(skill: Path) -> object:
    (served,) = SkillServer.from_dirs([skill]).skills
    return served


def test_symlinks_fifos_and_control_characters_make_a_skill_unlisted(tmp_path: Path) -> None:
    cases = {}
    link = write_skill(tmp_path / "a", "link-skill")
    (link / "outside").symlink_to("/etc/hostname")
    cases["link-skill"] = "outside is not a regular file"
    fifo = write_skill(tmp_path / "b", "fifo-skill")
    os.mkfifo(fifo / "pipe")
    cases["fifo-skill"] = "pipe is not a regular file"
    control = write_skill(tmp_path / "c", "control-skill")
    (control / "bad\x01name.txt").write_text("x")
    cases["control-skill"] = "a file path holds a control character"
    many = write_skill(tmp_path / "d", "many-skill")
    for i in range(MAX_FILES):
        (many / f"f{i}.txt").write_text("x")
    cases["many-skill"] = f"more than {MAX_FILES} files"
    for name, reason in cases.items():
        served = _served(next((tmp_path).glob(f"*/{name}")))
        assert served.unlisted == reason, name  # type: ignore[attr-defined]
        assert served.tool_name == f"load_{name.replace('-', '_')}_skill"  # type: ignore[attr-defined]


def test_judging_files_are_not_served(tmp_path: Path) -> None:
    extra = {"evals/cases.jsonl": "{}\n", "cases.jsonl": "{}\n", "docs/evals/keep.md": "kept\n"}
    skill = write_skill(tmp_path, "refund-policy", extra=extra)
    served = _served(skill)
    paths = [f.path for f in served.files]  # type: ignore[attr-defined]
    assert paths == ["SKILL.md", "docs/evals/keep.md"]
    assert served.unlisted is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("block", "value"),
    [
        ("a: 1\nb: -2\nc: 1.5\nd: 1e3\ne: 0x1F\nf: 0o17", {"a": 1, "b": -2, "c": 1.5, "d": 1000.0,
                                                           "e": 31, "f": 15}),
        ("a: yes\nb: On\nc: 2026-11-01\nd: 1_000\ne: 012", {"a": "yes", "b": "On",
                                                            "c": "2026-11-01", "d": "1_000",
                                                            "e": 12}),
        ("a: 'true'\nb: TRUE\nc: Null\nd:\ne: ~", {"a": "true", "b": True, "c": None, "d": None,
                                                  "e": None}),
        ("a: |\n  1\nb: [1, x, null]\n? true\n: k", {"a": "1\n", "b": [1, "x", None], "true": "k"}),
        ("# only a comment", {}),
    ],
)  # fmt: skip
def test_core_schema_values(block: str, value: dict[str, object]) -> None:
    assert yaml_core_frontmatter(block) == value


def _alias_bomb(levels: int = 8) -> str:
    """Each level repeats the one before four times: 10 × 4^levels nodes once expanded."""
    lines = ["a: &a [1]", "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]"]
    previous = "b"
    for i in range(levels):
        lines.append(f"c{i}: &c{i} [*{previous}, *{previous}, *{previous}, *{previous}]")
        previous = f"c{i}"
    return "\n".join(lines)


@pytest.mark.parametrize(
    "block",
    ["a: .inf", "a: -.Inf", "a: .nan", "a: 1e999", "- a\n- b", "a: [", "a: 1\na: 2",
     "a: &x [*x]", _alias_bomb()],
)  # fmt: skip
def test_frontmatter_without_a_json_form_is_refused(block: str) -> None:
    with pytest.raises(FrontmatterError):
        yaml_core_frontmatter(block)
