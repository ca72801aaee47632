"""A well-behaved runner for tests: answers per the runner contract.

Options (argv):
  --invoke NAME     report NAME in invokedSkills for the `with` variant (repeatable)
  --breach          also report the --invoke names in the `without` variant
  --sleep SECONDS   sleep before answering
  --log FILE        append "case trial variant pid" once the answer is printed (flock'd)
  --fail-case ID    exit 3 for this case id (a runner failure)
  --concurrency FILE N   count running invocations in FILE (flock'd); wait (up to 5 s) until N
                    run at once, record the maximum seen as the file's second number
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time


def _update(path: str, delta: int) -> tuple[int, int]:
    """Add delta to the running count in ``path``; return (running, max seen)."""
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        parts = fh.read().split()
        running, peak = (int(parts[0]), int(parts[1])) if parts else (0, 0)
        running += delta
        peak = max(peak, running)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{running} {peak}\n")
        fh.flush()
        return running, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--invoke", action="append", default=[])
    parser.add_argument("--breach", action="store_true")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--log")
    parser.add_argument("--fail-case")
    parser.add_argument("--concurrency", nargs=2)
    args = parser.parse_args()

    prompt = sys.stdin.buffer.read().decode("utf-8")
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    case_id = os.environ["EVALGATE_SKILL_CASE_ID"]
    trial = os.environ["EVALGATE_SKILL_TRIAL"]
    assert os.path.isabs(os.environ["EVALGATE_SKILL_DIR"])
    if args.concurrency:
        path, want = args.concurrency[0], int(args.concurrency[1])
        _update(path, +1)
        give_up = time.monotonic() + 5.0
        while time.monotonic() < give_up:
            with open(path) as fh:
                fcntl.flock(fh, fcntl.LOCK_SH)  # the writer truncates, then writes
                if int(fh.read().split()[0]) >= want:
                    break
            time.sleep(0.01)
        time.sleep(0.05)  # stay running a moment so a surplus worker would be seen
        _update(path, -1)
    if args.sleep:
        time.sleep(args.sleep)
    if args.fail_case == case_id:
        print("failing on purpose", file=sys.stderr)
        sys.exit(3)
    skills = args.invoke if (variant == "with" or args.breach) else []
    line = json.dumps(
        {
            "variant": variant,
            "invokedSkills": skills,
            "output": f"echo:{prompt}",
            "exitCode": 0,
            "meta": {"durationMs": 5, "costUsd": 0.25, "note": "ignored"},
        }
    )
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if args.log:
        with open(args.log, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(f"{case_id} {trial} {variant} {os.getpid()}\n")


if __name__ == "__main__":
    main()
