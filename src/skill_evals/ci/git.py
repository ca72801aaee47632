"""Running git for change detection: every command bounded in time (GIT_TIMEOUT_S, the whole
process group killed at the deadline) and in output (MAX_GIT_OUTPUT), never prompting; and
resolving the commit a ref names, fetched from ``origin`` in a shallow clone.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import InvalidInput

GIT_TIMEOUT_S = 300
MAX_GIT_OUTPUT = 256 * 1024 * 1024
HEX_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


class GitError(Exception):
    """A git command failed; str() is safe to print (git's own stderr is not included)."""


def _git_env() -> dict[str, str]:
    # Never wait for a person: no credential prompt, no pager, no editor.
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "true"}


class GitDeadline:
    """Kills a git process group at a deadline: `git fetch` runs helpers that hold the pipes
    open, so killing git alone (what subprocess.run's timeout does) could leave a read hanging."""

    def __init__(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        self.proc = proc
        self.seconds = seconds
        self.fired = False
        self._timer = threading.Timer(seconds, self.kill)
        self._timer.daemon = True
        self._timer.start()

    def kill(self) -> None:
        """Kill the process group now (also what the deadline does)."""
        self.fired = True
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def cancel(self) -> None:
        """The process ended in time: no kill."""
        self._timer.cancel()


@contextlib.contextmanager
def git_process(
    root: Path, args: list[str], stdin: int
) -> Iterator[tuple[subprocess.Popen[bytes], GitDeadline]]:
    """``git ARGS`` in its own process group (stdout piped, stderr dropped) with its deadline;
    on leaving, stdout is closed and a process still running is killed, then reaped."""
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=root,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_git_env(),
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(f"git {args[0]}: {type(exc).__name__}") from None
    deadline = GitDeadline(proc, GIT_TIMEOUT_S)
    try:
        yield proc, deadline
    finally:
        deadline.cancel()
        assert proc.stdout is not None
        proc.stdout.close()
        if proc.poll() is None:
            deadline.kill()
        proc.wait()


def run_git(root: Path, *args: str) -> bytes:
    """git's stdout; bounded in time (GIT_TIMEOUT_S) and size (MAX_GIT_OUTPUT)."""
    parts: list[bytes] = []
    total = 0
    with git_process(root, list(args), subprocess.DEVNULL) as (proc, deadline):
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read1(1 << 20)  # type: ignore[attr-defined]
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_GIT_OUTPUT:
                deadline.kill()
                raise GitError(f"git {args[0]}: output larger than {MAX_GIT_OUTPUT} bytes")
            parts.append(chunk)
        code = proc.wait()
    if deadline.fired:
        raise GitError(f"git {args[0]}: no answer within {deadline.seconds} s")
    if code != 0:
        raise GitError(f"git {args[0]} exited {code}")
    return b"".join(parts)


def resolve_commit(root: Path, ref: str) -> tuple[str | None, list[str]]:
    """The commit ``ref`` names, fetching it from ``origin`` when the object is missing (a
    shallow checkout). Returns (sha or None, messages)."""
    messages: list[str] = []
    if ref.startswith("-"):
        raise InvalidInput(f"--base {ref}: not a git revision")
    sha = _rev_parse(root, ref)
    if sha is not None:
        return sha, messages
    try:
        run_git(root, "fetch", "--no-tags", "--depth=1", "origin", ref)
    except GitError as exc:
        messages.append(f"base {ref} is not in the clone and fetching it failed ({exc})")
        return None, messages
    messages.append(f"fetched base {ref} from origin (shallow clone)")
    sha = _rev_parse(root, ref if HEX_SHA.match(ref) else "FETCH_HEAD")
    if sha is None:
        messages.append(f"base {ref} could not be resolved after fetching")
    return sha, messages


def _rev_parse(root: Path, ref: str) -> str | None:
    try:
        out = run_git(
            root, "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"
        )
    except GitError:
        return None
    return out.decode("ascii").strip() or None


def in_git_repo(root: Path) -> bool:
    """True when ``root`` is inside a git work tree."""
    try:
        return run_git(root, "rev-parse", "--is-inside-work-tree").strip() == b"true"
    except GitError:
        return False
