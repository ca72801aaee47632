"""The gates of a routing run (--min-accuracy, --min-skill-f1): each judged from the routing
metrics, or, when a void run left observations missing, only its figure (partial)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..codes import GATE_FAILED, INTERRUPTED, UNAVAILABLE, combine
from ..messages import Messages
from .gates import partial_label
from .routing import RouteMetrics


def _num(value: float) -> str:
    return format(value, ".6g")


def judged_route_gates(
    min_accuracy: float | None,
    min_skill_f1: float | None,
    metrics: RouteMetrics,
    codes: list[int],
    notes: Messages,
    observed: int,
    planned: int,
) -> dict[str, Any]:
    """The gates: judged, or only their figures (partial) when a void run left observations
    missing."""
    short = observed < planned and combine(codes) in (UNAVAILABLE, INTERRUPTED)
    if not short:
        return _gates(min_accuracy, min_skill_f1, metrics, codes, notes)
    gates = _partial_gates(
        _gates(min_accuracy, min_skill_f1, metrics, [], Messages()), observed, planned
    )
    for gate in (g for g in gates.values() if g is not None):
        notes.note(_partial_text(gate, observed, planned))
    return gates


def _gates(
    min_accuracy: float | None,
    min_skill_f1: float | None,
    metrics: RouteMetrics,
    codes: list[int],
    notes: Messages,
) -> dict[str, Any]:
    """Each configured gate judged: its codes into ``codes``, its messages into ``notes``."""
    return {
        "minAccuracy": None
        if min_accuracy is None
        else _accuracy_gate(min_accuracy, metrics, codes, notes),
        "minSkillF1": None
        if min_skill_f1 is None
        else _skill_f1_gate(min_skill_f1, metrics, codes, notes),
    }


def _accuracy_gate(
    threshold: float, metrics: RouteMetrics, codes: list[int], notes: Messages
) -> dict[str, Any]:
    value = metrics.accuracy
    if value is None:
        codes.append(UNAVAILABLE)
        notes.error("--min-accuracy is set but no observation was scored: accuracy is undefined")
        return {"threshold": threshold, "value": None, "passed": None}
    ok = value >= threshold
    if not ok:
        codes.append(GATE_FAILED)
        notes.error(
            f"gate failed: routing accuracy {_num(value)} is below --min-accuracy {_num(threshold)}"
        )
    return {"threshold": threshold, "value": value, "passed": ok}


def _skill_f1_gate(
    threshold: float, metrics: RouteMetrics, codes: list[int], notes: Messages
) -> dict[str, Any]:
    """The lowest F1 of the skills some case expects; undefined for any of them is exit 7."""
    gated = [s for s in metrics.skills if s.expected_by]
    undefined = [s.name for s in gated if s.f1 is None]
    failing = [s.name for s in gated if s.f1 is not None and s.f1 < threshold]
    defined = [s.f1 for s in gated if s.f1 is not None]
    passed: bool | None = None
    if not gated:
        codes.append(UNAVAILABLE)
        notes.error("--min-skill-f1 is set but no case expects any catalog skill")
    elif undefined:
        codes.append(UNAVAILABLE)
        notes.error(
            f"--min-skill-f1 is set but F1 is undefined for {', '.join(undefined)}: the "
            "skill was never loaded in a scored observation (or none of its cases was "
            "observed)"
        )
    else:
        passed = not failing
        if failing:
            codes.append(GATE_FAILED)
            shown = ", ".join(
                f"{s.name} {_num(s.f1)}" for s in gated if s.name in failing and s.f1 is not None
            )
            notes.error(f"gate failed: F1 below --min-skill-f1 {_num(threshold)}: {shown}")
    return {
        "threshold": threshold,
        "value": min(defined) if defined else None,
        "passed": passed,
        "skills": [s.name for s in gated],
        "failing": failing,
        "undefined": undefined,
    }


def _partial_gates(
    gates: dict[str, Any], observed: int, planned: int
) -> dict[str, dict[str, Any] | None]:
    """The gates of a run that stopped before every planned invocation ran: each figure is
    kept, but none is a verdict (``passed`` null, ``partial`` true)."""
    return {
        key: None if gate is None else {**gate, "passed": None, "partial": True}
        for key, gate in gates.items()
    }


def _partial_text(gate: Mapping[str, Any], observed: int, planned: int) -> str:
    value = gate.get("value")
    shown = "undefined" if value is None else _num(value)
    option = "--min-skill-f1" if "skills" in gate else "--min-accuracy"
    return f"{option} figure {shown} ({partial_label(observed, planned)}): not judged"
