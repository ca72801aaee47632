"""`skill-evals ci plan --estimate` (docs/cost.md#ci-plan---estimate): what the run would cost.

Per skill to evaluate: the planned invocations (cases × trials × arms, ``without`` only where
``--arms auto`` runs it, the baseline arm under ``compare: base``), how many the cache already
holds, how many would therefore run, and — from the ``meta`` of the skill's cached
observations — the expected tokens and cost of those. Nothing runs; a figure with nothing to
estimate it from is unknown (None), never 0.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache.key import Uncacheable, runner_identity
from ..cache.run import suite_paths
from ..cache.store import ObservationCache
from ..errors import InvalidInput
from ..escaping.terminal import terminal_safe
from ..pipeline import is_builtin_runner
from ..plan.arms import Arm, ArmPlan, parse_arms
from ..run.observations import Key
from ..run.runner import split_command
from ..suite.cases import CaseSuite, load_cases
from ..suite.skill import Skill, load_skill
from .base_skills import BaseSkills
from .fingerprint import SkillState

ECHO = {"with": "with", "baseline": "with", "without": "without"}


@dataclass
class SkillEstimate:
    """One skill's planned, cached and to-run invocations per arm, and the expected spend."""

    name: str
    path: str
    planned: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None
    note: str | None = None  # why a figure is missing (no cases, no runner, ...)

    @property
    def to_run(self) -> int:
        """Planned invocations the cache does not hold."""
        return sum(self.planned.values()) - sum(self.cached.values())

    def to_json(self) -> dict[str, Any]:
        """The estimate's JSON form."""
        return {
            "skill": self.name,
            "path": self.path,
            "planned": sum(self.planned.values()),
            "cached": sum(self.cached.values()),
            "toRun": self.to_run,
            "arms": {
                arm: {"planned": n, "cached": self.cached.get(arm, 0)}
                for arm, n in self.planned.items()
            },
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "costUsd": self.cost_usd,
            "note": self.note,
        }


def _means(cache: ObservationCache) -> dict[str, dict[str, float]]:
    """Per runner variant (with/without), the mean of each meta figure over the cached
    observations that report it."""
    values: dict[str, dict[str, list[float]]] = {}
    for echo, meta in cache.stored_meta():
        per = values.setdefault(echo, {})
        for key in ("inputTokens", "outputTokens", "costUsd"):
            if key in meta:
                per.setdefault(key, []).append(float(meta[key]))
    return {
        echo: {key: statistics.fmean(vals) for key, vals in per.items()}
        for echo, per in values.items()
    }


def _expected(
    to_run: Mapping[str, int], means: Mapping[str, Mapping[str, float]], key: str
) -> float | None:
    """Σ over arms of invocations to run × that arm's mean; None when an arm that runs has no
    figure to go by."""
    total = 0.0
    for arm, count in to_run.items():
        if count == 0:
            continue
        mean = means.get(ECHO[arm], {}).get(key)
        if mean is None:
            return None
        total += count * mean
    return total


def estimate_skill(
    root: Path,
    state: SkillState,
    cache_settings: Any,
    bases: BaseSkills | None,
    arms_text: str = "auto",
) -> SkillEstimate:
    """The estimate of one skill (see the module docstring)."""
    settings = state.location.settings
    result = SkillEstimate(state.name, state.path)
    if state.location.cases is None:
        result.note = "no cases file"
        return result
    try:
        skill = load_skill(root / state.path)
        suite = load_cases(root / state.location.cases, skill.name)
    except InvalidInput as exc:
        result.note = str(exc)
        return result
    base = None
    if settings.compare_base and bases is not None:
        base = bases.match(state.path, state.name).state
    choice = parse_arms(arms_text)
    if choice is not None and base is not None and "baseline" not in choice:
        choice = (*choice, "baseline")
    plan = ArmPlan.build(suite, choice, base is not None, settings.seed)
    keys = plan.keys(suite, settings.trials)
    for _, _, arm in keys:
        result.planned[arm] = result.planned.get(arm, 0) + 1
    excluded = suite_paths(suite, skill.path)
    cache = _open(cache_settings, settings.runner, root, skill.name, excluded)
    if cache is None:
        result.note = None if cache_settings is None else "the runner command cannot be cached"
        return result
    _count_cached(result, cache, skill, suite, keys, base, bases)
    _expect_usage(result, cache, settings.budget.invocations)
    return result


def _count_cached(
    result: SkillEstimate,
    cache: ObservationCache,
    skill: Skill,
    suite: CaseSuite,
    keys: Sequence[Key],
    base: SkillState | None,
    bases: BaseSkills | None,
) -> None:
    """Count the planned invocations the cache already holds, per arm (the base version's as
    the run will offer it; a base that cannot be materialised is said in the note)."""
    arms = {
        "with": Arm("with", "with", skill.path, skill.directory_sha256),
        "without": Arm("without", "without", skill.path, None),
    }
    with contextlib.ExitStack() as stack:
        if base is not None and bases is not None:
            # The base version as the run will offer it (its key leaves the suite's files out).
            try:
                copy = stack.enter_context(bases.materialised(base))
            except InvalidInput as exc:
                result.note = f"base version: {exc}"
            else:
                arms["baseline"] = Arm("baseline", "with", copy, base.directory_sha256)
        cases = suite.by_id()
        for case_id, trial, name in keys:
            offered = arms.get(name)
            if offered is not None and cache.lookup(cases[case_id], trial, offered) is not None:
                result.cached[name] = result.cached.get(name, 0) + 1


def _expect_usage(result: SkillEstimate, cache: ObservationCache, cap: int | None) -> None:
    """The expected tokens and cost of what is left to run, from the cache's means; a budget
    that would stop the run early is said in the note."""
    to_run = {arm: n - result.cached.get(arm, 0) for arm, n in result.planned.items()}
    means = _means(cache)
    result.input_tokens = _expected(to_run, means, "inputTokens")
    result.output_tokens = _expected(to_run, means, "outputTokens")
    result.cost_usd = _expected(to_run, means, "costUsd")
    if result.cost_usd is None and result.to_run:
        result.note = "no cached observation reports its cost: cost unknown"
    if cap is not None and result.to_run > cap:
        capped = f"its budget stops the run after {cap} invocation(s)"
        result.note = f"{result.note}; {capped}" if result.note else capped


def _open(
    cache_settings: Any, runner: str | None, root: Path, name: str, excluded: Sequence[str]
) -> ObservationCache | None:
    if cache_settings is None or runner is None:
        return None
    builtin = is_builtin_runner(runner)
    try:
        identity = runner_identity(split_command(runner), root, builtin=builtin)
    except (Uncacheable, InvalidInput):
        return None
    return ObservationCache(
        cache_settings.directory, name, identity, cache_settings.max_age_s, excluded=excluded
    )


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "unknown"
    if unit == "$":
        return f"${value:.2f}"
    return f"{math.floor(value + 0.5):,}"


def render_estimate(estimates: Sequence[SkillEstimate]) -> str:
    """The table ``ci plan --estimate`` prints, with a total line."""
    header = ("skill", "planned", "cached", "to run", "tokens in", "tokens out", "cost")
    rows = [
        (
            terminal_safe(e.name),
            str(sum(e.planned.values())),
            str(sum(e.cached.values())),
            str(e.to_run),
            _num(e.input_tokens),
            _num(e.output_tokens),
            _num(e.cost_usd, "$"),
        )
        for e in estimates
    ]

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else math.fsum(v or 0.0 for v in values)

    rows.append(
        (
            "total",
            str(sum(sum(e.planned.values()) for e in estimates)),
            str(sum(sum(e.cached.values()) for e in estimates)),
            str(sum(e.to_run for e in estimates)),
            _num(total([e.input_tokens for e in estimates])),
            _num(total([e.output_tokens for e in estimates])),
            _num(total([e.cost_usd for e in estimates]), "$"),
        )
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                  enumerate(zip(row, widths, strict=True)))
        for row in [header, *rows]
    ]  # fmt: skip
    notes = [terminal_safe(f"{e.name}: {e.note}") for e in estimates if e.note]
    return "\n".join([*lines, *notes]) + "\n"
