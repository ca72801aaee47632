"""What one run is given and what it gives back: the execution plan (what to run, how many at
a time, the record, budgets, settling, the cache) and its result. Shared by execute.py and the
workers' scheduler.py, and built by the plan stage."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..plan.arms import Arm
from ..plan.run_control import Budget, InvocationCache, Stopped
from ..plan.settle import Verdict
from ..plan.settle_state import SettleGates
from ..suite.cases import CaseSuite
from .judging import Judging
from .observations import VARIANTS, Key, Observation, RunnerFailure, Variant
from .records import plan_keys

if TYPE_CHECKING:
    from ..sandbox.credential_proxy import Credential
    from ..sandbox.probe import SandboxChoice


@dataclass(frozen=True)
class SettleSpec:
    """What a settle check judges: the configured gates and the bootstrap's settings.
    ``stop``: stop starting invocations as soon as the verdict is settled
    (--stop-when-settled); a budget that runs out asks for the settled verdict either way."""

    gates: SettleGates
    samples: int
    seed: int
    stop: bool = False


@dataclass(frozen=True)
class ExecutionPlan:
    """What to run. Invocations start trial-major (see the module's docstring); the result lists
    observations in report order (case-file order, trial, arm)."""

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
    variants: tuple[Variant, ...] = VARIANTS  # the arms to run, in this order per trial
    # Set on every invocation after the EVALGATE_SKILL_* variables; a None value removes the
    # variable (routing: SKILL_EVALS_SKILL_DIRS set, EVALGATE_SKILL_DIR removed).
    extra_env: Mapping[str, str | None] | None = None
    keep_workspaces: Path | None = None  # move each workspace there instead of deleting it
    retries: int = 2  # re-runs of an invocation whose runner said its failure is retryable
    retry_delay: Callable[[int], float] | None = None  # seconds before re-run n (0-based)
    # The arms (default: ``variants`` of the skill at skill_dir) and the planned keys in report
    # order (default: every case × trial × variant).
    arms: tuple[Arm, ...] | None = None
    planned: Sequence[Key] | None = None
    budget: Budget | None = None
    settle: SettleSpec | None = None
    cache: InvocationCache | None = None
    judging: Judging | None = None  # the judge checks' judge, when the suite has any
    # The run's sandbox mode, decided when the first invocation is about to start (None: auto).
    sandbox: SandboxChoice | None = None
    # A custom runner's --credential / credentials: variables, served by the credential proxy
    # (a built-in agent runner's come from its provider table).
    credentials: tuple[Credential, ...] = ()

    def arm_table(self) -> dict[str, Arm]:
        """Arm name → Arm for every arm this plan runs."""
        if self.arms is not None:
            return {arm.name: arm for arm in self.arms}
        skill_dir = Path(self.skill_dir).resolve()
        table: dict[str, Arm] = {}
        for name in self.variants:
            table[name] = Arm(name, "without" if name == "without" else "with", skill_dir, None)
        return table

    def keys(self) -> list[Key]:
        """The planned keys in report order."""
        if self.planned is not None:
            return list(self.planned)
        return plan_keys(self.suite, self.trials, self.variants)


@dataclass
class ExecutionResult:
    """Observations (resumed + new, in plan order), failures, counts."""

    observations: list[Observation] = field(default_factory=list)
    failures: list[RunnerFailure] = field(default_factory=list)
    invocations: int = 0  # runner processes started in this run (resumed ones excluded)
    wall_ms: float = 0.0
    interrupted: bool = False
    not_run: int = 0  # not started: fail-fast, an interrupt, a budget, a settled verdict
    messages: list[str] = field(default_factory=list)  # e.g. a workspace that could not be kept
    retried: int = 0  # re-runs after retryable failures (counted in invocations too)
    planned: int | None = None  # planned invocations (None: every case × trial × variant)
    ledger: dict[str, Any] | None = None  # runner.ledger
    stopped: Stopped | None = None  # the run stopped early: a settled verdict or a budget
    settled: Verdict | None = None  # the settled verdict of every gate, when there is one
    sandbox: dict[str, Any] | None = None  # the report's sandbox block (None: nothing ran)
