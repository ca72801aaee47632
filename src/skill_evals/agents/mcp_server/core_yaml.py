"""A skill's frontmatter as the YAML 1.2 core schema reads it — as the official MCP clients'
``yaml`` package does — for the Skills extension's ``Skill.frontmatter``.

Quoted and block scalars are strings; plain ``true``/``false`` (any of the core schema's
spellings) booleans; ``null``, ``~`` and empty values null; decimal, octal (``0o``) and
hexadecimal (``0x``) integers and floats numbers; everything else — YAML 1.1 forms such as
``on``, ``yes`` or ``2026-11-01`` included — strings. A value with no JSON form (``.inf``,
``.nan``) is refused. The block is split from SKILL.md as the clients split it.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

MAX_DEPTH = 64
MAX_NODES = 10_000

_NULL = re.compile(r"(?:~|null|Null|NULL|)")
_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)")
_INT = re.compile(r"[-+]?[0-9]+")
_OCT = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")


class FrontmatterError(ValueError):
    """The frontmatter has no JSON form the clients would read the same way."""


def split_skill_file(text: str) -> str | None:
    """The YAML between the opening ``---`` line and the next ``---`` line, or None."""
    if not re.match(r"---[ \t]*\r?\n", text):
        return None
    rest = text[text.index("\n") + 1 :]
    close = re.search(r"^---[ \t]*\r?$", rest, flags=re.M)
    if close is None:
        return None
    return re.sub(r"\r?\n$", "", rest[: close.start()])


def _plain(value: str) -> Any:
    if _NULL.fullmatch(value):
        return None
    if _BOOL.fullmatch(value):
        return value.lower() == "true"
    if _INT.fullmatch(value):
        return int(value)
    if _OCT.fullmatch(value):
        return int(value[2:], 8)
    if _HEX.fullmatch(value):
        return int(value[2:], 16)
    if _SPECIAL.fullmatch(value):
        raise FrontmatterError(f"holds {value}, which has no JSON form")
    if _FLOAT.fullmatch(value):
        number = float(value)
        if not math.isfinite(number):
            raise FrontmatterError("holds a number too large for JSON")
        return number
    return value


def _key(value: Any) -> str:
    """A mapping key as the clients' object keys spell it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (int, float, str)):
        return str(value)
    raise FrontmatterError("has a mapping key that is not a scalar")


class _Reader:
    def __init__(self) -> None:
        self.nodes = 0

    def value(self, node: yaml.Node, depth: int) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise FrontmatterError(f"nests deeper than {MAX_DEPTH} levels or is too large")
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.tag in _IMPLICIT:
                return _plain(node.value)
            return node.value
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, depth + 1) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            found: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = _key(self.value(key_node, depth + 1))
                if key in found:
                    raise FrontmatterError("repeats a key")
                found[key] = self.value(value_node, depth + 1)
            return found
        raise FrontmatterError("holds a node of an unknown kind")


# Tags the 1.1 resolver gives plain scalars on its own (an explicit tag such as ``!!str``
# keeps the scalar's text).
_IMPLICIT = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("null", "bool", "int", "float", "str", "timestamp", "value", "merge", "yaml")
)


def yaml_core_frontmatter(block: str) -> dict[str, Any]:
    """The frontmatter mapping of ``block`` (FrontmatterError when it is not a YAML mapping
    with a JSON form)."""
    if not block.strip() or all(
        not line.strip() or line.lstrip().startswith("#") for line in block.split("\n")
    ):
        return {}
    try:
        node = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise FrontmatterError(f"is not valid YAML{where}") from None
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise FrontmatterError("is not a YAML mapping of fields")
    value = _Reader().value(node, 0)
    assert isinstance(value, dict)
    return value
