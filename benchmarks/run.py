"""Run every benchmark of docs/performance.md, print a summary table; exit 1 if a figure misses.

Usage: python benchmarks/run.py [name ...]
(names: jobs overhead observations bootstrap lock help content arms settle cache sandbox;
bench_power.py, which prints a table for the docs rather than a ratio, runs on its own)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALL = (
    "jobs", "overhead", "observations", "bootstrap", "lock", "help", "content", "arms", "settle",
    "cache", "sandbox",
)  # fmt: skip


def main(argv: list[str]) -> int:
    names = argv or list(ALL)
    rows = []
    for name in names:
        print(f"== {name}", flush=True)
        proc = subprocess.run(
            [sys.executable, str(HERE / f"bench_{name}.py")], capture_output=True, text=True
        )
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-4000:])
        found = [
            json.loads(line[6:]) for line in proc.stdout.splitlines() if line.startswith("BENCH ")
        ]
        if not found:
            rows.append((name, "error", "", "FAIL"))
            continue
        for row in found:
            rows.append(
                (
                    row["name"],
                    f"{row['ratio']:.2f}",
                    f"≤ {row['target']:g}",
                    "PASS" if row["pass"] else "FAIL",
                )
            )
    print("\n| figure | ratio | target | result |\n| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0 if all(row[3] == "PASS" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
