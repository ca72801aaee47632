"""How many units and trials a gate needs: the table of docs/statistics.md#power.

For a true pass-rate gain Δ (with − without, or with − baseline: the same paired statistic) and
a number of trials, find the smallest number of independent units n at which ``--min-uplift 0``
(equally ``--min-pass-gain 0`` against a baseline) passes in at least four runs out of five,
with the engine's own bootstrap (``bootstrap_interval``, seed 42) and sign test.

Two models of a suite (stated in the docs), each trial of a unit passing independently with the
unit's probability:

- ``alike``: every unit passes without the skill with probability 0.5 − Δ/2 and with it with
  0.5 + Δ/2 (the pass rates of largest variance). Here trials average out the only noise there
  is, so they help as much as they ever can.
- ``some``: the skill fixes a share Δ/0.8 of the units (without 0.1, with 0.9) and changes
  nothing on the others (both at the unit's own rate, uniform in [0, 1]). The gain differs
  from unit to unit, as it does in real suites, and trials cannot average that away: only
  units can.

Each figure is the share of SIMULATIONS seeded runs that pass; the runs for the n of a grid
share their random numbers (n units are the first n of the largest suite), so the search is
monotone and the table deterministic.

Usage: python benchmarks/bench_power.py [--quick]
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction

import _common  # noqa: F401  (puts src/ on the path)

from skill_evals.score.stats import bootstrap_interval, sign_test

GAINS = (0.2, 0.3, 0.5)
TRIALS = (1, 3, 5)
GRID = (10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300)
SIMULATIONS = 200
SAMPLES = 2_000  # resamples per bootstrap here; the engine's default is 10,000 (see the docs)
TARGET = Fraction(4, 5)
SEED = 42


MODELS = ("alike", "some")


def _rates(model: str, gain: float, rng: random.Random) -> tuple[float, float]:
    """One unit's (with, without) pass probabilities under ``model``."""
    if model == "alike":
        return 0.5 + gain / 2, 0.5 - gain / 2
    if rng.random() < gain / 0.8:
        return 0.9, 0.1
    rate = rng.random()
    return rate, rate


def _suites(
    model: str, gain: float, trials: int, units: int, simulations: int
) -> list[list[Fraction]]:
    """Per simulation, the per-unit differences d_u of ``units`` units."""
    rng = random.Random(f"{model}-{gain}-{trials}-{SEED}")
    suites = []
    for _ in range(simulations):
        diffs = []
        for _ in range(units):
            p_with, p_without = _rates(model, gain, rng)
            passed_with = sum(rng.random() < p_with for _ in range(trials))
            passed_without = sum(rng.random() < p_without for _ in range(trials))
            diffs.append(Fraction(passed_with - passed_without, trials))
        suites.append(diffs)
    return suites


def _passes(diffs: list[Fraction], samples: int) -> tuple[bool, bool]:
    """Whether ``--min-uplift 0`` passes (interval lower bound ≥ 0), and whether the sign
    test alone would say p < 0.05."""
    lower = bootstrap_interval(diffs, samples, SEED).lower
    p_value = sign_test(diffs).p_value
    return lower >= 0, p_value is not None and p_value < 0.05


def power(suites: list[list[Fraction]], units: int, samples: int) -> tuple[Fraction, Fraction]:
    """The share of suites (their first ``units`` units) that pass the gate / the sign test."""
    gate = sign = 0
    for diffs in suites:
        ok_gate, ok_sign = _passes(diffs[:units], samples)
        gate += ok_gate
        sign += ok_sign
    return Fraction(gate, len(suites)), Fraction(sign, len(suites))


def smallest_units(
    suites: list[list[Fraction]], grid: tuple[int, ...], samples: int
) -> tuple[int | None, Fraction]:
    """The smallest n of ``grid`` whose power reaches TARGET (binary search: shared random
    numbers make power grow with n), and that power."""
    lo, hi = 0, len(grid) - 1
    found: tuple[int | None, Fraction] = (None, Fraction(0))
    while lo <= hi:
        mid = (lo + hi) // 2
        gate, _ = power(suites, grid[mid], samples)
        if gate >= TARGET:
            found = (grid[mid], gate)
            hi = mid - 1
        else:
            lo = mid + 1
    return found


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    simulations = 40 if quick else SIMULATIONS
    samples = 1_000 if quick else SAMPLES
    grid = GRID[: 10 if quick else len(GRID)]
    print(
        f"units needed for --min-uplift 0 to pass in ≥ 4 of 5 runs "
        f"({simulations} simulations per figure, B = {samples}, seed {SEED})\n"
    )
    header = " | ".join(f"{t} trial{'s' if t > 1 else ''}" for t in TRIALS)
    print(f"| model | true gain | {header} |")
    print("| --- | --- | " + " | ".join("---" for _ in TRIALS) + " |")
    for model in MODELS:
        for gain in GAINS:
            cells = []
            for trials in TRIALS:
                suites = _suites(model, gain, trials, grid[-1], simulations)
                units, reached = smallest_units(suites, grid, samples)
                cells.append(
                    f"> {grid[-1]}" if units is None else f"{units} ({float(reached):.0%})"
                )
            print(f"| {model} | +{gain:.1f} | " + " | ".join(cells) + " |", flush=True)
    print()
    print("calibration: how often the gate passes with no true gain (false passes)\n")
    print(f"| units | {header} |")
    print("| --- | " + " | ".join("---" for _ in TRIALS) + " |")
    for units in (10, 30, 100):
        cells = []
        for trials in TRIALS:
            suites = _suites("alike", 0.0, trials, units, simulations)
            gate, sign = power(suites, units, samples)
            cells.append(f"{float(gate):.1%} (sign test {float(sign):.1%})")
        print(f"| {units} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
