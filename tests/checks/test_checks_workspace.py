"""Workspace checks on a real directory: files, what changed since setup, verifier commands —
confined to the workspace, never following a symlink, bounded in time and size."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skill_evals.checks import WorkspaceView, judge_workspace
from skill_evals.checks import paths as paths_module
from skill_evals.checks.model import (
    ChangesWithin,
    Command,
    FileAbsent,
    FileContains,
    FileExists,
    FileMatches,
    JsonFileEquals,
    Unchanged,
)
from skill_evals.checks.snapshot import SnapshotProblem, take_snapshot
from skill_evals.run.regex import RegexPool


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text("# Notes\n## 1.2.0\n", encoding="utf-8")
    (root / "data.json").write_text('{"b": [1, 2], "a": true}', encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print(1)\n", encoding="utf-8")
    return root


def judge(check: Any, root: Path, **view: Any) -> Any:
    return judge_workspace(check, WorkspaceView(root, view.pop("env", {}), **view), RegexPool())


def reason(check: Any, root: Path, **view: Any) -> str:
    outcome = judge(check, root, **view)
    assert outcome.passed is False
    assert outcome.reason.startswith(check.label + ": "), outcome.reason
    return str(outcome.reason[len(check.label) + 2 :])


def test_file_exists_and_absent(work: Path) -> None:
    assert judge(FileExists("docs/notes.md"), work).passed
    assert reason(FileExists("docs/other.md"), work) == "not found"
    assert reason(FileExists("docs"), work) == "a directory, not a file"
    assert reason(FileExists("docs/notes.md/x"), work) == "not found"
    assert judge(FileAbsent("docs/other.md"), work).passed
    assert judge(FileAbsent("src/app.py/below"), work).passed  # a file cannot hold one
    assert reason(FileAbsent("docs/notes.md"), work) == "exists (a file)"
    assert reason(FileAbsent("docs"), work) == "exists (directory)"


def test_symlinks_are_never_followed(work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("## 1.2.0 secret", encoding="utf-8")
    (work / "link.txt").symlink_to(outside / "secret.txt")
    (work / "linked").symlink_to(outside)
    (work / "dangling").symlink_to(tmp_path / "nowhere")
    for check in (
        FileExists("link.txt"),
        FileExists("linked/secret.txt"),
        FileContains("link.txt", ("secret",)),
        FileContains("linked/secret.txt", ("secret",)),
        FileMatches("linked/secret.txt", "secret"),
        JsonFileEquals("linked/secret.txt", 1),
        FileAbsent("dangling"),  # something is there
        FileAbsent("linked/other"),  # a symlink on the way
    ):
        assert "symlink" in reason(check, work), check


def test_file_contains(work: Path) -> None:
    assert judge(FileContains("docs/notes.md", ("## 1.2.0", "# Notes")), work).passed
    assert reason(FileContains("docs/notes.md", ("## 1.3.0", "## 1.4.0")), work) == (
        "'## 1.3.0' not found (and 1 more)"
    )
    (work / "bin.dat").write_bytes(b"\xff\xfe\x00")
    assert reason(FileContains("bin.dat", ("x",)), work) == "not UTF-8 text"
    assert reason(FileContains("missing.md", ("x",)), work) == "not found"


def test_file_reads_are_bounded(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths_module, "MAX_FILE_BYTES", 10)
    assert reason(FileContains("docs/notes.md", ("x",)), work) == "larger than 10 bytes"


def test_a_fifo_fails_without_blocking(work: Path) -> None:
    os.mkfifo(work / "pipe")
    started = time.monotonic()
    assert reason(FileContains("pipe", ("x",)), work) == "not a regular file"
    assert reason(FileExists("pipe"), work) == "not a regular file"
    assert time.monotonic() - started < 5


def test_file_matches_and_json_file_equals(work: Path) -> None:
    assert judge(FileMatches("docs/notes.md", r"^## \d+\.\d+\.\d+$", "m"), work).passed
    assert "not found" in reason(FileMatches("docs/notes.md", r"^## 9"), work)
    assert judge(JsonFileEquals("data.json", {"a": True, "b": [1, 2.0]}), work).passed
    assert reason(JsonFileEquals("data.json", {"a": 1, "b": [1, 2]}), work) == (
        "its JSON differs from expected"
    )
    assert reason(JsonFileEquals("docs/notes.md", {}), work) == "not strict JSON"


def test_file_matches_is_bounded_in_time(work: Path) -> None:
    (work / "a.txt").write_text("a" * 40 + "b", encoding="utf-8")
    view = WorkspaceView(work, {})
    with RegexPool(seconds=0.3) as pool:
        outcome = judge_workspace(FileMatches("a.txt", "(a+)+$"), view, pool)
    assert outcome.reason == "file_matches a.txt: check took too long"


def snapshot(root: Path) -> Any:
    return take_snapshot(root, time.monotonic() + 10)


def test_changes_within_and_unchanged(work: Path) -> None:
    before = snapshot(work)
    (work / "docs" / "notes.md").write_text("changed", encoding="utf-8")
    (work / "docs" / "new.md").write_text("new", encoding="utf-8")
    assert judge(ChangesWithin(("docs/",)), work, before=before).passed
    assert judge(ChangesWithin(("docs/notes.md", "docs/new.md")), work, before=before).passed
    assert reason(ChangesWithin(("docs/notes.md",)), work, before=before) == (
        "1 file(s) changed outside the allowed paths"
    )
    assert judge(Unchanged(("src/", "data.json")), work, before=before).passed
    assert reason(Unchanged(("src/", "docs/")), work, before=before) == (
        "'docs/' changed (2 file(s))"
    )
    (work / "src" / "app.py").unlink()  # deleted
    assert reason(Unchanged(("src/app.py",)), work, before=before) == (
        "'src/app.py' changed (1 file(s))"
    )
    assert reason(Unchanged(("src/",)), work) == "no snapshot of the workspace after setup"


def test_mode_changes_and_symlinks_count_as_changes(work: Path, tmp_path: Path) -> None:
    before = snapshot(work)
    os.chmod(work / "src" / "app.py", 0o755)
    assert reason(Unchanged(("src/",)), work, before=before) == "'src/' changed (1 file(s))"
    before = snapshot(work)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(50):
        (big / f"f{i}").write_text("x", encoding="utf-8")
    (work / "src" / "to-big").symlink_to(big)  # one entry: the link, never its target's files
    assert reason(Unchanged(("src/",)), work, before=before) == "'src/' changed (1 file(s))"


def test_snapshots_are_bounded(work: Path) -> None:
    with pytest.raises(SnapshotProblem, match="more than 2 entries"):
        take_snapshot(work, time.monotonic() + 10, max_files=2)
    with pytest.raises(SnapshotProblem, match="more than 5 bytes"):
        take_snapshot(work, time.monotonic() + 10, max_bytes=5)
    with pytest.raises(SnapshotProblem, match="check took too long"):
        take_snapshot(work, time.monotonic() - 1)


def test_unreadable_directories_do_not_break_snapshots(work: Path) -> None:
    before = snapshot(work)
    os.chmod(work / "src", 0)
    try:
        after = snapshot(work)
        if os.geteuid() != 0:
            assert after.entries.get("src/") == "unreadable directory"
            assert after.entries != before.entries
    finally:
        os.chmod(work / "src", 0o755)


def py(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_command_passes_on_its_expected_exit(work: Path) -> None:
    ok = py("import sys; sys.exit(0 if open('docs/notes.md').read().startswith('# Notes') else 1)")
    assert judge(Command(ok), work).passed
    assert reason(Command(py("raise SystemExit(3)")), work) == "exited with code 3, expected 0"
    assert judge(Command(py("raise SystemExit(3)"), expect_exit=3), work).passed
    assert "cannot start" in reason(Command(("/nonexistent/verifier",)), work)
    killed = py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert reason(Command(killed), work) == "killed by signal SIGKILL"


def test_command_environment_stdin_and_workspace_substitution(work: Path) -> None:
    env = {
        **os.environ,
        "GITHUB_TOKEN": "t",
        "MY_SECRET_THING": "s",
        "DB_PASSWORD": "p",
        "AWS_Credential_File": "c",
        "OPENAI_API_KEY": "k",
        "ssh_key": "k",
        "KEYBOARD": "kept",
    }
    code = (
        "import os, sys, json; "
        "bad = [k for k in ('GITHUB_TOKEN', 'MY_SECRET_THING', 'DB_PASSWORD', "
        "'AWS_Credential_File', 'OPENAI_API_KEY', 'ssh_key') if k in os.environ]; "
        "ok = os.environ.get('KEYBOARD') == 'kept' and sys.stdin.read() == '' "
        "and os.environ['SKILL_EVALS_WORKSPACE'] == sys.argv[1] == os.getcwd(); "
        "sys.exit(0 if ok and not bad else 1)"
    )
    assert judge(Command((*py(code), "{workspace}")), work, env=env).passed


def test_command_time_bound_and_children_killed(work: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    spawn = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); "
        "sys.stdout.write('x' * 3_000_000)"
    )
    assert judge(Command(py(spawn)), work).passed  # output is discarded, never read
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.02)
    assert not _alive(child), "a process the verifier started survived it"
    started = time.monotonic()
    assert reason(Command(py("import time; time.sleep(30)"), timeout_ms=200), work) == (
        "timed out after 200 ms"
    )
    assert time.monotonic() - started < 10


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_no_check_reads_outside_the_workspace(work: Path) -> None:
    # Validated at load; the evaluation itself never builds a path that leaves the root.
    assert json.loads((work / "data.json").read_text()) == {"b": [1, 2], "a": True}
    for path in ("src/../data.json", "../w/data.json", "/etc/passwd", "./data.json"):
        assert reason(FileExists(path), work) == "not a path inside the workspace"
        assert reason(FileContains(path, ("a",)), work) == "not a path inside the workspace"
        assert reason(FileAbsent(path), work) == "not a path inside the workspace"
