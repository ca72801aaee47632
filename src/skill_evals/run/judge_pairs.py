"""Judging ``judge_pairwise`` checks (docs/judging.md#pairwise): a *pair* is (case, trial,
compared arm) — the ``with`` answer against the ``without`` one (the uplift) or the ``baseline``
one (the comparison) — numbered in case-file order, then trial, then arm (``without`` before
``baseline``); pair i takes draw i of its own mulberry32 stream seeded with --seed — below 0.5
the first ask shows the ``with`` answer as ``a``, else as ``b`` — and the second ask swaps them.
Both asks naming the same arm prefer it; both saying tie is a tie. When they disagree
(``inconsistent``) the pair is decided, by default, by the absolute form of the same rubric: each
answer graded alone on a 0–1 scale (two more judge calls, cached like the asks), the higher
grade wins when the two differ by at least the margin (--judge-fallback-margin), else a tie;
--judge-fallback tie keeps every inconsistent pair a tie. A pair where exactly one answer
failed (``exitCode`` ≠ 0) prefers the other, both failed is a tie: nothing is asked.

The verdicts are stored on the ``with`` observation, one entry per compared arm, ``{"check",
"against", "asks": [{"key", "withAs", "winner", "reason"}, …], "grades"?: [{"key", "arm",
"score"}, …], "preference"}``, and reused when the keys match."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..checks.judge_files import select
from ..checks.judge_model import Judge, JudgePairwise
from ..score.stats import Mulberry32
from ..suite.cases import Case, CaseSuite
from .judging import Judging, absolute_request, in_parallel
from .observations import Observation, Variant

# The arms a with answer is compared with, in pair order: the uplift's, then the comparison's.
COMPARED_ARMS: tuple[Variant, Variant] = ("without", "baseline")

Pair = tuple[str, int, Variant]  # (case id, trial, compared arm)


def pair_draws(
    suite: CaseSuite, trials: int, seed: int, compared: Sequence[Variant] = ("without",)
) -> dict[Pair, float]:
    """Every planned pair (run or not) → its draw, in pair order: case-file order, then
    trial, then the compared arm (``without`` before ``baseline``)."""
    arms = [arm for arm in COMPARED_ARMS if arm in compared]
    stream = Mulberry32(seed)
    draws: dict[Pair, float] = {}
    for case in suite.cases:
        if case.task is not None and case.task.pairwise is not None:
            for trial in range(1, trials + 1):
                for arm in arms:
                    draws[(case.id, trial, arm)] = stream.next_float()
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


def _grade_request(case: Case, check: JudgePairwise, obs: Observation) -> dict[str, Any]:
    """The absolute form of the pairwise rubric for one answer: scale 0–1, no threshold."""
    return absolute_request(case, Judge(rubric=check.rubric, include=check.include), obs)


def _graded(
    judging: Judging,
    case: Case,
    check: JudgePairwise,
    answers: Sequence[tuple[str, Observation]],
    old: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], str | None]:
    """Each (arm, answer) graded alone (a grade reused when its key matches): the grades and
    None, or the grades answered before a judge failure and that failure."""
    argv = judging.argv(check)
    known = {g.get("key"): g for g in old}
    grades: list[dict[str, Any]] = []
    for arm, obs in answers:
        key = judging.request_key(argv, _grade_request(case, check, obs))
        if key in known and known[key].get("arm") == arm:
            judging.ledger.reused(cached=obs.cached)
            grades.append(dict(known[key]))
            continue
        answer = judging.call(argv, _grade_request(case, check, obs))
        if answer.verdict is None:
            return grades, answer.failure
        grades.append({"key": key, "arm": arm, "score": answer.verdict.score})
    return grades, None


def graded_preference(grades: Sequence[Mapping[str, Any]], margin: float) -> int:
    """+1 when the with answer's grade beats the other's by at least ``margin``, −1 the
    reverse, else 0 (a tie): equal grades are a tie whatever the margin, 0 included."""
    with_score = float(grades[0]["score"])
    other_score = float(grades[1]["score"])
    gap = abs(with_score - other_score)
    if gap <= 1e-12 or gap < margin - 1e-12:  # 1e-12: "at least the margin" despite rounding
        return 0
    return 1 if with_score > other_score else -1


def pair_entry(obs: Observation, index: int, arm: str) -> Mapping[str, Any] | None:
    """The verdict ``obs`` (a with observation) holds for check ``index`` against ``arm``."""
    for entry in obs.judged:
        if entry.get("check") == index and entry.get("against") == arm:
            return entry
    return None


def _with_entry(obs: Observation, entry: dict[str, Any]) -> Observation:
    """``obs`` holding ``entry`` in place of its earlier verdict for that check and arm; the
    pairwise entries kept in pair order (``without`` before ``baseline``)."""
    kept = [
        e
        for e in obs.judged
        if not (e.get("check") == entry["check"] and e.get("against") == entry["against"])
    ]
    rank: dict[object, int] = {arm: n for n, arm in enumerate(COMPARED_ARMS)}
    entries = sorted([*kept, entry], key=lambda e: (e["check"], rank.get(e.get("against"), -1)))
    return dataclasses.replace(obs, judged=tuple(entries))


def _unfinished(obs: Observation, entry: dict[str, Any]) -> Observation:
    """``obs`` holding a pair's answered asks and grades, with no preference yet (scored as not
    judged), so that re-judging it reuses them; ``obs`` itself when nothing was answered."""
    if not entry["asks"]:
        return obs
    return _with_entry(obs, {**entry, "preference": None})


def judge_pair(
    judging: Judging,
    case: Case,
    with_obs: Observation,
    other: Observation,
    draw: float,
    arm: Variant = "without",
) -> tuple[Observation, str | None]:
    """``with_obs`` carrying the verdict of its pair with ``other`` (the ``arm`` answer), and
    the reason of a judge failure (None when both asks were answered or nothing needed
    asking)."""
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
    old_asks = list((pair_entry(with_obs, index, arm) or {}).get("asks", []))
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
        if answer.verdict is None:  # what was answered is kept: a re-run asks the rest only
            return _unfinished(with_obs, {"check": index, "against": arm, "asks": asks}), (
                answer.failure
            )
        verdict = answer.verdict
        asks.append(
            {"key": key, "withAs": with_as, "winner": verdict.winner, "reason": verdict.reason}
        )
    preference, consistent = preference_of(asks)
    entry: dict[str, Any] = {"check": index, "against": arm, "asks": asks}
    if not consistent and judging.settings.fallback == "absolute":
        old_grades = (pair_entry(with_obs, index, arm) or {}).get("grades", [])
        answers = [("with", with_obs), (arm, other)]
        grades, failure = _graded(judging, case, check, answers, old_grades)
        entry["grades"] = grades
        if failure is not None:
            return _unfinished(with_obs, entry), failure
        preference = graded_preference(grades, judging.settings.fallback_margin)
    entry["preference"] = preference
    return _with_entry(with_obs, entry), None


Pairs = dict[tuple[str, int], tuple[Observation, str | None]]


def judge_pairs(
    judging: Judging,
    suite: CaseSuite,
    found: Mapping[Any, Observation],  # (case id, trial, arm) → observation
    wanted: Sequence[Pair],
    draws: Mapping[Pair, float],
    jobs: int,
) -> Pairs:
    """Each pair of ``wanted`` whose two observations are in ``found``, judged ``jobs`` with
    observations at a time (the pairs of one with observation one after another, in pair
    order): (case id, trial) → the judged ``with`` observation and the first judge failure,
    if any (the pairs judged before it keep their verdicts)."""
    cases = suite.by_id()
    ready: dict[tuple[str, int], list[Pair]] = {}
    for pair in wanted:
        case_id, trial, _ = pair
        if (case_id, trial, "with") in found and pair in found:
            ready.setdefault((case_id, trial), []).append(pair)

    def work(slot: tuple[str, int]) -> tuple[Observation, str | None]:
        case_id, trial = slot
        with_obs = found[(case_id, trial, "with")]
        rank = {arm: n for n, arm in enumerate(COMPARED_ARMS)}
        for pair in sorted(ready[slot], key=lambda p: rank[p[2]]):
            with_obs, failure = judge_pair(
                judging, cases[case_id], with_obs, found[pair], draws[pair], pair[2]
            )
            if failure is not None:
                return with_obs, failure
        return with_obs, None

    slots = list(ready)
    with judging.lock:
        judging.pairs_judged.update(pair for pairs in ready.values() for pair in pairs)
    return dict(zip(slots, in_parallel(slots, work, jobs), strict=True))
