"""Case model, JSONL/YAML loading (incl. the Agent Skill Evals shape) and units (docs/cases.md).

Owner: inputs.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from .checks import Task, parse_task
from .errors import InvalidInput
from .jsonl import MAX_SAFE_INTEGER, iter_jsonl, read_regular_file
from .nfkc import nfkc
from .workspace import fixture_problem
from .yamldoc import YamlValueError, load_yaml, yaml_error_message

MAX_CASES = 10_000
MIN_UNITS = 10
# Where a skill's cases file is looked for when none is named: the first that exists.
DEFAULT_CASES_FILES = ("evals/cases.jsonl", "evals/cases.yaml", "cases.jsonl")
MAX_ID_CHARS = 200

CASE_FIELDS = ("id", "prompt", "expectTrigger", "task", "loaded", "tags", "fixture", "setup")
YAML_ONLY_FIELDS = ("should",)
MAX_SETUP_COMMANDS = 100


@dataclass(frozen=True)
class Case:
    """One labelled prompt. ``line`` is the 1-based line in the cases file (YAML: the item's line).
    ``unit`` is the 0-based index of its unit, units numbered in order of first case."""

    id: str
    prompt: str
    expect_trigger: bool
    line: int
    unit: int
    task: Task | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    fixture: Path | None = None  # absolute; copied into each invocation's workspace
    setup: tuple[tuple[str, ...], ...] = ()  # argv of each setup command


@dataclass(frozen=True)
class CaseSuite:
    """All cases of one file, in file order."""

    path: Path
    sha256: str  # of the file's bytes
    cases: tuple[Case, ...]
    unit_count: int

    @property
    def with_task(self) -> int:
        """How many cases have a task check."""
        return sum(1 for c in self.cases if c.task is not None)

    def by_id(self) -> dict[str, Case]:
        """Cases keyed by id."""
        return {c.id: c for c in self.cases}


# ------------------------------------------------------------------------------------ units


def normalize_prompt(prompt: str) -> str:
    """NFKC, CRLF/CR → LF, trailing spaces/tabs removed per line, whole string stripped.

    Linear in the prompt's length: no regular expression (``[ \t]+$`` retries every blank of
    a long run), and an NFKC that does not sort long runs of combining marks quadratically."""
    text = nfkc(prompt)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Lines end at "\n" only (never at U+2028 & co.), as wanted here.
    return "\n".join(line.rstrip(" \t") for line in text.split("\n")).strip()


# ------------------------------------------------------------------------------- validation

Path_ = tuple[object, ...]  # a location inside one case: ("task", "expected", 2)
Locate = Callable[[Path_], int]


def _type_name(value: object) -> str:
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


def _field_name(where: Path_) -> str:
    out = ""
    for part in where:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = str(part) if len(str(part)) <= 60 else _safe_key(str(part))
            out += f".{name}" if out else name
    return out


def _safe_key(key: str) -> str:
    """A key for an error message: JSON-quoted and cut short (keys are not prompts)."""
    return json.dumps(key if len(key) <= 60 else key[:57] + "...", ensure_ascii=True)


class _CaseChecker:
    """Validates one raw case object and reports errors as FILE:LINE: field: reason."""

    def __init__(self, path: Path, locate: Locate, fmt: Literal["jsonl", "yaml"]) -> None:
        self.path = path
        self.locate = locate
        self.fmt = fmt

    def fail(self, where: Path_, reason: str) -> InvalidInput:
        line = self.locate(where)
        if where:
            return InvalidInput(f"{self.path}:{line}: field {_field_name(where)}: {reason}")
        return InvalidInput(f"{self.path}:{line}: {reason}")

    def wrong_type(self, where: Path_, expected: str, value: object) -> InvalidInput:
        return self.fail(where, f"must be {expected}, got {_type_name(value)}")

    def keys(self, obj: dict[str, Any], where: Path_, allowed: Sequence[str]) -> None:
        for key in obj:
            if key not in allowed:
                raise self.fail(
                    (*where, key) if where else (key,),
                    f"unknown field {_safe_key(key)}; allowed: {', '.join(allowed)}",
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


@dataclass
class _Draft:
    id: str
    prompt: str
    unit_key: str  # the normalised prompt: equal keys, one unit
    expect_trigger: bool
    line: int
    task: Task | None
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    tags: tuple[str, ...]
    fixture: Path | None
    setup: tuple[tuple[str, ...], ...]


def _dedupe(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _should_lists(value: object, checker: _CaseChecker) -> tuple[list[str], list[str], bool]:
    """(should_include, should_exclude, whether any should_include list was non-empty)."""
    where: Path_ = ("should",)
    if not isinstance(value, list):
        raise checker.wrong_type(where, "an array of assertions such as skill.loaded", value)
    include: list[str] = []
    exclude: list[str] = []
    for i, item in enumerate(value):
        at: Path_ = (*where, i)
        if not isinstance(item, dict) or len(item) != 1:
            raise checker.fail(at, "each entry must be a mapping with one key, skill.loaded")
        key, body = next(iter(item.items()))
        if key != "skill.loaded":
            raise checker.fail(
                (*at, key),
                f"unsupported assertion {_safe_key(key)}; only skill.loaded is understood",
            )
        at = (*at, key)
        if not isinstance(body, dict):
            raise checker.wrong_type(at, "an object with should_include / should_exclude", body)
        checker.keys(body, at, ("should_include", "should_exclude"))
        include += checker.names(body, "should_include", at)
        exclude += checker.names(body, "should_exclude", at)
    return include, exclude, bool(include)


def _parse_case(raw: dict[str, Any], line: int, checker: _CaseChecker, skill_name: str) -> _Draft:
    allowed = CASE_FIELDS + (YAML_ONLY_FIELDS if checker.fmt == "yaml" else ())
    checker.keys(raw, (), allowed)

    if "id" not in raw:
        raise checker.fail((), 'missing required field "id"')
    case_id = raw["id"]
    if not isinstance(case_id, str):
        raise checker.wrong_type(("id",), "a string", case_id)
    if not 1 <= len(case_id) <= MAX_ID_CHARS:
        raise checker.fail(("id",), f"must be 1-{MAX_ID_CHARS} characters (has {len(case_id)})")
    if any(unicodedata.category(ch) == "Cc" for ch in case_id):
        # Ids end up in JUnit names and CI annotations, where a newline could inject lines.
        raise checker.fail(("id",), "must not contain control characters (newline, tab, ...)")

    if "prompt" not in raw:
        raise checker.fail((), 'missing required field "prompt"')
    prompt = raw["prompt"]
    if not isinstance(prompt, str):
        raise checker.wrong_type(("prompt",), "a string", prompt)
    unit_key = normalize_prompt(prompt)
    if not unit_key:
        raise checker.fail(("prompt",), "must not be empty or whitespace only")

    given = raw.get("expectTrigger")
    if "expectTrigger" in raw and not isinstance(given, bool):
        hint = ""
        if checker.fmt == "yaml" and isinstance(given, str):
            hint = " (YAML 1.1 words such as yes/no/on/off are strings here)"
        raise checker.wrong_type(("expectTrigger",), f"true or false{hint}", given)

    task = parse_task(raw.get("task"), checker)
    fixture = checker.fixture(raw.get("fixture"))
    setup = checker.setup(raw.get("setup"))

    include: list[str] = []
    exclude: list[str] = []
    loaded = raw.get("loaded")
    if loaded is not None:
        if not isinstance(loaded, dict):
            raise checker.wrong_type(
                ("loaded",), 'an object {"include": [...], "exclude": [...]}', loaded
            )
        checker.keys(loaded, ("loaded",), ("include", "exclude"))
        include += checker.names(loaded, "include", ("loaded",))
        exclude += checker.names(loaded, "exclude", ("loaded",))
        if skill_name in include:
            raise checker.fail(
                ("loaded", "include"),
                "names the skill under test; the without variant never loads it, so this "
                "would always fail. Use expectTrigger: true instead",
            )

    expect: bool | None = given if isinstance(given, bool) else None
    if raw.get("should") is not None:
        s_include, s_exclude, include_listed = _should_lists(raw["should"], checker)
        in_include = skill_name in s_include
        in_exclude = skill_name in s_exclude
        if in_include and in_exclude:
            raise checker.fail(
                ("should",), "the skill under test is in both should_include and should_exclude"
            )
        derived: bool | None = None
        if in_include:
            derived = True
        elif in_exclude or include_listed:
            derived = False  # excluded, or should_include lists only other skills
        if derived is None and expect is None:
            raise checker.fail(
                ("should",),
                f"neither should_include nor should_exclude names the skill under test "
                f"{_safe_key(skill_name)} and expectTrigger is not set; name it in one of "
                "the lists or set expectTrigger",
            )
        if derived is not None and expect is not None and derived != expect:
            raise checker.fail(
                ("expectTrigger",),
                f"contradicts should (which means expectTrigger: {str(derived).lower()} for "
                f"{_safe_key(skill_name)})",
            )
        if expect is None:
            expect = derived
        include += [n for n in s_include if n != skill_name]
        exclude += [n for n in s_exclude if n != skill_name]
    if expect is None:
        raise checker.fail((), 'missing required field "expectTrigger" (true or false)')
    if expect and skill_name in exclude:
        raise checker.fail(
            ("loaded", "exclude"), "excludes the skill under test but expectTrigger is true"
        )
    both = set(include) & set(exclude)
    if both:
        raise checker.fail(
            ("loaded",), f"{_safe_key(sorted(both)[0])} is both required and forbidden"
        )

    tags: list[str] = []
    if raw.get("tags") is not None:
        tags = checker.string_list(raw["tags"], ("tags",), non_empty_items=False)

    return _Draft(
        id=case_id,
        prompt=prompt,
        unit_key=unit_key,
        expect_trigger=expect,
        line=line,
        task=task,
        include=_dedupe(include),
        exclude=_dedupe(exclude),
        tags=tuple(tags),
        fixture=fixture,
        setup=setup,
    )


# ---------------------------------------------------------------------------------- readers


# The checker the routing cases (route/cases.py) validate their own fields with.
CaseChecker = _CaseChecker


def jsonl_case_objects(
    data: bytes, path: Path
) -> Iterator[tuple[dict[str, Any], int, _CaseChecker]]:
    """Each raw case object of a JSONL case file with its line and a checker that reports
    ``FILE:LINE: field …`` errors (shared with the routing cases, route/cases.py)."""
    for record in iter_jsonl([data], path, max_records=MAX_CASES):
        line = record.line

        def locate(_where: Path_, line: int = line) -> int:
            return line  # a JSONL case is one line: every field is on it

        yield record.value, line, _CaseChecker(path, locate, "jsonl")


def _jsonl_cases(data: bytes, path: Path, skill_name: str) -> Iterator[_Draft]:
    for raw, line, checker in jsonl_case_objects(data, path):
        yield _parse_case(raw, line, checker, skill_name)


_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_TAG = "tag:yaml.org,2002:"

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreSchemaLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """YAML 1.2 core schema: only true/false are booleans, so `yes`/`on` stay strings."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


_CoreSchemaLoader.add_implicit_resolver(_TAG + "bool", _BOOL, list("tTfF"))
_CoreSchemaLoader.add_implicit_resolver(_TAG + "null", _NULL, [*"~nN", ""])
_CoreSchemaLoader.add_implicit_resolver(_TAG + "int", _INT, list("-+0123456789"))
_CoreSchemaLoader.add_implicit_resolver(_TAG + "float", _FLOAT, list("-+0123456789."))


def _node_line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _core_scalar(node: yaml.ScalarNode) -> object:
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
            raise YamlValueError("integer outside ±9007199254740991", _node_line(node))
        value = int(text, 0) if text[:2] in ("0o", "0x") else int(text, 10)
        if abs(value) > MAX_SAFE_INTEGER:
            raise YamlValueError("integer outside ±9007199254740991", _node_line(node))
        return value
    if tag == _TAG + "float" and _FLOAT.match(text):
        if "inf" in text.lower() or "nan" in text.lower():
            raise YamlValueError("NaN and infinity are not allowed", _node_line(node))
        number = float(text)
        if number in (float("inf"), float("-inf")):
            raise YamlValueError("number too large for a double", _node_line(node))
        return number
    if tag.startswith(_TAG) and tag[len(_TAG) :] in ("bool", "null", "int", "float"):
        raise YamlValueError(f"value does not match its tag !!{tag[len(_TAG) :]}", _node_line(node))
    raise YamlValueError(f"unsupported YAML tag {tag}", _node_line(node))


def _yaml_cases(data: bytes, path: Path, skill_name: str) -> Iterator[_Draft]:
    for raw, line, checker in yaml_case_objects(data, path):
        yield _parse_case(raw, line, checker, skill_name)


def yaml_case_objects(
    data: bytes, path: Path
) -> Iterator[tuple[dict[str, Any], int, _CaseChecker]]:
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
        doc = load_yaml(text, _CoreSchemaLoader, _core_scalar, lines)
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
                f"{path}:{lines.get((key,), 1)}: unknown top-level field {_safe_key(key)}; "
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

        yield cast("dict[str, Any]", raw), item_line, _CaseChecker(path, locate, "yaml")


def load_cases(path: Path, skill_name: str) -> CaseSuite:
    """Load a .jsonl/.yaml/.yml case file for the skill named ``skill_name``.

    Raises InvalidInput (exit 5) naming file, line and field. Does NOT check the 10-unit minimum
    (the caller does, so it can report exit 6 after every exit-5 check)."""
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".yaml", ".yml"):
        raise InvalidInput(f"{path}: --cases must be a .jsonl, .yaml or .yml file")
    # One read: the bytes are hashed and parsed from memory (at most 50 MB).
    data = read_regular_file(path, "cases file")
    digest = hashlib.sha256(data).hexdigest()
    if suffix == ".jsonl":
        drafts = _jsonl_cases(data, path, skill_name)
    else:
        drafts = _yaml_cases(data, path, skill_name)

    first_line: dict[str, int] = {}
    units: dict[str, int] = {}
    cases: list[Case] = []
    for draft in drafts:
        if draft.id in first_line:
            raise InvalidInput(
                f"{path}:{draft.line}: field id: duplicate id {_safe_key(draft.id)} "
                f"(first used on line {first_line[draft.id]}); ids must be unique"
            )
        first_line[draft.id] = draft.line
        unit = units.setdefault(draft.unit_key, len(units))
        cases.append(
            Case(
                id=draft.id,
                prompt=draft.prompt,
                expect_trigger=draft.expect_trigger,
                line=draft.line,
                unit=unit,
                task=draft.task,
                include=draft.include,
                exclude=draft.exclude,
                tags=draft.tags,
                fixture=draft.fixture,
                setup=draft.setup,
            )
        )
    return CaseSuite(path=path, sha256=digest, cases=tuple(cases), unit_count=len(units))
