"""Scheduling invocations: --jobs workers, fail-fast/--keep-going, --record/--resume, progress,
SIGINT/SIGTERM (SPEC §1.4).

Owner: execution.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .cases import CaseSuite
from .observations import Observation, RunnerFailure, Variant


@dataclass(frozen=True)
class Progress:
    """One finished invocation, for the progress line
    ``[12/60] refund-policy case-3 trial 2 with ✓ 4.1s``."""

    done: int
    total: int
    skill: str
    case_id: str
    trial: int
    variant: Variant
    ok: bool  # False for a runner failure
    elapsed_ms: float


@dataclass(frozen=True)
class ExecutionPlan:
    """What to run. Invocation order: case-file order, trial, then with before without."""

    command: Sequence[str]
    suite: CaseSuite
    skill_name: str
    skill_dir: Path
    trials: int
    jobs: int
    timeout_ms: int
    max_bytes: int
    keep_going: bool = False
    record: Path | None = None
    resumed: Sequence[Observation] = ()
    base_env: Mapping[str, str] | None = None  # default: os.environ


@dataclass
class ExecutionResult:
    """Observations (resumed + new, in plan order), failures, counts."""

    observations: list[Observation] = field(default_factory=list)
    failures: list[RunnerFailure] = field(default_factory=list)
    invocations: int = 0  # runner processes started in this run (resumed ones excluded)
    wall_ms: float = 0.0
    interrupted: bool = False
    not_run: int = 0  # skipped after a failure (fail-fast) or an interrupt


def execute(
    plan: ExecutionPlan, progress: Callable[[Progress], None] | None = None
) -> ExecutionResult:
    """Run every missing invocation of ``plan`` up to ``plan.jobs`` at a time.

    A ``without`` observation that lists the tested skill becomes a RunnerFailure
    ("isolation breach"). After the first failure no new invocation starts unless keep_going.
    SIGINT/SIGTERM: stop starting, kill running groups, return with interrupted=True."""
    raise NotImplementedError
