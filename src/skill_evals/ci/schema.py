"""Validation of the CI report against ci-report.schema.json (which embeds the test and
routing report schemas it references), and loading a report that went through an
artifact (a shard for `ci merge`, the report `ci comment` renders)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import InvalidInput
from ..schemas.bundle import bundled_schema
from .untrusted import load_json_file

SCHEMA_VERSION = 1
MAX_REPORT_BYTES = 50_000_000


@lru_cache(maxsize=1)
def ci_report_validator() -> jsonschema.Draft202012Validator:
    """A validator for report.json of `skill-evals ci`. The schema is bundled: the test and
    routing report schemas it refers to are embedded in it, so nothing is fetched."""
    return jsonschema.Draft202012Validator(bundled_schema())


def validate_ci_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when ``report`` does not match the schema."""
    ci_report_validator().validate(report)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_ci_report(path: Path) -> dict[str, Any]:
    """A `skill-evals ci` report.json from an artifact: untrusted input, written in a job where
    an agent ran the pull request's skill. Read bounded and strictly, then validated fully, so
    every value rendered from it (summary, comment, HTML, JUnit) has the type the renderers
    expect. InvalidInput (exit 5) names the file."""
    doc = load_json_file(path, "the skill-evals ci report", MAX_REPORT_BYTES)
    if not isinstance(doc, dict) or doc.get("schemaVersion") != SCHEMA_VERSION:
        raise InvalidInput(f"{path}: not a skill-evals ci report (schemaVersion 1)")
    try:
        problem = jsonschema.exceptions.best_match(ci_report_validator().iter_errors(doc))
    except RecursionError:  # the nesting bound makes this unreachable; stay an error anyway
        raise InvalidInput(
            f"{path}: not a valid skill-evals ci report (nested too deeply)"
        ) from None
    if problem is not None:
        raise InvalidInput(f"{path}: not a valid skill-evals ci report: {_problem(problem)}")
    return doc


def _problem(error: jsonschema.ValidationError) -> str:
    """Where and which rule, never the offending value (it is the file's content)."""
    where = error.json_path if error.json_path.isprintable() else "$"
    if error.validator == "required" and isinstance(error.instance, Mapping):
        required: Any = error.validator_value
        missing = [k for k in required if k not in error.instance]
        return f"{_short(where)}: missing {', '.join(map(str, missing))}"
    return f"{_short(where)}: does not match the schema (rule {error.validator!r})"
