"""Markdown for the CI gate: the job summary (`summary.md`) and the PR comment (`comment.md`).

Every user-controlled string (skill names, case ids, paths, messages, statuses) goes through
``escape_md``, the one Markdown escaper, wherever it appears: table cells, bullets, the chart,
and the ``<summary>`` of the comment's collapsible sections (whose text is set off by blank
lines so that GitHub reads it as Markdown, where the escapes hold, not as raw HTML).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..messages import ARTEFACTS
from ..report.cells import STATUS_ICON as REPORT_STATUS_ICON
from ..report.cells import fmt_num, fmt_signed, skill_status
from ..report.diagnosis import sections
from ..report.md_text import fork_safe, md_number
from ..report.next_steps import task_failures
from ..report.route_markdown import ci_routing_markdown
from ..report.trends import trends_markdown, trends_of_report
from .base_words import base_words
from .draft_suggest import draft_markdown
from .listing import listing_markdown
from .policy import POLICY_CHANGE
from .suggest import suggestion_markdown
from .summary_chart import pass_rate_chart
from .summary_scope import comparison_bullets, judge_ledger_table, ledger_table, scope_bullets

MARKER = "<!-- skill-evals -->"
SUMMARY_MAX_BYTES = 1_000_000
COMMENT_MAX_CHARS = 65_000
LIST_LIMIT = 20

STATUS_ICON = {
    **REPORT_STATUS_ICON,
    "skipped": "⏭️ skipped",
    "unchanged": "➖ unchanged",
    "no-cases": "📭 no cases",
    "invalid-skill": "❌ invalid skill",
}


_CI_STATUSES = frozenset({"evaluated", "unchanged", "skipped", "no-cases", "invalid-skill"})


def _esc(value: object) -> str:
    from ..report.md_text import md_text

    return md_text(value)


def _uplift_cell(report: dict[str, Any] | None) -> str:
    task = (report or {}).get("task")
    if not isinstance(task, dict):
        return "—"
    interval = task.get("interval") or {}
    cell = f"{fmt_signed(task.get('difference'))} [{fmt_signed(interval.get('lower'))}, " + (
        f"{fmt_signed(interval.get('upper'))}]"
    )
    if task.get("insufficient"):
        cell += " (insufficient)"
    return cell + partial_mark(report or {})


def partial_mark(report: dict[str, Any]) -> str:
    """`` (partial: 18 of 40, not decided)`` after a figure that rests on part of the planned
    runs (`` (stopped early: …)`` when a settle check decided the verdict), else ""."""
    from ..report.diagnosis import partial_suffix

    return partial_suffix(report)


def _runs_cell(report: dict[str, Any] | None) -> str:
    runner = (report or {}).get("runner")
    if not isinstance(runner, dict):
        return "—"
    failures = len(runner.get("failures") or [])
    cell = md_number(runner.get("invocations", 0))
    return cell + (f" ({failures} failed)" if failures else "")


def verdict_table(skills: Sequence[dict[str, Any]]) -> list[str]:
    """The verdict table: skill, status, F1, uplift with interval, p-value, runs."""
    lines = [
        "| Skill | Status | Trigger F1 | Uplift [95% CI] | p-value | Runs |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for skill in skills:
        report = skill.get("report") if isinstance(skill.get("report"), dict) else None
        trigger = (report or {}).get("trigger") or {}
        task = (report or {}).get("task") or {}
        p_value = (task.get("signTest") or {}).get("pValue") if isinstance(task, dict) else None
        status = skill_status(skill)
        lines.append(
            f"| {_esc(skill.get('name', '?'))} | {STATUS_ICON.get(status, _esc(status))} "
            f"| {fmt_num(trigger.get('f1'))}{partial_mark(report or {}) if trigger else ''} "
            f"| {_uplift_cell(report)} | {fmt_num(p_value, 3)} "
            f"| {_runs_cell(report)} |"
        )
    return lines


def _limited(items: Sequence[str], limit: int = LIST_LIMIT) -> list[str]:
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"… and {len(items) - limit} more (see report.html)")
    return shown


def failure_details(skill: dict[str, Any], limit: int = LIST_LIMIT) -> list[str]:
    """Bullet points saying what failed for one skill (empty when nothing failed)."""
    report = skill.get("report") if isinstance(skill.get("report"), dict) else None
    exit_code = skill.get("exitCode", 0)
    if exit_code == 0:
        return []
    lines: list[str] = []
    if report is None:
        if skill.get("reason"):
            lines.append(f"- {_esc(skill['reason'])}")
        return lines
    found = sections(report)
    for message in _limited(found.failed, limit):
        lines.append(f"- {_esc(message)}")
    # The engine explains failed gates in its messages; say it once.
    explained = any("gate failed" in m.lower() for m in found.failed)
    gates = report.get("gates") or {}
    for key, label in (("minTriggerF1", "trigger F1"), ("minUplift", "uplift lower bound")):
        gate = gates.get(key)
        if isinstance(gate, dict) and gate.get("passed") is False and not explained:
            lines.append(
                f"- Gate failed: {label} {fmt_num(gate.get('value'))} "
                f"< {fmt_num(gate.get('threshold'))}"
            )
    trigger = report.get("trigger") or {}
    missed = [str(c) for c in trigger.get("missedTriggerCaseIds") or []]
    if missed:
        lines.append("- Missed triggers: " + ", ".join(_code_list(missed, limit)))
    false = [str(c) for c in trigger.get("falseTriggerCaseIds") or []]
    if false:
        lines.append("- False triggers: " + ", ".join(_code_list(false, limit)))
    violations = (report.get("loading") or {}).get("violations") or []
    for text in _limited([_violation(v) for v in violations], limit):
        lines.append(f"- Loading violation: {text}")
    for group in found.failures[: max(limit, 1)]:
        lines.append(
            f"- Runner failure ×{group.count}: {_esc(group.reason)} (first: "
            f"{_esc(group.first)}) — {_esc(group.advice_text)}"
        )
    if len(found.failures) > max(limit, 1):
        lines.append(
            f"- … and {len(found.failures) - max(limit, 1)} more reasons (see report.html)"
        )
    tasks = [
        f"{_esc(t['caseId'])} trial {md_number(t['trial'])}: {_esc(t['reason'])}"
        for t in task_failures(report)
    ]
    for text in _limited(tasks, limit):
        lines.append(f"- Task failed with the skill: {text}")
    return lines


def notes_lines(skill: dict[str, Any], limit: int = LIST_LIMIT) -> list[str]:
    """Warnings and notes of one skill's report, as bullets (never under "what failed")."""
    report = skill.get("report") if isinstance(skill.get("report"), dict) else None
    if report is None:
        return []
    from ..agents.simulated import NOTES

    found = sections(report)
    # The simulated runner has its own banner at the top; do not repeat it per skill.
    notes = [m for m in found.notes if m not in NOTES]
    items = [f"warning: {m}" for m in found.warnings] + [f"note: {m}" for m in notes]
    return [f"- {_esc(item)}" for item in _limited(items, limit)]


def _code_list(ids: Sequence[str], limit: int) -> list[str]:
    return _limited([_esc(i) for i in ids], limit)


def _violation(v: dict[str, Any]) -> str:
    parts = [f"{_esc(v.get('caseId'))} trial {_esc(v.get('trial'))} {_esc(v.get('variant'))}"]
    if v.get("missing"):
        parts.append("missing " + ", ".join(_esc(n) for n in v["missing"]))
    if v.get("forbidden"):
        parts.append("forbidden " + ", ".join(_esc(n) for n in v["forbidden"]))
    return "; ".join(parts)


def _headline(ci_report: dict[str, Any]) -> str:
    status = str(ci_report.get("status"))
    counts: dict[str, int] = {}
    for skill in ci_report.get("skills") or []:
        counts[str(skill.get("status"))] = counts.get(str(skill.get("status")), 0) + 1
    # A known status is one of our own words; anything else came from the report.
    summary = (
        ", ".join(f"{n} {k if k in _CI_STATUSES else _esc(k)}" for k, n in sorted(counts.items()))
        or "no skills"
    )
    return (
        f"**{STATUS_ICON.get(status, _esc(status))}** "
        f"(exit {md_number(ci_report.get('exitCode'))}) — {summary}"
    )


def _base_line(ci_report: dict[str, Any]) -> str:
    base = ci_report.get("base") or {}
    if base.get("mode") == "git":
        sha = re.sub(r"[^0-9a-f]", "", str(base.get("sha", "")))[:12]
        return f"Changes found against {_esc(base.get('source', 'base'))} `{sha}`."
    words = base_words(base, _esc, md_number)
    if words is not None:
        return f"{words[0].upper()}{words[1:]}."
    return _esc(base.get("reason", "Every skill evaluated."))


def render_summary(ci_report: dict[str, Any], max_bytes: int = SUMMARY_MAX_BYTES) -> str:
    """The job summary: headline, verdict table, per failing skill what failed, the chart,
    then the trends of the history (when the run keeps one)."""
    skills = ci_report.get("skills") or []
    lines = ["## skill-evals", "", _headline(ci_report), "", _base_line(ci_report), ""]
    if ci_report.get("simulated"):
        lines += [
            "> **Simulated runner**: these figures come from `skill-evals runner "
            f"simulated`, not from a model. {ARTEFACTS}.",
            "",
        ]
    for message in ci_report.get("messages") or []:
        lines.append(f"> {_esc(message)}")
    if ci_report.get("messages"):
        lines.append("")
    if skills:
        lines += verdict_table(skills)
        lines.append("")
        lines += _scope_sections(skills)
    lines += ci_routing_markdown(ci_report.get("routing"))
    lines += listing_markdown(ci_report.get("listing"))
    failing = [s for s in skills if s.get("exitCode", 0) != 0]
    for skill in failing:
        lines.append(f"### {_esc(skill.get('name'))}: what failed")
        lines.append("")
        lines += failure_details(skill) or ["- see report.html"]
        lines.append("")
        lines += suggestion_markdown(skill, _esc)
    lines += draft_markdown(skills, _esc)
    noted = [(s, items) for s in skills if (items := notes_lines(s))]
    if noted:
        lines += ["### Warnings and notes", ""]
        for skill, items in noted:
            lines += [f"- {_esc(skill.get('name'))}:", *[f"  {item}" for item in items]]
        lines.append("")
    chart = pass_rate_chart(skills)
    if chart:
        lines += [*chart, ""]
    trends = trends_of_report(ci_report)
    if trends:
        lines += [*trends_markdown(trends), ""]
    text = "\n".join(lines)
    return cut_bytes(text, max_bytes)


def _scope_sections(skills: Sequence[dict[str, Any]]) -> list[str]:
    """Spot-check and early-stop notes, the baseline comparison, then the ledger."""
    lines: list[str] = []
    blocks = (scope_bullets(skills), comparison_bullets(skills), ledger_table(skills))
    for block in (*blocks, judge_ledger_table(skills)):
        if block:
            lines += [*block, ""]
    return lines


def cut_bytes(text: str, max_bytes: int) -> str:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes at a line boundary, with a note."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    note = (
        f"\n\n> Summary cut at {max_bytes:,} bytes; the full report is in report.html and "
        "report.json (workflow artifact).\n"
    )
    fence = "\n```"
    # Room for the note and for the fence that may close an open code block.
    budget = max_bytes - len(note.encode("utf-8")) - len(fence)
    head = data[: max(budget, 0)].decode("utf-8", "ignore")
    if "\n" in head:
        head = head[: head.rfind("\n")]
    if head.count("```") % 2:
        head += fence  # close an open code block so the note renders as text
    return head + note


def render_comment(
    ci_report: dict[str, Any],
    run_url: str | None = None,
    max_chars: int = COMMENT_MAX_CHARS,
    names: Iterable[str] = (),
) -> str:
    """The sticky PR comment: the marker first, then a compact version of the summary; detail
    lists shrink until the comment fits in ``max_chars``. Fork-safe: every string from the
    report is a code span unless it is one of ``names``, the skill names found in the
    checked-out base repository (see render/md_text.py)."""
    with fork_safe(names):
        for limit in (LIST_LIMIT, 5, 0):
            text = _comment(ci_report, run_url, limit)
            if len(text) <= max_chars:
                return text
    note = "\n\n… comment cut to fit GitHub's limit; see the job summary or report.html.\n"
    head = text[: max_chars - len(note)]
    if "\n" in head:
        head = head[: head.rfind("\n")]
    return head + note


def _comment(ci_report: dict[str, Any], run_url: str | None, limit: int) -> str:
    skills = ci_report.get("skills") or []
    shown = [s for s in skills if s.get("status") != "unchanged"]
    unchanged = len(skills) - len(shown)
    lines = [MARKER, "## skill-evals", "", _headline(ci_report), ""]
    if ci_report.get("simulated"):
        lines += [f"> **Simulated runner** — not a model. {ARTEFACTS}.", ""]
    if shown:
        lines += verdict_table(shown)
        lines.append("")
        lines += _scope_sections(shown)
    if unchanged:
        lines += [f"{unchanged} unchanged skill(s) not evaluated.", ""]
    routing = ci_report.get("routing")
    if limit or not isinstance(routing, dict) or routing.get("status") != "evaluated":
        lines += ci_routing_markdown(routing, compact=True)
    else:  # the smallest comment: the routing verdict line only
        lines += ci_routing_markdown(routing, compact=True)[:3]
    for index, message in enumerate(ci_report.get("messages") or []):
        # Every ignored policy change is named, however short the comment must be.
        if index < max(limit, 3) or str(message).startswith(POLICY_CHANGE):
            lines.append(f"> {_esc(message)}")
    failing = [s for s in shown if s.get("exitCode", 0) != 0]
    if limit:
        for skill in failing:
            # The summary's text stands between blank lines: GitHub then parses it as
            # Markdown (not as part of the HTML block), so the one Markdown escaper applies.
            name = _esc(skill.get("name"))
            lines += ["", "<details>", "<summary>", "", f"{name}: what failed", ""]
            lines += ["</summary>", ""]
            lines += failure_details(skill, limit) or ["- see the job summary"]
            lines += ["", *suggestion_markdown(skill, _esc), "</details>"]
    chart = pass_rate_chart(shown) if limit else []
    if chart:
        lines += ["", *chart]
    trends = trends_of_report(ci_report) if limit else []
    if trends:
        lines += ["", *trends_markdown(trends)]
    if run_url:
        lines += ["", f"[Full report]({run_url})"]
    return "\n".join(lines) + "\n"
