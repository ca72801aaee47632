"""The plan of a `route` run (docs/routing.md): the exit-5 checks of its output paths, what
``--resume`` and ``--observations`` give, the exit 6 and 7 that need no run, and the one arm,
``routing``, that offers the whole catalog.

Each routing invocation gets EVALGATE_SKILL_VARIANT=with, SKILL_EVALS_ARM=routing,
SKILL_EVALS_SKILL_DIRS = the catalog's absolute directories joined by newlines, and no
EVALGATE_SKILL_DIR (a runner that knows only one skill must not silently measure a one-skill
catalog).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ..cache.key import canonical_json
from ..cache.run import check_cache_dir
from ..errors import EvidenceUnavailable
from ..report.outputs import HeldOutputs
from ..run.execute import ExecutionPlan, ExecutionResult
from ..run.route_observations import load_route_observations
from ..run.runner import split_command
from ..suite.catalog import Catalog
from ..suite.route_cases import RouteSuite
from .arms import ARM_VAR, ROUTING_ARM, Arm
from .files import RunFiles, check_outputs, check_outputs_outside, resumed_observations
from .ready import check_runner
from .run_settings import RunSettings, require_units, runner_notes

SKILL_DIRS_VAR = "SKILL_EVALS_SKILL_DIRS"
CACHE_SCOPE = "%routing"  # the cache subdirectory of routing runs (no skill name holds "%")

NO_ISOLATION_TO_VERIFY = (
    "--require-verified-isolation: a routing run has no without arm, so there is no isolation "
    "to verify"
)


@dataclass(frozen=True)
class RoutePlan:
    """What a `route` run does: run ``execution``, or score the ``recorded`` observations."""

    execution: ExecutionPlan | None  # None: --observations, nothing runs
    recorded: ExecutionResult | None
    notes: tuple[str, ...] = ()  # the report's notes known before the run
    resumed: int = 0  # observations --resume gave back


def catalog_warnings(catalog: Catalog) -> list[str]:
    """The format warnings of the catalog's skills, as the report words them."""
    return [f"skill format: {w}" for s in catalog.skills for w in s.warnings]


def check_catalog_outputs(catalog: Catalog, files: RunFiles, held: HeldOutputs | None) -> None:
    """Exit 5 for an output inside a catalog skill, then the output checks of ``test``."""
    for out in files.outputs:
        for skill in catalog.skills:
            check_outputs_outside((out,), skill.path, "catalog skill")
    check_outputs(files, held)


def routing_env(catalog: Catalog) -> dict[str, str | None]:
    """What every routing invocation's environment adds to (None: removes from) the caller's."""
    return {ARM_VAR: ROUTING_ARM, SKILL_DIRS_VAR: catalog.env_value(), "EVALGATE_SKILL_DIR": None}


def catalog_sha256(catalog: Catalog) -> str:
    """The hash of a catalog as one offered version: its skills' directory hashes, in the
    order the runner gets them."""
    return hashlib.sha256(canonical_json([s.directory_sha256 for s in catalog.skills])).hexdigest()


def plan_route(
    catalog: Catalog,
    suite: RouteSuite,
    files: RunFiles,
    run: RunSettings,
    min_skill_f1: float | None,
    require_verified_isolation: bool = False,
) -> RoutePlan:
    """The plan of one routing run; exit 5, 6 or 7 for what can be decided before it starts."""
    command = split_command(run.runner) if run.runner is not None else ()
    engine = suite.engine_suite()
    resumed = resumed_observations(files, engine, run.trials)
    recorded = None
    if files.observations is not None:
        observations = load_route_observations(files.observations, engine, run.trials)
        recorded = ExecutionResult(observations=observations)
    require_units(suite.path, suite.unit_count)
    if min_skill_f1 is not None and not any(c.expect for c in suite.cases):
        raise EvidenceUnavailable(
            f"--min-skill-f1 is set but no case in {suite.path} expects a skill, so no "
            "skill's F1 can be measured; add cases whose expect names skills"
        )
    if recorded is not None:
        return RoutePlan(None, recorded)
    notes = runner_notes(run.runner)
    if require_verified_isolation:
        notes = (*notes, NO_ISOLATION_TO_VERIFY)
    check_cache_dir(run.cache, *(s.path for s in catalog.skills))
    check_runner(run.runner, run.env if run.env is not None else os.environ, os.getcwd())
    execution = run.execution_plan(
        command,
        engine,
        ROUTING_ARM,
        catalog.skills[0].path,  # unused: EVALGATE_SKILL_DIR is removed
        files.record,
        resumed,
        variants=("with",),
        extra_env=routing_env(catalog),
        # The one arm offers the whole catalog: its hash names the offered version.
        arms=(Arm("with", "with", catalog.skills[0].path, catalog_sha256(catalog)),),
    )
    with_arm = len([o for o in resumed if o.variant == "with"])
    return RoutePlan(execution, None, notes, with_arm)
