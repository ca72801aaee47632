"""The pieces every HTML page of skill-evals shares: the one HTML escaper, status colours,
badges and anchors."""

from __future__ import annotations

import hashlib
from html import escape
from typing import Any

from ..escaping.terminal import terminal_safe

STATUS_CLASS = {
    "pass": "ok",
    "fail": "bad",
    "invalid": "bad",
    "insufficient": "warn",
    "unavailable": "warn",
    "interrupted": "warn",
    "skipped": "muted",
    "unchanged": "muted",
    "no-cases": "warn",
}


def escape_html(value: object) -> str:
    """``value`` as HTML text or attribute content: the invisible characters made visible
    (as on a terminal), then ``&``, ``<``, ``>`` and both quotes as entities."""
    return escape(terminal_safe(value), quote=True)


def badge(status: str) -> str:
    """A coloured status word."""
    return f'<span class="badge {STATUS_CLASS.get(status, "warn")}">{escape_html(status)}</span>'


def anchor(skill: dict[str, Any]) -> str:
    """A stable id for a skill's section (from its path, never its name)."""
    return hashlib.sha256(str(skill.get("path")).encode("utf-8")).hexdigest()[:12]
