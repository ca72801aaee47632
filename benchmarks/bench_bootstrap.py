"""The bootstrap is O(B·n): n = 1000 units, B = 10000 in under 5 s on one core.

Baseline: the 5 s budget; the ratio is measured / 5 s (target ≤ 1). The figure is the path the
engine takes (the NumPy fast path when NumPy is installed, `skill-evals[fast]`); the pure-Python
reference loop is timed too and printed, so both are on record. Also prints the cost per (B × n)
draw for n = 250 and 500 to show the O(B·n) growth.
"""

from __future__ import annotations

import random
import sys

from _common import median_seconds, verdict

from skill_evals.score.stats import bootstrap_interval


def main() -> int:
    rng = random.Random(7)
    for n in (250, 500):
        values = [rng.choice((-1.0, -0.5, 0.0, 0.5, 1.0)) for _ in range(n)]
        t = median_seconds(
            lambda v=values: bootstrap_interval(v, 10_000, 42, accelerate=False), repeat=1
        )
        print(f"n={n}: {t:.3f} s ({t / (n * 10_000) * 1e9:.1f} ns per draw)")
    values = [rng.choice((-1.0, -0.5, 0.0, 0.5, 1.0)) for _ in range(1000)]
    pure = median_seconds(
        lambda: bootstrap_interval(values, 10_000, 42, accelerate=False), repeat=1
    )
    print(f"n=1000, pure-Python loop: {pure:.3f} s ({pure / 1e7 * 1e9:.1f} ns per draw)")
    try:
        import numpy  # noqa: F401

        path = "numpy"
    except ImportError:
        path = "pure-Python"
    t = median_seconds(lambda: bootstrap_interval(values, 10_000, 42), repeat=3)
    print(f"n=1000, engine path ({path}): {t:.3f} s")
    return 0 if verdict("bootstrap n=1000 B=10000", t, 5.0, 1.0) else 1


if __name__ == "__main__":
    sys.exit(main())
