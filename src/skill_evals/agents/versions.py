"""Tested agent CLI versions: which release of each agent the runners were tested with, and the
one line that says a run uses another (or an agent whose version cannot be read).

The check runs ``<bin> --version`` once (10 s, 64 KiB of output, a fresh empty home, none of
the caller's credentials; in the engine of a sandboxed run, in a sandbox of its own without
network, that home its only writable place) and takes the first ``N.N.N`` of its answer. It
only ever warns: no exit code changes because of a version.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..messages import UNTESTED_VERSION
from ..sandbox.binds import BindRefused
from .environment import agent_env

if TYPE_CHECKING:
    from ..sandbox.bwrap import Sandbox
    from .registry import Entry

# Set by the engine on the runner's environment once it has checked the agent's version, so
# that each invocation of `skill-evals runner <agent>` does not check again.
VERSION_CHECKED_VAR = "SKILL_EVALS_AGENT_VERSION_CHECKED"
TIMEOUT_S = 10.0
MAX_OUTPUT = 64 * 1024
_VERSION = re.compile(rb"(\d{1,9})\.(\d{1,9})\.(\d{1,9})")

Version = tuple[int, int, int]


def parse_version(text: str | bytes) -> Version | None:
    """The first ``N.N.N`` of ``text``, or None."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    found = _VERSION.search(data)
    if found is None:
        return None
    return (int(found.group(1)), int(found.group(2)), int(found.group(3)))


def show(version: Version) -> str:
    """``2.1.328``."""
    return ".".join(map(str, version))


def node_minimum(spec: str | None) -> Version | None:
    """The lowest Node an ``engines.node`` range such as ``>=22.0.0`` admits (None: any)."""
    return None if spec is None else parse_version(spec)


def in_tested_range(entry: Entry, version: Version) -> bool:
    """Whether ``version`` is within the entry's tested range: from the pinned release up to
    ``tested_through`` (inclusive), by default every later release of the same major.minor."""
    low = parse_version(entry.tested)
    assert low is not None, entry.name
    high = parse_version(entry.tested_through) if entry.tested_through else None
    if high is None:
        return version >= low and version[:2] == low[:2]
    return low <= version <= high


def install_line(entry: Entry) -> str:
    """``npm install -g @anthropic-ai/claude-code@2.1.328``."""
    return f"npm install -g {entry.package}@{entry.tested}"


def missing_hint(name: str) -> str:
    """What a binary-not-found reason adds for agent ``name``: the pinned install line and the
    Node it needs."""
    from .registry import entry

    registered = entry(name)
    node = f" (needs Node ≥ {registered.node_label})" if registered.node else ""
    return f"; the tested release: {install_line(registered)}{node}"


def _bounded_output(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> tuple[int, bytes]:
    """Run ``argv``; its exit status (-1 when it timed out) and up to MAX_OUTPUT bytes of its
    standard output and error. The process group is killed past TIMEOUT_S."""
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, env=dict(env), cwd=cwd, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    chunks: list[bytes] = []
    size, deadline = 0, time.monotonic() + TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while size < MAX_OUTPUT and (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), MAX_OUTPUT - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    proc.stdout.close()
    try:
        status = proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        status = -1
    if status == -1 or size >= MAX_OUTPUT:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return status, b"".join(chunks)


def read_version(
    argv: Sequence[str], caller_env: Mapping[str, str], sandbox: Sandbox | None
) -> Version | None:
    """The version ``argv`` (``<bin> --version`` or ``node --version``) prints, or None when it
    fails, times out or prints none. Run in a fresh empty home without credentials: in
    ``sandbox`` (that home its only writable place, no network) unless None."""
    with tempfile.TemporaryDirectory(prefix="skill-evals-version-") as home:
        env = agent_env(caller_env, Path(home))
        try:
            command = list(argv)
            if sandbox is not None:
                command = sandbox.trusted_command(command, env, Path(home))
            status, output = _bounded_output(command, env, home)
        except (OSError, BindRefused):
            return None
    return parse_version(output) if status == 0 else None


def _node_clause(entry: Entry, caller_env: Mapping[str, str], sandbox: Sandbox | None) -> str:
    """``; Node v20.11.0 is on PATH; … needs Node ≥ 22 …`` when the ``node`` on PATH is older
    than the tested release needs to install; empty otherwise."""
    minimum = node_minimum(entry.node)
    node = shutil.which("node", path=caller_env.get("PATH")) if minimum else None
    found = read_version([node, "--version"], caller_env, sandbox) if node else None
    if minimum is None or found is None or found >= minimum:
        return ""
    label = entry.node_label
    return (
        f"; Node v{show(found)} is on PATH; {entry.tested} needs Node ≥ {label} to install "
        f"(actions/setup-node with node-version {label})"
    )


def version_warning(
    entry: Entry, binary: str, caller_env: Mapping[str, str], sandbox: Sandbox | None = None
) -> str | None:
    """The one line saying ``binary`` is not a tested release of the agent (or its version
    cannot be read), with the pinned install line; None for a tested release. Each version is
    read in ``sandbox`` (the engine's, :func:`engine_check`), else without one (a runner's
    own check, :func:`runner_check`)."""
    found = read_version([binary, "--version"], caller_env, sandbox)
    if found is not None and in_tested_range(entry, found):
        return None
    if found is None:
        what = f"could not read the version of {binary}"
    else:
        what = f"found {os.path.basename(binary)} {show(found)} ({binary})"
    return (
        f"{entry.name}: {what}; tested with {entry.tested}{UNTESTED_VERSION}"
        f"{install_line(entry)}{_node_clause(entry, caller_env, sandbox)}"
    )


def runner_check(name: str, binary: str, caller_env: Mapping[str, str]) -> str | None:
    """In ``skill-evals runner <name>``: the version warning for ``binary``, unless the engine
    that started the runner checked already (:data:`VERSION_CHECKED_VAR`). Read here without
    a sandbox of its own: a runner the engine started is in its sandbox already, and one
    started by hand starts its agent unsandboxed too."""
    if VERSION_CHECKED_VAR in caller_env:
        return None
    from .registry import entry

    return version_warning(entry(name), binary, caller_env)


def _bin_option(argv: Sequence[str]) -> str | None:
    """The value of ``--bin`` in a runner's argv (the last one given), or None."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--bin" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--bin="):
            value = arg[len("--bin=") :]
    return value


def is_agent_runner(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is exactly ``skill-evals runner <agent>`` (the simulation excepted)."""
    import shlex

    from .registry import builtin_agent

    return builtin_agent(shlex.join(argv)) is not None


def engine_check(
    argv: Sequence[str], caller_env: Mapping[str, str], sandbox: Sandbox | None
) -> str | None:
    """Before the first invocation of a run whose runner is exactly ``skill-evals runner
    <agent>``: the version warning for its binary (``--bin``, else the agent's name on PATH),
    or None (another runner, a tested release, or no binary: the runner itself says that).
    ``sandbox``: the run's for the engine's own programs (None: the run is unsandboxed)."""
    import shlex

    from .registry import builtin_agent, entry

    name = builtin_agent(shlex.join(argv))
    if name is None:
        return None
    registered = entry(name)
    program = _bin_option(argv)
    binary: str | None
    if program is not None and "/" in program:
        binary = os.path.abspath(os.path.expanduser(program))
        if not os.access(binary, os.X_OK):
            return None
    else:
        binary = shutil.which(program or registered.load().binary, path=caller_env.get("PATH"))
    return None if binary is None else version_warning(registered, binary, caller_env, sandbox)
