"""`skill-evals test` and `skill-evals route` from options to report: load → plan → run →
score, each step one call into the package that owns it (suite/, plan/, run/, score/ and
report/).

Shared by the commands and the CI gate. Everything that can be decided before a runner starts
(exit 5, then 6, then the exit-7 cases that need no run) is decided before one starts, so no
money is spent on a run that cannot pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, replace

from .agents.exposed import runner_neighbours
from .cache.run import suite_paths
from .errors import EvalError
from .plan.files import check_modes
from .plan.lint import LintFailed, LintResult, preflight, with_lint
from .plan.route_plan import CACHE_SCOPE, catalog_warnings, check_catalog_outputs, plan_route
from .plan.run_settings import RunSettings, default_timeout_ms, is_builtin_runner
from .plan.test_plan import (
    TestPlan,
    check_runner_only,
    exposed_cases_note,
    load_checked_baseline,
    plan_test,
)
from .report.blocks import Report, Settings, error_report
from .report.judge_report import add_judging
from .report.outputs import HeldOutputs
from .report.route_report import build_route_report, route_error_report
from .report.test_report import build_test_report
from .run.cached_run import CacheUse, Ran, run_plan
from .run.execute import ExecutionResult, Progress
from .run.gc_pause import gc_thaw
from .run.judge_phase import judge_result
from .run.judging import Judging
from .run.record_lock import RecordLocks
from .run.route_progress import RouteProgress
from .run_options import RouteOptions, TestOptions
from .suite.cases import CaseSuite, load_cases
from .suite.catalog import Catalog
from .suite.route_cases import RouteSuite, load_route_cases
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


def _cache_use(run: RunSettings, scope: str, excluded: tuple[str, ...] = ()) -> CacheUse | None:
    if run.cache is None:
        return None
    return CacheUse(run.cache, is_builtin_runner(run.runner), scope, excluded)


def _result(ran: Ran | None, recorded: ExecutionResult | None) -> ExecutionResult:
    """What is scored: the run's result, or the recorded observations (one of the two)."""
    result = ran.result if ran is not None else recorded
    assert result is not None
    return result


@dataclass
class _Loaded:
    """What a run had read when it ended (an error report names what it knows)."""

    skill: Skill | None = None
    suite: CaseSuite | None = None
    lint: LintResult | None = None


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
    settings, files = options.settings(), options.files()
    got = _Loaded()
    locks = RecordLocks()
    try:
        check_modes(options.runner, files)
        run = replace(
            options.run_settings(), sandbox=options.sandbox_mode(), credentials=options.proxied()
        )
        locks.take(files.record, files.resume)  # before F is read; held to the end
        check_runner_only(files, run, options.scope)
        skill = got.skill = load_skill(options.skill, options.profile)
        baseline = load_checked_baseline(skill, files, run, options.scope, held)
        suite = got.suite = _case_suite(options, skill.name)
        judging = options.judging(suite)
        plan = plan_test(skill, baseline, suite, files, run, options.scope, options.gates())
        got.lint = _preflight(options, suite, skill.name, notice)
        ran = _run_test_plan(plan, run, skill, suite, judging, progress)
        result = _scored(_result(ran, plan.recorded), suite, judging, options.jobs, answers)
        report = _test_report(skill, baseline, suite, settings, plan, ran, result)
        return with_lint(add_judging(report, judging), got.lint)
    except LintFailed as exc:
        report = error_report(exc.exit_code, str(exc), settings, got.skill, got.suite)
        return with_lint(report, exc.result)
    except EvalError as exc:
        idle = exc.nothing_started
        report = error_report(exc.exit_code, str(exc), settings, got.skill, got.suite, idle)
        return with_lint(report, got.lint)
    finally:
        locks.release()
        gc_thaw()


def _case_suite(options: TestOptions, name: str) -> CaseSuite:
    """The run's cases: those ci's pre-check loaded for a skill of this name, else the file
    read now."""
    given = options.loaded_cases
    if given is not None and given[0] == name and given[1].path == options.cases:
        return given[1]
    return load_cases(options.cases, name)


def _preflight(
    options: TestOptions, suite: CaseSuite, name: str, notice: Callable[[str], None] | None
) -> LintResult:
    """The plan step's lint of the suite, before anything runs (LintFailed under --strict)."""
    return preflight(
        suite,
        name,
        min_uplift=options.min_uplift,
        timeout_ms=options.effective_timeout_ms,
        strict=options.strict,
        notice=notice,
    )


def _run_test_plan(
    plan: TestPlan,
    run: RunSettings,
    skill: Skill,
    suite: CaseSuite,
    judging: Judging | None,
    progress: Callable[[Progress], None] | None,
) -> Ran | None:
    """The run step: what the plan still needs run (None when the records hold it all)."""
    if plan.execution is None:
        return None
    cache = _cache_use(run, skill.name, suite_paths(suite, skill.path))
    watched = [skill.path, *runner_neighbours(run.runner)]
    execution = replace(plan.execution, judging=judging)
    if judging is not None and judging.draws:
        # Preference is no pass rate: the settle bounds do not hold for it.
        execution = replace(execution, settle=None)
    return run_plan(execution, cache, watched, progress)


def _scored(
    result: ExecutionResult,
    suite: CaseSuite,
    judging: Judging | None,
    jobs: int,
    answers: dict[tuple[str, int, str], str] | None,
) -> ExecutionResult:
    """The observations with their judges' verdicts; ``answers`` gets each output."""
    if judging is not None:
        result = judge_result(result, suite, judging, jobs)
    if answers is not None:
        answers.update((obs.key, obs.output) for obs in result.observations)
    return result


def _test_report(
    skill: Skill,
    baseline: Skill | None,
    suite: CaseSuite,
    settings: Settings,
    plan: TestPlan,
    ran: Ran | None,
    result: ExecutionResult,
) -> Report:
    """The score and report steps: the report of the run (or of the recorded observations)."""
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
    return report


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
