"""JSON rendering of a report."""

from __future__ import annotations

import json
from typing import Any


def render_json(report: dict[str, Any]) -> str:
    """The report as pretty JSON with a final newline."""
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
