"""What a `test` run covers besides the cases: the arms, the baseline version, the budget and
whether to stop once the verdict is settled (docs/comparison.md) — checked before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EvidenceUnavailable, InsufficientUnits, InvalidInput
from ..run.observations import Key, Variant
from ..score.compare import CompareGates
from ..suite.cases import MIN_UNITS, CaseSuite
from ..suite.skill import Skill, load_skill
from .arms import Arm, ArmPlan, make_arms, parse_arms
from .run_control import Budget
from .settle_state import SettleGates


@dataclass(frozen=True)
class ArmOptions:
    """--baseline, --arms, --max-invocations, --max-cost-usd, --stop-when-settled and the four
    comparison gates."""

    baseline: Path | None = None
    arms: str | None = None  # "auto" or a comma-separated list; None: the default list
    max_invocations: int | None = None
    max_cost_usd: float | None = None
    stop_when_settled: bool = False
    compare: CompareGates = field(default_factory=CompareGates)

    @property
    def budget(self) -> Budget | None:
        """The budget, when one is set."""
        if self.max_invocations is None and self.max_cost_usd is None:
            return None
        return Budget(self.max_invocations, self.max_cost_usd)


@dataclass(frozen=True)
class Scope:
    """The checked scope of a run."""

    baseline: Skill | None
    plan: ArmPlan
    arms: tuple[Arm, ...]
    planned: list[Key]


def load_baseline(options: ArmOptions, skill: Skill, outputs: Sequence[Path]) -> Skill | None:
    """The --baseline skill, hashed like the tested one; exit 5 when it is unusable, its name
    differs from the tested skill's, or an output would be written inside it."""
    if options.baseline is None:
        return None
    baseline = load_skill(options.baseline)
    if baseline.name != skill.name:
        raise InvalidInput(
            f"--baseline {options.baseline}: its SKILL.md names {baseline.name!r}, the tested "
            f"skill is {skill.name!r}; the baseline must be another version of the same skill"
        )
    for out in outputs:
        if out.resolve().is_relative_to(baseline.path):
            raise InvalidInput(
                f"{out}: output path lies inside the baseline directory {baseline.path}; "
                "write it elsewhere (it would change the baseline's hash)"
            )
    return baseline


def plan_scope(
    options: ArmOptions,
    skill: Skill,
    baseline: Skill | None,
    suite: CaseSuite,
    trials: int,
    seed: int,
    min_uplift: float | None,
) -> Scope:
    """The arms and the planned invocations; exit 5 for arms that do not fit the options,
    6/7 for a comparison gate that cannot be decided, before anything runs."""
    choice = parse_arms(options.arms) if options.arms is not None else _default(baseline)
    if choice is not None:
        if "baseline" in choice and baseline is None:
            raise InvalidInput("--arms baseline needs --baseline DIR (the version to compare with)")
        if "with" not in choice:
            raise InvalidInput("--arms: the list must hold with (the skill under test)")
        if baseline is not None and "baseline" not in choice:
            raise InvalidInput(
                f"--baseline {options.baseline} is given but --arms leaves baseline out; add it "
                "or drop --baseline"
            )
        if min_uplift is not None and "without" not in choice:
            raise InvalidInput(
                "--min-uplift compares with and without the skill: --arms must hold without"
            )
    _check_compare_gates(options.compare, baseline, suite)
    plan = ArmPlan.build(suite, choice, baseline is not None, seed)
    arms = make_arms(
        plan.arms,
        skill.path,
        skill.directory_sha256,
        baseline.path if baseline else None,
        baseline.directory_sha256 if baseline else None,
    )
    return Scope(baseline, plan, arms, plan.keys(suite, trials))


def _default(baseline: Skill | None) -> tuple[Variant, ...]:
    return ("with", "without", "baseline") if baseline is not None else ("with", "without")


def _check_compare_gates(gates: CompareGates, baseline: Skill | None, suite: CaseSuite) -> None:
    if not gates.any_set:
        return
    if baseline is None:
        raise InvalidInput(
            "--max-f1-drop, --max-pass-drop, --min-f1-gain and --min-pass-gain compare with a "
            "baseline: add --baseline DIR"
        )
    if gates.on_f1 and not any(c.expect_trigger for c in suite.cases):
        raise EvidenceUnavailable(
            f"--max-f1-drop / --min-f1-gain are set but no case in {suite.path} has "
            "expectTrigger: true, so F1 is undefined in both arms"
        )
    if gates.on_pass:
        units = len({c.unit for c in suite.cases if c.task is not None})
        if units == 0:
            raise EvidenceUnavailable(
                f"--max-pass-drop / --min-pass-gain are set but no case in {suite.path} has a "
                "task check"
            )
        if units < MIN_UNITS:
            raise InsufficientUnits(
                f"--max-pass-drop / --min-pass-gain need at least {MIN_UNITS} independent cases "
                f"with a task check; {suite.path} has {units}"
            )


def settle_gates(
    min_trigger_f1: float | None, min_uplift: float | None, gates: CompareGates, suite: CaseSuite
) -> SettleGates:
    """The gates a settle check judges for this run."""
    return SettleGates(
        min_trigger_f1=min_trigger_f1,
        min_uplift=min_uplift,
        loading=any(c.include or c.exclude for c in suite.cases),
        compare=gates,
    )
