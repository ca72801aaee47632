"""Planning the judging of a `test` run: the default judge (--judge, config ``judge:``) and the
named ones (--judges NAME=CMD, config ``judges:``) split like --runner, and every judge check's
judge known before anything runs (exit 5 naming the case file, line and field when a check
names none, or a name nobody defined)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..checks.judge_model import Judge, JudgePairwise
from ..checks.judge_parse import JUDGE_NAME
from ..errors import InvalidInput
from ..run.judge_pairs import COMPARED_ARMS, pair_draws
from ..run.judging import JudgeSettings, Judging
from ..run.observations import Variant
from ..sandbox.probe import SandboxChoice
from ..suite.cases import CaseSuite
from .arms import parse_arms
from .ready import check_helper_key

DEFAULT_JUDGE = "default"  # the name of --judge (config judge:)


def split_judge(command: str | None, where: str = "--judge") -> tuple[str, ...] | None:
    """--judge as argv (None when not given); exit 5 for an empty one or unbalanced quotes."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(f"{where}: cannot split the command ({exc}); check its quotes") from None
    if not argv:
        raise InvalidInput(f"{where}: the command is empty; give a program and its arguments")
    return tuple(argv)


def named_judges(given: Sequence[str] | Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The trusted named judges: --judges NAME=CMD entries, or the config's ``judges:``
    mapping; exit 5 for a bad name, a name given twice, ``default`` (that is --judge) or a
    command that does not split."""
    pairs: list[tuple[str, str]] = []
    where = "config judges" if isinstance(given, Mapping) else "--judges"
    if isinstance(given, Mapping):
        pairs = [(str(name), str(command)) for name, command in given.items()]
    else:
        for entry in given:
            name, equals, command = entry.partition("=")
            if not equals:
                raise InvalidInput(f"{where}: expected NAME=CMD (a name, '=', then a command)")
            pairs.append((name.strip(), command))
    found: dict[str, tuple[str, ...]] = {}
    for name, command in pairs:
        shown = name[:64].encode("unicode_escape").decode("ascii")
        if not JUDGE_NAME.fullmatch(name):
            raise InvalidInput(
                f"{where}: {shown!r} is not a judge name: letters, digits, '_', '.', '-', at "
                "most 64 characters"
            )
        if name == DEFAULT_JUDGE:
            raise InvalidInput(f"{where}: 'default' is --judge's name; give it with --judge")
        if name in found:
            raise InvalidInput(f"{where}: the judge {shown!r} is defined twice")
        argv = split_judge(command, f"{where} {name}")
        assert argv is not None
        found[name] = argv
    return found


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


def _check_names(
    suite: CaseSuite, cases: Sequence[object], default: bool, named: Mapping[str, object]
) -> None:
    """Exit 5 (file, line, field) for a judge check whose judge is not defined."""
    for case in cases:
        task = getattr(case, "task", None)
        assert task is not None
        for index, check in enumerate(task.checks):
            if not isinstance(check, (Judge, JudgePairwise)):
                continue
            at = f"{suite.path}:{getattr(case, 'line', 0)}: field task[{index}]"
            name = check.judge or DEFAULT_JUDGE
            if name == DEFAULT_JUDGE and not default:
                raise InvalidInput(
                    f"{at}: a judge check needs a judge: give --judge CMD (config judge:), or "
                    "name one of --judges (config judges:) in the check's judge field"
                )
            if name != DEFAULT_JUDGE and name not in named:
                defined = ", ".join(sorted(named)) or "none"
                raise InvalidInput(
                    f"{at}.judge: no judge is named {name!r} (defined: {defined}): define it "
                    "with --judges NAME=CMD or the config's judges:"
                )


def plan_judging(
    suite: CaseSuite,
    command: str | None,
    *,
    named: Mapping[str, tuple[str, ...]] | None = None,
    sandbox: SandboxChoice | None = None,
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
    fallback: tuple[str, float] = ("absolute", 0.05),
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
    _check_names(suite, judged, argv is not None, named or {})
    environ = env if env is not None else os.environ
    check_helper_key(argv, "judge", "--judge", environ)
    for name, named_argv in (named or {}).items():
        check_helper_key(named_argv, "judge", f"judge {name}", environ)
    settings = JudgeSettings(
        command=argv,
        named=dict(named or {}),
        timeout_ms=timeout_ms,
        max_bytes=max_bytes,
        retries=retries,
        retry_delay=retry_delay,
        max_calls=max_calls,
        max_cost_usd=max_cost_usd,
        env=env,
        cwd=Path.cwd(),
        sandbox=sandbox,
        fallback=fallback[0],
        fallback_margin=fallback[1],
    )
    judging = Judging(settings)
    judging.draws = pair_draws(suite, trials, seed, compared)
    judging.ledger.used = True  # the report has a judge block
    return judging
