"""Routing observations → the route report (schemas/route-report.schema.json) and its exit code.

The report never contains prompts, outputs or runner stderr: only ids, names, counts and figures.
Exit codes and their precedence are those of ``test`` (codes.py): 5, then 6, then 7, then 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..codes import INTERRUPTED, UNAVAILABLE, combine
from ..messages import Messages, failures_message, runner_warnings
from ..run.execute import ExecutionResult
from ..run.observations import META_KEYS, Observation, RunnerFailure, reported_sum
from ..score.route_gates import judged_route_gates
from ..score.routing import RouteMetrics, route_metrics
from ..suite.catalog import Catalog
from ..suite.route_cases import RouteSuite
from .behaviour import behaviour_notes
from .blocks import RunShape, envelope, failure_items, identity_block, suite_identity

SCHEMA_VERSION = 1
ARM = "routing"

Report = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class RouteSettings(RunShape):
    """The settings that shape a routing run and appear in its report."""

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


def catalog_block(catalog: Catalog | None) -> list[dict[str, Any]] | None:
    """The report's ``catalog``: each skill's name, path and hashes."""
    if catalog is None:
        return None
    return [identity_block(s) for s in catalog.skills]


def _cases_block(suite: RouteSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {**suite_identity(suite), "expectingNone": sum(1 for c in suite.cases if not c.expect)}


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
    meta = {key: reported_sum(items) for key, items in values.items()}
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


def _metrics_blocks(metrics: RouteMetrics) -> dict[str, Any]:
    """The report's figures: accuracy, F1s, loads outside the catalog, per skill, the
    confusion matrix and the collisions."""
    return {
        "accuracy": metrics.accuracy,
        "microF1": metrics.micro_f1,
        "macroF1": metrics.macro_f1,
        "otherLoads": metrics.other_loads,
        "perSkill": _per_skill(metrics),
        "confusion": {"labels": list(metrics.labels), "counts": metrics.counts},
        "collisions": [
            {"a": c.a, "b": c.b, "count": c.count, "caseIds": list(c.case_ids)}
            for c in metrics.collisions
        ],
    }


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
    rows = _route_grid(suite, settings.trials, result.observations)
    metrics = route_metrics(suite.cases, catalog.names, rows)
    observed = [o for row in rows.values() for o in row if o is not None]
    planned = len(suite.cases) * settings.trials
    position = {c.id: i for i, c in enumerate(suite.cases)}
    failures = sorted(result.failures, key=lambda f: (position.get(f.case_id, 0), f.trial))

    codes: list[int] = []
    notes = Messages()
    for text in [*warnings_in, *runner_warnings(observed)]:
        notes.warning(text)
    for text in notes_in:
        notes.note(text)
    _void_evidence(codes, notes, failures, changed, result, planned - len(observed), planned)
    gates = judged_route_gates(
        settings.min_accuracy, settings.min_skill_f1, metrics, codes, notes, len(observed), planned
    )
    behaviour = behaviour_notes(result.observations, codes, notes, settings.fail_on_finding)
    if metrics.other_loads:
        notes.note(
            f"{metrics.other_loads} load(s) of skills outside the catalog (not scored; see "
            "otherLoads)"
        )
    report = envelope(combine(codes), SCHEMA_VERSION)
    report.update(
        {
            "catalog": catalog_block(catalog),
            "cases": _cases_block(suite),
            "settings": settings.to_json(),
            **_metrics_blocks(metrics),
            "runner": _runner_block(result, failures, observed, resumed),
            "gates": gates,
            "caseResults": _case_results(suite, metrics),
            "coverage": {"observed": len(observed), "planned": planned, "correct": metrics.correct},
            "messages": notes.texts(),
            "messageSeverities": notes.severities(),
            "behaviour": behaviour,
        }
    )
    return report


def _runner_block(
    result: ExecutionResult,
    failures: Sequence[RunnerFailure],
    observed: Sequence[Observation],
    resumed: int,
) -> dict[str, Any]:
    """The report's ``runner``: invocations, failures, time, meta sums and the ledger."""
    meta, ledger = _ledger(observed, result, resumed)
    return {
        "invocations": result.invocations,
        "failures": failure_items(failures),
        "wallMs": round(result.wall_ms),
        "meta": meta,
        "ledger": ledger,
    }


def _route_grid(
    suite: RouteSuite, trials: int, observations: Iterable[Observation]
) -> dict[str, list[Observation | None]]:
    """Case id → its observation per trial (None: not observed); the first one of a slot
    counts."""
    rows: dict[str, list[Observation | None]] = {c.id: [None] * trials for c in suite.cases}
    for obs in observations:
        row = rows.get(obs.case_id)
        if row is not None and 1 <= obs.trial <= trials and row[obs.trial - 1] is None:
            row[obs.trial - 1] = obs
    return rows


def _void_evidence(
    codes: list[int],
    notes: Messages,
    failures: Sequence[RunnerFailure],
    changed: Sequence[str],
    result: ExecutionResult,
    missing: int,
    planned: int,
) -> None:
    """Runner failures, a catalog skill edited during the run, an interrupt (130) or missing
    observations make the evidence void (7)."""
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
    if result.interrupted:
        codes.append(INTERRUPTED)
        notes.error(
            f"interrupted: {missing} of {planned} observation(s) are missing; rerun with "
            "--resume FILE (from --record FILE) to complete them"
        )
    elif missing and not failures:
        codes.append(UNAVAILABLE)
        notes.error(f"{missing} of {planned} observation(s) are missing: the evidence is void")


def _per_skill(metrics: RouteMetrics) -> list[dict[str, Any]]:
    """The report's ``perSkill``: each catalog skill's counts and figures."""
    return [
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
    ]


def _case_results(suite: RouteSuite, metrics: RouteMetrics) -> list[dict[str, Any]]:
    """The report's ``caseResults``: what each case expected and what loaded."""
    return [
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
    ]


def route_error_report(
    code: int,
    message: str,
    settings: RouteSettings,
    catalog: Catalog | None = None,
    suite: RouteSuite | None = None,
    warnings_in: Sequence[str] = (),
    idle: bool = False,
) -> Report:
    """A schema-valid report for a run that stopped before scoring (exit 5, 6, 7 or 130);
    ``idle``: it stopped when it was about to start, so ``runner`` says 0 invocations."""
    notes = Messages()
    for text in warnings_in:
        notes.warning(text)
    notes.error(message)
    report = envelope(code, SCHEMA_VERSION)
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
            "runner": _runner_block(ExecutionResult(), [], [], 0) if idle else None,
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
