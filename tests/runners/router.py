"""A routing runner for tests: loads what a JSON map says for each case and trial.

Options (argv):
  --map FILE        {"<case id>": [[names of trial 1], [names of trial 2], ...]}; a case that is
                    missing, or has fewer trials, loads nothing
  --env-log FILE    append one JSON line per invocation with the routing variables it saw
  --fail-case ID    exit 3 for this case id (a runner failure)
  --busy-once ID DIR  for this case id, the first invocation of each trial reports a retryable
                    runnerError (a marker file in DIR remembers it)
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--map", required=True)
    parser.add_argument("--env-log")
    parser.add_argument("--fail-case")
    parser.add_argument("--busy-once", nargs=2)
    args = parser.parse_args()
    sys.stdin.buffer.read()
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    trial = int(os.environ["EVALGATE_SKILL_TRIAL"])
    if args.env_log:
        seen = {
            name: os.environ.get(name)
            for name in (
                "EVALGATE_SKILL_VARIANT",
                "EVALGATE_SKILL_DIR",
                "SKILL_EVALS_ARM",
                "SKILL_EVALS_SKILL_DIRS",
            )
        }
        with open(args.env_log, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(json.dumps({"case": case_id, "trial": trial, **seen}) + "\n")
    if args.fail_case == case_id:
        sys.exit(3)
    if args.busy_once and args.busy_once[0] == case_id:
        marker = os.path.join(args.busy_once[1], f"{case_id}-{trial}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            print(json.dumps({"runnerError": "rate limited (429)", "retryable": True}))
            return
    with open(args.map) as fh:
        plan = json.load(fh)
    trials = plan.get(case_id, [])
    skills = trials[trial - 1] if trial <= len(trials) else []
    line = {
        "variant": os.environ["EVALGATE_SKILL_VARIANT"],
        "invokedSkills": skills,
        "output": "routed",
        "exitCode": 0,
        "meta": {"costUsd": 0.5, "inputTokens": 10, "outputTokens": 2},
    }
    sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
