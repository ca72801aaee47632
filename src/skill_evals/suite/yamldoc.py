"""YAML documents built iteratively from parser events, with bounds (docs/inputs.md).

Used for SKILL.md frontmatter (every scalar a string) and YAML case files (the YAML 1.2 core
schema): no recursion (libyaml's composer crashes on very deep nesting), unique string keys,
aliases bounded in nodes and in expanded bytes, nesting bounded, lines counted by "\n" only.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any, cast

import yaml

from .jsonl import MAX_FILE_BYTES, MAX_SAFE_INTEGER

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
    builder = _Builder(text, loader, scalar, lines)
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.ScalarEvent):
            builder.scalar(event)
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            builder.open(event)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            builder.close()
        elif isinstance(event, yaml.AliasEvent):
            builder.alias(event)
        elif isinstance(event, yaml.DocumentStartEvent):
            builder.document(event)
    return builder.root


class _Builder:
    """One document being built from parser events: its open containers, anchors, and what the
    aliases have spent of their bounds. One method per kind of event."""

    def __init__(
        self,
        text: str,
        loader: Any,
        scalar: Callable[[yaml.ScalarNode], object],
        lines: dict[YamlPath, int] | None,
    ) -> None:
        self.counter = _LineCounter(text)
        self.loader = loader
        self.convert = scalar
        self.lines = lines
        self.anchors: dict[str, tuple[object, int, int]] = {}  # value, nodes, scalar bytes
        self.alias_budget = MAX_YAML_ALIAS_NODES
        self.expanded_bytes = 0  # scalar bytes of the document with every alias written out
        self.stack: list[_Frame] = []
        self.root: object = None
        self.documents = 0

    def scalar(self, event: yaml.ScalarEvent) -> None:
        """A scalar: converted, its bytes counted against the expanded-size bound."""
        node = yaml.ScalarNode(
            _resolve_tag(self.loader, event),
            event.value,
            cast(Any, event.start_mark),  # the C parser's Mark type is not in the stubs
            cast(Any, event.end_mark),
            event.style,
        )
        line = self.counter.line(event.start_mark)
        try:
            value = self.convert(node)
        except YamlValueError as exc:
            raise YamlValueError(str(exc), line) from None
        nbytes = _scalar_bytes(event.value)
        self._spend_bytes(nbytes, line)  # only aliases can get a document this far
        self._add(value, 1, line, event.anchor, nbytes)

    def open(self, event: yaml.MappingStartEvent | yaml.SequenceStartEvent) -> None:
        """A mapping or sequence starts: a new innermost container (tag and depth checked)."""
        line = self.counter.line(event.start_mark)
        if event.tag not in _COLLECTION_TAGS[type(event)]:
            raise YamlValueError(f"unsupported YAML tag {event.tag}", line)
        if len(self.stack) >= MAX_YAML_DEPTH:
            raise YamlValueError(f"nested too deeply (over {MAX_YAML_DEPTH} levels)", line)
        path, line = self._place(line) if self.stack else ((), line)
        if self.lines is not None:
            self.lines[path] = line
        container: dict[str, object] | list[object] = (
            {} if isinstance(event, yaml.MappingStartEvent) else []
        )
        frame = _Frame(container, path, self.counter.line(event.start_mark), event.anchor)
        self.stack.append(frame)

    def close(self) -> None:
        """The innermost container ends: it becomes a value of the one around it."""
        frame = self.stack.pop()
        self._add(frame.container, frame.size, frame.line, frame.anchor, frame.nbytes)

    def alias(self, event: yaml.AliasEvent) -> None:
        """An alias: the anchored value again, its nodes and bytes spent from the bounds."""
        line = self.counter.line(event.start_mark)
        if event.anchor not in self.anchors:
            raise YamlValueError(f"unknown or recursive alias *{event.anchor}", line)
        value, size, nbytes = self.anchors[event.anchor]
        self.alias_budget -= size
        if self.alias_budget < 0:
            raise YamlValueError(
                f"aliases expand to more than {MAX_YAML_ALIAS_NODES} nodes; "
                "write the data out instead",
                line,
            )
        self._spend_bytes(nbytes, line)
        self._add(value, size, line, None, nbytes)

    def document(self, event: yaml.DocumentStartEvent) -> None:
        """A document starts: only one is allowed."""
        self.documents += 1
        if self.documents > 1:
            raise YamlValueError(
                "expected a single YAML document", self.counter.line(event.start_mark)
            )

    def _spend_bytes(self, nbytes: int, line: int) -> None:
        self.expanded_bytes += nbytes
        if self.expanded_bytes > MAX_YAML_EXPANDED_BYTES:
            raise YamlValueError(_too_large(MAX_YAML_EXPANDED_BYTES), line)

    def _place(self, line: int) -> tuple[YamlPath, int]:
        """Path and line of the value about to be added to the innermost open container."""
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            return (*frame.path, len(frame.container)), line
        if frame.key is _NO_KEY:
            raise YamlValueError("mapping keys must be plain strings", line)
        return (*frame.path, frame.key), frame.key_line

    def _add(self, value: object, size: int, line: int, anchor: str | None, nbytes: int) -> None:
        """Put a finished value in place: the root, a list item, a mapping key or its value."""
        if anchor is not None:
            self.anchors[anchor] = (value, size, nbytes)
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        frame.size += size
        frame.nbytes += nbytes
        if isinstance(frame.container, list):
            if self.lines is not None:
                item_path = (*frame.path, len(frame.container))
                self.lines[item_path] = line
            frame.container.append(value)
        elif frame.key is _NO_KEY:
            if not isinstance(value, str):
                raise YamlValueError("mapping keys must be strings", line)
            if value in frame.container:
                raise YamlValueError(f"duplicate key {value!r}", line)
            frame.key, frame.key_line = value, line
        else:
            if self.lines is not None:
                key_path = (*frame.path, frame.key)
                self.lines[key_path] = frame.key_line
            frame.container[cast("str", frame.key)] = value
            frame.key = _NO_KEY


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


# ------------------------------------------------------------ YAML 1.2 core schema (case files)

_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_TAG = "tag:yaml.org,2002:"

_SafeBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CoreSchemaLoader(_SafeBase):  # type: ignore[misc,valid-type]
    """YAML 1.2 core schema: only true/false are booleans, so `yes`/`on` stay strings."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


CoreSchemaLoader.add_implicit_resolver(_TAG + "bool", _BOOL, list("tTfF"))
CoreSchemaLoader.add_implicit_resolver(_TAG + "null", _NULL, [*"~nN", ""])
CoreSchemaLoader.add_implicit_resolver(_TAG + "int", _INT, list("-+0123456789"))
CoreSchemaLoader.add_implicit_resolver(_TAG + "float", _FLOAT, list("-+0123456789."))


def node_line(node: yaml.Node) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


def core_scalar(node: yaml.ScalarNode) -> object:
    """Convert a scalar per the YAML 1.2 core schema, with JSON's limits."""
    tag, text = node.tag, str(node.value)
    if tag == _TAG + "str":
        return text
    if tag == _TAG + "bool" and _BOOL.match(text):
        return text.lower() == "true"
    if tag == _TAG + "null" and _NULL.match(text):
        return None
    if tag == _TAG + "int" and _INT.match(text):
        digits = text.lstrip("+-")
        if len(digits) > 20:
            raise YamlValueError("integer outside ±9007199254740991", node_line(node))
        value = int(text, 0) if text[:2] in ("0o", "0x") else int(text, 10)
        if abs(value) > MAX_SAFE_INTEGER:
            raise YamlValueError("integer outside ±9007199254740991", node_line(node))
        return value
    if tag == _TAG + "float" and _FLOAT.match(text):
        if "inf" in text.lower() or "nan" in text.lower():
            raise YamlValueError("NaN and infinity are not allowed", node_line(node))
        number = float(text)
        if number in (float("inf"), float("-inf")):
            raise YamlValueError("number too large for a double", node_line(node))
        return number
    if tag.startswith(_TAG) and tag[len(_TAG) :] in ("bool", "null", "int", "float"):
        raise YamlValueError(f"value does not match its tag !!{tag[len(_TAG) :]}", node_line(node))
    raise YamlValueError(f"unsupported YAML tag {tag}", node_line(node))
