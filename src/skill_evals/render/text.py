"""Human text report: verdict line, trigger and uplift tables, next steps."""

from __future__ import annotations

from typing import Any


def render_text(report: dict[str, Any]) -> str:
    """Render one §1.7 report for a person."""
    raise NotImplementedError
