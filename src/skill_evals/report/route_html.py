"""A route report as one self-contained HTML page (``route --format html``; the CI report.html
embeds :func:`routing_section`). No script, no external asset, the CI report's
Content-Security-Policy; the confusion matrix is a heat-map table: each cell's shade grows with
its count, green on the diagonal (loaded as expected), red elsewhere. Every user string goes
through :func:`escape_html`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .diagnosis import gate_partial, partial_note, sections
from .html_base import escape_html, html_page
from .numbers import confusion_cells, fmt, fmt_threshold
from .route_text import SHOWN_COLLISIONS, id_list, next_steps, verdict_summary
from .values import confusion_matrix, mapping, mappings

_e = escape_html

STATUS_CLASS = {"pass": "ok", "fail": "bad", "invalid": "bad"}

# The heat map's own rules, also used where the section is embedded in the CI report.html.
HEAT_CSS = """
table.heat td { text-align: center; min-width: 2.5rem; font-variant-numeric: tabular-nums; }
table.heat th.col { writing-mode: vertical-rl; transform: rotate(180deg); }
"""

CSS = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700;
  --line: #d0d7de; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem;
  max-width: 1100px; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .6rem; text-align: left; }
th { background: rgba(127,127,127,.1); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
.note { border-left: 4px solid var(--warn); padding: .25rem .75rem; }
"""


def _shade(count: int, peak: int, diagonal: bool) -> str:
    """The inline style of a heat-map cell: transparent at 0, the full colour at ``peak``."""
    if count <= 0 or peak <= 0:
        return ""
    alpha = 0.15 + 0.7 * count / peak
    rgb = "45,164,78" if diagonal else "207,34,46"
    return f' style="background: rgba({rgb},{alpha:.2f})"'


def heat_map(report: Mapping[str, Any]) -> str:
    """The confusion matrix as a table: rows expected, columns loaded, one cell per pair."""
    labels, counts = confusion_matrix(report)
    if not labels:
        return ""
    peak = max((int(v) for row in counts for v in row), default=0)
    head = "".join(f'<th class="col" scope="col">{_e(x)}</th>' for x in labels)
    rows = []
    for r, (label, row) in enumerate(zip(labels, counts, strict=False)):
        cells = "".join(
            f'<td title="expected {_e(label)}, loaded {_e(labels[c])}: {int(v)}"'
            f"{_shade(int(v), peak, r == c)}>{int(v)}</td>"
            for c, v in enumerate(row)
        )
        rows.append(f'<tr><th scope="row">{_e(label)}</th>{cells}</tr>')
    return (
        '<table class="heat" id="confusion"><caption>Confusion matrix: rows are the expected '
        "skill, columns the loaded one; counts of observations</caption>"
        f"<tr><th>expected \\ loaded</th>{head}</tr>{''.join(rows)}</table>"
    )


def routing_section(report: Mapping[str, Any]) -> str:
    """The routing part of a page: verdict, per-skill table, gates, heat map, collisions,
    messages and what to do next."""
    status = str(report.get("status"))
    css = STATUS_CLASS.get(status, "warn")
    parts = [
        f'<h2 id="routing">Routing <span class="{css}">{_e(status)}</span> '
        f"<small>exit {_e(report.get('exitCode'))}</small></h2>",
        f"<p>{_e(verdict_summary(report))}</p>",
    ]
    partial = partial_note(report)
    if partial:
        parts.append(
            f"<p class='note'>Partial figures — {_e(partial)}: they are not the result.</p>"
        )
    parts += [_per_skill_table(report), _gate_table(report), heat_map(report)]
    parts += [_collision_list(report), *_diagnosis_parts(report), _case_table(report)]
    return "\n".join(p for p in parts if p)


def _per_skill_table(report: Mapping[str, Any]) -> str:
    per_skill = mappings(report.get("perSkill"))
    if not per_skill:
        return ""
    rows = "".join(
        f"<tr><td>{_e(s.get('name'))}</td>"
        + "".join(
            f"<td class='num'>{_e(cell)}</td>"
            for cell in confusion_cells(s, ("expectedBy", "tp", "fp", "fn"))
        )
        + "</tr>"
        for s in per_skill
    )
    return (
        "<table><tr><th>Skill</th><th>Cases</th><th>TP</th><th>FP</th><th>FN</th>"
        f"<th>Precision</th><th>Recall</th><th>F1</th></tr>{rows}</table>"
    )


def _gate_table(report: Mapping[str, Any]) -> str:
    gates = mapping(report.get("gates"))
    gate_rows = []
    for key, label in (("minAccuracy", "accuracy"), ("minSkillF1", "lowest skill F1")):
        gate = gates.get(key)
        if isinstance(gate, Mapping):
            passed = gate.get("passed")
            verdict = "passed" if passed is True else "failed" if passed is False else "not decided"
            gate_rows.append(
                f"<tr><td>{label} ≥ {_e(fmt_threshold(gate.get('threshold')))}</td>"
                f"<td class='num'>{fmt(gate.get('value'))}{_e(gate_partial(gate, report))}</td>"
                f"<td>{verdict}</td></tr>"
            )
    if not gate_rows:
        return ""
    return f"<table><tr><th>Gate</th><th>Value</th><th>Result</th></tr>{''.join(gate_rows)}</table>"


def _collision_list(report: Mapping[str, Any]) -> str:
    collisions = mappings(report.get("collisions"))
    if not collisions:
        return ""
    collision_items = "".join(
        f"<li>{_e(c.get('a'))} ↔ {_e(c.get('b'))}: {_e(c.get('count'))} observation(s) on "
        f"cases {id_list(list(c.get('caseIds') or []), _e)}</li>"
        for c in collisions[:SHOWN_COLLISIONS]
    )
    return f"<h3>Top collisions</h3><ul>{collision_items}</ul>"


def _diagnosis_parts(report: Mapping[str, Any]) -> list[str]:
    """What failed, warnings, notes, runner failures by reason and what to do next."""
    found = sections(report)
    parts = []
    for title, items in (
        ("What failed", found.failed),
        ("Warnings", found.warnings),
        ("Notes", found.notes),
    ):
        if items:
            parts.append(f"<h3>{title}</h3><ul>{''.join(f'<li>{_e(m)}</li>' for m in items)}</ul>")
    if found.failures:
        rows = "".join(
            f"<tr><td>{_e(g.reason)}</td><td class='num'>{g.count}</td>"
            f"<td>{_e(g.case_id)} trial {_e(g.trial)}</td><td>{_e(g.advice_text)}</td></tr>"
            for g in found.failures
        )
        parts.append(
            "<h3>Runner failures</h3><table><tr><th>Reason</th><th>Count</th><th>First</th>"
            f"<th>What to do</th></tr>{rows}</table>"
        )
    steps = next_steps(report, _e)
    if steps:
        parts.append(f"<h3>What to do next</h3><ul>{''.join(f'<li>{s}</li>' for s in steps)}</ul>")
    return parts


def _case_table(report: Mapping[str, Any]) -> str:
    results = mappings(report.get("caseResults"))
    if not results:
        return ""
    case_rows = "".join(
        f"<tr><td>{_e(r.get('id'))}</td><td class='num'>{_e(r.get('line'))}</td>"
        f"<td>{_e(', '.join(map(str, r.get('expect') or [])) or 'none')}</td>"
        f"<td>{_loads(r)}</td></tr>"
        for r in results
    )
    return (
        "<details><summary>Per case</summary><table><tr><th>Case</th><th>Line</th>"
        f"<th>Expected</th><th>Loaded per trial</th></tr>{case_rows}</table></details>"
    )


def _loads(result: Mapping[str, Any]) -> str:
    out = []
    for got, ok in zip(result.get("loaded") or [], result.get("correct") or [], strict=False):
        if not isinstance(got, list):
            out.append("<span class='warn'>not run</span>")
            continue
        text = _e(", ".join(map(str, got)) or "none")
        out.append(f"<span class='{'ok' if ok else 'bad'}'>{text}</span>")
    return " · ".join(out)


def render_route_html(report: Mapping[str, Any]) -> str:
    """The whole route report as one self-contained HTML document."""
    status = _e(report.get("status"))
    body = f"<h1>skill-evals routing</h1>\n{routing_section(report)}"
    return html_page(f"skill-evals routing: {status}", CSS + HEAT_CSS, body)


def ci_routing_html(entry: object) -> str:
    """The routing entry of the CI report.html: the full section when it was evaluated, one
    line saying why otherwise ("" when the run has no routing entry)."""
    if not isinstance(entry, Mapping):
        return ""
    report = entry.get("report")
    if isinstance(report, Mapping):
        return f"<style>{HEAT_CSS}</style>\n{routing_section(report)}"
    status = _e(entry.get("status"))
    return (
        f'<h2 id="routing">Routing <span class="muted">{status}</span></h2>'
        f"<p>{_e(entry.get('reason') or '')}</p>"
    )
