"""Output paths: record files never collect duplicates, a resumable job starts from nothing, and
no pipe or device among the outputs can make the command hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skill_evals.report import outputs
from tests.conftest import write_jsonl, write_skill

GOOD = str(Path(__file__).parent.parent / "runners" / "good.py")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")


def _suite(tmp_path: Path) -> tuple[Path, Path, Path]:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {"id": f"c{i}", "prompt": f"refund question {i}", "expectTrigger": True}
            for i in range(10)
        ],
    )
    log = tmp_path / "invocations.log"
    return skill, cases, log


def _test(skill: Path, cases: Path, log: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    runner = f"{sys.executable} {GOOD} --invoke refund-policy --log {log}"
    return subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "--quiet"),
            # The runner's log is in the test's directory.
            *("--format", "json", "--sandbox-path", f"{log.parent}:rw", *extra),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ran(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


# ------------------------------------------------------------------------ record / resume


def test_record_file_holding_records_needs_resume(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    record = tmp_path / "run.jsonl"
    assert _test(skill, cases, log, "--record", str(record)).returncode == 0
    lines = record.read_text().splitlines()
    assert len(lines) == 20
    before = _ran(log)

    again = _test(skill, cases, log, "--record", str(record))
    assert again.returncode == 5
    assert again.stderr.strip() == (
        f"skill-evals: error: {record} exists: add --resume {record} to continue it, or remove it"
    )
    assert _ran(log) == before  # refused before anything ran
    assert record.read_text().splitlines() == lines  # and nothing appended

    # A different --resume file does not make appending to a full record file safe either.
    other = tmp_path / "other.jsonl"
    other.write_text(lines[0] + "\n")
    assert _test(skill, cases, log, "--resume", str(other), "--record", str(record)).returncode == 5

    # The same file for both continues it: nothing is missing, nothing runs, no duplicates.
    resumed = _test(skill, cases, log, "--resume", str(record), "--record", str(record))
    assert resumed.returncode == 0
    assert _ran(log) == before
    assert record.read_text().splitlines() == lines


def test_empty_or_blank_record_file_is_not_a_record(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    record = tmp_path / "run.jsonl"
    record.write_text("\n  \n")
    assert _test(skill, cases, log, "--record", str(record)).returncode == 0
    assert len([line for line in record.read_text().splitlines() if line.strip()]) == 20


def test_resume_and_record_the_same_missing_file_starts_from_nothing(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    record = tmp_path / "job" / "run.jsonl"
    proc = _test(skill, cases, log, "--resume", str(record), "--record", str(record))
    assert proc.returncode == 0, proc.stderr
    assert len(record.read_text().splitlines()) == 20
    assert _ran(log) == 20


def test_resume_from_a_missing_file_alone_is_an_error(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    proc = _test(skill, cases, log, "--resume", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 5
    assert "does not exist" in proc.stderr
    assert _ran(log) == 0


# -------------------------------------------------------------------------- pipes, devices


def test_fifo_output_without_reader_is_refused_before_running(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    for option in ("--report", "--junit", "--markdown", "--record"):
        fifo = tmp_path / f"out{option}.fifo"
        os.mkfifo(fifo)
        proc = _test(skill, cases, log, option, str(fifo))
        assert proc.returncode == 5, (option, proc.stderr)
        assert str(fifo) in proc.stderr
        assert _ran(log) == 0


def test_fifo_output_with_a_reader_gets_the_report(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:  # blocks until the command opens it for writing
            got.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc = _test(skill, cases, log, "--report", str(fifo))
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["status"] == "pass"


def test_record_must_be_a_regular_file(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    proc = _test(skill, cases, log, "--record", os.devnull)
    assert proc.returncode == 5
    assert "--record must be a regular file" in proc.stderr


def test_devices_and_the_standard_streams_work_as_report_outputs(tmp_path: Path) -> None:
    skill, cases, log = _suite(tmp_path)
    proc = _test(skill, cases, log, "--report", os.devnull, "--junit", "/dev/stderr")
    assert proc.returncode == 0, proc.stderr
    assert "<testsuites" in proc.stderr


def test_a_reader_that_stops_reading_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outputs, "STALL_SECONDS", 0.2)
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(write_end, False)
        target = Path(f"/proc/self/fd/{write_end}")
        held = {target.resolve(): os.dup(write_end)}
        with pytest.raises(OSError, match="took no data"):
            outputs.write_output(target, "x" * 1_000_000, held)
        assert not held
    finally:
        os.close(read_end)
        os.close(write_end)


def test_write_output_opens_a_fifo_late_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "late.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="no process is reading"):
        outputs.write_output(fifo, "{}")
