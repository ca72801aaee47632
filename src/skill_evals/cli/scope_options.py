"""`skill-evals test` options for the baseline comparison, the arms, budgets and the early stop
(docs/comparison.md): the click options and their translation into ArmOptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from .common import FloatRange
from .options import compose, dir_option, option

F = TypeVar("F", bound=Callable[..., Any])

NAMES = (
    "baseline",
    "arms",
    "max_invocations",
    "max_cost_usd",
    "stop_when_settled",
    "max_f1_drop",
    "max_pass_drop",
    "min_f1_gain",
    "min_pass_gain",
)


def _compare_gate(name: str, kind: FloatRange, fails_when: str) -> Callable[[F], F]:
    return click.option(
        name,
        type=kind,
        default=None,
        metavar="X",
        help=f"Gate (needs --baseline): fail (exit 1) when the {fails_when}. Default: no gate.",
    )


_OPTIONS = [
    dir_option(
        "--baseline",
        help_text="Another version of the same skill (its SKILL.md has the same name) to compare "
        "with, e.g. the one on the main branch: adds the baseline arm and the report's "
        "comparison. The skill itself gives an A/A run. Default: none.",
    ),
    click.option(
        "--arms",
        default=None,
        metavar="LIST",
        help="Which arms run: a comma-separated subset of with,without,baseline (with is "
        "required), or auto: without only for cases with a task check plus an isolation "
        "spot-check of the trigger-only ones. Default: with,without; with,baseline,without "
        "with --baseline.",
    ),
    option(
        "--max-invocations",
        help="Budget: start no runner process (retries included) after N; running ones "
        "finish. The verdict is then the settled one, else unavailable (exit 7). "
        "Default: no limit.",
    ),
    option(
        "--max-cost-usd",
        help="Budget: start no invocation once the runners reported X dollars (meta.costUsd; "
        "running ones finish, so the overshoot is at most --jobs − 1 invocations). "
        "Default: no limit.",
    ),
    click.option(
        "--stop-when-settled/--no-stop-when-settled",
        default=False,
        help="Stop starting invocations once no outcome of the rest could change any gate's "
        "verdict (only with a gate set). Default: off (on in skill-evals ci).",
    ),
    _compare_gate(
        "--max-f1-drop",
        FloatRange(0, 1),
        "upper bound of the F1 difference's 95% interval is below −X, i.e. confidently worse "
        "than the baseline by more than X",
    ),
    _compare_gate(
        "--max-pass-drop",
        FloatRange(0, 1),
        "upper bound of the pass-rate difference's 95% interval is below −X",
    ),
    _compare_gate(
        "--min-f1-gain",
        FloatRange(-1, 1),
        "lower bound of the F1 difference's 95% interval is below X",
    ),
    _compare_gate(
        "--min-pass-gain",
        FloatRange(-1, 1),
        "lower bound of the pass-rate difference's 95% interval is below X",
    ),
]


scope_options = compose(_OPTIONS)
"""Add the options above to a click command (they arrive as keyword arguments)."""


def arm_options(values: dict[str, Any]) -> Any:
    """Take the options above out of ``values`` (the command's keyword arguments) and return
    them as ArmOptions."""
    from ..plan.scope import ArmOptions
    from ..score.compare import CompareGates

    given = {name: values.pop(name, None) for name in NAMES}
    return ArmOptions(
        baseline=given["baseline"],
        arms=given["arms"],
        max_invocations=given["max_invocations"],
        max_cost_usd=given["max_cost_usd"],
        stop_when_settled=bool(given["stop_when_settled"]),
        compare=CompareGates(
            max_f1_drop=given["max_f1_drop"],
            max_pass_drop=given["max_pass_drop"],
            min_f1_gain=given["min_f1_gain"],
            min_pass_gain=given["min_pass_gain"],
        ),
    )
