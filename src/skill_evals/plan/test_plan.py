"""The plan of a `test` run: the exit-5 checks of its options and paths, the baseline, the
arms and planned invocations, what ``--resume`` and ``--observations`` give, and every exit
6 and 7 that needs no run — all decided before a runner starts, so no money is spent on a run
that cannot pass."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..agents.registry import builtin_agent, entry
from ..agents.workspace import JUDGING_FILES
from ..cache.run import check_cache_dir
from ..errors import EvidenceUnavailable, InsufficientUnits, InvalidInput
from ..report.outputs import HeldOutputs
from ..run.execute import ExecutionPlan, ExecutionResult, SettleSpec
from ..run.records import load_observations
from ..run.runner import split_command
from ..run.workspace import check_keep_dir
from ..suite.cases import MIN_UNITS, CaseSuite
from ..suite.skill import Skill
from .files import (
    RunFiles,
    check_outputs,
    check_outputs_outside,
    path_inside,
    resumed_observations,
)
from .ready import check_runner
from .run_settings import RunSettings, require_units, runner_notes
from .scope import ArmOptions, Scope, load_baseline, plan_scope, settle_gates


@dataclass(frozen=True)
class GateSettings:
    """The two gates of `test` and the bootstrap that judges them."""

    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    seed: int = 42
    bootstrap_samples: int = 10_000


@dataclass(frozen=True)
class TestPlan:
    """What a `test` run does: run ``execution``, or score the ``recorded`` observations."""

    scope: Scope
    execution: ExecutionPlan | None  # None: --observations, nothing runs
    recorded: ExecutionResult | None
    notes: tuple[str, ...] = ()  # the report's notes known before the run


def check_runner_only(files: RunFiles, run: RunSettings, scope: ArmOptions) -> None:
    """Exit 5 for the options that only mean something when a runner runs."""
    if files.observations is None:
        return
    if run.keep_workspaces is not None:
        raise InvalidInput(
            "--keep-workspaces works with --runner only; recorded observations have no workspaces"
        )
    if run.cache is not None:
        raise InvalidInput("--cache works with --runner only; with --observations nothing runs")
    # --max-cost-usd stays: with --observations it bounds what the judges spend.
    if scope.max_invocations is not None or scope.stop_when_settled:
        raise InvalidInput(
            "--max-invocations and --stop-when-settled work with --runner only; with "
            "--observations nothing runs"
        )


def _check_bundled(agent: str | None, skill_name: str) -> None:
    """Exit 5 for a tested skill named like a skill the built-in ``agent`` bundles: the agent
    offers its own in both variants under that name, so the comparison would mean nothing."""
    if agent is None:
        return
    if skill_name.lower() in {name.lower() for name in entry(agent).bundled_skills}:
        raise InvalidInput(
            f"skill '{skill_name}': the {agent} runner's agent bundles a skill of that name and "
            "offers it in both variants, so with and without could not differ; rename the skill"
        )


def _check_keep_workspaces(keep: Path, skill_dir: Path) -> None:
    if path_inside(keep, skill_dir) or path_inside(skill_dir, keep):
        raise InvalidInput(
            f"--keep-workspaces {keep}: must lie outside the skill directory {skill_dir} "
            "(kept workspaces would change the skill's hash)"
        )
    problem = check_keep_dir(keep)
    if problem is not None:
        raise InvalidInput(f"--keep-workspaces {keep}: {problem}")


def load_checked_baseline(
    skill: Skill,
    files: RunFiles,
    run: RunSettings,
    scope: ArmOptions,
    held: HeldOutputs | None = None,
) -> Skill | None:
    """The --baseline skill (None without one), after the exit-5 checks of the paths around
    the tested skill: a bundled name, outputs inside it or unwritable, a cache or kept
    workspaces inside it or the baseline."""
    _check_bundled(builtin_agent(run.runner), skill.name)
    check_outputs_outside(files.outputs, skill.path, "skill")
    check_outputs(files, held)
    baseline = load_baseline(scope, skill, files.outputs)
    check_cache_dir(run.cache, skill.path, *([baseline.path] if baseline is not None else []))
    if run.keep_workspaces is not None:
        _check_keep_workspaces(run.keep_workspaces, skill.path)
        if baseline is not None:
            _check_keep_workspaces(run.keep_workspaces, baseline.path)
    check_outputs(files)
    return baseline


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


def _check_uplift_units(min_uplift: float | None, suite: CaseSuite) -> None:
    if min_uplift is None:
        return
    task_units = len({c.unit for c in suite.cases if c.task is not None})
    if task_units == 0:
        raise EvidenceUnavailable(
            f"--min-uplift is set but no case in {suite.path} has a task check"
        )
    if task_units < MIN_UNITS:
        raise InsufficientUnits(
            f"--min-uplift needs at least {MIN_UNITS} independent cases with a task "
            f"check; {suite.path} has {task_units}"
        )


def _check_trigger_cases(min_trigger_f1: float | None, suite: CaseSuite) -> None:
    if min_trigger_f1 is not None and not any(c.expect_trigger for c in suite.cases):
        # Recall's denominator TP+FN would be 0, so F1 is null and the gate can only end
        # in exit 7: say so now instead of paying for every invocation first.
        raise EvidenceUnavailable(
            f"--min-trigger-f1 is set but no case in {suite.path} has expectTrigger: true, "
            "so recall and F1 are undefined; add cases where the skill should load"
        )


def plan_test(
    skill: Skill,
    baseline: Skill | None,
    suite: CaseSuite,
    files: RunFiles,
    run: RunSettings,
    scope: ArmOptions,
    gates: GateSettings,
) -> TestPlan:
    """The plan of one skill's run; exit 5, 6 or 7 for what can be decided before it starts."""
    command = split_command(run.runner) if run.runner is not None else ()
    arms = plan_scope(scope, skill, baseline, suite, run.trials, gates.seed, gates.min_uplift)
    resumed = resumed_observations(files, suite, run.trials, arms.planned)
    recorded = None
    if files.observations is not None:
        observations, failures = load_observations(
            files.observations,
            suite,
            run.trials,
            skill.name,
            arms.planned,
            baseline=baseline is not None,
        )
        recorded = ExecutionResult(
            observations=observations, failures=failures, planned=len(arms.planned)
        )
    require_units(suite.path, suite.unit_count)
    _check_uplift_units(gates.min_uplift, suite)
    if recorded is not None:
        return TestPlan(arms, None, recorded)
    notes = runner_notes(run.runner)
    exposed = exposed_cases_note(suite.path, skill.path)
    if exposed is not None and builtin_agent(run.runner) is not None:
        notes = (*notes, exposed)
    _check_trigger_cases(gates.min_trigger_f1, suite)
    env = run.env if run.env is not None else os.environ
    # A --resume that holds every invocation starts no runner: its program is not needed.
    check_runner(run.runner, env, os.getcwd(), program=len(resumed) < len(arms.planned))
    settle = SettleSpec(
        settle_gates(gates.min_trigger_f1, gates.min_uplift, scope.compare, suite),
        gates.bootstrap_samples,
        gates.seed,
        stop=scope.stop_when_settled,
    )
    execution = run.execution_plan(
        command,
        suite,
        skill.name,
        skill.path,
        files.record,
        resumed,
        arms=arms.arms,
        planned=arms.planned,
        budget=scope.budget,
        settle=settle,
    )
    return TestPlan(arms, execution, None, notes)
