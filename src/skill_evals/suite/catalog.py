"""The catalog: every skill installed at once in a routing run (docs/routing.md).

Skills come from ``--skill DIR`` (repeatable) or ``--catalog GLOB`` (repeatable; each match is
a directory holding SKILL.md, globs relative to the working directory). Each is loaded and
hashed like the skill of ``test``; names must be unique, and ``none`` is reserved for the
confusion matrix's "no skill" row and column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInput
from .skill import Skill, directory_sha256, load_skill
from .skill_dirs import DirectoryFiles, skill_dirs

NONE_LABEL = "none"
MAX_CATALOG = 1000  # skills in one catalog: bounds the confusion matrix (labels²)


@dataclass(frozen=True)
class Catalog:
    """The skills of a routing run, in the order given (``--skill``) or by path (``--catalog``)."""

    skills: tuple[Skill, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Skill names in catalog order."""
        return tuple(s.name for s in self.skills)

    def env_value(self) -> str:
        """SKILL_EVALS_SKILL_DIRS: the absolute directories joined by newlines."""
        return "\n".join(str(s.path) for s in self.skills)

    def changed(self) -> list[str]:
        """Names of the skills whose directory hash differs from when they were loaded."""
        changed: list[str] = []
        for skill in self.skills:
            try:
                now = directory_sha256(skill.path)
            except InvalidInput:
                now = None
            if now != skill.directory_sha256:
                changed.append(skill.name)
        return changed


def catalog_dirs(globs: Sequence[str], cwd: Path) -> list[Path]:
    """The directories holding SKILL.md that match ``globs`` below ``cwd`` (sorted by path;
    ``*`` stays within a path segment, ``**`` spans segments). A glob matching nothing → exit 5."""
    found: list[Path] = []
    tree = DirectoryFiles(cwd)
    for pattern in globs:
        if not pattern.strip():
            raise InvalidInput("--catalog: an empty glob; give e.g. --catalog 'skills/*'")
        if Path(pattern).is_absolute() or pattern.startswith("../") or "/../" in pattern:
            raise InvalidInput(
                f"--catalog {pattern!r}: globs are relative to the working directory and stay "
                "inside it; cd to the repository first, or give the skills with --skill DIR"
            )
        matches, _ = skill_dirs(tree, (pattern,))
        if not matches:
            raise InvalidInput(
                f"--catalog {pattern!r} matched no directory holding SKILL.md below {cwd}"
            )
        found.extend(cwd / m for m in matches)
    return sorted(set(found), key=lambda p: str(p))


def load_catalog(dirs: Sequence[Path]) -> Catalog:
    """Load every skill of the catalog (exit 5 for an unusable one, a duplicate directory or
    name, the reserved name ``none``, an empty catalog or one of more than 1000 skills)."""
    if not dirs:
        raise InvalidInput("give the catalog: --skill DIR (repeatable) or --catalog GLOB")
    if len(dirs) > MAX_CATALOG:
        raise InvalidInput(f"the catalog has {len(dirs)} skills; at most {MAX_CATALOG} are allowed")
    skills: list[Skill] = []
    by_name: dict[str, Skill] = {}
    by_path: dict[Path, Path] = {}
    for given in dirs:
        skill = load_skill(given)
        if skill.path in by_path:
            raise InvalidInput(
                f"{given}: the same skill directory is given twice (also as {by_path[skill.path]})"
            )
        by_path[skill.path] = given
        if skill.name == NONE_LABEL:
            raise InvalidInput(
                f"{skill.path}: a catalog skill may not be named {NONE_LABEL!r}: the confusion "
                "matrix uses it for 'no skill'; rename the skill"
            )
        other = by_name.get(skill.name)
        if other is not None:
            raise InvalidInput(
                f"{skill.path}: skill name {skill.name!r} is also the name of {other.path}; "
                "names in a catalog must be unique (an agent could not tell them apart)"
            )
        by_name[skill.name] = skill
        skills.append(skill)
    return Catalog(tuple(skills))
