"""The skills a server offers: each ``SKILL.md`` read once, bounded, when the server starts.

Decision: every ``SKILL.md`` is served from memory. The tool list and the text served can then
never disagree, and a file changed or removed mid-session cannot turn a load into an error;
``skill-evals test`` hashes the skill directory before and after a run, so an edit during a run
voids that run anyway. Restart the server to serve an edit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InvalidInput
from ...suite.jsonl import read_regular_file
from ..base import RunnerSetupError, skill_ref
from .catalog import ServedFile, file_uri, listing_problem, skill_entry, walk_skill

# Names a tool name can carry and map back unambiguously (``load_<name>_skill``, ``-`` ↔ ``_``).
_SERVABLE_NAME = re.compile(r"[A-Za-z0-9-]{1,117}")


def tool_name_for(skill_name: str) -> str:
    """The MCP tool that loads a skill: ``load_<name>_skill`` with ``-`` → ``_``."""
    return f"load_{skill_name.replace('-', '_')}_skill"


def uri_for(skill_name: str) -> str:
    """The MCP resource URI of a skill's SKILL.md."""
    return f"skill://{skill_name}/SKILL.md"


@dataclass(frozen=True)
class ServedSkill:
    """One skill as the server offers it; ``text`` is the SKILL.md content read at start."""

    name: str
    description: str
    path: Path
    text: str
    files: tuple[ServedFile, ...] = ()  # every served file, SKILL.md included (its text)
    unlisted: str | None = None  # why skills/list leaves it out (None: listed)

    @property
    def tool_name(self) -> str:
        """``load_<name>_skill``."""
        return tool_name_for(self.name)

    @property
    def uri(self) -> str:
        """``skill://<name>/SKILL.md``."""
        return uri_for(self.name)

    def file_at(self, uri: str) -> ServedFile | None:
        """The served file whose URI is ``uri`` (SKILL.md's under its plain URI too)."""
        for served in self.files:
            if file_uri(self.name, served.path) == uri:
                return served
        return None

    def entry(self) -> dict[str, Any]:
        """The Skills extension's entry of a listed skill."""
        return skill_entry(self.name, self.text, self.files)


def load_skills(dirs: Sequence[Path]) -> tuple[ServedSkill, ...]:
    """Load each skill folder (name and description as the agent runners see them).

    Raises ValueError naming the path for a missing, unreadable, oversized or non-regular
    SKILL.md (the same file rules as ``validate``), a name that cannot be a tool name, or two
    folders with the same skill name."""
    if not dirs:
        raise ValueError("mcp-serve: give at least one --skill DIR")
    skills: list[ServedSkill] = []
    seen: dict[str, Path] = {}
    for raw in dirs:
        skill = _load_one(Path(raw))
        if skill.name in seen:
            raise ValueError(
                f"--skill {raw}: skill name {skill.name!r} is already served from "
                f"{seen[skill.name]}; give each name once"
            )
        seen[skill.name] = skill.path
        skills.append(skill)
    return tuple(skills)


def _load_one(path: Path) -> ServedSkill:
    md = path / "SKILL.md"
    if not os.path.lexists(md):
        raise ValueError(f"--skill {path}: no SKILL.md file in that directory")
    try:
        data = read_regular_file(md, "SKILL.md")  # regular file, no symlink or FIFO, size cap
    except InvalidInput as exc:
        raise ValueError(str(exc)) from exc
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{md}: not valid UTF-8 (byte {exc.start})") from exc
    try:
        ref = skill_ref(path, text)
    except RunnerSetupError as exc:
        raise ValueError(f"--skill {path}: {exc}") from exc
    if not _SERVABLE_NAME.fullmatch(ref.name):
        raise ValueError(
            f"{md}: skill name {ref.name!r} cannot be offered as MCP tool "
            "load_<name>_skill; use 1-117 characters of a-z, A-Z, 0-9 and '-'"
        )
    walk = walk_skill(path, text.encode("utf-8"))
    return ServedSkill(
        name=ref.name,
        description=ref.description,
        path=ref.path,
        text=text,
        files=walk.files,
        unlisted=listing_problem(ref.name, ref.description, text, walk),
    )
