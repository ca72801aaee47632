"""What a run's judging cost and did: judge processes started (retries included), verdicts
reused from the cache or from recorded observations, failures, tokens and cost. Never added
into the runner's figures (docs/judging.md)."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from .observations import reported_sum


class JudgeLedger:
    """Counts of one run's judging; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.cached = 0
        self.resumed = 0
        self.retried = 0
        self.failures = 0
        self.swap_asked = 0
        self.swap_consistent = 0
        self.input_tokens: list[float] = []
        self.output_tokens: list[float] = []
        self.cost_usd: list[float] = []
        self.cost_unreported = 0
        self.used = False  # the run has judge checks

    @property
    def spent_usd(self) -> float:
        """The cost the judges reported so far (for --max-cost-usd)."""
        with self.lock:
            return math.fsum(self.cost_usd)

    def answered(self, meta: Mapping[str, float] | None) -> None:
        """One judge process ended (``meta``: what it reported; None for a failed one)."""
        with self.lock:
            meta = meta or {}
            cost = meta.get("costUsd")
            if cost is None:
                self.cost_unreported += 1
            else:
                self.cost_usd.append(cost)
            for key, values in (
                ("inputTokens", self.input_tokens),
                ("outputTokens", self.output_tokens),
            ):
                if meta.get(key) is not None:
                    values.append(meta[key])

    def reused(self, *, cached: bool) -> None:
        """A verdict taken from a cached (or else a recorded) observation."""
        with self.lock:
            if cached:
                self.cached += 1
            else:
                self.resumed += 1

    def report_block(self) -> dict[str, Any] | None:
        """The report's ``judge`` (None when the run has no judge checks)."""
        if not self.used:
            return None
        asked = self.swap_asked
        return {
            "calls": self.calls,
            "cached": self.cached,
            "resumed": self.resumed,
            "retried": self.retried,
            "failures": self.failures,
            "swapConsistency": self.swap_consistent / asked if asked else None,
        }

    def ledger_block(self) -> dict[str, Any]:
        """``runner.ledger.judge``."""
        return {
            "calls": self.calls,
            "cached": self.cached,
            "resumed": self.resumed,
            "retried": self.retried,
            "inputTokens": reported_sum(self.input_tokens),
            "outputTokens": reported_sum(self.output_tokens),
            "costUsd": reported_sum(self.cost_usd),
            "costUnreported": self.cost_unreported,
        }
