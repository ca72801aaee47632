"""`skill-evals test` and `skill-evals route` from options to report: load → plan → run →
score, each step one call into the package that owns it (suite/, plan/, run/, score/ and
report/).

Shared by the commands and the CI gate. Everything that can be decided before a runner starts
(exit 5, then 6, then the exit-7 cases that need no run) is decided before one starts, so no
money is spent on a run that cannot pass.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .agents.exposed import runner_neighbours
from .agents.registry import builtin_agent
from .cache.run import suite_paths
from .cache.settings import CacheSettings
from .errors import EvalError, InvalidInput
from .plan.files import RunFiles, check_modes
from .plan.judge_plan import named_judges, plan_judging
from .plan.lint import LintFailed, LintResult, preflight, with_lint
from .plan.route_plan import CACHE_SCOPE, catalog_warnings, check_catalog_outputs, plan_route
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
from .report.judge_report import add_judging
from .report.outputs import HeldOutputs
from .report.route_report import RouteSettings, build_route_report, route_error_report
from .report.test_report import build_test_report
from .run.cached_run import CacheUse, Ran, run_plan
from .run.execute import ExecutionResult, Progress
from .run.judge_phase import judge_result
from .run.judging import Judging
from .run.record_lock import RecordLocks
from .run.route_progress import RouteProgress
from .sandbox.credential_proxy import (
    Credential,
    CredentialError,
    credential_from_config,
    parse_credential_option,
)
from .sandbox.probe import SandboxChoice, requested_with_origin, sandbox_paths, shared_choice
from .suite.cases import CaseSuite, load_cases
from .suite.catalog import Catalog
from .suite.route_cases import RouteSuite, load_route_cases, load_route_catalog
from .suite.skill import Skill, changed_since_loaded, load_skill

# Imported from here by the benchmarks, the CI's estimate and the tests.
__all__ = [
    "RouteOptions",
    "TestOptions",
    "default_timeout_ms",
    "exposed_cases_note",
    "is_builtin_runner",
    "run_route",
    "run_test",
]


@dataclass(frozen=True, kw_only=True)
class _RunOptions:
    """What `test` and `route` both take (already range-checked by the CLI)."""

    cases: Path
    runner: str | None = None
    observations: Path | None = None
    trials: int = 3
    seed: int = 42
    timeout_ms: int | None = None  # None: the default for the runner (default_timeout_ms)
    max_bytes: int = 1_000_000
    jobs: int = 4
    retries: int = 2  # re-runs of an invocation whose runner reports a retryable failure
    record: Path | None = None
    resume: Path | None = None
    keep_going: bool = False
    outputs: tuple[Path, ...] = ()  # every path we will write: outside every offered skill
    env: Mapping[str, str] | None = None
    cache: CacheSettings | None = None  # reuse valid observations (docs/cost.md)
    require_verified_isolation: bool = False
    sandbox: str | None = None  # --sandbox (else SKILL_EVALS_SANDBOX, else the config's)
    sandbox_config: str | None = None  # the ci config's sandbox: (else auto)
    sandbox_where: str = "--sandbox"  # where `sandbox` came from (or the action's input)
    sandbox_config_where: str = "config sandbox"  # where `sandbox_config` came from
    sandbox_path: tuple[str, ...] = ()  # --sandbox-path PATH[:rw]
    credential: tuple[str, ...] = ()  # --credential ENV,STYLE,UPSTREAM (a custom runner's)
    credentials_config: tuple[object, ...] = ()  # the ci config's credentials: entries

    def proxied(self) -> tuple[Credential, ...]:
        """The custom runner's credentials to proxy (exit 5 for a bad one)."""
        environ = os.environ if self.env is None else self.env
        try:
            found = [
                parse_credential_option(text, environ, source="--credential")
                for text in self.credential
            ]
            found += [
                credential_from_config(entry, environ, source=f"config credentials[{i}]")
                for i, entry in enumerate(self.credentials_config)
            ]
        except CredentialError as exc:
            raise InvalidInput(str(exc)) from None
        return tuple(found)

    def sandbox_mode(self) -> SandboxChoice:
        """The run's sandbox choice, one per engine run for the same settings (the skills of
        `ci` share it); exit 5 for an unknown mode or a bad --sandbox-path."""
        environ = os.environ if self.env is None else self.env
        where = (self.sandbox_config_where, self.sandbox_where)
        mode, origin = requested_with_origin(self.sandbox, environ, self.sandbox_config, *where)
        return shared_choice(mode, sandbox_paths(self.sandbox_path), environ, origin)

    @property
    def effective_timeout_ms(self) -> int:
        """--timeout-ms, or the default for this runner when it was not given."""
        return self.timeout_ms if self.timeout_ms is not None else default_timeout_ms(self.runner)

    @property
    def mode(self) -> Literal["runner", "observations"]:
        """The report's settings.mode."""
        return "observations" if self.observations is not None else "runner"

    def files(self) -> RunFiles:
        """The paths this run reads and writes."""
        return RunFiles(self.cases, self.observations, self.record, self.resume, self.outputs)

    def run_settings(self, **more: Any) -> RunSettings:
        """How each invocation runs (``more``: the command's own settings)."""
        return RunSettings(
            runner=self.runner,
            trials=self.trials,
            jobs=self.jobs,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            keep_going=self.keep_going,
            retries=self.retries,
            env=self.env,
            cache=self.cache,
            **more,
        )


@dataclass(frozen=True, kw_only=True)
class TestOptions(_RunOptions):
    """Everything `skill-evals test` takes. ``require_verified_isolation``: an unverified
    without run is exit 7."""

    skill: Path
    agent: str | None = None  # --agent: the frontmatter profile (default: the runner's agent)
    strict: bool = False  # --strict: a lint warning is exit 5 before any runner
    bootstrap_samples: int = 10_000
    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    keep_workspaces: Path | None = None  # move each invocation's workspace here
    retry_delay: Callable[[int], float] | None = None  # backoff (seconds before re-run n)
    scope: ArmOptions = field(default_factory=ArmOptions)  # arms, baseline, budget, settle
    judge: str | None = None  # the default judge of judge checks (docs/judging.md)
    judges: tuple[str, ...] | Mapping[str, str] = ()  # --judges NAME=CMD, config judges:
    judge_timeout_ms: int = 120_000
    max_judge_calls: int | None = None

    def judging(self, suite: CaseSuite) -> Judging | None:
        """The run's judging (None without judge checks); exit 5 for an undefined judge."""
        return plan_judging(
            suite,
            self.judge,
            named=named_judges(self.judges),
            sandbox=self.sandbox_mode(),
            timeout_ms=self.judge_timeout_ms,
            max_bytes=self.max_bytes,
            retries=self.retries,
            max_calls=self.max_judge_calls,
            max_cost_usd=self.scope.max_cost_usd,
            trials=self.trials,
            seed=self.seed,
            baseline=self.scope.baseline is not None,
            arms=self.scope.arms,
            env=self.env,
            retry_delay=self.retry_delay,
        )

    def run_settings(self, **more: Any) -> RunSettings:
        """How each invocation runs."""
        return super().run_settings(
            retry_delay=self.retry_delay, keep_workspaces=self.keep_workspaces, **more
        )

    @property
    def profile(self) -> str | None:
        """The agent profile of the frontmatter check: --agent, else a built-in runner's agent."""
        return self.agent or builtin_agent(self.runner)

    def gates(self) -> GateSettings:
        """The gates and the bootstrap that judges them."""
        return GateSettings(self.min_trigger_f1, self.min_uplift, self.seed, self.bootstrap_samples)

    def settings(self) -> Settings:
        """The report's settings block."""
        return Settings(
            mode=self.mode,
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


@dataclass(frozen=True, kw_only=True)
class RouteOptions(_RunOptions):
    """Everything `skill-evals route` takes. A routing run has no without arm:
    ``require_verified_isolation`` is said in a note and has no effect."""

    skills: tuple[Path, ...] = ()
    catalog_globs: tuple[str, ...] = ()
    min_accuracy: float | None = None
    min_skill_f1: float | None = None
    cwd: Path | None = None  # where --catalog globs start (default: the working directory)

    def catalog(self) -> Catalog:
        """The catalog given by --skill or --catalog."""
        return load_route_catalog(self.skills, self.catalog_globs, self.cwd)

    def settings(self) -> RouteSettings:
        """The report's settings."""
        return RouteSettings(
            mode=self.mode,
            trials=self.trials,
            seed=self.seed,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            jobs=self.jobs,
            retries=self.retries,
            min_accuracy=self.min_accuracy,
            min_skill_f1=self.min_skill_f1,
        )


def _cache_use(run: RunSettings, scope: str, excluded: tuple[str, ...] = ()) -> CacheUse | None:
    if run.cache is None:
        return None
    return CacheUse(run.cache, is_builtin_runner(run.runner), scope, excluded)


def _result(ran: Ran | None, recorded: ExecutionResult | None) -> ExecutionResult:
    """What is scored: the run's result, or the recorded observations (one of the two)."""
    result = ran.result if ran is not None else recorded
    assert result is not None
    return result


def run_test(
    options: TestOptions,
    progress: Callable[[Progress], None] | None = None,
    held: HeldOutputs | None = None,
    answers: dict[tuple[str, int, str], str] | None = None,
    notice: Callable[[str], None] | None = None,
) -> Report:
    """Run one skill's evaluation and return its report (``report["exitCode"]`` is the exit).

    ``held`` receives the descriptors of outputs that are pipes or devices, opened by the
    checks before anything runs, for :func:`outputs.write_output`. ``answers``, when given,
    receives each scored observation's ``output`` by (case id, trial, variant): for the HTML
    report's ``--include-outputs`` only, never for the report itself. ``notice`` says the
    pre-flight's lint warnings (on stderr), before anything runs."""
    settings, files, run = options.settings(), options.files(), options.run_settings()
    skill: Skill | None = None
    suite: CaseSuite | None = None
    lint: LintResult | None = None
    locks = RecordLocks()
    try:
        check_modes(options.runner, files)
        run = dataclasses.replace(
            run, sandbox=options.sandbox_mode(), credentials=options.proxied()
        )
        locks.take(files.record, files.resume)  # before F is read; held to the end
        check_runner_only(files, run, options.scope)
        skill = load_skill(options.skill, options.profile)
        baseline = load_checked_baseline(skill, files, run, options.scope, held)
        suite = load_cases(options.cases, skill.name)
        judging = options.judging(suite)
        plan = plan_test(skill, baseline, suite, files, run, options.scope, options.gates())
        lint = preflight(
            suite,
            skill.name,
            min_uplift=options.min_uplift,
            timeout_ms=options.effective_timeout_ms,
            strict=options.strict,
            notice=notice,
        )
        ran = None
        if plan.execution is not None:
            cache = _cache_use(run, skill.name, suite_paths(suite, skill.path))
            watched = [skill.path, *runner_neighbours(run.runner)]
            execution = replace(plan.execution, judging=judging)
            if judging is not None and judging.draws:
                # Preference is no pass rate: the settle bounds do not hold for it.
                execution = replace(execution, settle=None)
            ran = run_plan(execution, cache, watched, progress)
        result = _result(ran, plan.recorded)
        if judging is not None:
            result = judge_result(result, suite, judging, options.jobs)
        if answers is not None:
            answers.update((obs.key, obs.output) for obs in result.observations)
        report = build_test_report(
            skill,
            suite,
            settings,
            result,
            skill_changed=ran is not None and changed_since_loaded(skill),
            messages=(*plan.notes, *ran.cache_notes) if ran is not None else (),
            arm_plan=plan.scope.plan,
            baseline=baseline,
            baseline_changed=ran is not None
            and baseline is not None
            and changed_since_loaded(baseline),
        )
        if ran is not None and ran.cache_misses is not None:
            report["runner"]["cacheMisses"] = ran.cache_misses
        report["sandbox"] = ran.result.sandbox if ran is not None else None
        return with_lint(add_judging(report, judging), lint)
    except LintFailed as exc:
        return with_lint(error_report(exc.exit_code, str(exc), settings, skill, suite), exc.result)
    except EvalError as exc:
        idle = exc.nothing_started
        return with_lint(error_report(exc.exit_code, str(exc), settings, skill, suite, idle), lint)
    finally:
        locks.release()


def run_route(
    options: RouteOptions,
    progress: Callable[[Progress], None] | None = None,
    held: HeldOutputs | None = None,
) -> Report:
    """Run one routing evaluation and return its report (``report["exitCode"]`` is the exit):
    the steps of :func:`run_test` with the whole catalog offered in one arm, ``routing``."""
    settings, files, run = options.settings(), options.files(), options.run_settings()
    catalog: Catalog | None = None
    suite: RouteSuite | None = None
    locks = RecordLocks()
    try:
        check_modes(options.runner, files)
        run = dataclasses.replace(
            run, sandbox=options.sandbox_mode(), credentials=options.proxied()
        )
        locks.take(files.record, files.resume)  # before F is read; held to the end
        catalog = options.catalog()
        check_catalog_outputs(catalog, files, held)
        suite = load_route_cases(options.cases, catalog.names)
        plan = plan_route(
            catalog, suite, files, run, options.min_skill_f1, options.require_verified_isolation
        )
        ran = None
        if plan.execution is not None:
            watched = [*(s.path for s in catalog.skills), *runner_neighbours(run.runner)]
            shown = None if progress is None else RouteProgress(progress)
            ran = run_plan(plan.execution, _cache_use(run, CACHE_SCOPE), watched, shown)
        warnings = catalog_warnings(catalog)
        if ran is not None:
            warnings = [*warnings, *ran.sandbox_warnings(), *ran.exposure, *ran.cache_warnings]
        report = build_route_report(
            catalog,
            suite,
            settings,
            _result(ran, plan.recorded),
            resumed=plan.resumed,
            changed=catalog.changed() if ran is not None else (),
            notes_in=(*plan.notes, *ran.cache_notes) if ran is not None else (),
            warnings_in=warnings,
        )
        if ran is not None and ran.cache_misses is not None and report.get("runner"):
            report["runner"]["cacheMisses"] = ran.cache_misses
        report["sandbox"] = ran.result.sandbox if ran is not None else None
        return report
    except EvalError as exc:
        warnings = catalog_warnings(catalog) if catalog is not None else []
        return route_error_report(
            exc.exit_code, str(exc), settings, catalog, suite, warnings, exc.nothing_started
        )
    finally:
        locks.release()
