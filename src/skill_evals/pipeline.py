"""`skill-evals test` from options to report: load → plan → run → score.

Shared by the `test` command and the CI gate. Everything that can be decided before a runner
starts (exit 5, then 6, then the exit-7 cases that need no run) is decided before one starts, so
no money is spent on a run that cannot pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .agents import simulated
from .agents.registry import builtin_agent
from .agents.workspace import JUDGING_FILES
from .cache.run import check_cache_dir, finish_cache, open_cache, suite_paths
from .cache.settings import CacheSettings
from .errors import EvalError, EvidenceUnavailable, InsufficientUnits, InvalidInput
from .plan.scope import ArmOptions, load_baseline, plan_scope, settle_gates
from .report.blocks import Report, Settings, error_report
from .report.outputs import HeldOutputs, holds_records, output_problem
from .run.execute import ExecutionPlan, ExecutionResult, Progress, SettleSpec, execute
from .run.exposed import exposure_warnings, runner_neighbours
from .run.observations import Observation, Variant
from .run.record_lock import RecordLocks
from .run.records import load_observations, load_recorded
from .run.runner import split_command
from .run.workspace import check_keep_dir
from .score.evaluate import evaluate
from .suite.cases import MIN_UNITS, CaseSuite, load_cases
from .suite.skill import Skill, directory_sha256, load_skill


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


DEFAULT_TIMEOUT_MS = 30_000
AGENT_TIMEOUT_MS = 300_000  # a real agent takes minutes: turns, tools, its own retries


def _check_bundled(agent: str | None, skill_name: str) -> None:
    """Exit 5 for a tested skill named like a skill the built-in ``agent`` bundles: the agent
    offers its own in both variants under that name, so the comparison would mean nothing."""
    from .agents.registry import entry

    if agent is None:
        return
    if skill_name.lower() in {name.lower() for name in entry(agent).bundled_skills}:
        raise InvalidInput(
            f"skill '{skill_name}': the {agent} runner's agent bundles a skill of that name and "
            "offers it in both variants, so with and without could not differ; rename the skill"
        )


def is_builtin_runner(command: str | None) -> bool:
    """Whether ``command`` runs one of this package's own runners (the simulation too)."""
    return builtin_agent(command) is not None or simulated.is_simulated_command(command)


def default_timeout_ms(command: str | None) -> int:
    """The per-invocation timeout when none is given: 300,000 ms for a built-in agent runner,
    30,000 ms for anything else."""
    return AGENT_TIMEOUT_MS if builtin_agent(command) is not None else DEFAULT_TIMEOUT_MS


def path_inside(path: Path, directory: Path) -> bool:
    """Whether ``path`` (resolved, symlinks followed) lies inside ``directory``."""
    return path.resolve().is_relative_to(directory.resolve())


def exposed_cases_note(cases: Path, skill_dir: Path) -> str | None:
    """A note when the built-in agent runners would install the case file with the skill (it
    lies inside the skill folder, not in the evals/ they leave out), so the agent could read
    the cases it is graded on."""
    if not path_inside(cases, skill_dir):
        return None
    top = cases.resolve().relative_to(skill_dir.resolve()).parts[0]
    if top in JUDGING_FILES:
        return None
    return (
        f"the case file {cases} is inside the skill folder but not in its evals/, so the agent "
        "runners install it with the skill and the agent can read its own cases; move it to "
        "evals/ in the skill folder"
    )


def check_outputs(options: TestOptions, held: HeldOutputs | None = None) -> None:
    """Exit-5 checks of the output paths, before anything runs (no money is spent on a run
    whose report cannot be written): each must be writable (a pipe or device: opened without
    blocking, kept in ``held``), none may be an input file (except ``--record F --resume F``,
    the resume pattern), no two may be the same file, and a ``--record`` file that already
    holds records must also be the ``--resume`` file (no duplicates in a record file)."""
    record = options.record
    inputs = {
        "--cases": options.cases,
        "--observations": options.observations,
        "--resume": options.resume,
    }
    seen: dict[Path, Path] = {}
    for out in options.outputs:
        resolved = out.resolve()
        if resolved in seen:
            raise InvalidInput(f"{out}: the same file is given for two outputs; use two files")
        seen[resolved] = out
        for option, given in inputs.items():
            if given is None or given.resolve() != resolved:
                continue
            if option == "--resume" and options.record and resolved == options.record.resolve():
                continue  # --resume F --record F: F is read first, then appended to
            raise InvalidInput(
                f"{out}: output path is also the {option} input file; write outputs elsewhere"
            )
        problem = output_problem(out, held, record=out == record)
        if problem is not None:
            raise InvalidInput(f"{out}: cannot write this output: {problem}")
    if record is not None and holds_records(record):
        resume = options.resume
        if resume is None or resume.resolve() != record.resolve():
            raise InvalidInput(
                f"{record} exists: add --resume {record} to continue it, or remove it"
            )


def _changed(skill: Skill) -> bool:
    """Whether the directory's hash differs from the one taken before the run."""
    try:
        return directory_sha256(skill.path) != skill.directory_sha256
    except InvalidInput:
        return True


def _resumed(
    options: TestOptions, suite: CaseSuite, planned: list[tuple[str, int, Variant]]
) -> list[Observation]:
    """The observations --resume reuses. ``--resume F --record F`` with F missing is the first
    run of a resumable job: it starts from nothing (any other missing --resume file is an
    error: resuming from nothing by mistake would re-run and re-pay everything)."""
    resume, record = options.resume, options.record
    if resume is None:
        return []
    first_run = record is not None and resume.resolve() == record.resolve()
    if first_run and not os.path.lexists(resume):
        return []
    return load_recorded(resume, suite, options.trials, planned)


def _check_keep_workspaces(keep: Path, skill_dir: Path) -> None:
    if path_inside(keep, skill_dir) or path_inside(skill_dir, keep):
        raise InvalidInput(
            f"--keep-workspaces {keep}: must lie outside the skill directory {skill_dir} "
            "(kept workspaces would change the skill's hash)"
        )
    problem = check_keep_dir(keep)
    if problem is not None:
        raise InvalidInput(f"--keep-workspaces {keep}: {problem}")


def _task_units(suite: CaseSuite) -> int:
    return len({c.unit for c in suite.cases if c.task is not None})


def _collect_answers(
    result: ExecutionResult, answers: dict[tuple[str, int, str], str] | None
) -> None:
    if answers is not None:
        answers.update((obs.key, obs.output) for obs in result.observations)


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
    settings = options.settings()
    skill: Skill | None = None
    suite: CaseSuite | None = None
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
        if options.observations is not None and options.keep_workspaces is not None:
            raise InvalidInput(
                "--keep-workspaces works with --runner only; recorded observations have no "
                "workspaces"
            )
        if options.observations is not None and options.cache is not None:
            raise InvalidInput("--cache works with --runner only; with --observations nothing runs")
        if options.observations is not None and (
            options.scope.budget is not None or options.scope.stop_when_settled
        ):
            raise InvalidInput(
                "--max-invocations, --max-cost-usd and --stop-when-settled work with --runner "
                "only; with --observations nothing runs"
            )
        skill = load_skill(options.skill)
        _check_bundled(builtin_agent(options.runner), skill.name)
        for out in options.outputs:
            if path_inside(out, skill.path):
                raise InvalidInput(
                    f"{out}: output path lies inside the skill directory {skill.path}; "
                    "write reports elsewhere (it would change the skill's hash)"
                )
        check_outputs(options, held)
        baseline = load_baseline(options.scope, skill, options.outputs)
        check_cache_dir(
            options.cache, skill.path, *([baseline.path] if baseline is not None else [])
        )

        if options.keep_workspaces is not None:
            _check_keep_workspaces(options.keep_workspaces, skill.path)
            if baseline is not None:
                _check_keep_workspaces(options.keep_workspaces, baseline.path)
        check_outputs(options)
        suite = load_cases(options.cases, skill.name)
        command = split_command(options.runner) if options.runner is not None else ()
        scope = plan_scope(
            options.scope, skill, baseline, suite, options.trials, options.seed, options.min_uplift
        )
        resumed = _resumed(options, suite, scope.planned)
        if options.observations is not None:
            observations, failures = load_observations(
                options.observations,
                suite,
                options.trials,
                skill.name,
                scope.planned,
                baseline=baseline is not None,
            )
        if suite.unit_count < MIN_UNITS:
            raise InsufficientUnits(
                f"{suite.path}: {suite.unit_count} independent case(s) after normalising "
                f"prompts; at least {MIN_UNITS} are needed"
            )
        if options.min_uplift is not None:
            task_units = _task_units(suite)
            if task_units == 0:
                raise EvidenceUnavailable(
                    f"--min-uplift is set but no case in {suite.path} has a task check"
                )
            if task_units < MIN_UNITS:
                raise InsufficientUnits(
                    f"--min-uplift needs at least {MIN_UNITS} independent cases with a task "
                    f"check; {suite.path} has {task_units}"
                )
        if options.observations is not None:
            result = ExecutionResult(
                observations=observations, failures=failures, planned=len(scope.planned)
            )
            _collect_answers(result, answers)
            return evaluate(skill, suite, settings, result, arm_plan=scope.plan, baseline=baseline)
        notes: tuple[str, ...] = (
            simulated.NOTES if simulated.is_simulated_command(options.runner) else ()
        )
        exposed = exposed_cases_note(suite.path, skill.path)
        if exposed is not None and builtin_agent(options.runner) is not None:
            notes = (*notes, exposed)
        if options.min_trigger_f1 is not None and not any(c.expect_trigger for c in suite.cases):
            # Recall's denominator TP+FN would be 0, so F1 is null and the gate can only end
            # in exit 7: say so now instead of paying for every invocation first.
            raise EvidenceUnavailable(
                f"--min-trigger-f1 is set but no case in {suite.path} has expectTrigger: true, "
                "so recall and F1 are undefined; add cases where the skill should load"
            )
        cache = open_cache(
            options.cache,
            is_builtin_runner(options.runner),
            command,
            skill.name,
            suite_paths(suite, skill.path),
        )
        plan = ExecutionPlan(
            command=command,
            suite=suite,
            skill_name=skill.name,
            skill_dir=skill.path,
            trials=options.trials,
            jobs=options.jobs,
            timeout_ms=options.effective_timeout_ms,
            max_bytes=options.max_bytes,
            keep_going=options.keep_going,
            record=options.record,
            resumed=resumed,
            base_env=options.env,
            keep_workspaces=options.keep_workspaces,
            retries=options.retries,
            retry_delay=options.retry_delay,
            arms=scope.arms,
            planned=scope.planned,
            budget=options.scope.budget,
            settle=SettleSpec(
                settle_gates(
                    options.min_trigger_f1, options.min_uplift, options.scope.compare, suite
                ),
                options.bootstrap_samples,
                options.seed,
                stop=options.scope.stop_when_settled,
            ),
            cache=cache,
        )
        exposure = exposure_warnings([skill.path, *runner_neighbours(options.runner)])
        try:
            result = execute(plan, progress)
        finally:
            if cache is not None:
                cache.close()
        result.messages[:0] = exposure
        notes, misses = finish_cache(cache, result, notes)
        _collect_answers(result, answers)
        report = evaluate(
            skill,
            suite,
            settings,
            result,
            skill_changed=_changed(skill),
            messages=notes,
            arm_plan=scope.plan,
            baseline=baseline,
            baseline_changed=baseline is not None and _changed(baseline),
        )
        if misses is not None:
            report["runner"]["cacheMisses"] = misses
        return report
    except EvalError as exc:
        return error_report(exc.exit_code, str(exc), settings, skill, suite)
    finally:
        locks.release()
