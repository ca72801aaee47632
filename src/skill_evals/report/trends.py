"""Trend charts of a skill's last runs (the gate's history, ci/history.py): a Unicode
sparkline per figure for summary.md and the PR comment, an inline SVG polyline per figure for
report.html. Fewer than :data:`MIN_SIGNAL` charted values say ``insufficient signal``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cells import fmt_num, fmt_signed
from .html_base import escape_html
from .md_text import md_text

LEVELS = "▁▂▃▄▅▆▇█"
NULL = "·"
MIN_SIGNAL = 5
CHARTED = 20  # records charted per skill, this run's included
SERIES = (("f1", "trigger F1"), ("uplift", "uplift"))
_WIDTH, _HEIGHT, _PAD = 160, 32, 3


@dataclass(frozen=True)
class Trend:
    """One skill's charted records, oldest first: trigger F1 and uplift (the difference)."""

    skill: str
    f1: tuple[float | None, ...]
    uplift: tuple[float | None, ...]

    def series(self, name: str) -> tuple[float | None, ...]:
        """The values of ``f1`` or ``uplift``."""
        return self.f1 if name == "f1" else self.uplift


def _values(raw: object) -> tuple[float | None, ...] | None:
    if not isinstance(raw, list) or not 0 < len(raw) <= CHARTED:
        return None
    ok = all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        for v in raw
    )
    return tuple(raw) if ok else None


def trends_of_report(ci_report: Mapping[str, Any]) -> list[Trend]:
    """The ``trends`` of a ci report.json (items of another shape are left out: a shard's
    report is read back by ``ci merge`` and ``ci comment``)."""
    found = []
    for item in ci_report.get("trends") or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("skill"), str):
            continue
        f1, uplift = _values(item.get("f1")), _values(item.get("uplift"))
        if f1 is not None and uplift is not None and len(f1) == len(uplift):
            found.append(Trend(item["skill"], f1, uplift))
    return found


def _level(value: float, low: float, high: float) -> int:
    if high == low:
        return 3  # all equal: the middle bar
    return min(7, max(0, math.floor((value - low) / (high - low) * 7 + 0.5)))


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value: ``▁``…``█`` by its level among the non-null values, ``·`` for
    null."""
    known = [v for v in values if v is not None]
    if not known:
        return NULL * len(values)
    low, high = min(known), max(known)
    return "".join(NULL if v is None else LEVELS[_level(v, low, high)] for v in values)


def _latest(name: str, values: Sequence[float | None]) -> str:
    last = values[-1] if values else None
    return fmt_num(last, 3) if name == "f1" else fmt_signed(last)


def signal_note(values: Sequence[float | None]) -> str:
    """``insufficient signal (k of 5)`` when fewer than five values are known, else empty."""
    known = sum(v is not None for v in values)
    return f"insufficient signal ({known} of {MIN_SIGNAL})" if known < MIN_SIGNAL else ""


def _cell(name: str, values: Sequence[float | None]) -> str:
    note = signal_note(values)
    cell = f"{sparkline(values)} {_latest(name, values)}"
    return f"{cell} {note}" if note else cell


def trends_markdown(trends: Sequence[Trend]) -> list[str]:
    """``## Trends (last N runs)`` and its table, one row per skill (nothing without trends).
    Skill names go through the one Markdown escaper (fork-safe in the comment)."""
    if not trends:
        return []
    runs = max(len(t.f1) for t in trends)
    lines = [f"## Trends (last {runs} runs)", "", "| skill | runs | trigger F1 | uplift |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for trend in trends:
        cells = [_cell(name, trend.series(name)) for name, _ in SERIES]
        lines.append(f"| {md_text(trend.skill)} | {len(trend.f1)} | {' | '.join(cells)} |")
    return lines


def _points(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    step = (_WIDTH - 2 * _PAD) / max(len(values) - 1, 1)
    points = []
    for i, value in enumerate(values):
        if value is None:
            continue
        share = 0.5 if high == low else (value - low) / (high - low)
        y = _HEIGHT - _PAD - share * (_HEIGHT - 2 * _PAD)
        points.append(f"{_PAD + i * step:.1f},{y:.1f}")
    return " ".join(points)


def _svg(trend: Trend, name: str, label: str) -> str:
    values = trend.series(name)
    note = signal_note(values)
    aria = f"{label} of {trend.skill} over the last {len(values)} runs: latest " + (
        _latest(name, values) + (f", {note}" if note else "")
    )
    return (
        f'<svg data-skill="{escape_html(trend.skill)}" data-series="{name}" role="img" '
        f'aria-label="{escape_html(aria)}" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}"><polyline points="{_points(values)}" fill="none" '
        'stroke="currentColor" stroke-width="1.5"/></svg>'
    )


def trends_html(trends: Sequence[Trend]) -> str:
    """The HTML section: per skill and figure an inline SVG with one polyline (no script)."""
    if not trends:
        return ""
    runs = max(len(t.f1) for t in trends)
    rows = []
    for trend in trends:
        cells = []
        for name, label in SERIES:
            values = trend.series(name)
            note = signal_note(values)
            shown = f" <small class='muted'>{escape_html(note)}</small>" if note else ""
            cells.append(f"<td>{_svg(trend, name, label)} {_latest(name, values)}{shown}</td>")
        rows.append(
            f"<tr><td>{escape_html(trend.skill)}</td><td>{len(trend.f1)}</td>{''.join(cells)}</tr>"
        )
    return (
        f"<h2>Trends (last {runs} runs)</h2>\n<table><tr><th>Skill</th><th>Runs</th>"
        f"<th>Trigger F1</th><th>Uplift</th></tr>\n{''.join(rows)}</table>"
    )
