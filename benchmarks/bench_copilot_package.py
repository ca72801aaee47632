"""What Copilot's package unpacked once per command saves per invocation.

``skill-evals test`` drives the real pinned Copilot CLI (``.cache/agents``) sandboxed, one
invocation at a time, against the scripted model of tests/agents/fake_copilot_model.py on
127.0.0.1: once as before (the engine with the shared copy switched off, so each invocation's
Copilot unpacks its ~235 MB package into its fresh home) and once as shipped (the command's one
unpacked copy bound read-only in every sandbox). Two runs of each, N and 2N invocations: the
difference is the cost of N more invocations, free of the run's fixed costs (start-up, the one
unpacking). Prints per invocation the wall time, the CPU time (engine and children: less
sensitive to a busy machine) and the megabytes written, and the ratios (goal: wall ≤ 0.9).

Usage: ``python benchmarks/bench_copilot_package.py [N]`` (default 5).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, verdict

sys.path.insert(0, str(REPO))  # the scripted model of the tests

from tests.agents.fake_copilot_model import FakeCopilotModel

BINARY = REPO / ".cache" / "agents" / "node_modules" / ".bin" / "copilot"
GOAL = 0.9
# The engine as before: no shared copy (each invocation's Copilot unpacks for itself).
BEFORE = (
    "from unittest import mock; import skill_evals.run.scheduler as s; "
    "mock.patch.object(s, 'shared_package', return_value=None).start(); "
    "from skill_evals.entry import main; main()"
)
AFTER = "from skill_evals.entry import main; main()"


def _usage() -> tuple[float, float]:
    """CPU seconds and MB written so far by this process's waited-for children."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime, kids.ru_oublock * 512 / 1e6


def _run(root: Path, engine: str, count: int, url: str) -> tuple[float, float, float]:
    """(wall s, CPU s, MB written) of one sandboxed `skill-evals test` of ``count``
    invocations, the engine started with ``engine``."""
    skill = root / "refund-policy"
    skill.mkdir(exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: refund-policy\ndescription: Refunds and returns with a receipt.\n---\n"
        "# Refunds\n\nWithin 30 days with a receipt.\n"
    )
    cases = root / "cases.jsonl"
    rows = [{"id": f"c{i}", "prompt": f"Hello number {i}", "expectTrigger": i % 2 == 0}
            for i in range(max(10, count))]  # fmt: skip
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmpdir = root / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    env.update(
        COPILOT_PROVIDER_BASE_URL=url,
        COPILOT_PROVIDER_TYPE="anthropic",
        COPILOT_PROVIDER_API_KEY="sk-bench-key-0001",
        TMPDIR=str(tmpdir),
    )
    runner = f"{sys.executable} -m skill_evals runner copilot --bin {BINARY} --model m1"
    argv = [sys.executable, "-c", engine, "test", "--skill", str(skill), "--cases", str(cases),
            "--runner", runner, "--arms", "with", "--trials", "1", "--jobs", "1",
            "--max-invocations", str(count), "--sandbox", "required", "--quiet",
            "--report", str(root / "report.json")]  # fmt: skip
    start, (cpu, written) = time.perf_counter(), _usage()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    wall, (cpu_end, written_end) = time.perf_counter() - start, _usage()
    runs = json.loads((root / "report.json").read_text())["runner"]
    assert runs["failures"] == [] and runs["invocations"] == count, done.stderr[-2000:]
    return wall, cpu_end - cpu, written_end - written


def _per_invocation(root: Path, engine: str, count: int, url: str) -> list[float]:
    """Wall s, CPU s and MB written per invocation: (2N-run − N-run) / N."""
    for name in ("small", "large"):
        (root / name).mkdir(parents=True)
    small = _run(root / "small", engine, count, url)
    large = _run(root / "large", engine, 2 * count, url)
    return [(b - a) / count for a, b in zip(small, large, strict=True)]


def main() -> int:
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        print("bwrap not found: install bubblewrap (apt-get install -y bubblewrap)")
        return 1
    if not BINARY.exists():
        print(f"{BINARY} not installed; run .ci/run")
        return 1
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp, FakeCopilotModel() as model:
        root = Path(tmp)
        (root / "warm").mkdir()
        _run(root / "warm", AFTER, 1, model.url)  # page cache, interpreter
        before = _per_invocation(root / "before", BEFORE, count, model.url)
        after = _per_invocation(root / "after", AFTER, count, model.url)
    print(
        f"per sandboxed Copilot invocation, unpacking in each home: {before[0]:.2f} s, "
        f"{before[1]:.2f} s CPU, {before[2]:.0f} MB written; with the command's one copy: "
        f"{after[0]:.2f} s, {after[1]:.2f} s CPU, {after[2]:.0f} MB written"
    )
    ok = verdict("per-invocation time, shared copy / per home", after[0], before[0], GOAL)
    verdict("per-invocation CPU, shared copy / per home", after[1], before[1], GOAL)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
