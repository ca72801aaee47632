"""A trigger-only suite under --arms auto costs ≤ 0.6× the invocations of --arms with,without.

Suite: 30 trigger-only cases (20 that should load the skill, 10 that should not), 3 trials.
--arms with,without runs 30 × 3 × 2 = 180 invocations; --arms auto runs every with (90) and an
isolation spot-check of k = max(3, ⌈0.2 · 30⌉) = 6 cases without, trial 1: 96. Both must give the
same trigger figures. The ratio is of exact invocation counts.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

from _common import verdict, write_skill
from _scripted import SKILL, options, write_suite

from skill_evals.pipeline import run_test
from skill_evals.plan.scope import ArmOptions


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skill = write_skill(root, SKILL)
        cases = write_suite(root / "cases.jsonl", positives=20, negatives=10, tasks=0)
        full_opts = options(skill, cases, "pass", scope=ArmOptions(arms="with,without"))
        full = run_test(full_opts)
        auto = run_test(dataclasses.replace(full_opts, scope=ArmOptions(arms="auto")))
    assert full["exitCode"] == auto["exitCode"] == 0, (full["messages"], auto["messages"])
    assert full["trigger"] == auto["trigger"]
    runs_auto, runs_full = auto["runner"]["invocations"], full["runner"]["invocations"]
    print(f"--arms auto: {runs_auto} invocations; --arms with,without: {runs_full}")
    print(f"spot-checked: {auto['arms']['spotCheck']}")
    ok = verdict("arms: trigger-only suite, auto vs with,without", runs_auto, runs_full, 0.6, "")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
