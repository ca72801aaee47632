"""How the outputs for several skills (the CI job summary and PR comment, the HTML report) write
a figure in a table cell, and which status they show for a skill; the icons of a report's
status, shared with the one-skill Markdown."""

from __future__ import annotations

from typing import Any

# The status of one test or route report, as the Markdown outputs show it.
STATUS_ICON = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "invalid": "⛔ invalid",
    "insufficient": "⚠️ insufficient",
    "unavailable": "⚠️ unavailable",
    "interrupted": "⏹️ interrupted",
}


def fmt_num(value: object, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or an em dash for null (undefined metrics)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{value:.{digits}f}"


def fmt_signed(value: object) -> str:
    """A signed number with two decimals, or an em dash for null."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return f"{value:+.2f}"


def skill_status(skill: dict[str, Any]) -> str:
    """The status shown for a skill: its report's status when evaluated, else the CI status."""
    report = skill.get("report")
    if skill.get("status") == "evaluated" and isinstance(report, dict):
        return str(report.get("status", "invalid"))
    if skill.get("status") == "no-cases" and skill.get("exitCode", 0) == 0:
        return "no-cases"
    return str(skill.get("status"))
