"""The documentation stands alone: every link points to a file of the repository, nothing user
facing cites a document users do not have, and the reference pages name every config key,
report field, case field and task check the code knows."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.schemas import load_schema
from skill_evals.suite.cases import CASE_FIELDS, YAML_ONLY_FIELDS
from tests.conftest import REPO

DOCS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_to_a_file(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.relative_to(REPO)}: link to missing {target}"


def user_facing_files() -> Iterator[Path]:
    yield from DOCS
    yield from (REPO / "src").rglob("*.py")
    yield from (REPO / "src").rglob("*.json")
    yield from (REPO / "examples").rglob("*")
    yield from (REPO / "benchmarks").rglob("*.py")
    yield from (REPO / ".github").rglob("*.yml")
    yield REPO / "action.yml"
    yield REPO / "entrypoint.sh"


def test_no_user_facing_file_cites_an_internal_spec() -> None:
    cited = []
    for path in user_facing_files():
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"SPEC\b|§\s?\d", text):
            line = text.count("\n", 0, match.start()) + 1
            cited.append(f"{path.relative_to(REPO)}:{line}")
    assert not cited, "references to a document users cannot open: " + ", ".join(cited)


def _table_keys(page: str) -> set[str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([^`]+)`", text, re.MULTILINE))


def test_config_page_names_every_key_of_the_schema() -> None:
    schema = load_schema("config.schema.json")
    documented = " ".join(_table_keys("config.md"))
    for key in schema["properties"]:
        assert f"`{key}" in (REPO / "docs" / "config.md").read_text() or key in documented, key
    text = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    for key in schema["$defs"]["override"]["properties"]:
        assert f"`{key}`" in text, f"override key {key} not documented"


def _properties(node: Any, schema: dict[str, Any], seen: set[str]) -> Iterator[str]:
    """Every property name reachable in a JSON Schema (following local $refs once)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            seen.add(ref)
            yield from _properties(schema["$defs"][ref.rsplit("/", 1)[1]], schema, seen)
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            if key != "$defs":
                yield from _properties(value, schema, seen)
    elif isinstance(node, list):
        for item in node:
            yield from _properties(item, schema, seen)


def test_report_page_names_every_field_of_the_schema() -> None:
    schema = load_schema("report.schema.json")
    text = (REPO / "docs" / "report.md").read_text(encoding="utf-8")

    def described(name: str) -> bool:  # as `name`, or "name" inside a JSON shape
        return f"`{name}`" in text or f'"{name}"' in text

    names = {*_properties(schema, schema, set()), *schema["properties"]}
    missing = sorted(name for name in names if not described(name))
    assert not missing, f"docs/report.md does not describe: {', '.join(missing)}"


def check_names() -> tuple[str, ...]:
    """Every task check the cases loader accepts."""
    try:
        from skill_evals.checks.parse import FIELDS
    except ImportError:
        from skill_evals.suite.cases import CHECK_KINDS

        return tuple(CHECK_KINDS)
    return tuple(FIELDS)


def test_case_pages_name_every_field_and_check() -> None:
    # The case file reference: docs/cases.md, and the page on workspace tasks when there is one.
    pages = [REPO / "docs" / "cases.md", REPO / "docs" / "workspace-tasks.md"]
    text = "".join(p.read_text(encoding="utf-8") for p in pages if p.exists())
    missing = [n for n in (*CASE_FIELDS, *YAML_ONLY_FIELDS, *check_names()) if f"`{n}`" not in text]
    assert not missing, f"case fields or checks not documented: {', '.join(missing)}"


def test_config_example_in_the_docs_is_valid() -> None:
    from skill_evals.ci.config import parse_config

    for page in ("config.md", "ci.md", "first-suite.md"):
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        for block in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL):
            if block.lstrip().startswith(("on:", "name:", "cases:")):
                continue  # a workflow or a case file, not a config
            parse_config(block.encode("utf-8"), page)  # raises on any invalid key or value


def test_json_examples_in_the_cases_page_are_valid_cases(tmp_path: Path) -> None:
    from skill_evals.suite.cases import load_cases

    text = (REPO / "docs" / "cases.md").read_text(encoding="utf-8")
    lines = [
        line
        for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL)
        for line in block.splitlines()
        if line.startswith("{")
    ]
    assert lines
    for i, line in enumerate(lines):
        case = json.loads(line)
        if isinstance(case.get("fixture"), str):  # an example fixture: give it a directory
            (tmp_path / case["fixture"]).mkdir(parents=True, exist_ok=True)
        path = tmp_path / f"c{i}.jsonl"
        path.write_text(json.dumps(case) + "\n", encoding="utf-8")
        load_cases(path, "refund-policy")


def test_architecture_page_names_every_package_and_path_it_lists() -> None:
    """docs/architecture.md stays true: its tree names every package and top-level module of
    src/skill_evals, and every source or test path it names exists."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = REPO / "src" / "skill_evals"
    names = [
        f"{entry.name}/" if entry.is_dir() else entry.name
        for entry in sorted(package.iterdir())
        if (entry.is_dir() and (entry / "__init__.py").exists())
        or (entry.suffix == ".py" and entry.name not in {"__init__.py", "__main__.py"})
    ]
    missing = [name for name in names if name not in text]
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"
    named = re.findall(r"`((?:tests|[a-z_]+)/[\w/]*(?:\.py)?)`", text)
    stale = [path for path in named if not (REPO / path).exists() and not (package / path).exists()]
    assert not stale, f"docs/architecture.md names paths that do not exist: {', '.join(stale)}"
