"""A command whose program cannot be started — a runner, judge, proposer or drafter given as a
bare name found only in the current directory, a script that is not executable, a missing
program, a `VAR=value` prefix (the commands run without a shell) — is refused before anything
starts (exit 7), saying what to write instead; it used to fail once per invocation as
"cannot start". The real CLI in a subprocess, unsandboxed: what would have run is a counting
log that stays empty."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

COUNTING = REPO / "tests" / "runners" / "counting.sh"
EXAMPLES = REPO / "examples"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SKILL_EVALS_SANDBOX"}
    env["COUNTING_LOG"] = str(cwd / "invocations.log")
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", *args, "--sandbox", "off"],
        capture_output=True, text=True, timeout=120, env=env, cwd=cwd,
    )  # fmt: skip


def _places(tmp_path: Path) -> None:
    """run.sh: the counting runner, executable, in the current directory only; plain.sh: a
    copy that is not executable."""
    shutil.copy(COUNTING, tmp_path / "run.sh")
    (tmp_path / "plain.sh").write_text(COUNTING.read_text())
    (tmp_path / "plain.sh").chmod(0o644)


# (the command, what the error says after "the program '<word>' is missing or not executable; ")
_COMMANDS = [
    ("run.sh", "write ./run.sh (a bare name is looked up on PATH)"),
    ("./plain.sh", "it is not executable: chmod +x it, or start it with its interpreter"),
    ("plain.sh", "write ./plain.sh (a bare name is looked up on PATH); it is not executable"),
    ("KEY=1 ./run.sh", "the command runs without a shell: set the variable in the environment"),
    ("no-such-program --x", "install it, or give its path"),
]


def _said(command: str, hint: str, where: str) -> str:
    word = command.split()[0]
    return f"{where}: the program {word!r} is missing or not executable; {hint}"


@pytest.mark.parametrize(("command", "hint"), _COMMANDS)
def test_a_runner_program_that_cannot_start_is_refused_first(
    tmp_path: Path, command: str, hint: str
) -> None:
    _places(tmp_path)
    skill = EXAMPLES / "skills" / "refund-policy"
    cases = skill / "evals" / "cases.jsonl"
    proc = _cli(tmp_path, "test", "--skill", str(skill), "--cases", str(cases), "--runner", command)
    assert proc.returncode == 7, proc.stderr
    assert _said(command, hint, "--runner") in proc.stderr
    assert not (tmp_path / "invocations.log").exists()
    if command == "run.sh":  # the control: written as the error says, it runs
        fixed = _cli(tmp_path, "test", "--skill", str(skill), "--cases", str(cases),
                     "--runner", "./run.sh", "--trials", "1")  # fmt: skip
        assert fixed.returncode in (0, 1), fixed.stderr
        assert (tmp_path / "invocations.log").read_text().count("\n") == 28


@pytest.mark.parametrize(("command", "hint"), _COMMANDS[:2])
def test_a_judge_proposer_or_drafter_program_is_checked_the_same_way(
    tmp_path: Path, command: str, hint: str
) -> None:
    _places(tmp_path)
    improve = EXAMPLES / "improve"
    proc = _cli(
        tmp_path, "improve", "--skill", str(improve / "invoice-audit"),
        "--cases", str(improve / "invoice-audit-cases.jsonl"), "--runner", "./run.sh",
        "--proposer", command,
    )  # fmt: skip
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert _said(command, hint, "--proposer") in proc.stdout + proc.stderr
    assert not (tmp_path / "invocations.log").exists()
    labels = EXAMPLES / "judging" / "labels.jsonl"
    proc = _cli(tmp_path, "judge-check", "--cases", str(labels), "--judge", command)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert _said(command, hint, "--judge") in proc.stdout
    skill = tmp_path / "refund-policy"
    shutil.copytree(EXAMPLES / "skills" / "refund-policy", skill)
    out = tmp_path / "drafted.jsonl"
    proc = _cli(tmp_path, "cases", "draft", "--skill", str(skill), "--drafter", command,
                "--out", str(out))  # fmt: skip
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert _said(command, hint, "--drafter") in proc.stderr
    assert not out.exists()
