"""What to do next about a test report's cases, shared by the text and Markdown reports:
missed and false triggers, loading violations, tasks that failed with the skill."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .lists import limited


def next_steps(
    report: Mapping[str, Any],
    esc: Callable[[object], str],
    code: Callable[[str], str] | None = None,
) -> list[str]:
    """What to do next about the cases, one item per line (without bullet), user strings
    through ``esc``: missed and false triggers, loading violations. (Messages and runner
    failures have their own sections, see :func:`diagnosis.sections`.)"""
    code = code or (lambda s: s)
    steps: list[str] = []
    cases = {c.get("id"): c for c in report.get("caseResults") or []}

    def where(case_id: str) -> str:
        line = (cases.get(case_id) or {}).get("line")
        return f"{code(esc(case_id))} (line {line})" if line else code(esc(case_id))

    trigger = report.get("trigger") or {}
    missed = [str(c) for c in trigger.get("missedTriggerCaseIds") or []]
    if missed:
        steps.append(
            "Missed trigger — expected to load the skill but it did not in at least one trial; "
            "make the description cover these prompts: "
            + ", ".join(limited([where(c) for c in missed]))
        )
    false = [str(c) for c in trigger.get("falseTriggerCaseIds") or []]
    if false:
        steps.append(
            "False trigger — loaded the skill although it should not have; narrow the "
            "description: " + ", ".join(limited([where(c) for c in false]))
        )
    violations = (report.get("loading") or {}).get("violations") or []
    for v in limited([_violation(v, esc, code) for v in violations]):
        steps.append(f"Loading violation: {v}")
    failed_tasks = [
        f"{where(str(t['caseId']))} trial {t['trial']}: {esc(t['reason'])}"
        for t in task_failures(report)
    ]
    for item in limited(failed_tasks):
        steps.append(f"Task failed with the skill: {item}")
    return steps


def task_failures(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Cases whose task failed with the skill: caseId, line, trial and the first failing
    check's short reason (which never holds file contents, outputs or prompts)."""
    found = []
    for case in report.get("caseResults") or []:
        failed = case.get("failedCheck") if isinstance(case, Mapping) else None
        if isinstance(failed, Mapping) and failed.get("variant") == "with":
            found.append(
                {
                    "caseId": case.get("id"),
                    "line": case.get("line"),
                    "trial": failed.get("trial"),
                    "reason": failed.get("reason"),
                }
            )
    return found


def _violation(
    v: Mapping[str, Any], esc: Callable[[object], str], code: Callable[[str], str]
) -> str:
    parts = [f"{code(esc(v.get('caseId')))} trial {v.get('trial')} {v.get('variant')}"]
    if v.get("missing"):
        parts.append("not loaded: " + ", ".join(code(esc(n)) for n in v["missing"]))
    if v.get("forbidden"):
        parts.append("loaded but excluded: " + ", ".join(code(esc(n)) for n in v["forbidden"]))
    return "; ".join(parts)
