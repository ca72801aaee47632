"""The skill names of the checked-out repository, for the fork-safe PR comment: the only
report strings it writes as plain text (every other one is a code span)."""

from __future__ import annotations

from pathlib import Path

from ..errors import EvalError
from ..report.md_text import is_skill_name
from ..suite.skill_dirs import skill_dirs
from .discovery import WorkTree, skill_name

MAX_NAMES = 10_000


def repository_skill_names(root: Path) -> frozenset[str]:
    """The names (following the skill-name rules) of the skills found under ``root``; none
    when it cannot be read (the comment then writes every name as a code span)."""
    tree = WorkTree(root)
    try:
        dirs, _ = skill_dirs(tree, None)
        names = (skill_name(tree, path, root.resolve().name) for path in dirs[:MAX_NAMES])
        return frozenset(n for n in names if is_skill_name(n))
    except (OSError, EvalError, RecursionError):
        return frozenset()
