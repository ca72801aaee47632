"""What controls a run besides its plan: budgets, the cache hook, why it stopped, signals and the
retry backoff (docs/comparison.md, docs/runner-contract.md).

Owner: execution.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal, Protocol

from ..run.observations import Observation
from ..suite.cases import Case
from .arms import Arm

StopReason = Literal["settled", "budget"]


@dataclass(frozen=True)
class Budget:
    """``--max-invocations`` / ``--max-cost-usd`` (None: no limit). When reached, no new
    invocation (nor retry) starts; running ones finish."""

    invocations: int | None = None
    cost_usd: float | None = None
    judge_calls: int | None = None  # --max-judge-calls: judge processes (never invocations)

    def reached(self, started: int, spent_usd: float) -> bool:
        """Whether ``started`` runner processes or ``spent_usd`` reported dollars use it up."""
        if self.invocations is not None and started >= self.invocations:
            return True
        return self.cost_usd is not None and spent_usd >= self.cost_usd


@dataclass(frozen=True)
class Stopped:
    """Why a run stopped before its plan was done, and where: ``after`` planned invocations
    had finished (resumed and cached ones included) of ``planned``."""

    reason: StopReason
    after: int
    planned: int
    invocations: int  # runner processes this run started (for "budget reached after N")


class InvocationCache(Protocol):
    """Where valid observations may be reused from instead of running the invocation again.

    ``lookup`` is asked once per missing invocation before the run starts (a hit is used as a
    finished observation: not run, not charged to a budget); ``store`` is called after every
    valid observation this run produced (never for a failure). ``arm`` names the skill version
    the invocation offers (its directory and hash); the runner command is the cache's own."""

    def lookup(self, case: Case, trial: int, arm: Arm) -> Observation | None:
        """A reusable observation of this invocation, or None."""

    def store(self, case: Case, trial: int, arm: Arm, observation: Observation) -> None:
        """Keep a valid observation of this invocation for later runs."""


def retry_delay(attempt: int) -> float:
    """Seconds to wait before re-run ``attempt`` (0-based): 2, 8, 32, then 60 each time."""
    return min(60.0, 2.0 * 4.0**attempt)


@contextmanager
def signals_cancel(cancel: threading.Event) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM set ``cancel`` (main thread only; old handlers restored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    previous: dict[signal.Signals, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
