"""Finding the skills of a repository and their cases files (docs/ci.md); which directories hold
a skill is suite/skill_dirs.py.

Discovery works on a *tree*: the working directory, or a git commit read from its objects
(``changes.GitTree``), so the base of a pull request is discovered exactly like the head.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import InvalidInput
from ..escaping.terminal import terminal_safe
from ..suite.jsonl import MAX_FILE_BYTES
from ..suite.skill_dirs import DirectoryFiles, FileList, skill_dirs
from .settings import DEFAULT_CASES, CiConfig, SkillSettings
from .untrusted import read_bounded


class Tree(FileList, Protocol):
    """What discovery needs from a tree of files (paths relative to the root, / separated)."""

    def read(self, path: str) -> bytes | None:
        """A file's bytes, or None when it is not a regular file."""
        ...

    def is_file(self, path: str) -> bool:
        """True when ``path`` is a regular file of the tree."""
        ...


@dataclass(frozen=True)
class SkillLocation:
    """A discovered skill: where it is, what it is called, which cases file it uses."""

    path: str  # relative to the repository root, / separated ("." for the root itself)
    name: str
    cases: str | None  # relative to the root; None when no cases file exists
    cases_configured: str | None  # the path that was looked for when `cases` is configured
    settings: SkillSettings


class WorkTree(DirectoryFiles):
    """The working directory as a Tree. Its paths come from the configuration, which a pull
    request may change (``cases``, ``routing.cases``): a path that leaves the repository —
    ``..``, absolute, or through a symlinked directory — is no file of the tree."""

    def _inside(self, path: str) -> Path | None:
        target = self.root / path
        if posixpath.isabs(path) or ".." in path.split("/"):
            return None
        try:
            real = target.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        return target if real.is_relative_to(self.root.resolve()) else None

    def read(self, path: str) -> bytes | None:
        """A regular file's bytes (None for symlinks, missing, unreadable or oversized files
        and paths outside the repository: the read is bounded and never blocks on a FIFO)."""
        target = self._inside(path)
        if target is None:
            return None
        try:
            return read_bounded(target, "file", MAX_FILE_BYTES, follow_symlinks=False)
        except InvalidInput:
            return None

    def is_file(self, path: str) -> bool:
        """A regular file inside the repository (a symlink is not)."""
        target = self._inside(path)
        return target is not None and not target.is_symlink() and target.is_file()


def skill_name(tree: Tree, path: str, root_name: str) -> str:
    """``name`` from the SKILL.md frontmatter, else the directory's name (docs/inputs.md)."""
    from ..suite.skill import parse_frontmatter

    fallback = root_name if path == "." else posixpath.basename(path)
    data = tree.read(_join(path, "SKILL.md"))
    if data is None:
        return fallback
    try:
        frontmatter, _ = parse_frontmatter(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return fallback
    name = frontmatter.get("name")
    return name.strip() if isinstance(name, str) and name.strip() else fallback


def path_problem(path: str) -> str | None:
    """Why a skill directory's path cannot be used, or None. A line break would forge lines in
    every output that lists paths (on GitHub Actions, a workflow command); a name that is not
    UTF-8 (read back as lone surrogates) cannot be written into any report."""
    if any(c in path for c in "\n\r\x85\u2028\u2029"):
        return "the path contains a line break; rename the directory"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "the path is not valid UTF-8; rename the directory"
    return None


def find_cases(tree: Tree, path: str, settings: SkillSettings) -> tuple[str | None, str | None]:
    """(cases file relative to the root or None, the configured path when one is configured)."""
    if settings.cases is not None:
        configured = _join(path, settings.cases)
        return (configured if tree.is_file(configured) else None), configured
    for candidate in DEFAULT_CASES:
        full = _join(path, candidate)
        if tree.is_file(full):
            return full, None
    return None, None


def _join(base: str, rel: str) -> str:
    joined = posixpath.normpath(posixpath.join(base, rel))
    return joined


def discover(
    tree: Tree, config: CiConfig, root_name: str, *, strict: bool = True
) -> tuple[list[SkillLocation], list[str]]:
    """Every skill of the tree with its name, effective settings and cases file, sorted by path,
    plus messages for the report. With ``strict``, two skills with one name → InvalidInput
    (exit 5): agents address skills by name, and so do overrides, ``--only`` and the
    observation files. (A base commit is read with strict=False: it only supplies
    fingerprints.)"""
    dirs, messages = skill_dirs(tree, config.skills)
    found: list[SkillLocation] = []
    by_name: dict[str, str] = {}
    for path in dirs:
        problem = path_problem(path)
        if problem is not None:
            if not strict:
                continue  # a base commit's such skill has no fingerprint to match anyway
            raise InvalidInput(f"skill directory {terminal_safe(path)}: {problem}")
        name = skill_name(tree, path, root_name)
        if name in by_name and strict:
            raise InvalidInput(
                f"two skills are named {name!r}: {by_name[name]} and {path}; skill names must "
                "be unique in a repository (rename one, or narrow `skills:` in the config)"
            )
        by_name[name] = path
        settings = config.for_skill(name)
        cases, configured = find_cases(tree, path, settings)
        found.append(SkillLocation(path, name, cases, configured, settings))
    unknown = sorted(set(config.overrides) - set(by_name))
    for name in unknown:
        messages.append(f"overrides.{name}: no skill of that name was found")
    return found, messages
