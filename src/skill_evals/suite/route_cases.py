"""Routing cases (docs/routing.md): ``{"id", "prompt", "expect": [skill names], "tags"}`` per
JSONL line, or the same objects under ``cases:`` in YAML.

The file rules are those of the case files of ``test`` (strict JSON/YAML, 50 MB, 4 MiB records,
at most 10,000 cases, errors ``FILE:LINE: field …`` that never quote the prompt); the readers
are shared with cases.py. Every ``expect`` name must be a catalog skill.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .case_objects import CaseChecker, jsonl_case_objects, yaml_case_objects
from .cases import Case, CaseSuite, parse_case_id, parse_prompt
from .catalog import Catalog, catalog_dirs, load_catalog
from .jsonl import read_regular_file

ROUTE_FIELDS = ("id", "prompt", "expect", "tags")
_SHOWN_NAMES = 10  # catalog names listed in an "unknown skill" error


@dataclass(frozen=True)
class RouteCase:
    """One routing case: the skills that should load for ``prompt`` (empty: none should)."""

    id: str
    prompt: str
    expect: tuple[str, ...]  # in the order written, no duplicates
    line: int
    unit: int
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RouteSuite:
    """All routing cases of one file, in file order."""

    path: Path
    sha256: str
    cases: tuple[RouteCase, ...]
    unit_count: int

    def engine_suite(self) -> CaseSuite:
        """The cases as the scheduler and the record readers know them (ids, prompts, lines):
        a routing case "expects a trigger" when it expects any skill."""
        cases = tuple(
            Case(
                id=c.id,
                prompt=c.prompt,
                expect_trigger=bool(c.expect),
                line=c.line,
                unit=c.unit,
                tags=c.tags,
            )
            for c in self.cases
        )
        return CaseSuite(self.path, self.sha256, cases, self.unit_count)


def _names_hint(catalog: Sequence[str]) -> str:
    shown = ", ".join(catalog[:_SHOWN_NAMES])
    more = f" and {len(catalog) - _SHOWN_NAMES} more" if len(catalog) > _SHOWN_NAMES else ""
    return f"the catalog has {shown}{more}"


def _parse(raw: dict[str, Any], checker: CaseChecker, catalog: Sequence[str]) -> dict[str, Any]:
    """Validate one raw routing case; returns its fields (errors name file, line and field)."""
    checker.keys(raw, (), ROUTE_FIELDS)
    case_id = parse_case_id(raw, checker)
    prompt, unit_key = parse_prompt(raw, checker)
    if "expect" not in raw:
        raise checker.fail(
            (), 'missing required field "expect" (the skills that should load; [] for none)'
        )
    expect = checker.string_list(raw["expect"], ("expect",), non_empty_items=True)
    known = set(catalog)
    seen: set[str] = set()
    for index, name in enumerate(expect):
        if name not in known:
            shown = name if len(name) <= 64 else name[:61] + "..."
            raise checker.fail(
                ("expect", index),
                f"{shown!r} is not a catalog skill ({_names_hint(catalog)}); add the skill to "
                "the catalog or fix the name",
            )
        if name in seen:
            raise checker.fail(("expect", index), f"{name!r} is listed twice")
        seen.add(name)
    tags: list[str] = []
    if raw.get("tags") is not None:
        tags = checker.string_list(raw["tags"], ("tags",), non_empty_items=False)
    return {
        "id": case_id,
        "prompt": prompt,
        "unit_key": unit_key,
        "expect": tuple(expect),
        "tags": tuple(tags),
    }


def load_route_cases(path: Path, catalog: Sequence[str]) -> RouteSuite:
    """Load a ``.jsonl``/``.yaml``/``.yml`` routing case file against the catalog's names.

    InvalidInput (exit 5) naming file, line and field. The 10-unit minimum is the caller's
    (exit 6 comes after every exit-5 check)."""
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".yaml", ".yml"):
        raise InvalidInput(f"{path}: --cases must be a .jsonl, .yaml or .yml file")
    data = read_regular_file(path, "cases file")
    digest = hashlib.sha256(data).hexdigest()
    objects = (
        jsonl_case_objects(data, path) if suffix == ".jsonl" else yaml_case_objects(data, path)
    )
    first_line: dict[str, int] = {}
    units: dict[str, int] = {}
    cases: list[RouteCase] = []
    for raw, line, checker in objects:
        fields = _parse(raw, checker, catalog)
        case_id = fields["id"]
        if case_id in first_line:
            raise InvalidInput(
                f"{path}:{line}: field id: duplicate id {case_id!r} (first used on line "
                f"{first_line[case_id]}); ids must be unique"
            )
        first_line[case_id] = line
        unit = units.setdefault(fields["unit_key"], len(units))
        cases.append(
            RouteCase(
                id=case_id,
                prompt=fields["prompt"],
                expect=fields["expect"],
                line=line,
                unit=unit,
                tags=fields["tags"],
            )
        )
    return RouteSuite(path=path, sha256=digest, cases=tuple(cases), unit_count=len(units))


def load_route_catalog(
    skills: Sequence[Path], globs: Sequence[str], cwd: Path | None = None
) -> Catalog:
    """The catalog given by --skill or --catalog (exactly one of the two); globs start at
    ``cwd`` (default: the working directory)."""
    if skills and globs:
        raise InvalidInput(
            "give the catalog with --skill DIR... or with --catalog GLOB..., not both"
        )
    if globs:
        return load_catalog(catalog_dirs(globs, cwd if cwd is not None else Path.cwd()))
    return load_catalog(skills)
