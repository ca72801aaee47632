"""Per-invocation overhead of the engine ≤ 10 ms over a bare subprocess.run.

Both sides run the same tiny runner N times sequentially: the engine through
runner.run_invocation (process group, pipes, byte cap, contract parsing), the baseline through a
bare ``subprocess.run(..., input=prompt, capture_output=True)``. The figure is the difference per
invocation in milliseconds (target ≤ 10 ms); the ratio is printed against that 10 ms budget.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import verdict

from skill_evals.run.runner import InvocationSpec, invocation_env, run_invocation

RUNNER = (
    "import json,os,sys;sys.stdin.read();"
    "print(json.dumps({'variant':os.environ.get('EVALGATE_SKILL_VARIANT','with'),"
    "'invokedSkills':[],'output':'ok','exitCode':0}))"
)
N = 40


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        argv = (sys.executable, "-S", "-c", RUNNER)
        env = invocation_env(os.environ, "with", tmp, "case-1", 1)
        prompt = "Can I return this for a refund?" * 10
        # warm-up (page cache, interpreter)
        subprocess.run(argv, input=prompt.encode(), capture_output=True, env=env, check=True)

        start = time.perf_counter()
        for _ in range(N):
            subprocess.run(argv, input=prompt.encode(), capture_output=True, env=env, check=True)
        bare = (time.perf_counter() - start) / N

        spec = InvocationSpec(
            argv=argv,
            prompt=prompt,
            env=env,
            case_id="case-1",
            trial=1,
            variant="with",
            timeout_ms=30_000,
            max_bytes=1_000_000,
        )
        start = time.perf_counter()
        for _ in range(N):
            result = run_invocation(spec)
            assert not hasattr(result.outcome, "reason"), result.outcome
        engine = (time.perf_counter() - start) / N
        _ = Path(tmp)
    overhead_ms = max(0.0, (engine - bare) * 1000)
    print(f"bare subprocess.run: {bare * 1000:.2f} ms/invocation; engine: {engine * 1000:.2f} ms")
    return 0 if verdict("overhead per invocation", overhead_ms, 10.0, 1.0, unit="ms") else 1


if __name__ == "__main__":
    sys.exit(main())
