"""One run of a helper program the user names (a judge, a proposer): no shell, the caller's
directory, a JSON payload on stdin, a time bound and a byte cap on stdout + stderr, and its whole
session killed afterwards — the runner's I/O pump and process sweeper."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .helper_cell import HelperCell, Unconfinable
from .processes import ProcessSweeper, engine_children, forget_child, start_piped
from .runner import InvocationSpec, _Pump


@dataclass(frozen=True)
class HelperEnd:
    """How the helper ended: its stdout and exit code, or why it was given up (``failure``)."""

    stdout: bytes
    code: int
    failure: str | None = None


class _HelperPump(_Pump):
    """The runner's pump; when the helper exits, its session and marked processes are killed
    as a helper command's are."""

    mark: str
    before: set[tuple[int, int]]

    def _exited(self) -> None:
        self.child_gone = True
        if self.pidfd >= 0:
            self.sel.unregister(self.pidfd)
        self.sweeper.sweep_helper(self.proc.pid, self.mark, self.before)
        self.deadline = min(self.deadline, time.monotonic() + 0.5)


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal N`` for an unknown number."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class HelperSpec:
    """How a helper runs: its time bound, its cap on stdout + stderr, and its cell (sandbox,
    environment, keys through the proxy)."""

    timeout_ms: int
    max_bytes: int
    cell: HelperCell


def run_confined(
    spec: HelperSpec,
    argv: Sequence[str],
    payload: bytes,
    sweeper: ProcessSweeper,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> HelperEnd:
    """Run ``argv`` once in ``spec``'s cell, ``payload`` on stdin and ``env`` added to the
    cell's environment, and wait for it (bounded); never raises for what the program does.
    ``failure`` names why it could not be confined, a start error, the timeout or the cap."""
    try:
        with spec.cell.confined(argv) as confined:
            env = {**confined.env, **(env or {})}
            return _run(confined.argv, payload, spec, env, sweeper, cancel)
    except Unconfinable as exc:
        return HelperEnd(b"", -1, str(exc))


def _run(
    argv: Sequence[str],
    payload: bytes,
    spec: HelperSpec,
    env: Mapping[str, str],
    sweeper: ProcessSweeper,
    cancel: threading.Event | None,
) -> HelperEnd:
    """Start ``argv`` with ``payload`` on stdin and wait for it (bounded)."""
    timeout_ms, max_bytes = spec.timeout_ms, spec.max_bytes
    before = engine_children()
    try:
        proc = start_piped(argv, env)
    except OSError as exc:
        return HelperEnd(b"", -1, f"cannot start {argv[0]!r}: {exc.strerror or 'error'}")
    except (ValueError, subprocess.SubprocessError) as exc:
        return HelperEnd(b"", -1, f"cannot start {argv[0]!r}: {type(exc).__name__}")
    started = time.monotonic()
    shape = InvocationSpec(tuple(argv), "", {}, "", 0, "with", timeout_ms, max_bytes)
    pump = _HelperPump(proc, payload, started + timeout_ms / 1000.0, shape, cancel, sweeper)
    pump.mark, pump.before = "", before
    try:
        outcome = pump.run()
    finally:
        sweeper.sweep_helper(proc.pid, "", before)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        code = proc.wait()
        forget_child(proc.pid)
    if outcome.failure is not None:
        if outcome.failure.startswith("output exceeded"):
            return HelperEnd(b"", code, f"output exceeded {max_bytes} bytes (stdout + stderr)")
        return HelperEnd(b"", code, outcome.failure)
    return HelperEnd(outcome.stdout, code)
