"""The progress of routing invocations, printed by the printer of ``test``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .execute import Progress, StartListener


class RouteProgress:
    """The progress printer of ``test`` for routing invocations: the skill column says
    ``routing`` and the outcome says whether the runner worked (which skill loaded is in the
    report, not in a per-invocation "loaded/not loaded" of one skill)."""

    def __init__(self, inner: Callable[[Progress], None]) -> None:
        self._inner = inner
        self._starts = inner if isinstance(inner, StartListener) else None

    def started(self, running: int, done: int, total: int) -> None:
        """An invocation started."""
        if self._starts is not None:
            self._starts.started(running, done, total)

    def __call__(self, event: Progress) -> None:
        self._inner(dataclasses.replace(event, triggered=None, expect_trigger=None))
