"""The bundled release-notes example: workspace checks that the simulation passes with the
skill and fails without it, offline, through `skill-evals test`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, assert_valid_report

SKILL = REPO / "examples" / "skills" / "release-notes"


def test_release_notes_example_gates_on_the_work(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        [
            sys.executable, "-m", "skill_evals", "test",
            "--skill", str(SKILL), "--cases", str(SKILL / "evals" / "cases.yaml"),
            "--runner", "skill-evals runner simulated", "--trials", "1",
            "--min-trigger-f1", "0.8", "--min-uplift", "0.2", "--format", "json", "-q",
        ],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, TMPDIR=str(tmp)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid_report(report)
    assert report["task"]["units"] >= 10
    assert report["task"]["with"]["passRate"] == 1.0
    checks = {c["check"] for case in report["caseResults"] for c in case["checks"]}
    assert {"command", "file_contains", "file_matches", "changes_within", "tool_called"} <= checks
    first = report["caseResults"][0]
    command = next(c for c in first["checks"] if c["check"] == "command")
    assert (command["with"], command["without"]) == ([True], [False])
    assert list(tmp.iterdir()) == []
