"""The engine's workspaces: a private root, a fresh W per invocation with the fixture copied
in and setup run, removal in every case, --keep-workspaces names."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skill_evals.run import workspace as workspace_module
from skill_evals.run.workspace import (
    WorkspaceRoot,
    check_keep_dir,
    remove_tree,
    safe_name,
    sweep_stale_roots,
)
from skill_evals.suite.fixtures import ROOT_PREFIX


def fixture(tmp_path: Path) -> Path:
    root = tmp_path / "fixture"
    (root / "bin").mkdir(parents=True)
    (root / "README.md").write_text("hello\n", encoding="utf-8")
    script = root / "bin" / "run.sh"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    return root


def test_a_fresh_private_workspace_with_the_fixture(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with WorkspaceRoot(tmp=tmp) as root:
        assert root.path.name.startswith(f"{ROOT_PREFIX}{os.getpid()}-")
        assert stat.S_IMODE(root.path.stat().st_mode) == 0o300  # no listing of the names
        first = root.prepare(fixture(tmp_path), (), {}, snapshot=True)
        second = root.prepare(None, (), {}, snapshot=False)
        assert first.failure is None and second.failure is None
        assert first.workspace != second.workspace
        assert stat.S_IMODE(first.workspace.stat().st_mode) == 0o700
        assert (first.workspace / "README.md").read_text(encoding="utf-8") == "hello\n"
        assert os.access(first.workspace / "bin" / "run.sh", os.X_OK)
        assert list(second.workspace.iterdir()) == []
        assert first.before is not None and set(first.before.entries) == {
            "README.md",
            "bin/run.sh",
        }
        assert second.before is None
        assert root.dispose(first, "c1", 1, "with") is None
        assert not first.slot.exists()
    assert list(tmp.iterdir()) == []  # second was removed with the root


def test_setup_runs_in_the_workspace_in_order(tmp_path: Path) -> None:
    env = {**os.environ, "API_TOKEN": "t"}
    setup = (
        (sys.executable, "-c", "open('a', 'w').write('1')"),
        (sys.executable, "-c", "import os; assert 'API_TOKEN' not in os.environ; open('b', 'w')"),
        (sys.executable, "-c", "import sys; open(sys.argv[1] + '/c', 'w')", "{workspace}"),
    )
    with WorkspaceRoot(tmp=tmp_path) as root:
        prepared = root.prepare(None, setup, env, snapshot=True)
        assert prepared.failure is None
        assert sorted(p.name for p in prepared.workspace.iterdir()) == ["a", "b", "c"]
        assert prepared.before is not None and set(prepared.before.entries) == {"a", "b", "c"}


def test_setup_failures_name_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with WorkspaceRoot(tmp=tmp_path) as root:
        failed = root.prepare(
            None, ((sys.executable, "-c", "1"), ("false",)), {**os.environ}, False
        )
        assert failed.failure == "setup: command 2 exited with code 1"
        missing = root.prepare(None, (("/nonexistent/setup",),), {}, False)
        assert missing.failure is not None
        assert missing.failure.startswith("setup: command 1 cannot start '/nonexistent/setup'")
        monkeypatch.setattr(workspace_module, "SETUP_SECONDS", 0.2)
        slow = root.prepare(
            None, ((sys.executable, "-c", "import time; time.sleep(30)"),), {}, False
        )
        assert slow.failure == "setup: command 1 timed out after 200 ms"


def test_setup_stops_on_cancel(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    with WorkspaceRoot(tmp=tmp_path) as root:
        prepared = root.prepare(
            None, ((sys.executable, "-c", "import time; time.sleep(30)"),), {}, False, cancel
        )
        assert prepared.interrupted and prepared.failure is None


def test_a_fixture_that_gained_a_symlink_is_a_failure(tmp_path: Path) -> None:
    source = fixture(tmp_path)
    (source / "link").symlink_to("/etc/passwd")
    with WorkspaceRoot(tmp=tmp_path) as root:
        prepared = root.prepare(source, (), {}, False)
        assert prepared.failure is not None and "no longer a regular file" in prepared.failure
        assert not (prepared.workspace / "link").exists()


def test_removal_copes_with_what_an_agent_leaves(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "locked" / "deep").mkdir(parents=True)
    (tree / "locked" / "deep" / "f").write_text("x", encoding="utf-8")
    (tree / "link").symlink_to(tmp_path)  # never followed
    os.mkfifo(tree / "pipe")
    os.chmod(tree / "locked" / "deep", 0)
    os.chmod(tree / "locked", 0o500)
    remove_tree(tree)
    assert not tree.exists()
    assert tmp_path.exists()


def test_keep_moves_to_case_trial_variant(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    with WorkspaceRoot(keep_dir=keep, tmp=tmp_path) as root:
        prepared = root.prepare(fixture(tmp_path), (), {}, False)
        (prepared.workspace / "out.txt").write_text("work", encoding="utf-8")
        assert root.dispose(prepared, "case/1", 2, "without") is None
    kept = keep / "case%2F1" / "2" / "without"
    assert (kept / "out.txt").read_text(encoding="utf-8") == "work"
    assert (kept / "README.md").is_file()


def test_safe_names_are_injective_and_never_paths() -> None:
    ids = [
        "a",
        "A",
        "a b",
        "a_b",
        "a-b",
        "a.b",
        "a%2Eb",
        ".",
        "..",
        "a/b",
        "ä",
        "a\u0308",
        "x" * 200,
    ]
    names = [safe_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert safe_name(".") == "%2E" and safe_name("..") == "%2E%2E"
    assert all("/" not in n and n not in (".", "..") and len(n.encode()) <= 200 for n in names)
    long_a, long_b = safe_name("é" * 200), safe_name("é" * 199 + "e")
    assert long_a != long_b and len(long_a) <= 200


def test_keep_dir_must_be_new_or_empty(tmp_path: Path) -> None:
    assert check_keep_dir(tmp_path / "new") is None
    (tmp_path / "empty").mkdir()
    assert check_keep_dir(tmp_path / "empty") is None
    (tmp_path / "empty" / "x").write_text("x", encoding="utf-8")
    assert "not empty" in str(check_keep_dir(tmp_path / "empty"))
    assert check_keep_dir(tmp_path / "empty" / "x") == "not a directory"


def test_roots_of_killed_engines_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f"{ROOT_PREFIX}{int(dead.stdout)}-abc"
    (stale / "x" / "workspace").mkdir(parents=True)
    os.chmod(stale, 0o300)
    live = tmp_path / f"{ROOT_PREFIX}{os.getppid()}-def"
    live.mkdir()
    other = tmp_path / "skill-evals-ws-notapid"
    other.mkdir()
    sweep_stale_roots(tmp_path)
    assert not stale.exists()
    assert live.exists() and other.exists()


def test_a_kept_workspace_loses_its_outward_symlinks_only(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    (kept / "sub").mkdir(parents=True)
    (kept / "notes.md").write_text("x")
    os.symlink("/etc/passwd", kept / "abs")
    os.symlink("../../outside", kept / "sub" / "up")
    os.symlink(os.fsdecode(b"/tmp/a\nb\xff"), kept / "odd")
    os.symlink("../notes.md", kept / "sub" / "in")
    os.symlink(str(kept / "notes.md"), kept / "abs-in")
    workspace_module.cut_outward_links(kept)
    assert (kept / "abs").read_text() == "symlink to /etc/passwd removed\n"
    assert (kept / "sub" / "up").read_text() == "symlink to ../../outside removed\n"
    assert (kept / "odd").read_text() == "symlink to /tmp/a\\x0ab\\xff removed\n"
    assert os.readlink(kept / "sub" / "in") == "../notes.md"
    assert (kept / "abs-in").is_symlink()
    assert not any(p.is_symlink() for p in (kept / "abs", kept / "sub" / "up", kept / "odd"))
