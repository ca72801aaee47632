"""The route report for a person (``route --format text``), and the summaries the Markdown and
HTML renderers share: the verdict line and what to do next.

Reads only the report dict (no prompts, outputs or stderr). Every user string goes through the
output's escaping function: :func:`terminal_safe` here, the caller's ``esc`` in the shared
helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..escaping.terminal import terminal_safe
from .diagnosis import gate_partial, partial_note, sections
from .lists import LIST_LIMIT, limited
from .numbers import confusion_cells, fmt, fmt_threshold, is_number
from .text import STATUS_WORD, bullet_list, next_step_lines
from .values import mapping

Esc = Callable[[object], str]
SHOWN_COLLISIONS = 5
SHOWN_IDS = 5
MATRIX_MAX_LABELS = 12  # wider matrices are left to the JSON, Markdown and HTML reports


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def id_list(ids: Sequence[object], esc: Esc, limit: int = SHOWN_IDS) -> str:
    """``a, b, c`` (escaped), with ``and N more`` past ``limit``."""
    shown = ", ".join(esc(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def verdict_summary(report: Mapping[str, Any]) -> str:
    """``accuracy 0.900, micro F1 0.917, macro F1 0.905 over 3 skills`` (numbers and counts
    only: safe in every output)."""
    catalog = _list(report.get("catalog"))
    if report.get("accuracy") is None and report.get("perSkill") is None:
        return f"{len(catalog)} skill(s) in the catalog, not scored" if catalog else "not scored"
    return (
        f"accuracy {fmt(report.get('accuracy'))}, micro F1 {fmt(report.get('microF1'))}, "
        f"macro F1 {fmt(report.get('macroF1'))} over {len(catalog)} skill(s)"
    )


def _per_case(report: Mapping[str, Any]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(skill → cases where it was expected and nothing else loaded instead, skill → cases
    expecting no skill where it loaded), in case-file order."""
    missed: dict[str, list[str]] = {}
    stray: dict[str, list[str]] = {}
    for result in _list(report.get("caseResults")):
        result = mapping(result)
        case_id = str(result.get("id"))
        expect = [str(e) for e in _list(result.get("expect"))]
        for loaded in _list(result.get("loaded")):
            if not isinstance(loaded, list):
                continue
            names = [str(n) for n in loaded]
            extra = [n for n in names if n not in expect]
            if not expect:
                for name in extra:
                    ids = stray.setdefault(name, [])
                    if case_id not in ids:
                        ids.append(case_id)
            elif not extra:
                for name in expect:
                    ids = missed.setdefault(name, [])
                    if name not in names and case_id not in ids:
                        ids.append(case_id)
    return missed, stray


def next_steps(report: Mapping[str, Any], esc: Esc) -> list[str]:
    """What to do about the routing figures, most useful first (every name escaped)."""
    steps: list[str] = []
    collisions = [mapping(c) for c in _list(report.get("collisions"))]
    for collision in collisions[:SHOWN_COLLISIONS]:
        ids = _list(collision.get("caseIds"))
        steps.append(
            f"descriptions of {esc(collision.get('a'))} and {esc(collision.get('b'))} compete "
            f"on cases {id_list(ids, esc)} ({collision.get('count')} observation(s)): make each "
            "description say what the other does not"
        )
    if len(collisions) > SHOWN_COLLISIONS:
        steps.append(f"… and {len(collisions) - SHOWN_COLLISIONS} more collision(s) in the report")
    missed, stray = _per_case(report)
    for name, ids in missed.items():
        if ids:
            steps.append(
                f"{esc(name)} was not loaded on cases {id_list(ids, esc)} where it was expected "
                "(and nothing unexpected loaded instead): add these requests' words to its "
                "description"
            )
    for name, ids in stray.items():
        steps.append(
            f"{esc(name)} loaded on cases {id_list(ids, esc)} where no skill should: narrow its "
            "description"
        )
    if is_number(report.get("otherLoads")) and report["otherLoads"]:
        steps.append(
            "the runner loaded skills outside the catalog: check that it installs only "
            "SKILL_EVALS_SKILL_DIRS"
        )
    return steps


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]


def _gate_line(report: Mapping[str, Any], gate: object, label: str) -> str | None:
    if not isinstance(gate, Mapping):
        return None
    partial = gate_partial(gate, report)
    if partial:  # a figure of part of the run: no verdict
        head = f"  gate {label} ≥ {fmt_threshold(gate.get('threshold'))}"
        return f"{head}: {label} {fmt(gate.get('value'))}{partial}"
    passed = gate.get("passed")
    verdict = "passed" if passed is True else "FAILED" if passed is False else "not decided"
    value = fmt(gate.get("value"))
    return f"  gate {label} ≥ {fmt_threshold(gate.get('threshold'))}: {value} — {verdict}"


def _matrix(report: Mapping[str, Any]) -> list[str]:
    confusion = mapping(report.get("confusion"))
    labels = [str(label) for label in _list(confusion.get("labels"))]
    counts = _list(confusion.get("counts"))
    if not labels or len(labels) > MATRIX_MAX_LABELS or len(counts) != len(labels):
        return []
    lines = ["Confusion (rows: expected, columns: loaded; by observation)"]
    header = ["expected \\ loaded", *[f"[{i + 1}]" for i in range(len(labels))]]
    rows = [header]
    for i, label in enumerate(labels):
        row = _list(counts[i])
        rows.append([f"[{i + 1}] {terminal_safe(label)}", *[str(v) for v in row]])
    lines += _table(rows)
    lines.append("")
    return lines


def render_route_text(report: Mapping[str, Any]) -> str:
    """The whole route report as text for a terminal."""
    status = str(report.get("status"))
    lines = [
        f"{STATUS_WORD.get(status, status.upper())}  routing — "
        f"{verdict_summary(report)} (exit {report.get('exitCode')})",
        "",
    ]
    per_skill = [mapping(s) for s in _list(report.get("perSkill"))]
    if per_skill:
        lines += _per_skill_lines(report, per_skill)
        lines += _matrix(report)
    lines += _collision_lines(report, bool(per_skill))
    lines += _runs_lines(report)
    lines += _sections(report)
    return "\n".join(lines) + "\n"


def _per_skill_lines(report: Mapping[str, Any], per_skill: list[Mapping[str, Any]]) -> list[str]:
    """The per-skill table, accuracy and F1 figures, and the gates."""
    partial = partial_note(report)
    lines = [
        "Per skill (every invocation had the whole catalog installed"
        + (f"; {partial})" if partial else ")")
    ]
    rows = [["skill", "cases", "TP", "FP", "FN", "precision", "recall", "F1"]]
    for skill in per_skill:
        cells = confusion_cells(skill, ("expectedBy", "tp", "fp", "fn"))
        rows.append([terminal_safe(skill.get("name")), *cells])
    lines += _table(rows)
    coverage = mapping(report.get("coverage"))
    lines.append(
        f"  accuracy {fmt(report.get('accuracy'))}: {coverage.get('correct')} of "
        f"{coverage.get('observed')} observation(s) loaded exactly the expected skills; "
        f"micro F1 {fmt(report.get('microF1'))}, macro F1 {fmt(report.get('macroF1'))}; "
        f"{report.get('otherLoads')} load(s) outside the catalog"
    )
    gates = mapping(report.get("gates"))
    for key, label in (("minAccuracy", "accuracy"), ("minSkillF1", "F1 of every skill")):
        gate = _gate_line(report, gates.get(key), label)
        if gate:
            lines.append(gate)
    return [*lines, ""]


def _collision_lines(report: Mapping[str, Any], scored: bool) -> list[str]:
    """The top collisions; ``none`` when the run was scored (``scored``) and had none."""
    collisions = [mapping(c) for c in _list(report.get("collisions"))]
    if not collisions:
        return ["Top collisions: none", ""] if scored else []
    lines = ["Top collisions (observations where one was expected and the other loaded)"]
    for c in collisions[:SHOWN_COLLISIONS]:
        ids = id_list(_list(c.get("caseIds")), terminal_safe)
        lines.append(
            f"  - {terminal_safe(c.get('a'))} ↔ {terminal_safe(c.get('b'))}: "
            f"{c.get('count')} observation(s) on cases {ids}"
        )
    return [*lines, ""]


def _runs_lines(report: Mapping[str, Any]) -> list[str]:
    """What ran: invocations (resumed ones), failures, time and reported cost."""
    runner = mapping(report.get("runner"))
    if not runner:
        return []
    ledger = mapping(runner.get("ledger"))
    line = (
        f"Runs: {runner.get('invocations')} invocation(s) in this run"
        f" ({ledger.get('resumed', 0)} resumed), {len(_list(runner.get('failures')))} "
        "runner failure(s)"
    )
    wall = runner.get("wallMs")
    if isinstance(wall, (int, float)):
        line += f", {wall / 1000:.1f} s"
    if is_number(ledger.get("costUsd")):
        line += f", ${ledger['costUsd']:.4f}"
    return [line, ""]


def _sections(report: Mapping[str, Any]) -> list[str]:
    found = sections(report)
    lines: list[str] = []
    lines += bullet_list("What failed", found.failed)
    if found.failures:
        lines.append("Runner failures (every one is in the JSON report's runner.failures)")
        for group in found.failures[:LIST_LIMIT]:
            lines.append(
                f"  - {group.count}× {terminal_safe(group.reason)} — first: "
                f"{terminal_safe(group.case_id)} trial {group.trial}"
            )
            lines += [f"    what to do: {advice}" for advice in group.advices]
        lines.append("")
    lines += bullet_list("Warnings", found.warnings) + bullet_list("Notes", found.notes)
    steps = limited(next_steps(report, terminal_safe))
    return lines + next_step_lines(
        steps,
        report.get("exitCode") == 0,
        "nothing: every prompt loaded exactly the expected skills",
    )
