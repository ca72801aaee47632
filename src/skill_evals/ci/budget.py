"""`budget-total`: one budget over every skill a `ci` run evaluates (docs/comparison.md).

Skills run one after another; each gets its own ``budget`` capped by what is left of the total,
and what it spent (its ledger) is taken off before the next starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..plan.run_control import Budget


@dataclass
class TotalBudget:
    """What is left of ``budget-total`` (None: no limit)."""

    invocations: int | None = None
    cost_usd: float | None = None
    judge_calls: int | None = None

    @classmethod
    def of(cls, budget: Budget) -> TotalBudget:
        """The whole total, before any skill ran."""
        return cls(budget.invocations, budget.cost_usd, budget.judge_calls)

    def for_skill(self, own: Budget) -> Budget:
        """The skill's budget: its own, capped by what is left of the total."""
        return Budget(
            _least(own.invocations, self.invocations),
            _least(own.cost_usd, self.cost_usd),
            _least(own.judge_calls, self.judge_calls),
        )

    def spend(self, report: Mapping[str, Any] | None) -> None:
        """Take one skill's spending (its report's ``runner.ledger``) off what is left."""
        runner = (report or {}).get("runner")
        ledger = runner.get("ledger") if isinstance(runner, Mapping) else None
        if not isinstance(ledger, Mapping):
            return
        used = ledger.get("invocations")
        if self.invocations is not None and isinstance(used, int):
            self.invocations = max(0, self.invocations - used)
        cost = ledger.get("costUsd")
        if self.cost_usd is not None and isinstance(cost, (int, float)):
            self.cost_usd = max(0.0, self.cost_usd - float(cost))
        judge = ledger.get("judge")
        if isinstance(judge, Mapping):
            calls, spent = judge.get("calls"), judge.get("costUsd")
            if self.judge_calls is not None and isinstance(calls, int):
                self.judge_calls = max(0, self.judge_calls - calls)
            if self.cost_usd is not None and isinstance(spent, (int, float)):
                self.cost_usd = max(0.0, self.cost_usd - float(spent))


def _least(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
