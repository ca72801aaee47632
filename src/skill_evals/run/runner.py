"""Running one invocation of a runner (docs/runner-contract.md): new process group, stdin
prompt, timeout, byte cap, kill the whole group afterwards, parse the one-line contract.

Owner: execution.

One thread does all the I/O of an invocation with a selector over stdin (non-blocking writes),
stdout, stderr and — where the kernel has it — a pidfd that becomes readable when the direct child
exits. Watching the child's exit (not only the pipes' EOF) is what keeps a grandchild that holds
stdout open from blocking us: once the child is gone we kill its group and drain for a moment.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..suite.jsonl import loads_strict
from .observations import ContractError, Echo, Observation, RunnerFailure, parse_runner_object
from .processes import ProcessSweeper, identity

READ_CHUNK = 65_536
# After the direct child has exited (and its group was killed), how long to keep reading pipes
# that something outside the group may still hold open.
DRAIN_SECONDS = 0.5
# How often a waiting invocation looks at ``cancel`` (and, without pidfd, at the child).
TICK_SECONDS = 0.05


@dataclass(frozen=True)
class InvocationSpec:
    """Everything needed to run the runner once."""

    argv: tuple[str, ...]  # shlex.split(--runner)
    prompt: str
    env: Mapping[str, str]  # full environment (caller's + EVALGATE_SKILL_*)
    case_id: str
    trial: int
    variant: Echo  # what the runner is told and must echo (a baseline run is a with-run)
    timeout_ms: int
    max_bytes: int


@dataclass(frozen=True)
class InvocationResult:
    """An observation or a failure, and the wall time it took. ``retryable``: the runner said
    its failure is worth another try (rate limit, overload, a 5xx, a dropped connection)."""

    outcome: Observation | RunnerFailure
    elapsed_ms: float
    retryable: bool = False


# A runner's own reason: {"runnerError": "<text>", "retryable": true|false} instead of an answer.
RUNNER_ERROR_KEYS = ("runnerError", "retryable")
RUNNER_REASON_CHARS = 300
_RUNNER_ERROR_SHAPE = (
    'stdout: a runnerError line must be {"runnerError": "<text>", "retryable": true|false}'
)


@dataclass(frozen=True)
class RunnerError:
    """What a runner said about its own failure: the reason (``runner: <text>``) and whether
    the same invocation may be tried again."""

    reason: str
    retryable: bool


def runner_reason(text: str) -> str:
    """``runner: <text>`` on one line, cut at RUNNER_REASON_CHARS: blanks (line breaks and tabs
    included) collapse to one space, and every control, format or separator character is
    written ``\\uXXXX`` (the one rule of every output), so the reason is safe for terminals and
    annotations and hides nothing."""
    from ..escaping.terminal import terminal_safe

    cleaned = terminal_safe(_BLANKS.sub(" ", text).strip(" "))
    while cleaned.lower().startswith("runner:"):  # a reason says "runner:" once
        cleaned = cleaned[len("runner:") :].lstrip()
    if len(cleaned) > RUNNER_REASON_CHARS:
        cleaned = cleaned[: RUNNER_REASON_CHARS - 1] + "…"
    return f"runner: {cleaned or '(no reason given)'}"


# Runs of blanks, U+2028/U+2029 excepted (str.split() counts them as blanks; they are shown).
_BLANKS = re.compile(r"[^\S\u2028\u2029]+")


def parse_runner_error(data: bytes) -> RunnerError | None:
    """The runner's own reason when stdout is one runnerError line, else None (then stdout
    is checked as an observation). A runnerError line of the wrong shape is a failure too."""
    if b'"runnerError"' not in data:
        return None  # the cheap test: every ordinary answer ends here
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removesuffix("\n")
    if "\n" in text:
        return None
    try:
        value = loads_strict(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or "runnerError" not in value:
        return None
    message, retryable = value["runnerError"], value.get("retryable", False)
    if not isinstance(message, str) or not isinstance(retryable, bool):
        return RunnerError(_RUNNER_ERROR_SHAPE, False)
    if any(key not in RUNNER_ERROR_KEYS for key in value):
        return RunnerError(_RUNNER_ERROR_SHAPE, False)
    return RunnerError(runner_reason(message), retryable)


def _child_exited(pid: int) -> bool:
    """True once ``pid`` has exited, without reaping it (so its pid, our pgid, stays reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass
class _Outcome:
    """What the I/O loop saw."""

    stdout: bytes
    failure: str | None  # timeout / cap / interrupted, decided while reading


def _pump(
    proc: subprocess.Popen[bytes],
    prompt: bytes,
    deadline: float,
    spec: InvocationSpec,
    cancel: threading.Event | None,
    sweeper: ProcessSweeper,
) -> _Outcome:
    """Feed stdin, read stdout/stderr until EOF or the child's exit; enforce timeout and cap."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    out_fd = proc.stdout.fileno()
    err_fd = proc.stderr.fileno()
    in_fd = proc.stdin.fileno()
    stdout_chunks: list[bytes] = []
    total = 0
    pidfd = -1
    open_pipes = 2
    failure: str | None = None
    child_gone = False
    try:
        sel.register(out_fd, selectors.EVENT_READ, "out")
        sel.register(err_fd, selectors.EVENT_READ, "err")
        pending = memoryview(prompt)
        if pending:
            os.set_blocking(in_fd, False)
            sel.register(in_fd, selectors.EVENT_WRITE, "in")
        else:
            proc.stdin.close()
        try:
            pidfd = os.pidfd_open(proc.pid)
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        except (AttributeError, OSError):
            pidfd = -1  # no pidfd: look at the child every tick instead
        # Without cancel or pidfd nothing needs a periodic look.
        tick = TICK_SECONDS if (cancel is not None or pidfd < 0) else None
        # Done when both pipes are at EOF and the child has exited (a runner may close its
        # stdout and still be working), or on timeout, cap or cancel.
        while open_pipes or not child_gone:
            now = time.monotonic()
            if now >= deadline:
                if not child_gone:
                    failure = f"timed out after {spec.timeout_ms} ms"
                break
            if cancel is not None and cancel.is_set():
                failure = "interrupted"
                break
            wait = deadline - now
            if tick is not None:
                wait = min(wait, tick)
            events: list[tuple[object, int]] = [(key.data, mask) for key, mask in sel.select(wait)]
            if pidfd < 0 and not child_gone and _child_exited(proc.pid):
                events.append(("exit", selectors.EVENT_READ))
            for what, _mask in events:
                if what == "in":
                    try:
                        written = os.write(in_fd, pending[:READ_CHUNK])
                    except BlockingIOError:
                        continue
                    except OSError:  # BrokenPipe: the runner does not read its stdin
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        sel.unregister(in_fd)
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                elif what == "exit":
                    # The runner is done; whatever it left in its group goes now, and pipes held
                    # open from outside the group get DRAIN_SECONDS more.
                    child_gone = True
                    if pidfd >= 0:
                        sel.unregister(pidfd)
                    sweeper.sweep(proc.pid, identity(spec.env))
                    deadline = min(deadline, time.monotonic() + DRAIN_SECONDS)
                else:
                    fd = out_fd if what == "out" else err_fd
                    try:
                        chunk = os.read(fd, READ_CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        sel.unregister(fd)
                        open_pipes -= 1
                        continue
                    total += len(chunk)
                    if total > spec.max_bytes:
                        failure = f"output exceeded {spec.max_bytes} bytes (stdout + stderr)"
                        break
                    if what == "out":
                        stdout_chunks.append(chunk)
                    # stderr is counted for the cap and otherwise discarded: never reported.
            if failure is not None:
                break
    finally:
        sel.close()
        if pidfd >= 0:
            os.close(pidfd)
    return _Outcome(b"".join(stdout_chunks), failure)


def run_invocation(
    spec: InvocationSpec,
    cancel: threading.Event | None = None,
    sweeper: ProcessSweeper | None = None,
) -> InvocationResult:
    """Run once. Never raises for anything the runner does; always kills what it left
    (its group, its session, its marked descendants: see processes.py).

    ``cancel`` set → kill at once and return a failure with reason "interrupted". ``sweeper``
    is the run's (execute() passes one that is a child subreaper); by default a fresh one."""
    sweeper = sweeper if sweeper is not None else ProcessSweeper()
    started = time.monotonic()

    def fail(reason: str, retryable: bool = False) -> InvocationResult:
        failure = RunnerFailure(spec.case_id, spec.trial, spec.variant, reason)
        return InvocationResult(failure, (time.monotonic() - started) * 1000.0, retryable)

    if cancel is not None and cancel.is_set():
        return fail("interrupted")
    if not spec.argv:
        return fail("cannot start: the runner command is empty")
    try:
        proc = sweeper.spawn(spec.argv, spec.env)
    except OSError as exc:
        return fail(f"cannot start {spec.argv[0]!r}: {exc.strerror or type(exc).__name__}")
    except (ValueError, subprocess.SubprocessError) as exc:  # e.g. a NUL byte in an argument
        return fail(f"cannot start {spec.argv[0]!r}: {type(exc).__name__}")
    deadline = started + spec.timeout_ms / 1000.0
    try:
        outcome = _pump(proc, spec.prompt.encode("utf-8"), deadline, spec, cancel, sweeper)
    finally:
        # Always: whatever the runner left behind dies, then the runner itself is reaped.
        sweeper.sweep(proc.pid, identity(spec.env))
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        returncode = proc.wait()
        sweeper.release(proc.pid)
    if outcome.failure is not None:
        return fail(outcome.failure)
    reported = parse_runner_error(outcome.stdout)  # whatever the exit status
    if reported is not None:
        return fail(reported.reason, reported.retryable)
    if returncode < 0:
        return fail(f"killed by signal {_signal_name(-returncode)}")
    if returncode > 0:
        return fail(
            f"exited with code {returncode} (a runner must exit 0; exitCode carries the task's)"
        )
    try:
        fields = parse_stdout(outcome.stdout, spec.variant)
    except ContractError as exc:
        return fail(str(exc))
    observation = Observation(
        case_id=spec.case_id,
        trial=spec.trial,
        variant=spec.variant,
        invoked_skills=fields["invoked_skills"],
        output=fields["output"],
        exit_code=fields["exit_code"],
        meta=fields["meta"],
        evidence=fields.get("evidence", ()),
        tool_calls=fields["tool_calls"],
        warnings=fields.get("warnings", ()),
    )
    return InvocationResult(observation, (time.monotonic() - started) * 1000.0)


def parse_stdout(data: bytes, variant: Echo) -> dict[str, Any]:
    """Check a runner's stdout: one strict-JSON object line (one final ``\\n`` allowed).

    Returns parse_runner_object's fields; raises ContractError with a reason free of the output."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError(f"stdout is not valid UTF-8 (byte {exc.start})") from None
    if text.endswith("\n"):
        text = text[:-1]
    if not text.strip():
        raise ContractError("stdout is empty; expected one JSON object line")
    if "\n" in text:
        raise ContractError(
            f"stdout has more than one line ({text.count(chr(10)) + 1}); expected one JSON "
            "object line (write logs to stderr)"
        )
    try:
        value = loads_strict(text)
    except ValueError as exc:
        # loads_strict says "invalid JSON: <why>" for syntax errors; say "JSON" only once.
        reason = str(exc).removeprefix("invalid JSON: ")
        raise ContractError(f"stdout is not strict JSON: {reason}") from None
    try:
        return parse_runner_object(value, variant)
    except ContractError as exc:
        raise ContractError(f"stdout: {exc}") from None


def invocation_env(
    base: Mapping[str, str], variant: Echo, skill_dir: str, case_id: str, trial: int
) -> dict[str, str]:
    """The caller's environment plus the four EVALGATE_SKILL_* variables."""
    env = dict(base)
    env["EVALGATE_SKILL_VARIANT"] = variant
    env["EVALGATE_SKILL_DIR"] = skill_dir
    env["EVALGATE_SKILL_CASE_ID"] = case_id
    env["EVALGATE_SKILL_TRIAL"] = str(trial)
    return env


def split_command(command: str) -> Sequence[str]:
    """shlex.split the --runner string; InvalidInput (exit 5) when empty or unbalanced quotes."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidInput(
            f"--runner: cannot split the command ({exc}); check its quotes"
        ) from None
    if not argv:
        raise InvalidInput("--runner: the command is empty; give a program and its arguments")
    return tuple(argv)
