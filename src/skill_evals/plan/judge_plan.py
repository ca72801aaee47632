"""Planning the judging of a `test` run: the default judge (--judge, config ``judge:``) split
like --runner, and every judge check's judge known before anything runs (exit 5 naming the
case file and line when a check has none)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import InvalidInput
from ..run.judging import JudgeSettings, Judging
from ..suite.cases import CaseSuite


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


def plan_judging(
    suite: CaseSuite,
    command: str | None,
    *,
    timeout_ms: int,
    max_bytes: int,
    retries: int,
    max_calls: int | None,
    env: Mapping[str, str] | None = None,
    retry_delay: Callable[[int], float] | None = None,
) -> Judging | None:
    """The run's judging, or None when no case has a judge check."""
    argv = split_judge(command)
    judged = [case for case in suite.cases if case.task is not None and case.task.judged]
    if not judged:
        return None
    if argv is None:
        for case in judged:
            assert case.task is not None
            for index in case.task.judged:
                if getattr(case.task.checks[index], "command", None) is None:
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
        env=env,
        cwd=Path.cwd(),
    )
    return Judging(settings)
