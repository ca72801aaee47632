"""Routing observations → the route report (schemas/route-report.schema.json) and its exit code.

The report never contains prompts, outputs or runner stderr: only ids, names, counts and figures.
Exit codes and their precedence are those of ``test`` (codes.py): 5, then 6, then 7, then 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .. import __version__
from ..codes import GATE_FAILED, INTERRUPTED, STATUS_BY_CODE, UNAVAILABLE, combine
from ..messages import Messages, failures_message, runner_warnings
from ..run.execute import ExecutionResult
from ..run.observations import META_KEYS, Observation
from ..score.gates import partial_label
from ..score.routing import RouteMetrics, route_metrics
from ..suite.catalog import Catalog
from ..suite.route_cases import RouteSuite

SCHEMA_VERSION = 1
ARM = "routing"

Report = dict[str, Any]


@dataclass(frozen=True)
class RouteSettings:
    """The settings that shape a routing run and appear in its report."""

    mode: Literal["runner", "observations"] = "runner"
    trials: int = 3
    seed: int = 42
    timeout_ms: int = 30_000
    max_bytes: int = 1_000_000
    jobs: int = 4
    retries: int = 2
    min_accuracy: float | None = None
    min_skill_f1: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The report's ``settings`` block."""
        return {
            "mode": self.mode,
            "trials": self.trials,
            "seed": self.seed,
            "timeoutMs": self.timeout_ms,
            "maxBytes": self.max_bytes,
            "jobs": self.jobs,
            "retries": self.retries,
        }


def _num(value: float) -> str:
    return format(value, ".6g")


def _envelope(code: int) -> Report:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": STATUS_BY_CODE[code],
        "exitCode": code,
    }


def catalog_block(catalog: Catalog | None) -> list[dict[str, Any]] | None:
    """The report's ``catalog``: each skill's name, path and hashes."""
    if catalog is None:
        return None
    return [
        {
            "name": s.name,
            "path": str(s.path),
            "skillMdSha256": s.skill_md_sha256,
            "directorySha256": s.directory_sha256,
        }
        for s in catalog.skills
    ]


def _cases_block(suite: RouteSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {
        "path": str(suite.path),
        "sha256": suite.sha256,
        "total": len(suite.cases),
        "units": suite.unit_count,
        "expectingNone": sum(1 for c in suite.cases if not c.expect),
    }


def _sum(values: list[float]) -> float | int | None:
    if not values:
        return None
    if all(isinstance(v, int) for v in values):
        return int(sum(values))
    return math.fsum(values)


def _ledger(observations: Iterable[Observation], result: ExecutionResult, resumed: int) -> Any:
    """What the run cost: ``meta`` sums (null where no observation reported the key) and the
    ledger of invocations, tokens and reported cost."""
    values: dict[str, list[float]] = {key: [] for key in META_KEYS}
    observed = 0
    for obs in observations:
        observed += 1
        for key in META_KEYS:
            value = obs.meta.get(key)
            if value is not None:
                values[key].append(value)
    meta = {key: _sum(items) for key, items in values.items()}
    ledger = {
        "arm": ARM,
        "invocations": result.invocations,
        "resumed": resumed,
        "retried": result.retried,
        "inputTokens": meta["inputTokens"],
        "outputTokens": meta["outputTokens"],
        "costUsd": meta["costUsd"],
        "costUnreported": observed - len(values["costUsd"]),
    }
    return meta, ledger


def _gates(
    settings: RouteSettings, metrics: RouteMetrics, codes: list[int], notes: Messages
) -> dict[str, Any]:
    accuracy_gate: dict[str, Any] | None = None
    if settings.min_accuracy is not None:
        threshold = settings.min_accuracy
        value = metrics.accuracy
        if value is None:
            codes.append(UNAVAILABLE)
            notes.error(
                "--min-accuracy is set but no observation was scored: accuracy is undefined"
            )
            accuracy_gate = {"threshold": threshold, "value": None, "passed": None}
        else:
            ok = value >= threshold
            accuracy_gate = {"threshold": threshold, "value": value, "passed": ok}
            if not ok:
                codes.append(GATE_FAILED)
                notes.error(
                    f"gate failed: routing accuracy {_num(value)} is below --min-accuracy "
                    f"{_num(threshold)}"
                )
    f1_gate: dict[str, Any] | None = None
    if settings.min_skill_f1 is not None:
        threshold = settings.min_skill_f1
        gated = [s for s in metrics.skills if s.expected_by]
        undefined = [s.name for s in gated if s.f1 is None]
        failing = [s.name for s in gated if s.f1 is not None and s.f1 < threshold]
        defined = [s.f1 for s in gated if s.f1 is not None]
        lowest = min(defined) if defined else None
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
                    f"{s.name} {_num(s.f1)}"
                    for s in gated
                    if s.name in failing and s.f1 is not None
                )
                notes.error(f"gate failed: F1 below --min-skill-f1 {_num(threshold)}: {shown}")
        f1_gate = {
            "threshold": threshold,
            "value": lowest,
            "passed": passed,
            "skills": [s.name for s in gated],
            "failing": failing,
            "undefined": undefined,
        }
    return {"minAccuracy": accuracy_gate, "minSkillF1": f1_gate}


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


def build_route_report(
    catalog: Catalog,
    suite: RouteSuite,
    settings: RouteSettings,
    result: ExecutionResult,
    *,
    resumed: int = 0,
    changed: Sequence[str] = (),
    notes_in: Sequence[str] = (),
    warnings_in: Sequence[str] = (),
) -> Report:
    """Score the run and decide status and exit code. ``changed``: catalog skills whose
    directory changed during the run (the evidence is void, exit 7); ``notes_in`` and
    ``warnings_in`` are the caller's notes and warnings."""
    trials = settings.trials
    rows: dict[str, list[Observation | None]] = {c.id: [None] * trials for c in suite.cases}
    for obs in result.observations:
        row = rows.get(obs.case_id)
        if row is not None and 1 <= obs.trial <= trials and row[obs.trial - 1] is None:
            row[obs.trial - 1] = obs
    metrics = route_metrics(suite.cases, catalog.names, rows)
    observed = [o for row in rows.values() for o in row if o is not None]
    planned = len(suite.cases) * trials
    position = {c.id: i for i, c in enumerate(suite.cases)}
    failures = sorted(result.failures, key=lambda f: (position.get(f.case_id, 0), f.trial))

    codes: list[int] = []
    notes = Messages()
    for text in warnings_in:
        notes.warning(text)
    for text in runner_warnings(observed):
        notes.warning(text)
    for text in notes_in:
        notes.note(text)
    if failures:
        codes.append(UNAVAILABLE)
        notes.error(failures_message(failures, variants=False))
    if changed:
        codes.append(UNAVAILABLE)
        notes.error(
            f"catalog skill(s) {', '.join(changed)} changed during the run (the directory hash "
            "differs after the last invocation): the evidence is void; do not edit skills "
            "while they are evaluated"
        )
    missing = planned - len(observed)
    if result.interrupted:
        codes.append(INTERRUPTED)
        notes.error(
            f"interrupted: {missing} of {planned} observation(s) are missing; rerun with "
            "--resume FILE (from --record FILE) to complete them"
        )
    elif missing and not failures:
        codes.append(UNAVAILABLE)
        notes.error(f"{missing} of {planned} observation(s) are missing: the evidence is void")
    short = missing > 0 and combine(codes) in (UNAVAILABLE, INTERRUPTED)
    if short:
        gates = _partial_gates(_gates(settings, metrics, [], Messages()), len(observed), planned)
        for gate in (g for g in gates.values() if g is not None):
            notes.note(_partial_text(gate, len(observed), planned))
    else:
        gates = _gates(settings, metrics, codes, notes)
    if metrics.other_loads:
        notes.note(
            f"{metrics.other_loads} load(s) of skills outside the catalog (not scored; see "
            "otherLoads)"
        )
    meta, ledger = _ledger(observed, result, resumed)
    code = combine(codes)
    report = _envelope(code)
    report.update(
        {
            "catalog": catalog_block(catalog),
            "cases": _cases_block(suite),
            "settings": settings.to_json(),
            "accuracy": metrics.accuracy,
            "microF1": metrics.micro_f1,
            "macroF1": metrics.macro_f1,
            "otherLoads": metrics.other_loads,
            "perSkill": [
                {
                    "name": s.name,
                    "tp": s.tp,
                    "fp": s.fp,
                    "fn": s.fn,
                    "precision": s.precision,
                    "recall": s.recall,
                    "f1": s.f1,
                    "expectedBy": s.expected_by,
                }
                for s in metrics.skills
            ],
            "confusion": {"labels": list(metrics.labels), "counts": metrics.counts},
            "collisions": [
                {"a": c.a, "b": c.b, "count": c.count, "caseIds": list(c.case_ids)}
                for c in metrics.collisions
            ],
            "runner": {
                "invocations": result.invocations,
                "failures": [
                    {
                        "caseId": f.case_id,
                        "trial": f.trial,
                        "variant": f.variant,
                        "reason": f.reason,
                    }
                    for f in failures
                ],
                "wallMs": round(result.wall_ms),
                "meta": meta,
                "ledger": ledger,
            },
            "gates": gates,
            "caseResults": [
                {
                    "id": c.id,
                    "line": c.line,
                    "unit": c.unit,
                    "tags": list(c.tags),
                    "expect": list(c.expect),
                    "loaded": metrics.loaded[c.id],
                    "correct": metrics.right[c.id],
                }
                for c in suite.cases
            ],
            "coverage": {"observed": len(observed), "planned": planned, "correct": metrics.correct},
            "messages": notes.texts(),
            "messageSeverities": notes.severities(),
        }
    )
    return report


def route_error_report(
    code: int,
    message: str,
    settings: RouteSettings,
    catalog: Catalog | None = None,
    suite: RouteSuite | None = None,
    warnings_in: Sequence[str] = (),
) -> Report:
    """A schema-valid report for a run that stopped before scoring (exit 5, 6, 7 or 130)."""
    notes = Messages()
    for text in warnings_in:
        notes.warning(text)
    notes.error(message)
    report = _envelope(code)
    report.update(
        {
            "catalog": catalog_block(catalog),
            "cases": _cases_block(suite),
            "settings": settings.to_json(),
            "accuracy": None,
            "microF1": None,
            "macroF1": None,
            "otherLoads": None,
            "perSkill": None,
            "confusion": None,
            "collisions": None,
            "runner": None,
            "gates": {
                "minAccuracy": None
                if settings.min_accuracy is None
                else {"threshold": settings.min_accuracy, "value": None, "passed": None},
                "minSkillF1": None
                if settings.min_skill_f1 is None
                else {
                    "threshold": settings.min_skill_f1,
                    "value": None,
                    "passed": None,
                    "skills": [],
                    "failing": [],
                    "undefined": [],
                },
            },
            "caseResults": None,
            "messages": notes.texts(),
            "messageSeverities": notes.severities(),
        }
    )
    return report
