"""The per-invocation workspace: a private parent nobody lists, random names, stale ones swept."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def test_workspaces_of_killed_runners_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skill_evals.agents.workspace import (
        OWNER_FILE,
        PARENT_MODE,
        Workspace,
        private_parent,
        sweep_stale_workspaces,
        workspaces,
    )

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    parent = private_parent()
    assert parent.parent == tmp_path and stat.S_IMODE(parent.stat().st_mode) == PARENT_MODE
    os.chmod(parent, 0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = parent / "stale"
    stale.mkdir()
    (stale / OWNER_FILE).write_text(str(dead.pid))
    live = parent / "live"
    live.mkdir()
    (live / OWNER_FILE).write_text(str(os.getppid()))
    kept = parent / "kept"  # --keep-workspace: no owner file
    kept.mkdir()
    assert sweep_stale_workspaces() == [stale]
    assert stat.S_IMODE(parent.stat().st_mode) == PARENT_MODE  # listable only for a moment
    assert live.exists() and kept.exists() and not stale.exists()
    with Workspace() as ws:
        assert ws.root.parent == parent and len(ws.root.name) == 32  # 128 random bits, in hex
        assert (ws.root / OWNER_FILE).read_text() == str(os.getpid())
        assert ws.project.is_dir() and ws.home.is_dir()
    assert not ws.root.exists() and workspaces(parent) == [kept, live]


def test_a_parent_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    from skill_evals.agents.base import RunnerSetupError
    from skill_evals.agents.workspace import PARENT_PREFIX, private_parent

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"{PARENT_PREFIX}{os.getuid()}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RunnerSetupError, match="not a directory of this user"):
        private_parent(tmp_path)
