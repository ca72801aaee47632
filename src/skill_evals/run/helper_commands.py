"""Helper commands the engine runs itself (case ``setup`` commands, ``command`` checks):
no shell, stdin ``/dev/null``, output discarded, a time bound, and their whole session killed
afterwards (with the runners' process sweeper) so nothing they started survives.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.binds import BindRefused
from ..sandbox.bwrap import Sandbox, startable
from ..sandbox.child_env import credential_like, without_job_secrets
from .processes import (
    HELPER_VAR,
    ProcessSweeper,
    engine_children,
    forget_child,
    start_child,
)

WORKSPACE_VAR = "SKILL_EVALS_WORKSPACE"
_TICK_SECONDS = 0.05


def scrubbed_env(base: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """``base`` without credential-like variables and the job's own (child_env.py), plus
    SKILL_EVALS_WORKSPACE."""
    env = probe_environment(base)
    env[WORKSPACE_VAR] = str(workspace)
    return env


def probe_environment(base: Mapping[str, str]) -> dict[str, str]:
    """What the sandbox probe runs with: the caller's environment without credentials."""
    return {k: v for k, v in without_job_secrets(base).items() if not credential_like(k)}


@dataclass(frozen=True)
class Sight:
    """What of the skills an invocation's children see: ``readable`` the arm's skill
    directories; ``hidden`` directories that stand empty (the tested skill in the
    ``without`` and ``baseline`` arms)."""

    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()


NO_SKILLS = Sight()  # a helper that sees no skill


@dataclass(frozen=True)
class Confinement:
    """Where an invocation's helper commands run: in ``sandbox`` (None: unsandboxed) with the
    invocation's private ``tmp`` and ``home``, seeing the skills ``sight`` allows."""

    sandbox: Sandbox | None = None
    tmp: Path | None = None
    home: Path | None = None
    sight: Sight = field(default_factory=Sight)


def run_helper(
    argv: Sequence[str],
    workspace: Path,
    base_env: Mapping[str, str],
    timeout_seconds: float,
    cancel: threading.Event | None = None,
    confinement: Confinement | None = None,
    by: str = "command",
) -> Finished:
    """A setup command or a ``command`` check (``by``: setup or command): ``{workspace}``
    substituted, run in W with the scrubbed environment, sandboxed when the run is (its private
    TMPDIR and HOME then, and the network its sandbox has). Its argv comes from a case file: it
    binds nothing; it sees W, the arm's skill directories and the ``--sandbox-path`` paths."""
    argv = substitute(argv, workspace)
    env = scrubbed_env(base_env, workspace)
    sandbox = confinement.sandbox if confinement is not None else None
    if sandbox is not None and confinement is not None:
        writable = [workspace]
        for name, path in (("TMPDIR", confinement.tmp), ("HOME", confinement.home)):
            if path is not None:
                env[name] = str(path)
                writable.append(path)
        places = [str(workspace), *confinement.sight.readable]
        if argv and sandbox.unseen_program(argv[0], str(workspace), env, places):
            # Said plainly, rather than as a bare exit code of bwrap; never where it is.
            return Finished(
                problem=f"cannot start {argv[0][:200]!r} in the sandbox: it is outside the "
                "system directories, the workspace and the skill; give it with --sandbox-path"
            )
        if argv and startable(argv[0], str(workspace), env):
            channel = sandbox.channel(by)
            env.update(sandbox.network_env())
            try:
                argv = sandbox.command(
                    argv, env, str(workspace), writable, confinement.sight.readable,
                    trusted=False, hidden=confinement.sight.hidden, channel=channel,
                )  # fmt: skip
                return run_quiet(argv, workspace, env, timeout_seconds, cancel)
            except BindRefused as exc:
                return Finished(problem=f"sandbox: {exc}")
            finally:
                if channel is not None:
                    channel.close()
    return run_quiet(argv, workspace, env, timeout_seconds, cancel)


def substitute(argv: Sequence[str], workspace: Path) -> list[str]:
    """``{workspace}`` in any argument becomes the workspace's absolute path."""
    return [arg.replace("{workspace}", str(workspace)) for arg in argv]


@dataclass(frozen=True)
class Finished:
    """How a helper command ended. Exactly one of ``returncode`` (negative: killed by that
    signal) and ``problem`` (could not start, timed out, interrupted) is set."""

    returncode: int | None = None
    problem: str | None = None


def run_quiet(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_seconds: float,
    cancel: threading.Event | None = None,
) -> Finished:
    """Run ``argv`` in ``cwd`` without a shell, in a new session, stdin from /dev/null and its
    output discarded (never stored or reported); kill the session when it ends, times out or
    ``cancel`` is set."""
    if cancel is not None and cancel.is_set():
        return Finished(problem="interrupted")
    started = time.monotonic()
    # What it leaves is found by this mark (in its descendants' environment) and, for those
    # that drop it, as orphans reparented to the engine since now.
    mark = secrets.token_hex(16)
    before = engine_children()
    try:
        proc = start_child(
            lambda: subprocess.Popen(
                list(argv),
                cwd=cwd,
                env={**env, HELPER_VAR: mark},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        )
    except OSError as exc:
        return Finished(problem=f"cannot start {argv[0]!r}: {exc.strerror or type(exc).__name__}")
    except (ValueError, subprocess.SubprocessError) as exc:
        return Finished(problem=f"cannot start {argv[0]!r}: {type(exc).__name__}")
    deadline = started + timeout_seconds
    try:
        problem = _wait_exit(proc.pid, deadline, timeout_seconds, cancel)
    finally:
        # The child is not reaped yet (WNOWAIT), so its pid — the session id — stays reserved
        # until everything in the session is gone.
        ProcessSweeper().sweep_helper(proc.pid, mark, before)
        code = proc.wait()
        forget_child(proc.pid)
    return Finished(problem=problem) if problem is not None else Finished(returncode=code)


def _exited(pid: int) -> bool:
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait_exit(
    pid: int, deadline: float, timeout_seconds: float, cancel: threading.Event | None
) -> str | None:
    """Wait until ``pid`` exits (without reaping it); a problem when it does not in time."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while not _exited(pid):
            if cancel is not None and cancel.is_set():
                return "interrupted"
            left = deadline - time.monotonic()
            if left <= 0:
                return f"timed out after {round(timeout_seconds * 1000)} ms"
            wait = min(left, _TICK_SECONDS) if (cancel is not None or pidfd < 0) else left
            if pidfd >= 0:
                select.select([pidfd], [], [], wait)
            else:
                time.sleep(wait)
        return None
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def describe_exit(finished: Finished) -> str:
    """``exited with code 3`` / ``killed by signal SIGSEGV`` / the problem."""
    if finished.problem is not None:
        return finished.problem
    code = finished.returncode
    assert code is not None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by signal {name}"
    return f"exited with code {code}"
