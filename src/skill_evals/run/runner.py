"""Running one invocation of a runner (docs/runner-contract.md): new process group, stdin
prompt, timeout, byte cap, kill the whole group afterwards, parse the one-line contract
(runner_output.py).

Owner: execution.

One thread does all the I/O of an invocation with a selector over stdin (non-blocking writes),
stdout, stderr and — where the kernel has it — a pidfd that becomes readable when the direct child
exits. Watching the child's exit (not only the pipes' EOF) is what keeps a grandchild that holds
stdout open from blocking us: once the child is gone we kill its group and drain for a moment.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidInput
from . import runner_stderr
from .observations import ContractError, Echo, Observation, RunnerFailure, observation_from
from .processes import ProcessSweeper, identity
from .runner_output import RunnerError, parse_runner_error, parse_stdout

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
    show_stderr: bool = False  # keep stderr's tail for --show-runner-stderr (runner_stderr.py)
    # Looked at every tick: why the invocation must end now (e.g. its workspace grew too
    # large), or None.
    watch: Callable[[], str | None] | None = None


@dataclass(frozen=True)
class InvocationResult:
    """An observation or a failure, and the wall time it took. ``retryable``: the runner said
    its failure is worth another try (rate limit, overload, a 5xx, a dropped connection)."""

    outcome: Observation | RunnerFailure
    elapsed_ms: float
    retryable: bool = False


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
    stderr_tail: bytes | None = None  # its last bytes, kept only for --show-runner-stderr


class _Pump:
    """The I/O of one runner process: its stdin fed, its stdout kept and stderr only counted,
    its exit watched (a pidfd, or a look every tick); ``failure`` once the loop gave up."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        prompt: bytes,
        deadline: float,
        spec: InvocationSpec,
        cancel: threading.Event | None,
        sweeper: ProcessSweeper,
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.spec = spec
        self.cancel = cancel
        self.sweeper = sweeper
        self.deadline = deadline
        self.sel = selectors.DefaultSelector()
        self.out_fd = proc.stdout.fileno()
        self.err_fd = proc.stderr.fileno()
        self.in_fd = proc.stdin.fileno()
        self.pending = memoryview(prompt)
        self.stdout_chunks: list[bytes] = []
        self.stderr_tail = bytearray() if spec.show_stderr else None
        self.total = 0
        self.pidfd = -1
        self.open_pipes = 2
        self.failure: str | None = None
        self.child_gone = False

    def run(self) -> _Outcome:
        """Feed stdin, read stdout/stderr until EOF or the child's exit; enforce timeout and
        cap."""
        try:
            self.open()
            self.loop()
        finally:
            self.sel.close()
            if self.pidfd >= 0:
                os.close(self.pidfd)
        tail = None if self.stderr_tail is None else bytes(self.stderr_tail)
        return _Outcome(b"".join(self.stdout_chunks), self.failure, tail)

    def open(self) -> None:
        """Watch both output pipes, stdin while there is prompt left, and the child's exit."""
        assert self.proc.stdin is not None
        self.sel.register(self.out_fd, selectors.EVENT_READ, "out")
        self.sel.register(self.err_fd, selectors.EVENT_READ, "err")
        if self.pending:
            os.set_blocking(self.in_fd, False)
            self.sel.register(self.in_fd, selectors.EVENT_WRITE, "in")
        else:
            self.proc.stdin.close()
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")
        except (AttributeError, OSError):
            self.pidfd = -1  # no pidfd: look at the child every tick instead

    def loop(self) -> None:
        """Done when both pipes are at EOF and the child has exited (a runner may close its
        stdout and still be working), or on timeout, cap or cancel."""
        # Without cancel or pidfd nothing needs a periodic look.
        looks = self.cancel is not None or self.pidfd < 0 or self.spec.watch is not None
        tick = TICK_SECONDS if looks else None
        while self.open_pipes or not self.child_gone:
            now = time.monotonic()
            if now >= self.deadline:
                if not self.child_gone:
                    self.failure = f"timed out after {self.spec.timeout_ms} ms"
                return
            if self.cancel is not None and self.cancel.is_set():
                self.failure = "interrupted"
                return
            if self.spec.watch is not None and not self.child_gone:
                reason = self.spec.watch()
                if reason is not None:
                    self.failure = reason
                    return
            wait = self.deadline - now
            if tick is not None:
                wait = min(wait, tick)
            events: list[object] = [key.data for key, _mask in self.sel.select(wait)]
            if self.pidfd < 0 and not self.child_gone and _child_exited(self.proc.pid):
                events.append("exit")
            for what in events:
                if what == "in":
                    self._feed()
                elif what == "exit":
                    self._exited()
                elif not self._read(self.out_fd if what == "out" else self.err_fd, what):
                    return

    def _feed(self) -> None:
        """Write the next part of the prompt; close stdin once it is all written."""
        assert self.proc.stdin is not None
        try:
            written = os.write(self.in_fd, self.pending[:READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # BrokenPipe: the runner does not read its stdin
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self.sel.unregister(self.in_fd)
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _exited(self) -> None:
        """The runner is done; whatever it left in its group goes now, and pipes held open from
        outside the group get DRAIN_SECONDS more."""
        self.child_gone = True
        if self.pidfd >= 0:
            self.sel.unregister(self.pidfd)
        self.sweeper.sweep(self.proc.pid, identity(self.spec.env))
        self.deadline = min(self.deadline, time.monotonic() + DRAIN_SECONDS)

    def _read(self, fd: int, what: object) -> bool:
        """Read a chunk of stdout (kept) or stderr (counted for the cap and otherwise discarded:
        never reported); False once the output passed the cap."""
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.sel.unregister(fd)
            self.open_pipes -= 1
            return True
        self.total += len(chunk)
        if self.total > self.spec.max_bytes:
            self.failure = f"output exceeded {self.spec.max_bytes} bytes (stdout + stderr)"
            return False
        if what == "out":
            self.stdout_chunks.append(chunk)
        elif self.stderr_tail is not None:  # a bounded tail, never more
            self.stderr_tail += chunk
            del self.stderr_tail[: -runner_stderr.KEEP_BYTES]
        return True


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
    verdict = _run_once(spec, cancel, sweeper, started)
    elapsed = (time.monotonic() - started) * 1000.0
    if isinstance(verdict, Observation):
        return InvocationResult(verdict, elapsed)
    failure = RunnerFailure(spec.case_id, spec.trial, spec.variant, verdict.reason)
    return InvocationResult(failure, elapsed, verdict.retryable)


def _run_once(
    spec: InvocationSpec,
    cancel: threading.Event | None,
    sweeper: ProcessSweeper,
    started: float,
) -> Observation | RunnerError:
    """Start the runner, pump its I/O, clean up after it; its observation or why it failed."""
    if cancel is not None and cancel.is_set():
        return RunnerError("interrupted", False)
    if not spec.argv:
        return RunnerError("cannot start: the runner command is empty", False)
    try:
        proc = sweeper.spawn(spec.argv, spec.env)
    except OSError as exc:
        reason = f"cannot start {spec.argv[0]!r}: {exc.strerror or type(exc).__name__}"
        return RunnerError(reason, False)
    except (ValueError, subprocess.SubprocessError) as exc:  # e.g. a NUL byte in an argument
        return RunnerError(f"cannot start {spec.argv[0]!r}: {type(exc).__name__}", False)
    deadline = started + spec.timeout_ms / 1000.0
    try:
        outcome = _Pump(proc, spec.prompt.encode("utf-8"), deadline, spec, cancel, sweeper).run()
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
        verdict: Observation | RunnerError = RunnerError(outcome.failure, False)
    else:
        verdict = _answer(spec, outcome.stdout, returncode)
    tail = outcome.stderr_tail
    if isinstance(verdict, RunnerError) and tail is not None and outcome.failure != "interrupted":
        runner_stderr.offer(spec.case_id, spec.trial, spec.variant, tail)
    return verdict


def _answer(spec: InvocationSpec, stdout: bytes, returncode: int) -> Observation | RunnerError:
    """What a runner that ran to the end answered: its own reason, a bad exit, a contract
    breach, or its observation."""
    reported = parse_runner_error(stdout)  # whatever the exit status
    if reported is not None:
        return reported
    if returncode < 0:
        return RunnerError(f"killed by signal {_signal_name(-returncode)}", False)
    if returncode > 0:
        return RunnerError(
            f"exited with code {returncode} (a runner must exit 0; exitCode carries the task's)",
            False,
        )
    try:
        fields = parse_stdout(stdout, spec.variant)
    except ContractError as exc:
        return RunnerError(str(exc), False)
    return observation_from(fields, (spec.case_id, spec.trial, spec.variant))


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


def split_command(command: str, option: str = "--runner") -> Sequence[str]:
    """shlex.split a command option's string; InvalidInput (exit 5) naming ``option`` when it
    is empty or its quotes are unbalanced."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        why = f"cannot split the command ({exc}); check its quotes"
        raise InvalidInput(f"{option}: {why}") from None
    if not argv:
        raise InvalidInput(f"{option}: the command is empty; give a program and its arguments")
    return tuple(argv)
