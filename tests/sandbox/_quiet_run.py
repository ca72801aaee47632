"""The sandboxed `skill-evals test` run the limits and wire tests share: ten cases that expect
no trigger, one trial, two jobs, no retries, the JSON report on stdout and every observation
recorded in ``rec.jsonl``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import write_jsonl, write_skill


def quiet_run(
    root: Path, runner: str, *args: str, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The report of ``runner`` over ten cases in ``root`` (``args`` come last, so they win)."""
    skill = write_skill(root / "skills")
    cases = write_jsonl(
        root / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"q {i}", "expectTrigger": False} for i in range(10)],
    )
    done = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner),
            *("--trials", "1", "--jobs", "2", "-q", "--format", "json", "--sandbox", "required"),
            *("--record", str(root / "rec.jsonl"), "--retries", "0", *args),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=env,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report
