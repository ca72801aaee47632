"""The run step of `test` and `route`: open the observation cache, run the plan's invocations,
close the cache, and collect what the report says about them (exposure warnings, the cache's
notes, warnings and misses)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents.exposed import exposure_warnings
from ..agents.versions import VERSION_CHECKED_VAR, engine_check, is_agent_runner
from ..cache.run import finish_cache, open_cache
from ..cache.settings import CacheSettings
from ..sandbox.probe import SandboxChoice, SandboxUnusable, warning_text
from .execute import ExecutionPlan, ExecutionResult, Progress, execute
from .helper_commands import probe_environment


@dataclass(frozen=True)
class CacheUse:
    """How a run uses ``--cache``: its settings, whether the runner is one of this package's
    own, the cache's subdirectory (a skill name, or routing's) and the suite files left out of
    the skill version's key (cache.run.suite_paths)."""

    settings: CacheSettings
    builtin: bool
    scope: str
    excluded: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ran:
    """What a run gives the scoring: the result (its messages led by the exposure warnings and
    followed by the cache's), and the same warnings apart for a report that keeps its own."""

    result: ExecutionResult
    exposure: tuple[str, ...]
    cache_warnings: tuple[str, ...]
    cache_notes: tuple[str, ...]
    cache_misses: list[dict[str, Any]] | None  # runner.cacheMisses (None without a cache)

    def sandbox_warnings(self) -> list[str]:
        """The warning of an unsandboxed run, for a report that keeps its own warnings."""
        sandbox = self.result.sandbox
        reason = sandbox.get("reason") if isinstance(sandbox, dict) else None
        return [warning_text(reason)] if isinstance(reason, str) else []


_checked: dict[tuple[tuple[str, ...], str | None], str | None] = {}


def _version_lines(plan: ExecutionPlan) -> list[str]:
    """The agent version warning of a built-in agent runner, checked once per runner command
    and PATH in this process (``ci`` runs many skills with one runner), sandboxed as the run
    is (the run's sandbox decision is taken now)."""
    env = plan.base_env if plan.base_env is not None else os.environ
    key = (tuple(plan.command), env.get("PATH"))
    if key not in _checked:
        if not is_agent_runner(plan.command):
            return []
        assert plan.sandbox is not None  # run_plan gives every plan its choice
        try:
            sandbox = plan.sandbox.trusted(env, probe_environment(env))
        except SandboxUnusable:
            return []  # required and unusable: nothing starts, the run says why (exit 7)
        _checked[key] = engine_check(plan.command, env, sandbox)
    line = _checked[key]
    return [] if line is None else [line]


def run_plan(
    plan: ExecutionPlan,
    cache: CacheUse | None,
    watched: Sequence[Path],
    progress: Callable[[Progress], None] | None = None,
) -> Ran:
    """Run ``plan`` with the cache (when given); ``watched``: the skill folders the agent may
    see, checked for skills no content can prove loaded (agents.exposed)."""
    if plan.sandbox is None:  # one decision for the version check and the run
        plan = dataclasses.replace(plan, sandbox=SandboxChoice())
    store = None
    if cache is not None:
        store = open_cache(cache.settings, cache.builtin, plan.command, cache.scope, cache.excluded)
    exposure = [*_version_lines(plan), *exposure_warnings(watched)]
    if is_agent_runner(plan.command):  # checked here: each invocation need not check again
        plan = dataclasses.replace(
            plan, extra_env={**(plan.extra_env or {}), VERSION_CHECKED_VAR: "1"}
        )
    try:
        result = execute(dataclasses.replace(plan, cache=store), progress)
    finally:
        if store is not None:
            store.close()
    result.messages[:0] = exposure
    notes, misses = finish_cache(store, result, ())
    warnings = tuple(store.messages) if store is not None else ()
    return Ran(result, tuple(exposure), warnings, notes, misses)
