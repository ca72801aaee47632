"""SKILL.md frontmatter, the two hashes and Agent Skills validation (docs/inputs.md)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from skill_evals.errors import InvalidInput
from skill_evals.suite.skill import (
    directory_sha256,
    load_skill,
    parse_frontmatter,
    validate_skill,
)
from tests.conftest import write_skill


def reference_dirhash(root: Path) -> str:
    """An independent, naive Go dirhash.Hash1 (hex): walk, hash, sort, hash the summary."""
    lines = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            with open(full, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            lines.append((rel.encode("utf-8"), f"{digest}  {rel}\n".encode()))
    lines.sort()
    return hashlib.sha256(b"".join(line for _, line in lines)).hexdigest()


# ---------------------------------------------------------------------------- frontmatter


def test_every_scalar_stays_a_string() -> None:
    text = (
        "---\nname: on\nversion: 1.0\ncount: 012\nempty:\nflag: yes\nwhen: 2024-01-01\n"
        "nul: null\ntagged: !!int 3\nmetadata:\n  author: me\n  list: [1, true]\n---\nbody\n"
    )
    front, body = parse_frontmatter(text)
    assert front == {
        "name": "on",
        "version": "1.0",
        "count": "012",
        "empty": "",
        "flag": "yes",
        "when": "2024-01-01",
        "nul": "null",
        "tagged": "3",
        "metadata": {"author": "me", "list": ["1", "true"]},
    }
    assert body == "body\n"


def test_tagged_scalars_keep_their_text() -> None:
    assert parse_frontmatter("---\na: !custom x\nb: !!float 1\n---\n")[0] == {"a": "x", "b": "1"}


def test_bom_is_skipped_and_closing_line_may_have_trailing_spaces() -> None:
    front, body = parse_frontmatter("\ufeff---\nname: x\n---   \n# Title\n")
    assert front == {"name": "x"} and body == "# Title\n"


def test_crlf_frontmatter() -> None:
    front, body = parse_frontmatter("---\r\nname: x\r\ndescription: d\r\n---\r\nbody\r\n")
    assert front == {"name": "x", "description": "d"} and body == "body\r\n"


def test_closing_line_must_be_exactly_three_dashes() -> None:
    # "----" and "--- x" do not close; the later exact line does.
    front, body = parse_frontmatter("---\na: |\n  ----\n  --- x\nb: c\n---\nrest")
    assert front == {"a": "----\n--- x\n", "b": "c"} and body == "rest"


def test_no_frontmatter() -> None:
    assert parse_frontmatter("# Just markdown\n---\n") == ({}, "# Just markdown\n---\n")
    assert parse_frontmatter("") == ({}, "")
    assert parse_frontmatter(" ---\nname: x\n---\n")[0] == {}


def test_empty_frontmatter_block() -> None:
    assert parse_frontmatter("---\n---\nbody") == ({}, "body")
    assert parse_frontmatter("---\n---") == ({}, "")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("---\nname: x\n", "not closed"),
        ("---", "not closed"),
        ("---\nname: [unclosed\n---\n", "line"),
        ("---\n- a\n- b\n---\n", "mapping"),
        ("---\njust a string\n---\n", "mapping"),
        ("---\nname: a\nname: b\n---\n", "duplicate key 'name'"),
        ("---\n? [a]\n: b\n---\n", "keys"),
        ("---\na: !custom [x]\n---\n", "unsupported YAML tag"),
        (
            "---\na: " + "[" * 100_000 + "]" * 100_000 + "\n---\n",
            "nest",
        ),  # ours, or PyYAML>=6.0.4's own limit
    ],
)
def test_bad_frontmatter_raises_value_error(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle.replace("[", r"\[")):
        parse_frontmatter(text)


def test_yaml_error_reports_the_file_line() -> None:
    with pytest.raises(ValueError, match=r"line 4\)"):
        parse_frontmatter("---\nname: x\ndescription: ok\n  bad: x\n---\n")


def test_alias_bomb_is_bounded() -> None:
    lines = ["---", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    lines.append("---")
    with pytest.raises(ValueError, match="nodes"):
        parse_frontmatter("\n".join(lines) + "\n")


# -------------------------------------------------------------------------------- hashing


def test_directory_hash_matches_reference_and_known_vector(tmp_path: Path) -> None:
    skill = tmp_path / "s"
    skill.mkdir()
    (skill / "SKILL.md").write_bytes(b"hello\n")
    (skill / "b").mkdir()
    (skill / "b" / "x.txt").write_bytes(b"")
    (skill / ".hidden").write_bytes(b"h")
    (skill / "empty-dir").mkdir()
    (skill / "b" / "deeper").mkdir()
    (skill / "b" / "deeper" / "empty").mkdir()
    got = directory_sha256(skill)
    assert got == reference_dirhash(skill)
    # The construction written out by hand.
    summary = (
        hashlib.sha256(b"h").hexdigest()
        + "  .hidden\n"
        + hashlib.sha256(b"hello\n").hexdigest()
        + "  SKILL.md\n"
        + hashlib.sha256(b"").hexdigest()
        + "  b/x.txt\n"
    )
    assert got == hashlib.sha256(summary.encode()).hexdigest()


def test_go_dirhash_known_vector(tmp_path: Path) -> None:
    # Fixed vector: {"SKILL.md": "hello\n"} only.
    skill = tmp_path / "s"
    skill.mkdir()
    (skill / "SKILL.md").write_bytes(b"hello\n")
    line = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  SKILL.md\n"
    assert directory_sha256(skill) == hashlib.sha256(line.encode()).hexdigest()


def test_sorting_is_by_utf8_bytes_of_the_path(tmp_path: Path) -> None:
    skill = tmp_path / "s"
    skill.mkdir()
    # Byte order: "A" < "_" < "a" < "a/…" ("/" = 0x2f sorts before "-" ? no: "-" = 0x2d) < "é".
    for name in ("a-b", "a/c", "A", "_x", "é", "a.b"):
        target = skill / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(name, encoding="utf-8")
    names = sorted(["a-b", "a/c", "A", "_x", "é", "a.b"], key=lambda n: n.encode("utf-8"))
    summary = "".join(f"{hashlib.sha256(n.encode()).hexdigest()}  {n}\n" for n in names)
    assert names == ["A", "_x", "a-b", "a.b", "a/c", "é"]
    assert directory_sha256(skill) == hashlib.sha256(summary.encode()).hexdigest()
    assert directory_sha256(skill) == reference_dirhash(skill)


def test_hash_changes_with_content_and_name(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, extra={"ref/a.md": "A"})
    before = directory_sha256(skill)
    (skill / "ref" / "a.md").write_text("B")
    changed = directory_sha256(skill)
    assert changed != before
    (skill / "ref" / "a.md").rename(skill / "ref" / "b.md")
    assert directory_sha256(skill) not in (before, changed)


def test_large_file_hashed_in_chunks(tmp_path: Path) -> None:
    skill = tmp_path / "s"
    skill.mkdir()
    blob = os.urandom(3 * (1 << 20) + 123)
    (skill / "blob.bin").write_bytes(blob)
    assert directory_sha256(skill) == reference_dirhash(skill)


def test_symlink_anywhere_is_invalid(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, extra={"deep/er/file.txt": "x"})
    link = skill / "deep" / "er" / "link.txt"
    link.symlink_to(skill / "deep" / "er" / "file.txt")
    with pytest.raises(InvalidInput, match="symlink") as info:
        directory_sha256(skill)
    assert str(link) in str(info.value)
    link.unlink()
    (skill / "dirlink").symlink_to(skill / "deep")
    with pytest.raises(InvalidInput, match="symlink"):
        load_skill(skill)


def test_dangling_symlink_is_invalid(tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    (skill / "gone").symlink_to(tmp_path / "does-not-exist")
    with pytest.raises(InvalidInput, match="symlink"):
        directory_sha256(skill)


def test_newline_in_a_path_is_invalid(tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    (skill / "bad\nname.txt").write_text("x")
    with pytest.raises(InvalidInput, match="newline"):
        directory_sha256(skill)
    os.remove(skill / "bad\nname.txt")
    (skill / "dir\nx").mkdir()
    (skill / "dir\nx" / "f").write_text("x")
    with pytest.raises(InvalidInput, match="newline"):
        directory_sha256(skill)


def test_fifo_inside_skill_is_invalid_and_does_not_block(tmp_path: Path) -> None:
    skill = write_skill(tmp_path)
    os.mkfifo(skill / "pipe")
    with pytest.raises(InvalidInput, match="not a regular file"):
        directory_sha256(skill)


# ------------------------------------------------------------------------------ load_skill


def test_load_skill(tmp_path: Path) -> None:
    skill_dir = write_skill(tmp_path, extra={"refs/policy.md": "30 days"})
    skill = load_skill(skill_dir)
    md_bytes = (skill_dir / "SKILL.md").read_bytes()
    assert skill.name == "refund-policy"
    assert skill.path == skill_dir.resolve() and skill.path.is_absolute()
    assert skill.description.startswith("Answer questions about refunds")
    assert skill.body == "# Refund policy\n\nRefunds within 30 days with a receipt.\n"
    assert skill.frontmatter["name"] == "refund-policy"
    assert skill.skill_md_sha256 == hashlib.sha256(md_bytes).hexdigest()
    assert skill.directory_sha256 == reference_dirhash(skill_dir)
    assert skill.warnings == ()


def test_load_skill_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_skill(tmp_path)
    monkeypatch.chdir(tmp_path / "refund-policy")
    skill = load_skill(Path("."))
    assert skill.path == (tmp_path / "refund-policy").resolve()
    assert skill.warnings == ()


def test_name_falls_back_to_directory(tmp_path: Path) -> None:
    skill_dir = tmp_path / "my-skill"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text("---\ndescription: Does things.\n---\nBody\n")
    skill = load_skill(skill_dir)
    assert skill.name == "my-skill"
    assert any("missing required key 'name'" in w for w in skill.warnings)


def test_name_on_stays_string(tmp_path: Path) -> None:
    skill_dir = tmp_path / "on"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text("---\nname: on\ndescription: Switches.\n---\n")
    skill = load_skill(skill_dir)
    assert skill.name == "on" and skill.warnings == ()


def test_bad_yaml_is_a_warning_not_an_error(tmp_path: Path) -> None:
    skill_dir = tmp_path / "broken"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text("---\nname: [x\n---\nBody\n")
    skill = load_skill(skill_dir)
    assert skill.name == "broken" and skill.frontmatter == {}
    assert len(skill.warnings) == 1 and "invalid YAML" in skill.warnings[0]
    assert skill.warnings[0].startswith(str(skill_dir.resolve() / "SKILL.md") + ": ")


@pytest.mark.parametrize("kind", ["missing", "dir", "symlink", "fifo"])
def test_load_skill_needs_a_regular_skill_md(tmp_path: Path, kind: str) -> None:
    skill_dir = tmp_path / "s"
    skill_dir.mkdir()
    md = skill_dir / "SKILL.md"
    if kind == "dir":
        md.mkdir()
    elif kind == "symlink":
        (tmp_path / "real.md").write_text("---\nname: s\n---\n")
        md.symlink_to(tmp_path / "real.md")
    elif kind == "fifo":
        os.mkfifo(md)
    with pytest.raises(InvalidInput) as info:
        load_skill(skill_dir)
    assert "SKILL.md" in str(info.value) and info.value.exit_code == 5


def test_load_skill_rejects_missing_dir_and_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_skill(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput, match="directory"):
        load_skill(tmp_path / "file")


def test_invalid_utf8_skill_md(tmp_path: Path) -> None:
    skill_dir = tmp_path / "s"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_bytes(b"---\nname: s\n---\n\xff\n")
    with pytest.raises(InvalidInput, match=r"SKILL.md:4: invalid UTF-8"):
        load_skill(skill_dir)
    assert "UTF-8" in validate_skill(skill_dir)[0]


def test_load_skill_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill_dir = write_skill(tmp_path, extra={"a.txt": "a", "b/c.txt": "c"})
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: object, *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(path))  # type: ignore[arg-type]
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    load_skill(skill_dir)
    assert sorted(Path(p).name for p in opened) == ["SKILL.md", "a.txt", "c.txt"]


# -------------------------------------------------------------------------------- validate


def _skill(tmp_path: Path, front: str, dirname: str = "good-skill") -> Path:
    skill_dir = tmp_path / dirname
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text(f"---\n{front}---\nBody\n", encoding="utf-8")
    return skill_dir


def test_valid_skill_has_no_problems(tmp_path: Path) -> None:
    skill_dir = _skill(
        tmp_path,
        "name: good-skill\ndescription: Does good things.\nlicense: MIT\n"
        "compatibility: Claude Code\nmetadata:\n  author: me\n  version: 1.0\n"
        "allowed-tools: Read Bash\n",
    )
    assert validate_skill(skill_dir) == []


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ("description: d\n", "missing required key 'name'"),
        ("name: ''\ndescription: d\n", "1-64"),
        (f"name: {'a' * 65}\ndescription: d\n", "1-64"),
        ("name: Good-Skill\ndescription: d\n", "lowercase"),
        ("name: good_skill\ndescription: d\n", "lowercase"),
        ("name: -good-skill\ndescription: d\n", "start or end with a hyphen"),
        ("name: good-skill-\ndescription: d\n", "start or end with a hyphen"),
        ("name: good--skill\ndescription: d\n", "two hyphens"),
        ("name: other-skill\ndescription: d\n", "directory name"),
        ("name: [a]\ndescription: d\n", "'name' must be a string"),
        ("name: good-skill\n", "missing required key 'description'"),
        ("name: good-skill\ndescription: ''\n", "1-1024"),
        (f"name: good-skill\ndescription: {'d' * 1025}\n", "1-1024"),
        ("name: good-skill\ndescription: use <b>\n", "'<' or '>'"),
        ("name: good-skill\ndescription: a -> b\n", "'<' or '>'"),
        ("name: good-skill\ndescription: {a: b}\n", "'description' must be a string"),
        (f"name: good-skill\ndescription: d\ncompatibility: {'c' * 501}\n", "at most 500"),
        ("name: good-skill\ndescription: d\nmetadata: text\n", "'metadata' must be a mapping"),
        ("name: good-skill\ndescription: d\nmetadata:\n  a: [1]\n", "'metadata' value of 'a'"),
        ("name: good-skill\ndescription: d\nversion: 1\n", "unknown frontmatter key 'version'"),
        ("name: good-skill\ndescription: d\nallowed-tools: [Read]\n", "'allowed-tools'"),
        ("name: good-skill\ndescription: d\nlicense: {a: b}\n", "'license' must be a string"),
    ],
)
def test_validate_rules(tmp_path: Path, front: str, needle: str) -> None:
    skill_dir = _skill(tmp_path, front)
    problems = validate_skill(skill_dir)
    assert any(needle in p for p in problems), problems
    md = re.escape(str(skill_dir / "SKILL.md"))
    assert all(re.match(rf"{md}(:\d+)?: ", p) for p in problems)  # the key's line when known


def test_boundary_lengths_are_valid(tmp_path: Path) -> None:
    name = "a" * 64
    skill_dir = _skill(
        tmp_path,
        f"name: {name}\ndescription: {'d' * 1024}\ncompatibility: {'c' * 500}\n",
        dirname=name,
    )
    assert validate_skill(skill_dir) == []


def test_validate_reports_every_problem(tmp_path: Path) -> None:
    skill_dir = _skill(tmp_path, "name: Bad--\ndescription: <x>\nfoo: 1\n")
    problems = validate_skill(skill_dir)
    assert len(problems) >= 5


def test_validate_missing_skill_md_and_frontmatter(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert validate_skill(empty) == [f"{empty}: missing SKILL.md"]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "SKILL.md").write_text("# No frontmatter\n")
    problems = validate_skill(plain)
    assert len(problems) == 1 and "missing frontmatter" in problems[0]
    assert validate_skill(tmp_path / "nope")[0].startswith(f"{tmp_path / 'nope'}: ")


def test_validate_bad_yaml(tmp_path: Path) -> None:
    skill_dir = _skill(tmp_path, "name: [\n")
    problems = validate_skill(skill_dir)
    assert len(problems) == 1 and "invalid YAML" in problems[0]
