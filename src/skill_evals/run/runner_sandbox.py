"""The runner's sandbox in one invocation: its command line, and what of the skills the
invocation sees (docs/sandbox.md). The runner's own argv is trusted (the command line or the
job's configuration chose it): its program and arguments are bound; the case's setup and
command checks bind nothing of their own (helper_commands.py).

Owner: execution. Used by scheduler.py only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..agents.copilot_package import SharedPackage
from ..plan.arms import Arm
from ..sandbox.binds import program_paths, skill_paths
from ..sandbox.bwrap import Sandbox, startable
from ..sandbox.egress import Channel
from .helper_commands import Sight
from .workspace import Prepared

TRANSCRIPT_DIR_VAR = "SKILL_EVALS_TRANSCRIPT_DIR"  # where built-in runners copy transcripts


def _transcripts(env: Mapping[str, str]) -> list[Path]:
    """The folder a built-in runner copies its transcripts to, made if missing: writable in
    the sandbox (none when unset or it cannot be made)."""
    given = env.get(TRANSCRIPT_DIR_VAR)
    if not given:
        return []
    try:
        os.makedirs(given, exist_ok=True)
    except OSError:
        return []  # the runner says why it cannot write there
    return [Path(given).absolute()]


def arm_sight(arm: Arm, tested: Path, env: Mapping[str, str]) -> Sight:
    """What of the skills an invocation of ``arm`` (its environment ``env``) sees: the arm's
    skill directories; in the ``without`` and ``baseline`` arms the tested skill's directory
    ``tested`` stands empty, whoever names it."""
    hidden: tuple[str, ...] = ()
    if arm.name in ("without", "baseline"):
        hidden = (str(Path(tested).absolute()),)
    gone = [os.path.realpath(h) for h in hidden]
    seen = tuple(p for p in skill_paths(env) if os.path.realpath(p) not in gone)
    return Sight(seen, hidden)


def runner_argv(
    sandbox: Sandbox | None,
    command: Sequence[str],
    env: dict[str, str],
    prepared: Prepared,
    agent_program: str | None,
    channel: Channel | None = None,
    package: SharedPackage | None = None,
) -> tuple[str, ...]:
    """The runner's command line: in its own sandbox when the run is sandboxed (with the
    private HOME, set in ``env``; ``channel`` its way out of its own network namespace;
    ``package`` the agent's package unpacked once for the run, read-only in that HOME); as
    given otherwise, or when the program cannot be found (it then fails to start the same
    way either way). BindRefused when a bound directory cannot be checked for ``.git``
    directories."""
    argv = tuple(command)
    if sandbox is None or not argv:
        return argv
    cwd = os.getcwd()
    if not startable(argv[0], cwd, env):
        return argv
    env["HOME"] = str(prepared.home)
    private = [prepared.workspace, prepared.tmp, prepared.home]
    readable = [*prepared.sight.readable]
    if agent_program is not None:  # the agent binary, bound like a program
        readable += program_paths(agent_program, cwd, env)
    placed = package.binds(prepared.home, sandbox) if package is not None else []
    bwrap = sandbox.command(
        argv, env, cwd, private, readable,
        hidden=prepared.sight.hidden, shared=_transcripts(env), channel=channel, placed=placed,
    )  # fmt: skip
    return tuple(bwrap)
