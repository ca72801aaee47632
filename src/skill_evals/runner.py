"""Running one invocation of a runner (SPEC §1.4): new process group, stdin prompt, timeout,
byte cap, kill the whole group afterwards, parse the one-line contract.

Owner: execution.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .observations import Observation, RunnerFailure, Variant


@dataclass(frozen=True)
class InvocationSpec:
    """Everything needed to run the runner once."""

    argv: tuple[str, ...]  # shlex.split(--runner)
    prompt: str
    env: Mapping[str, str]  # full environment (caller's + EVALGATE_SKILL_*)
    case_id: str
    trial: int
    variant: Variant
    timeout_ms: int
    max_bytes: int


@dataclass(frozen=True)
class InvocationResult:
    """An observation or a failure, and the wall time it took."""

    outcome: Observation | RunnerFailure
    elapsed_ms: float


def run_invocation(spec: InvocationSpec, cancel: threading.Event | None = None) -> InvocationResult:
    """Run once. Never raises for anything the runner does; always kills the process group.

    ``cancel`` set → kill the group at once and return a failure with reason "interrupted"."""
    raise NotImplementedError


def invocation_env(
    base: Mapping[str, str], variant: Variant, skill_dir: str, case_id: str, trial: int
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
    raise NotImplementedError
