"""SKILL.md frontmatter, Agent Skills validation and the two hashes (SPEC §1.1).

Owner: inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Skill:
    """A loaded skill. ``path`` is absolute."""

    name: str
    path: Path
    description: str
    body: str  # the Markdown after the frontmatter
    frontmatter: dict[str, object]  # every scalar a string
    skill_md_sha256: str
    directory_sha256: str
    warnings: tuple[str, ...] = field(default=())  # validate_skill() problems, "PATH: message"


def parse_frontmatter(text: str) -> tuple[dict[str, object], str]:
    """Split SKILL.md text into (frontmatter mapping with string scalars, body).

    A BOM before the first ``---`` is skipped; the block ends at the next line that is exactly
    ``---`` (trailing spaces allowed). No frontmatter → ({}, text). Raises ValueError on bad YAML."""
    raise NotImplementedError


def directory_sha256(path: Path) -> str:
    """Go dirhash.Hash1 construction with hex: sha256 over sorted "<sha>  <relpath>\\n" lines.

    Raises InvalidInput for a symlink anywhere inside or a path containing a newline."""
    raise NotImplementedError


def load_skill(path: Path) -> Skill:
    """Load and hash the skill at ``path`` (a directory holding a regular file SKILL.md).

    Raises InvalidInput (exit 5) with a clear message otherwise."""
    raise NotImplementedError


def validate_skill(path: Path) -> list[str]:
    """Problems against the Agent Skills format, each as ``PATH: message``; empty when valid."""
    raise NotImplementedError
