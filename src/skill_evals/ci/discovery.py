"""Finding the skills of a repository and their cases files (docs/ci.md).

Discovery works on a *tree*: the working directory, or a git commit read from its objects
(``changes.GitTree``), so the base of a pull request is discovered exactly like the head.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..errors import InvalidInput
from ..escaping.terminal import terminal_safe
from ..suite.jsonl import MAX_FILE_BYTES
from ..suite.walks import MAX_DEPTH, walk
from .settings import DEFAULT_CASES, CiConfig, SkillSettings
from .untrusted import read_bounded

SKIPPED_DIRS = frozenset({".git", "node_modules"})


class Tree(Protocol):
    """What discovery needs from a tree of files (paths relative to the root, / separated)."""

    def files(self) -> Iterable[str]:
        """Every file path (regular files, symlinks, submodules) outside .git/node_modules."""
        ...

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


def _ignore(directory: str, exc: OSError) -> None:
    """An unreadable directory holds no skill discovery can use (as os.walk skipped it)."""


class WorkTree:
    """The working directory as a Tree."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self) -> Iterable[str]:
        """Walk the directory, never descending into .git or node_modules."""
        found: list[str] = []
        # No recursion, no bound on the repository's size; deeper than the skill walk bound
        # nothing is entered (a skill there could not be hashed anyway).
        listing = walk(
            self.root, MAX_DEPTH, sys.maxsize, _ignore, prune=True, skip_dirs=SKIPPED_DIRS
        )
        for entry in listing:
            if not stat.S_ISDIR(entry.info.st_mode):
                found.append(os.fsdecode(entry.rel))
        found.sort()
        return found

    def read(self, path: str) -> bytes | None:
        """A regular file's bytes (None for symlinks, missing, unreadable or oversized files:
        the read is bounded and never blocks on a FIFO)."""
        try:
            return read_bounded(self.root / path, "file", MAX_FILE_BYTES, follow_symlinks=False)
        except InvalidInput:
            return None

    def is_file(self, path: str) -> bool:
        """A regular file (a symlink is not)."""
        target = self.root / path
        return not target.is_symlink() and target.is_file()


_Token = tuple[str, "re.Pattern[str] | str | None"]  # ("*"|"?"|"class"|"char", detail)


def _segment_tokens(segment: str) -> tuple[_Token, ...]:
    """``*``, ``?``, ``[...]`` (``[!...]`` negated) and literal characters of one segment."""
    out: list[_Token] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char in "*?":
            out.append((char, None))
        elif char == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(("char", char))
            else:
                body = segment[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                # Literal inside the class: a backslash, and "[" (no nested sets); never "/".
                body = body.replace("\\", "\\\\").replace("[", "\\[").replace("/", "")
                try:
                    out.append(("class", re.compile("[" + body + "]")))
                except re.error:
                    out.append(("char", char))
                    end = i
                i = end
        else:
            out.append(("char", char))
        i += 1
    return tuple(out)


def _one(token: _Token, char: str) -> bool:
    kind, detail = token
    if kind == "?":
        return True
    if kind == "class":
        assert not isinstance(detail, str) and detail is not None
        return detail.fullmatch(char) is not None
    return char == detail


def _segment_matches(tokens: tuple[_Token, ...], name: str) -> bool:
    """Wildcard match of one path segment, going back only to the last ``*`` (no regular
    expression: one with several stars retries every split of the name, exponentially)."""
    t = n = 0
    star_t, star_n = -1, 0
    while n < len(name):
        if t < len(tokens) and tokens[t][0] == "*":
            star_t, star_n = t, n
            t += 1
        elif t < len(tokens) and _one(tokens[t], name[n]):
            t += 1
            n += 1
        elif star_t >= 0:
            t, star_n = star_t + 1, star_n + 1
            n = star_n
        else:
            return False
    return all(kind == "*" for kind, _ in tokens[t:])


class Glob:
    """A path glob: ``*`` and ``?`` stay within one path segment, ``**`` spans any number of
    segments, ``[...]`` is a character class. Leading ``./`` and trailing ``/`` are ignored.
    Matching takes time linear in the path for a given glob (segments × path segments)."""

    def __init__(self, pattern: str) -> None:
        pattern = pattern.strip()
        while pattern.startswith("./"):
            pattern = pattern[2:]
        pattern = pattern.rstrip("/") or "."
        self._segments: list[tuple[_Token, ...] | None] = [  # None: **
            None if segment == "**" else _segment_tokens(segment) for segment in pattern.split("/")
        ]

    def match(self, path: str) -> bool:
        """Whether the whole of ``path`` (``/`` separated) matches."""
        names = path.split("/")
        reachable = {0}  # how many path segments the pattern so far can have consumed
        last = len(self._segments) - 1
        for index, tokens in enumerate(self._segments):
            if not reachable:
                return False
            if tokens is None:
                if index == last:  # a final ** takes the rest: one segment at least after others
                    return any(len(names) - used >= (1 if index else 0) for used in reachable)
                reachable = set(range(min(reachable), len(names) + 1))
                continue
            reachable = {
                used + 1
                for used in reachable
                if used < len(names) and _segment_matches(tokens, names[used])
            }
        return len(names) in reachable


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> Glob:
    """The compiled glob (named for its former regular expression; ``.match(path)``)."""
    return Glob(pattern)


def skill_dirs(tree: Tree, globs: tuple[str, ...] | None) -> tuple[list[str], list[str]]:
    """Directories holding a SKILL.md (matching one of ``globs`` when given), sorted by path;
    and messages about globs that matched no skill."""
    candidates = sorted(
        {posixpath.dirname(f) or "." for f in tree.files() if posixpath.basename(f) == "SKILL.md"}
    )
    if globs is None:
        return candidates, []
    chosen: list[str] = []
    messages: list[str] = []
    for pattern in globs:
        regex = glob_regex(pattern)
        hits = [c for c in candidates if regex.match(c)]
        if not hits:
            messages.append(f"skills glob {pattern!r} matched no directory holding SKILL.md")
        chosen.extend(hits)
    return sorted(set(chosen)), messages


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
