"""Planning the judging of a `test` run: the default judge (--judge, config ``judge:``) split
like --runner, and every judge check's judge known before anything runs (exit 5 naming the
case file and line when a check has none)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from ..checks.judge_model import Judge, JudgePairwise
from ..errors import InvalidInput
from ..run.judge_pairs import COMPARED_ARMS, pair_draws
from ..run.judging import JudgeSettings, Judging
from ..run.observations import Variant
from ..suite.cases import CaseSuite
from .arms import parse_arms


def split_judge(command: str | None) -> tuple[str, ...] | None:
    """--judge as argv (None when not given); exit 5 for an empty one or unbalanced quotes."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(f"--judge: cannot split the command ({exc}); check its quotes") from None
    if not argv:
        raise InvalidInput("--judge: the command is empty; give a program and its arguments")
    return tuple(argv)


def compared_arms(baseline: bool, arms: str | None) -> tuple[Variant, ...]:
    """The arms a run offers besides ``with`` that a pairwise check compares it with:
    ``without`` (the uplift) and, with --baseline, ``baseline`` (the comparison), as --arms
    lists them (every one of them for the default list and ``auto``). Exit 5 for an --arms
    list that names no arm known (InvalidInput)."""
    choice = parse_arms(arms) if arms is not None else None
    if choice is None:
        return ("without", "baseline") if baseline else ("without",)
    if "with" not in choice:
        raise InvalidInput(
            "--arms: judge_pairwise compares the with answers with another arm's: the list "
            "must hold with"
        )
    return tuple(arm for arm in COMPARED_ARMS if arm in choice)


def check_pairwise(suite: CaseSuite, baseline: bool, arms: str | None) -> tuple[Variant, ...]:
    """The arms a suite scored by preference (it has ``judge_pairwise`` checks) compares the
    with answers with (empty for a suite without them); exit 5 when it mixes them with other
    task checks, or when the run offers ``with`` and no arm to compare it with."""
    pairwise = [c for c in suite.cases if c.task is not None and c.task.pairwise is not None]
    if not pairwise:
        return ()
    for case in suite.cases:
        if case.task is not None and (case.task.pairwise is None or len(case.task.checks) > 1):
            raise InvalidInput(
                f"{suite.path}:{case.line}: field task: a suite with judge_pairwise checks "
                "is scored by preference: every task must be one judge_pairwise check (put "
                "other checks in another case file)"
            )
    compared = compared_arms(baseline, arms)
    if not compared:
        raise InvalidInput(
            "--arms: judge_pairwise compares the with answers with the without answers (the "
            "uplift) or the baseline's (the comparison): add without or baseline"
        )
    return compared


def plan_judging(
    suite: CaseSuite,
    command: str | None,
    *,
    timeout_ms: int,
    max_bytes: int,
    retries: int,
    max_calls: int | None,
    max_cost_usd: float | None = None,
    trials: int = 1,
    seed: int = 42,
    baseline: bool = False,
    arms: str | None = None,
    env: Mapping[str, str] | None = None,
    retry_delay: Callable[[int], float] | None = None,
) -> Judging | None:
    """The run's judging, or None when no case has a judge check."""
    argv = split_judge(command)
    compared = check_pairwise(suite, baseline, arms)
    judged = [
        case
        for case in suite.cases
        if case.task is not None and (case.task.judged or case.task.pairwise is not None)
    ]
    if not judged:
        return None
    if argv is None:
        for case in judged:
            assert case.task is not None
            for index, check in enumerate(case.task.checks):
                if isinstance(check, (Judge, JudgePairwise)) and check.command is None:
                    raise InvalidInput(
                        f"{suite.path}:{case.line}: field task[{index}]: a judge check needs "
                        "a judge: give --judge CMD (config judge:), or the check's own judge "
                        "field"
                    )
    settings = JudgeSettings(
        command=argv,
        timeout_ms=timeout_ms,
        max_bytes=max_bytes,
        retries=retries,
        retry_delay=retry_delay,
        max_calls=max_calls,
        max_cost_usd=max_cost_usd,
        env=env,
        cwd=Path.cwd(),
    )
    judging = Judging(settings)
    judging.draws = pair_draws(suite, trials, seed, compared)
    judging.ledger.used = True  # the report has a judge block
    return judging
