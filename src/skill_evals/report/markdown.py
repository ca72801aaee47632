"""Markdown for one skill report (used by `test --format markdown` and by the CI summary)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .cells import STATUS_ICON
from .comparison import comparison_lines, gate_labels, ledger_summary, report_ledger
from .diagnosis import gate_partial, partial_note, sections, settled_stop
from .judge_lines import judge_summary, pairwise_rows
from .lists import LIST_LIMIT, limited
from .md_text import escape_md
from .next_steps import next_steps
from .numbers import confusion_cells, fmt, fmt_p, fmt_pct, fmt_signed, fmt_threshold
from .text import efficiency_summary, skill_name, uplift_summary, verdict_summary


def _esc(value: object) -> str:
    return escape_md(str(value))


def _gate_cell(report: Mapping[str, Any], gate: object, label: str, sign: str = "≥") -> str | None:
    if not isinstance(gate, Mapping):
        return None
    partial = gate_partial(gate, report)
    passed = gate.get("passed")
    verdict = "✅ passed" if passed is True else "❌ failed" if passed is False else "⚠️ not decided"
    space = "" if sign.endswith("−") else " "
    return (
        f"| {label} {sign}{space}{fmt_threshold(gate.get('threshold'))} "
        f"| {fmt(gate.get('value'))}{partial} | {verdict} |"
    )


def render_markdown(report: dict[str, Any], fallback_name: str | None = None) -> str:
    """Render one test report as Markdown (``fallback_name`` as for render_text)."""
    lines = _summary_lines(report, fallback_name)
    lines += _partial_lines(report)
    lines += _trigger_lines(report)
    lines += _uplift_lines(report)
    compared = comparison_lines(report)
    if compared:
        lines += ["#### Compared with the baseline", ""]
        lines += [f"- {_esc(line)}" for line in compared]
        lines.append("")
    ledger = ledger_summary(report_ledger(report))
    if ledger:
        lines += [f"Ledger: {_esc(ledger)}.", ""]
    judged = judge_summary(report)
    if judged:
        lines += [f"{_esc(judged[0].upper() + judged[1:])}.", ""]
    lines += _gate_lines(report)
    lines += _sections(report)
    return "\n".join(lines) + "\n"


def _summary_lines(report: Mapping[str, Any], fallback_name: str | None) -> list[str]:
    """The heading, the verdict summary and the one-row summary table."""
    status = str(report.get("status"))
    name = _esc(skill_name(report, fallback_name))
    partial = partial_note(report)
    partial_cell = (
        " (stopped early)" if settled_stop(report) else f" ({partial})" if partial else ""
    )
    icon = STATUS_ICON.get(status, _esc(status))
    trigger = report.get("trigger")
    task = report.get("task")
    runner = report.get("runner") or {}
    runs = runner.get("invocations") if isinstance(runner, Mapping) else None
    failures = (runner.get("failures") or []) if isinstance(runner, Mapping) else []
    p_value = (task.get("signTest") or {}).get("pValue") if isinstance(task, Mapping) else None
    runs_cell = "n/a" if runs is None else str(runs)
    if failures:
        runs_cell += f" ({len(failures)} failed)"
    return [
        f"### {name}: {icon} (exit {report.get('exitCode')})",
        "",
        _esc(verdict_summary(report)),
        "",
        "| skill | status | trigger F1 | uplift [95% interval] | p-value | runs |",
        "| --- | --- | --- | --- | --- | --- |",
        (
            f"| {name} | {icon} | "
            f"{fmt(trigger.get('f1')) if isinstance(trigger, Mapping) else 'n/a'}{partial_cell} | "
            f"{_esc(_uplift_cell(task, isinstance(trigger, Mapping)))}{partial_cell} | "
            f"{fmt_p(p_value)} | {runs_cell} |"
        ),
        "",
    ]


def _partial_lines(report: Mapping[str, Any]) -> list[str]:
    """A quote saying the figures rest on part of the plan (and whether the verdict stands)."""
    partial = partial_note(report)
    if partial and settled_stop(report):
        return [
            f"> **{partial[0].upper()}{partial[1:]}** — the verdict is the result; the figures "
            "rest on the invocations that ran.",
            "",
        ]
    if partial:
        return [f"> **Partial figures** — {partial}: they are not the result.", ""]
    return []


def _trigger_lines(report: Mapping[str, Any]) -> list[str]:
    trigger = report.get("trigger")
    if not isinstance(trigger, Mapping):
        return []
    return [
        "#### Trigger",
        "",
        "| TP | FP | FN | TN | precision | recall | F1 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| " + " | ".join(confusion_cells(trigger, ("tp", "fp", "fn", "tn"))) + " |",
        "",
    ]


def _uplift_lines(report: Mapping[str, Any]) -> list[str]:
    """Pass rates, the difference with its interval and sign test, efficiency."""
    task = report.get("task")
    if not isinstance(task, Mapping):
        return []
    interval = task.get("interval") or {}
    sign = task.get("signTest") or {}
    lines = [f"#### Uplift ({task.get('units')} independent units with a task check)", ""]
    preference = pairwise_rows(task)
    if preference is not None:
        lines += [
            "| " + " | ".join(preference[0]) + " |",
            "| --- " * len(preference[0]) + "|",
            "| " + " | ".join(preference[1]) + " |",
        ]
    else:
        lines += ["| variant | passed | total | pass rate |", "| --- | ---: | ---: | ---: |"]
    for variant in ("with", "without") if preference is None else ():
        rate = task.get(variant) or {}
        lines.append(
            f"| {variant} | {rate.get('passed')} | {rate.get('total')} | "
            f"{fmt_pct(rate.get('passRate'))} |"
        )
    lines += [
        "",
        f"Difference {fmt_signed(task.get('difference'))}, 95% interval "
        f"[{fmt_signed(interval.get('lower'))}, {fmt_signed(interval.get('upper'))}] "
        f"(percentile bootstrap over units, {interval.get('samples')} samples, "
        f"seed {interval.get('seed')}). Sign test: {sign.get('positive')} better, "
        f"{sign.get('negative')} worse, {sign.get('ties')} tied, "
        f"p = {fmt_p(sign.get('pValue'))}.",
        "",
    ]
    efficiency = efficiency_summary(task)
    if efficiency:
        lines += [f"Efficiency (medians): {_esc(efficiency)}.", ""]
    if task.get("insufficient"):
        lines += ["> Fewer than 10 independent units: reported, not a basis for a gate.", ""]
    return lines


def _gate_lines(report: Mapping[str, Any]) -> list[str]:
    """The table of the configured gates."""
    gates = report.get("gates") or {}
    gate_rows = [
        row
        for key, (label, sign, _option) in gate_labels(report).items()
        if (row := _gate_cell(report, gates.get(key), label, sign))
    ]
    if not gate_rows:
        return []
    return ["#### Gates", "", "| gate | value | result |", "| --- | ---: | --- |", *gate_rows, ""]


def _sections(report: Mapping[str, Any]) -> list[str]:
    """What failed, runner failures by reason, warnings, notes, then what to do next."""
    found = sections(report)
    lines: list[str] = []
    lines += md_bullet_list("What failed", found.failed, _esc)
    if found.failures:
        total = sum(g.count for g in found.failures)
        lines += [
            f"#### Runner failures ({total}, {len(found.failures)} distinct reason(s))",
            "",
            "| reason | count | first | what to do |",
            "| --- | ---: | --- | --- |",
        ]
        lines += [
            f"| {_esc(g.reason)} | {g.count} | {_esc(g.first)} | {_esc(g.advice_text)} |"
            for g in found.failures[:LIST_LIMIT]
        ]
        lines.append("")
    lines += md_bullet_list("Warnings", found.warnings, _esc)
    lines += md_bullet_list("Notes", found.notes, _esc)
    steps = next_steps(report, _esc)
    return lines + md_next_steps(
        steps, report.get("exitCode") == 0, "Nothing: the evidence clears every configured gate."
    )


def md_bullet_list(title: str, items: Sequence[str], esc: Callable[[object], str]) -> list[str]:
    """A ``####`` heading, then one ``- item`` line each through ``esc`` (at most LIST_LIMIT);
    nothing when there are no items."""
    if not items:
        return []
    return [f"#### {title}", "", *[f"- {esc(m)}" for m in limited(items)], ""]


def md_next_steps(steps: Sequence[str], passed: bool, nothing: str) -> list[str]:
    """``What to do next``: the steps, else ``nothing`` for a run that passed, else to fix
    what failed."""
    lines = ["#### What to do next", ""]
    if steps:
        lines += [f"- {step}" for step in steps]
    elif passed:
        lines.append(nothing)
    else:
        lines.append("Fix what failed (above), then run again.")
    return lines


def _uplift_cell(task: object, scored: bool) -> str:
    if not isinstance(task, Mapping):
        # A run stopped before scoring has no task figures; that is not "no task checks".
        return "no task checks" if scored else "n/a"
    return uplift_summary(task).split(", p = ")[0] + (
        " (insufficient)" if task.get("insufficient") else ""
    )
