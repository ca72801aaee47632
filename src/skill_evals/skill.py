"""SKILL.md frontmatter, Agent Skills validation and the two hashes (docs/inputs.md).

Owner: inputs.
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from .errors import InvalidInput
from .jsonl import MAX_FILE_BYTES

_CHUNK = 1 << 20
_ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
_NAME_CHARS = re.compile(r"[a-z0-9-]+")
# Nodes reached through aliases, summed over a document: an alias bomb ("billion laughs")
# stops here. The document's own nodes are bounded by the file size.
MAX_YAML_ALIAS_NODES = 100_000
# The document with every alias written out may hold at most this many scalar bytes (the input
# file limit): a large anchor aliased many times is refused while it is parsed, before any case
# or prompt is built from it.
MAX_YAML_EXPANDED_BYTES = MAX_FILE_BYTES
# Deeper nesting is an error (libyaml's composer would even crash on very deep nesting, which
# is why documents are built here from parser events, without recursion).
MAX_YAML_DEPTH = 200


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


# ---------------------------------------------------------------------------------- YAML


class YamlValueError(ValueError):
    """A YAML document that parses but does not fit the expected data model.

    ``line`` is the one-based line of the offending node."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


YamlPath = tuple[object, ...]  # mapping keys and list indexes from the document root
_STR_TAG = "tag:yaml.org,2002:str"
_COLLECTION_TAGS = {
    yaml.MappingStartEvent: (None, "!", "tag:yaml.org,2002:map"),
    yaml.SequenceStartEvent: (None, "!", "tag:yaml.org,2002:seq"),
}
_NO_KEY = object()


class _Frame:
    """An open mapping or sequence while a document is being built."""

    __slots__ = ("anchor", "container", "key", "key_line", "line", "nbytes", "path", "size")

    def __init__(
        self,
        container: dict[str, object] | list[object],
        path: YamlPath,
        line: int,
        anchor: str | None,
    ) -> None:
        self.container = container
        self.path = path
        self.line = line
        self.anchor = anchor
        self.key: object = _NO_KEY
        self.key_line = line
        self.size = 1
        self.nbytes = 0  # scalar bytes inside, aliases expanded


class _LineCounter:
    """One-based line of a parser mark, counting only "\n" as a line break.

    PyYAML and libyaml also break lines at U+0085, U+2028 and U+2029 (YAML 1.1); editors and
    the JSONL rules do not, so when those appear the line is recounted from the
    mark's character index."""

    def __init__(self, text: str) -> None:
        self.newlines: list[int] | None = None
        if "\x85" in text or "\u2028" in text or "\u2029" in text:
            self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line(self, mark: Any) -> int:
        if mark is None:
            return 1
        if self.newlines is None:
            return int(mark.line) + 1
        return bisect.bisect_left(self.newlines, int(mark.index)) + 1


def _scalar_bytes(text: str) -> int:
    """UTF-8 size of a scalar's text (surrogates, which YAML cannot produce, count 3 each)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _too_large(limit: int) -> str:
    return (
        f"aliases expand the document past {limit} bytes (the input file limit); "
        "write the data out instead of repeating a large anchor"
    )


def _resolve_tag(loader: Any, event: yaml.ScalarEvent) -> str:
    """The tag of a scalar event, resolving untagged plain scalars with ``loader``'s rules."""
    tag: str | None = event.tag
    if tag is None and event.implicit[0]:
        value: str = event.value
        resolvers = loader.yaml_implicit_resolvers
        for candidate, regexp in resolvers.get(value[:1], []) + resolvers.get(None, []):
            if regexp.match(value):
                return str(candidate)
        return _STR_TAG
    if tag is None or tag == "!":
        return _STR_TAG
    return tag


def load_yaml(
    text: str,
    loader: Any,
    scalar: Callable[[yaml.ScalarNode], object],
    lines: dict[YamlPath, int] | None = None,
) -> object:
    """Build one YAML document into dicts/lists/scalars, iteratively from parser events.

    ``loader`` (a PyYAML Loader class) parses and supplies the implicit resolvers; ``scalar``
    converts each scalar node. Mapping keys must be strings and unique (YAML forbids
    duplicates; PyYAML would silently keep the last). Aliases share the anchored value and
    count its size against MAX_YAML_ALIAS_NODES; nesting is limited to MAX_YAML_DEPTH.
    ``lines`` receives the one-based line of every value by path (a mapping value: its key's
    line). Returns None for an empty document. Raises yaml.YAMLError or YamlValueError."""
    counter = _LineCounter(text)
    anchors: dict[str, tuple[object, int, int]] = {}  # value, nodes, scalar bytes
    alias_budget = MAX_YAML_ALIAS_NODES
    byte_limit = MAX_YAML_EXPANDED_BYTES
    expanded_bytes = 0  # scalar bytes of the document with every alias written out
    depth_limit = MAX_YAML_DEPTH
    stack: list[_Frame] = []
    root: object = None
    documents = 0

    def place(line: int) -> tuple[YamlPath, int]:
        """Path and line of the value about to be added to the innermost open container."""
        frame = stack[-1]
        if isinstance(frame.container, list):
            return (*frame.path, len(frame.container)), line
        if frame.key is _NO_KEY:
            raise YamlValueError("mapping keys must be plain strings", line)
        return (*frame.path, frame.key), frame.key_line

    def add(value: object, size: int, line: int, anchor: str | None, nbytes: int = 0) -> None:
        nonlocal root
        if anchor is not None:
            anchors[anchor] = (value, size, nbytes)
        if not stack:
            root = value
            return
        frame = stack[-1]
        frame.size += size
        frame.nbytes += nbytes
        if isinstance(frame.container, list):
            if lines is not None:
                item_path = (*frame.path, len(frame.container))
                lines[item_path] = line
            frame.container.append(value)
        elif frame.key is _NO_KEY:
            if not isinstance(value, str):
                raise YamlValueError("mapping keys must be strings", line)
            if value in frame.container:
                raise YamlValueError(f"duplicate key {value!r}", line)
            frame.key, frame.key_line = value, line
        else:
            if lines is not None:
                key_path = (*frame.path, frame.key)
                lines[key_path] = frame.key_line
            frame.container[cast("str", frame.key)] = value
            frame.key = _NO_KEY

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.ScalarEvent):
            node = yaml.ScalarNode(
                _resolve_tag(loader, event),
                event.value,
                cast(Any, event.start_mark),  # the C parser's Mark type is not in the stubs
                cast(Any, event.end_mark),
                event.style,
            )
            line = counter.line(event.start_mark)
            try:
                value = scalar(node)
            except YamlValueError as exc:
                raise YamlValueError(str(exc), line) from None
            nbytes = _scalar_bytes(event.value)
            expanded_bytes += nbytes
            if expanded_bytes > byte_limit:  # only aliases can get a document this far
                raise YamlValueError(_too_large(byte_limit), line)
            add(value, 1, line, event.anchor, nbytes)
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            line = counter.line(event.start_mark)
            if event.tag not in _COLLECTION_TAGS[type(event)]:
                raise YamlValueError(f"unsupported YAML tag {event.tag}", line)
            if len(stack) >= depth_limit:
                raise YamlValueError(f"nested too deeply (over {depth_limit} levels)", line)
            path, line = place(line) if stack else ((), line)
            if lines is not None:
                lines[path] = line
            container: dict[str, object] | list[object] = (
                {} if isinstance(event, yaml.MappingStartEvent) else []
            )
            stack.append(_Frame(container, path, counter.line(event.start_mark), event.anchor))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = stack.pop()
            add(frame.container, frame.size, frame.line, frame.anchor, frame.nbytes)
        elif isinstance(event, yaml.AliasEvent):
            line = counter.line(event.start_mark)
            if event.anchor not in anchors:
                raise YamlValueError(f"unknown or recursive alias *{event.anchor}", line)
            value, size, nbytes = anchors[event.anchor]
            alias_budget -= size
            if alias_budget < 0:
                raise YamlValueError(
                    f"aliases expand to more than {MAX_YAML_ALIAS_NODES} nodes; "
                    "write the data out instead",
                    line,
                )
            expanded_bytes += nbytes
            if expanded_bytes > byte_limit:
                raise YamlValueError(_too_large(byte_limit), line)
            add(value, size, line, None, nbytes)
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise YamlValueError(
                    "expected a single YAML document", counter.line(event.start_mark)
                )
    return root


class _StrOnlyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Parses YAML without resolving plain scalars to bool/int/float/null/timestamp."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


def _string_scalar(node: yaml.ScalarNode) -> object:
    # Every scalar keeps its text, whatever its tag: `on`, `1.0`, `!!int 3` all stay strings.
    return str(node.value)


def yaml_error_message(
    exc: yaml.YAMLError, line_offset: int = 0, text: str | None = None
) -> tuple[str, int | None]:
    """A safe one-line reason and one-based line for a PyYAML error.

    str(exc) would quote a snippet of the document, so only the problem and context texts are
    used. ``line_offset`` is added to every line (e.g. when the YAML starts on line 2); with
    ``text`` (the parsed document) lines count "\n" only, as in :func:`load_yaml`."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return "invalid YAML", None
    counter = _LineCounter(text or "")
    mark = exc.problem_mark or exc.context_mark
    reason = exc.problem or exc.context or "invalid YAML"
    if exc.problem and exc.context and exc.context_mark is not None:
        started = counter.line(exc.context_mark) + line_offset
        reason += f" ({exc.context} started on line {started})"
    return reason, (counter.line(mark) + line_offset if mark is not None else None)


# -------------------------------------------------------------------------------- frontmatter


def _split_frontmatter(text: str) -> tuple[str, str] | None:
    """(YAML block, body) when ``text`` (BOM already removed) starts with a `---` line."""
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    if first.rstrip("\r").rstrip(" \t") != "---":
        return None
    if first_end < 0:
        raise ValueError("frontmatter is not closed: no line '---' after the opening one")
    pos = first_end + 1
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.rstrip("\r").rstrip(" \t") == "---":
            block = text[first_end + 1 : pos]
            body = "" if end < 0 else text[end + 1 :]
            return block, body
        if end < 0:
            break
        pos = end + 1
    raise ValueError("frontmatter is not closed: no line '---' after the opening one")


def parse_frontmatter(text: str) -> tuple[dict[str, object], str]:
    """Split SKILL.md text into (frontmatter mapping with string scalars, body).

    A BOM before the first ``---`` is skipped; the block ends at the next line that is exactly
    ``---`` (trailing spaces allowed). No frontmatter → ({}, text without BOM).
    Raises ValueError on bad YAML."""
    if text.startswith("\ufeff"):
        text = text[1:]
    split = _split_frontmatter(text)
    if split is None:
        return {}, text
    block, body = split
    try:
        value = load_yaml(block, _StrOnlyLoader, _string_scalar)
    except yaml.YAMLError as exc:
        # +1: the YAML block starts on the file's second line.
        problem, line = yaml_error_message(exc, line_offset=1, text=block)
        where = f" (line {line})" if line is not None else ""
        raise ValueError(f"invalid YAML{where}: {problem}") from None
    except YamlValueError as exc:
        raise ValueError(f"invalid YAML (line {exc.line + 1}): {exc}") from None
    if value is None:
        return {}, body
    if not isinstance(value, dict):
        raise ValueError("frontmatter must be a YAML mapping of keys to values")
    return value, body


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


def _walk(root: Path) -> list[tuple[bytes, Path]]:
    """(relative path as UTF-8/fs bytes with '/', absolute path) of every regular file."""
    found: list[tuple[bytes, Path]] = []
    stack: list[tuple[Path, bytes]] = [(root, b"")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise InvalidInput(f"{directory}: cannot list directory ({exc.strerror})") from None
        for entry in entries:
            full = Path(entry.path)
            name = os.fsencode(entry.name)
            if b"\n" in name:
                raise InvalidInput(
                    f"{directory}: a file name contains a newline; rename it "
                    "(it would break the directory hash)"
                )
            rel = prefix + name
            if entry.is_symlink():
                raise InvalidInput(
                    f"{full}: symlinks are not allowed in a skill directory; "
                    "replace it with a copy of the file"
                )
            if entry.is_dir(follow_symlinks=False):
                stack.append((full, rel + b"/"))
            elif entry.is_file(follow_symlinks=False):
                found.append((rel, full))
            else:
                raise InvalidInput(
                    f"{full}: not a regular file (FIFO, socket or device); "
                    "a skill directory holds only files and directories"
                )
    found.sort(key=lambda item: item[0])
    return found


def _directory_hash(path: Path, keep: bytes | None = None) -> tuple[str, bytes | None]:
    """Directory hash, plus the bytes of the file whose relative path is ``keep``."""
    lines = hashlib.sha256()
    kept: bytes | None = None
    for rel, full in _walk(path):
        hexdigest, content = _hash_file(full, rel == keep)
        if rel == keep:
            kept = content
        lines.update(hexdigest.encode("ascii") + b"  " + rel + b"\n")
    return lines.hexdigest(), kept


def directory_sha256(path: Path) -> str:
    """Go dirhash.Hash1 construction with hex: sha256 over sorted "<sha>  <relpath>\\n" lines.

    Raises InvalidInput for a symlink anywhere inside or a path containing a newline."""
    return _directory_hash(path)[0]


# -------------------------------------------------------------------------------- load/validate


def _check_skill_dir(path: Path) -> Path:
    """The absolute skill dir, or InvalidInput when it or its SKILL.md is unusable."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: skill directory does not exist") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read skill directory ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"{path}: --skill must be a directory holding SKILL.md")
    root = path.resolve()
    md = root / "SKILL.md"
    try:
        md_st = os.lstat(md)
    except FileNotFoundError:
        raise InvalidInput(f"{md}: missing; a skill directory must hold SKILL.md") from None
    except OSError as exc:
        raise InvalidInput(f"{md}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(md_st.st_mode):
        raise InvalidInput(f"{md}: must be a regular file (not a symlink, directory or FIFO)")
    return root


def _frontmatter_problems(md: Path, dir_name: str, text: str) -> list[str]:
    """Agent Skills rules for the frontmatter of ``text``."""
    stripped = text[1:] if text.startswith("\ufeff") else text
    try:
        if _split_frontmatter(stripped) is None:
            return [f"{md}: missing frontmatter; the file must start with a line '---'"]
        front, _ = parse_frontmatter(text)
    except ValueError as exc:
        return [f"{md}: {exc}"]
    problems: list[str] = []

    def problem(message: str) -> None:
        problems.append(f"{md}: {message}")

    for key in front:
        if key not in _ALLOWED_KEYS:
            problem(f"unknown frontmatter key {key!r}; allowed keys are {', '.join(_ALLOWED_KEYS)}")

    name = front.get("name")
    if name is None:
        problem("missing required key 'name'")
    elif not isinstance(name, str):
        problem("'name' must be a string")
    else:
        if not 1 <= len(name) <= 64:
            problem(f"'name' must be 1-64 characters (it has {len(name)})")
        if name and not _NAME_CHARS.fullmatch(name):
            problem("'name' may only contain lowercase letters a-z, digits 0-9 and hyphens")
        if name.startswith("-") or name.endswith("-"):
            problem("'name' must not start or end with a hyphen")
        if "--" in name:
            problem("'name' must not contain two hyphens in a row")
        if name and name != dir_name:
            problem(f"'name' {name!r} must equal the directory name {dir_name!r}")

    description = front.get("description")
    if description is None:
        problem("missing required key 'description'")
    elif not isinstance(description, str):
        problem("'description' must be a string")
    else:
        if not 1 <= len(description) <= 1024:
            problem(f"'description' must be 1-1024 characters (it has {len(description)})")
        if "<" in description or ">" in description:
            problem("'description' must not contain '<' or '>'")

    compatibility = front.get("compatibility")
    if compatibility is not None:
        if not isinstance(compatibility, str):
            problem("'compatibility' must be a string")
        elif len(compatibility) > 500:
            problem(f"'compatibility' must be at most 500 characters (it has {len(compatibility)})")

    for key in ("license", "allowed-tools"):
        if key in front and not isinstance(front[key], str):
            problem(f"{key!r} must be a string")

    if "metadata" in front:
        metadata = front["metadata"]
        if not isinstance(metadata, dict):
            problem("'metadata' must be a mapping of string keys to string values")
        else:
            for key, value in metadata.items():
                if not isinstance(value, str):
                    problem(f"'metadata' value of {key!r} must be a string")
    return problems


def _decode_skill_md(md: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{md}:{line}: invalid UTF-8; save SKILL.md as UTF-8") from None


def load_skill(path: Path) -> Skill:
    """Load and hash the skill at ``path`` (a directory holding a regular file SKILL.md).

    Raises InvalidInput (exit 5) with a clear message otherwise."""
    root = _check_skill_dir(path)
    md = root / "SKILL.md"
    # One pass over the directory: the hash of every file, and SKILL.md's bytes on the way.
    dir_hash, md_bytes = _directory_hash(root, keep=b"SKILL.md")
    if md_bytes is None:  # pragma: no cover - _check_skill_dir saw it a moment ago
        raise InvalidInput(f"{md}: missing; a skill directory must hold SKILL.md")
    text = _decode_skill_md(md, md_bytes)
    try:
        front, body = parse_frontmatter(text)
    except ValueError:
        front, body = {}, text.removeprefix("\ufeff")  # reported in warnings below
    name = front.get("name")
    description = front.get("description")
    return Skill(
        name=name if isinstance(name, str) and name else root.name,
        path=root,
        description=description if isinstance(description, str) else "",
        body=body,
        frontmatter=front,
        skill_md_sha256=hashlib.sha256(md_bytes).hexdigest(),
        directory_sha256=dir_hash,
        warnings=tuple(_frontmatter_problems(md, root.name, text)),
    )


def validate_skill(path: Path) -> list[str]:
    """Problems against the Agent Skills format, each as ``PATH: message``; empty when valid."""
    try:
        st = os.stat(path)
    except OSError:
        return [f"{path}: skill directory does not exist or cannot be read"]
    if not stat.S_ISDIR(st.st_mode):
        return [f"{path}: not a directory; a skill is a directory holding SKILL.md"]
    root = path.resolve()
    md = path / "SKILL.md"
    try:
        md_st = os.lstat(md)
    except FileNotFoundError:
        return [f"{path}: missing SKILL.md"]
    except OSError as exc:
        return [f"{md}: cannot read ({exc.strerror})"]
    if not stat.S_ISREG(md_st.st_mode):
        return [f"{md}: must be a regular file (not a symlink, directory or FIFO)"]
    if md_st.st_size > MAX_FILE_BYTES:
        return [f"{md}: larger than {MAX_FILE_BYTES} bytes"]
    try:
        data = md.read_bytes()
    except OSError as exc:
        return [f"{md}: cannot read ({exc.strerror})"]
    try:
        text = _decode_skill_md(md, data)
    except InvalidInput as exc:
        return [str(exc)]
    return _frontmatter_problems(md, root.name, text)
