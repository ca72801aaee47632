"""Why the cache missed: `runner.cacheMisses` and the one line every output prints, through
`skill-evals test` with a counting runner behind a wrapper script, in a private directory. Each
test changes one part of the key and checks the reason the nearest entry gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, write_skill

COUNTING = Path(__file__).parent.parent / "runners" / "counting.sh"
N_CASES = 10


def _cases(path: Path, prompts: dict[int, str] | None = None) -> Path:
    rows = [
        {
            "id": f"c{i}",
            "prompt": (prompts or {}).get(i, f"Can I get a refund for item {i}?"),
            "expectTrigger": True,
            **({"task": {"check": "exit_code", "expected": 0}} if i % 2 == 0 else {}),
        }
        for i in range(N_CASES)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _wrapper(path: Path, comment: str = "") -> Path:
    path.write_text(f'#!/bin/sh\n# {comment}\nexec sh "{COUNTING}" "$@"\n', encoding="utf-8")
    return path


def _run(work: Path, skill: Path, cases: Path, *extra: str, runner: str = "sh wrap.sh") -> Any:
    report = work / "report.json"
    report.unlink(missing_ok=True)
    proc = subprocess.run(
        [
            sys.executable, "-m", "skill_evals", "test", "--skill", str(skill),
            "--cases", str(cases), "--runner", runner, "--report", str(report),
            "--cache", str(work / "cache"), "--arms", "with,without", "--trials", str(TRIALS),
            "--sandbox-path", str(COUNTING.parent),  # the wrapper starts the runner from there
            *extra,
        ],
        capture_output=True, text=True, timeout=120, cwd=work,
        env={**os.environ, "TMPDIR": str(work), "COUNTING_LOG": str(work / "log")},
    )  # fmt: skip
    data = json.loads(report.read_text(encoding="utf-8"))
    assert_valid_report(data)
    return proc, data


@pytest.fixture
def work(tmp_path: Path) -> tuple[Path, Path, Path]:
    skill = write_skill(tmp_path / "skills", body="# Refunds\n\nThis helps.\n")
    cases = _cases(tmp_path / "cases.jsonl")
    _wrapper(tmp_path / "wrap.sh")
    return tmp_path, skill, cases


TRIALS = 2
PLANNED = N_CASES * TRIALS * 2  # cases × trials × arms


def test_a_wrapper_changed_by_one_byte_is_named(work: tuple[Path, Path, Path]) -> None:
    root, skill, cases = work
    proc, first = _run(root, skill, cases)
    assert first["runner"]["cacheMisses"] == [
        {"reason": "new", "count": PLANNED, "detail": "no entry for that case, trial and arm"}
    ]
    assert f"cache: 0 of {PLANNED} reused; {PLANNED} re-run: no entry" in proc.stdout
    _, again = _run(root, skill, cases)
    assert again["runner"]["cacheMisses"] == [] and again["runner"]["cached"] == PLANNED
    _wrapper(root / "wrap.sh", "x")  # one byte more: same command, other content
    proc, changed = _run(root, skill, cases, "--markdown", str(root / "report.md"))
    line = (
        f"cache: 0 of {PLANNED} reused; {PLANNED} re-run: runner argument 1 (wrap.sh) content "
        "changed"
    )
    assert changed["runner"]["cacheMisses"] == [
        {
            "reason": "runner-argument",
            "count": PLANNED,
            "detail": "argument 1 (wrap.sh) content changed",
        }
    ]
    assert line in proc.stdout
    escaped = line.replace("(", "\\(").replace(")", "\\)")  # Markdown-escaped
    assert escaped in (root / "report.md").read_text(encoding="utf-8")


def test_each_part_of_the_key_gives_its_reason(work: tuple[Path, Path, Path]) -> None:
    root, skill, cases = work
    _run(root, skill, cases)
    # another word in the command
    _, data = _run(root, skill, cases, runner="sh wrap.sh --extra")
    assert [m["reason"] for m in data["runner"]["cacheMisses"]] == ["runner-command"]
    # one case's prompt: only that case re-runs (both arms, every trial)
    edited = _cases(root / "edited.jsonl", {3: "Can I get a refund for item three?"})
    _, data = _run(root, skill, edited)
    assert data["runner"]["cacheMisses"] == [
        {
            "reason": "case",
            "count": 2 * TRIALS,
            "detail": "the case's prompt, fixture, setup or task differ",
        }
    ]
    # the skill: every `with` re-runs, every `without` is reused
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8"
    )
    proc, data = _run(root, skill, cases)
    misses = data["runner"]["cacheMisses"]
    assert [(m["reason"], m["count"]) for m in misses] == [("skill", PLANNED // 2)]
    assert f"cache: {PLANNED // 2} of {PLANNED} reused; {PLANNED // 2} re-run:" in proc.stdout
    # never reuse
    _, data = _run(root, skill, cases, "--cache-max-age", "0")
    assert [(m["reason"], m["count"]) for m in data["runner"]["cacheMisses"]] == [
        ("reuse-off", PLANNED)
    ]


def test_an_old_entry_is_expired(work: tuple[Path, Path, Path]) -> None:
    root, skill, cases = work
    _run(root, skill, cases)
    time.sleep(1.2)
    _, data = _run(root, skill, cases, "--cache-max-age", "1s")
    assert [(m["reason"], m["count"]) for m in data["runner"]["cacheMisses"]] == [
        ("expired", PLANNED)
    ]


def test_without_a_cache_there_is_no_field(work: tuple[Path, Path, Path]) -> None:
    root, skill, cases = work
    report = root / "plain.json"
    subprocess.run(
        [
            sys.executable, "-m", "skill_evals", "test", "--skill", str(skill),
            "--cases", str(cases), "--runner", "sh wrap.sh", "--report", str(report), "-q",
        ],
        capture_output=True, text=True, timeout=120, cwd=root, check=False,
        env={**os.environ, "TMPDIR": str(root)},
    )  # fmt: skip
    assert "cacheMisses" not in json.loads(report.read_text(encoding="utf-8"))["runner"]


def test_the_commands_spelling_is_not_blamed_for_what_it_did_not_change(
    work: tuple[Path, Path, Path],
) -> None:
    """The key holds a runner argument's content, not its text: a wrapper named ``./wrap.sh``
    one run and by its absolute path the next is the same runner, so a skill edit in between
    is the reason (the ``without`` arm is reused), and a file name holding the word
    "argument " is quoted as it is."""
    root, skill, cases = work
    (root / "wrap.sh").chmod(0o755)
    _run(root, skill, cases, runner="./wrap.sh")
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8"
    )
    proc, data = _run(root, skill, cases, runner=str(root / "wrap.sh"))
    assert data["runner"]["cached"] == PLANNED // 2
    assert data["runner"]["cacheMisses"] == [
        {
            "reason": "skill",
            "count": PLANNED // 2,
            "detail": "the skill version differs (directorySha256)",
        }
    ]
    named = _wrapper(root / "argument 2.sh")
    _run(root, skill, cases, runner="sh 'argument 2.sh'")
    _wrapper(named, "x")
    proc, data = _run(root, skill, cases, runner="sh 'argument 2.sh'")
    assert [m["detail"] for m in data["runner"]["cacheMisses"]] == [
        "argument 1 (argument 2.sh) content changed"
    ]
    assert f"{PLANNED} re-run: runner argument 1 (argument 2.sh) content changed" in proc.stdout
