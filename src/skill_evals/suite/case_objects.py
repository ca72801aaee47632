"""The raw case objects of a case file — JSONL lines or the items of a YAML ``{cases: [...]}``
document — each with its line and a :class:`CaseChecker` that validates fields and reports
``FILE:LINE: field: reason`` (docs/cases.md). Shared by the skill cases (cases.py) and the
routing cases (route/cases.py); neither prompt nor value ever appears in a message."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from ..errors import InvalidInput
from .fixtures import fixture_problem
from .jsonl import iter_jsonl
from .yamldoc import CoreSchemaLoader, YamlValueError, core_scalar, load_yaml, yaml_error_message

MAX_CASES = 10_000
MAX_SETUP_COMMANDS = 100

# ------------------------------------------------------------------------------- validation

Path_ = tuple[object, ...]  # a location inside one case: ("task", "expected", 2)
Locate = Callable[[Path_], int]


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def field_name(where: Path_) -> str:
    out = ""
    for part in where:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = str(part) if len(str(part)) <= 60 else safe_key(str(part))
            out += f".{name}" if out else name
    return out


def safe_key(key: str) -> str:
    """A key for an error message: JSON-quoted and cut short (keys are not prompts)."""
    return json.dumps(key if len(key) <= 60 else key[:57] + "...", ensure_ascii=True)


class CaseChecker:
    """Validates one raw case object and reports errors as FILE:LINE: field: reason."""

    def __init__(self, path: Path, locate: Locate, fmt: Literal["jsonl", "yaml"]) -> None:
        self.path = path
        self.locate = locate
        self.fmt = fmt

    def fail(self, where: Path_, reason: str) -> InvalidInput:
        line = self.locate(where)
        if where:
            return InvalidInput(f"{self.path}:{line}: field {field_name(where)}: {reason}")
        return InvalidInput(f"{self.path}:{line}: {reason}")

    def wrong_type(self, where: Path_, expected: str, value: object) -> InvalidInput:
        return self.fail(where, f"must be {expected}, got {type_name(value)}")

    def keys(self, obj: dict[str, Any], where: Path_, allowed: Sequence[str]) -> None:
        for key in obj:
            if key not in allowed:
                raise self.fail(
                    (*where, key) if where else (key,),
                    f"unknown field {safe_key(key)}; allowed: {', '.join(allowed)}",
                )

    def string_list(self, value: object, where: Path_, *, non_empty_items: bool) -> list[str]:
        if not isinstance(value, list):
            raise self.wrong_type(where, "an array of strings", value)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.wrong_type((*where, i), "a string", item)
            if non_empty_items and not item:
                raise self.fail((*where, i), "must not be an empty string")
        return cast("list[str]", value)

    def fixture(self, value: object) -> Path | None:
        if value is None:
            return None
        where: Path_ = ("fixture",)
        if not isinstance(value, str):
            raise self.wrong_type(where, "a directory relative to the cases file", value)
        base = self.path.parent.resolve()
        problem = fixture_problem(base, value)
        if problem is not None:
            raise self.fail(where, problem)
        return base / value.rstrip("/")

    def setup(self, value: object) -> tuple[tuple[str, ...], ...]:
        where: Path_ = ("setup",)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.wrong_type(
                where, 'an array of commands, each an argv array such as ["git", "init"]', value
            )
        if len(value) > MAX_SETUP_COMMANDS:
            raise self.fail(where, f"at most {MAX_SETUP_COMMANDS} commands")
        commands = []
        for index, argv in enumerate(value):
            at: Path_ = (*where, index)
            if not isinstance(argv, list):
                raise self.wrong_type(at, 'an argv array such as ["git", "init"]', argv)
            if not argv:
                raise self.fail(at, "must name a program")
            for part, item in enumerate(argv):
                if not isinstance(item, str):
                    raise self.wrong_type((*at, part), "a string", item)
                if "\0" in item:
                    raise self.fail((*at, part), "must not contain a NUL character")
            if not argv[0]:
                raise self.fail((*at, 0), "the program must not be empty")
            commands.append(tuple(argv))
        return tuple(commands)

    def names(self, obj: dict[str, Any], key: str, where: Path_) -> list[str]:
        if key not in obj or obj[key] is None:
            return []
        return self.string_list(obj[key], (*where, key), non_empty_items=True)


def jsonl_case_objects(
    data: bytes, path: Path
) -> Iterator[tuple[dict[str, Any], int, CaseChecker]]:
    """Each raw case object of a JSONL case file with its line and a checker that reports
    ``FILE:LINE: field …`` errors (shared with the routing cases, route/cases.py)."""
    for record in iter_jsonl([data], path, max_records=MAX_CASES):
        line = record.line

        def locate(_where: Path_, line: int = line) -> int:
            return line  # a JSONL case is one line: every field is on it

        yield record.value, line, CaseChecker(path, locate, "jsonl")


def yaml_case_objects(data: bytes, path: Path) -> Iterator[tuple[dict[str, Any], int, CaseChecker]]:
    """Each raw case object of a YAML ``{cases: [...]}`` file with its line and checker (YAML
    1.2 core schema, JSON's limits, errors naming the YAML line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{path}:{bad_line}: invalid UTF-8") from None
    text = text.removeprefix("\ufeff")
    lines: dict[Path_, int] = {}
    try:
        doc = load_yaml(text, CoreSchemaLoader, core_scalar, lines)
    except yaml.YAMLError as exc:
        problem, at = yaml_error_message(exc, text=text)
        raise InvalidInput(f"{path}:{at or 1}: invalid YAML: {problem}") from None
    except YamlValueError as exc:
        raise InvalidInput(f"{path}:{exc.line}: {exc}") from None
    if doc is None:
        raise InvalidInput(f"{path}:1: empty YAML file; expected a mapping with a 'cases' list")
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}:1: the top level must be a mapping with a 'cases' list")
    for key in doc:
        if key != "cases":
            raise InvalidInput(
                f"{path}:{lines.get((key,), 1)}: unknown top-level field {safe_key(key)}; "
                "the file must be {cases: [...]}"
            )
    if "cases" not in doc:
        raise InvalidInput(f"{path}:1: missing 'cases' (a list of cases)")
    items = doc["cases"]
    if not isinstance(items, list):
        raise InvalidInput(f"{path}:{lines[('cases',)]}: 'cases' must be a list of cases")

    for index, raw in enumerate(items):
        base: Path_ = ("cases", index)
        item_line = lines.get(base, lines[("cases",)])
        if index >= MAX_CASES:
            raise InvalidInput(
                f"{path}:{item_line}: more than {MAX_CASES} cases; reading stopped here "
                "(population bound)"
            )
        if not isinstance(raw, dict):
            raise InvalidInput(f"{path}:{item_line}: each case must be a mapping")

        def locate(where: Path_, base: Path_ = base, line: int = item_line) -> int:
            full = base + where
            while len(full) > len(base):
                if full in lines:
                    return lines[full]
                full = full[:-1]
            return line

        yield cast("dict[str, Any]", raw), item_line, CaseChecker(path, locate, "yaml")
