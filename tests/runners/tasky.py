"""A runner whose task results are scripted per case and trial: `tasky.py SKILL [RULE]...`.

Each RULE is `CASE:TRIALS:WHAT`: for the `with` variant of case CASE in the listed trials
(comma-separated, or `*` for every trial; CASE `*` for every case), WHAT is `fail` (answers
without the expected word), `miss` (answers but does not load the skill) or `error` (a
runnerError, exit 3, not retryable). Every other run answers `done ok` and, in `with`,
reports SKILL as loaded; `without` runs answer `done` (no `ok`)."""

from __future__ import annotations

import json
import os
import sys


def _rules(argv: list[str]) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for rule in argv:
        case, trials, what = rule.rsplit(":", 2)
        for trial in trials.split(","):
            found[(case, trial)] = what
    return found


def main() -> None:
    skill, rules = sys.argv[1], _rules(sys.argv[2:])
    sys.stdin.buffer.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    case, trial = os.environ["EVALGATE_SKILL_CASE_ID"], os.environ["EVALGATE_SKILL_TRIAL"]
    keys = [(case, trial), (case, "*"), ("*", trial), ("*", "*")]
    what = next((rules[k] for k in keys if k in rules), None) if variant == "with" else None
    if what == "error":
        print(json.dumps({"runnerError": "scripted failure", "retryable": False}))
        sys.exit(3)
    line = {
        "variant": variant,
        "invokedSkills": [skill] if variant == "with" and what != "miss" else [],
        "output": "done" if what == "fail" or variant != "with" else "done ok",
        "exitCode": 0,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
