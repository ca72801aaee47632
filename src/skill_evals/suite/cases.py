"""The case model and a case file's loading (docs/cases.md): each raw case object (read by
case_objects.py, JSONL or YAML) validated field by field — including the Agent Skill Evals
``should`` shape —, duplicate ids refused, and prompts grouped into independent units."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checks import Task, parse_task
from ..errors import InvalidInput
from .case_objects import (
    CaseChecker,
    Path_,
    jsonl_case_objects,
    safe_key,
    yaml_case_objects,
)
from .jsonl import read_regular_file
from .nfkc import nfkc

MIN_UNITS = 10
# Where a skill's cases file is looked for when none is named: the first that exists.
DEFAULT_CASES_FILES = ("evals/cases.jsonl", "evals/cases.yaml", "cases.jsonl")
MAX_ID_CHARS = 200

CASE_FIELDS = (
    "id", "prompt", "expectTrigger", "task", "loaded", "tags", "fixture", "setup", "source",
)  # fmt: skip
YAML_ONLY_FIELDS = ("should",)


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
    source: str | None = None  # where the case came from ("drafted"); never scored


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


def _dedupe(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _should_lists(value: object, checker: CaseChecker) -> tuple[list[str], list[str], bool]:
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
                f"unsupported assertion {safe_key(key)}; only skill.loaded is understood",
            )
        at = (*at, key)
        if not isinstance(body, dict):
            raise checker.wrong_type(at, "an object with should_include / should_exclude", body)
        checker.keys(body, at, ("should_include", "should_exclude"))
        include += checker.names(body, "should_include", at)
        exclude += checker.names(body, "should_exclude", at)
    return include, exclude, bool(include)


def _parse_case(
    raw: dict[str, Any], line: int, checker: CaseChecker, skill_name: str, units: dict[str, int]
) -> Case:
    """One raw case validated field by field, in the order its errors are reported; its unit
    is the one of an earlier case with the same normalised prompt, else the next (``units``)."""
    allowed = CASE_FIELDS + (YAML_ONLY_FIELDS if checker.fmt == "yaml" else ())
    checker.keys(raw, (), allowed)
    case_id = parse_case_id(raw, checker)
    prompt, unit_key = parse_prompt(raw, checker)
    given = _given_expect(raw, checker)
    task = parse_task(raw.get("task"), checker)
    fixture = checker.fixture(raw.get("fixture"))
    setup = checker.setup(raw.get("setup"))
    include, exclude = _loaded_lists(raw.get("loaded"), checker, skill_name)
    expect = given
    if raw.get("should") is not None:
        expect = _apply_should(raw["should"], checker, skill_name, given, include, exclude)
    if expect is None:
        raise checker.fail((), 'missing required field "expectTrigger" (true or false)')
    if expect and skill_name in exclude:
        raise checker.fail(
            ("loaded", "exclude"), "excludes the skill under test but expectTrigger is true"
        )
    both = set(include) & set(exclude)
    if both:
        raise checker.fail(
            ("loaded",), f"{safe_key(sorted(both)[0])} is both required and forbidden"
        )
    tags: list[str] = []
    if raw.get("tags") is not None:
        tags = checker.string_list(raw["tags"], ("tags",), non_empty_items=False)
    source = raw.get("source")
    if source is not None and not isinstance(source, str):
        raise checker.wrong_type(("source",), "a string", source)
    return Case(
        id=case_id,
        prompt=prompt,
        expect_trigger=expect,
        line=line,
        unit=units.setdefault(unit_key, len(units)),
        task=task,
        include=_dedupe(include),
        exclude=_dedupe(exclude),
        tags=tuple(tags),
        fixture=fixture,
        setup=setup,
        source=source,
    )


def parse_case_id(raw: dict[str, Any], checker: CaseChecker) -> str:
    """``id``: 1-200 characters, none of them a control character."""
    if "id" not in raw:
        raise checker.fail((), 'missing required field "id"')
    case_id = raw["id"]
    if not isinstance(case_id, str):
        raise checker.wrong_type(("id",), "a string", case_id)
    if not 1 <= len(case_id) <= MAX_ID_CHARS:
        raise checker.fail(("id",), f"must be 1-{MAX_ID_CHARS} characters (has {len(case_id)})")
    # isprintable() is False for every Cc character: one C-level test clears nearly every id.
    if not case_id.isprintable() and any(unicodedata.category(ch) == "Cc" for ch in case_id):
        # Ids end up in JUnit names and CI annotations, where a newline could inject lines.
        raise checker.fail(("id",), "must not contain control characters (newline, tab, ...)")
    return case_id


def parse_prompt(raw: dict[str, Any], checker: CaseChecker) -> tuple[str, str]:
    """``prompt`` and its normalised form (the unit key), which must not be empty."""
    if "prompt" not in raw:
        raise checker.fail((), 'missing required field "prompt"')
    prompt = raw["prompt"]
    if not isinstance(prompt, str):
        raise checker.wrong_type(("prompt",), "a string", prompt)
    unit_key = normalize_prompt(prompt)
    if not unit_key:
        raise checker.fail(("prompt",), "must not be empty or whitespace only")
    return prompt, unit_key


def _given_expect(raw: dict[str, Any], checker: CaseChecker) -> bool | None:
    """``expectTrigger`` when given (a boolean), else None."""
    given = raw.get("expectTrigger")
    if "expectTrigger" in raw and not isinstance(given, bool):
        hint = ""
        if checker.fmt == "yaml" and isinstance(given, str):
            hint = " (YAML 1.1 words such as yes/no/on/off are strings here)"
        raise checker.wrong_type(("expectTrigger",), f"true or false{hint}", given)
    return given if isinstance(given, bool) else None


def _loaded_lists(
    loaded: object, checker: CaseChecker, skill_name: str
) -> tuple[list[str], list[str]]:
    """``loaded``'s include and exclude lists (empty without it); include may not name the
    skill under test."""
    include: list[str] = []
    exclude: list[str] = []
    if loaded is None:
        return include, exclude
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
    return include, exclude


def _apply_should(
    should: object,
    checker: CaseChecker,
    skill_name: str,
    expect: bool | None,
    include: list[str],
    exclude: list[str],
) -> bool | None:
    """The expectTrigger that ``should`` means (agreeing with a given one); the other skills it
    names are added to ``include`` and ``exclude``."""
    s_include, s_exclude, include_listed = _should_lists(should, checker)
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
            f"{safe_key(skill_name)} and expectTrigger is not set; name it in one of "
            "the lists or set expectTrigger",
        )
    if derived is not None and expect is not None and derived != expect:
        raise checker.fail(
            ("expectTrigger",),
            f"contradicts should (which means expectTrigger: {str(derived).lower()} for "
            f"{safe_key(skill_name)})",
        )
    include += [n for n in s_include if n != skill_name]
    exclude += [n for n in s_exclude if n != skill_name]
    return derived if expect is None else expect


def _jsonl_cases(data: bytes, path: Path, skill_name: str, units: dict[str, int]) -> Iterator[Case]:
    for raw, line, checker in jsonl_case_objects(data, path):
        yield _parse_case(raw, line, checker, skill_name, units)


def _yaml_cases(data: bytes, path: Path, skill_name: str, units: dict[str, int]) -> Iterator[Case]:
    for raw, line, checker in yaml_case_objects(data, path):
        yield _parse_case(raw, line, checker, skill_name, units)


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
    units: dict[str, int] = {}  # normalised prompt → unit, numbered in order of first case
    if suffix == ".jsonl":
        parsed = _jsonl_cases(data, path, skill_name, units)
    else:
        parsed = _yaml_cases(data, path, skill_name, units)
    first_line: dict[str, int] = {}
    cases: list[Case] = []
    for case in parsed:
        if case.id in first_line:
            raise InvalidInput(
                f"{path}:{case.line}: field id: duplicate id {safe_key(case.id)} "
                f"(first used on line {first_line[case.id]}); ids must be unique"
            )
        first_line[case.id] = case.line
        cases.append(case)
    return CaseSuite(path=path, sha256=digest, cases=tuple(cases), unit_count=len(units))
