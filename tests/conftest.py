"""Shared test helpers: skill/case factories and report-schema validation."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema
from tests._parallel import costliest_files_first, make_scheduler

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SKILL = REPO / "examples" / "skills" / "refund-policy"


# A case's setup and command argv bind nothing in the sandbox: a test whose cases run this
# Python there names its environment, as a user names a toolchain (docs/sandbox.md).
PYTHON_SANDBOX_PATH = ("--sandbox-path", sys.prefix)

DEFAULT_DESCRIPTION = "Answer questions about refunds, returns and receipts for store purchases."
DEFAULT_BODY = "# Refund policy\n\nRefunds within 30 days with a receipt.\n"


def skill_md(name: str, description: str = DEFAULT_DESCRIPTION, body: str = DEFAULT_BODY) -> str:
    """The SKILL.md text :func:`write_skill` writes."""
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def write_skill(
    root: Path,
    name: str = "refund-policy",
    description: str = DEFAULT_DESCRIPTION,
    body: str = DEFAULT_BODY,
    extra: Mapping[str, str] | None = None,
) -> Path:
    """Create ``root/<name>/SKILL.md`` (plus extra files) and return the skill dir."""
    skill = root / name
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(skill_md(name, description, body), encoding="utf-8")
    for rel, text in (extra or {}).items():
        target = skill / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return skill


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write records as JSONL and return the path."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def assert_valid_report(report: Mapping[str, Any]) -> None:
    """Validate a test report against the shipped schema."""
    jsonschema.Draft202012Validator(load_schema("report.schema.json")).validate(report)


@pytest.fixture
def validate_report() -> Callable[[Mapping[str, Any]], None]:
    return assert_valid_report


@pytest.fixture
def python_exe() -> str:
    return sys.executable


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The costliest test files first, so that `-n 2` ends with both workers busy."""
    costliest_files_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadfile``: files sharing a session-scoped run on one worker, in the
    order the collection put them (see tests/_parallel.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    return make_scheduler(config, log)
