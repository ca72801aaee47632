"""Which skills changed (docs/ci.md): each head skill's fingerprint compared with the base's
(a git commit, the lock file), or every skill. Moved and renamed skills are matched by
fingerprint; the order in which the base is chosen is :func:`detect_changes`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base_commit import BASE_EVENTS, base_config, event_base, git_states
from .base_words import base_words
from .fingerprint import SkillState
from .git import GitError, in_git_repo, resolve_commit
from .git_tree import GitTree
from .lock_file import lock_fingerprints, read_lock
from .settings import CiConfig


@dataclass
class ChangeSet:
    """The outcome of change detection: per head skill path, changed or not and why."""

    base: dict[str, Any]
    changed: dict[str, str] = field(default_factory=dict)  # path → reason
    unchanged: dict[str, str] = field(default_factory=dict)  # path → reason
    removed: list[dict[str, str]] = field(default_factory=list)  # base skills gone

    def is_changed(self, path: str) -> bool:
        """True when the skill at ``path`` must be evaluated."""
        return path in self.changed


def compare(
    states: Iterable[SkillState],
    base: Mapping[str, tuple[str, str | None]],
    info: dict[str, Any],
    what: str,
) -> ChangeSet:
    """Compare head states with base fingerprints (base path → (name, fingerprint)).

    A head skill is unchanged when some base skill has its fingerprint (at the same path, or
    moved/renamed); every other head skill is changed. Base skills left unmatched are removed."""
    by_fp: dict[str, list[str]] = {}
    for path, (_, fp) in base.items():
        if fp is not None:
            by_fp.setdefault(fp, []).append(path)
    result = ChangeSet(base=info)
    matched: set[str] = set()
    for state in states:
        fp = state.fingerprint
        if fp is None:
            result.changed[state.path] = f"cannot be fingerprinted: {state.error}"
            continue
        paths = by_fp.get(fp, [])
        if state.path in paths:
            matched.add(state.path)
            result.unchanged[state.path] = f"fingerprint unchanged since {what}"
        elif paths:
            matched.add(paths[0])
            result.unchanged[state.path] = f"moved from {paths[0]}, fingerprint unchanged"
        elif state.path in base:
            matched.add(state.path)
            result.changed[state.path] = f"changed since {what}"
        else:
            result.changed[state.path] = f"new since {what}"
    for path, (name, _) in sorted(base.items()):
        if path not in matched and path not in {s.path for s in states}:
            result.removed.append({"name": name, "path": path})
    return result


def all_changed(states: Iterable[SkillState], info: dict[str, Any]) -> ChangeSet:
    """Every skill is to be evaluated (``--all``, or no base available)."""
    result = ChangeSet(base=info)
    for state in states:
        result.changed[state.path] = info.get("reason", "every skill is evaluated")
    return result


@dataclass(frozen=True)
class BaseChoice:
    """How to find changes: the CLI flags plus the environment."""

    base: str | None = None
    lock: Path | None = None
    all: bool = False


def detect_changes(
    root: Path,
    config: CiConfig,
    states: list[SkillState],
    choice: BaseChoice,
    env: Mapping[str, str],
) -> ChangeSet:
    """Decide which skills changed. Order: ``--all``; ``--base REF``; ``--lock FILE``; the pull
    request's base commit from the event; the default lock file when present; else all."""
    if choice.all:
        return all_changed(states, {"mode": "all", "reason": "--all: every skill is evaluated"})
    if choice.base is not None:
        return _against_git(root, config, states, choice.base, "--base")
    if choice.lock is not None:
        return _against_lock(states, choice.lock, root)
    event_sha, problem = event_base(env)
    if event_sha is not None:
        return _against_git(root, config, states, event_sha, "pull request base")
    messages = [f"{problem}; the pull request's base is unknown"] if problem else []
    if env.get("GITHUB_EVENT_NAME", "") in BASE_EVENTS:
        # The lock file is the pull request's own: it never decides which skills are skipped.
        reason = "the pull request's base is unknown: every skill is evaluated"
        return all_changed(states, {"mode": "all", "reason": reason, "messages": messages})
    default_lock = root / config.lock
    if default_lock.is_file():
        changes = _against_lock(states, default_lock, root)
        if messages:
            changes.base["messages"] = messages
        return changes
    info: dict[str, Any] = {
        "mode": "all",
        "reason": "no --base, no pull request event and no lock file: every skill is evaluated",
    }
    if messages:
        info["messages"] = messages
    return all_changed(states, info)


def _against_lock(states: list[SkillState], lock: Path, root: Path) -> ChangeSet:
    base = lock_fingerprints(read_lock(lock))
    # Named relative to the repository when it lies inside (outputs never show the runner's
    # absolute checkout path).
    try:
        shown = lock.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = str(lock)
    info = {"mode": "lock", "lockFile": shown}
    return compare(states, base, info, f"the lock file {lock.name}")


def _against_git(
    root: Path, config: CiConfig, states: list[SkillState], ref: str, source: str
) -> ChangeSet:
    info: dict[str, Any] = {"mode": "git", "ref": ref, "source": source}
    if not in_git_repo(root):
        info.update(mode="all", reason=f"{root} is not a git repository: every skill is evaluated")
        return all_changed(states, info)
    sha, messages = resolve_commit(root, ref)
    if messages:
        info["messages"] = messages
    if sha is None:
        info.update(mode="all", reason=f"base {ref} is not available: every skill is evaluated")
        return all_changed(states, info)
    info["sha"] = sha
    try:
        tree = GitTree(root, sha)
        base_states = git_states(tree, base_config(tree, config, root), _root_name(root))
    except GitError as exc:
        info.update(mode="all", reason=f"cannot read base {ref} ({exc}): every skill is evaluated")
        return all_changed(states, info)
    base = {s.path: (s.name, s.fingerprint) for s in base_states}
    return compare(states, base, info, f"base {sha[:12]}")


def describe_base(base: Mapping[str, Any]) -> str:
    """How changes were found, in words (plain text; callers escape it for their output)."""
    if base.get("mode") == "git":
        sha = str(base.get("sha", ""))[:12]
        return f"changes found against {base.get('source', 'base')} {base.get('ref')} ({sha})"
    return base_words(base) or str(base.get("reason") or "every skill is evaluated")


def _root_name(root: Path) -> str:
    return root.resolve().name
