"""run_invocation against misbehaving runners: every fault is a RunnerFailure
with a clear reason that never contains the runner's output, and no process survives."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from skill_evals.errors import InvalidInput
from skill_evals.run.observations import Observation, RunnerFailure, Variant
from skill_evals.run.runner import (
    InvocationSpec,
    invocation_env,
    run_invocation,
    split_command,
)
from skill_evals.run.runner_output import parse_stdout

RUNNERS = Path(__file__).resolve().parents[1] / "runners"
FAULTY = str(RUNNERS / "faulty.py")
MARK = "SECRET-OUTPUT"
PROMPT = "PROMPT-TEXT refund please"


def spec(
    *argv: str,
    variant: Variant = "with",
    timeout_ms: int = 5_000,
    max_bytes: int = 1_000_000,
    prompt: str = PROMPT,
) -> InvocationSpec:
    env = invocation_env(os.environ, variant, str(RUNNERS), "case-1", 2)
    return InvocationSpec(
        argv=tuple(argv),
        prompt=prompt,
        env=env,
        case_id="case-1",
        trial=2,
        variant=variant,
        timeout_ms=timeout_ms,
        max_bytes=max_bytes,
    )


def faulty(mode: str, *args: str, **kw: object) -> InvocationSpec:
    return spec(sys.executable, FAULTY, mode, *args, **kw)  # type: ignore[arg-type]


def failure_of(s: InvocationSpec, cancel: threading.Event | None = None) -> str:
    result = run_invocation(s, cancel)
    outcome = result.outcome
    assert isinstance(outcome, RunnerFailure), outcome
    assert (outcome.case_id, outcome.trial, outcome.variant) == (s.case_id, s.trial, s.variant)
    assert MARK not in outcome.reason
    assert "PROMPT-TEXT" not in outcome.reason
    # A path in the reason is the user's (a long TMPDIR makes it long): the rest is bounded.
    assert len(outcome.reason.replace(tempfile.gettempdir(), "TMP")) < 200
    return outcome.reason


def assert_dead(pid: int) -> None:
    # The group was SIGKILLed; give the kernel a moment to finish the kill.
    give_up = time.monotonic() + 2.0
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A zombie whose parent (init) has not reaped it yet is dead too.
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return
        if state in ("Z", "X"):
            return
        assert time.monotonic() < give_up, f"process {pid} survived the run"
        time.sleep(0.02)


def test_valid_runner_gives_observation() -> None:
    result = run_invocation(faulty("echo", "7"))
    obs = result.outcome
    assert isinstance(obs, Observation)
    assert obs.output == PROMPT  # stdin carried the prompt
    assert obs.exit_code == 7  # the task's exit code, not the process's
    assert obs.key == ("case-1", 2, "with")
    assert obs.invoked_skills == ()
    assert result.elapsed_ms > 0


def test_prompt_is_utf8_on_stdin() -> None:
    prompt = "Rückerstattung — ¿reembolso? 退款 \u2028 ok"
    obs = run_invocation(faulty("echo", prompt=prompt)).outcome
    assert isinstance(obs, Observation)
    assert obs.output == prompt


def test_meta_recognised_keys_kept_others_ignored() -> None:
    result = run_invocation(spec(sys.executable, str(RUNNERS / "good.py"), "--invoke", "x"))
    obs = result.outcome
    assert isinstance(obs, Observation)
    assert dict(obs.meta) == {"durationMs": 5, "costUsd": 0.25}
    assert obs.invoked_skills == ("x",)


def test_env_variables_reach_runner(tmp_path: Path) -> None:
    code = (
        "import json, os; e = os.environ; print(json.dumps({'variant': e['EVALGATE_SKILL_VARIANT'],"
        " 'invokedSkills': [], 'output': '|'.join([e['EVALGATE_SKILL_DIR'],"
        " e['EVALGATE_SKILL_CASE_ID'], e['EVALGATE_SKILL_TRIAL']]), 'exitCode': 0}))"
    )
    obs = run_invocation(spec(sys.executable, "-c", code, variant="without")).outcome
    assert isinstance(obs, Observation)
    assert obs.output == f"{RUNNERS}|case-1|2"
    assert obs.variant == "without"


def test_hang_times_out_quickly() -> None:
    start = time.monotonic()
    reason = failure_of(faulty("hang", timeout_ms=300))
    assert reason == "timed out after 300 ms"
    assert time.monotonic() - start < 3.0


def test_grandchild_holding_stdout_does_not_block_and_dies(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    start = time.monotonic()
    result = run_invocation(faulty("grandchild", str(pidfile), timeout_ms=10_000))
    elapsed = time.monotonic() - start
    # The runner itself answered and exited 0: a valid observation, not a 10 s wait.
    assert isinstance(result.outcome, Observation)
    assert elapsed < 3.0
    assert_dead(int(pidfile.read_text()))


def test_grandchild_killed_on_timeout(tmp_path: Path) -> None:
    code = (
        "import subprocess, sys, time; "
        f"c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(c.pid)); time.sleep(60)"
    )
    reason = failure_of(spec(sys.executable, "-c", code, timeout_ms=800))
    assert reason == "timed out after 800 ms"
    assert_dead(int((tmp_path / "pid").read_text()))


def test_hundred_megabytes_capped_fast() -> None:
    start = time.monotonic()
    reason = failure_of(faulty("flood", max_bytes=1_000_000, timeout_ms=20_000))
    assert reason == "output exceeded 1000000 bytes (stdout + stderr)"
    assert time.monotonic() - start < 3.0


def test_stderr_counts_toward_cap() -> None:
    reason = failure_of(faulty("stderr-flood", max_bytes=100_000, timeout_ms=20_000))
    assert reason.startswith("output exceeded 100000 bytes")


def test_invalid_utf8() -> None:
    assert failure_of(faulty("badutf8")).startswith("stdout is not valid UTF-8")


def test_binary_garbage() -> None:
    reason = failure_of(faulty("binary"))
    assert reason.startswith("stdout is not valid UTF-8") or "more than one line" in reason


def test_two_lines() -> None:
    reason = failure_of(faulty("twolines"))
    assert reason.startswith("stdout has more than one line")


def test_wrong_variant() -> None:
    reason = failure_of(faulty("wrongvariant"))
    assert "variant mismatch" in reason
    assert "'without'" in reason and "'with'" in reason


def test_killed_by_signal() -> None:
    assert failure_of(faulty("selfkill")) == "killed by signal SIGTERM"


def test_exit_nonzero() -> None:
    reason = failure_of(faulty("exit", "4"))
    assert reason.startswith("exited with code 4")


def test_cannot_start(tmp_path: Path) -> None:
    reason = failure_of(spec(str(tmp_path / "no-such-runner")))
    assert reason.startswith("cannot start")
    assert "No such file or directory" in reason


def test_cannot_start_odd_argv() -> None:
    assert failure_of(spec()) == "cannot start: the runner command is empty"
    assert failure_of(spec(sys.executable, "a\0b")).startswith("cannot start")


def test_cannot_start_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "runner.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    reason = failure_of(spec(str(script)))
    assert reason.startswith("cannot start") and "Permission denied" in reason


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("extrakey", "stdout: an extra key; the only keys allowed are variant, invokedSkills"),
        ("missingkey", "stdout: missing key 'exitCode'"),
        ("boolcode", "stdout: wrong-typed key 'exitCode'"),
        ("badmeta", "stdout: wrong-typed key 'meta.costUsd'"),
        ("array", "stdout: not a JSON object (got array)"),
        ("notjson", "stdout is not strict JSON"),
        ("nan", "stdout is not strict JSON"),
        ("empty", "stdout is empty"),
    ],
)
def test_contract_violations(mode: str, expected: str) -> None:
    assert failure_of(faulty(mode)).startswith(expected)


@pytest.mark.parametrize("mode", ["extrakey", "promptkey", "dupkey"])
def test_reasons_never_quote_stdout_not_even_a_key_name(mode: str) -> None:
    prompt = "refund-question-from-the-private-prompt"
    reason = failure_of(faulty(mode, prompt=prompt))
    for text in (prompt, "verdict", "secretfield", "SECRET-OUTPUT"):
        assert text not in reason
    assert reason.startswith("stdout")


def test_runner_that_ignores_stdin_with_huge_prompt() -> None:
    # 5 MB prompt, never read: the writer must not deadlock, the answer still counts.
    result = run_invocation(faulty("nostdin", prompt="p" * 5_000_000))
    assert isinstance(result.outcome, Observation)


def test_runner_may_close_stdout_before_exiting() -> None:
    result = run_invocation(faulty("close-then-work"))
    assert isinstance(result.outcome, Observation)
    assert result.elapsed_ms >= 250  # we waited for its exit instead of killing it


def test_cancel_kills_at_once() -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    start = time.monotonic()
    try:
        assert failure_of(faulty("hang", timeout_ms=30_000), cancel) == "interrupted"
    finally:
        timer.cancel()
    assert time.monotonic() - start < 2.0


def test_parse_stdout_accepts_one_final_newline_only() -> None:
    line = b'{"variant":"with","invokedSkills":[],"output":"x","exitCode":0}'
    assert parse_stdout(line, "with")["output"] == "x"
    assert parse_stdout(line + b"\n", "with")["output"] == "x"
    with pytest.raises(ValueError, match="more than one line"):
        parse_stdout(line + b"\n\n", "with")


def test_split_command() -> None:
    assert list(split_command("python3 'my runner.py' --x \"$HOME\" | cat")) == [
        "python3",
        "my runner.py",
        "--x",
        "$HOME",
        "|",
        "cat",
    ]
    for bad in ("", "   ", "python 'unbalanced"):
        with pytest.raises(InvalidInput, match="--runner"):
            split_command(bad)


def test_no_shell_metacharacters_interpreted(tmp_path: Path) -> None:
    target = tmp_path / "should-not-exist"
    argv = split_command(f"{sys.executable} {FAULTY} echo > {target}")
    # "echo" mode gets ">" as its exit-code argument → the runner crashes: nothing redirected.
    failure_of(spec(*argv))
    assert not target.exists()


def test_overhead_is_small() -> None:
    """Not a benchmark (benchmarks/ measures the ratio); a guard against a gross regression
    such as a fixed sleep per invocation."""
    import subprocess

    argv = [
        "/bin/sh",
        "-c",
        'echo \'{"variant":"with","invokedSkills":[],"output":"","exitCode":0}\'',
    ]
    s = spec(*argv)
    bare = []
    ours = []
    for _ in range(10):
        t = time.perf_counter()
        subprocess.run(argv, input=b"x", capture_output=True, check=True)
        bare.append(time.perf_counter() - t)
        t = time.perf_counter()
        assert isinstance(run_invocation(s).outcome, Observation)
        ours.append(time.perf_counter() - t)
    assert min(ours) - min(bare) < 0.05
