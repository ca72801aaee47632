"""What a ``judge`` check shows of the workspace: ``files:<glob>`` — the regular files matching
the glob after the run, never through a symlink, in path order, at most 20 per check, UTF-8 text
only, each cut at 65,536 bytes (on a character boundary, marked ``truncated``)."""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..suite.walks import TreeTooLarge, walk
from .judge_model import MAX_JUDGE_FILE_BYTES, MAX_JUDGE_FILES
from .paths import PathProblem, read_prefix

MAX_GLOB_CHARS = 1000

JudgeFile = dict[str, Any]  # {"path": str, "text": str, "truncated": bool}


def glob_problem(glob: str) -> str | None:
    """Why ``glob`` is no workspace glob (relative, ``/``-separated, no ``..``), or None."""
    if not glob:
        return "the glob after files: must not be empty"
    if len(glob) > MAX_GLOB_CHARS:
        return f"the glob is at most {MAX_GLOB_CHARS} characters"
    if "\0" in glob or "\\" in glob:
        return "the glob must not contain a NUL character or a backslash (use /)"
    if glob.startswith("/"):
        return "the glob must be relative to the workspace (no leading /)"
    for segment in glob.split("/"):
        if segment == "..":
            return "the glob must not contain a .. segment (it would leave the workspace)"
        if segment in ("", "."):
            return "the glob must not contain empty or . segments"
        if "**" in segment and segment != "**":
            return "** must be a whole segment (a/**/b.md), not part of one"
    return None


@lru_cache(maxsize=256)
def glob_regex(glob: str) -> re.Pattern[str]:
    """The glob as a regular expression over a whole relative path: ``*`` and ``?`` within a
    segment, ``**`` any number of segments."""
    parts: list[str] = []
    segments = glob.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        body = "".join(
            "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in segment
        )
        parts.append(body if last else body + "/")
    return re.compile("".join(parts))


def matches(glob: str, path: str) -> bool:
    """Whether the relative ``path`` matches ``glob``."""
    return glob_regex(glob).fullmatch(path) is not None


def select(globs: Sequence[str], files: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The captured files one check is shown: those matching any of its globs, in path order,
    at most MAX_JUDGE_FILES."""
    chosen = [dict(f) for f in files if any(matches(g, f["path"]) for g in globs)]
    return sorted(chosen, key=lambda f: f["path"].encode("utf-8"))[:MAX_JUDGE_FILES]


def capture(workspace: Path, checks_globs: Sequence[Sequence[str]]) -> list[JudgeFile]:
    """The files every judge check of a task is shown (the union, in path order). A walk that
    passes its bound captures what it found before it."""
    wanted: dict[str, None] = {}
    per_check: list[list[str]] = [[] for _ in checks_globs]
    try:
        for entry in walk(workspace, on_error=lambda *_: None):
            if not stat.S_ISREG(entry.info.st_mode):
                continue
            try:
                rel = entry.rel.decode("utf-8")
            except UnicodeDecodeError:
                continue
            for found, globs in zip(per_check, checks_globs, strict=True):
                if any(matches(g, rel) for g in globs):
                    found.append(rel)
    except TreeTooLarge:
        pass
    for found in per_check:
        for rel in sorted(found, key=lambda p: p.encode("utf-8"))[:MAX_JUDGE_FILES]:
            wanted[rel] = None
    files = [f for rel in wanted if (f := _read(workspace, rel)) is not None]
    return sorted(files, key=lambda f: f["path"].encode("utf-8"))


def _read(workspace: Path, rel: str) -> JudgeFile | None:
    """One file as the judge sees it, or None when it is no UTF-8 text."""
    try:
        data, more = read_prefix(workspace, rel, MAX_JUDGE_FILE_BYTES)
    except (PathProblem, OSError):
        return None
    text = _decode(data, cut=more)
    if text is None:
        return None
    return {"path": rel, "text": text, "truncated": more}


def _decode(data: bytes, *, cut: bool) -> str | None:
    """Strict UTF-8; a cut file may end inside a character: that partial one is dropped."""
    for drop in range(4 if cut else 1):
        try:
            return data[: len(data) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None
