"""A scripted shell runner and suites for the arm and early-stop benchmarks (docs/comparison.md).

The runner decides from the case id and the arm, so every run of a suite is the same:

- case ids ``p<i>`` expect the skill, ``n<i>`` do not, ``k<i>`` expect it and have a task check;
- ``BENCH_MODE=pass``: with the skill it loads exactly where it should and every task passes;
  without it every task fails (a skill that clearly helps);
- ``BENCH_MODE=fail``: with the skill it loads on only one positive case in four (ids whose
  number is a multiple of 4) but on every negative one, and every task fails; without it every
  task passes (a skill that clearly hurts);
- each answer reports ``meta.costUsd`` 0.25.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from skill_evals.pipeline import TestOptions

SKILL = "bench-skill"

_SCRIPT = r"""
cat >/dev/null
id="$EVALGATE_SKILL_CASE_ID"
number="${id#?}"
skills='[]'
if [ "$EVALGATE_SKILL_VARIANT" = with ]; then
  if [ "$BENCH_MODE" = pass ]; then
    code=0
    case "$id" in n*) ;; *) skills='["bench-skill"]' ;; esac
  else
    code=1
    case "$id" in
      n*) skills='["bench-skill"]' ;;
      *) if [ $((number % 4)) -eq 0 ]; then skills='["bench-skill"]'; fi ;;
    esac
  fi
elif [ "$BENCH_MODE" = pass ]; then
  code=1
else
  code=0
fi
printf '{"variant":"%s","invokedSkills":%s,"output":"ok","exitCode":%s,"meta":{"costUsd":0.25}}\n' \
  "$EVALGATE_SKILL_VARIANT" "$skills" "$code"
"""


def runner(mode: str) -> str:
    """The --runner command for ``mode`` (pass or fail)."""
    return shlex.join(["env", f"BENCH_MODE={mode}", "sh", "-c", _SCRIPT])


def write_suite(path: Path, positives: int, negatives: int, tasks: int) -> Path:
    """``p0..``, ``n0..`` trigger-only cases and ``k0..`` cases with an exit_code task."""
    records = [
        {"id": f"p{i}", "prompt": f"Can I return item {i} for a refund?", "expectTrigger": True}
        for i in range(positives)
    ]
    records += [
        {"id": f"n{i}", "prompt": f"What is the weather on day {i}?", "expectTrigger": False}
        for i in range(negatives)
    ]
    records += [
        {
            "id": f"k{i}",
            "prompt": f"Refund order {i} and write the receipt",
            "expectTrigger": True,
            "task": {"check": "exit_code", "expected": 0},
        }
        for i in range(tasks)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def options(skill: Path, cases: Path, mode: str, **kwargs: object) -> TestOptions:
    """TestOptions for the scripted runner (``kwargs`` override)."""
    base: dict[str, object] = {
        "skill": skill,
        "cases": cases,
        "runner": runner(mode),
        "trials": 3,
        "jobs": 1,
        "timeout_ms": 30_000,
        "bootstrap_samples": 1000,
    }
    base.update(kwargs)
    return TestOptions(**base)  # type: ignore[arg-type]
