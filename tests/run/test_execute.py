"""Scheduling: --jobs concurrency, fail-fast / --keep-going, isolation breach,
--record then --resume, progress counts, SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from skill_evals.run.execute import ExecutionPlan, ExecutionResult, Progress, execute
from skill_evals.run.records import load_recorded, plan_keys
from skill_evals.sandbox.probe import SandboxChoice
from skill_evals.suite.cases import Case, CaseSuite

RUNNERS = Path(__file__).resolve().parents[1] / "runners"
GOOD = [sys.executable, str(RUNNERS / "good.py")]
SKILL = "refund-policy"


def make_suite(tmp_path: Path, n: int = 3) -> CaseSuite:
    cases = tuple(
        Case(id=f"c{i}", prompt=f"prompt {i}", expect_trigger=True, line=i + 1, unit=i)
        for i in range(n)
    )
    return CaseSuite(path=tmp_path / "cases.jsonl", sha256="0" * 64, cases=cases, unit_count=n)


def make_plan(tmp_path: Path, command: list[str], **kw: Any) -> ExecutionPlan:
    skill_dir = tmp_path / SKILL
    skill_dir.mkdir(exist_ok=True)
    defaults: dict[str, Any] = {
        "command": command,
        "suite": make_suite(tmp_path, kw.pop("n", 3)),
        "skill_name": SKILL,
        "skill_dir": skill_dir,
        "trials": 1,
        "jobs": 2,
        "timeout_ms": 20_000,
        "max_bytes": 1_000_000,
        # The scripted runners keep their logs and counters in the test's directory.
        "sandbox": SandboxChoice("auto", ((str(tmp_path), True),)),
    }
    defaults.update(kw)
    return ExecutionPlan(**defaults)


def log_keys(path: Path) -> list[tuple[str, int, str]]:
    if not path.exists():
        return []
    keys = []
    for line in path.read_text().splitlines():
        case_id, trial, variant, _pid = line.split()
        keys.append((case_id, int(trial), variant))
    return keys


def test_runs_every_key_in_plan_order(tmp_path: Path) -> None:
    events: list[Progress] = []
    record = tmp_path / "rec.jsonl"
    plan = make_plan(tmp_path, [*GOOD, "--invoke", SKILL], trials=2, jobs=3, record=record)
    result = execute(plan, events.append)
    keys = plan_keys(plan.suite, 2)
    assert [o.key for o in result.observations] == keys
    assert result.failures == []
    assert result.invocations == 12
    assert result.not_run == 0
    assert not result.interrupted
    assert result.wall_ms > 0
    assert result.observations[0].invoked_skills == (SKILL,)
    assert result.observations[1].invoked_skills == ()
    assert result.observations[0].output == "echo:prompt 0"
    assert [e.done for e in events] == list(range(1, 13))
    assert {e.total for e in events} == {12}
    assert all(e.ok and e.skill == SKILL for e in events)
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert sorted((r["caseId"], r["trial"], r["variant"]) for r in recorded) == sorted(keys)


@pytest.mark.parametrize("jobs", [1, 3])
def test_jobs_is_the_observed_concurrency(tmp_path: Path, jobs: int) -> None:
    # Each runner waits (up to 5 s) until `jobs` runners run at once: a pool smaller than
    # `jobs` leaves the peak below it, a larger one pushes it above.
    counter = tmp_path / "running"
    plan = make_plan(tmp_path, [*GOOD, "--concurrency", str(counter), str(jobs)], n=jobs, jobs=jobs)
    started = time.monotonic()
    result = execute(plan)
    assert len(result.observations) == 2 * jobs
    running, peak = map(int, counter.read_text().split())
    assert running == 0
    assert peak == jobs
    assert time.monotonic() - started < 4.5  # nobody waited out the 5 s


def test_fail_fast_stops_starting(tmp_path: Path) -> None:
    log = tmp_path / "log"
    plan = make_plan(tmp_path, [*GOOD, "--fail-case", "c1", "--log", str(log)], n=4, jobs=1)
    events: list[Progress] = []
    result = execute(plan, events.append)
    assert [o.key for o in result.observations] == [("c0", 1, "with"), ("c0", 1, "without")]
    assert [(f.key, f.reason) for f in result.failures] == [
        (
            ("c1", 1, "with"),
            "exited with code 3 (a runner must exit 0; exitCode carries the task's)",
        )
    ]
    assert result.invocations == 3
    assert result.not_run == 5
    assert not result.interrupted
    assert [e.ok for e in events] == [True, True, False]


def test_keep_going_runs_everything(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, [*GOOD, "--fail-case", "c1"], n=4, jobs=2, keep_going=True)
    result = execute(plan)
    assert result.invocations == 8
    assert result.not_run == 0
    assert [f.key for f in result.failures] == [("c1", 1, "with"), ("c1", 1, "without")]
    assert len(result.observations) == 6


def test_fail_fast_lets_in_flight_finish(tmp_path: Path) -> None:
    # c0 fails at once; the other worker's c0-without (slow) is already running and completes.
    code = (
        "import json, os, sys, time; sys.stdin.read(); v = os.environ['EVALGATE_SKILL_VARIANT'];"
        " time.sleep(0.5) if v == 'without' else sys.exit(1);"
        " print(json.dumps({'variant': v, 'invokedSkills': [], 'output': '', 'exitCode': 0}))"
    )
    plan = make_plan(tmp_path, [sys.executable, "-c", code], n=4, jobs=2)
    result = execute(plan)
    assert [o.key for o in result.observations] == [("c0", 1, "without")]
    assert [f.key for f in result.failures] == [("c0", 1, "with")]
    assert result.invocations == 2
    assert result.not_run == 6


def test_isolation_breach_is_a_failure_and_not_recorded(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    plan = make_plan(
        tmp_path, [*GOOD, "--invoke", SKILL, "--breach"], n=2, keep_going=True, record=record
    )
    result = execute(plan)
    assert [o.key for o in result.observations] == [("c0", 1, "with"), ("c1", 1, "with")]
    assert [f.key for f in result.failures] == [("c0", 1, "without"), ("c1", 1, "without")]
    assert all(f.reason.startswith("isolation breach") for f in result.failures)
    recorded = [json.loads(line)["variant"] for line in record.read_text().splitlines()]
    assert recorded == ["with", "with"]


def test_other_skills_in_without_are_fine(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, [*GOOD, "--invoke", "neighbour", "--breach"], n=2)
    result = execute(plan)
    assert result.failures == []
    assert result.observations[1].invoked_skills == ("neighbour",)


def test_record_then_resume_runs_only_missing(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    first_log = tmp_path / "first.log"
    plan = make_plan(
        tmp_path,
        [*GOOD, "--fail-case", "c2", "--log", str(first_log)],
        n=4,
        trials=2,
        jobs=1,
        record=record,
    )
    first = execute(plan)
    assert len(first.failures) == 1
    done_first = log_keys(first_log)
    # Trial-major: trial 1 of c0 and c1 (both variants) ran before c2 failed.
    assert len(done_first) == len(first.observations) == 4

    resumed = load_recorded(record, plan.suite, 2)
    assert [o.key for o in resumed] == [o.key for o in first.observations]
    second_log = tmp_path / "second.log"
    events: list[Progress] = []
    plan2 = make_plan(
        tmp_path,
        [*GOOD, "--log", str(second_log)],
        n=4,
        trials=2,
        jobs=3,
        record=record,
        resumed=resumed,
    )
    second = execute(plan2, events.append)
    ran = log_keys(second_log)
    assert not set(ran) & set(done_first)  # nothing that finished ran again
    assert sorted(ran) == sorted(set(plan_keys(plan2.suite, 2)) - set(done_first))
    assert second.invocations == 12
    assert [o.key for o in second.observations] == plan_keys(plan2.suite, 2)
    # Progress counts over the whole plan: resumed ones are already done.
    assert [e.done for e in events] == list(range(5, 17))
    assert {e.total for e in events} == {16}
    # The record file now holds every key exactly once: usable as --observations.
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert sorted((r["caseId"], r["trial"], r["variant"]) for r in lines) == sorted(
        plan_keys(plan2.suite, 2)
    )


def test_resumed_outside_plan_are_ignored(tmp_path: Path) -> None:
    from skill_evals.run.observations import Observation

    stale = Observation("c0", 3, "with", (), "old", 0)  # trial 3 not in a 1-trial plan
    kept = Observation("c0", 1, "with", (SKILL,), "kept", 0)
    plan = make_plan(tmp_path, GOOD, n=1, resumed=[stale, kept])
    result = execute(plan)
    assert [o.output for o in result.observations] == ["kept", "echo:prompt 0"]
    assert result.invocations == 1


def test_base_env_is_passed(tmp_path: Path) -> None:
    code = (
        "import json, os; e = os.environ; print(json.dumps({'variant': "
        "e['EVALGATE_SKILL_VARIANT'], 'invokedSkills': [], 'output': e.get('MARKER', '-') + ':' +"
        " e['EVALGATE_SKILL_DIR'], 'exitCode': 0}))"
    )
    env = {"PATH": os.environ.get("PATH", ""), "MARKER": "given"}
    plan = make_plan(tmp_path, [sys.executable, "-c", code], n=1, base_env=env)
    result = execute(plan)
    assert result.observations[0].output == f"given:{(tmp_path / SKILL).resolve()}"


def _interrupt_run(tmp_path: Path, signum: int) -> tuple[ExecutionResult, list[int], float]:
    pids = tmp_path / "pids"
    # Each runner records its pid and hangs; the signal must kill them all at once. Host pids
    # are checked: unsandboxed (a sandbox has pids of its own).
    argv = ["/bin/sh", "-c", f"echo $$ >> {pids}; exec sleep 30"]
    plan = make_plan(tmp_path, argv, n=5, jobs=3, sandbox=SandboxChoice("off"))

    def send() -> None:
        give_up = time.monotonic() + 10
        while time.monotonic() < give_up:
            if pids.exists() and len(pids.read_text().split()) >= 3:
                break
            time.sleep(0.02)
        os.kill(os.getpid(), signum)

    sender = threading.Thread(target=send)
    sender.start()
    started = time.monotonic()
    result = execute(plan)
    elapsed = time.monotonic() - started
    sender.join()
    return result, [int(p) for p in pids.read_text().split()], elapsed


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_interrupts_and_kills_running(tmp_path: Path, signum: int) -> None:
    before = signal.getsignal(signum)
    result, pids, elapsed = _interrupt_run(tmp_path, signum)
    assert signal.getsignal(signum) is before  # handler restored
    assert result.interrupted
    assert elapsed < 5
    assert result.invocations == 3
    assert result.failures == []  # killed by us: not the runner's failure
    assert result.observations == []
    assert result.not_run == 10
    assert len(pids) == 3
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_execute_from_worker_thread_leaves_signals_alone(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, GOOD, n=1)
    box: list[ExecutionResult] = []
    thread = threading.Thread(target=lambda: box.append(execute(plan)))
    thread.start()
    thread.join()
    assert len(box[0].observations) == 2


def test_unwritable_record_fails_before_any_invocation(tmp_path: Path) -> None:
    from skill_evals.errors import InvalidInput

    log = tmp_path / "log"
    plan = make_plan(tmp_path, [*GOOD, "--log", str(log)], n=1, record=tmp_path)
    with pytest.raises(InvalidInput, match="--record"):
        execute(plan)
    assert not log.exists()


def test_resumed_breach_is_a_failure(tmp_path: Path) -> None:
    from skill_evals.run.observations import Observation

    breach = Observation("c0", 1, "without", (SKILL,), "hand-edited", 0)
    plan = make_plan(tmp_path, GOOD, n=2, resumed=[breach])
    result = execute(plan)
    assert [f.key for f in result.failures] == [("c0", 1, "without")]
    assert result.failures[0].reason.startswith("isolation breach")
    assert ("c0", 1, "without") not in [o.key for o in result.observations]
    assert result.invocations == 3


def test_progress_printer_line() -> None:
    import io

    from skill_evals.run.progress import ProgressPrinter

    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    printer(Progress(12, 60, SKILL, "case-3", 2, "with", True, 4100.0, None, True, True))
    printer(Progress(13, 60, SKILL, "case-3", 2, "without", False, 50.0, "timed out after 9 ms"))
    assert stream.getvalue() == (
        "[12/60] refund-policy case-3 trial 2 with: runner ok, skill loaded (expected) 4.1s\n"
        "[13/60] refund-policy case-3 trial 2 without: runner FAILED (timed out after 9 ms) 0.1s\n"
    )
    stream.close()
    printer(Progress(14, 60, SKILL, "case-4", 1, "with", True, 1.0))  # closed stream: no error


def test_progress_printer_escapes_line_breaks() -> None:
    import io

    from skill_evals.run.progress import ProgressPrinter

    stream = io.StringIO()
    ProgressPrinter(stream)(Progress(1, 2, SKILL, "x\n::error::pwned\u2028", 1, "with", True, 0))
    assert stream.getvalue().count("\n") == 1
    assert "x\\u000a::error::pwned\\u2028" in stream.getvalue()
