"""Finding skills: the directories holding a SKILL.md in a list of files (a directory walked, or
a git commit's tree in ci/), optionally narrowed by path globs (``*``, ``?``, ``[...]`` within a
segment, ``**`` across segments). Used by the routing catalog (``--catalog GLOB``) and by the
repository gate's discovery."""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from .walks import MAX_DEPTH, walk

SKIPPED_DIRS = frozenset({".git", "node_modules"})


class FileList(Protocol):
    """What finding skills needs from a tree of files (paths relative to the root, / separated)."""

    def files(self) -> Iterable[str]:
        """Every file path (regular files, symlinks, submodules) outside .git/node_modules."""
        ...


def _ignore(directory: str, exc: OSError) -> None:
    """An unreadable directory holds no skill discovery can use (as os.walk skipped it)."""


class DirectoryFiles:
    """The files below a directory, as a FileList."""

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


def skill_dirs(tree: FileList, globs: tuple[str, ...] | None) -> tuple[list[str], list[str]]:
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
