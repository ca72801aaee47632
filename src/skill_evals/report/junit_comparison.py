"""The JUnit pieces of the baseline comparison, the arms and an early stop (docs/comparison.md):
suite properties and the ``comparison`` testcase (a failure when a comparison gate failed, an
error when one cannot be decided)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .comparison import COMPARISON_KEYS, GATE_LABELS, comparison_lines, gate_labels, scope_notes
from .junit_xml import Suite
from .numbers import fmt_signed, fmt_threshold


def scope_properties(report: Mapping[str, Any]) -> list[tuple[str, object]]:
    """Properties naming the arms, the baseline, the spot-check, the early stop, the gates."""
    props: list[tuple[str, object]] = []
    arms = report.get("arms")
    if isinstance(arms, Mapping) and isinstance(arms.get("names"), list):
        props.append(("arms", ",".join(str(a) for a in arms["names"])))
    baseline = report.get("baseline")
    if isinstance(baseline, Mapping):
        props.append(("baseline.path", baseline.get("path")))
        props.append(("baseline.directorySha256", baseline.get("directorySha256")))
    for note in scope_notes(report):
        name = "isolation" if note.startswith("isolation") else "stoppedEarly"
        props.append((name, note))
    gates = report.get("gates")
    for key in COMPARISON_KEYS:
        gate = gates.get(key) if isinstance(gates, Mapping) else None
        if isinstance(gate, Mapping):
            props.append((GATE_LABELS[key][2].lstrip("-"), gate.get("threshold")))
    return props


def comparison_case(suite: Suite, report: Mapping[str, Any]) -> bool:
    """The ``comparison`` testcase when the report has one; True when it holds an error."""
    if not isinstance(report.get("comparison"), Mapping):
        return False
    figures = "\n".join(comparison_lines(report))
    gates = report.get("gates") if isinstance(report.get("gates"), Mapping) else {}
    assert isinstance(gates, Mapping)
    failed, undecided = [], []
    for key in COMPARISON_KEYS:
        gate = gates.get(key)
        if not isinstance(gate, Mapping):
            continue
        label, sign, option = gate_labels(report)[key]
        text = (
            f"{label} {fmt_signed(gate.get('value'))} against {option} "
            f"{fmt_threshold(gate.get('threshold'))} (must be {sign}"
            f"{'' if sign.endswith('−') else ' '}{fmt_threshold(gate.get('threshold'))})"
        )
        if gate.get("passed") is False:
            failed.append(text)
        elif gate.get("passed") is None:
            undecided.append(text)
    if failed:
        suite.result(suite.case("comparison"), "failure", "; ".join(failed), figures)
    elif undecided:
        message = "cannot be decided: " + "; ".join(undecided)
        suite.result(suite.case("comparison"), "error", message, figures)
        return True
    else:
        suite.case("comparison", system_out=figures)
    return False
