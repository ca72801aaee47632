"""Click commands `skill-evals lock` and `changed` (docs/ci.md): the lock file and the list of
changed skills. Heavy modules are imported inside the commands so that `--help` stays fast."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..cli.common import fail
from ..cli.helptext import CONTEXT, epilog
from .command_options import (
    base_choice,
    base_option,
    config_option,
    lock_option,
    say,
    trust_option,
)

CONFIG_HELP = "The config file. Default: .skill-evals.yml at the root, when present."

if TYPE_CHECKING:
    from .changes import ChangeSet


@click.command(
    context_settings=CONTEXT,
    short_help="Write (--update) or check the lock file of skill fingerprints.",
    epilog=epilog("skill-evals lock --update\nskill-evals lock", "docs/ci.md#the-lock-file"),
)
@click.option(
    "--update",
    is_flag=True,
    help="Write the lock file from the current tree (default: only check it).",
)
@config_option(CONFIG_HELP)
@lock_option("The lock file. Default: the config's `lock`, else .skill-evals.lock.json.")
@trust_option()
def lock(update: bool, config: Path | None, lock_file: Path | None, trust_pr_config: bool) -> None:
    """Write (--update) or check the lock file of skill fingerprints.

    Check: exit 0 when the lock matches the tree, 1 when it is stale or missing (the
    differences are printed), 5 on invalid input."""
    from ..errors import EvalError, InvalidInput
    from .changes import compare
    from .lock_file import lock_fingerprints, read_lock, read_lock_routing, render_lock
    from .outputs import replace_file

    root = Path.cwd()
    try:
        workspace = _workspace(root, config, trust_pr_config)
        path = lock_file if lock_file is not None else root / workspace.config.lock
        routing = workspace.routing
        if routing is not None and routing.fingerprint is None:
            raise InvalidInput(f"{routing.error}; fix `routing:` in the config")
        routing_lock = routing.lock_entry() if routing is not None else None
        if update:
            text = render_lock(workspace.states, routing_lock)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                replace_file(path, text)  # a FIFO or symlink there is replaced, not opened
            except OSError as exc:
                fail(f"{path}: cannot write the lock file ({exc.strerror})")
            say(f"wrote {path} ({len(workspace.states)} skill(s))")
            return
        if not path.is_file():
            say(f"{path}: no lock file; run `skill-evals lock --update`", err=True)
            sys.exit(1)
        recorded = read_lock(path)
        recorded_routing = read_lock_routing(path)
        render_lock(workspace.states)  # every skill must be hashable (else exit 5)
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    base = lock_fingerprints(recorded)
    changes = compare(workspace.states, base, {"mode": "lock"}, path.name)
    stale = [(p, r) for p, r in changes.changed.items()]
    stale += [(p, r) for p, r in changes.unchanged.items() if r.startswith("moved")]
    stale += [(r["path"], "removed since the lock was written") for r in changes.removed]
    if routing is not None and recorded_routing != routing.fingerprint:
        stale.append(("routing", "changed since the lock was written"))
    elif routing is None and recorded_routing is not None:
        stale.append(("routing", "no longer configured"))
    if not stale:
        say(f"{path}: up to date ({len(workspace.states)} skill(s))")
        return
    for skill_path, reason in sorted(stale):
        say(f"{skill_path}: {reason}")
    say(f"{path}: stale; run `skill-evals lock --update`", err=True)
    sys.exit(1)


def _counted(changes: ChangeSet, routed: tuple[bool, str] | None) -> str:
    """How many skills changed, were unchanged or removed, and whether routing re-runs."""
    from .routing import ROUTING_NAME

    counted = f"{len(changes.changed)} changed, {len(changes.unchanged)} unchanged" + (
        f", {len(changes.removed)} removed" if changes.removed else ""
    )
    if not changes.changed:
        counted = "no skill changed (" + counted + ")"
    if routed is not None:
        counted += f"; {ROUTING_NAME}: " + ("re-runs" if routed[0] else "unchanged")
        counted += f" ({routed[1]})"
    return counted


@click.command(
    context_settings=CONTEXT,
    short_help="List the skills whose fingerprint changed (how it was decided: on stderr).",
    epilog=epilog(
        "skill-evals changed --base origin/main\nskill-evals changed --format json",
        "docs/ci.md#skill-evals-changed",
    ),
)
@config_option(CONFIG_HELP)
@base_option(
    "Compare with this git commit. Default: the PR's base on pull requests, else the "
    "lock file when present, else every skill."
)
@lock_option("Compare with the fingerprints in this lock file. Default: as for --base.")
@click.option("--all", "all_", is_flag=True, help="Report every skill as changed.")
@trust_option()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["lines", "json"]),
    default="lines",
    help="lines: one changed skill path per line; json: changed, unchanged and removed skills.",
)
def changed(
    config: Path | None,
    base: str | None,
    lock_file: Path | None,
    all_: bool,
    trust_pr_config: bool,
    fmt: str,
) -> None:
    """List the skills whose fingerprint changed on stdout; say on stderr how changes were
    found and how many skills changed (also when none did)."""
    from ..errors import EvalError
    from .changes import describe_base, detect_changes
    from .routing import ROUTING_NAME, routing_change

    root = Path.cwd()
    choice = base_choice(base, lock_file, all_)
    try:
        workspace = _workspace(root, config, trust_pr_config)
        changes = detect_changes(root, workspace.config, workspace.states, choice, dict(os.environ))
        routing = workspace.routing
        # The routing entry re-runs on the same rule as `ci` (docs/routing.md#in-ci).
        routed = routing_change(root, workspace.config, routing, changes) if routing else None
    except EvalError as exc:
        fail(str(exc), exc.exit_code)
    for message in changes.base.get("messages", []):
        say(f"skill-evals: {message}", err=True)
    say(f"skill-evals: {describe_base(changes.base)}: {_counted(changes, routed)}", err=True)
    by_path = {s.path: s for s in workspace.states}
    if fmt == "lines":
        for path in changes.changed:
            say(path)
        if routed is not None and routed[0]:
            say(ROUTING_NAME)  # the name `ci --only` takes for the routing entry
        return

    def item(path: str, reason: str) -> dict[str, Any]:
        state = by_path[path]
        return {
            "name": state.name,
            "path": path,
            "fingerprint": state.fingerprint,
            "reason": reason,
        }

    doc = {
        "base": changes.base,
        "changed": [item(p, r) for p, r in changes.changed.items()],
        "unchanged": [item(p, r) for p, r in changes.unchanged.items()],
        "removed": changes.removed,
        "routing": None
        if routed is None or routing is None
        else {"changed": routed[0], "reason": routed[1], "fingerprint": routing.fingerprint},
    }
    click.echo(json.dumps(doc, indent=2, ensure_ascii=True))


def _workspace(root: Path, config: Path | None, trust_pr_config: bool) -> Any:
    """The repository loaded as `ci` loads it (on a pull request, the policy from the base
    commit); the head's ignored policy changes are said on stderr."""
    from .selection import load_workspace

    workspace = load_workspace(root, config, {}, dict(os.environ), trust_pr_config)
    for message in workspace.policy_messages:
        say(f"skill-evals: {message}", err=True)
    return workspace
