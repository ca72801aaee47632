"""End to end through the CLI: Ctrl-C during `skill-evals test --record F` exits
130 with every finished observation on disk, and `--resume F` runs only what is missing."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_jsonl, write_skill

RUNNERS = Path(__file__).resolve().parents[1] / "runners"
SKILL = "refund-policy"


def _keys(path: Path) -> list[tuple[str, int, str]]:
    keys = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)  # every line intact
        keys.append((record["caseId"], record["trial"], record["variant"]))
    return keys


def _log_keys(path: Path) -> list[tuple[str, int, str]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        case_id, trial, variant, _pid = line.split()
        out.append((case_id, int(trial), variant))
    return out


def _command(tmp_path: Path, skill: Path, cases: Path, log: Path, *extra: str) -> list[str]:
    runner = shlex.join(
        [
            sys.executable,
            str(RUNNERS / "good.py"),
            "--invoke",
            SKILL,
            "--sleep",
            "0.3",
            "--log",
            str(log),
        ]
    )
    return [
        sys.executable,
        "-m",
        "skill_evals",
        "test",
        "--skill",
        str(skill),
        "--cases",
        str(cases),
        "--runner",
        runner,
        "--trials",
        "1",
        "--timeout-ms",
        "20000",
        "--format",
        "json",
        "--sandbox-path",  # the runner's log is in the test's directory
        f"{log.parent}:rw",
        *extra,
    ]


def test_interrupt_then_resume(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": f"case-{i}",
                "prompt": f"Can I get a refund for order {i}?",
                "expectTrigger": True,
            }
            for i in range(12)
        ],
    )
    record = tmp_path / "out" / "observations.jsonl"
    first_log = tmp_path / "first.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _command(tmp_path, skill, cases, first_log, "--jobs", "2", "--record", str(record)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up and proc.poll() is None:
            if record.exists() and len(record.read_bytes().splitlines()) >= 4:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr.decode(errors="replace")
    finished = _keys(record)
    assert 4 <= len(finished) < 24
    assert len(set(finished)) == len(finished)
    report = json.loads(stdout)
    assert report["exitCode"] == 130
    assert report["status"] == "interrupted"

    second_log = tmp_path / "second.log"
    proc2 = subprocess.run(
        _command(
            tmp_path,
            skill,
            cases,
            second_log,
            "--jobs",
            "4",
            "--resume",
            str(record),
            "--record",
            str(record),
        ),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc2.returncode == 0, proc2.stderr.decode(errors="replace")
    ran_again = _log_keys(second_log)
    assert not set(ran_again) & set(finished)  # nothing that finished ran again
    everything = {(f"case-{i}", 1, v) for i in range(12) for v in ("with", "without")}
    assert set(ran_again) | set(finished) == everything
    assert len(ran_again) == 24 - len(finished)
    # The record file is now complete, each key once: it doubles as an --observations file.
    after = _keys(record)
    assert sorted(after) == sorted(everything)
    report2 = json.loads(proc2.stdout)
    assert report2["runner"]["invocations"] == 24 - len(finished)
    assert report2["runner"]["failures"] == []
