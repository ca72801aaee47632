"""Observations → report data (SPEC §1.5–§1.7) and the exit code.

Owner: scoring. The report is a plain JSON-ready dict matching schemas/report.schema.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .cases import CaseSuite
from .execute import ExecutionResult
from .skill import Skill

Report = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """Settings that shape the evaluation and appear in the report."""

    mode: Literal["runner", "observations"]
    trials: int = 3
    seed: int = 42
    bootstrap_samples: int = 10_000
    timeout_ms: int = 30_000
    max_bytes: int = 1_000_000
    jobs: int = 4
    min_trigger_f1: float | None = None
    min_uplift: float | None = None


def evaluate(
    skill: Skill,
    suite: CaseSuite,
    settings: Settings,
    result: ExecutionResult,
    *,
    skill_changed: bool = False,
    messages: tuple[str, ...] = (),
) -> Report:
    """Score the run and decide status/exitCode with the §1.6.1 precedence.

    Runner failures, an interrupt or ``skill_changed`` make the evidence void (7 / 130); scores are
    still computed from the valid observations so the reader sees what was measured."""
    raise NotImplementedError


def error_report(
    exit_code: int,
    message: str,
    settings: Settings | None = None,
    skill: Skill | None = None,
    suite: CaseSuite | None = None,
) -> Report:
    """A schema-valid report for a run that stopped before scoring (exit 5, 6 or 7):
    known sections filled, unknown ones null, ``message`` in ``messages``."""
    raise NotImplementedError
