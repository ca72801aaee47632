"""`skill-evals --help` starts in under 300 ms (heavy modules imported lazily).

Baseline: the 300 ms budget; also prints a bare `python -c pass` start for reference.
"""

from __future__ import annotations

import subprocess
import sys

from _common import REPO, median_seconds, verdict


def main() -> int:
    env_cmd = [sys.executable, "-m", "skill_evals", "--help"]

    def help_run() -> None:
        subprocess.run(env_cmd, check=True, capture_output=True, cwd=REPO)

    def bare() -> None:
        subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True)

    help_run()
    python_start = median_seconds(bare, repeat=5)
    t = median_seconds(help_run, repeat=7)
    print(f"bare python start: {python_start * 1000:.0f} ms; --help: {t * 1000:.0f} ms")
    return 0 if verdict("skill-evals --help", t * 1000, 300.0, 1.0, unit="ms") else 1


if __name__ == "__main__":
    sys.exit(main())
