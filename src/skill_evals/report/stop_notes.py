"""What every output says about a run that did not run every invocation of a full plan: the
isolation spot-check of ``--arms auto`` and an early stop (a settled verdict, a budget)
(docs/comparison.md).

One wording for all outputs: the engine puts these sentences into the report's notes, and the
renderers read the same figures back from the report (``arms``, ``runner.stoppedEarly``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the renderers import this module: keep it light
    from ..plan.arms import ArmPlan
    from ..plan.run_control import Stopped
    from ..plan.settle import Verdict


def spot_check_text(checked: int, of: int) -> str:
    """``isolation spot-checked on k of n cases``."""
    return f"isolation spot-checked on {checked} of {of} cases"


def stopped_text(after: int, planned: int) -> str:
    """``stopped early: the verdict was settled after k of n invocations``."""
    return f"stopped early: the verdict was settled after {after} of {planned} invocations"


def run_notes(
    arm_plan: ArmPlan | None, stopped: Stopped | None, settled: Verdict | None, seed: int
) -> list[str]:
    """The notes of a run: its spot-check, and why it stopped early."""
    notes: list[str] = []
    if arm_plan is not None and arm_plan.auto and arm_plan.trigger_only:
        notes.append(
            spot_check_text(len(arm_plan.spot_checked), arm_plan.trigger_only)
            + f" (--arms auto: the trigger-only cases run without the skill once each, in a "
            f"sample chosen with --seed {seed}; --arms with,without runs them all)"
        )
    if stopped is not None and settled is not None:
        text = stopped_text(stopped.after, stopped.planned)
        if stopped.reason == "budget":
            text = (
                f"budget reached after {stopped.invocations} invocations; {text} (no outcome "
                "of the rest could change it)"
            )
        else:
            text += "; no outcome of the rest could change it, and the figures are those of the "
            text += "invocations that ran"
        notes.append(text)
    return notes


def report_spot_check(report: Mapping[str, Any]) -> str | None:
    """``isolation spot-checked on k of n cases`` from a report's ``arms``, or None."""
    arms = report.get("arms")
    spot = arms.get("spotCheck") if isinstance(arms, Mapping) else None
    if not isinstance(spot, Mapping):
        return None
    checked, of = spot.get("checked"), spot.get("of")
    if not isinstance(checked, int) or not isinstance(of, int) or of <= 0:
        return None
    return spot_check_text(checked, of)


def report_stopped(report: Mapping[str, Any]) -> str | None:
    """``stopped early: the verdict was settled after k of n invocations`` from a report's
    ``runner.stoppedEarly`` (a settled stop only), or None."""
    runner = report.get("runner")
    stop = runner.get("stoppedEarly") if isinstance(runner, Mapping) else None
    if not isinstance(stop, Mapping) or stop.get("settled") is not True:
        return None
    after, planned = stop.get("after"), stop.get("planned")
    if not isinstance(after, int) or not isinstance(planned, int):
        return None
    return stopped_text(after, planned)
