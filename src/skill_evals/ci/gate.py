"""`skill-evals ci`: evaluate every changed skill of a repository and write the gate's outputs
(docs/ci.md): report.json, junit.xml, summary.md, comment.md, report.html, observations/*.jsonl,
``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``, annotations and the sticky PR comment.

The pipeline: load and select (ci/selection.py), preflight, the skill runs (ci/skill_runs.py)
and the routing run (ci/routing.py), then the outputs (ci/outputs.py).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..codes import INTERRUPTED, combine
from ..errors import EvidenceUnavailable, InvalidInput
from ..report.answers import Answers
from ..suite.cases import CaseSuite
from . import workflow
from .changes import ChangeSet
from .console import Console, annotate
from .entry_run import runner_env
from .fingerprint import SkillState
from .history import record_run
from .listing import check_listing
from .outputs import build_report, prepare_out, write_outputs
from .routing import RoutingRun, routing_decision, routing_result
from .routing import preflight as routing_preflight
from .selection import CiOptions, Workspace, load_options, select
from .settings import CiConfig
from .skill_runs import evaluate_skills, preflight_skills
from .suggest_post import post_suggestions


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Selection:
    """What the gate evaluates: the workspace, how changes were found, the chosen skills and
    whether routing runs (None: no routing entry here)."""

    workspace: Workspace
    changes: ChangeSet
    chosen: list[SkillState]
    routing: tuple[bool, str] | None
    listing: dict[str, Any] | None = None
    loaded: dict[str, CaseSuite] | None = None  # case files the pre-check read, by path


def run_ci(
    options: CiOptions, env: Mapping[str, str], err: TextIO | None = None, out: TextIO | None = None
) -> int:
    """Run the gate, write every output, return the exit code."""
    console = Console(env, options.quiet, err or sys.stderr, out or sys.stdout)
    selection = _select(options, env, console)
    if isinstance(selection, int):
        return selection
    workspace, changes, chosen = selection.workspace, selection.changes, selection.chosen
    answers: dict[str, Answers] = {}  # skill path → answer texts, for include-outputs only
    skills = evaluate_skills(
        workspace, changes, chosen, options, env, console, answers, selection.loaded
    )
    routed = routing_result(
        workspace.routing,
        selection.routing,
        any(s["exitCode"] == INTERRUPTED for s in skills),
        RoutingRun(options.root, options.out, env, runner_env(env), console, options.quiet),
        fail_on_missing_secrets=options.fail_on_missing_secrets,
    )
    messages = list(workspace.messages)
    if not chosen and (routed is None or routed["status"] == "unchanged"):
        messages.append(
            "no skill to evaluate: nothing changed"
            if workspace.states
            else "no skill found in the repository"
        )
    messages.extend(changes.base.get("messages", []))
    if changes.base.get("reason"):
        console.info(str(changes.base["reason"]))
    codes = [s["exitCode"] for s in skills] + ([routed["exitCode"]] if routed else [])
    exit_code = combine(codes)
    ci_report = build_report(exit_code, skills, changes.base, messages, changes.removed, routed)
    ci_report["listing"] = selection.listing
    ci_report["policyFrom"] = workspace.policy_from
    for message in ci_report["messages"]:
        console.info(message)
    config = workspace.config
    trends = record_run(
        config.history, config.cache_dir, options.root, ci_report, env, console.warning
    )
    if trends is not None:
        ci_report["trends"] = trends
    names = [state.name for state in workspace.states]
    write_outputs(
        ci_report, options.out, env, console, comment=options.comment, answers=answers, names=names
    )
    if options.comment:
        post_suggestions(ci_report, options.out, env, console)
    annotate(ci_report, console)
    console.info(f"{ci_report['status']} (exit {exit_code}); report in {options.out}")
    return exit_code


def _select(options: CiOptions, env: Mapping[str, str], console: Console) -> _Selection | int:
    """Load the workspace, check --out, choose the skills and decide routing, before anything
    runs; on an error or an interrupt, its outputs are written (when --out can take them) and
    the exit code returned."""
    writable = True
    try:
        workspace = load_options(options, env)
        refuse_cache_in_tree(workspace.config, options.root)
        for state in workspace.states:
            if _inside(options.out, options.root / state.path):
                writable = False  # writing there would change the skill it reports on
                raise InvalidInput(
                    f"--out {options.out}: lies inside the skill directory {state.path}; "
                    "write the report elsewhere (it would change the skill's hash)"
                )
        try:
            prepare_out(options.out)  # before anything runs, not after the whole run
        except InvalidInput:
            writable = False
            raise
        changes, chosen = select(workspace, options, env)
        loaded = preflight_skills(chosen, env, workspace.config, workspace.root)
        listed = check_listing(workspace.config, options.root, workspace.states, console)
        routing = routing_decision(
            options.root, workspace.config, workspace.routing, changes, changes.base.get("only")
        )
        if routing is not None and routing[0]:
            routing_preflight(workspace.routing, env, workspace.config)
    except (InvalidInput, EvidenceUnavailable) as exc:
        if console.actions:  # a workflow command means nothing outside GitHub Actions
            console.command(workflow.annotation("error", str(exc)))
        console.error(str(exc))
        if writable:
            _write_early(exc.exit_code, str(exc), options, env, console)
        return exc.exit_code
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM while hashing or reading git: nothing ran; still say so in the outputs.
        message = "interrupted before any skill was evaluated"
        console.error(message)
        if writable:
            _write_early(INTERRUPTED, message, options, env, console)
        return INTERRUPTED
    return _Selection(workspace, changes, chosen, routing, listed, loaded)


def refuse_cache_in_tree(config: CiConfig, root: Path) -> None:
    """Exit 5 when the cache directory lies inside the repository's work tree: a pull request
    could commit entries there that decide its own verdict."""
    directory = config.cache_dir
    if directory is None or not _inside(root / directory, root):
        return
    key = "--cache" if config.cli.get("cache") is not None else "cache"
    raise InvalidInput(
        f"{key} {directory}: lies inside the repository's work tree, where a pull request could "
        "commit cache entries that decide its own verdict; use a directory outside the "
        "checkout (the action uses $RUNNER_TEMP/skill-evals-cache, kept with actions/cache)"
    )


def _write_early(
    code: int, message: str, options: CiOptions, env: Mapping[str, str], console: Console
) -> None:
    """The outputs of a run stopped before any skill was chosen, when --out can take them."""
    try:
        prepare_out(options.out)
    except InvalidInput:
        return  # the error that stopped the run is reported; this one shows once it is fixed
    ci_report = build_report(code, [], {"mode": "none"}, [message])
    write_outputs(ci_report, options.out, env, console, comment=options.comment)
