"""Human text report: verdict line, trigger and uplift tables, next steps.

The helpers here (the verdict summary, the next-step list) are shared with the Markdown
renderer so both show the same figures (numbers.py writes each number). They read only the
report dict (docs/report.md), which holds no prompts, outputs or stderr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..escaping.terminal import terminal_safe
from .comparison import (
    COMPARISON_KEYS,
    comparison_lines,
    gate_labels,
)
from .diagnosis import gate_partial, partial_note, partial_suffix, sections
from .judge_lines import pairwise_rows, run_notes
from .lists import LIST_LIMIT, limited
from .next_steps import next_steps
from .numbers import confusion_cells, fmt, fmt_p, fmt_pct, fmt_signed, fmt_threshold, is_number

STATUS_WORD = {
    "pass": "PASS",
    "fail": "FAIL",
    "invalid": "INVALID",
    "insufficient": "INSUFFICIENT",
    "unavailable": "UNAVAILABLE",
    "interrupted": "INTERRUPTED",
}


# ------------------------------------------------------------------------------ formatting


def clean(text: object) -> str:
    """A user-controlled string made safe for a terminal (see :func:`terminal_safe`)."""
    return terminal_safe(text)


# ------------------------------------------------------------------------ shared summaries


def skill_name(report: Mapping[str, Any], fallback: str | None = None) -> str:
    """The skill's name; for a run that stopped before loading it, ``fallback`` (the directory
    the user gave) or ``(unknown skill)``."""
    skill = report.get("skill")
    if isinstance(skill, Mapping) and skill.get("name"):
        return str(skill["name"])
    return fallback or "(unknown skill)"


def uplift_summary(task: Mapping[str, Any] | None) -> str:
    """``+0.450 [+0.150, +0.700], p = 0.0703`` (or why there is none)."""
    if not isinstance(task, Mapping):
        return "no task checks"
    interval = task.get("interval") or {}
    text = (
        f"{fmt_signed(task.get('difference'))} "
        f"[{fmt_signed(interval.get('lower'))}, {fmt_signed(interval.get('upper'))}]"
    )
    p = (task.get("signTest") or {}).get("pValue")
    text += f", p = {fmt_p(p)}"
    if task.get("insufficient"):
        text += " (insufficient: fewer than 10 units)"
    return text


def verdict_summary(report: Mapping[str, Any]) -> str:
    """One line of figures: trigger F1 and uplift, marked when they are partial; for a run that
    stopped before scoring, just that (the reason is listed once, under what failed)."""
    trigger = report.get("trigger")
    if not isinstance(trigger, Mapping):
        return "stopped before scoring"
    return (
        f"trigger F1 {fmt(trigger.get('f1'))}, uplift {uplift_summary(report.get('task'))}"
        + partial_suffix(report)
    )


def _figures(figures: object, signed: bool) -> str | None:
    if not isinstance(figures, Mapping):
        return None
    sign = "+" if signed else ""
    parts = []
    values: list[Any] = [figures.get(k) for k in ("durationMs", "tokens", "costUsd")]
    duration, tokens, cost = (float(v) if is_number(v) else None for v in values)
    if duration is not None:
        parts.append(f"{duration / 1000:{sign}.1f} s")
    if tokens is not None:
        parts.append(f"{tokens:{sign},.0f} tokens")
    if cost is not None:
        parts.append(f"${cost:{sign}.4f}")
    return ", ".join(parts) if parts else None


def efficiency_summary(task: Mapping[str, Any]) -> str | None:
    """``with 12.0 s, 1,200 tokens; without …; paired difference …`` (medians), or None when
    no observation reported duration, tokens or cost."""
    efficiency = task.get("efficiency")
    if not isinstance(efficiency, Mapping):
        return None
    parts = []
    for key, label, signed in (
        ("with", "with", False),
        ("without", "without", False),
        ("difference", "paired difference (with − without)", True),
    ):
        text = _figures(efficiency.get(key), signed)
        if text:
            parts.append(f"{label} {text}")
    return "; ".join(parts) if parts else None


# ----------------------------------------------------------------------------------- render


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _gate_line(report: Mapping[str, Any], gate: object, label: str, sign: str = "≥") -> str | None:
    if not isinstance(gate, Mapping):
        return None
    head = f"  gate {label} {sign}{'' if sign.endswith('−') else ' '}"
    head += fmt_threshold(gate.get("threshold"))
    partial = gate_partial(gate, report)
    if partial:  # a figure of part of the run: no verdict
        return f"{head}: {label} {fmt(gate.get('value'))}{partial}"
    passed = gate.get("passed")
    verdict = "passed" if passed is True else "FAILED" if passed is False else "not decided"
    return f"{head}: {verdict} (value {fmt(gate.get('value'))})"


def render_text(report: dict[str, Any], fallback_name: str | None = None) -> str:
    """Render one test report for a person (``fallback_name``: the skill directory's name, shown
    when the run stopped before the skill was loaded)."""
    status = str(report.get("status"))
    lines = [
        f"{STATUS_WORD.get(status, status.upper())}  "
        f"{clean(skill_name(report, fallback_name))} — "
        f"{clean(verdict_summary(report))} (exit {report.get('exitCode')})",
        "",
    ]
    partial = partial_note(report)
    lines += _trigger_lines(report, partial)
    lines += _uplift_lines(report, partial)
    lines += _comparison_lines(report)
    lines += _runs_lines(report, partial)
    lines += _sections(report)
    return "\n".join(lines) + "\n"


def _within(title: str, partial: str) -> str:
    """``title)`` or ``title; partial: k of n, not decided)``."""
    return title + (f"; {partial})" if partial else ")")


def _gate_lines(report: Mapping[str, Any], key: str, label: str, sign: str = "≥") -> list[str]:
    gate = _gate_line(report, (report.get("gates") or {}).get(key), label, sign)
    return [gate] if gate else []


def _trigger_lines(report: Mapping[str, Any], partial: str) -> list[str]:
    """The trigger table and its gate."""
    trigger = report.get("trigger")
    if not isinstance(trigger, Mapping):
        return []
    lines = [_within("Trigger (with-variant observations", partial)]
    lines += _table(
        [
            ["TP", "FP", "FN", "TN", "precision", "recall", "F1"],
            confusion_cells(trigger, ("tp", "fp", "fn", "tn")),
        ]
    )
    return [*lines, *_gate_lines(report, "minTriggerF1", "F1"), ""]


def _uplift_lines(report: Mapping[str, Any], partial: str) -> list[str]:
    """The pass rates with and without the skill, the difference with its interval, the sign
    test and the efficiency; or that no case has a task check."""
    task = report.get("task")
    if not isinstance(task, Mapping):
        if not isinstance(report.get("trigger"), Mapping):
            return []  # stopped before scoring
        return [
            "Uplift: no case has a task check (add `task` to cases to measure it)",
            *_gate_lines(report, "minUplift", "uplift lower bound"),
            "",
        ]
    lines = [_within(f"Uplift ({task.get('units')} independent unit(s) with a task check", partial)]
    rows = pairwise_rows(task) or [["variant", "passed", "total", "pass rate"]]
    for variant in ("with", "without") if task.get("mode") != "pairwise" else ():
        rate = task.get(variant) or {}
        rows.append(
            [
                variant,
                str(rate.get("passed")),
                str(rate.get("total")),
                fmt_pct(rate.get("passRate")),
            ]
        )
    lines += _table(rows)
    interval = task.get("interval") or {}
    lines.append(
        f"  difference {fmt_signed(task.get('difference'))}, "
        f"95% interval [{fmt_signed(interval.get('lower'))}, "
        f"{fmt_signed(interval.get('upper'))}] (percentile bootstrap over units, "
        f"{interval.get('samples')} samples, seed {interval.get('seed')})"
    )
    sign = task.get("signTest") or {}
    lines.append(
        f"  sign test: {sign.get('positive')} unit(s) better with the skill, "
        f"{sign.get('negative')} worse, {sign.get('ties')} tied; "
        f"two-sided p = {fmt_p(sign.get('pValue'))}"
    )
    efficiency = efficiency_summary(task)
    if efficiency:
        lines.append(f"  efficiency (medians): {efficiency}")
    if task.get("insufficient"):
        lines.append("  insufficient: fewer than 10 independent units — not a basis for a gate")
    return [*lines, *_gate_lines(report, "minUplift", "uplift lower bound"), ""]


def _comparison_lines(report: Mapping[str, Any]) -> list[str]:
    """The comparison with the baseline and its gates."""
    compared = comparison_lines(report)
    if not compared:
        return []
    lines = ["Compared with the baseline (baseline → this version; with − baseline)"]
    lines += [f"  {line}" for line in compared]
    for key in COMPARISON_KEYS:
        label, sign, _ = gate_labels(report)[key]
        lines += _gate_lines(report, key, label, sign)
    return [*lines, ""]


def _runs_lines(report: Mapping[str, Any], partial: str) -> list[str]:
    """What ran: invocations, failures, violations, time, cost, tokens and the ledger."""
    runner = report.get("runner")
    if not isinstance(runner, Mapping):
        return []
    failures = runner.get("failures") or []
    violations = (report.get("loading") or {}).get("violations") or []
    wall = runner.get("wallMs")
    line = (
        f"Runs: {runner.get('invocations')} invocation(s) in this run, "
        f"{len(failures)} runner failure(s), {len(violations)} loading violation(s)"
    )
    if isinstance(wall, (int, float)):
        line += f", {wall / 1000:.1f} s"
    meta = runner.get("meta") or {}
    if is_number(meta.get("costUsd")):
        line += f", ${meta['costUsd']:.4f}"
    tokens = [meta.get("inputTokens"), meta.get("outputTokens")]
    if any(is_number(t) for t in tokens):
        line += f", tokens in/out {tokens[0] if is_number(tokens[0]) else 'n/a'}/" + (
            f"{tokens[1] if is_number(tokens[1]) else 'n/a'}"
        )
    if partial:
        line += f"; the figures above are {partial}"
    return [line, *(f"  {note}" for note in run_notes(report)), ""]


def _sections(report: Mapping[str, Any]) -> list[str]:
    """What failed, runner failures by reason, warnings, notes, then what to do next."""
    found = sections(report)
    lines: list[str] = []
    lines += bullet_list("What failed", found.failed)
    if found.failures:
        total = sum(g.count for g in found.failures)
        lines.append(
            f"Runner failures: {total} in {len(found.failures)} distinct reason(s) "
            "(every one is in the JSON report's runner.failures)"
        )
        for group in found.failures[:LIST_LIMIT]:
            lines.append(f"  - {group.count}× {clean(group.reason)} — first: {clean(group.first)}")
            lines += [f"    what to do: {advice}" for advice in group.advices]
        if len(found.failures) > LIST_LIMIT:
            lines.append(f"  … and {len(found.failures) - LIST_LIMIT} more reasons")
        lines.append("")
    lines += bullet_list("Warnings", found.warnings) + bullet_list("Notes", found.notes)
    steps = next_steps(report, clean)
    return lines + next_step_lines(
        steps, report.get("exitCode") == 0, "nothing: the evidence clears every configured gate"
    )


def bullet_list(title: str, items: Sequence[str]) -> list[str]:
    """``title``, then one terminal-safe ``  - item`` line each (at most LIST_LIMIT) and a blank
    line; nothing when there are no items."""
    if not items:
        return []
    return [title, *[f"  - {clean(m)}" for m in limited(items)], ""]


def next_step_lines(steps: Sequence[str], passed: bool, nothing: str) -> list[str]:
    """``What to do next``: the steps, else ``nothing`` for a run that passed, else to fix
    what failed."""
    lines = ["What to do next"]
    if steps:
        lines += [f"  - {step}" for step in steps]
    elif passed:
        lines.append(f"  {nothing}")
    else:
        lines.append("  fix what failed (above), then run again")
    return lines
