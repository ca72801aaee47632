"""The limits of every sandbox, with real bubblewrap: RLIMIT_NPROC, RLIMIT_FSIZE and
RLIMIT_CORE as the runner sees them (soft and hard), and --max-workspace-bytes ending an
invocation whose workspace grows past it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox.bwrap import sizes_tmpfs
from tests.sandbox._quiet_run import quiet_run

PROBE = Path(__file__).resolve().parents[1] / "runners" / "limits_probe.py"
pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)


def _run(root: Path, *args: str, runner_args: str = "") -> dict[str, Any]:
    return quiet_run(root, f"{sys.executable} {PROBE} {runner_args}", *args)


def test_every_sandbox_runs_under_the_limits(tmp_path: Path) -> None:
    report = _run(tmp_path)
    assert report["runner"]["failures"] == []
    record = json.loads((tmp_path / "rec.jsonl").read_text().splitlines()[0])
    limits = json.loads(record["output"])
    assert limits == {"NPROC": [1024, 1024], "FSIZE": [1 << 30, 1 << 30], "CORE": [0, 0]}
    off = _run(tmp_path / "off", "--sandbox", "off")
    unsandboxed = json.loads(
        json.loads((tmp_path / "off" / "rec.jsonl").read_text().splitlines()[0])["output"]
    )
    assert off["sandbox"]["mode"] == "off" and unsandboxed != limits  # the engine's own


def test_a_workspace_grown_past_its_bound_ends_the_invocation(tmp_path: Path) -> None:
    report = _run(
        tmp_path,
        "--max-workspace-bytes",
        "1000000",
        "--keep-going",
        runner_args="3000000 workspace",
    )
    failures = report["runner"]["failures"]
    assert len(failures) == 20
    assert all(
        f["reason"] == "workspace grew past 1000000 bytes (--max-workspace-bytes)" for f in failures
    ), failures[:1]
    assert report["exitCode"] == 7


def test_outside_the_workspace_the_sandbox_root_is_bounded_too(tmp_path: Path) -> None:
    version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout
    if not sizes_tmpfs(version):
        pytest.skip("this bwrap cannot bound a tmpfs (--size needs 0.8): documented")
    report = _run(tmp_path, "--max-workspace-bytes", "1000000", runner_args="3000000 cwd")
    assert report["runner"]["failures"] == []
    for line in (tmp_path / "rec.jsonl").read_text().splitlines():
        assert json.loads(json.loads(line)["output"])["write"] == "No space left on device"
