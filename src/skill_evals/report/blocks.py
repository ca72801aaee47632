"""The report's envelope and its descriptive blocks — skill, baseline, cases, settings, gate
thresholds — shared by a scored report (test_report.py) and one for a run that stopped before
scoring (:func:`error_report`). Matches schemas/report.schema.json; never holds prompts, outputs
or runner stderr."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import __version__
from ..codes import INSUFFICIENT, INTERRUPTED, INVALID, STATUS_BY_CODE, UNAVAILABLE
from ..messages import Failed
from ..score.compare import CompareGates
from ..score.scoring import meta_sums
from ..suite.cases import CaseSuite
from ..suite.route_cases import RouteSuite
from ..suite.skill import Skill

Report = dict[str, Any]


SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class RunShape:
    """The settings of any run (test or route) that appear in its report."""

    mode: Literal["runner", "observations"] = "runner"
    trials: int = 3
    seed: int = 42
    timeout_ms: int = 30_000
    max_bytes: int = 1_000_000
    jobs: int = 4
    # A behaviour finding (a new or refused network destination) fails the gate (exit 1).
    fail_on_finding: bool = False


@dataclass(frozen=True, kw_only=True)
class Settings(RunShape):
    """Settings that shape the evaluation and appear in the report."""

    bootstrap_samples: int = 10_000
    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    compare: CompareGates = field(default_factory=CompareGates)
    # An unverified without run (a command named the skill's files, its result unmatched) is
    # evidence unavailable (exit 7) instead of a warning.
    require_verified_isolation: bool = False


def envelope(status_code: int, schema_version: int = SCHEMA_VERSION) -> Report:
    """The fields every report starts with: schema version, tool, status and exit code."""
    return {
        "schemaVersion": schema_version,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": STATUS_BY_CODE[status_code],
        "exitCode": status_code,
    }


def skill_block(skill: Skill | None) -> dict[str, Any] | None:
    """The report's ``skill``: its identity and the warnings its SKILL.md raised."""
    block = baseline_block(skill)
    if block is not None and skill is not None:
        block["warnings"] = list(skill.warnings)
    return block


def baseline_block(baseline: Skill | None) -> dict[str, Any] | None:
    """The report's ``baseline`` (and the identity part of ``skill``): name, path, hashes."""
    if baseline is None:
        return None
    return identity_block(baseline)


def identity_block(skill: Skill) -> dict[str, Any]:
    """A skill's name, path and hashes, as every report names a skill."""
    return {
        "name": skill.name,
        "path": str(skill.path),
        "skillMdSha256": skill.skill_md_sha256,
        "directorySha256": skill.directory_sha256,
    }


def failure_items(failures: Iterable[Failed]) -> list[dict[str, Any]]:
    """The report's ``runner.failures``: where each invocation failed and why."""
    return [
        {"caseId": f.case_id, "trial": f.trial, "variant": f.variant, "reason": f.reason}
        for f in failures
    ]


def suite_identity(suite: CaseSuite | RouteSuite) -> dict[str, Any]:
    """What every report's ``cases`` says: the file, its hash, how many cases and units."""
    return {
        "path": str(suite.path),
        "sha256": suite.sha256,
        "total": len(suite.cases),
        "units": suite.unit_count,
    }


def cases_block(suite: CaseSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {**suite_identity(suite), "withTask": suite.with_task}


def settings_block(settings: Settings | None) -> dict[str, Any] | None:
    if settings is None:
        return None
    return {
        "mode": settings.mode,
        "trials": settings.trials,
        "seed": settings.seed,
        "bootstrapSamples": settings.bootstrap_samples,
        "timeoutMs": settings.timeout_ms,
        "maxBytes": settings.max_bytes,
        "jobs": settings.jobs,
    }


def idle_runner() -> dict[str, Any]:
    """The ``runner`` block of a run that started nothing: no invocation, failure or time, and
    no meta value reported."""
    return {"invocations": 0, "failures": [], "wallMs": 0, "meta": meta_sums(())}


def gate_block(threshold: float | None, value: float | None, passed: bool | None) -> Any:
    if threshold is None:
        return None
    return {"threshold": threshold, "value": value, "passed": passed}


def error_report(
    exit_code: int,
    message: str,
    settings: Settings | None = None,
    skill: Skill | None = None,
    suite: CaseSuite | None = None,
    idle: bool = False,
) -> Report:
    """A schema-valid report for a run that stopped before scoring (exit 5, 6 or 7):
    known sections filled, unknown ones null, ``message`` in ``messages``; ``idle``: it stopped
    when it was about to start, so ``runner`` says 0 invocations instead of null.

    Exit 130 is accepted too (an interrupt before any observation was scored). Gates are filled
    from the settings (threshold known, value and verdict null)."""
    if exit_code not in (INVALID, INSUFFICIENT, UNAVAILABLE, INTERRUPTED):
        raise ValueError(f"error_report is for exit codes 5, 6, 7 and 130, not {exit_code}")
    report = envelope(exit_code)
    gates = None
    if settings is not None:
        gates = {
            "minTriggerF1": gate_block(settings.min_trigger_f1, None, None),
            "minUplift": gate_block(settings.min_uplift, None, None),
            **{k: gate_block(v, None, None) for k, v in settings.compare.as_dict().items()},
        }
    report.update(
        {
            "skill": skill_block(skill),
            "cases": cases_block(suite),
            "settings": settings_block(settings),
            "baseline": None,
            "arms": None,
            "trigger": None,
            "task": None,
            "comparison": None,
            "loading": None,
            "runner": idle_runner() if idle else None,
            "gates": gates,
            "caseResults": None,
            "messages": [message],
            "messageSeverities": ["error"],
        }
    )
    return report
