"""The owner-executable bit is part of directorySha256: `chmod -x` on a skill script changes
the hash the report shows, the lock, `changed` and the cache key; the value computed from git
objects (mode 100755) agrees with a clean checkout; a skill without executable files keeps the
plain dirhash.Hash1 value."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_jsonl, write_skill

SCRIPT = "scripts/run.sh"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TMPDIR=str(cwd.parent / "tmp"))
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def hash1(skill: Path) -> str:
    """Go's dirhash.Hash1 in hex, written out here independently of the package."""
    lines = []
    for path in sorted(p for p in skill.rglob("*") if p.is_file()):
        rel = path.relative_to(skill).as_posix()
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}\n")
    lines.sort(key=lambda line: line.split("  ", 1)[1].encode())
    return hashlib.sha256("".join(lines).encode()).hexdigest()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    skill = write_skill(root / "skills", name="runner-skill", extra={SCRIPT: "echo hi\n"})
    cases = [{"id": f"c{i}", "prompt": f"refund {i}", "expectTrigger": True} for i in range(10)]
    (skill / "evals").mkdir()
    write_jsonl(skill / "evals" / "cases.jsonl", cases)
    (tmp_path / "tmp").mkdir()
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "plain")
    return root


def report_sha(root: Path) -> str:
    """The skill's directorySha256 as `skill-evals test` reports it (recorded observations)."""
    skill = root / "skills" / "runner-skill"
    cases = skill / "evals" / "cases.jsonl"
    proc = cli(root, "test", "--skill", str(skill), "--cases", str(cases), "--observations",
               str(observations(root)), "--trials", "1", "--format", "json")  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return str(report["skill"]["directorySha256"])


def observations(root: Path) -> Path:
    rows = []
    for i in range(10):
        for variant in ("with", "without"):
            invoked = ["runner-skill"] if variant == "with" else []
            rows.append({"caseId": f"c{i}", "trial": 1, "variant": variant,
                         "invokedSkills": invoked, "output": "ok", "exitCode": 0})  # fmt: skip
    return write_jsonl(root.parent / "observations.jsonl", rows)


def test_without_executable_files_the_hash_is_dirhash_hash1(repo: Path) -> None:
    skill = repo / "skills" / "runner-skill"
    assert report_sha(repo) == hash1(skill)


def test_chmod_x_changes_the_hash_lock_and_changed(repo: Path) -> None:
    skill = repo / "skills" / "runner-skill"
    script = skill / SCRIPT
    plain = report_sha(repo)
    script.chmod(0o755)
    executable = report_sha(repo)
    assert executable != plain
    # The construction: " x " instead of two spaces on the executable file's line.
    lines = []
    for path in sorted(p for p in skill.rglob("*") if p.is_file()):
        rel = path.relative_to(skill).as_posix()
        sep = " x " if path.stat().st_mode & 0o100 else "  "
        lines.append((rel.encode(), f"{hashlib.sha256(path.read_bytes()).hexdigest()}{sep}{rel}\n"))
    assert executable == hashlib.sha256("".join(t for _, t in sorted(lines)).encode()).hexdigest()

    # git: commit the executable script (mode 100755); a clean checkout agrees with its commit.
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "executable")
    same = cli(repo, "changed", "--base", "HEAD")
    assert same.returncode == 0, same.stderr
    assert same.stdout == "" and "no skill changed" in same.stderr
    # The lock follows: up to date, then out of date after chmod -x.
    assert cli(repo, "lock", "--update").returncode == 0
    assert cli(repo, "lock").returncode == 0
    script.chmod(0o644)
    assert report_sha(repo) == plain
    moved = cli(repo, "changed", "--base", "HEAD")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.splitlines() == ["skills/runner-skill"]
    stale = cli(repo, "lock")
    assert stale.returncode != 0 and "skills/runner-skill" in stale.stdout + stale.stderr
