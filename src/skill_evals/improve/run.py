"""`skill-evals improve` from options to report: load, split, check the budget, run the loop,
then the diff and ``--apply`` (only for an accepted candidate)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EvalError, InvalidInput
from ..plan.files import path_inside
from ..plan.ready import check_helper_key, check_runner
from ..plan.run_control import retry_delay
from ..plan.run_settings import RunSettings
from ..run.runner import split_command
from ..sandbox.probe import requested_mode, sandbox_paths, shared_choice
from ..score.power import minimum_detectable_uplift
from ..suite.cases import CaseSuite, load_cases
from ..suite.skill import Skill, load_skill
from .edit import entry_cap, unified_diff
from .evaluate import Evaluator
from .loop import ImproveLoop, ImproveSettings, Outcome, check_budget
from .proposer import ProposerFailed, ProposerSpec, proposer_cell
from .report import failed_report, improve_report, stopped_report
from .split import Split, split_suite


@dataclass(frozen=True, kw_only=True)
class ImproveOptions:
    """Everything `skill-evals improve` takes."""

    skill: Path
    cases: Path
    runner: str
    proposer: str
    holdout: float = 0.4
    rounds: int = 3
    min_gain: float = 0.05
    body_chars: int = 2000
    proposer_timeout_ms: int = 120_000
    agent: str | None = None
    apply: bool = False
    diff: Path | None = None
    report: Path | None = None
    trials: int = 3
    seed: int = 42
    bootstrap_samples: int = 10_000
    jobs: int = 4
    timeout_ms: int = 30_000
    retries: int = 2
    max_invocations: int | None = None
    max_cost_usd: float | None = None
    env: Mapping[str, str] | None = None  # the runners' environment (default: the caller's)
    sandbox: str | None = None  # --sandbox (else SKILL_EVALS_SANDBOX, else sandbox_config)
    sandbox_config: str | None = None  # ci's config sandbox:
    sandbox_path: tuple[str, ...] = ()  # --sandbox-path PATH[:rw]
    display_root: Path | None = None  # the diff names SKILL.md relative to this (default: cwd)
    finalists: int = 2  # --finalists: candidates run on held-out at most
    proposer_where: str = "--proposer"  # where the proposer command was given, for messages
    max_heldout_trials: int = 9  # --max-heldout-trials: adaptive held-out trials stop here
    notice: Callable[[str], None] | None = None  # the pre-flight power line (stderr)


def _check_outputs(options: ImproveOptions) -> None:
    for flag, path in (("--report", options.report), ("--diff", options.diff)):
        if path is not None and path_inside(path, options.skill):
            raise InvalidInput(f"{flag} {path}: inside the skill directory; write it elsewhere")


def _settings(options: ImproveOptions) -> ImproveSettings:
    return ImproveSettings(
        rounds=options.rounds,
        min_gain=options.min_gain,
        body_chars=options.body_chars,
        entry_cap=entry_cap(options.agent),
        trials=options.trials,
        seed=options.seed,
        bootstrap_samples=options.bootstrap_samples,
        max_invocations=options.max_invocations,
        max_cost_usd=options.max_cost_usd,
        finalists=options.finalists,
        max_heldout_trials=max(options.max_heldout_trials, options.trials),
    )


def preflight(split: Split, options: ImproveOptions) -> float:
    """The smallest held-out F1 gain the split can prove (lint's uplift-mde over the held-out
    units at the --min-gain gate), said before any proposer call; a warning past 0.5."""
    units = len({c.unit for c in split.held_out})
    mde = minimum_detectable_uplift(units, options.min_gain).value
    line = (
        f"improve: {units} held-out unit(s) at {options.trials} trial(s) can prove an F1 gain "
        f"of {mde:.2f} or more (the minimum detectable gain)"
    )
    if mde > 0.5:
        line += (
            "; warning: a smaller gain can only be shown with many trials, and only on these few "
            "cases — add cases (more units to hold out), raise --holdout, or add trials"
        )
    if options.notice is not None:
        options.notice(line)
    return mde


def run_improve(options: ImproveOptions) -> dict[str, Any]:
    """Run `improve` and return its report (``exitCode`` is the exit)."""
    skill_name: str | None = None
    split: Split | None = None
    loop: ImproveLoop | None = None
    try:
        _check_outputs(options)
        command = tuple(split_command(options.runner))
        proposer_argv = tuple(split_command(options.proposer, options.proposer_where))
        skill = load_skill(options.skill, options.agent)
        skill_name = skill.name
        suite = load_cases(options.cases, skill.name)
        split = split_suite(suite, options.holdout, options.seed)
        check_budget(split, options.trials, options.max_invocations, options.seed)
        mde = preflight(split, options)
        loop = _loop(options, skill, suite, split, command, proposer_argv)
        loop.outcome.mde = mde
        return _finish(options, skill.path, skill.name, loop, loop.run())
    except ProposerFailed as exc:
        if loop is not None and loop.outcome.original is not None and skill_name is not None:
            return stopped_report(
                skill_name, loop.outcome, str(exc), seed=options.seed, holdout=options.holdout
            )
        return failed_report(skill_name, "unavailable", 7, str(exc), split)
    except EvalError as exc:
        return failed_report(skill_name, exc.status, exc.exit_code, str(exc), split)


def _loop(options: ImproveOptions, skill: Skill, suite: CaseSuite, split: Split,
          command: tuple[str, ...], proposer_argv: tuple[str, ...]) -> ImproveLoop:  # fmt: skip
    """The loop ready to run, once the runner and the proposer were checked (their programs,
    the proposer's key) and the sandbox was chosen — all before the first invocation."""
    environ = os.environ if options.env is None else options.env
    check_runner(options.runner, environ, os.getcwd())
    check_helper_key(proposer_argv, "propose", "--proposer", environ)
    mode = requested_mode(options.sandbox, environ, options.sandbox_config)
    choice = shared_choice(mode, sandbox_paths(options.sandbox_path), environ)
    run = RunSettings(
        runner=options.runner,
        trials=options.trials,
        jobs=options.jobs,
        timeout_ms=options.timeout_ms,
        max_bytes=1_000_000,
        retries=options.retries,
        env=options.env,
        sandbox=choice,
    )
    proposer = ProposerSpec(
        proposer_argv,
        options.proposer_timeout_ms,
        options.retries,
        proposer_cell(options.env, choice),
        retry_delay,
    )
    evaluator = Evaluator(run, command, skill.name, suite)
    return ImproveLoop(skill, suite, split, evaluator, proposer, _settings(options))


def _finish(options: ImproveOptions, skill_dir: Path, skill_name: str, loop: ImproveLoop,
            outcome: Outcome) -> dict[str, Any]:  # fmt: skip
    """The report, after the diff was written and ``--apply`` done for an accepted one."""
    diff = None
    if outcome.accepted and outcome.selected is not None:
        shown = os.path.relpath(skill_dir / "SKILL.md", options.display_root)
        diff = unified_diff(loop.text, outcome.selected.text, shown)
        _write_accepted(options, skill_dir, outcome.selected.text, diff)
    return improve_report(
        skill_name,
        outcome,
        seed=options.seed,
        holdout=options.holdout,
        min_gain=options.min_gain,
        diff=diff,
    )


def _write_accepted(options: ImproveOptions, skill_dir: Path, text: str, diff: str) -> None:
    if options.diff is not None:
        options.diff.write_text(diff, encoding="utf-8")
    if options.apply:
        target = skill_dir / "SKILL.md"
        temporary = skill_dir / ".SKILL.md.skill-evals-improve"
        temporary.write_bytes(text.encode("utf-8"))
        os.replace(temporary, target)
