"""Shipped JSON Schemas: report.schema.json, route-report.schema.json, ci-report.schema.json,
config.schema.json, judge-check.schema.json, lint.schema.json, draft.schema.json (and the
others beside them)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Load a shipped schema by file name, e.g. ``report.schema.json``."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
