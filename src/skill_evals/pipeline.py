"""`skill-evals test` from options to report: load → plan → run → score.

Shared by the `test` command and the CI gate. Everything that can be decided before a runner
starts (exit 5, then 6, then the exit-7 cases that need no run) is decided before one starts, so
no money is spent on a run that cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .cache.run import suite_paths
from .cache.settings import CacheSettings
from .errors import EvalError, InvalidInput
from .plan.files import RunFiles, check_modes
from .plan.run_settings import RunSettings, default_timeout_ms, is_builtin_runner
from .plan.scope import ArmOptions
from .plan.test_plan import (
    GateSettings,
    check_runner_only,
    exposed_cases_note,
    load_checked_baseline,
    plan_test,
)
from .report.blocks import Report, Settings, error_report
from .report.outputs import HeldOutputs
from .run.cached_run import CacheUse, run_plan
from .run.execute import Progress
from .run.exposed import runner_neighbours
from .run.record_lock import RecordLocks
from .score.evaluate import evaluate
from .suite.cases import CaseSuite, load_cases
from .suite.skill import Skill, directory_sha256, load_skill

# Imported from here by the benchmarks, the CI's estimate and the tests.
__all__ = [
    "TestOptions",
    "default_timeout_ms",
    "exposed_cases_note",
    "is_builtin_runner",
    "run_test",
]


@dataclass(frozen=True)
class TestOptions:
    """Everything `skill-evals test` takes (already range-checked by the CLI)."""

    skill: Path
    cases: Path
    runner: str | None = None
    observations: Path | None = None
    trials: int = 3
    seed: int = 42
    bootstrap_samples: int = 10_000
    timeout_ms: int | None = None  # None: the default for the runner (default_timeout_ms)
    max_bytes: int = 1_000_000
    jobs: int = 4
    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    record: Path | None = None
    resume: Path | None = None
    keep_going: bool = False
    keep_workspaces: Path | None = None  # move each invocation's workspace here
    outputs: tuple[Path, ...] = ()  # every path we will write: must lie outside the skill dir
    env: Mapping[str, str] | None = None
    retries: int = 2  # re-runs of an invocation whose runner reports a retryable failure
    retry_delay: Callable[[int], float] | None = None  # backoff (seconds before re-run n)
    scope: ArmOptions = field(default_factory=ArmOptions)  # arms, baseline, budget, settle
    cache: CacheSettings | None = None  # reuse valid observations (docs/cost.md)
    require_verified_isolation: bool = False  # an unverified without run → exit 7

    @property
    def effective_timeout_ms(self) -> int:
        """--timeout-ms, or the default for this runner when it was not given."""
        return self.timeout_ms if self.timeout_ms is not None else default_timeout_ms(self.runner)

    def files(self) -> RunFiles:
        """The paths this run reads and writes."""
        return RunFiles(self.cases, self.observations, self.record, self.resume, self.outputs)

    def run_settings(self) -> RunSettings:
        """How each invocation runs."""
        return RunSettings(
            runner=self.runner,
            trials=self.trials,
            jobs=self.jobs,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            keep_going=self.keep_going,
            retries=self.retries,
            retry_delay=self.retry_delay,
            env=self.env,
            cache=self.cache,
            keep_workspaces=self.keep_workspaces,
        )

    def gates(self) -> GateSettings:
        """The gates and the bootstrap that judges them."""
        return GateSettings(self.min_trigger_f1, self.min_uplift, self.seed, self.bootstrap_samples)

    def settings(self) -> Settings:
        """The report's settings block."""
        return Settings(
            mode="observations" if self.observations is not None else "runner",
            trials=self.trials,
            seed=self.seed,
            bootstrap_samples=self.bootstrap_samples,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            jobs=self.jobs,
            min_trigger_f1=self.min_trigger_f1,
            min_uplift=self.min_uplift,
            compare=self.scope.compare,
            require_verified_isolation=self.require_verified_isolation,
        )


def _changed(skill: Skill) -> bool:
    """Whether the directory's hash differs from the one taken before the run."""
    try:
        return directory_sha256(skill.path) != skill.directory_sha256
    except InvalidInput:
        return True


def _test_cache(run: RunSettings, skill: Skill, suite: CaseSuite) -> CacheUse | None:
    if run.cache is None:
        return None
    return CacheUse(
        run.cache, is_builtin_runner(run.runner), skill.name, suite_paths(suite, skill.path)
    )


def run_test(
    options: TestOptions,
    progress: Callable[[Progress], None] | None = None,
    held: HeldOutputs | None = None,
    answers: dict[tuple[str, int, str], str] | None = None,
) -> Report:
    """Run one skill's evaluation and return its report (``report["exitCode"]`` is the exit).

    ``held`` receives the descriptors of outputs that are pipes or devices, opened by the
    checks before anything runs, for :func:`outputs.write_output`. ``answers``, when given,
    receives each scored observation's ``output`` by (case id, trial, variant): for the HTML
    report's ``--include-outputs`` only, never for the report itself."""
    settings, files, run = options.settings(), options.files(), options.run_settings()
    skill: Skill | None = None
    suite: CaseSuite | None = None
    locks = RecordLocks()
    try:
        check_modes(options.runner, files)
        locks.take(files.record, files.resume)  # before F is read; held to the end
        check_runner_only(files, run, options.scope)
        skill = load_skill(options.skill)
        baseline = load_checked_baseline(skill, files, run, options.scope, held)
        suite = load_cases(options.cases, skill.name)
        plan = plan_test(skill, baseline, suite, files, run, options.scope, options.gates())
        ran = None
        if plan.execution is not None:
            watched = [skill.path, *runner_neighbours(run.runner)]
            ran = run_plan(plan.execution, _test_cache(run, skill, suite), watched, progress)
        result = ran.result if ran is not None else plan.recorded
        assert result is not None  # one of the two: a run, or the recorded observations
        if answers is not None:
            answers.update((obs.key, obs.output) for obs in result.observations)
        report = evaluate(
            skill,
            suite,
            settings,
            result,
            skill_changed=ran is not None and _changed(skill),
            messages=(*plan.notes, *ran.cache_notes) if ran is not None else (),
            arm_plan=plan.scope.plan,
            baseline=baseline,
            baseline_changed=ran is not None and baseline is not None and _changed(baseline),
        )
        if ran is not None and ran.cache_misses is not None:
            report["runner"]["cacheMisses"] = ran.cache_misses
        return report
    except EvalError as exc:
        return error_report(exc.exit_code, str(exc), settings, skill, suite)
    finally:
        locks.release()
