"""The job summary's and the PR comment's pass-rate chart: with/without task pass rates as
Unicode bars in a Markdown table, every skill name written as the summary writes report text
(``md_text``: escaped, or a code span in the fork-safe comment)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..report.md_text import md_text as _esc


def _bar(rate: float, width: int = 20) -> str:
    filled = round(max(0.0, min(1.0, rate)) * width)
    return "█" * filled + "░" * (width - filled)


def _chart_label(name: str) -> str:
    return _esc(name[:40] + ("…" if len(name) > 40 else ""))


def pass_rate_chart(skills: Iterable[dict[str, Any]]) -> list[str]:
    """A Unicode bar chart of with/without task pass rates, as a table (empty when no skill
    has tasks)."""
    rows: list[tuple[str, float, float]] = []
    for skill in skills:
        task = (
            (skill.get("report") or {}).get("task")
            if isinstance(skill.get("report"), dict)
            else None
        )
        if not isinstance(task, dict):
            continue
        with_rate = (task.get("with") or {}).get("passRate")
        without_rate = (task.get("without") or {}).get("passRate")
        if isinstance(with_rate, (int, float)) and isinstance(without_rate, (int, float)):
            rows.append(
                (_chart_label(str(skill.get("name"))), _rate(with_rate), _rate(without_rate))
            )
    if not rows:
        return []
    lines = [
        "Task pass rate, with vs without the skill:",
        "",
        "| Skill | With the skill | Without |",
        "| --- | --- | --- |",
    ]
    for label, with_rate, without_rate in rows:
        lines.append(
            f"| {label} | `{_bar(with_rate)}` {with_rate * 100:5.1f}% "
            f"| `{_bar(without_rate)}` {without_rate * 100:5.1f}% |"
        )
    return lines


def _rate(value: float) -> float:
    """A pass rate clamped to [0, 1] (a shard's report is schema-checked, not trusted)."""
    rate = float(value)
    return max(0.0, min(1.0, rate)) if rate == rate else 0.0
