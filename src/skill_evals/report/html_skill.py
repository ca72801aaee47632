"""The per-skill section of the HTML report: verdict, what failed, runner failures by reason,
gates, lists and the per-case table (with answers only under --include-outputs)."""

from __future__ import annotations

from typing import Any

from .answers import AnswerBudget, Answers, case_answers
from .cells import fmt_num, skill_status
from .comparison import comparison_lines, gate_labels, pairs_text
from .diagnosis import gate_partial, partial_note, sections, settled_stop
from .html_base import anchor, badge, escape_html
from .judge_lines import run_notes

_e = escape_html


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


_LOAD_STATES = ("loaded", "unverified", "failed", "attempted", "offered")


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


def skill_section(
    skill: dict[str, Any], answers: Answers | None = None, budget: AnswerBudget | None = None
) -> str:
    """One skill of a CI report: its heading, then (when it was evaluated) what its report
    says, section by section, and the per-case table."""
    report = skill.get("report") if isinstance(skill.get("report"), dict) else None
    parts = [
        f'<h2 id="skill-{anchor(skill)}">{_e(skill.get("name"))} {badge(skill_status(skill))}</h2>',
        f"<p>Path <code>{_e(skill.get('path'))}</code>; cases "
        f"<code>{_e(skill.get('cases') or '—')}</code>; fingerprint "
        f"<code>{_e(str(skill.get('fingerprint') or '—')[:16])}</code></p>",
    ]
    if skill.get("reason"):
        parts.append(f"<p>{_e(skill['reason'])}</p>")
    if report is None:
        return "\n".join(parts)
    parts += _partial_parts(report)
    parts += _diagnosis_parts(report)
    parts.append(_gate_list(report))
    parts.append(_list("Compared with the baseline", [_e(x) for x in comparison_lines(report)]))
    parts += [f"<p>{_e(note[0].upper() + note[1:])}</p>" for note in run_notes(report)]
    task = report.get("task")
    if isinstance(task, dict) and task.get("mode") == "pairwise":  # the uplift's pairs
        parts.append(
            f"<p>Preference over the without answers: {_e(pairs_text(task, 'without'))}</p>"
        )
    parts += _trigger_parts(report)
    parts += _loading_parts(report)
    parts += _case_parts(report, answers, budget or AnswerBudget())
    return "\n".join(p for p in parts if p)


def _partial_parts(report: dict[str, Any]) -> list[str]:
    """A note that the figures rest on part of the plan (and whether the verdict stands)."""
    partial = partial_note(report)
    if partial and settled_stop(report):
        return [
            f"<p class='note'><strong>Stopped early</strong> ({_e(partial)}): the verdict is "
            "the result; the figures rest on the invocations that ran.</p>"
        ]
    if partial:
        return [
            f"<p class='note'><strong>Partial figures</strong> ({_e(partial)}): the run did not "
            "complete, so they are not the result.</p>"
        ]
    return []


def _diagnosis_parts(report: dict[str, Any]) -> list[str]:
    """What failed, runner failures by reason, warnings and notes."""
    found = sections(report)
    parts = [_list("What failed", [f'<span class="bad">{_e(m)}</span>' for m in found.failed])]
    if found.failures:
        rows = "".join(
            f'<tr><td>{_e(g.reason)}</td><td class="num">{g.count}</td>'
            f"<td><code>{_e(g.case_id)}</code> trial {_e(g.trial)} {_e(g.variant)}</td>"
            f"<td>{_e(g.advice_text)}</td></tr>"
            for g in found.failures
        )
        parts.append(
            "<h4>Runner failures by reason</h4><table><tr><th>reason</th><th>count</th>"
            f"<th>first</th><th>what to do</th></tr>{rows}</table>"
        )
    parts.append(_list("Warnings", [f'<span class="warn">{_e(m)}</span>' for m in found.warnings]))
    parts.append(_list("Notes", [_e(m) for m in found.notes]))
    return parts


def _gate_list(report: dict[str, Any]) -> str:
    """Each configured gate: its value against its threshold and the verdict."""
    gates = report.get("gates") or {}
    gate_items = []
    for key, (label, _sign, _option) in gate_labels(report).items():
        gate = gates.get(key)
        if isinstance(gate, dict):
            passed = gate.get("passed")
            verdict = "passed" if passed is True else "failed" if passed is False else "not decided"
            css = "ok" if passed is True else "bad" if passed is False else "warn"
            gate_items.append(
                f'<span class="{css}">{label} '
                f"{fmt_num(gate.get('value'))}{_e(gate_partial(gate, report))} vs threshold "
                f"{fmt_num(gate.get('threshold'))}: "
                f"{verdict}</span>"
            )
    return _list("Gates", gate_items)


def _trigger_parts(report: dict[str, Any]) -> list[str]:
    """The trigger table, the missed and the false triggers."""
    trigger = report.get("trigger") or {}
    parts = []
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
    for title, key in (
        ("Missed triggers", "missedTriggerCaseIds"),
        ("False triggers", "falseTriggerCaseIds"),
    ):
        parts.append(_list(title, [f"<code>{_e(c)}</code>" for c in trigger.get(key) or []]))
    return parts


def _loading_parts(report: dict[str, Any]) -> list[str]:
    """Loading violations, loads tried and not made, and each runner failure."""
    loading = report.get("loading") or {}
    violations = loading.get("violations") or []
    attempted = loading.get("attemptedNotLoaded") or []
    failures = (report.get("runner") or {}).get("failures") or []
    return [
        _list(
            "Loading violations",
            [
                f"<code>{_e(v.get('caseId'))}</code> trial {_e(v.get('trial'))} "
                f"{_e(v.get('variant'))}: missing {_names(v.get('missing'))}; "
                f"forbidden {_names(v.get('forbidden'))}"
                for v in violations
            ],
        ),
        _list(
            "Tried to load the skill, not loaded",
            [f"<code>{_e(c)}</code>" for c in attempted],
        ),
        _list(
            "Runner failures",
            [
                f"<code>{_e(f.get('caseId'))}</code> trial {_e(f.get('trial'))} "
                f"{_e(f.get('variant'))}: {_e(f.get('reason'))}"
                for f in failures
            ],
        ),
    ]


def _case_parts(report: dict[str, Any], answers: Answers | None, budget: AnswerBudget) -> list[str]:
    """The per-case table (answers in it only with ``answers``: --include-outputs)."""
    cases = report.get("caseResults") or []
    if not cases:
        return []
    rows = "".join(_case_row(c, answers, budget) for c in cases)
    parts = [
        f"<details open><summary>Per-case detail ({len(cases)} cases)</summary>"
        "<table><tr><th>case</th><th>line</th><th>should trigger</th>"
        "<th>skill loaded (per trial)</th><th>task with</th><th>task without</th>"
        "<th>load evidence</th><th>first failing check</th>"
        + ("<th>answers (--include-outputs)</th>" if answers is not None else "")
        + f"</tr>{rows}</table></details>"
    ]
    if budget.cut_short:
        parts.append("<p class='note'>Some answers were left out: the page is full.</p>")
    return parts


def _case_row(c: dict[str, Any], answers: Answers | None, budget: AnswerBudget) -> str:
    return (
        "<tr>"
        f"<td><code>{_e(c.get('id'))}</code>{_source(c.get('source'))}</td>"
        f'<td class="num">{_e(c.get("line"))}</td>'
        f"<td>{'yes' if c.get('expectTrigger') else 'no'}</td>"
        f"<td>{_trigger_marks(c.get('triggered'), c.get('expectTrigger'))}</td>"
        f"<td>{_marks(c.get('with'))}</td>"
        f"<td>{_marks(c.get('without'))}</td>"
        f"<td>{_state_marks(c.get('loadState'))}</td>"
        f"<td>{_failed_check(c.get('failedCheck'))}</td>"
        + (
            f"<td>{case_answers(str(c.get('id')), c.get('triggered') or [], answers, budget)}</td>"
            if answers is not None
            else ""
        )
        + "</tr>"
    )


def _source(source: object) -> str:
    """`` (drafted)`` after the id of a case whose ``source`` says where it came from."""
    return f" <small>({_e(source)})</small>" if isinstance(source, str) and source else ""


def _failed_check(failed: object) -> str:
    """``with, trial 2: file_contains CHANGELOG.md: '## 1.2.0' not found`` (escaped)."""
    if not isinstance(failed, dict):
        return ""
    return (
        f"{_e(failed.get('variant'))}, trial {_e(failed.get('trial'))}: {_e(failed.get('reason'))}"
    )
