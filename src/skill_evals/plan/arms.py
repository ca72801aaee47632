"""Arms: which versions of the skill a run offers, and which invocations each needs
(docs/comparison.md).

An *arm* is what one invocation offers the agent: ``with`` (the skill under test), ``without``
(no skill) or ``baseline`` (another version of the same skill, e.g. the one on the main branch).
The runner sees ``SKILL_EVALS_ARM``; a baseline invocation is a ``with`` invocation of the
baseline directory, so runners written for two variants serve it unchanged.

``--arms auto`` runs ``without`` only where a figure needs it: for every case with a task check
(uplift pairs with and without), and for an isolation spot-check of the trigger-only cases.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..run.observations import ARMS, Echo, Key, Variant
from ..score.stats import Mulberry32
from ..suite.cases import CaseSuite

ARM_VAR = "SKILL_EVALS_ARM"
ROUTING_ARM = "routing"  # the one arm of a routing run (the route report names it too)
AUTO = "auto"
TWO_ARMS: tuple[Variant, ...] = ("with", "without")


@dataclass(frozen=True)
class Arm:
    """One arm of a run: its name, the variant the runner is told (and echoes), and the skill
    directory it offers. ``directory_sha256`` is the offered version's hash (None for
    ``without``, which offers none): with the runner, the case and the trial it names what an
    observation of this arm depends on (the key a cache would store it under)."""

    name: Variant
    echo: Echo
    skill_dir: Path  # EVALGATE_SKILL_DIR (the tested skill for ``without``, as before)
    directory_sha256: str | None


def make_arms(
    names: Sequence[Variant],
    skill_dir: Path,
    skill_sha: str,
    baseline_dir: Path | None = None,
    baseline_sha: str | None = None,
) -> tuple[Arm, ...]:
    """The Arm objects for ``names`` (in the engine's order: with, without, baseline)."""
    arms: list[Arm] = []
    for name in ARMS:
        if name not in names:
            continue
        if name == "with":
            arms.append(Arm("with", "with", skill_dir, skill_sha))
        elif name == "without":
            arms.append(Arm("without", "without", skill_dir, None))
        else:
            if baseline_dir is None:
                raise ValueError("the baseline arm needs a baseline directory")
            arms.append(Arm("baseline", "with", baseline_dir, baseline_sha))
    return tuple(arms)


def parse_arms(text: str) -> tuple[Variant, ...] | None:
    """``--arms``: ``auto`` (None) or a comma-separated subset of with, without, baseline,
    returned in the engine's order. InvalidInput (exit 5) for an unknown or repeated name."""
    value = text.strip()
    if value == AUTO:
        return None
    names = [part.strip() for part in value.split(",")]
    seen: list[Variant] = []
    for name in names:
        if name not in ARMS:
            shown = name if len(name) <= 40 else name[:40] + "…"
            raise InvalidInput(
                f"--arms {shown!r}: not an arm; give auto or a comma-separated list of "
                "with, without, baseline"
            )
        arm: Variant = "with" if name == "with" else "without" if name == "without" else "baseline"
        if arm in seen:
            raise InvalidInput(f"--arms: {name} is given twice")
        seen.append(arm)
    return tuple(a for a in ARMS if a in seen)


def spot_check_size(n: int) -> int:
    """k = min(n, max(3, ⌈0.2·n⌉)): how many of n trigger-only cases the isolation
    spot-check runs without the skill."""
    return min(n, max(3, math.ceil(n / 5)))


def spot_check(case_ids: Sequence[str], seed: int) -> tuple[str, ...]:
    """The spot-checked cases among the trigger-only ``case_ids`` (in case-file order), chosen
    with ``seed``: a partial Fisher–Yates shuffle of the positions 0..n−1 driven by a fresh
    mulberry32 stream (for i = 0..k−1: j = i + floor(draw × (n − i)), swap positions i and j);
    the first k positions, returned in case-file order."""
    n = len(case_ids)
    k = spot_check_size(n)
    rng = Mulberry32(seed)
    order = list(range(n))
    for i in range(k):
        j = i + ((rng.next_uint32() * (n - i)) >> 32)  # floor(draw × (n − i)), exact
        order[i], order[j] = order[j], order[i]
    chosen = sorted(order[:k])
    return tuple(case_ids[i] for i in chosen)


@dataclass(frozen=True)
class ArmPlan:
    """Which (case, trial, arm) invocations a run needs.

    ``auto``: ``without`` runs for the cases with a task check (every trial) and for the
    ``spot_checked`` trigger-only cases (trial 1 only); the other arms run everywhere."""

    arms: tuple[Variant, ...]
    auto: bool = False
    spot_checked: tuple[str, ...] = ()
    trigger_only: int = 0  # n: how many cases have no task check (auto only)

    @classmethod
    def build(
        cls, suite: CaseSuite, choice: tuple[Variant, ...] | None, baseline: bool, seed: int
    ) -> ArmPlan:
        """The plan for ``--arms`` ``choice`` (None: auto)."""
        if choice is not None:
            return cls(arms=choice)
        arms: tuple[Variant, ...] = ("with", "without", "baseline") if baseline else TWO_ARMS
        trigger_only = [c.id for c in suite.cases if c.task is None]
        return cls(
            arms=arms,
            auto=True,
            spot_checked=spot_check(trigger_only, seed) if trigger_only else (),
            trigger_only=len(trigger_only),
        )

    def keys(self, suite: CaseSuite, trials: int) -> list[Key]:
        """Every planned key in report order: case-file order, trial, arm."""
        spot = set(self.spot_checked)
        keys: list[Key] = []
        for case in suite.cases:
            full_without = not self.auto or case.task is not None
            for trial in range(1, trials + 1):
                for arm in self.arms:
                    if (
                        arm == "without"
                        and not full_without
                        and (trial != 1 or case.id not in spot)
                    ):
                        continue
                    keys.append((case.id, trial, arm))
        return keys

    def report_block(self) -> dict[str, Any]:
        """The report's ``arms``: the arms run, whether ``auto`` chose them, the spot-check."""
        spot: dict[str, Any] | None = None
        if self.auto and "without" in self.arms and self.trigger_only:
            spot = {
                "caseIds": list(self.spot_checked),
                "checked": len(self.spot_checked),
                "of": self.trigger_only,
            }
        return {"names": list(self.arms), "auto": self.auto, "spotCheck": spot}


def run_order(keys: Sequence[Key], trials: int) -> list[Key]:
    """The order invocations start in: trial-major (trial 1 of every case and arm, then trial
    2, …), within a trial in report order. A run cut short (budget, a settled verdict, an
    interrupt) then holds whole early trials rather than a few cases in full."""
    by_trial: list[list[Key]] = [[] for _ in range(trials)]
    for key in keys:
        by_trial[key[1] - 1].append(key)
    return [key for trial in by_trial for key in trial]
