"""`report.html` of the CI gate: one self-contained file (inline CSS, no script, no external
asset, a Content-Security-Policy that forbids loading anything) with the summary's content plus
per-case detail. Every user-controlled string goes through ``escape_html``, the one HTML
escaper: markup characters become entities, and control, format (bidi overrides, zero-width)
and separator characters are shown as visible ``\\uXXXX`` text, never written raw.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ..ci.summary import fmt_num, fmt_signed, partial_mark, skill_status
from ..terminal import terminal_safe
from .answers import AnswerBudget, Answers, case_answers
from .diagnosis import partial_note, sections

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
}

_CSS = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700;
  --muted: #6e7781; --line: #d0d7de; --bar-with: #2da44e; --bar-without: #8c959f; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem;
  max-width: 1100px; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.3rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .6rem; text-align: left;
  vertical-align: top; }
th { background: rgba(127,127,127,.1); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
.muted { color: var(--muted); }
.badge { font-weight: 600; }
.note { border-left: 4px solid var(--warn); padding: .25rem .75rem; }
.bars { display: grid; grid-template-columns: max-content 5rem 300px 4rem; gap: .2rem .6rem;
  align-items: center; }
.track { background: rgba(127,127,127,.15); height: .9rem; }
.fill-with { background: var(--bar-with); height: 100%; }
.fill-without { background: var(--bar-without); height: 100%; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 90%; }
details { margin: .5rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20rem; overflow: auto;
  background: rgba(127,127,127,.08); padding: .4rem; margin: .2rem 0 .6rem; }
"""


def escape_html(value: object) -> str:
    """``value`` as HTML text or attribute content: the invisible characters made visible
    (as on a terminal), then ``&``, ``<``, ``>`` and both quotes as entities."""
    return escape(terminal_safe(value), quote=True)


_e = escape_html


def _badge(status: str) -> str:
    return f'<span class="badge {STATUS_CLASS.get(status, "warn")}">{_e(status)}</span>'


def _verdict_rows(skills: list[dict[str, Any]]) -> str:
    rows = []
    for skill in skills:
        report = skill.get("report") if isinstance(skill.get("report"), dict) else {}
        assert isinstance(report, dict)
        trigger = report.get("trigger") or {}
        task = report.get("task") if isinstance(report.get("task"), dict) else None
        if task is not None:
            interval = task.get("interval") or {}
            uplift = (
                f"{fmt_signed(task.get('difference'))} [{fmt_signed(interval.get('lower'))}, "
                f"{fmt_signed(interval.get('upper'))}]"
            )
            if task.get("insufficient"):
                uplift += " (insufficient)"
            uplift += partial_mark(report)
            p_value = fmt_num((task.get("signTest") or {}).get("pValue"), 3)
        else:
            uplift, p_value = "—", "—"
        runner = report.get("runner") or {}
        runs = str(runner.get("invocations", "—")) if runner else "—"
        if runner.get("failures"):
            runs += f" ({len(runner['failures'])} failed)"
        rows.append(
            "<tr>"
            f'<td><a href="#skill-{_anchor(skill)}">{_e(skill.get("name"))}</a></td>'
            f"<td><code>{_e(skill.get('path'))}</code></td>"
            f"<td>{_badge(skill_status(skill))}</td>"
            f'<td class="num">{fmt_num(trigger.get("f1"))}'
            f"{_e(partial_mark(report)) if trigger else ''}</td>"
            f'<td class="num">{_e(uplift)}</td>'
            f'<td class="num">{p_value}</td>'
            f'<td class="num">{_e(runs)}</td>'
            "</tr>"
        )
    return "\n".join(rows)


def _anchor(skill: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(str(skill.get("path")).encode("utf-8")).hexdigest()[:12]


def _bars(skills: list[dict[str, Any]]) -> str:
    cells = []
    for skill in skills:
        report = skill.get("report") if isinstance(skill.get("report"), dict) else {}
        assert isinstance(report, dict)
        task = report.get("task")
        if not isinstance(task, dict):
            continue
        for variant in ("with", "without"):
            rate = (task.get(variant) or {}).get("passRate")
            if not isinstance(rate, (int, float)):
                continue
            pct = max(0.0, min(1.0, float(rate))) * 100
            label = _e(skill.get("name")) if variant == "with" else ""
            cells.append(
                f"<div>{label}</div><div>{variant}</div>"
                f'<div class="track"><div class="fill-{variant}" style="width:{pct:.1f}%">'
                f'</div></div><div class="num">{pct:.1f}%</div>'
            )
    if not cells:
        return ""
    return (
        "<h2>Task pass rate, with vs without the skill</h2>\n"
        f'<div class="bars">{"".join(cells)}</div>'
    )


def _list(title: str, items: list[str]) -> str:
    if not items:
        return ""
    lis = "".join(f"<li>{item}</li>" for item in items)
    return f"<h4>{_e(title)}</h4><ul>{lis}</ul>"


def _names(values: object) -> str:
    if not isinstance(values, list) or not values:
        return "—"
    return _e(", ".join(str(v) for v in values))


def _marks(values: object) -> str:
    if not isinstance(values, list):
        return "—"
    out = []
    for value in values:
        if value is True:
            out.append('<span class="ok">✓</span>')
        elif value is False:
            out.append('<span class="bad">✗</span>')
        else:
            out.append('<span class="muted">·</span>')
    return " ".join(out) or "—"


_LOAD_STATES = ("loaded", "failed", "attempted", "offered")


def _state_marks(load_state: object) -> str:
    """Per variant and trial: the tested skill's state in the runner's evidence."""
    if not isinstance(load_state, dict):
        return "—"
    rows = []
    for variant in ("with", "without"):
        values = load_state.get(variant)
        if not isinstance(values, list) or not any(v in _LOAD_STATES for v in values):
            continue
        marks = " ".join(
            _e(v) if v in _LOAD_STATES else '<span class="muted">·</span>' for v in values
        )
        rows.append(f"{variant}: {marks}")
    return "<br>".join(rows) or "—"


def _trigger_marks(values: object, expect: object) -> str:
    """Per trial: loaded or not, green when that was right for the case, red when wrong."""
    if not isinstance(values, list) or not values:
        return "—"
    out = []
    for value in values:
        if not isinstance(value, bool):
            out.append('<span class="muted">·</span>')
            continue
        right = value == bool(expect)
        out.append(
            f'<span class="{"ok" if right else "bad"}">{"loaded" if value else "not loaded"}</span>'
        )
    return " ".join(out)


def _skill_section(
    skill: dict[str, Any], answers: Answers | None = None, budget: AnswerBudget | None = None
) -> str:
    report = skill.get("report") if isinstance(skill.get("report"), dict) else None
    parts = [
        f'<h2 id="skill-{_anchor(skill)}">{_e(skill.get("name"))} '
        f"{_badge(skill_status(skill))}</h2>",
        f"<p>Path <code>{_e(skill.get('path'))}</code>; cases "
        f"<code>{_e(skill.get('cases') or '—')}</code>; fingerprint "
        f"<code>{_e(str(skill.get('fingerprint') or '—')[:16])}</code></p>",
    ]
    if skill.get("reason"):
        parts.append(f"<p>{_e(skill['reason'])}</p>")
    if report is None:
        return "\n".join(parts)
    found = sections(report)
    partial = partial_note(report)
    if partial:
        parts.append(
            f"<p class='note'><strong>Partial figures</strong> ({_e(partial)}): the run did not "
            "complete, so they are not the result.</p>"
        )
    parts.append(_list("What failed", [f'<span class="bad">{_e(m)}</span>' for m in found.failed]))
    if found.failures:
        rows = "".join(
            f'<tr><td>{_e(g.reason)}</td><td class="num">{g.count}</td>'
            f"<td><code>{_e(g.case_id)}</code> trial {_e(g.trial)} {_e(g.variant)}</td>"
            f"<td>{_e(g.advice)}</td></tr>"
            for g in found.failures
        )
        parts.append(
            "<h4>Runner failures by reason</h4><table><tr><th>reason</th><th>count</th>"
            f"<th>first</th><th>what to do</th></tr>{rows}</table>"
        )
    parts.append(_list("Warnings", [f'<span class="warn">{_e(m)}</span>' for m in found.warnings]))
    parts.append(_list("Notes", [_e(m) for m in found.notes]))
    gates = report.get("gates") or {}
    gate_items = []
    for key, label in (("minTriggerF1", "trigger F1"), ("minUplift", "uplift lower bound")):
        gate = gates.get(key)
        if isinstance(gate, dict):
            passed = gate.get("passed")
            verdict = "passed" if passed is True else "failed" if passed is False else "not decided"
            css = "ok" if passed is True else "bad" if passed is False else "warn"
            gate_items.append(
                f'<span class="{css}">{label} '
                f"{fmt_num(gate.get('value'))} vs threshold {fmt_num(gate.get('threshold'))}: "
                f"{verdict}</span>"
            )
    parts.append(_list("Gates", gate_items))
    trigger = report.get("trigger") or {}
    if trigger:
        parts.append(
            "<table><tr><th>TP</th><th>FP</th><th>FN</th><th>TN</th><th>precision</th>"
            "<th>recall</th><th>F1</th></tr><tr>"
            + "".join(
                f'<td class="num">{_e(trigger.get(k, "—"))}</td>' for k in ("tp", "fp", "fn", "tn")
            )
            + "".join(
                f'<td class="num">{fmt_num(trigger.get(k))}</td>'
                for k in ("precision", "recall", "f1")
            )
            + "</tr></table>"
        )
    parts.append(
        _list(
            "Missed triggers",
            [f"<code>{_e(c)}</code>" for c in trigger.get("missedTriggerCaseIds") or []],
        )
    )
    parts.append(
        _list(
            "False triggers",
            [f"<code>{_e(c)}</code>" for c in trigger.get("falseTriggerCaseIds") or []],
        )
    )
    violations = (report.get("loading") or {}).get("violations") or []
    parts.append(
        _list(
            "Loading violations",
            [
                f"<code>{_e(v.get('caseId'))}</code> trial {_e(v.get('trial'))} "
                f"{_e(v.get('variant'))}: missing {_names(v.get('missing'))}; "
                f"forbidden {_names(v.get('forbidden'))}"
                for v in violations
            ],
        )
    )
    attempted = (report.get("loading") or {}).get("attemptedNotLoaded") or []
    parts.append(
        _list(
            "Tried to load the skill, not loaded",
            [f"<code>{_e(c)}</code>" for c in attempted],
        )
    )
    failures = (report.get("runner") or {}).get("failures") or []
    parts.append(
        _list(
            "Runner failures",
            [
                f"<code>{_e(f.get('caseId'))}</code> trial {_e(f.get('trial'))} "
                f"{_e(f.get('variant'))}: {_e(f.get('reason'))}"
                for f in failures
            ],
        )
    )
    cases = report.get("caseResults") or []
    if cases:
        shown = answers is not None
        budget = budget or AnswerBudget()
        rows = "".join(
            "<tr>"
            f"<td><code>{_e(c.get('id'))}</code></td>"
            f'<td class="num">{_e(c.get("line"))}</td>'
            f"<td>{'yes' if c.get('expectTrigger') else 'no'}</td>"
            f"<td>{_trigger_marks(c.get('triggered'), c.get('expectTrigger'))}</td>"
            f"<td>{_marks(c.get('with'))}</td>"
            f"<td>{_marks(c.get('without'))}</td>"
            f"<td>{_state_marks(c.get('loadState'))}</td>"
            f"<td>{_failed_check(c.get('failedCheck'))}</td>"
            + (
                f"<td>{case_answers(str(c.get('id')), c.get('triggered') or [], answers, budget)}"
                "</td>"
                if answers is not None
                else ""
            )
            + "</tr>"
            for c in cases
        )
        parts.append(
            f"<details open><summary>Per-case detail ({len(cases)} cases)</summary>"
            "<table><tr><th>case</th><th>line</th><th>should trigger</th>"
            "<th>skill loaded (per trial)</th><th>task with</th><th>task without</th>"
            "<th>load evidence</th><th>first failing check</th>"
            + ("<th>answers (--include-outputs)</th>" if shown else "")
            + f"</tr>{rows}</table></details>"
        )
        if budget.cut_short:
            parts.append("<p class='note'>Some answers were left out: the page is full.</p>")
    return "\n".join(p for p in parts if p)


def _failed_check(failed: object) -> str:
    """``with, trial 2: file_contains CHANGELOG.md: '## 1.2.0' not found`` (escaped)."""
    if not isinstance(failed, dict):
        return ""
    return (
        f"{_e(failed.get('variant'))}, trial {_e(failed.get('trial'))}: {_e(failed.get('reason'))}"
    )


def render_test_html(
    report: dict[str, Any], name: str, path: str, answers: Answers | None = None
) -> str:
    """One `skill-evals test` report as the same self-contained page (``answers`` only with
    --include-outputs)."""
    cases = report.get("cases") or {}
    skill = {
        "name": name,
        "path": path,
        "cases": cases.get("path") if isinstance(cases, Mapping) else None,
        "status": "evaluated",
        "exitCode": report.get("exitCode"),
        "report": report,
    }
    page = {
        "tool": report.get("tool"),
        "status": report.get("status"),
        "exitCode": report.get("exitCode"),
        "base": {"mode": "test"},
        "skills": [skill],
        "messages": [],
    }
    return render_html(page, None if answers is None else {path: answers})


def render_html(ci_report: dict[str, Any], answers: Mapping[str, Answers] | None = None) -> str:
    """The whole CI report as one self-contained HTML document. ``answers`` (skill path →
    answers, --include-outputs / include-outputs only) adds each run's answer text to the
    per-case detail."""
    skills = [s for s in ci_report.get("skills") or [] if isinstance(s, dict)]
    status = str(ci_report.get("status"))
    base = ci_report.get("base") or {}
    messages = "".join(f"<p class='note'>{_e(m)}</p>" for m in ci_report.get("messages") or [])
    simulated = (
        "<p class='note'><strong>Simulated runner</strong>: these figures come from "
        "<code>skill-evals runner simulated</code>, not from a model.</p>"
        if ci_report.get("simulated")
        else ""
    )
    base_text = _e(base.get("reason") or base.get("mode") or "")
    if base.get("mode") == "git":
        sha = _e(str(base.get("sha", ""))[:12])
        base_text = f"against {_e(base.get('source', 'base'))} <code>{sha}</code>"
    elif base.get("mode") == "lock":
        base_text = f"against the lock file <code>{_e(base.get('lockFile', ''))}</code>"
    table = (
        "<table><tr><th>Skill</th><th>Path</th><th>Status</th><th>Trigger F1</th>"
        "<th>Uplift [95% CI]</th><th>p-value</th><th>Runs</th></tr>\n"
        f"{_verdict_rows(skills)}</table>"
        if skills
        else "<p>No skill found.</p>"
    )
    exit_code = _e(ci_report.get("exitCode"))
    version = _e((ci_report.get("tool") or {}).get("version", ""))
    budget = AnswerBudget()
    sections = "\n".join(
        _skill_section(s, (answers or {}).get(str(s.get("path"))) if answers else None, budget)
        for s in skills
        if s.get("status") != "unchanged"
    )
    changes = "" if base.get("mode") == "test" else f"<p>Changes found {base_text}.</p>"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>skill-evals report: {_e(status)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>skill-evals {_badge(status)} <small class="muted">exit {exit_code}</small></h1>
{changes}
{simulated}
{messages}
{table}
{_bars(skills)}
{sections}
<footer class="muted"><p>Generated by skill-evals {version}.</p></footer>
</body>
</html>
"""
