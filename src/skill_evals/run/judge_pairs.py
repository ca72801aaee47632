"""Judging ``judge_pairwise`` checks (docs/judging.md#pairwise): a *pair* is (case, trial,
compared arm), numbered in case-file order, then trial; pair i takes draw i of its own
mulberry32 stream seeded with --seed — below 0.5 the first ask shows the ``with`` answer as
``a``, else as ``b`` — and the second ask swaps them. Both asks naming the same arm prefer it;
anything else is a tie (``inconsistent`` unless both said tie). A pair where exactly one answer
failed (``exitCode`` ≠ 0) prefers the other, both failed is a tie: nothing is asked.

The verdict is stored on the ``with`` observation, ``{"check", "against", "asks": [{"key",
"withAs", "winner", "reason"}, …], "preference"}``, and reused when both asks' keys match."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..checks.judge_files import select
from ..checks.judge_model import JudgePairwise
from ..score.stats import Mulberry32
from ..suite.cases import Case, CaseSuite
from .judging import Judging, in_parallel
from .observations import Observation

COMPARED: Literal["without"] = "without"  # the arm a pairwise check compares the with answers with


def pair_draws(suite: CaseSuite, trials: int, seed: int) -> dict[tuple[str, int], float]:
    """(case id, trial) → the draw of its pair, for every planned pair (run or not)."""
    stream = Mulberry32(seed)
    draws: dict[tuple[str, int], float] = {}
    for case in suite.cases:
        if case.task is not None and case.task.pairwise is not None:
            for trial in range(1, trials + 1):
                draws[(case.id, trial)] = stream.next_float()
    return draws


def _answer(check: JudgePairwise, obs: Observation) -> dict[str, Any]:
    return {
        "output": obs.output if "output" in check.include else None,
        "files": select(check.file_globs, obs.judge_files or ()),
    }


def pairwise_request(
    case: Case, check: JudgePairwise, a: Observation, b: Observation
) -> dict[str, Any]:
    """The request comparing answer ``a`` with answer ``b``: nothing says which arm is which."""
    return {
        "kind": "pairwise",
        "prompt": case.prompt,
        "rubric": check.rubric,
        "a": _answer(check, a),
        "b": _answer(check, b),
    }


def preference_of(asks: Sequence[Mapping[str, Any]]) -> tuple[int, bool]:
    """(+1 with, −1 the compared arm, 0 a tie) and whether the two asks agree."""
    named = []
    for ask in asks:
        winner = ask["winner"]
        if winner == "tie":
            named.append(0)
        else:
            named.append(1 if winner == ask["withAs"] else -1)
    consistent = len(set(named)) == 1
    return (named[0] if consistent else 0), consistent


def judge_pair(
    judging: Judging, case: Case, with_obs: Observation, other: Observation, draw: float
) -> tuple[Observation, str | None]:
    """``with_obs`` carrying the verdict of its pair with ``other``, and the reason of a judge
    failure (None when both asks were answered or nothing needed asking)."""
    task = case.task
    assert task is not None and task.pairwise is not None
    check = task.pairwise
    if with_obs.exit_code != 0 or other.exit_code != 0:
        return with_obs, None  # decided by the exit codes, without asking
    judging.ledger.used = True
    index = task.checks.index(check)
    argv = judging.argv(check)
    first = "a" if draw < 0.5 else "b"
    orders = [first, "b" if first == "a" else "a"]
    previous = next(
        (e for e in with_obs.judged if e.get("check") == index and e.get("against") == COMPARED),
        None,
    )
    old_asks = list((previous or {}).get("asks", []))
    asks: list[dict[str, Any]] = []
    for position, with_as in enumerate(orders):
        a, b = (with_obs, other) if with_as == "a" else (other, with_obs)
        request = pairwise_request(case, check, a, b)
        key = judging.request_key(argv, request)
        old = old_asks[position] if position < len(old_asks) else None
        if old is not None and old["key"] == key and old["withAs"] == with_as:
            judging.ledger.reused(cached=with_obs.cached)
            asks.append(dict(old))
            continue
        answer = judging.call(argv, request)
        if answer.verdict is None:
            with judging.ledger.lock:
                judging.ledger.failures += 1
            return with_obs, answer.failure
        verdict = answer.verdict
        asks.append(
            {"key": key, "withAs": with_as, "winner": verdict.winner, "reason": verdict.reason}
        )
    preference, _ = preference_of(asks)
    entry = {"check": index, "against": COMPARED, "asks": asks, "preference": preference}
    kept = tuple(e for e in with_obs.judged if e is not previous)
    return dataclasses.replace(with_obs, judged=(*kept, entry)), None


Pairs = dict[tuple[str, int], tuple[Observation, str | None]]


def judge_pairs(
    judging: Judging,
    suite: CaseSuite,
    found: Mapping[Any, Observation],  # (case id, trial, arm) → observation
    wanted: Sequence[tuple[str, int]],
    draws: Mapping[tuple[str, int], float],
    jobs: int,
) -> Pairs:
    """Each pair of ``wanted`` whose two observations are in ``found``, judged ``jobs`` at a
    time: (case id, trial) → the judged ``with`` observation and a judge failure, if any."""
    cases = suite.by_id()
    ready = [
        pair
        for pair in wanted
        if (pair[0], pair[1], "with") in found and (pair[0], pair[1], COMPARED) in found
    ]

    def work(pair: tuple[str, int]) -> tuple[Observation, str | None]:
        case_id, trial = pair
        with_obs = found[(case_id, trial, "with")]
        other = found[(case_id, trial, COMPARED)]
        return judge_pair(judging, cases[case_id], with_obs, other, draws[pair])

    with judging.lock:
        judging.pairs_judged.update(ready)
    return dict(zip(ready, in_parallel(ready, work, jobs), strict=True))
