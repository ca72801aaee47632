"""A candidate description in SKILL.md: its problems, the rewritten file (only the description
entry changes, every other byte stays), and a private copy of the skill that carries it."""

from __future__ import annotations

import difflib
import json
import shutil
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from ..suite.frontmatter import parse_frontmatter
from ..suite.skill_rules import MAX_DESCRIPTION_CHARS

CLAUDE_CODE_ENTRY_CHARS = 1536
ENTRY_CAPS = {"claude-code": CLAUDE_CODE_ENTRY_CHARS}


def entry_cap(agent: str | None) -> int | None:
    """The agent's cap on one listing entry (description plus when_to_use); None: no cap."""
    return ENTRY_CAPS.get(agent or "")


def description_problems(description: str, when_to_use: str, cap: int | None) -> list[str]:
    """Why a proposed description cannot be used (empty when it can)."""
    problems = []
    if not description.strip() or len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(
            f"the description must be 1-{MAX_DESCRIPTION_CHARS} characters and not blank "
            f"(it has {len(description)})"
        )
    if "<" in description or ">" in description:
        problems.append("the description holds '<' or '>'")
    if any(unicodedata.category(c) == "Cc" for c in description):
        problems.append("the description holds a control character")
    entry = description + ("\n" + when_to_use if when_to_use else "")
    if cap is not None and len(entry) > cap:
        problems.append(f"the listing entry would be {len(entry)} characters, over the cap {cap}")
    return problems


def _scalar(description: str) -> str:
    """Plain when YAML reads it back equal, else a JSON-style double-quoted string."""
    try:
        if yaml.safe_load("description: " + description) == {"description": description}:
            return description
    except yaml.YAMLError:
        pass
    return json.dumps(description, ensure_ascii=False)


def _is_top_level_key(line: str) -> bool:
    return bool(line) and not line[0].isspace() and line[0] != "#" and ":" in line


def description_span(text: str) -> tuple[int, int]:
    """The description entry of SKILL.md ``text`` as 0-based line indexes [start, end): its key
    line up to the next top-level key or ``---``. ValueError when there is none."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].lstrip("\ufeff").rstrip("\r\n") != "---":
        raise ValueError("SKILL.md has no frontmatter")
    for index in range(1, len(lines)):
        line = lines[index]
        if line.rstrip("\r\n") == "---":
            break
        if line.startswith("description:"):
            end = index + 1
            while end < len(lines):
                following = lines[end]
                if following.rstrip("\r\n") == "---" or _is_top_level_key(following):
                    break
                end += 1
            return index, end
    raise ValueError("SKILL.md has no description entry")


def description_line(description: str) -> str:
    """The one line ``description: <s>`` (no newline) that carries ``description``."""
    return f"description: {_scalar(description)}"


def rewrite(text: str, description: str) -> str:
    """``text`` (SKILL.md) with its description entry replaced by one line
    ``description: <s>``; every other byte stays. ValueError when there is none."""
    start, end = description_span(text)
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines[start].endswith("\r\n") else "\n"
    new = description_line(description) + newline
    result = "".join([*lines[:start], new, *lines[end:]])
    front, _ = parse_frontmatter(result)
    if front.get("description") != description:
        raise ValueError("the rewritten description does not read back equal")
    return result


def unified_diff(old: str, new: str, path: str) -> str:
    """The unified diff (3 lines of context) of SKILL.md, ``a/``/``b/`` + ``path``."""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            n=3,
        )
    )


@contextmanager
def candidate_copy(skill_dir: Path, text: str, scratch: Path) -> Iterator[Path]:
    """A private copy of ``skill_dir`` (same folder name) whose SKILL.md is ``text``; removed
    afterwards."""
    home = scratch / f"candidate-{len(list(scratch.iterdir()))}"
    copy = home / skill_dir.name
    shutil.copytree(skill_dir, copy, symlinks=True)
    try:
        (copy / "SKILL.md").write_bytes(text.encode("utf-8"))
        yield copy
    finally:
        shutil.rmtree(home, ignore_errors=True)
