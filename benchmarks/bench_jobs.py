"""With a runner that sleeps 1 s, 60 invocations at --jobs 8 finish within 10 s.

Baseline: the ideal wall time for 60 one-second invocations on 8 workers, ceil(60/8) × 1 s = 8 s.
Target: measured ≤ 10 s, i.e. ratio to the ideal ≤ 1.25.
"""

from __future__ import annotations

import math
import shlex
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict, write_cases, write_skill

from skill_evals.pipeline import TestOptions, run_test

# A shell runner: its own start-up is a few ms, so the figure measures the scheduler, not Python.
RUNNER = (
    "cat >/dev/null; sleep 1; "
    'printf \'{"variant":"%s","invokedSkills":[],"output":"ok","exitCode":0}\\n\' '
    '"$EVALGATE_SKILL_VARIANT"'
)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skill = write_skill(root)
        cases = write_cases(root / "cases.jsonl", 15)  # 15 cases × 2 trials × 2 variants = 60
        options = TestOptions(
            skill=skill,
            cases=cases,
            runner=shlex.join(["sh", "-c", RUNNER]),
            trials=2,
            jobs=8,
            timeout_ms=30_000,
        )
        start = time.perf_counter()
        report = run_test(options)
        wall = time.perf_counter() - start
    assert report["runner"]["invocations"] == 60, report["runner"]
    assert not report["runner"]["failures"], report["runner"]["failures"]
    ideal = math.ceil(60 / 8) * 1.0
    return 0 if verdict("jobs: 60 × 1 s runner at --jobs 8", wall, ideal, 10.0 / ideal) else 1


if __name__ == "__main__":
    sys.exit(main())
