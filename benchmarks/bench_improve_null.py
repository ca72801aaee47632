"""How often does `improve`'s held-out decision accept a candidate that is no better?

A simulation of the held-out step with its own statistics (skill_evals.improve.figures and
.sequential): 10 held-out cases (5 that should load the skill, 5 that should not), one finalist
whose chance to load the skill on each case is the original's (a null: no gain), each case's
chance drawn per run (0.2–0.9 for the positives, 0–0.4 for the negatives), 3 trials a look,
looks planned up to 9 trials as `improve` plans them, the decision as `improve` takes it
(difference ≥ --min-gain 0.05 and the lower bound above 0; more trials while the interval
still reaches from 0 to --min-gain; an accepted finalist runs the rest of the planned trials
and must pass again over all of them). Printed: the share of runs
accepted at one look only and with the adaptive looks (goal: at most the nominal 5 %), the same
with a real gain (each positive's chance raised by up to 0.5) for the power, and a finalist
that is no better *on average* — each positive's chance moved by up to ±0.3 — to show what a
decision about the held-out cases means for other prompts.

Usage: python benchmarks/bench_improve_null.py [--runs N]
"""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction

import _common  # noqa: F401  (puts src/ on the path)

from skill_evals.improve.figures import PermutationTest, f1, total
from skill_evals.improve.sequential import look_alpha
from skill_evals.suite.cases import Case

CASES = [Case(f"p{i}", "p", True, i, i) for i in range(5)] + [
    Case(f"n{i}", "n", False, 5 + i, 5 + i) for i in range(5)
]
TRIALS, MOST, SAMPLES = 3, 9, 2000


def _difference(new: dict[str, list[tuple[bool, tuple[str, ...]]]],
                old: dict[str, list[tuple[bool, tuple[str, ...]]]]) -> Fraction | None:  # fmt: skip
    a, b = total(CASES, new), total(CASES, old)
    x, y = f1(a.tp, a.fp, a.fn), f1(b.tp, b.fp, b.fn)
    return None if x is None or y is None else x - y


def one_run(rng: random.Random, gain: float, adaptive: bool, spread: float = 0.0) -> bool:
    """One held-out step; whether it accepted. ``gain``: each positive's chance raised by up
    to it; ``spread``: moved by up to ± it (no better on average)."""
    chance = {c.id: rng.uniform(0.2, 0.9) if c.expect_trigger else rng.uniform(0, 0.4)
              for c in CASES}  # fmt: skip
    moved = {c.id: rng.uniform(-spread, spread) + rng.uniform(0, gain) if c.expect_trigger
             else 0.0 for c in CASES}  # fmt: skip
    better = {c.id: min(0.95, max(0.0, chance[c.id] + moved[c.id])) for c in CASES}
    old: dict[str, list[tuple[bool, tuple[str, ...]]]] = {c.id: [] for c in CASES}
    new: dict[str, list[tuple[bool, tuple[str, ...]]]] = {c.id: [] for c in CASES}
    most = MOST if adaptive else TRIALS
    stride = max(TRIALS, -(-(most - TRIALS) // 2))
    looks = 1 + -(-(most - TRIALS) // stride)
    trials, look, step = 0, 0, TRIALS

    def grow(count: int) -> None:
        for side, p in ((old, chance), (new, better)):
            for c in CASES:
                side[c.id].extend((rng.random() < p[c.id], ()) for _ in range(count))

    def passes(level: Fraction) -> tuple[bool, bool]:
        """(passes, still open: more trials may still decide)."""
        interval = PermutationTest(CASES, new, old, SAMPLES, rng.randrange(2**31)).interval(level)
        difference = _difference(new, old)
        lower, upper = interval.lower or 0, interval.upper or 0
        ok = difference is not None and difference >= Fraction(1, 20) and lower > 0
        return ok, lower <= 0 and upper >= 0.05

    while trials < most:
        grow(step)
        trials, look = trials + step, look + 1
        level = Fraction(repr(look_alpha(look - 1, look, looks, 0.05)))
        accepted, still_open = passes(level)
        if accepted and trials < most:  # it runs the rest of the planned trials, checked again
            grow(most - trials)
            return passes(level)[0]
        if accepted:
            return True
        if not still_open:
            return False
        step = min(most - trials, stride)
    return False


def main(argv: list[str]) -> int:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 1000
    rng = random.Random(20261206)
    rates = {}
    arms = [("null, one look", 0.0, False, 0.0), ("null, adaptive", 0.0, True, 0.0),
            ("gain, one look", 0.5, False, 0.0), ("gain, adaptive", 0.5, True, 0.0),
            ("no better on average, adaptive", 0.0, True, 0.3)]  # fmt: skip
    for name, gain, adaptive, spread in arms:
        rates[name] = sum(one_run(rng, gain, adaptive, spread) for _ in range(runs)) / runs
        print(f"{name}: accepted {rates[name]:.3f} of {runs} runs")
    print("BENCH " + json.dumps({"name": "improve-null", "runs": runs, **rates}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
