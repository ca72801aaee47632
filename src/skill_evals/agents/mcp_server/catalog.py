"""What ``mcp-serve`` serves of each skill folder, read once at start: every regular file
(hidden ones too) except the judging files the runners never install (top-level ``evals/`` and
``cases.jsonl``), and — for the Skills extension — whether the skill is listed in
``skills/list`` and its ``Skill`` entry (frontmatter, every file with its digest and size).

A skill is listed when its name is an Agent Skills name, its description has 1–1024
characters, its files number at most 512 and total at most 16 MiB, all are regular files and
their paths hold no control character, and its frontmatter has a JSON form; otherwise it is
still offered as a tool and a resource, and start-up says why it is not listed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core_yaml import FrontmatterError, split_skill_file, yaml_core_frontmatter

MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_WALK_ENTRIES = 10_000  # entries looked at per folder walk, listed or not
SKILL_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
JUDGING = ("evals", "cases.jsonl")  # top-level entries the runners never install


@dataclass(frozen=True)
class ServedFile:
    """One file of a skill: its path inside the skill (``/`` separated) and exact bytes."""

    path: str
    data: bytes

    @property
    def digest(self) -> str:
        """``sha256:<64 lowercase hex>`` of the bytes served."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    @property
    def is_text(self) -> bool:
        """Whether the bytes are UTF-8 (served as ``text``; anything else as ``blob``)."""
        try:
            self.data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    @property
    def mime_type(self) -> str:
        """By extension: ``.md`` Markdown, ``.json`` JSON, any other UTF-8 file plain text,
        any other file ``application/octet-stream``."""
        if not self.is_text:
            return "application/octet-stream"
        if self.path.endswith(".md"):
            return "text/markdown"
        return "application/json" if self.path.endswith(".json") else "text/plain"


def file_uri(name: str, path: str) -> str:
    """``skill://<name>/<path>``, each segment percent-encoded (RFC 3986 unreserved kept)."""
    segments = [urllib.parse.quote(part, safe="") for part in path.split("/")]
    return f"skill://{urllib.parse.quote(name, safe='')}/" + "/".join(segments)


@dataclass(frozen=True)
class Walk:
    """A skill folder's files as served, and why the skill cannot be listed (None: it can)."""

    files: tuple[ServedFile, ...]
    problem: str | None


def walk_skill(root: Path, skill_md: bytes) -> Walk:
    """:func:`_walk`, a folder or file that cannot be read making the skill unlisted."""
    try:
        return _walk(root, skill_md)
    except OSError as exc:
        skill = ServedFile("SKILL.md", skill_md)
        return Walk((skill,), f"cannot read its files ({exc.strerror})")


def _walk(root: Path, skill_md: bytes) -> Walk:
    """Every regular file under ``root`` but the judging files, sorted by path bytes;
    ``SKILL.md`` is ``skill_md`` (the text served, a leading BOM dropped). Bounded: at most
    MAX_WALK_ENTRIES entries and MAX_FILES files are read, and at most MAX_TOTAL_BYTES bytes."""
    files: list[ServedFile] = []
    problem: str | None = None
    total, seen = 0, 0
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            return Walk(tuple(files), f"cannot list {prefix or '.'} ({exc.strerror})")
        for entry in entries:
            seen += 1
            rel = prefix + entry.name
            if seen > MAX_WALK_ENTRIES:
                return Walk(tuple(files), f"more than {MAX_WALK_ENTRIES} entries")
            if not prefix and entry.name in JUDGING:
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            if _CONTROL.search(rel) and problem is None:
                problem = "a file path holds a control character"
            if stat.S_ISDIR(mode):
                stack.append((Path(entry.path), rel + "/"))
                continue
            if not stat.S_ISREG(mode):
                problem = problem or f"{_shown(rel)} is not a regular file"
                continue
            if len(files) >= MAX_FILES:
                return Walk(tuple(files), f"more than {MAX_FILES} files")
            data = (
                skill_md if rel == "SKILL.md" else _read(Path(entry.path), MAX_TOTAL_BYTES - total)
            )
            if data is None:
                return Walk(tuple(files), f"the files total more than {MAX_TOTAL_BYTES} bytes")
            total += len(data)
            files.append(ServedFile(rel, data))
    files.sort(key=lambda f: f.path.encode("utf-8", "surrogateescape"))
    return Walk(tuple(files), problem)


def _shown(rel: str) -> str:
    return _CONTROL.sub("?", rel)[:200]


def _read(path: Path, budget: int) -> bytes | None:
    """The file's bytes, or None when it holds more than ``budget`` bytes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)  # never blocks on a FIFO swapped in after the walk looked
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max(budget, 0) + 1)
    return None if len(data) > budget else data


def listing_problem(name: str, description: str, text: str, walk: Walk) -> str | None:
    """Why a skill is not listed in ``skills/list`` (None: it is)."""
    if len(name) > 64 or not SKILL_NAME.fullmatch(name):
        return "its name is not an Agent Skills name (1-64 of a-z, 0-9 and single hyphens)"
    if not 1 <= len(description) <= 1024:
        return f"its description has {len(description)} characters (1-1024 are listed)"
    if walk.problem is not None:
        return walk.problem
    try:
        frontmatter(text)
    except FrontmatterError as exc:
        return f"its frontmatter {exc}"
    return None


def frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter as the YAML 1.2 core schema reads it (FrontmatterError otherwise)."""
    block = split_skill_file(text)
    if block is None:
        raise FrontmatterError("is missing")
    return yaml_core_frontmatter(block)


def skill_entry(name: str, text: str, files: tuple[ServedFile, ...]) -> dict[str, Any]:
    """The extension's ``Skill`` entry of a listed skill."""
    return {
        "uri": file_uri(name, "SKILL.md"),
        "frontmatter": frontmatter(text),
        "resources": [
            {"uri": file_uri(name, f.path), "digest": f.digest, "size": len(f.data)} for f in files
        ],
    }
