"""The ledger: what a run spent, per arm (docs/comparison.md#budgets-and-the-ledger).

Invocations are runner processes started by this run (a retry is one more); cached and resumed
observations cost nothing now and are counted apart. Tokens and cost are the sums of what the
runners reported (``meta``); an invocation that reported no cost (a failure, or a runner that
does not know) is counted in ``costUnreported`` rather than as $0. An invocation whose runner
reported no tokens counts the tokens its model responses reported at the wire (a contained
sandbox's credential proxy reads them); ``tokensSource`` says which: ``agent``, ``wire`` or
``mixed`` (null: none known).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..run.observations import Observation, reported_sum


@dataclass
class ArmLedger:
    """One arm's counts and sums."""

    invocations: int = 0
    cached: int = 0
    retried: int = 0
    resumed: int = 0
    stopped_early: int = 0  # planned, not started: the verdict was settled or the budget spent
    input_tokens: list[float] = field(default_factory=list)
    output_tokens: list[float] = field(default_factory=list)
    cost_usd: list[float] = field(default_factory=list)
    cost_unreported: int = 0
    tokens_from: set[str] = field(default_factory=set)  # "agent", "wire"

    @property
    def tokens_source(self) -> str | None:
        """agent, wire, mixed, or None when no token count is known."""
        if len(self.tokens_from) > 1:
            return "mixed"
        return next(iter(self.tokens_from), None)

    def to_json(self) -> dict[str, Any]:
        """The ledger's JSON fields for this arm."""
        return {
            "invocations": self.invocations,
            "cached": self.cached,
            "retried": self.retried,
            "resumed": self.resumed,
            "stoppedEarly": self.stopped_early,
            "inputTokens": reported_sum(self.input_tokens),
            "outputTokens": reported_sum(self.output_tokens),
            "costUsd": reported_sum(self.cost_usd),
            "costUnreported": self.cost_unreported,
            "tokensSource": self.tokens_source,
        }


class Ledger:
    """Counts per arm as a run goes. Not thread-safe: the scheduler updates it under its lock."""

    def __init__(self, arms: Iterable[str]) -> None:
        self.arms: dict[str, ArmLedger] = {arm: ArmLedger() for arm in arms}
        self._spent = 0.0  # reported cost of this run's invocations, for --max-cost-usd

    def _arm(self, arm: str) -> ArmLedger:
        return self.arms.setdefault(arm, ArmLedger())

    @property
    def spent_usd(self) -> float:
        """The cost this run's invocations reported so far."""
        return self._spent

    @property
    def invocations(self) -> int:
        """Runner processes this run started so far, retries included."""
        return sum(a.invocations for a in self.arms.values())

    def ran(self, arm: str, attempts: int, observation: Observation | None) -> None:
        """An invocation ended after ``attempts`` runner processes (1 + its retries), with a
        valid ``observation`` or a failure (None)."""
        entry = self._arm(arm)
        entry.invocations += attempts
        entry.retried += attempts - 1
        meta: Mapping[str, float] = observation.meta if observation is not None else {}
        cost = meta.get("costUsd")
        if cost is None:
            entry.cost_unreported += attempts
        else:
            entry.cost_unreported += attempts - 1
            entry.cost_usd.append(cost)
            self._spent += float(cost)
        wire = observation.wire_tokens if observation is not None else None
        if "inputTokens" not in meta and "outputTokens" not in meta and wire is not None:
            entry.input_tokens.append(wire[0])
            entry.output_tokens.append(wire[1])
            entry.tokens_from.add("wire")
            return
        for key, values in (
            ("inputTokens", entry.input_tokens),
            ("outputTokens", entry.output_tokens),
        ):
            value = meta.get(key)
            if value is not None:
                values.append(value)
                entry.tokens_from.add("agent")

    def reused(self, arm: str, *, cached: bool) -> None:
        """An observation that costs nothing now: from the cache, or resumed from a record."""
        entry = self._arm(arm)
        if cached:
            entry.cached += 1
        else:
            entry.resumed += 1

    def stopped(self, arm: str, count: int = 1) -> None:
        """Planned invocations of ``arm`` that did not start because the run stopped early."""
        self._arm(arm).stopped_early += count

    def to_json(self) -> dict[str, Any]:
        """``runner.ledger``: the totals, then ``arms`` with each arm's own."""
        total = ArmLedger()
        for entry in self.arms.values():
            total.invocations += entry.invocations
            total.cached += entry.cached
            total.retried += entry.retried
            total.resumed += entry.resumed
            total.stopped_early += entry.stopped_early
            total.input_tokens += entry.input_tokens
            total.output_tokens += entry.output_tokens
            total.cost_usd += entry.cost_usd
            total.cost_unreported += entry.cost_unreported
            total.tokens_from |= entry.tokens_from
        return {
            **total.to_json(),
            "arms": {name: entry.to_json() for name, entry in self.arms.items()},
        }
