"""Stop when the verdict is settled (docs/comparison.md#stop-when-settled).

After a completion the engine asks: would any outcome of the invocations not yet finished change
a gate's verdict? Each gate is judged under two completions of the run — the *best* (every
remaining invocation turns out the way that raises the gated figure) and the *worst* (the
opposite). F1 is monotone in each outcome (up with a true positive or true negative), a pass rate
too, and every bootstrap percentile is a monotone function of the per-unit differences (the
resample indices depend only on the number of units and the seed), so these two completions bound
every other: when each gate gives the same result in both, the verdict is settled.

Exact corners handled on top of the two completions:

- trigger F1 is undefined at the end exactly when no ``with`` run triggered; while none has, a
  completion with F1 undefined (exit 7) is reachable, so the gate is not settled;
- for the F1-difference gates a resample is dropped when an F1 is undefined; a resample whose
  definedness still depends on the remaining runs makes the gate unsettled (then the kept
  resamples are the same in every completion and the percentiles stay monotone);
- a runner failure voids the evidence: nothing is settled after one.

Cost (docs/comparison.md): trigger and loading are O(1) per check. A bootstrap gate is re-computed
only for the completion (best or worst) an observation changed — an outcome equal to the one
assumed changes nothing — and at most once per ``m`` such changes, m = ⌈B·n·w / 2,000,000⌉
(B resamples, n units, w = 1 for pass rates, 4 for F1), so a check costs at most about two
million resample draws on average. A completion that can no longer change (the worst one
passing every gate, the best one failing every gate) is never computed again. Skipping a check
only delays the stop; it never settles a verdict that is not settled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..run.observations import Key, Observation, RunnerFailure
from ..score.gates import (
    LOADING,
    MAX_F1_DROP,
    MAX_PASS_DROP,
    MIN_F1_GAIN,
    MIN_PASS_GAIN,
    TRIGGER_F1,
    UPLIFT,
)
from ..score.stats import Interval, bootstrap_interval
from ..suite.cases import Case, CaseSuite
from .settle_bounds import Bounds, f1_difference_bounds, pass_differences, trigger_verdict
from .settle_state import ArmCounts, SettleGates, SettleState, gate_outcome

Verdict = dict[str, bool | None]  # gate key → passed (None: undefined, exit 7)
DRAWS_PER_CHECK = 2_000_000


class Settler:
    """Follows a run's completions and decides whether its verdict is settled.

    ``observe`` and ``snapshot`` are called under the scheduler's lock (cheap); ``decide`` runs
    outside it, one call at a time (it keeps a memo of the bootstrap results)."""

    def __init__(
        self,
        suite: CaseSuite,
        planned: Sequence[Key],
        skill_name: str,
        gates: SettleGates,
        samples: int,
        seed: int,
        passed: Callable[[Case, Observation], bool],
    ) -> None:
        self.gates = gates
        self.samples = samples
        self.seed = seed
        self.skill_name = skill_name
        self._passed = passed
        self._cases = suite.by_id()
        self._units = sorted({c.unit for c in suite.cases})
        self._pos = {unit: i for i, unit in enumerate(self._units)}
        n = len(self._units)
        self.arms = {arm: ArmCounts.zeros(n) for arm in ("with", "without", "baseline")}
        self.task_units = sorted({self._pos[c.unit] for c in suite.cases if c.task is not None})
        self.failed = False
        self.tp = self.fp = self.fn = self.rem_pos = self.rem_neg = 0
        self.violation = False
        self.rem_rules = 0
        self.versions = {"uplift:best": 0, "uplift:worst": 0, "pass:best": 0, "pass:worst": 0}
        self.versions["f1"] = 0
        self._memo: dict[str, tuple[int, Interval | None]] = {}  # completion → (version, CI)
        self._f1_memo: tuple[int, tuple[Bounds, Bounds] | None] | None = None
        self._frozen: set[str] = set()
        for case_id, _trial, arm in planned:
            case = self._cases[case_id]
            counts = self.arms[arm]
            i = self._pos[case.unit]
            counts.planned[i] += 1
            if case.expect_trigger:
                counts.rem_pos[i] += 1
                counts.pos[i] += 1
            else:
                counts.rem_neg[i] += 1
            if arm == "with":
                if case.expect_trigger:
                    self.rem_pos += 1
                else:
                    self.rem_neg += 1
            if arm != "baseline" and (case.include or case.exclude):
                self.rem_rules += 1

    # ------------------------------------------------------------------------------ observing

    def observe(self, key: Key, outcome: Observation | RunnerFailure) -> None:
        """One planned invocation finished (or was resumed, or came from a cache)."""
        if isinstance(outcome, RunnerFailure):
            self.failed = True
            return
        case_id, _trial, arm = key
        case = self._cases[case_id]
        counts = self.arms[arm]
        i = self._pos[case.unit]
        hit = self.skill_name in outcome.invoked_skills
        if case.expect_trigger:
            counts.rem_pos[i] -= 1
            if hit:
                counts.tp[i] += 1
            else:
                counts.fn[i] += 1
        else:
            counts.rem_neg[i] -= 1
            if hit:
                counts.fp[i] += 1
        if arm == "with":
            if case.expect_trigger:
                self.rem_pos -= 1
                self.tp += hit
                self.fn += not hit
            else:
                self.rem_neg -= 1
                self.fp += hit
        if arm in ("with", "baseline"):
            self.versions["f1"] += 1
        if arm != "baseline" and (case.include or case.exclude):
            self.rem_rules -= 1
            invoked = set(outcome.invoked_skills)
            if any(n not in invoked for n in case.include) or any(
                n in invoked for n in case.exclude
            ):
                self.violation = True
        if case.task is None:
            return
        counts.observed[i] += 1
        ok = self._passed(case, outcome)
        counts.passed[i] += ok
        # The best completion assumed with passes and the others fail; the worst the opposite:
        # an outcome different from the assumption moves that completion.
        raised = ok if arm == "with" else not ok
        side = "worst" if raised else "best"
        if arm in ("with", "without"):
            self.versions[f"uplift:{side}"] += 1
        if arm in ("with", "baseline"):
            self.versions[f"pass:{side}"] += 1

    def snapshot(self) -> SettleState:
        """A copy of the counters for :meth:`decide`."""
        return SettleState(
            failed=self.failed,
            tp=self.tp,
            fp=self.fp,
            fn=self.fn,
            rem_pos=self.rem_pos,
            rem_neg=self.rem_neg,
            violation=self.violation,
            rem_rules=self.rem_rules,
            task_units=self.task_units,
            arms={arm: counts.copy() for arm, counts in self.arms.items()},
            versions=dict(self.versions),
        )

    # ------------------------------------------------------------------------------- deciding

    def decide(self, state: SettleState, force: bool = False) -> Verdict | None:
        """The settled verdict, or None while some outcome of the rest could still change the
        exit code (or a check was skipped to save time; ``force`` never skips).

        A gate still open that can only end passed or failed (a loading rule; trigger F1 once
        some run triggered, so it cannot end undefined; an uplift or pass-rate comparison gate)
        no longer matters once another gate has failed for every outcome: the exit code is 1
        whatever it gives. Such a gate is left out of the verdict (its figure is partial). A
        gate that could still end undefined (exit 7, which outranks 1: trigger F1 before any
        run triggered, an F1 comparison gate) keeps the run going."""
        gates = self.gates
        if state.failed or not gates.any:
            return None
        verdict: Verdict = {}
        open_binary = False  # some open gate ends passed or failed, never undefined
        if gates.loading:
            if state.violation:
                verdict[LOADING] = False
            elif state.rem_rules == 0:
                verdict[LOADING] = True
            else:
                open_binary = True
        if gates.min_trigger_f1 is not None:
            trigger = trigger_verdict(state, gates.min_trigger_f1)
            if trigger is not None:
                verdict[TRIGGER_F1] = trigger[0]
            elif state.tp + state.fp == 0:
                return None  # it may still end undefined
            else:
                open_binary = True
        found = self._bootstrap_gates(state, force)
        if found is None:
            return None
        verdict.update(found[0])
        open_binary = open_binary or found[1]
        if open_binary and False not in verdict.values():
            return None  # the open gates decide whether the run passes
        return verdict

    def _bootstrap_gates(self, state: SettleState, force: bool) -> tuple[Verdict, bool] | None:
        """(the settled verdicts of the uplift and comparison gates, whether a pass-rate gate
        is still open), or None while an F1 comparison gate is open. A pass-rate gate ends
        passed or failed (whether its interval exists is fixed by the plan), so an open one
        does not matter once another gate has failed; an F1 gate may still end undefined."""
        gates, compare = self.gates, self.gates.compare
        families: list[tuple[str, str, dict[str, tuple[float, bool]]]] = []
        if gates.min_uplift is not None:
            families.append(("uplift", "without", {UPLIFT: (gates.min_uplift, False)}))
        pass_gates = _set_gates(
            MAX_PASS_DROP, compare.max_pass_drop, MIN_PASS_GAIN, compare.min_pass_gain
        )
        if pass_gates:
            families.append(("pass", "baseline", pass_gates))
        verdict: Verdict = {}
        open_binary = False
        for family, other, chosen in families:
            found = self._pass_family(state, family, other, chosen, force)
            if found is None:
                open_binary = True
            else:
                verdict.update(found)
        f1_gates = _set_gates(MAX_F1_DROP, compare.max_f1_drop, MIN_F1_GAIN, compare.min_f1_gain)
        if f1_gates:
            found = self._f1_family(state, f1_gates, force)
            if found is None:
                return None
            verdict.update(found)
        return verdict, open_binary

    @staticmethod
    def _due(last: int | None, version: int, work: int, force: bool) -> bool:
        """Whether a bootstrap last computed at version ``last`` must be re-computed now: it
        changed, and enough changes have gathered since (or ``force``)."""
        if last is None:
            return True
        changes = version - last
        if changes == 0:
            return False
        return force or changes >= max(1, math.ceil(work / DRAWS_PER_CHECK))

    def _pass_family(
        self,
        s: SettleState,
        family: str,
        other: str,
        gates: dict[str, tuple[float, bool]],
        force: bool,
    ) -> Verdict | None:
        """Gates on a paired pass-rate difference (with − ``other``) over the task units.
        A worst completion that passes every gate settles them (the best one is higher);
        otherwise the best one must fail exactly the same gates."""
        worst = self._pass_side(s, family, other, "worst", gates, force)
        if worst is None:
            return None
        if all(worst.values()):
            return worst
        best = self._pass_side(s, family, other, "best", gates, force)
        return worst if best == worst else None

    def _pass_side(
        self,
        s: SettleState,
        family: str,
        other: str,
        side: str,
        gates: dict[str, tuple[float, bool]],
        force: bool,
    ) -> Verdict | None:
        """The gates' verdicts under one completion; None when it changed since it was last
        computed and is not re-computed this time."""
        name = f"{family}:{side}"
        version = s.versions[name]
        last = self._memo[name][0] if name in self._memo else None
        work = self.samples * len(s.task_units)
        if name not in self._frozen and self._due(last, version, work, force):
            diffs = pass_differences(s, other, side == "best")
            interval = bootstrap_interval(diffs, self.samples, self.seed) if diffs else None
            self._memo[name] = (version, interval)
        elif name not in self._frozen and self._memo[name][0] != version:
            return None
        found = self._memo[name][1]
        interval = found if isinstance(found, Interval) else None
        results = {
            key: gate_outcome(
                None if interval is None else interval.upper if drop else interval.lower,
                threshold,
                drop,
            )
            for key, (threshold, drop) in gates.items()
        }
        # The worst completion only rises and the best only falls as runs finish: a worst one
        # passing every gate, or a best one failing every gate, never changes again.
        if all(results.values()) if side == "worst" else not any(results.values()):
            self._frozen.add(name)
        return results

    def _f1_family(
        self, s: SettleState, gates: dict[str, tuple[float, bool]], force: bool
    ) -> Verdict | None:
        """Gates on the F1 difference (with − baseline)."""
        work = 4 * self.samples * len(self._units)
        version = s.versions["f1"]
        last = self._f1_memo[0] if self._f1_memo is not None else None
        if self._due(last, version, work, force):
            self._f1_memo = (
                version,
                f1_difference_bounds(s, len(self._units), self.samples, self.seed),
            )
        elif last != version:
            return None
        assert self._f1_memo is not None
        found = self._f1_memo[1]
        if found is None:
            return None  # some resample's definedness still depends on the remaining runs
        best, worst = found
        verdict: Verdict = {}
        for key, (threshold, drop) in gates.items():
            index = 1 if drop else 0
            b, w = best[index], worst[index]
            if gate_outcome(b, threshold, drop) != gate_outcome(w, threshold, drop):
                return None
            verdict[key] = gate_outcome(w, threshold, drop)
        return verdict


def _set_gates(
    drop_key: str, drop: float | None, gain_key: str, gain: float | None
) -> dict[str, tuple[float, bool]]:
    """The comparison gates of one figure that are set: key → (threshold, whether it bounds
    a drop)."""
    given = ((drop_key, drop, True), (gain_key, gain, False))
    return {key: (threshold, is_drop) for key, threshold, is_drop in given if threshold is not None}
