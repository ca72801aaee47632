"""Validation of the CI report against ci-report.schema.json (which references the test
report.schema.json by its ``$id``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from referencing import Registry, Resource

from ..schemas import load_schema


def ci_report_validator() -> jsonschema.Draft202012Validator:
    """A validator for report.json of `skill-evals ci` with the report schema registered."""
    ci_schema = load_schema("ci-report.schema.json")
    report_schema = load_schema("report.schema.json")
    registry: Registry[Any] = Registry().with_resources(
        [
            (str(schema["$id"]), Resource.from_contents(schema))
            for schema in (ci_schema, report_schema)
        ]
    )
    return jsonschema.Draft202012Validator(ci_schema, registry=registry)


def validate_ci_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when ``report`` does not match the schema."""
    ci_report_validator().validate(report)
