"""A runner that reports its own failure: `flaky.py STATE_DIR FAILURES [retryable|final|shape]`.

Each (case, trial, variant) fails FAILURES times with a runnerError line (exit status 3, which
must not matter), then answers. The attempt count lives in STATE_DIR, one file per key."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> None:
    state, failures = Path(sys.argv[1]), int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "retryable"
    sys.stdin.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    key = f"{os.environ['EVALGATE_SKILL_CASE_ID']}-{os.environ['EVALGATE_SKILL_TRIAL']}-{variant}"
    counter = state / key
    attempt = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(attempt + 1))
    if attempt < failures:
        if mode == "shape":
            line: dict[str, object] = {"runnerError": "x", "retryable": True, "extra": "SECRET"}
        else:
            reason = "HTTP 429 rate limited\x1b[31m\nretry-after 2s" if attempt == 0 else "HTTP 529"
            line = {"runnerError": reason, "retryable": mode == "retryable"}
        print(json.dumps(line))
        sys.exit(3)
    answer = {"variant": variant, "invokedSkills": [], "output": "ok", "exitCode": 0}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
