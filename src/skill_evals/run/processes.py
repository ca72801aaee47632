"""Nothing a runner starts survives its invocation.

The runner is started as a session leader (``setsid``: its pid is its session and process group
id). After the invocation the engine kills

1. its process group (``killpg``), then, where ``/proc`` exists (Linux),
2. every process of its session — also those that moved to another group, as under ``timeout``
   or a shell's ``set -m`` job control,
3. every descendant of the engine that carries this invocation's ``EVALGATE_SKILL_*`` variables
   in its environment — on Linux the engine is a *child subreaper* while invocations run
   (``PR_SET_CHILD_SUBREAPER``), so a process that left the session with ``setsid`` is
   reparented to the engine when its parent dies, and stays reachable,
4. every process found below one of those,

and reaps the ones that became its own children, so none is left a zombie. When the last
invocation has ended, anything else that was reparented to the engine meanwhile is killed and
reaped too (a process that left the session *and* cleared its environment). So a process the
engine itself starts while invocations run must end before :meth:`ProcessSweeper.running`
is left. What remains outside the guarantee is documented in docs/runner-contract.md.

The engine's helper commands (setup commands, verifiers) get the same end, at once when each
ends (:meth:`ProcessSweeper.sweep_helper`): their session and group, the processes carrying
their own mark (HELPER_VAR), and the orphans reparented to the engine while they ran. Every
process the engine starts itself is registered (:func:`start_child`), so none is mistaken for
an orphan.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from .proc_table import PROC, Proc, descendants, read_stat, scan

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
# Kill rounds per sweep: a process forked between a scan and the kill is caught by the next.
_ROUNDS = 8
# How long a sweep waits for killed children to become reapable.
_REAP_SECONDS = 1.0
_ENVIRON_CAP = 4 << 20  # bytes of /proc/PID/environ read at most
IDENTITY_VARS = (
    "EVALGATE_SKILL_DIR",
    "EVALGATE_SKILL_CASE_ID",
    "EVALGATE_SKILL_TRIAL",
    "EVALGATE_SKILL_VARIANT",
)


def _identity_of(pid: int) -> tuple[str, ...] | None:
    """The EVALGATE_SKILL_* values in the environment ``pid`` started with, if readable."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            data = handle.read(_ENVIRON_CAP)
    except OSError:
        return None
    values: dict[bytes, bytes] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name.startswith(b"EVALGATE_SKILL_"):
            values[name] = value
    found = tuple(values.get(n.encode(), b"").decode("utf-8", "replace") for n in IDENTITY_VARS)
    return found if any(found) else None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts: it cannot be signalled,
    but it is there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def identity(env: Mapping[str, str]) -> tuple[str, ...]:
    """The values that mark an invocation's processes (``env`` is the runner's environment)."""
    return tuple(env.get(name, "") for name in IDENTITY_VARS)


HELPER_VAR = "SKILL_EVALS_HELPER_ID"  # marks a setup command's or verifier's processes

# The engine's own children that are not leftovers: every runner and helper process it starts
# registers here while it lives, so a helper's sweep never mistakes one started meanwhile (by
# a concurrent invocation) for a process its command left behind.
_CHILDREN: set[int] = set()
_CHILDREN_LOCK = threading.Lock()


_P = TypeVar("_P", bound="subprocess.Popen[bytes]")


def start_child(start: Callable[[], _P]) -> _P:
    """Start a process of the engine's own with ``start()`` and register it until
    :func:`forget_child`; a helper's sweep never sees it unregistered."""
    with _CHILDREN_LOCK:
        proc = start()
        _CHILDREN.add(proc.pid)
    return proc


def start_piped(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` with :func:`start_child` as a session leader (pid == sid == pgid), its
    stdin, stdout and stderr unbuffered pipes."""
    return start_child(
        lambda: subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
            bufsize=0,
        )
    )


def forget_child(pid: int) -> None:
    """``pid``, registered with :func:`register_child`, has been reaped."""
    with _CHILDREN_LOCK:
        _CHILDREN.discard(pid)


def _helper_mark(pid: int) -> bytes | None:
    """The HELPER_VAR value in the environment ``pid`` started with, if any."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            data = handle.read(_ENVIRON_CAP)
    except OSError:
        return None
    key = HELPER_VAR.encode() + b"="
    for entry in data.split(b"\0"):
        if entry.startswith(key):
            return entry[len(key) :]
    return None


def engine_children() -> set[tuple[int, int]]:
    """(pid, start time) of the engine's children now: what a helper's sweep leaves alone."""
    engine = os.getpid()
    return {(p.pid, p.start) for p in scan().values() if p.ppid == engine}


def _kill(proc: Proc) -> None:
    """SIGKILL ``proc`` unless its pid now names another process (checked through a pidfd)."""
    pidfd = -1
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        current = read_stat(proc.pid)
        if current is None or current.start != proc.start:
            return  # gone, or the pid was reused
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pidfd >= 0:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


class ProcessSweeper:
    """Starts runners and kills what each invocation left behind. One per run; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine = os.getpid()
        self._runners: set[int] = set()  # live runners: reaped by their Popen, never here
        self._before: set[int] = set()  # the engine's descendants when the run started

    def spawn(self, argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start a runner as a session leader with piped stdin/stdout/stderr."""
        with self._lock:  # a sweep never mistakes a runner being born for a leftover
            proc = start_piped(argv, env)
            self._runners.add(proc.pid)
            return proc

    def release(self, pid: int) -> None:
        """The runner ``pid`` has been reaped by its Popen."""
        with self._lock:
            self._runners.discard(pid)
        forget_child(pid)

    def sweep(self, runner: int, marks: tuple[str, ...]) -> None:
        """Kill the runner's group and, where /proc exists, everything its invocation left:
        its session, descendants of the engine carrying ``marks``, and whatever runs below
        those. Reaps what became the engine's children."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(runner, signal.SIGKILL)
        with self._lock:
            for _ in range(_ROUNDS):
                procs = scan()
                if not procs:
                    return
                targets = self._targets(procs, runner, marks)
                if not targets:
                    break
                for pid in targets:
                    if procs[pid].state != "Z":
                        _kill(procs[pid])
                self._reap(targets)
        self.reap_sandbox_zombies()

    def reap_sandbox_zombies(self) -> None:
        """Reap exited inner ``bwrap`` processes reparented to the engine (a subreaper): each
        sandbox's outer bwrap ends before its pid-1 child is reaped, leaving it to us."""
        with self._lock, _CHILDREN_LOCK:  # the order spawn() takes them in
            mine = _CHILDREN | self._runners
            found = [p for p in scan().values() if p.ppid == self._engine and p.comm == b"bwrap"]
        for pid in (p.pid for p in found if p.state == "Z" and p.pid not in mine):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)

    def _targets(self, procs: Mapping[int, Proc], runner: int, marks: tuple[str, ...]) -> set[int]:
        others = self._runners - {runner}
        mine = descendants(procs, [self._engine]) - descendants(procs, sorted(others)) - others
        targets = {p.pid for p in procs.values() if runner in (p.sid, p.pgid)}
        targets |= {pid for pid in mine if pid not in targets and _identity_of(pid) == marks}
        targets |= descendants(procs, sorted(targets))
        targets -= {runner, self._engine, *others}
        return targets

    def sweep_helper(self, pid: int, mark: str, before: set[tuple[int, int]]) -> None:
        """Kill everything a helper command (a setup command, a verifier) left: its group and
        session, the engine's descendants carrying its HELPER_VAR ``mark``, and (the engine
        being a subreaper, Linux) every process reparented to the engine since ``before``
        (:func:`engine_children` when it started) that is neither one the engine started nor
        marked as another invocation's or helper's; then whatever runs below those."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        token = mark.encode()
        with self._lock:
            for _ in range(_ROUNDS):
                with _CHILDREN_LOCK:  # no child of the engine's is half-registered now
                    procs = scan()
                    keep = {pid, self._engine, *_CHILDREN}
                if not procs:
                    return
                targets = self._helper_targets(procs, pid, token, before, keep) - keep
                if not targets:
                    break
                for target in targets:
                    if procs[target].state != "Z":
                        _kill(procs[target])
                self._reap(targets)
        self.reap_sandbox_zombies()

    def _helper_targets(
        self,
        procs: Mapping[int, Proc],
        pid: int,
        token: bytes,
        before: set[tuple[int, int]],
        keep: set[int],
    ) -> set[int]:
        targets = {p.pid for p in procs.values() if pid in (p.sid, p.pgid)}
        for proc in (procs[d] for d in descendants(procs, [self._engine])):
            found = _helper_mark(proc.pid)
            if found == token:
                targets.add(proc.pid)
                continue
            # A child the engine started itself (another judge's bwrap, say) is no orphan, and
            # neither is anything below it.
            orphan = proc.ppid == self._engine and (proc.pid, proc.start) not in before
            orphan = orphan and proc.pid not in keep
            if orphan and found is None and _identity_of(proc.pid) is None:
                targets.add(proc.pid)  # reparented to us meanwhile, no one else's mark
        return targets | descendants(procs, sorted(targets))

    def _reap(self, pids: set[int]) -> None:
        """Reap those of ``pids`` that are (or become, once killed) the engine's children."""
        deadline = time.monotonic() + _REAP_SECONDS
        pending = {pid for pid in pids if pid not in self._runners}
        while pending:
            for pid in list(pending):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    # Not our child: gone, reaped by its parent, or about to be reparented to
                    # us (its parent was killed in the same round). Wait while it exists.
                    now = read_stat(pid)
                    if now is None or (now.state == "Z" and now.ppid != self._engine):
                        pending.discard(pid)  # gone, or a zombie only its parent can reap
                    continue
                if done:
                    pending.discard(pid)
            if not pending or time.monotonic() >= deadline:
                return
            time.sleep(0.005)

    def sweep_leftovers(self) -> None:
        """After the last invocation: kill and reap every descendant of the engine that appeared
        during the run (what left the session and cleared its environment)."""
        with self._lock:
            for _ in range(_ROUNDS):
                procs = scan()
                ours = descendants(procs, [self._engine])
                old = self._before | descendants(procs, sorted(self._before & ours))
                targets = ours - old - self._runners
                if not targets:
                    return
                for pid in targets:
                    if procs[pid].state != "Z":
                        _kill(procs[pid])
                self._reap(targets)

    @contextlib.contextmanager
    def running(self) -> Iterator[ProcessSweeper]:
        """While inside, the engine is a child subreaper (Linux); leftovers are swept on exit."""
        self._before = descendants(scan(), [self._engine])
        previous = _subreaper(True)
        try:
            yield self
        finally:
            try:
                self.sweep_leftovers()
            finally:
                if previous is not None and not previous:
                    _subreaper(False)


def _subreaper(on: bool) -> bool | None:
    """Set PR_SET_CHILD_SUBREAPER; return the previous setting (None: not available)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        previous = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0) != 0:
            return None
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return bool(previous.value)
