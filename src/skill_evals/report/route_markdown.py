"""Markdown for a route report (``route --format markdown``; the CI summary and comment reuse
:func:`routing_markdown`). Every user string goes through :func:`md_text` (escaped prose,
or a code span in the PR comment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cells import STATUS_ICON
from .diagnosis import gate_partial, partial_note, sections
from .lists import LIST_LIMIT, limited
from .markdown import md_bullet_list, md_next_steps
from .md_text import md_number, md_text
from .numbers import confusion_cells, fmt, fmt_threshold
from .route_text import SHOWN_COLLISIONS, id_list, next_steps, verdict_summary
from .values import confusion_matrix, mapping, mappings

MATRIX_MAX_LABELS = 30  # a wider table is unreadable in a PR: the HTML report has it all


def _esc(value: object) -> str:
    return md_text(value)


def _gate_row(report: Mapping[str, Any], gate: object, label: str) -> str | None:
    if not isinstance(gate, Mapping):
        return None
    partial = gate_partial(gate, report)
    passed = gate.get("passed")
    verdict = "✅ passed" if passed is True else "❌ failed" if passed is False else "⚠️ not decided"
    threshold = fmt_threshold(gate.get("threshold"))
    return f"| {label} ≥ {threshold} | {fmt(gate.get('value'))}{partial} | {verdict} |"


def _matrix(report: Mapping[str, Any]) -> list[str]:
    labels, counts = confusion_matrix(report)
    if not labels:
        return []
    if len(labels) > MATRIX_MAX_LABELS:
        return [f"The confusion matrix has {len(labels)} labels: see the HTML or JSON report.", ""]
    lines = [
        "#### Confusion (rows: expected, columns: loaded)",
        "",
        "| expected \\\\ loaded | " + " | ".join(_esc(x) for x in labels) + " |",
        "| --- | " + " | ".join("---:" for _ in labels) + " |",
    ]
    for r, (label, row) in enumerate(zip(labels, counts, strict=False)):
        # The diagonal (loaded as expected) in bold, so the misroutes stand out.
        cells = [f"**{md_number(v)}**" if i == r and v else md_number(v) for i, v in enumerate(row)]
        lines.append(f"| {_esc(label)} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def routing_markdown(
    report: Mapping[str, Any], heading: str = "###", compact: bool = False
) -> list[str]:
    """The route report's Markdown lines (``heading``: the level of its title; ``compact``
    leaves out the matrix, warnings and notes: the PR comment)."""
    status = str(report.get("status"))
    icon = STATUS_ICON.get(status, _esc(status))
    lines = [
        f"{heading} Routing: {icon} (exit {md_number(report.get('exitCode'))})",
        "",
        _esc(verdict_summary(report)),
        "",
    ]
    partial = partial_note(report)
    if partial:
        lines += [f"> **Partial figures** — {_esc(partial)}: they are not the result.", ""]
    lines += _per_skill_table(report)
    lines += _gate_table(report)
    if not compact:
        lines += _matrix(report)
    lines += _collision_list(report)
    lines += _diagnosis_lines(report, compact)
    return lines


def _per_skill_table(report: Mapping[str, Any]) -> list[str]:
    per_skill = mappings(report.get("perSkill"))
    if not per_skill:
        return []
    lines = [
        "| skill | cases | TP | FP | FN | precision | recall | F1 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in per_skill:
        cells = [_esc(s.get("name")), *confusion_cells(s, ("expectedBy", "tp", "fp", "fn"))]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _gate_table(report: Mapping[str, Any]) -> list[str]:
    gates = mapping(report.get("gates"))
    rows = [
        r
        for r in (
            _gate_row(report, gates.get("minAccuracy"), "accuracy"),
            _gate_row(report, gates.get("minSkillF1"), "lowest skill F1"),
        )
        if r
    ]
    if not rows:
        return []
    return ["| gate | value | result |", "| --- | ---: | --- |", *rows, ""]


def _collision_list(report: Mapping[str, Any]) -> list[str]:
    collisions = mappings(report.get("collisions"))
    if not collisions:
        return []
    lines = ["#### Top collisions", ""]
    for c in collisions[:SHOWN_COLLISIONS]:
        lines.append(
            f"- {_esc(c.get('a'))} ↔ {_esc(c.get('b'))}: {c.get('count')} observation(s) "
            f"on cases {id_list(list(c.get('caseIds') or []), _esc)}"
        )
    return [*lines, ""]


def _diagnosis_lines(report: Mapping[str, Any], compact: bool) -> list[str]:
    """What failed, runner failures by reason, warnings and notes (not ``compact``), then
    what to do next."""
    found = sections(report)
    lines: list[str] = []
    lines += md_bullet_list("What failed", found.failed, _esc)
    if found.failures:
        lines += ["#### Runner failures", "", "| reason | count | first | what to do |"]
        lines.append("| --- | ---: | --- | --- |")
        lines += [
            f"| {_esc(g.reason)} | {g.count} | {_esc(g.case_id)} trial {g.trial} | "
            f"{_esc(g.advice_text)} |"
            for g in found.failures[:LIST_LIMIT]
        ]
        lines.append("")
    if not compact:
        lines += md_bullet_list("Warnings", found.warnings, _esc)
        lines += md_bullet_list("Notes", found.notes, _esc)
    steps = limited(next_steps(report, _esc))
    return lines + md_next_steps(
        steps,
        report.get("exitCode") == 0,
        "Nothing: every prompt loaded exactly the expected skills.",
    )


def render_route_markdown(report: Mapping[str, Any]) -> str:
    """The whole route report as one Markdown document."""
    return "\n".join(routing_markdown(report)) + "\n"


def ci_routing_markdown(entry: object, compact: bool = False) -> list[str]:
    """The routing entry of the CI summary (and, ``compact``, of the PR comment): the route
    report when it was evaluated, one line saying why otherwise, nothing without an entry."""
    if not isinstance(entry, Mapping):
        return []
    report = entry.get("report")
    if isinstance(report, Mapping):
        return [*routing_markdown(report, "###", compact), ""]
    status = _esc(entry.get("status"))
    return [f"### Routing: {status}", "", _esc(entry.get("reason") or ""), ""]
