"""The ledger, the baseline comparison and the scope notes (spot-check, early stop) of the CI
summary and PR comment (docs/comparison.md). User strings (skill names) go through the one
Markdown escaper; the rest are figures and fixed words."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..report.comparison import (
    comparison_lines,
    report_ledger,
    scope_notes,
    total_ledger,
)


def _esc(value: object) -> str:
    from ..report.md_text import md_text

    return md_text(value)


def _report(skill: Mapping[str, Any]) -> Mapping[str, Any] | None:
    report = skill.get("report")
    return report if isinstance(report, Mapping) else None


def _num(value: object, spec: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    return format(value, spec)


def _int(ledger: Mapping[str, Any], key: str) -> str:
    from ..report.md_text import md_number

    return md_number(ledger.get(key, 0))


def _row(name: str, ledger: Mapping[str, Any]) -> str:
    tokens = (
        f"{_num(ledger.get('inputTokens'), ',.0f')} / {_num(ledger.get('outputTokens'), ',.0f')}"
    )
    cost = _num(ledger.get("costUsd"), ".4f")
    cost = cost if cost == "—" else f"${cost}"
    unreported = ledger.get("costUnreported")
    if isinstance(unreported, int) and unreported:
        cost += f" ({unreported} unreported)"
    return (
        f"| {name} | {_int(ledger, 'invocations')} | {_int(ledger, 'cached')} "
        f"| {_int(ledger, 'retried')} | {_int(ledger, 'stoppedEarly')} | {tokens} | {cost} |"
    )


def ledger_table(skills: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the run spent, per evaluated skill and in total (empty when nothing ran)."""
    rows: list[tuple[str, Mapping[str, Any]]] = []
    for skill in skills:
        report = _report(skill)
        ledger = report_ledger(report) if report is not None else None
        if ledger is not None:
            rows.append((_esc(skill.get("name", "?")), ledger))
    if not rows:
        return []
    lines = [
        "Ledger (what the runs cost):",
        "",
        "| Skill | Invocations | Cached | Retried | Stopped early | Tokens in / out | Cost |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(_row(name, ledger) for name, ledger in rows),
    ]
    total = total_ledger([ledger for _, ledger in rows])
    if total is not None and len(rows) > 1:
        lines.append(_row("**total**", total))
    return lines


def judge_ledger_table(skills: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the judges cost, per skill with judge checks, apart from the runs (empty when no
    skill has any)."""
    rows: list[str] = []
    for skill in skills:
        report = _report(skill)
        ledger = report_ledger(report) if report is not None else None
        judge = ledger.get("judge") if ledger is not None else None
        if not isinstance(judge, Mapping):
            continue
        reused = (judge.get("cached") or 0) + (judge.get("resumed") or 0)
        tokens = (
            f"{_num(judge.get('inputTokens'), ',.0f')} / {_num(judge.get('outputTokens'), ',.0f')}"
        )
        cost = _num(judge.get("costUsd"), ".4f")
        rows.append(
            f"| {_esc(skill.get('name', '?'))} | {_int(judge, 'calls')} | {reused} "
            f"| {_int(judge, 'retried')} | {tokens} | {cost if cost == '—' else '$' + cost} |"
        )
    if not rows:
        return []
    return [
        "Judges (what the judge checks cost, apart from the runs):",
        "",
        "| Skill | Judge calls | Reused | Retried | Tokens in / out | Cost |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]


def comparison_bullets(skills: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per skill with a baseline: ``F1 0.82 → 0.91 (+0.09 [+0.02, +0.15]) ▲ better`` and the
    pass rate alike."""
    lines = _per_skill(skills, comparison_lines)
    return ["Compared with the baseline (baseline → this version):", "", *lines] if lines else []


def scope_bullets(skills: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per skill: ``isolation spot-checked on k of n cases``, ``stopped early: …``."""
    return _per_skill(skills, scope_notes)


def _per_skill(
    skills: Sequence[Mapping[str, Any]], lines_of: Callable[[Mapping[str, Any]], list[str]]
) -> list[str]:
    """One bullet per skill whose report gives ``lines_of`` anything: its name, then them."""
    lines: list[str] = []
    for skill in skills:
        report = _report(skill)
        found = lines_of(report) if report is not None else []
        if found:
            lines.append(f"- {_esc(skill.get('name', '?'))}: " + "; ".join(_esc(x) for x in found))
    return lines
