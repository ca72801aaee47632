"""How each invocation of a `test` or `route` run goes — the runner, trials, jobs, limits,
retries, environment and cache — and the checks and defaults both commands share."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents import simulated
from ..agents.registry import builtin_agent
from ..cache.settings import CacheSettings
from ..errors import InsufficientUnits
from ..run.execute import ExecutionPlan
from ..run.observations import Observation
from ..sandbox.credential_proxy import Credential
from ..sandbox.probe import SandboxChoice
from ..suite.cases import MIN_UNITS, CaseSuite

DEFAULT_TIMEOUT_MS = 30_000
AGENT_TIMEOUT_MS = 300_000  # a real agent takes minutes: turns, tools, its own retries


def is_builtin_runner(command: str | None) -> bool:
    """Whether ``command`` runs one of this package's own runners (the simulation too)."""
    return builtin_agent(command) is not None or simulated.is_simulated_command(command)


def default_timeout_ms(command: str | None) -> int:
    """The per-invocation timeout when none is given: 300,000 ms for a built-in agent runner,
    30,000 ms for anything else."""
    return AGENT_TIMEOUT_MS if builtin_agent(command) is not None else DEFAULT_TIMEOUT_MS


def runner_notes(runner: str | None) -> tuple[str, ...]:
    """The notes every report of a simulated run carries."""
    return simulated.NOTES if simulated.is_simulated_command(runner) else ()


@dataclass(frozen=True)
class RunSettings:
    """How each invocation runs (already range-checked by the CLI)."""

    runner: str | None
    trials: int
    jobs: int
    timeout_ms: int
    max_bytes: int
    keep_going: bool = False
    retries: int = 2  # re-runs of an invocation whose runner reports a retryable failure
    retry_delay: Callable[[int], float] | None = None  # backoff (seconds before re-run n)
    env: Mapping[str, str] | None = None
    cache: CacheSettings | None = None  # reuse valid observations (docs/cost.md)
    keep_workspaces: Path | None = None  # move each invocation's workspace here
    sandbox: SandboxChoice | None = None  # the run's sandbox mode, decided before one starts
    credentials: tuple[Credential, ...] = ()  # --credential: proxied for a custom runner

    def execution_plan(
        self,
        command: Sequence[str],
        suite: CaseSuite,
        skill_name: str,
        skill_dir: Path,
        record: Path | None,
        resumed: Sequence[Observation],
        **more: Any,
    ) -> ExecutionPlan:
        """The plan of these invocations over ``suite`` (``more``: the command's own fields:
        arms, budget, settling; routing's environment)."""
        return ExecutionPlan(
            command=command,
            suite=suite,
            skill_name=skill_name,
            skill_dir=skill_dir,
            trials=self.trials,
            jobs=self.jobs,
            timeout_ms=self.timeout_ms,
            max_bytes=self.max_bytes,
            keep_going=self.keep_going,
            record=record,
            resumed=resumed,
            base_env=self.env,
            keep_workspaces=self.keep_workspaces,
            retries=self.retries,
            retry_delay=self.retry_delay,
            sandbox=self.sandbox,
            credentials=self.credentials,
            **more,
        )


def require_units(path: Path, unit_count: int) -> None:
    """Exit 6 for a case file with fewer than MIN_UNITS independent cases."""
    if unit_count < MIN_UNITS:
        raise InsufficientUnits(
            f"{path}: {unit_count} independent case(s) after normalising "
            f"prompts; at least {MIN_UNITS} are needed"
        )
