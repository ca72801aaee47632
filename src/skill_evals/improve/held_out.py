"""The held-out step (docs/improve.md#held-out-finalists-and-the-decision): the original and up
to --finalists K of the best ranked candidates run on the held-out cases; each finalist's F1
difference gets an exact permutation test (figures.PermutationTest), and Holm's step-down
decides: the finalist with the smallest one-sided p is tested at the look's α/K, the next at
α/(K−1), …, stopping at the first whose lower bound is not above 0 or whose difference is
below --min-gain. Of those that pass, the one with the largest held-out difference is
accepted; its held-out difference is the reported gain (never its train score)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EvidenceUnavailable
from .edit import candidate_copy
from .figures import PermutationTest, Trials, f1, total
from .select import ALPHA, Candidate, holm_levels, near_copy
from .sequential import look_alpha

if TYPE_CHECKING:
    from ..suite.cases import Case

# The running loop (loop.py, which imports this module): its outcome, settings, split, skill
# and _evaluate.
ImproveLoop = Any


def _f1(results: Mapping[str, Trials], cases: tuple[Case, ...]) -> Fraction | None:
    counts = total(cases, results)
    return f1(counts.tp, counts.fp, counts.fn)


def finalists_of(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The ``k`` best ranked candidates, whatever their score (ties: the earlier round first):
    a half of train ranks noisily — a real gain can score below 0 there — and held-out, not
    the ranking, decides. Skipping a near-copy of a better ranked finalist (select.near_copy): it
    would take a share of the Holm level for a second look at the same description."""
    ranked = [c for c in candidates if c.score is not None]
    ranked.sort(key=lambda c: (-(c.score or 0), c.round))
    chosen: list[Candidate] = []
    for candidate in ranked:
        if len(chosen) < k and not any(near_copy(candidate, f) for f in chosen):
            chosen.append(candidate)
    return chosen


def held_out_step(loop: ImproveLoop, original: Candidate, candidates: Sequence[Candidate],
                  scratch: Path) -> None:  # fmt: skip
    """Run the finalists and the original on held-out and decide."""
    outcome, settings = loop.outcome, loop.settings
    finalists = finalists_of(candidates, settings.finalists)
    if not finalists:
        outcome.reason = "no candidate was ranked: every proposal was invalid or a duplicate"
        return
    cap = settings.max_cost_usd
    if cap is not None and outcome.cost_usd >= cap:
        raise EvidenceUnavailable(
            f"cost budget reached after ${outcome.cost_usd:.4f}, before the held-out step"
        )
    held = loop.split.held_out
    per_run = len(held) * settings.trials
    outcome.held_out["original"] = loop._evaluate(loop.skill.path, held)
    results: list[dict[str, Trials]] = []
    for finalist in finalists:
        limit = settings.max_invocations
        if results and limit is not None and outcome.invocations + per_run > limit:
            break  # the first finalist is always within budget (checked before the run)
        with candidate_copy(loop.skill.path, finalist.text, scratch) as copy:
            results.append(loop._evaluate(copy, held))
    finalists = finalists[: len(results)]
    most = _most_trials(loop)
    trials, gain = settings.trials, settings.min_gain
    # At most three looks (at --trials, then two equal steps up to `most`), planned before any
    # held-out outcome: the spending rule shares 5 % between them by look.
    stride = max(trials, -(-(most - trials) // 2))
    looks, look = 1 + -(-(most - trials) // stride), 1
    _decide(loop, finalists, results, look_alpha(0, look, looks, ALPHA))
    while _undecided(loop) and trials < most:
        # Only finalists whose interval still reaches from 0 to --min-gain can still be decided
        # by more trials: the others keep the trials they had, so the budget goes where it can.
        rounds = {f["round"] for f in outcome.finalists if _open(f, gain)}
        growing = [(f, r) for f, r in zip(finalists, results, strict=True) if f.round in rounds]
        step = min(most - trials, stride)
        limit = settings.max_invocations
        if limit is not None:  # a shorter step when a full one does not fit
            step = min(step, (limit - outcome.invocations) // ((1 + len(growing)) * len(held)))
        if step < 1:
            break
        more = range(trials + 1, trials + step + 1)
        _grow(outcome.held_out["original"], loop._evaluate(loop.skill.path, held, more))
        for finalist, result in growing:
            with candidate_copy(loop.skill.path, finalist.text, scratch) as copy:
                _grow(result, loop._evaluate(copy, held, more))
        outcome.finalists.clear()
        look += 1
        _decide(loop, finalists, results, look_alpha(look - 1, look, looks, ALPHA))
        trials = max(more)
    outcome.held_out_trials = trials
    if outcome.accepted:
        _confirm(loop, finalists, results, most, scratch)


def _confirm(loop: ImproveLoop, finalists: Sequence[Candidate],
             results: Sequence[dict[str, Trials]], most: int, scratch: Path) -> None:  # fmt: skip
    """Steady the accepted finalist's figure: an estimate taken where it first passed is
    inflated (it was accepted *because* it looked good), so the original and it run the
    planned trials they have not run yet, as far as --max-invocations allows, and its
    difference, interval and the reported gain are taken over all their trials. The
    acceptance stands only if the lower bound over all trials is still above 0 (and the
    difference at least --min-gain) at the level it passed at: a second check can only lower
    the chance of accepting a non-gain."""
    outcome, settings, held = loop.outcome, loop.settings, loop.split.held_out
    index = next(i for i, f in enumerate(outcome.finalists) if f["accepted"])
    block, result, original = outcome.finalists[index], results[index], outcome.held_out["original"]
    ran_new, ran_old = (len(next(iter(r.values()))) for r in (result, original))
    target = most
    limit = settings.max_invocations
    while limit is not None and (2 * target - ran_new - ran_old) * len(held) > (
        limit - outcome.invocations
    ):
        target -= 1
    if target <= max(ran_new, ran_old):
        return
    _grow(original, loop._evaluate(loop.skill.path, held, range(ran_old + 1, target + 1)))
    with candidate_copy(loop.skill.path, finalists[index].text, scratch) as copy:
        _grow(result, loop._evaluate(copy, held, range(ran_new + 1, target + 1)))
    alpha = Fraction(repr(outcome.accepted_alpha))
    test = PermutationTest(held, result, original, settings.bootstrap_samples, settings.seed)
    interval = test.interval(alpha)
    new, old = _f1(result, held), _f1(original, held)
    difference = None if new is None or old is None else new - old
    block["decidedAt"] = {
        "trials": ran_new,
        "f1Difference": block["f1Difference"],
        "pValue": block["pValue"],
    }
    block.update(
        trials=target,
        f1Difference=None if difference is None else float(difference),
        interval=interval.to_json(),
        pValue=interval.p_value,
    )
    outcome.interval, outcome.held_out_trials = interval, target
    if not _passes(difference, interval, settings.min_gain):
        block["accepted"] = outcome.accepted = False
        outcome.status = "unchanged"
        shown = "undefined" if interval.lower is None else f"{interval.lower:+.2f}"
        outcome.reason = (
            f"passed at {ran_new} held-out trials, but over all {target} its lower bound "
            f"{shown} is not above 0 or its gain is below --min-gain {settings.min_gain:g}"
        )


def _most_trials(loop: ImproveLoop) -> int:
    """The held-out trials the looks are planned up to: --max-heldout-trials, or fewer when
    --max-invocations cannot pay for more (the original and one finalist growing). Known
    before any held-out outcome, so the spending rule may count on it."""
    settings, outcome = loop.settings, loop.outcome
    most: int = max(settings.trials, settings.max_heldout_trials)
    limit = settings.max_invocations
    if limit is not None:
        spare = max(0, limit - outcome.invocations) // (2 * len(loop.split.held_out))
        most = min(most, settings.trials + spare)
    return most


def _grow(results: Mapping[str, Trials], more: Mapping[str, Trials]) -> None:
    """Append the new trials of each case to its earlier ones."""
    for case_id, trials in more.items():
        results[case_id].extend(trials)  # type: ignore[attr-defined]


def _undecided(loop: ImproveLoop) -> bool:
    """Not accepted, and some finalist's interval straddles 0 (more trials may decide it)."""
    if loop.outcome.accepted:
        return False
    return any(_open(f, loop.settings.min_gain) for f in loop.outcome.finalists)


def _open(finalist: Mapping[str, Any], gain: float) -> bool:
    """Whether more trials may still decide for this finalist: its lower bound is not above
    0 while its upper bound reaches --min-gain."""
    interval = finalist["interval"]
    return (interval["lower"] or 0) <= 0 and (interval["upper"] or 0) >= gain


def _decide(loop: ImproveLoop, finalists: list[Candidate],
            results: Sequence[Mapping[str, Trials]], alpha: float) -> None:  # fmt: skip
    """Holm's step-down over the finalists at this look's level ``alpha``."""
    outcome, settings = loop.outcome, loop.settings
    held = loop.split.held_out
    original = outcome.held_out["original"]
    old = _f1(original, held)
    tests = [
        PermutationTest(held, r, original, settings.bootstrap_samples, settings.seed)
        for r in results
    ]
    levels = holm_levels([1.0 if t.p_value is None else t.p_value for t in tests], alpha)
    passed: list[int] = []
    blocks: dict[int, dict[str, Any]] = {}
    intervals: dict[int, Any] = {}
    for index, alpha in levels:
        interval = tests[index].interval(Fraction(repr(alpha)))
        new = _f1(results[index], held)
        difference = None if new is None or old is None else new - old
        # Holm stops at the first finalist not rejected.
        ok = len(passed) == len(blocks) and _passes(difference, interval, settings.min_gain)
        if ok:
            passed.append(index)
        intervals[index] = interval
        ran = len(next(iter(results[index].values()), ()))
        blocks[index] = _block(finalists[index], difference, interval, alpha, ran)
    chosen = max(passed, key=lambda i: (blocks[i]["f1Difference"], -i)) if passed else 0
    for index, block in sorted(blocks.items()):
        block["accepted"] = bool(passed) and index == chosen
        outcome.finalists.append(block)
    outcome.selected = finalists[chosen]
    outcome.accepted_alpha = dict(levels)[chosen]
    outcome.held_out["candidate"] = dict(results[chosen])
    outcome.interval = intervals[chosen]
    _verdict(loop, bool(passed), blocks[chosen], len(finalists))


def _passes(difference: Fraction | None, interval: Any, min_gain: float) -> bool:
    """A difference of at least --min-gain whose lower bound is above 0."""
    return (
        difference is not None
        and difference >= Fraction(repr(min_gain))
        and interval.lower is not None
        and interval.lower > 0
    )


def _block(
    candidate: Candidate, difference: Fraction | None, interval: Any, alpha: float, trials: int
) -> dict[str, Any]:
    return {
        "round": candidate.round,
        "description": candidate.description,
        "trainScore": None if candidate.score is None else float(candidate.score),
        "f1Difference": None if difference is None else float(difference),
        "interval": interval.to_json(),
        "level": 1 - alpha,
        "pValue": interval.p_value,
        "trials": trials,
        "decidedAt": None,
    }


def _verdict(loop: ImproveLoop, accepted: bool, block: dict[str, Any], k: int) -> None:
    outcome, gain = loop.outcome, loop.settings.min_gain
    if accepted:
        outcome.accepted, outcome.status = True, "accepted"
        outcome.reason = (
            f"held-out F1 gain at least --min-gain, lower bound above 0 (Holm over {k} finalist(s))"
        )
        return
    difference, lower = block["f1Difference"], block["interval"]["lower"]
    if difference is None or difference < gain:
        shown = "undefined" if difference is None else f"{difference:+.2f}"
        outcome.reason = f"held-out gain {shown} below --min-gain {gain:g}"
    else:
        shown = "undefined" if lower is None else f"{lower:+.2f}"
        outcome.reason = (
            f"interval lower bound {shown} not above 0 (at {block['level']:.1%}, Holm over "
            f"{k} finalist(s))"
        )
