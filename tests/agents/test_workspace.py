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


def test_an_installed_skill_leaves_out_what_the_run_is_judged_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's copy of a skill has no evals/ folder (cases, expected answers, fixtures) and
    no top-level cases.jsonl; everything else — also a nested evals/ — is installed."""
    from skill_evals.agents.base import SkillRef
    from skill_evals.agents.workspace import Workspace

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    skill = tmp_path / "refund-policy"
    for rel in ("SKILL.md", "evals/cases.jsonl", "evals/fixtures/project/README.md",
                "cases.jsonl", "scripts/evals/helper.py", "reference/cases.md"):  # fmt: skip
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text("x\n", encoding="utf-8")
    with Workspace() as ws:
        dest = ws.install_skill(SkillRef("refund-policy", skill, "Refunds."), ws.root / "skills")
        installed = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert installed == {"SKILL.md", "scripts/evals/helper.py", "reference/cases.md"}


def test_a_case_file_the_agent_would_see_is_noted(tmp_path: Path) -> None:
    from skill_evals.pipeline import exposed_cases_note

    skill = tmp_path / "refund-policy"
    for rel in ("evals/cases.jsonl", "cases.jsonl", "tests/cases.jsonl"):
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text("", encoding="utf-8")
    (tmp_path / "outside.jsonl").write_text("", encoding="utf-8")
    assert exposed_cases_note(skill / "evals" / "cases.jsonl", skill) is None
    assert exposed_cases_note(skill / "cases.jsonl", skill) is None
    assert exposed_cases_note(tmp_path / "outside.jsonl", skill) is None
    note = exposed_cases_note(skill / "tests" / "cases.jsonl", skill)
    assert note is not None and "move it to evals/" in note
