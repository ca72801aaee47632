"""`skill-evals ci plan`: the matrix of the skills a run would evaluate, and with
``--estimate`` what that run would cost (docs/ci.md, docs/cost.md)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .base_commit import event_base_sha
from .base_skills import compare_ref
from .routing import ROUTING_NAME, routing_decision
from .selection import CiOptions, load_options, select


def plan(options: CiOptions, env: Mapping[str, str]) -> dict[str, Any]:
    """``{"include": [{"skill", "path"}]}`` of the skills to evaluate, for strategy.matrix."""
    workspace = load_options(options, env, sys.stderr)
    changes, chosen = select(workspace, options, env)
    include = [{"skill": s.name, "path": s.path} for s in chosen]
    routing = routing_decision(
        options.root, workspace.config, workspace.routing, changes, changes.base.get("only")
    )
    if routing is not None and routing[0] and workspace.routing is not None:
        # One more shard: `ci --only routing` runs the routing entry.
        include.append({"skill": ROUTING_NAME, "path": workspace.routing.config.cases})
    return {"include": include}


def estimate(options: CiOptions, env: Mapping[str, str]) -> list[Any]:
    """``ci plan --estimate``: a SkillEstimate for every skill the run would evaluate."""
    from .base_skills import load_base_skills
    from .estimate import estimate_skill

    workspace = load_options(options, env, sys.stderr)
    changes, chosen = select(workspace, options, env)
    cache = workspace.config.cache_settings(workspace.root)
    bases = None
    if any(s.location.settings.compare_base for s in chosen):
        ref = compare_ref(changes.base, options.choice.base, event_base_sha(env))
        bases, _ = load_base_skills(workspace.root, workspace.config, ref)
    return [
        _skipped(s, env)
        or estimate_skill(workspace.root, s, cache, bases, s.location.settings.arms)
        for s in chosen
    ]


def _skipped(state: Any, env: Mapping[str, str]) -> Any:
    """The estimate of a skill the run would skip (a ``require-env`` variable its runner in
    effect needs is empty or unset): nothing runs, so nothing is planned. None otherwise."""
    from .estimate import SkillEstimate

    missing = state.location.settings.missing_env(env)
    if not missing:
        return None
    note = "skipped, required environment variable(s) empty or unset: " + ", ".join(missing)
    return SkillEstimate(state.name, state.path, note=note)
