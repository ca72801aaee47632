"""A pairwise ``with`` observation is recorded when it completes: a run killed (SIGKILL) while
its pairs are judged loses no agent run, and --resume judges the pairs without running the
agent again. The real CLI with the table runner and the scripted judge."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    cli_args,
    judge_cmd,
    judge_log,
    judge_sleepers,
    make_suite,
    report_of,
    run_cli,
    runner_log,
)
from tests.conftest import assert_valid_report

TASK = [{"check": "judge_pairwise", "rubric": "Which release notes are clearer for users?"}]
CASES = 10


def _rows() -> dict[str, Any]:
    return {
        f"c{i}": {"with": {"output": f"w{i} BETTER"}, "without": {"output": f"o{i} plain"}}
        for i in range(CASES)
    }


def _kill_judges(root: Path) -> None:
    for pid in judge_sleepers(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A run SIGKILLed while its first pair is being judged (the judge hangs)."""
    root = tmp_path_factory.mktemp("killed")
    make_suite(root, _rows(), TASK)
    args = cli_args(root, "--judge", judge_cmd(root, "--mode", "hang"), "--record", "rec.jsonl")
    env = {
        **os.environ,
        "TABLE_RUNNER_LOG": str(root / "runner.log"),
        "JUDGE_LOG": str(root / "judge.log"),
    }
    proc = subprocess.Popen(
        ["skill-evals", *args, "--jobs", "1"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (root / "judge.log.pids").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (root / "judge.log.pids").exists(), "the judge was never asked"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        yield root
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        _kill_judges(root)


def test_the_killed_run_recorded_every_observation(killed: Path) -> None:
    assert len(runner_log(killed)) == 2 * CASES  # the pairs are judged after every run
    lines = [json.loads(line) for line in (killed / "rec.jsonl").read_text("utf-8").splitlines()]
    assert sorted((r["caseId"], r["variant"]) for r in lines) == sorted(
        (f"c{i}", arm) for i in range(CASES) for arm in ("with", "without")
    )
    assert not any(r.get("judge") for r in lines)  # no pair was judged


def test_resume_judges_the_pairs_and_runs_no_agent(killed: Path) -> None:
    before_judge = len(judge_log(killed))
    done = run_cli(
        killed,
        *cli_args(killed, "--judge", judge_cmd(killed), "--resume", "rec.jsonl"),
        "--report", "resumed.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(runner_log(killed)) == 2 * CASES  # never run again
    assert len(judge_log(killed)) - before_judge == 2 * CASES  # both asks of every pair
    report = report_of(killed / "resumed.json")
    assert_valid_report(report)
    pairwise = report["task"]["pairwise"]
    assert pairwise["pairs"] == CASES and pairwise["withPreferred"] == CASES
    assert report["judge"]["calls"] == 2 * CASES and report["runner"]["invocations"] == 0


def test_a_complete_record_holds_the_verdicts_and_rescores_with_no_call(tmp_path: Path) -> None:
    make_suite(tmp_path, _rows(), TASK)
    args = cli_args(tmp_path, "--judge", judge_cmd(tmp_path), "--record", "rec.jsonl")
    first = run_cli(tmp_path, *args, "--report", "one.json")
    assert first.returncode == 0, first.stderr
    assert len(judge_log(tmp_path)) == 2 * CASES
    lines = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_text("utf-8").splitlines()]
    with_lines = [r for r in lines if r["variant"] == "with"]
    # Each with observation twice: when it completed, then with its pair's verdict.
    assert len(with_lines) == 2 * CASES
    assert sum(bool(r.get("judge")) for r in with_lines) == CASES
    again = run_cli(
        tmp_path,
        *cli_args(tmp_path, "--judge", judge_cmd(tmp_path), runner=False),
        "--observations", "rec.jsonl", "--report", "two.json",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(judge_log(tmp_path)) == 2 * CASES  # nothing asked again
    report = report_of(tmp_path / "two.json")
    assert report["task"]["pairwise"]["withPreferred"] == CASES
    assert report["judge"]["calls"] == 0
