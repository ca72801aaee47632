"""Gates: each configured gate's verdict on the scored figures (docs/statistics.md), and the
settled verdict of a run that stopped early (docs/comparison.md#stop-when-settled).

A gate's outcome is its report entry (``{"threshold", "value", "passed"}``), the exit code it
adds (1 failed, 6 insufficient, 7 undecidable; None passed) and the message that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..codes import GATE_FAILED, INSUFFICIENT, INTERRUPTED, UNAVAILABLE
from ..suite.cases import MIN_UNITS, CaseSuite

# Report keys of every gate, in the order they are judged and listed.
TRIGGER_F1 = "minTriggerF1"
UPLIFT = "minUplift"
LOADING = "loading"  # not in report.gates: violations are listed in loading.violations
MAX_F1_DROP = "maxF1Drop"
MAX_PASS_DROP = "maxPassDrop"
MIN_F1_GAIN = "minF1Gain"
MIN_PASS_GAIN = "minPassGain"
COMPARISON_GATES = (MAX_F1_DROP, MAX_PASS_DROP, MIN_F1_GAIN, MIN_PASS_GAIN)
ALL_GATES = (TRIGGER_F1, UPLIFT, *COMPARISON_GATES)  # the keys of the report's gates

# The option that sets each gate and what the gate reads, for messages.
OPTION = {
    TRIGGER_F1: "--min-trigger-f1",
    UPLIFT: "--min-uplift",
    MAX_F1_DROP: "--max-f1-drop",
    MAX_PASS_DROP: "--max-pass-drop",
    MIN_F1_GAIN: "--min-f1-gain",
    MIN_PASS_GAIN: "--min-pass-gain",
}
READS = {
    TRIGGER_F1: "trigger F1",
    UPLIFT: "the uplift interval's lower bound",
    MAX_F1_DROP: "the upper bound of the F1 difference to the baseline",
    MAX_PASS_DROP: "the upper bound of the pass-rate difference to the baseline",
    MIN_F1_GAIN: "the lower bound of the F1 difference to the baseline",
    MIN_PASS_GAIN: "the lower bound of the pass-rate difference to the baseline",
}


def num(value: float) -> str:
    """A figure for a message: short, but never rounded into looking like the threshold."""
    return format(value, ".6g")


@dataclass(frozen=True)
class GateOutcome:
    """One configured gate's verdict."""

    key: str
    threshold: float
    value: float | None
    passed: bool | None
    code: int | None = None
    message: str | None = None
    partial: bool = False  # judged on part of the planned runs: no verdict (passed is None)

    @property
    def report(self) -> dict[str, Any]:
        """The gate's entry in the report's ``gates`` (``partial`` only when it is true)."""
        entry: dict[str, Any] = {
            "threshold": self.threshold,
            "value": self.value,
            "passed": self.passed,
        }
        if self.partial:
            entry["partial"] = True
        return entry


def decided(key: str, threshold: float, value: float, passed: bool, why: str) -> GateOutcome:
    """A gate judged on a defined value: passed, or failed with ``why`` as the message."""
    if passed:
        return GateOutcome(key, threshold, value, True)
    return GateOutcome(key, threshold, value, False, GATE_FAILED, f"gate failed: {why}")


def undecided(key: str, threshold: float, code: int, message: str) -> GateOutcome:
    """A gate that cannot be judged (exit 6 or 7)."""
    return GateOutcome(key, threshold, None, None, code, message)


def trigger_f1_gate(trigger: Mapping[str, Any], threshold: float, why_null: str) -> GateOutcome:
    """``--min-trigger-f1``: F1 ≥ threshold; undefined F1 → 7."""
    f1 = trigger["f1"]
    if f1 is None:
        return undecided(
            TRIGGER_F1,
            threshold,
            UNAVAILABLE,
            "--min-trigger-f1 is set but trigger F1 is undefined: " + why_null,
        )
    return decided(
        TRIGGER_F1,
        threshold,
        f1,
        f1 >= threshold,
        f"trigger F1 {num(f1)} is below --min-trigger-f1 {num(threshold)}",
    )


def uplift_gate(
    task: Mapping[str, Any] | None, threshold: float, suite: CaseSuite, task_units: int
) -> GateOutcome:
    """``--min-uplift``: the interval's lower bound ≥ threshold."""
    if task is None:
        return undecided(
            UPLIFT,
            threshold,
            UNAVAILABLE,
            f"--min-uplift is set but no case in {suite.path} has a task check",
        )
    lower = task["interval"]["lower"]
    if task["insufficient"]:
        outcome = undecided(
            UPLIFT,
            threshold,
            INSUFFICIENT,
            f"--min-uplift needs at least {MIN_UNITS} independent cases with a task check; "
            f"{suite.path} has {task_units}",
        )
        return GateOutcome(UPLIFT, threshold, lower, None, outcome.code, outcome.message)
    if lower is None:
        return undecided(
            UPLIFT,
            threshold,
            UNAVAILABLE,
            "--min-uplift is set but no unit has both variants observed",
        )
    return decided(
        UPLIFT,
        threshold,
        lower,
        lower >= threshold,
        f"the uplift interval's lower bound {num(lower)} is below --min-uplift {num(threshold)}",
    )


def as_settled(outcome: GateOutcome, passed: bool | None, not_run: int) -> GateOutcome:
    """``outcome`` with the verdict a settle check found for it: the figure stays the one of
    the observations that ran (it may be null); the verdict is the one every outcome of the
    ``not_run`` invocations would have given."""
    option = OPTION.get(outcome.key, outcome.key)
    if passed is True:
        return GateOutcome(outcome.key, outcome.threshold, outcome.value, True)
    if passed is False:
        return GateOutcome(
            outcome.key,
            outcome.threshold,
            outcome.value,
            False,
            GATE_FAILED,
            f"gate failed: {READS.get(outcome.key, outcome.key)} fails {option} "
            f"{num(outcome.threshold)} whatever the {not_run} invocation(s) that did not run "
            "would have shown (settled)",
        )
    return GateOutcome(
        outcome.key,
        outcome.threshold,
        outcome.value,
        None,
        UNAVAILABLE,
        f"{option} is set but {READS.get(outcome.key, outcome.key)} is undefined whatever the "
        f"{not_run} invocation(s) that did not run would have shown (settled)",
    )


def partial_label(observed: int, planned: int) -> str:
    """``partial: 18 of 40, not decided``: how a figure without a verdict is shown."""
    return f"partial: {observed} of {planned}, not decided"


def as_partial(outcome: GateOutcome, observed: int, planned: int) -> GateOutcome:
    """``outcome`` of a run that did not finish: the figure of the observations that ran is
    kept, but it is no verdict (``passed`` null, ``partial`` true, no exit code of its own)."""
    label = READS.get(outcome.key, outcome.key)
    # Three decimals, as every other output shows a figure (no verdict to blur by rounding).
    shown = "undefined" if outcome.value is None else f"{outcome.value:.3f}"
    return GateOutcome(
        outcome.key,
        outcome.threshold,
        outcome.value,
        None,
        None,
        f"{label} {shown} ({partial_label(observed, planned)}): "
        f"{OPTION.get(outcome.key, outcome.key)} is not judged on part of the run",
        partial=True,
    )


def partial_outcomes(
    outcomes: list[GateOutcome],
    settled_keys: set[str] | None,
    exit_code: int,
    observed: int,
    planned: int,
) -> list[GateOutcome]:
    """The gates with a verdict only where one exists. A gate of a run whose status is
    unavailable or interrupted with invocations that did not run, or a gate a settled stop
    left open, rests on part of the run: it becomes partial. Gates the settle check decided
    keep their verdict."""
    if observed >= planned:
        return outcomes
    if settled_keys is None and exit_code not in (UNAVAILABLE, INTERRUPTED):
        return outcomes
    keep = settled_keys or set()
    return [o if o.key in keep else as_partial(o, observed, planned) for o in outcomes]
