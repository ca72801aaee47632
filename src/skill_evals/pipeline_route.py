"""`skill-evals route` from options to report: load → plan → run → score (docs/routing.md).

Every exit 5, the exit 6 and the exit-7 cases that need no run are decided before a runner
starts. The invocations go through the engine's scheduler (execute.py) with one arm,
``routing``: EVALGATE_SKILL_VARIANT=with, SKILL_EVALS_ARM=routing, SKILL_EVALS_SKILL_DIRS = the
catalog's absolute directories joined by newlines, and no EVALGATE_SKILL_DIR (a runner that
knows only one skill must not silently measure a one-skill catalog).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .agents import simulated
from .cache.key import canonical_json
from .cache.misses import misses_line
from .cache.run import cache_note, check_cache_dir, open_cache
from .cache.settings import CacheSettings
from .errors import EvalError, EvidenceUnavailable, InsufficientUnits, InvalidInput
from .plan.arms import Arm
from .plan.files import RunFiles, check_outputs, path_inside
from .plan.run_settings import default_timeout_ms, is_builtin_runner
from .report.outputs import HeldOutputs
from .report.route_report import ARM, Report, RouteSettings, build_route_report, route_error_report
from .run.execute import ExecutionPlan, ExecutionResult, Progress, StartListener, execute
from .run.exposed import exposure_warnings, runner_neighbours
from .run.observations import Observation
from .run.record_lock import RecordLocks
from .run.records import load_recorded
from .run.route_observations import load_route_observations
from .run.runner import split_command
from .suite.cases import MIN_UNITS
from .suite.catalog import Catalog, catalog_dirs, load_catalog
from .suite.route_cases import RouteSuite, load_route_cases

SKILL_DIRS_VAR = "SKILL_EVALS_SKILL_DIRS"
CACHE_SCOPE = "%routing"  # the cache subdirectory of routing runs (no skill name holds "%")
ARM_VAR = "SKILL_EVALS_ARM"


NO_ISOLATION_TO_VERIFY = (
    "--require-verified-isolation: a routing run has no without arm, so there is no isolation "
    "to verify"
)


@dataclass(frozen=True)
class RouteOptions:
    """Everything `skill-evals route` takes (already range-checked by the CLI)."""

    cases: Path
    skills: tuple[Path, ...] = ()
    catalog_globs: tuple[str, ...] = ()
    runner: str | None = None
    observations: Path | None = None
    trials: int = 3
    seed: int = 42
    timeout_ms: int | None = None  # None: the runner's default (default_timeout_ms)
    max_bytes: int = 1_000_000
    jobs: int = 4
    retries: int = 2
    min_accuracy: float | None = None
    min_skill_f1: float | None = None
    record: Path | None = None
    resume: Path | None = None
    keep_going: bool = False
    outputs: tuple[Path, ...] = ()  # every path we will write: outside every catalog skill
    env: Mapping[str, str] | None = None
    cwd: Path | None = None  # where --catalog globs start (default: the working directory)
    cache: CacheSettings | None = None  # reuse valid observations (docs/cost.md)
    require_verified_isolation: bool = False  # no without arm here: said in a note, no effect

    @property
    def effective_timeout_ms(self) -> int:
        """The per-invocation timeout: as given, else the runner's default."""
        return self.timeout_ms if self.timeout_ms is not None else default_timeout_ms(self.runner)

    def settings(self) -> RouteSettings:
        """The report's settings."""
        return RouteSettings(
            mode="observations" if self.observations is not None else "runner",
            trials=self.trials,
            seed=self.seed,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            jobs=self.jobs,
            retries=self.retries,
            min_accuracy=self.min_accuracy,
            min_skill_f1=self.min_skill_f1,
        )

    def file_checks(self) -> RunFiles:
        """The output/input file rules of ``test`` applied to these options' files."""
        return RunFiles(self.cases, self.observations, self.record, self.resume, self.outputs)


class _RouteProgress:
    """The progress printer of ``test`` for routing invocations: the skill column says
    ``routing`` and the outcome says whether the runner worked (which skill loaded is in the
    report, not in a per-invocation "loaded/not loaded" of one skill)."""

    def __init__(self, inner: Callable[[Progress], None]) -> None:
        self._inner = inner
        self._starts = inner if isinstance(inner, StartListener) else None

    def started(self, running: int, done: int, total: int) -> None:
        """An invocation started."""
        if self._starts is not None:
            self._starts.started(running, done, total)

    def __call__(self, event: Progress) -> None:
        self._inner(dataclasses.replace(event, triggered=None, expect_trigger=None))


def load_catalog_for(options: RouteOptions) -> Catalog:
    """The catalog given by --skill or --catalog (exactly one of the two)."""
    if options.skills and options.catalog_globs:
        raise InvalidInput(
            "give the catalog with --skill DIR... or with --catalog GLOB..., not both"
        )
    if options.catalog_globs:
        cwd = options.cwd if options.cwd is not None else Path.cwd()
        return load_catalog(catalog_dirs(options.catalog_globs, cwd))
    return load_catalog(options.skills)


def _check_outputs(options: RouteOptions, catalog: Catalog, held: HeldOutputs | None) -> None:
    for out in options.outputs:
        for skill in catalog.skills:
            if path_inside(out, skill.path):
                raise InvalidInput(
                    f"{out}: output path lies inside the catalog skill directory {skill.path}; "
                    "write reports elsewhere (it would change the skill's hash)"
                )
    check_outputs(options.file_checks(), held)


def _resumed(options: RouteOptions, suite: RouteSuite) -> list[Observation]:
    resume, record = options.resume, options.record
    if resume is None:
        return []
    first_run = record is not None and resume.resolve() == record.resolve()
    if first_run and not os.path.lexists(resume):
        return []  # --resume F --record F, F missing: the first run of a resumable job
    return load_recorded(resume, suite.engine_suite(), options.trials)


def routing_env(catalog: Catalog) -> dict[str, str | None]:
    """What every routing invocation's environment adds to (None: removes from) the caller's."""
    return {ARM_VAR: ARM, SKILL_DIRS_VAR: catalog.env_value(), "EVALGATE_SKILL_DIR": None}


def _warnings(catalog: Catalog) -> list[str]:
    return [f"skill format: {w}" for s in catalog.skills for w in s.warnings]


def catalog_sha256(catalog: Catalog) -> str:
    """The hash of a catalog as one offered version: its skills' directory hashes, in the
    order the runner gets them."""
    return hashlib.sha256(canonical_json([s.directory_sha256 for s in catalog.skills])).hexdigest()


def run_route(
    options: RouteOptions,
    progress: Callable[[Progress], None] | None = None,
    held: HeldOutputs | None = None,
) -> Report:
    """Run one routing evaluation and return its report (``report["exitCode"]`` is the exit)."""
    settings = options.settings()
    catalog: Catalog | None = None
    suite: RouteSuite | None = None
    locks = RecordLocks()
    try:
        if (options.runner is None) == (options.observations is None):
            raise InvalidInput("give exactly one of --runner or --observations")
        if options.observations is not None and (options.record or options.resume):
            raise InvalidInput(
                "--record and --resume work with --runner only; with --observations nothing "
                "runs, so there is nothing to record or resume"
            )
        locks.take(options.record, options.resume)  # before F is read; held to the end
        catalog = load_catalog_for(options)
        _check_outputs(options, catalog, held)
        suite = load_route_cases(options.cases, catalog.names)
        command = split_command(options.runner) if options.runner is not None else ()
        resumed = _resumed(options, suite)
        observations: list[Observation] = []
        if options.observations is not None:
            observations = load_route_observations(
                options.observations, suite.engine_suite(), options.trials
            )
        if suite.unit_count < MIN_UNITS:
            raise InsufficientUnits(
                f"{suite.path}: {suite.unit_count} independent case(s) after normalising "
                f"prompts; at least {MIN_UNITS} are needed"
            )
        if options.min_skill_f1 is not None and not any(c.expect for c in suite.cases):
            raise EvidenceUnavailable(
                f"--min-skill-f1 is set but no case in {suite.path} expects a skill, so no "
                "skill's F1 can be measured; add cases whose expect names skills"
            )
        warnings = _warnings(catalog)
        if options.observations is not None:
            result = ExecutionResult(observations=observations)
            return build_route_report(catalog, suite, settings, result, warnings_in=warnings)
        notes = list(simulated.NOTES) if simulated.is_simulated_command(options.runner) else []
        if options.require_verified_isolation:
            notes.append(NO_ISOLATION_TO_VERIFY)
        folders = [s.path for s in catalog.skills]
        warnings = [*warnings, *exposure_warnings([*folders, *runner_neighbours(options.runner)])]
        check_cache_dir(options.cache, *(s.path for s in catalog.skills))
        cache = open_cache(options.cache, is_builtin_runner(options.runner), command, CACHE_SCOPE)
        plan = ExecutionPlan(
            command=command,
            suite=suite.engine_suite(),
            skill_name=ARM,
            skill_dir=catalog.skills[0].path,  # unused: EVALGATE_SKILL_DIR is removed
            trials=options.trials,
            jobs=options.jobs,
            timeout_ms=options.effective_timeout_ms,
            max_bytes=options.max_bytes,
            keep_going=options.keep_going,
            retries=options.retries,
            record=options.record,
            resumed=resumed,
            base_env=options.env,
            variants=("with",),
            extra_env=routing_env(catalog),
            # The one arm offers the whole catalog: its hash names the offered version.
            arms=(Arm("with", "with", catalog.skills[0].path, catalog_sha256(catalog)),),
            cache=cache,
        )
        try:
            result = execute(plan, None if progress is None else _RouteProgress(progress))
        finally:
            if cache is not None:
                cache.close()
        misses = None
        if cache is not None:
            warnings = [*warnings, *cache.messages]
            fresh = [o.key for o in result.observations if not o.cached]
            misses = cache.misses.report([*fresh, *(f.key for f in result.failures)])
            if cache.hits:
                notes.append(cache_note(cache))
            if not cache.disabled:
                notes.append(misses_line(cache.hits, misses))
        report = build_route_report(
            catalog,
            suite,
            settings,
            result,
            resumed=len([o for o in resumed if o.variant == "with"]),
            changed=catalog.changed(),
            notes_in=notes,
            warnings_in=warnings,
        )
        if misses is not None and isinstance(report.get("runner"), dict):
            report["runner"]["cacheMisses"] = misses
        return report
    except EvalError as exc:
        warnings = _warnings(catalog) if catalog is not None else []
        return route_error_report(exc.exit_code, str(exc), settings, catalog, suite, warnings)
    finally:
        locks.release()
