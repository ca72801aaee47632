"""What a settle check reads (settle.py): the gates it judges, the per-unit counters of each
arm, and the copy of both taken under the scheduler's lock."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..score.compare import CompareGates


@dataclass(frozen=True)
class SettleGates:
    """The gates a settle check judges (None: not configured)."""

    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    loading: bool = False  # some case has loading rules: a violation fails the run
    compare: CompareGates = field(default_factory=CompareGates)

    @property
    def any(self) -> bool:
        """Whether there is any gate: without one nothing is ever settled early."""
        return (
            self.min_trigger_f1 is not None
            or self.min_uplift is not None
            or self.loading
            or self.compare.any_set
        )


def gate_outcome(bound: float | None, threshold: float, drop: bool) -> bool | None:
    """A gate's verdict on a bound: lower ≥ threshold, or (a drop gate) upper ≥ −threshold."""
    if bound is None:
        return None
    return bound >= (-threshold if drop else threshold)


@dataclass
class ArmCounts:
    """Per-unit counters of one arm, for the task and the trigger figures."""

    passed: list[int]
    observed: list[int]
    planned: list[int]
    tp: list[int]
    fp: list[int]
    fn: list[int]
    rem_pos: list[int]  # planned, not yet observed, of cases expecting a trigger
    rem_neg: list[int]
    pos: list[int]  # planned observations of cases expecting a trigger

    @classmethod
    def zeros(cls, n: int) -> ArmCounts:
        return cls(*([0] * n for _ in range(9)))

    def copy(self) -> ArmCounts:
        return ArmCounts(*(list(v) for v in vars(self).values()))


@dataclass
class SettleState:
    """What a check reads: a copy taken under the scheduler's lock."""

    failed: bool
    tp: int
    fp: int
    fn: int
    rem_pos: int
    rem_neg: int
    violation: bool
    rem_rules: int
    task_units: list[int]  # positions (into the per-unit lists) of units with a task
    arms: dict[str, ArmCounts]
    versions: dict[str, int]
