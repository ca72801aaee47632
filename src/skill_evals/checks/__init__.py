"""Task checks: what they are (model), how they are read from a case (parse), and their
verdicts on an observation (observed) and on the workspace the runner worked in (files)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .files import WorkspaceView, judge_workspace
from .judge_model import Judge, JudgePairwise
from .model import PASSED, Check, Outcome, Task
from .observed import Matcher, json_equal, judge_observation, subset_match
from .parse import parse_task

if TYPE_CHECKING:
    from ..run.observations import Observation

__all__ = [
    "NOT_CALLED",
    "PASSED",
    "Check",
    "Matcher",
    "Outcome",
    "Task",
    "WorkspaceView",
    "json_equal",
    "judge_observation",
    "judge_task",
    "judge_workspace",
    "parse_task",
    "subset_match",
]

NOT_JUDGED = Outcome(False, "no result for this check")
# A judge check whose judge was not asked: the task failed before it (or it is not judged yet).
NOT_CALLED = Outcome(False, "judge: not judged (the task failed before it)")


def judge_task(
    task: Task, obs: Observation, matcher: Matcher, view: WorkspaceView | None
) -> tuple[Outcome, ...]:
    """Every check of ``task`` on one observation, in order. Observation checks are judged
    from its fields; workspace checks on ``view``, or — without one (the workspace is gone) —
    from the verdicts the observation carries (``checks``, with ``reasons`` when known)."""
    outcomes: list[Outcome] = []
    for index, check in enumerate(task.checks):
        if isinstance(check, Judge):
            outcomes.append(judged(obs, index))
        elif isinstance(check, JudgePairwise):
            outcomes.append(NOT_CALLED)  # relative: scored by preference, never pass/fail
        elif not check.workspace:
            outcomes.append(judge_observation(check, obs, matcher))
        elif view is not None:
            outcomes.append(judge_workspace(check, view, matcher))
        else:
            outcomes.append(recorded(check, obs.checks, obs.reasons, index))
    return tuple(outcomes)


def judged(obs: Observation, index: int) -> Outcome:
    """A judge check's verdict as the engine stored it with the observation."""
    checks = obs.checks
    if checks is None or index >= len(checks) or checks[index] is None:
        return NOT_CALLED
    return recorded(Judge(""), checks, obs.reasons, index)


def recorded(
    check: Check,
    checks: Sequence[bool | None] | None,
    reasons: Sequence[str | None] | None,
    index: int,
) -> Outcome:
    """A workspace check's recorded verdict; its reason when this run computed it, else only
    that it was recorded."""
    if checks is None or index >= len(checks):
        return NOT_JUDGED
    if checks[index]:
        return PASSED
    known = reasons[index] if reasons is not None and index < len(reasons) else None
    return Outcome(False, known or f"{check.label}: failed (recorded result)")
