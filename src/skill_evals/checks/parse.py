"""Validating a case's ``task`` when the cases file loads: every check name, field and value,
so that a bad check is an input error (exit 5) naming file, line and field, never a surprise
after the agent has run.
"""

from __future__ import annotations

import re
from typing import Any

from .judge_parse import JUDGE_FIELDS, PAIRWISE_FIELDS, parse_judge, parse_pairwise
from .model import (
    BUDGETS,
    CHECK_NAMES,
    Budget,
    ChangesWithin,
    Check,
    Command,
    ExitCode,
    FileAbsent,
    FileContains,
    FileExists,
    FileMatches,
    IncludesAll,
    JsonEquals,
    JsonFileEquals,
    OutputMatches,
    Task,
    ToolCalled,
    ToolNotCalled,
    Unchanged,
)
from .reporting import Reporter, Where

MAX_SAFE_INTEGER = 9_007_199_254_740_991
MAX_PATTERN_CHARS = 1000
MAX_PATH_CHARS = 1000
MAX_CHECKS = 100  # per task: records carry one boolean per check
MAX_TIMEOUT_MS = 600_000
FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


# The fields each check takes besides "check" (the first ones listed are required).
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "exit_code": (("expected",), ()),
    "includes_all": (("expected",), ()),
    "json_equals": (("expected",), ()),
    "output_matches": (("pattern",), ("flags",)),
    "file_exists": (("path",), ()),
    "file_absent": (("path",), ()),
    "file_contains": (("path", "text"), ()),
    "file_matches": (("path", "pattern"), ("flags",)),
    "json_file_equals": (("path", "expected"), ()),
    "changes_within": (("paths",), ()),
    "unchanged": (("paths",), ()),
    "command": (("run",), ("timeoutMs", "expectExit")),
    "tool_called": (("tool",), ("input", "min", "max")),
    "tool_not_called": (("tool",), ("input",)),
    **{name: (("value",), ()) for name in BUDGETS},
    "judge": JUDGE_FIELDS,
    "judge_pairwise": PAIRWISE_FIELDS,
}


def parse_task(value: object, report: Reporter) -> Task | None:
    """The case's ``task``: one check object or a non-empty list of them (None when absent)."""
    where: Where = ("task",)
    if value is None:
        return None
    if isinstance(value, dict):
        return Task((parse_check(value, where, report),))
    if not isinstance(value, list):
        raise report.wrong_type(
            where, 'an object {"check": ...} or an array of such objects', value
        )
    if not value:
        raise report.fail(where, "must list at least one check")
    if len(value) > MAX_CHECKS:
        raise report.fail(where, f"at most {MAX_CHECKS} checks per task (has {len(value)})")
    checks = []
    for index, item in enumerate(value):
        at: Where = (*where, index)
        if not isinstance(item, dict):
            raise report.wrong_type(at, 'an object {"check": ...}', item)
        checks.append(parse_check(item, at, report))
    return Task(tuple(checks))


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def parse_check(raw: dict[str, Any], where: Where, report: Reporter) -> Check:
    """One check object, fully validated."""
    if "check" not in raw:
        raise report.fail(where, f'missing "check" (one of {", ".join(CHECK_NAMES)})')
    name = raw["check"]
    if not isinstance(name, str) or name not in CHECK_NAMES:
        shown = _shown(name) if isinstance(name, str) else "a non-string"
        raise report.fail(
            (*where, "check"), f"unknown check {shown}; must be one of {', '.join(CHECK_NAMES)}"
        )
    required, optional = FIELDS[name]
    report.keys(raw, where, ("check", *required, *optional))
    for field in required:
        if field not in raw:
            raise report.fail(where, f'missing "{field}" (needed by {name})')
    if name == "judge":
        return parse_judge(raw, where, report)
    if name == "judge_pairwise":
        return parse_pairwise(raw, where, report)
    fields = _Fields(raw, where, report)
    if name == "exit_code":
        return ExitCode(fields.integer("expected"))
    if name == "includes_all":
        return IncludesAll(fields.strings("expected", single=False))
    if name == "json_equals":
        return JsonEquals(fields.json_value("expected"))
    if name == "output_matches":
        flags = fields.flags()
        return OutputMatches(fields.pattern(flags), flags)
    if name in ("file_exists", "file_absent"):
        return (FileExists if name == "file_exists" else FileAbsent)(fields.path("path"))
    if name == "file_contains":
        return FileContains(fields.path("path"), fields.strings("text", single=True))
    if name == "file_matches":
        flags = fields.flags()
        return FileMatches(fields.path("path"), fields.pattern(flags), flags)
    if name == "json_file_equals":
        return JsonFileEquals(fields.path("path"), fields.json_value("expected"))
    if name in ("changes_within", "unchanged"):
        return (ChangesWithin if name == "changes_within" else Unchanged)(fields.paths())
    if name == "command":
        return Command(
            fields.argv("run"),
            fields.integer("timeoutMs", 60_000, low=1, high=MAX_TIMEOUT_MS),
            fields.integer("expectExit", 0),
        )
    if name == "tool_called":
        tool, tool_input = fields.tool()
        low = fields.integer("min", 1, low=0)
        high = fields.optional_integer("max", low=0)
        if high is not None and high < low:
            raise report.fail((*where, "max"), f"must be at least min ({low})")
        if low == 0 and high is None:
            raise report.fail(where, "min 0 without max always passes; set max, or min ≥ 1")
        return ToolCalled(tool, tool_input, low, high)
    if name == "tool_not_called":
        tool, tool_input = fields.tool()
        return ToolNotCalled(tool, tool_input)
    return Budget(name, fields.budget(name))


class _Fields:
    """Typed access to one check's fields, each error naming the field."""

    def __init__(self, raw: dict[str, Any], where: Where, report: Reporter) -> None:
        self.raw = raw
        self.where = where
        self.report = report

    def at(self, field: str, *more: object) -> Where:
        return (*self.where, field, *more)

    def integer(
        self,
        field: str,
        default: int | None = None,
        low: int | None = None,
        high: int | None = None,
    ) -> int:
        if field not in self.raw and default is not None:
            return default
        value = self.raw[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.report.wrong_type(self.at(field), "an integer", value)
        if abs(value) > MAX_SAFE_INTEGER:  # the readers reject these first
            raise self.report.fail(self.at(field), "integer outside ±9007199254740991")
        if low is not None and value < low:
            raise self.report.fail(self.at(field), f"must be at least {low}")
        if high is not None and value > high:
            raise self.report.fail(self.at(field), f"must be at most {high}")
        return value

    def optional_integer(self, field: str, low: int) -> int | None:
        if self.raw.get(field) is None:
            return None
        return self.integer(field, low=low)

    def strings(self, field: str, *, single: bool) -> tuple[str, ...]:
        value = self.raw[field]
        if single and isinstance(value, str):
            if not value:
                raise self.report.fail(self.at(field), "must not be an empty string")
            return (value,)
        if not isinstance(value, list):
            expected = "a string or an array of strings" if single else "an array of strings"
            raise self.report.wrong_type(self.at(field), expected, value)
        if not value:
            raise self.report.fail(self.at(field), "must list at least one string")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.report.wrong_type(self.at(field, index), "a string", item)
            if not item:
                raise self.report.fail(self.at(field, index), "must not be an empty string")
        return tuple(value)

    def json_value(self, field: str) -> object:
        value = self.raw[field]
        stack: list[tuple[object, Where]] = [(value, self.at(field))]
        while stack:
            current, at = stack.pop()
            if isinstance(current, bool) or current is None or isinstance(current, str):
                continue
            if isinstance(current, int):
                if abs(current) > MAX_SAFE_INTEGER:
                    raise self.report.fail(at, "integer outside ±9007199254740991")
            elif isinstance(current, float):
                if current != current or current in (float("inf"), float("-inf")):
                    raise self.report.fail(at, "NaN and infinity are not JSON values")
            elif isinstance(current, list):
                stack.extend((item, (*at, i)) for i, item in enumerate(current))
            elif isinstance(current, dict):
                stack.extend((item, (*at, key)) for key, item in current.items())
            else:
                raise self.report.fail(at, "is not a JSON value")
        return value

    def flags(self) -> str:
        value = self.raw.get("flags")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.report.wrong_type(self.at("flags"), 'a string of letters from "imsx"', value)
        for char in value:
            if char not in FLAGS or value.count(char) > 1:
                raise self.report.fail(
                    self.at("flags"), 'must be letters from "imsx", each at most once'
                )
        return value

    def pattern(self, flags: str) -> str:
        value = self.raw["pattern"]
        if not isinstance(value, str):
            raise self.report.wrong_type(self.at("pattern"), "a string", value)
        if not value:
            raise self.report.fail(self.at("pattern"), "must not be empty (it would always match)")
        if len(value) > MAX_PATTERN_CHARS:
            raise self.report.fail(
                self.at("pattern"),
                f"at most {MAX_PATTERN_CHARS} characters (has {len(value)})",
            )
        try:
            re.compile(value, compile_flags(flags))
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise self.report.fail(
                self.at("pattern"), f"invalid regular expression: {exc.msg}{where}"
            ) from None
        except (RecursionError, OverflowError, MemoryError):
            raise self.report.fail(self.at("pattern"), "regular expression too complex") from None
        return value

    def path(self, field: str) -> str:
        return self._path(self.raw[field], self.at(field), directory_ok=False)

    def _path(self, value: object, at: Where, *, directory_ok: bool) -> str:
        if not isinstance(value, str):
            raise self.report.wrong_type(at, "a relative path (a string)", value)
        problem = path_problem(value, directory_ok=directory_ok)
        if problem is not None:
            raise self.report.fail(at, problem)
        return value

    def paths(self) -> tuple[str, ...]:
        value = self.raw["paths"]
        if not isinstance(value, list):
            raise self.report.wrong_type(self.at("paths"), "an array of relative paths", value)
        if not value:
            raise self.report.fail(self.at("paths"), "must list at least one path")
        return tuple(
            self._path(item, self.at("paths", index), directory_ok=True)
            for index, item in enumerate(value)
        )

    def argv(self, field: str) -> tuple[str, ...]:
        value = self.raw[field]
        if not isinstance(value, list):
            raise self.report.wrong_type(
                self.at(field), 'an array of strings (argv, e.g. ["python3", "-c", "..."])', value
            )
        if not value:
            raise self.report.fail(self.at(field), "must name a program")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.report.wrong_type(self.at(field, index), "a string", item)
            if "\0" in item:
                raise self.report.fail(self.at(field, index), "must not contain a NUL character")
        if not value[0]:
            raise self.report.fail(self.at(field, 0), "the program must not be empty")
        return tuple(value)

    def tool(self) -> tuple[str, dict[str, object] | None]:
        tool = self.raw["tool"]
        if not isinstance(tool, str) or not tool:
            raise self.report.wrong_type(self.at("tool"), "a tool name (a non-empty string)", tool)
        tool_input = self.raw.get("input")
        if tool_input is None:
            return tool, None
        if not isinstance(tool_input, dict):
            raise self.report.wrong_type(self.at("input"), "an object", tool_input)
        self.json_value("input")
        return tool, tool_input

    def budget(self, name: str) -> float:
        value = self.raw["value"]
        whole = name in ("max_turns", "max_tokens")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.report.wrong_type(
                self.at("value"), "a positive integer" if whole else "a positive number", value
            )
        if whole and not isinstance(value, int):
            raise self.report.wrong_type(self.at("value"), "a positive integer", value)
        if not value > 0 or value != value or value == float("inf"):
            raise self.report.fail(self.at("value"), "must be greater than 0")
        return value


def compile_flags(flags: str) -> int:
    """The ``re`` flags of a check's ``flags`` letters."""
    result = 0
    for char in flags:
        result |= FLAGS[char]
    return result


def path_problem(path: str, *, directory_ok: bool = False) -> str | None:
    """Why ``path`` is not a workspace path (relative, ``/``-separated, no ``..``), or None.

    With ``directory_ok`` a trailing ``/`` marks a directory (``changes_within``/``unchanged``)."""
    if not path:
        return "must not be empty"
    if len(path) > MAX_PATH_CHARS:
        return f"at most {MAX_PATH_CHARS} characters"
    if "\0" in path:
        return "must not contain a NUL character"
    if path.startswith("/"):
        return "must be relative to the workspace (no leading /)"
    if "\\" in path:
        return "use / to separate directories (no backslash)"
    body = path[:-1] if directory_ok and path.endswith("/") else path
    if path.endswith("/") and not directory_ok:
        return "must name a file, not a directory (no trailing /)"
    for segment in body.split("/"):
        if segment == "..":
            return "must not contain a .. segment (it would leave the workspace)"
        if segment in ("", "."):
            return "must not contain empty or . segments (write a/b, not a//b or ./a)"
    return None
