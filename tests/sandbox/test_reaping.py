"""Every sandbox is reaped with its invocation: /proc is sampled while a sandboxed run of a few
hundred invocations goes on, and the engine never holds more zombies than it runs jobs (before,
each invocation left its inner bwrap as a zombie until the run ended)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import write_jsonl, write_skill

BWRAP = shutil.which("bwrap")
CASES = 120  # × 2 arms = 240 invocations
JOBS = 4


def _zombies_of(parent: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read(4096).rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[0] == b"Z" and int(fields[1]) == parent:
            count += 1
    return count


@pytest.mark.skipif(
    BWRAP is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)
def test_a_long_sandboxed_run_leaves_no_zombie_behind(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"Can I get a refund {i}?", "expectTrigger": i % 2 == 0}
            for i in range(CASES)
        ],
    )
    argv = [
        *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
        *("--cases", str(cases), "--runner", "skill-evals runner simulated"),
        *("--trials", "1", "--jobs", str(JOBS), "--sandbox", "required", "-q"),
        *("--format", "json", "--no-stop-when-settled"),
    ]
    engine = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    samples: list[int] = []
    while engine.poll() is None:
        samples.append(_zombies_of(engine.pid))
        time.sleep(0.05)
    out = engine.stdout.read() if engine.stdout is not None else b""
    assert engine.returncode in (0, 1), out[-2000:]
    assert b'"mode": "bwrap"' in out
    assert len(samples) > 20, "the run ended before /proc could be sampled"
    # Zombies may exist for an instant between an invocation's end and its sweep; never more
    # than the invocations running at once, and they do not pile up over the run.
    assert max(samples) <= 2 * JOBS, samples
    late = samples[len(samples) // 2 :]
    assert sum(late) / len(late) <= 1.0, samples
