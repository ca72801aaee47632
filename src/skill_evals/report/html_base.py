"""The pieces every HTML page of skill-evals shares: the document with its
Content-Security-Policy, the one HTML escaper, status colours, badges and anchors."""

from __future__ import annotations

import hashlib
from html import escape
from typing import Any

from ..escaping.terminal import terminal_safe

# Nothing may load: no script, no external asset (inline styles and data: images only).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)

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
    "invalid-skill": "bad",
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


def html_page(title: str, css: str, body: str) -> str:
    """A self-contained HTML document: ``title`` and ``body`` already escaped HTML."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
{body}
</body>
</html>
"""
