"""A runner's own reason ({"runnerError": …, "retryable": …}), --retries with backoff, and the
default timeout of built-in agent runners."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill_evals import pipeline
from skill_evals.agents.registry import builtin_agent
from skill_evals.pipeline import default_timeout_ms
from skill_evals.run.execute import retry_delay
from skill_evals.run.observations import RunnerFailure
from skill_evals.run.runner import run_invocation
from skill_evals.run.runner_output import parse_runner_error, runner_reason
from skill_evals.schemas import load_schema
from tests.conftest import write_jsonl, write_skill
from tests.run.test_execute import execute, make_plan
from tests.run.test_runner import spec

FLAKY = str(Path(__file__).resolve().parents[1] / "runners" / "flaky.py")


def flaky(state: Path, failures: int, mode: str = "retryable") -> list[str]:
    state.mkdir(exist_ok=True)
    return [sys.executable, FLAKY, str(state), str(failures), mode]


# ----------------------------------------------------------------------------- the reason


def test_the_runners_reason_is_the_failure_whatever_its_exit_status(tmp_path: Path) -> None:
    result = run_invocation(spec(*flaky(tmp_path / "s", 1, "final")))
    assert isinstance(result.outcome, RunnerFailure)
    # Control characters are removed (the ESC sequence and the line break).
    assert result.outcome.reason == "runner: HTTP 429 rate limited\\u001b[31m retry-after 2s"
    assert result.retryable is False
    result = run_invocation(spec(*flaky(tmp_path / "r", 1)))
    assert result.retryable is True


def test_a_malformed_runner_error_line_is_a_failure_without_its_text(tmp_path: Path) -> None:
    result = run_invocation(spec(*flaky(tmp_path / "s", 1, "shape")))
    assert isinstance(result.outcome, RunnerFailure)
    assert result.outcome.reason.startswith("stdout: a runnerError line must be")
    assert "SECRET" not in result.outcome.reason
    assert result.retryable is False


@pytest.mark.parametrize(
    ("line", "reason", "retryable"),
    [
        (
            b'{"runnerError": "auth refused (HTTP 401)", "retryable": false}\n',
            "runner: auth refused (HTTP 401)",
            False,
        ),
        (b'{"runnerError": "overloaded", "retryable": true}', "runner: overloaded", True),
        (b'{"runnerError": "no retry key"}', "runner: no retry key", False),
        (b'{"runnerError": "\\u0000\\u202e\\u2028"}', "runner: \\u0000\\u202e\\u2028", False),
        (b'{"runnerError": " \\t\\n "}', "runner: (no reason given)", False),
        (b'{"runnerError": "a\\u200bb\\r\\nc"}', "runner: a\\u200bb c", False),
        (b'{"runnerError": 5, "retryable": true}', None, False),
        (b'{"runnerError": "x", "retryable": "yes"}', None, False),
    ],
)
def test_parse_runner_error(line: bytes, reason: str | None, retryable: bool) -> None:
    parsed = parse_runner_error(line)
    assert parsed is not None
    if reason is None:
        assert parsed.reason.startswith("stdout: a runnerError line must be")
    else:
        assert parsed.reason == reason
    assert parsed.retryable is retryable


def test_ordinary_output_is_not_a_runner_error() -> None:
    answer = b'{"variant":"with","invokedSkills":[],"output":"runnerError","exitCode":0}\n'
    assert parse_runner_error(answer) is None
    assert parse_runner_error(b'{"runnerError": "x"}\n{"runnerError": "y"}\n') is None


def test_reason_is_cut_at_300_characters() -> None:
    reason = runner_reason("é" * 1000)
    assert len(reason.removeprefix("runner: ")) == 300
    assert reason.endswith("…")


# -------------------------------------------------------------------------------- retries


def test_backoff_is_2_8_32_then_60_seconds() -> None:
    assert [retry_delay(n) for n in range(6)] == [2.0, 8.0, 32.0, 60.0, 60.0, 60.0]


def test_retryable_failures_run_again_and_only_the_last_result_counts(tmp_path: Path) -> None:
    waits: list[int] = []
    plan = make_plan(
        tmp_path, flaky(tmp_path / "s", 2), retries=2, retry_delay=lambda n: waits.append(n) or 0.01
    )
    result = execute(plan)
    assert result.failures == []
    assert len(result.observations) == 6
    assert result.retried == 12  # two re-runs for each of the six invocations
    assert result.invocations == 18
    assert sorted(set(waits)) == [0, 1]


def test_retries_are_bounded_and_the_last_failure_is_reported(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, flaky(tmp_path / "s", 5), retries=1, keep_going=True, retry_delay=lambda n: 0.0
    )
    result = execute(plan)
    assert len(result.failures) == 6
    assert {f.reason for f in result.failures} == {"runner: HTTP 529"}  # the second attempt's
    assert result.retried == 6


def test_a_failure_that_is_not_retryable_runs_once(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, flaky(tmp_path / "s", 1, "final"), keep_going=True)
    result = execute(plan)
    assert len(result.failures) == 6 and result.retried == 0 and result.invocations == 6


def test_fail_fast_waits_for_the_retry(tmp_path: Path) -> None:
    # One failure then success everywhere: without waiting for the retry, fail-fast would stop.
    plan = make_plan(tmp_path, flaky(tmp_path / "s", 1), jobs=1, retry_delay=lambda n: 0.0)
    result = execute(plan)
    assert result.failures == [] and result.not_run == 0


def test_an_interrupt_cuts_the_backoff_short(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": False} for i in range(10)],
    )
    runner = " ".join(flaky(tmp_path / "s", 10))
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(cases), "--runner", runner, "--trials", "1", "--retries", "10"),
            *("--jobs", "1", "--quiet", "--sandbox-path", f"{tmp_path}:rw"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = tmp_path / "s"
    deadline = time.monotonic() + 60
    while not any(state.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # now inside the first 2 s backoff
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert time.monotonic() - start < 1.5
    assert sum(int(f.read_text()) for f in state.iterdir()) == 1  # never re-run


def test_retries_option_range_and_report(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": f"c{i}", "prompt": f"question {i}", "expectTrigger": False} for i in range(10)],
    )
    base = [
        sys.executable,
        "-m",
        "skill_evals",
        "test",
        "--skill",
        str(skill),
        "--cases",
        str(cases),
    ]
    bad = subprocess.run(
        [*base, "--runner", "true", "--retries", "11"], capture_output=True, text=True
    )
    assert bad.returncode == 5 and "--retries" in bad.stderr
    runner = " ".join(flaky(tmp_path / "s", 1))
    proc = subprocess.run(
        [
            *(*base, "--runner", runner, "--trials", "1", "--retries", "0", "--keep-going"),
            *("--quiet", "--format", "json", "--sandbox-path", f"{tmp_path}:rw"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 7
    assert report["runner"]["retried"] == 0
    assert {f["reason"] for f in report["runner"]["failures"]} == {
        "runner: HTTP 429 rate limited\\u001b[31m retry-after 2s"
    }
    assert "retried" in load_schema("report.schema.json")["$defs"]["runner"]["properties"]


# ------------------------------------------------------------------------- default timeout


@pytest.mark.parametrize(
    ("command", "agent"),
    [
        ("skill-evals runner claude-code", "claude-code"),
        ("/usr/local/bin/skill-evals --debug runner codex --model m", "codex"),
        (f"{sys.executable} -m skill_evals runner pi", "pi"),
        ("python3 -m skill_evals runner simulated", None),
        ("skill-evals runner simulated", None),
        ("my-runner runner claude-code", None),
        ("sh -c 'skill-evals runner codex'", None),
        ("", None),
        ("'unbalanced", None),
    ],
)
def test_builtin_agent_runners_are_recognised(command: str, agent: str | None) -> None:
    assert builtin_agent(command) == agent
    assert default_timeout_ms(command) == (300_000 if agent else 30_000)


def test_timeout_default_follows_the_runner_unless_given(tmp_path: Path) -> None:
    def timeout(runner: str, given: int | None = None) -> int:
        options = pipeline.TestOptions(skill=tmp_path, cases=tmp_path, runner=runner)
        if given is not None:
            options = pipeline.TestOptions(
                skill=tmp_path, cases=tmp_path, runner=runner, timeout_ms=given
            )
        return options.settings().timeout_ms

    assert timeout("skill-evals runner codex") == 300_000
    assert timeout("skill-evals runner codex", 5) == 5
    assert timeout("./r") == 30_000


def test_config_key_retries() -> None:
    from skill_evals.ci.config import parse_config
    from skill_evals.errors import InvalidInput

    config = parse_config(b"retries: 5\noverrides: {x: {retries: 0}}\n", "cfg")
    assert config.for_skill("y").retries == 5
    assert config.for_skill("x").retries == 0
    with pytest.raises(InvalidInput, match="retries"):
        parse_config(b"retries: 11\n", "cfg")
