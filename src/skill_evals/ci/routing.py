"""The ``routing:`` entry of `skill-evals ci` (docs/routing.md#in-ci): its fingerprint, whether
it changed, its evaluation through `route` and its entry in report.json.

The fingerprint covers the routing case file, every catalog skill's name and ``skillMdSha256``
and the settings that change results (runner, trials, seed, the two routing gates): a
description edit anywhere in the catalog re-runs routing; an edit elsewhere in a skill (its
references, its own cases) does not, and neither does a moved or renamed directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents import simulated
from ..codes import INTERRUPTED, INVALID, UNAVAILABLE
from ..errors import InvalidInput
from ..plan.ready import check_runner
from ..suite.skill_dirs import skill_dirs
from .base_commit import base_config
from .changes import ChangeSet
from .console import Console
from .discovery import Tree, skill_name
from .entry_run import entry_group, run_fields, run_with_progress, say_result
from .git import GitError
from .git_tree import GitTree
from .lock_file import read_lock_routing
from .outputs import fresh_record
from .settings import CiConfig, RoutingConfig, SkillSettings, runner_origin

ROUTING_NAME = "routing"  # the entry's name in outputs, and what `--only` selects it by
# observations/<skill>.jsonl names never contain "@" (skill_runs.safe_file_name): no skill's file
# can be this one.
OBSERVATIONS_FILE = "@routing.jsonl"
FINGERPRINT_VERSION = 1


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog skill as the fingerprint sees it."""

    path: str  # relative to the repository root
    name: str
    skill_md_sha256: str


@dataclass(frozen=True)
class RoutingState:
    """The configured routing entry with its hashes. ``fingerprint`` is None (and ``error``
    says why) when it cannot be computed: no case file, no catalog skill."""

    config: RoutingConfig
    settings: SkillSettings
    catalog: tuple[CatalogEntry, ...]
    cases_sha256: str | None
    fingerprint: str | None
    error: str | None = None

    def lock_entry(self) -> dict[str, Any]:
        """The lock file's ``routing`` entry."""
        return {
            "fingerprint": self.fingerprint,
            "cases": self.config.cases,
            "casesSha256": self.cases_sha256,
            "catalog": {e.name: e.skill_md_sha256 for e in self.catalog},
        }


def routing_fingerprint(
    cases_sha256: str, catalog: tuple[CatalogEntry, ...], settings: SkillSettings, routing: Any
) -> str:
    """SHA-256 (hex) of the canonical JSON of what changes a routing result."""
    payload = {
        "v": FINGERPRINT_VERSION,
        "kind": ROUTING_NAME,
        "casesSha256": cases_sha256,
        "catalog": sorted([e.name, e.skill_md_sha256] for e in catalog),
        "settings": {
            "runner": settings.runner,
            "trials": settings.trials,
            "seed": settings.seed,
            "gates": {"minAccuracy": routing.min_accuracy, "minSkillF1": routing.min_skill_f1},
        },
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def routing_state(tree: Tree, config: CiConfig, root_name: str) -> RoutingState | None:
    """The routing entry of ``config`` over ``tree`` (the working tree or a commit); None when
    the config has no ``routing:``."""
    routing = config.routing
    if routing is None:
        return None
    settings = config.routing_settings()
    globs = routing.skills if routing.skills is not None else config.skills
    dirs, _ = skill_dirs(tree, globs)
    catalog: list[CatalogEntry] = []
    for path in dirs:
        data = tree.read("SKILL.md" if path == "." else posixpath.join(path, "SKILL.md"))
        if data is None:
            continue  # a symlinked or oversized SKILL.md: route refuses it when it runs
        sha = hashlib.sha256(data).hexdigest()
        catalog.append(CatalogEntry(path, skill_name(tree, path, root_name), sha))
    cases = tree.read(routing.cases)
    error = None
    if cases is None:
        error = f"routing: no case file {routing.cases} (a regular file in the repository)"
    elif not catalog:
        error = "routing: no catalog skill matches " + (
            ", ".join(routing.skills) if routing.skills else "the gate's skills"
        )
    if error is not None or cases is None:
        return RoutingState(routing, settings, tuple(catalog), None, None, error)
    cases_sha = hashlib.sha256(cases).hexdigest()
    fingerprint = routing_fingerprint(cases_sha, tuple(catalog), settings, routing)
    return RoutingState(routing, settings, tuple(catalog), cases_sha, fingerprint)


def routing_change(
    root: Path, config: CiConfig, state: RoutingState, changes: ChangeSet
) -> tuple[bool, str]:
    """(whether routing runs, why), from how the skills' changes were found."""
    base = changes.base
    mode = base.get("mode")
    if state.fingerprint is None:
        return True, f"cannot be fingerprinted: {state.error}"
    if mode == "git" and isinstance(base.get("sha"), str):
        sha = str(base["sha"])
        try:
            tree = GitTree(root, sha)
            before = routing_state(tree, base_config(tree, config, root), root.resolve().name)
        except GitError as exc:
            return True, f"cannot read base {sha[:12]} ({exc}): routing is evaluated"
        if before is None:
            return True, f"new since base {sha[:12]}"
        if before.fingerprint == state.fingerprint:
            return False, f"fingerprint unchanged since base {sha[:12]}"
        return True, f"{_what_changed(before, state)} since base {sha[:12]}"
    if mode == "lock":
        recorded = read_lock_routing(root / str(base.get("lockFile", "")))
        if recorded is None:
            return True, "not in the lock file"
        if recorded == state.fingerprint:
            return False, "fingerprint unchanged since the lock file"
        return True, "changed since the lock file"
    return True, str(base.get("reason") or "every skill is evaluated")


def _what_changed(before: RoutingState, now: RoutingState) -> str:
    """A short reason: which descriptions, the cases, the catalog or the settings."""
    old = {e.name: e.skill_md_sha256 for e in before.catalog}
    new = {e.name: e.skill_md_sha256 for e in now.catalog}
    edited = sorted(n for n in new if n in old and old[n] != new[n])
    if set(old) != set(new):
        return "catalog changed (skills added or removed)"
    if edited:
        return "SKILL.md changed: " + ", ".join(edited[:5]) + (" …" if len(edited) > 5 else "")
    if before.cases_sha256 != now.cases_sha256:
        return "routing cases changed"
    return "settings changed"


def routing_entry(
    state: RoutingState, status: str, reason: str | None, code: int, report: Any = None
) -> dict[str, Any]:
    """The ``routing`` entry of report.json."""
    return {
        "name": ROUTING_NAME,
        "cases": state.config.cases,
        "catalog": [e.name for e in state.catalog],
        "fingerprint": state.fingerprint,
        "status": status,
        "reason": reason,
        "exitCode": code,
        "report": report,
        "simulated": simulated.is_simulated_command(state.settings.runner),
    }


@dataclass(frozen=True)
class RoutingRun:
    """Where and how the routing entry runs in this `ci` invocation."""

    root: Path
    out: Path
    env: Mapping[str, str]  # the caller's (require-env is checked here)
    runner_env: Mapping[str, str]  # what runners get: without the CI's own tokens
    console: Console
    quiet: bool = False


def routing_result(
    state: RoutingState | None,
    decision: tuple[bool, str] | None,
    interrupted: bool,
    run: RoutingRun,
    *,
    fail_on_missing_secrets: bool = False,
) -> dict[str, Any] | None:
    """The routing entry of this run: evaluated, unchanged, skipped, or None (not here)."""
    if state is None or decision is None:
        return None
    changed, reason = decision
    if not changed:
        return routing_entry(state, "unchanged", reason, 0)
    if interrupted:
        return routing_entry(state, "skipped", "not run: interrupted", INTERRUPTED)
    missing = state.settings.missing_env(run.env)
    if missing:
        code = UNAVAILABLE if fail_on_missing_secrets else 0
        text = "routing: skipped, required environment variable(s) empty or unset: " + (
            ", ".join(missing)
        )
        (run.console.error if code else run.console.warning)(text)
        return routing_entry(state, "skipped", text, code)
    return evaluate_routing(state, reason, run)


def evaluate_routing(state: RoutingState, reason: str, run: RoutingRun) -> dict[str, Any]:
    """Run the routing evaluation (`skill-evals route` over the catalog) and return its entry."""
    from ..pipeline import RouteOptions, run_route

    console = run.console
    record = run.out / "observations" / OBSERVATIONS_FILE
    problem = fresh_record(record)
    if problem is not None:
        text = f"routing: cannot prepare observations/{record.name} ({problem})"
        console.error(text)
        return routing_entry(state, "skipped", text, INVALID)
    options = RouteOptions(
        cases=run.root / state.config.cases,
        skills=tuple(run.root / e.path for e in state.catalog),
        min_accuracy=state.config.min_accuracy,
        min_skill_f1=state.config.min_skill_f1,
        **run_fields(state.settings, record, run.out, run.runner_env),
    )
    title = f"skill-evals routing ({len(state.catalog)} skills, {state.config.cases})"
    intro = f"evaluating routing ({reason})"
    with entry_group(console, title, intro, ROUTING_NAME, state.settings.runner):
        report = run_with_progress(
            console, run.quiet, lambda progress: run_route(options, progress=progress)
        )
    if report is None:
        text = f"interrupted during its evaluation; finished observations are in {record.name}"
        return routing_entry(state, "skipped", text, INTERRUPTED)
    code = say_result(console, ROUTING_NAME, report)
    return routing_entry(state, "evaluated", reason, code, report)


def preflight(
    state: RoutingState | None, env: Mapping[str, str], config: CiConfig | None = None
) -> None:
    """Configuration errors of the routing entry, before anything runs: exit 5, or 7 for a
    built-in runner whose agent CLI is missing."""
    if state is None:
        return
    if state.error is not None:
        raise InvalidInput(f"{state.error}; fix `routing:` in .skill-evals.yml")
    if state.settings.missing_env(env):
        return
    if state.settings.runner is None:
        raise InvalidInput("routing: no runner configured; set `runner:` or pass --runner")
    where = f"routing: {runner_origin(config, None)}"
    check_runner(state.settings.runner, env, os.getcwd(), where)


def routing_decision(
    root: Path, config: CiConfig, state: RoutingState | None, changes: ChangeSet, only: Any
) -> tuple[bool, str] | None:
    """Whether routing runs and why; None when it has no entry in this run (not configured,
    or ``--only`` names skills but not ``routing``: another shard runs it)."""
    if state is None:
        return None
    if only:
        return (True, "chosen with --only") if ROUTING_NAME in only else None
    return routing_change(root, config, state, changes)
