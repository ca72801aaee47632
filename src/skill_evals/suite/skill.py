"""A skill directory: loaded, hashed (the two hashes of docs/inputs.md#hashes), its format
problems attached as warnings (skill_rules.py).

Owner: inputs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidInput
from .frontmatter import decode_skill_md, name_and_description
from .frontmatter import parse_frontmatter as parse_frontmatter
from .jsonl import MAX_FILE_BYTES, stat_or_fail
from .skill_rules import frontmatter_problems
from .skill_rules import validate_skill as validate_skill
from .walks import walk
from .yamldoc import MAX_YAML_ALIAS_NODES as MAX_YAML_ALIAS_NODES
from .yamldoc import MAX_YAML_DEPTH as MAX_YAML_DEPTH
from .yamldoc import YamlValueError as YamlValueError
from .yamldoc import load_yaml as load_yaml

_CHUNK = 1 << 20


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


# ------------------------------------------------------------------------------------ hashing


def _hash_file(path: Path, keep: bool) -> tuple[str, bytes | None]:
    """SHA-256 of one regular file, read once in chunks; optionally also return its bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(f"{path}: symlinks are not allowed in a skill directory") from None
        raise InvalidInput(f"{path}: cannot read ({exc.strerror})") from None
    digest = hashlib.sha256()
    parts: list[bytes] | None = [] if keep else None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput(f"{path}: not a regular file; a skill holds only files and dirs")
        if keep and st.st_size > MAX_FILE_BYTES:
            raise InvalidInput(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        total = 0
        while True:
            n = fh.readinto(view)
            if not n:
                break
            digest.update(view[:n])
            if parts is not None:
                total += n
                if total > MAX_FILE_BYTES:
                    raise InvalidInput(f"{path}: larger than {MAX_FILE_BYTES} bytes")
                parts.append(bytes(view[:n]))
    return digest.hexdigest(), (b"".join(parts) if parts is not None else None)


def _walk(root: Path) -> list[tuple[bytes, Path, bool]]:
    """(relative path as UTF-8/fs bytes with '/', absolute path, owner-executable) of every
    regular file, sorted by the relative path's bytes. Bounded (walks.py): TreeTooLarge past
    256 directory levels or 100,000 entries."""
    found: list[tuple[bytes, Path, bool]] = []

    def unlistable(directory: str, exc: OSError) -> None:
        raise InvalidInput(f"{directory}: cannot list directory ({exc.strerror})")

    for entry in walk(root, on_error=unlistable):
        full = Path(entry.path)
        if b"\n" in entry.rel:
            raise InvalidInput(
                f"{full.parent}: a file name contains a newline; rename it "
                "(it would break the directory hash)"
            )
        mode = entry.info.st_mode
        if stat.S_ISLNK(mode):
            raise InvalidInput(
                f"{full}: symlinks are not allowed in a skill directory; "
                "replace it with a copy of the file"
            )
        if stat.S_ISREG(mode):
            found.append((entry.rel, full, bool(mode & stat.S_IXUSR)))
        elif not stat.S_ISDIR(mode):
            raise InvalidInput(
                f"{full}: not a regular file (FIFO, socket or device); "
                "a skill directory holds only files and directories"
            )
    found.sort(key=lambda item: item[0])
    return found


def hash_line(hexdigest: str, executable: bool, rel: bytes) -> bytes:
    """One line of the directory hash: the file's SHA-256, two spaces (or `` x `` for a file
    with the owner-executable bit), its relative path, a newline."""
    return hexdigest.encode("ascii") + (b" x " if executable else b"  ") + rel + b"\n"


def _directory_hash(path: Path, keep: bytes | None = None) -> tuple[str, bytes | None]:
    """Directory hash, plus the bytes of the file whose relative path is ``keep``."""
    lines = hashlib.sha256()
    kept: bytes | None = None
    for rel, full, executable in _walk(path):
        hexdigest, content = _hash_file(full, rel == keep)
        if rel == keep:
            kept = content
        lines.update(hash_line(hexdigest, executable, rel))
    return lines.hexdigest(), kept


def directory_sha256(path: Path) -> str:
    """SHA-256 over sorted ``"<sha>  <relpath>\\n"`` lines (``"<sha> x <relpath>\\n"`` for an
    owner-executable file): Go's dirhash.Hash1 construction in hex, plus the executable bit.

    Raises InvalidInput for a symlink anywhere inside, a path containing a newline, a special
    file, or a tree past the walk bounds (TreeTooLarge)."""
    return _directory_hash(path)[0]


def directory_sha256_without(path: Path, excluded: Sequence[str]) -> str:
    """:func:`directory_sha256` over the files outside ``excluded`` (paths relative to
    ``path``, ``/``-separated; a directory excludes everything below it). The cache keys a
    skill version by this, leaving out its own cases file and fixtures, which are keyed per
    case (docs/cost.md)."""
    prefixes = [p.strip("/").encode("utf-8", "surrogateescape") for p in excluded]
    prefixes = [p for p in prefixes if p]
    lines = hashlib.sha256()
    for rel, full, executable in _walk(path):
        if any(rel == p or rel.startswith(p + b"/") for p in prefixes):
            continue
        hexdigest, _ = _hash_file(full, False)
        lines.update(hash_line(hexdigest, executable, rel))
    return lines.hexdigest()


# -------------------------------------------------------------------------------- load/validate


def _check_skill_dir(path: Path) -> Path:
    """The absolute skill dir, or InvalidInput when it or its SKILL.md is unusable."""
    st = stat_or_fail(path, True, "skill directory does not exist", "cannot read skill directory")
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"{path}: --skill must be a directory holding SKILL.md")
    root = path.resolve()
    md = root / "SKILL.md"
    md_st = stat_or_fail(md, False, "missing; a skill directory must hold SKILL.md", "cannot read")
    if not stat.S_ISREG(md_st.st_mode):
        raise InvalidInput(f"{md}: must be a regular file (not a symlink, directory or FIFO)")
    return root


def load_skill(path: Path, profile: str | None = None) -> Skill:
    """Load and hash the skill at ``path`` (a directory holding a regular file SKILL.md); its
    frontmatter is checked with the agent ``profile``'s extra fields (None: the specification).

    Raises InvalidInput (exit 5) with a clear message otherwise."""
    root = _check_skill_dir(path)
    md = root / "SKILL.md"
    # One pass over the directory: the hash of every file, and SKILL.md's bytes on the way.
    dir_hash, md_bytes = _directory_hash(root, keep=b"SKILL.md")
    if md_bytes is None:  # pragma: no cover - _check_skill_dir saw it a moment ago
        raise InvalidInput(f"{md}: missing; a skill directory must hold SKILL.md")
    text = decode_skill_md(md, md_bytes)
    try:
        front, body = parse_frontmatter(text)
    except ValueError:
        front, body = {}, text.removeprefix("\ufeff")  # reported in warnings below
    name, description = name_and_description(front, root.name)
    return Skill(
        name=name,
        path=root,
        description=description,
        body=body,
        frontmatter=front,
        skill_md_sha256=hashlib.sha256(md_bytes).hexdigest(),
        directory_sha256=dir_hash,
        warnings=tuple(
            p.text
            for p in frontmatter_problems(md, root.name, text, profile)
            if p.severity != "info"
        ),
    )


def changed_since_loaded(skill: Skill) -> bool:
    """Whether the directory's hash differs from the one taken when ``skill`` was loaded."""
    try:
        return directory_sha256(skill.path) != skill.directory_sha256
    except InvalidInput:
        return True
