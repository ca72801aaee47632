"""SKILL.md frontmatter: the `---` block, parsed so that every scalar stays a string
(docs/inputs.md#frontmatter)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import InvalidInput
from .yamldoc import YamlValueError, load_yaml, yaml_error_message


class _StrOnlyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Parses YAML without resolving plain scalars to bool/int/float/null/timestamp."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


def _string_scalar(node: yaml.ScalarNode) -> object:
    # Every scalar keeps its text, whatever its tag: `on`, `1.0`, `!!int 3` all stay strings.
    return str(node.value)


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(YAML block, body) when ``text`` (BOM already removed) starts with a `---` line; None
    when it does not. ValueError when the block is never closed."""
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    if first.rstrip("\r").rstrip(" \t") != "---":
        return None
    if first_end < 0:
        raise ValueError("frontmatter is not closed: no line '---' after the opening one")
    # Only a line starting with "---" can close the block: jump from one such line to the next
    # (a str.find per candidate, not a Python step per line).
    pos = first_end + 1
    while True:
        if not text.startswith("---", pos):
            found = text.find("\n---", pos)
            if found < 0:
                break
            pos = found + 1
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
    split = split_frontmatter(text)
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


def decode_skill_md(md: Path, data: bytes) -> str:
    """The text of SKILL.md's bytes; InvalidInput (exit 5) naming the line when it is not
    UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{md}:{line}: invalid UTF-8; save SKILL.md as UTF-8") from None


def name_and_description(front: dict[str, object], dir_name: str) -> tuple[str, str]:
    """The skill's name (the directory's when the frontmatter has none) and its description
    ("" when not a string), for loading; validation reports what is wrong with them."""
    name = front.get("name")
    description = front.get("description")
    return (
        name if isinstance(name, str) and name else dir_name,
        description if isinstance(description, str) else "",
    )
