"""Stop when settled: a clearly passing and a clearly failing suite stop at ≤ 0.7× of their
planned invocations with the same verdict as the full run; a budget is never overshot by more
than --jobs − 1 invocations.

Suite (benchmarks/_scripted.py): 20 cases that should load the skill, 10 that should not, 12
with a task check; 3 trials; --arms with,without (42 × 3 × 2 = 252 planned); gates
--min-trigger-f1 0.7 and --min-uplift 0 (the skill must not hurt); --jobs 1, so the stop is
exact and repeatable.

- clearly passing (BENCH_MODE=pass): with the skill every case is loaded where it should be and
  every task passes, without it every task fails — F1 1.0, uplift +1;
- clearly failing (BENCH_MODE=fail): with the skill only one positive case in four loads it, every
  negative one does, and every task fails while it passes without — F1 16/50 = 0.32, uplift −1.

How early a gate can settle is bounded by the gate itself: the worst completion of a perfect run
after a fraction f of it has F1 2fP / (2fP + (1 − f)(P + N)), so --min-trigger-f1 0.7 with P = 32
positive and N = 10 negative cases settles no earlier than f ≈ 0.6 (0.8 would need f ≈ 0.72).

The budget figure: --max-cost-usd 2 with answers reporting $0.25 each is reached after 8
invocations; at --jobs 4 at most 3 more are still running. Ratio = extra invocations / (jobs −
1), target ≤ 1. The invocation budget itself is exact (--max-invocations 10 starts exactly 10).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

from _common import verdict, write_skill
from _scripted import SKILL, options, write_suite

from skill_evals.pipeline import TestOptions, run_test
from skill_evals.plan.scope import ArmOptions

GATES = {"min_trigger_f1": 0.7, "min_uplift": 0.0}


def _pair(base: TestOptions, name: str) -> bool:
    full = run_test(dataclasses.replace(base, scope=ArmOptions(arms="with,without")))
    stopped = run_test(
        dataclasses.replace(base, scope=ArmOptions(arms="with,without", stop_when_settled=True))
    )
    same = full["exitCode"] == stopped["exitCode"]
    print(
        f"{name}: full run exit {full['exitCode']} after {full['runner']['invocations']} "
        f"invocations; stopped early exit {stopped['exitCode']} after "
        f"{stopped['runner']['invocations']} ({stopped['runner'].get('stoppedEarly')})"
    )
    planned = stopped["coverage"]["planned"]
    ok = verdict(f"settle: {name}", stopped["runner"]["invocations"], planned, 0.7, "")
    if not same:
        print(f"settle: {name}: the verdict differs from the full run's FAIL")
    return ok and same


def main() -> int:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skill = write_skill(root, SKILL)
        cases = write_suite(root / "cases.jsonl", positives=20, negatives=10, tasks=12)
        for mode in ("pass", "fail"):
            base = options(skill, cases, mode, **GATES)
            results.append(_pair(base, f"clearly {'passing' if mode == 'pass' else 'failing'}"))
        exact = run_test(
            options(skill, cases, "pass", scope=ArmOptions(max_invocations=10), jobs=4)
        )
        started = exact["runner"]["invocations"]
        print(f"--max-invocations 10 at --jobs 4: {started} invocations started")
        results.append(started == 10)
        jobs = 4
        costly = run_test(
            options(skill, cases, "pass", scope=ArmOptions(max_cost_usd=2.0), jobs=jobs)
        )
        ran = costly["runner"]["invocations"]
        reached_at = 8  # $2 at $0.25 each
        extra = ran - reached_at
        print(f"--max-cost-usd 2 at --jobs {jobs}: {ran} invocations ({extra} past the budget)")
        results.append(verdict("budget: overshoot / (jobs − 1)", max(extra, 0), jobs - 1, 1.0, ""))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
