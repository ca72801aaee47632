"""The judging of what no worker judged: resumed, cached and recorded (--observations)
observations, after the run and before scoring (docs/judging.md)."""

from __future__ import annotations

import dataclasses

from ..suite.cases import CaseSuite
from .execution_plan import ExecutionResult
from .judge_pairs import judge_pairs
from .judging import Judging, judge_all
from .observations import RunnerFailure
from .regex import RegexPool


def judge_result(
    result: ExecutionResult, suite: CaseSuite, judging: Judging, jobs: int
) -> ExecutionResult:
    """``result`` with every observation no worker judged (resumed, cached, recorded) judged
    now: its verdicts reused by request key or asked; a judge failure moves it to the
    failures."""
    cases = suite.by_id()
    pending = [
        (i, obs)
        for i, obs in enumerate(result.observations)
        if obs.key not in judging.judged and (task := cases[obs.case_id].task) and task.judged
    ]
    wanted = [pair for pair in judging.draws if pair not in judging.pairs_judged]
    if not pending and not wanted:
        return result
    with RegexPool() as matcher:
        judged = judge_all([(cases[o.case_id], o) for _, o in pending], judging, matcher, jobs)
    if wanted:
        found = {obs.key: obs for obs in result.observations}
        with judging.sweeper.running():
            pairs = judge_pairs(judging, suite, found, wanted, judging.draws, jobs)
        position = {obs.key: i for i, obs in enumerate(result.observations)}
        for (case_id, trial), outcome in pairs.items():
            index = position[(case_id, trial, "with")]
            pending.append((index, result.observations[index]))
            judged.append(outcome)
    observations = list(result.observations)
    failed: set[int] = set()
    failures = list(result.failures)
    for (index, _), (obs, failure) in zip(pending, judged, strict=True):
        observations[index] = obs
        if failure is not None:
            failed.add(index)
            failures.append(RunnerFailure(obs.case_id, obs.trial, obs.variant, failure))
    order = {case.id: n for n, case in enumerate(suite.cases)}
    arms = {"with": 0, "without": 1, "baseline": 2}
    failures.sort(key=lambda f: (order.get(f.case_id, 0), f.trial, arms.get(f.variant, 3)))
    kept = [obs for i, obs in enumerate(observations) if i not in failed]
    return dataclasses.replace(result, observations=kept, failures=failures)
