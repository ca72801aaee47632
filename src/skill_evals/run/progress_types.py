"""What the scheduler tells a progress display (progress.py): one finished invocation, and
optionally each start.

Owner: execution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .observations import Variant


@dataclass(frozen=True)
class Progress:
    """One finished invocation, for the progress output (progress.py)."""

    done: int
    total: int
    skill: str
    case_id: str
    trial: int
    variant: Variant
    ok: bool  # False for a runner failure
    elapsed_ms: float
    reason: str | None = None  # the failure's reason (never stdout, stderr or the prompt)
    triggered: bool | None = None  # did the run load the tested skill (None: failed)
    expect_trigger: bool | None = None  # the case's label
    running: int = 0  # invocations still running after this one


@runtime_checkable
class StartListener(Protocol):
    """A progress callable that also wants to know when an invocation starts (a live status
    line shows what is running, also while nothing finishes)."""

    def started(self, running: int, done: int, total: int) -> None:
        """An invocation started: ``running`` now run, ``done`` of ``total`` have finished."""
