"""What every renderer shows about the baseline comparison, the arms, the ledger and an early
stop, worded once (docs/comparison.md). Reads only the report dict; the texts hold figures and
fixed words only, so a renderer escapes them like any other text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .stop_notes import report_spot_check, report_stopped

# Gate report key → (label, comparison sign, the option), for every renderer's gate list.
GATE_LABELS: dict[str, tuple[str, str, str]] = {
    "minTriggerF1": ("trigger F1", "≥", "--min-trigger-f1"),
    "minUplift": ("uplift lower bound", "≥", "--min-uplift"),
    "maxF1Drop": ("F1 difference upper bound", "≥ −", "--max-f1-drop"),
    "maxPassDrop": ("pass-rate difference upper bound", "≥ −", "--max-pass-drop"),
    "minF1Gain": ("F1 difference lower bound", "≥", "--min-f1-gain"),
    "minPassGain": ("pass-rate difference lower bound", "≥", "--min-pass-gain"),
}
COMPARISON_KEYS = ("maxF1Drop", "maxPassDrop", "minF1Gain", "minPassGain")


def gate_labels(report: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    """GATE_LABELS for ``report``: in a suite scored by preference the pass gates read the
    preference difference to the baseline, and say so."""
    comparison = report.get("comparison")
    task = comparison.get("task") if isinstance(comparison, Mapping) else None
    if not isinstance(task, Mapping) or task.get("mode") != "pairwise":
        return GATE_LABELS
    return {
        key: (label.replace("pass-rate", "preference"), sign, option)
        for key, (label, sign, option) in GATE_LABELS.items()
    }


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fixed(value: object) -> str:
    return f"{value:.2f}" if _is_number(value) else "n/a"


def _signed(value: object) -> str:
    return f"{value:+.2f}" if _is_number(value) else "n/a"


def direction(difference: object) -> str:
    """▲ better, ▼ worse, = unchanged, ? undefined: the mark of a difference (after − before)."""
    if not _is_number(difference):
        return "? undefined"
    if difference > 0:  # type: ignore[operator]
        return "▲ better"
    if difference < 0:  # type: ignore[operator]
        return "▼ worse"
    return "= unchanged"


def before_after(label: str, before: object, after: object, block: Mapping[str, Any]) -> str:
    """``F1 0.82 → 0.91 (+0.09 [+0.02, +0.15]) ▲ better``."""
    key = "f1Difference" if "f1Difference" in block else "difference"
    difference = block.get(key)
    interval = block.get("interval") if isinstance(block.get("interval"), Mapping) else {}
    assert isinstance(interval, Mapping)
    return (
        f"{label} {_fixed(before)} → {_fixed(after)} ({_signed(difference)} "
        f"[{_signed(interval.get('lower'))}, {_signed(interval.get('upper'))}]) "
        f"{direction(difference)}"
    )


def comparison_lines(report: Mapping[str, Any]) -> list[str]:
    """Baseline → this version: F1, then the task pass rate (when there are task checks), then
    what the figures rest on. Empty without a comparison."""
    comparison = report.get("comparison")
    if not isinstance(comparison, Mapping):
        return []
    lines: list[str] = []
    trigger = comparison.get("trigger")
    if isinstance(trigger, Mapping):
        before = (trigger.get("baseline") or {}).get("f1")
        after = (trigger.get("with") or {}).get("f1")
        line = before_after("F1", before, after, trigger)
        undefined = (trigger.get("interval") or {}).get("undefinedResamples")
        if isinstance(undefined, int) and undefined:
            line += f" ({undefined} resamples with an undefined F1 left out)"
        lines.append(line)
    task = comparison.get("task")
    if isinstance(task, Mapping) and task.get("mode") == "pairwise":
        lines.append(preference_line(task))
    elif isinstance(task, Mapping):
        before = (task.get("baseline") or {}).get("passRate")
        after = (task.get("with") or {}).get("passRate")
        line = before_after("pass rate", before, after, task)
        p_value = (task.get("signTest") or {}).get("pValue")
        if _is_number(p_value):
            line += f", sign test p = {format(p_value, '.4g')}"
        if task.get("insufficient"):
            line += " (insufficient: fewer than 10 units)"
        lines.append(line)
    if comparison.get("aa"):
        flips = [
            f"{block['flips']['flipped']} of {block['flips']['pairs']} paired {what} flipped"
            for what, block in (("trigger runs", trigger), ("task runs", task))
            if isinstance(block, Mapping) and isinstance(block.get("flips"), Mapping)
        ]
        lines.append(
            "A/A run: the baseline is this very version, so every difference is noise"
            + (f" ({'; '.join(flips)})" if flips else "")
            + " (docs/comparison.md#calibrating-with-an-aa-run)"
        )
    return lines


def pairs_text(task: Mapping[str, Any], other: str) -> str:
    """``12 pairs: with preferred 7, baseline preferred 2, 3 ties (4 inconsistent, 3 decided by
    grades), share 77.8%`` — ``other`` names the compared arm."""
    counts = task.get("pairwise") if isinstance(task.get("pairwise"), Mapping) else {}
    assert isinstance(counts, Mapping)
    share = counts.get("preferenceShare")
    inconsistent = f"{counts.get('inconsistent', 0)} inconsistent"
    if counts.get("decidedByGrades"):  # the absolute fallback named these winners
        inconsistent += f", {counts['decidedByGrades']} decided by grades"
    return (
        f"{counts.get('pairs', 0)} pairs: with preferred {counts.get('withPreferred', 0)}, "
        f"{other} preferred {counts.get('otherPreferred', 0)}, {counts.get('ties', 0)} ties "
        f"({inconsistent}), share "
        + (f"{float(share) * 100:.1f}%" if isinstance(share, (int, float)) else "n/a")
    )


def preference_line(task: Mapping[str, Any]) -> str:
    """``preference over the baseline +0.40 [+0.10, +0.70] ▲ better, sign test p = 0.03906;
    12 pairs: with preferred 7, baseline preferred 2, 3 ties (1 inconsistent), share 77.8%``."""
    interval = task.get("interval") if isinstance(task.get("interval"), Mapping) else {}
    assert isinstance(interval, Mapping)
    difference = task.get("difference")
    line = (
        f"preference over the baseline {_signed(difference)} [{_signed(interval.get('lower'))}, "
        f"{_signed(interval.get('upper'))}] {direction(difference)}"
    )
    p_value = (task.get("signTest") or {}).get("pValue")
    if _is_number(p_value):
        line += f", sign test p = {format(p_value, '.4g')}"
    line += "; " + pairs_text(task, "baseline")
    if task.get("insufficient"):
        line += " (insufficient: fewer than 10 units)"
    return line


def comparison_cell(report: Mapping[str, Any]) -> str | None:
    """The comparison in one table cell (F1; pass rate), or None without one."""
    lines = [line for line in comparison_lines(report) if not line.startswith("A/A")]
    return "; ".join(lines) if lines else None


def scope_notes(report: Mapping[str, Any]) -> list[str]:
    """``isolation spot-checked on k of n cases`` and ``stopped early: …`` when they apply."""
    return [note for note in (report_spot_check(report), report_stopped(report)) if note]


def ledger_summary(ledger: object) -> str | None:
    """``108 invocations run, 0 cached, 0 retried, 18 stopped early; tokens in/out 1,200/300;
    $0.4200 (3 reported no cost)`` for a ledger (or a sum of ledgers), None without one."""
    if not isinstance(ledger, Mapping):
        return None
    text = (
        f"{ledger.get('invocations', 0)} invocations run, {ledger.get('cached', 0)} cached, "
        f"{ledger.get('retried', 0)} retried, {ledger.get('stoppedEarly', 0)} stopped early"
    )
    if ledger.get("resumed"):
        text += f", {ledger['resumed']} resumed"
    tokens_in, tokens_out = ledger.get("inputTokens"), ledger.get("outputTokens")
    if _is_number(tokens_in) or _is_number(tokens_out):
        text += "; tokens in/out " + "/".join(
            f"{t:,.0f}" if _is_number(t) else "n/a" for t in (tokens_in, tokens_out)
        )
    cost = ledger.get("costUsd")
    text += f"; ${cost:.4f}" if _is_number(cost) else "; cost n/a"
    unreported = ledger.get("costUnreported")
    if isinstance(unreported, int) and unreported:
        text += f" ({unreported} reported no cost)"
    return text


def report_ledger(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The report's ``runner.ledger``, or None."""
    runner = report.get("runner")
    ledger = runner.get("ledger") if isinstance(runner, Mapping) else None
    return ledger if isinstance(ledger, Mapping) else None


_SUMMED = ("invocations", "cached", "retried", "resumed", "stoppedEarly", "costUnreported")


def total_ledger(ledgers: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The sum of several skills' ledgers (tokens and cost null when no skill reported any)."""
    if not ledgers:
        return None
    total: dict[str, Any] = {key: 0 for key in _SUMMED}
    for key in ("inputTokens", "outputTokens", "costUsd"):
        values = [ledger.get(key) for ledger in ledgers if _is_number(ledger.get(key))]
        total[key] = sum(values) if values else None
    for ledger in ledgers:
        for key in _SUMMED:
            value = ledger.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] += value
    return total
