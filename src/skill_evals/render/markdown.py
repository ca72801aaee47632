"""Markdown for one skill report (used by `test --format markdown` and by the CI summary)."""

from __future__ import annotations

from typing import Any


def escape_md(text: str) -> str:
    """Escape a user-controlled string for Markdown tables and prose (|, `, <, >, *, _, [, ], …)."""
    raise NotImplementedError


def render_markdown(report: dict[str, Any]) -> str:
    """Render one §1.7 report as Markdown."""
    raise NotImplementedError
