"""`report.html` of the CI gate: one self-contained file (inline CSS, no script, no external
asset, a Content-Security-Policy that forbids loading anything) with the summary's content plus
per-case detail. Every user-controlled string goes through ``escape_html``, the one HTML
escaper: markup characters become entities, and control, format (bidi overrides, zero-width)
and separator characters are shown as visible ``\\uXXXX`` text, never written raw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import ARTEFACTS
from .answers import AnswerBudget, Answers
from .cells import fmt_num, fmt_signed, skill_status
from .diagnosis import partial_suffix
from .html_base import anchor, badge, escape_html, html_page
from .html_skill import skill_section

_e = escape_html

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
            uplift += partial_suffix(report)
            p_value = fmt_num((task.get("signTest") or {}).get("pValue"), 3)
        else:
            uplift, p_value = "—", "—"
        runner = report.get("runner") or {}
        runs = str(runner.get("invocations", "—")) if runner else "—"
        if runner.get("failures"):
            runs += f" ({len(runner['failures'])} failed)"
        rows.append(
            "<tr>"
            f'<td><a href="#skill-{anchor(skill)}">{_e(skill.get("name"))}</a></td>'
            f"<td><code>{_e(skill.get('path'))}</code></td>"
            f"<td>{badge(skill_status(skill))}</td>"
            f'<td class="num">{fmt_num(trigger.get("f1"))}'
            f"{_e(partial_suffix(report)) if trigger else ''}</td>"
            f'<td class="num">{_e(uplift)}</td>'
            f'<td class="num">{p_value}</td>'
            f'<td class="num">{_e(runs)}</td>'
            "</tr>"
        )
    return "\n".join(rows)


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


def _base_text(base: Mapping[str, Any]) -> str:
    """What the changes were found against: a git commit, the lock file, or why none."""
    if base.get("mode") == "git":
        sha = _e(str(base.get("sha", ""))[:12])
        return f"against {_e(base.get('source', 'base'))} <code>{sha}</code>"
    if base.get("mode") == "lock":
        return f"against the lock file <code>{_e(base.get('lockFile', ''))}</code>"
    return _e(base.get("reason") or base.get("mode") or "")


def render_test_html(
    report: dict[str, Any],
    name: str,
    path: str,
    answers: Answers | None = None,
    cases_path: str | None = None,
) -> str:
    """One `skill-evals test` report as the same self-contained page (``answers`` only with
    --include-outputs; ``cases_path``: how the case file is named, else as the report has it)."""
    cases = report.get("cases") or {}
    skill = {
        "name": name,
        "path": path,
        "cases": cases_path or (cases.get("path") if isinstance(cases, Mapping) else None),
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


def render_html(
    ci_report: dict[str, Any],
    answers: Mapping[str, Answers] | None = None,
    extra: str = "",
) -> str:
    """The whole CI report as one self-contained HTML document (``extra``: more sections,
    already escaped HTML, e.g. the routing entry's). ``answers`` (skill path →
    answers, --include-outputs / include-outputs only) adds each run's answer text to the
    per-case detail."""
    skills = [s for s in ci_report.get("skills") or [] if isinstance(s, dict)]
    status = str(ci_report.get("status"))
    base = ci_report.get("base") or {}
    messages = "".join(f"<p class='note'>{_e(m)}</p>" for m in ci_report.get("messages") or [])
    simulated = (
        "<p class='note'><strong>Simulated runner</strong>: these figures come from "
        f"<code>skill-evals runner simulated</code>, not from a model. {_e(ARTEFACTS)}.</p>"
        if ci_report.get("simulated")
        else ""
    )
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
        skill_section(s, (answers or {}).get(str(s.get("path"))) if answers else None, budget)
        for s in skills
        if s.get("status") != "unchanged"
    )
    changes = "" if base.get("mode") == "test" else f"<p>Changes found {_base_text(base)}.</p>"
    body = f"""<h1>skill-evals {badge(status)} <small class="muted">exit {exit_code}</small></h1>
{changes}
{simulated}
{messages}
{table}
{_bars(skills)}
{sections}
{extra}
<footer class="muted"><p>Generated by skill-evals {version}.</p></footer>"""
    return html_page(f"skill-evals report: {_e(status)}", _CSS, body)
