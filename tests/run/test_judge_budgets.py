"""--max-cost-usd counts the judges' reported cost also when judging after the run (resumed and
recorded observations), and an --observations re-score shows the judges' cost in the ledger:
the real CLI with the table runner and the scripted judge (it reports $0.001 per verdict)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests._judge_helpers import (
    cli_args,
    judge_cmd,
    judge_log,
    make_suite,
    report_of,
    run_cli,
    runner_log,
)
from tests.conftest import assert_valid_report

RUBRIC = "The notes have a title, a one-line summary and a list of changes."
TASK = [
    {"check": "exit_code", "expected": 0},
    {"check": "judge", "rubric": RUBRIC, "scale": [1, 5], "threshold": 3},
]
RUNNER_COST = 0.01  # each `without` invocation's reported cost; it exits 1: never judged
CASES = 10


def _rows() -> dict[str, dict[str, Any]]:
    without = {"output": "no", "exitCode": 1, "meta": {"costUsd": RUNNER_COST}}
    return {f"c{i}": {"with": {"output": "GOOD notes"}, "without": without} for i in range(CASES)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged record of every observation, then the rubric edited (so judging is due)."""
    root = tmp_path_factory.mktemp("budget")
    make_suite(root, _rows(), TASK)
    done = run_cli(root, *cli_args(root, "--judge", judge_cmd(root), "--record", "rec.jsonl"))
    assert done.returncode == 0, done.stderr
    assert len(judge_log(root)) == CASES  # only the with answers reach the judge
    cases = root / "cases.jsonl"
    cases.write_text(cases.read_text("utf-8").replace("a title", "a heading"), "utf-8")
    return root


def _calls_after(root: Path, before: int, budget: float) -> int:
    """Judge calls a budget of ``budget`` dollars allows when ``before`` is already spent and
    each call costs $0.001: calls start while the spent total is below the budget."""
    calls, spent = 0, before
    while spent < budget and calls < CASES:
        calls, spent = calls + 1, spent + 0.001
    return calls


def _assert_stopped(done: Any, report: dict[str, Any], calls: int, spent: float) -> None:
    assert_valid_report(report)
    assert done.returncode == 7, done.stderr
    assert report["status"] == "unavailable"
    ledger = report["runner"]["ledger"]["judge"]
    assert ledger["calls"] == calls and report["judge"]["calls"] == calls
    assert ledger["costUsd"] == pytest.approx(0.001 * calls)
    (message,) = [m for m in report["messages"] if m.startswith("cost budget reached")]
    assert f"${spent:.4f}" in message and "--max-cost-usd" in message


def test_rescoring_observations_stops_judging_at_the_cost_budget(recorded: Path) -> None:
    before_judge, before_runner = len(judge_log(recorded)), len(runner_log(recorded))
    budget = 0.0025
    done = run_cli(
        recorded,
        *cli_args(recorded, "--judge", judge_cmd(recorded), runner=False),
        "--observations", "rec.jsonl", "--max-cost-usd", str(budget), "--jobs", "1",
        "--report", "obs.json",
    )  # fmt: skip
    calls = _calls_after(recorded, 0, budget)
    assert calls == 3
    assert len(judge_log(recorded)) - before_judge == calls
    assert len(runner_log(recorded)) == before_runner
    report = report_of(recorded / "obs.json")
    _assert_stopped(done, report, calls, 0.001 * calls)
    # No runner ran: the runner's part of the ledger is empty, the judges' is there.
    assert report["runner"]["ledger"]["invocations"] == 0
    assert report["runner"]["ledger"]["costUsd"] is None


def test_an_observations_rescore_shows_the_judges_cost_in_the_ledger(recorded: Path) -> None:
    done = run_cli(
        recorded,
        *cli_args(recorded, "--judge", judge_cmd(recorded), runner=False),
        "--observations", "rec.jsonl", "--report", "ledger.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = report_of(recorded / "ledger.json")
    assert_valid_report(report)
    judge = report["runner"]["ledger"]["judge"]
    assert judge["calls"] == CASES and judge["costUsd"] == pytest.approx(0.001 * CASES)
    assert judge["inputTokens"] == 10 * CASES and judge["costUnreported"] == 0


def test_resumed_observations_are_judged_within_the_runners_and_judges_cost(
    recorded: Path, tmp_path: Path
) -> None:
    # Resume from the with observations only: the without arm runs ($0.01 each), then the
    # resumed with answers are judged after the run, counting the runners' cost too.
    lines = (recorded / "rec.jsonl").read_text("utf-8").splitlines()
    resume = tmp_path / "resume.jsonl"
    resume.write_text("".join(f"{line}\n" for line in lines if '"without"' not in line), "utf-8")
    before_judge, before_runner = len(judge_log(recorded)), len(runner_log(recorded))
    budget = CASES * RUNNER_COST + 0.0025
    done = run_cli(
        recorded,
        *cli_args(recorded, "--judge", judge_cmd(recorded)),
        "--resume", str(resume), "--max-cost-usd", str(budget), "--jobs", "1",
        "--report", "resumed.json",
    )  # fmt: skip
    assert len(runner_log(recorded)) - before_runner == CASES  # only the without arm ran
    calls = _calls_after(recorded, CASES * RUNNER_COST, budget)
    assert calls == 3
    assert len(judge_log(recorded)) - before_judge == calls
    report = report_of(recorded / "resumed.json")
    _assert_stopped(done, report, calls, CASES * RUNNER_COST + 0.001 * calls)
    assert report["runner"]["ledger"]["costUsd"] == pytest.approx(CASES * RUNNER_COST)
