"""What the CI gate works on: its options, the repository loaded (the config, every skill with
its fingerprint, the routing entry) and the skills chosen to evaluate (``--only``, else the
changed ones).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInput
from ..escaping.terminal import terminal_safe
from .changes import BaseChoice, ChangeSet, detect_changes
from .discovery import WorkTree, discover
from .fingerprint import SkillState, worktree_states
from .routing import ROUTING_NAME, RoutingState, routing_state
from .settings import CiConfig
from .trusted_config import load_trusted


@dataclass(frozen=True)
class CiOptions:
    """Everything `skill-evals ci` takes."""

    root: Path
    out: Path
    config: Path | None = None
    choice: BaseChoice = field(default_factory=BaseChoice)
    only: tuple[str, ...] = ()
    comment: bool = False
    fail_on_missing_secrets: bool = False
    cli: Mapping[str, Any] = field(default_factory=dict)  # runner, trials, jobs, gates
    quiet: bool = False
    trust_pr_config: bool = False  # --trust-pr-config: a pull request's config decides policy


@dataclass
class Workspace:
    """The repository as the gate sees it: config, skills with fingerprints, messages."""

    root: Path
    config: CiConfig
    states: list[SkillState]
    messages: list[str]
    routing: RoutingState | None = None  # the `routing:` entry (docs/routing.md)
    policy_from: str = "checkout"  # base | checkout | head-trusted (docs/ci.md)
    policy_messages: tuple[str, ...] = ()  # the head's ignored policy changes (also in messages)


def load_workspace(
    root: Path,
    config_path: Path | None,
    cli: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    trust_pr_config: bool = False,
) -> Workspace:
    """Load the config (explicit, else the root's .skill-evals.yml, else defaults; on a pull
    request its policy from the base commit), discover the skills and fingerprint them."""
    trusted = load_trusted(root, config_path, cli, env or {}, trust_pr_config)
    config = trusted.config
    tree = WorkTree(root)
    locations, messages = discover(tree, config, root.resolve().name)
    routing = routing_state(tree, config, root.resolve().name)
    states = worktree_states(root, locations)
    messages = [*trusted.messages, *messages]
    return Workspace(root, config, states, messages, routing, trusted.policy_from, trusted.messages)


def load_options(
    options: CiOptions, env: Mapping[str, str], err: TextIO | None = None
) -> Workspace:
    """:func:`load_workspace` for a `ci` or `ci plan` invocation; with ``err``, the ignored
    policy changes are said there too."""
    workspace = load_workspace(
        options.root, options.config, options.cli, env, options.trust_pr_config
    )
    if err is not None:
        for message in workspace.policy_messages:
            print(f"skill-evals: {terminal_safe(message)}", file=err, flush=True)
    return workspace


def select(
    workspace: Workspace, options: CiOptions, env: Mapping[str, str]
) -> tuple[ChangeSet, list[SkillState]]:
    """The change set and the skills to evaluate. ``--only`` names skills (by name or path) to
    evaluate whatever their change status: the plan job already decided they changed."""
    if options.only:
        wanted = expand_only(options.only, workspace)
        chosen = [s for s in workspace.states if s.name in wanted or s.path in wanted]
        unknown = wanted - {s.name for s in chosen} - {s.path for s in chosen}
        if workspace.routing is not None:
            unknown.discard(ROUTING_NAME)  # the routing entry is chosen by this name
        if unknown:
            known = [s.name for s in workspace.states]
            shown = ", ".join(known[:20]) + (
                f" and {len(known) - 20} more" if len(known) > 20 else ""
            )
            raise InvalidInput(
                "--only " + ", ".join(sorted(unknown)) + f": no such skill (known: {shown})"
            )
        changes = ChangeSet(base={"mode": "only", "only": sorted(wanted)})
        for state in chosen:
            changes.changed[state.path] = "chosen with --only"
        return changes, chosen
    changes = detect_changes(
        workspace.root, workspace.config, workspace.states, options.choice, env
    )
    return changes, [s for s in workspace.states if changes.is_changed(s.path)]


def expand_only(values: Iterable[str], workspace: Workspace) -> set[str]:
    """The skills ``--only`` names: a value that is exactly a skill's name or path (or the
    routing entry's name) is that skill, whatever it holds; any other value is a list
    separated by commas, spaces or line breaks — the action's ``only`` input passes its text
    as one value, so a matrix job's name with a space or comma still names one skill."""
    known = {s.name for s in workspace.states} | {s.path for s in workspace.states}
    if workspace.routing is not None:
        known.add(ROUTING_NAME)
    wanted: set[str] = set()
    for value in values:
        pieces = [value] if value in known else [p for p in _ONLY_SEPARATORS.split(value) if p]
        wanted.update(pieces or [value])
    return wanted


_ONLY_SEPARATORS = re.compile(r"[,\s]+")
