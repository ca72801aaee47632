"""The resource limits of every sandbox and the command line that applies them: the relay
(relay.py) is each sandbox's first process; it lowers the limits, then starts the command, and
relays the contained network when there is one."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .egress import INSIDE_PORT, INSIDE_SOCKET

RELAY = str(Path(__file__).resolve().with_name("relay.py"))
INSIDE_DIR = str(Path(INSIDE_SOCKET).parent)


@dataclass(frozen=True)
class Limits:
    """Per sandbox: processes (RLIMIT_NPROC; root is not held to it), bytes of one file
    (RLIMIT_FSIZE), and bytes of the workspace with its TMPDIR and HOME (checked every second
    by the engine). Core dumps are always off."""

    nproc: int = 1024
    fsize: int = 1 << 30
    workspace_bytes: int = 2 << 30


def relay_argv(argv: list[str], limits: Limits, contained: bool) -> list[str]:
    """``argv`` started by the relay (the engine's own interpreter, isolated mode)."""
    relay = [sys.executable, "-I", "-S", RELAY, "--nproc", str(limits.nproc)]
    relay += ["--fsize", str(limits.fsize)]
    if contained:
        relay += ["--socket", INSIDE_SOCKET, "--port", str(INSIDE_PORT)]
    return [*relay, "--", *argv]


def network_env() -> dict[str, str]:
    """What a contained sandbox's processes are told about the way out."""
    proxy = f"http://127.0.0.1:{INSIDE_PORT}"
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = proxy
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
    return env


MAX_WATCHED_ENTRIES = 1_000_000  # a tree with more entries counts as past the bound


def tree_bytes(roots: Sequence[Path], stop_at: int) -> int:
    """Bytes of the regular files under ``roots`` (symlinks not followed), counted until the
    sum passes ``stop_at``; a walk of more than :data:`MAX_WATCHED_ENTRIES` entries returns
    ``stop_at + 1``."""
    total = 0
    entries = 0
    stack = [str(root) for root in roots]
    while stack:
        try:
            with os.scandir(stack.pop()) as found:
                for entry in found:
                    entries += 1
                    if entries > MAX_WATCHED_ENTRIES:
                        return stop_at + 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if total > stop_at:
                        return total
        except OSError:
            continue
    return total


def workspace_watch(roots: Sequence[Path], limit: int) -> Callable[[], str | None]:
    """A check for the runner's I/O loop, at most once a second: why the invocation must end
    (its workspace, TMPDIR and HOME grew past ``limit`` bytes), or None."""
    last = [0.0]

    def check() -> str | None:
        now = time.monotonic()
        if now - last[0] < 1.0:
            return None
        last[0] = now
        if tree_bytes(roots, limit) > limit:
            return f"workspace grew past {limit} bytes (--max-workspace-bytes)"
        return None

    return check
