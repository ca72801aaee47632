"""The configuration a gate runs with, from the trusted side (docs/ci.md#what-a-pull-request-
may-change): outside a pull request the checked-out file; on a pull request the base commit's
policy keys (read from git objects, no checkout) with the head's data keys; with
``--trust-pr-config`` the head's file as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .config import CONFIG_NAMES, build_config, find_config, read_config_file, read_raw
from .config import validate_config as _validate
from .git import GitError, in_git_repo, resolve_commit
from .git_tree import GitTree
from .policy import changed_message, trusted_raw
from .pr_event import pr_base_sha
from .settings import CiConfig


@dataclass(frozen=True)
class TrustedConfig:
    """The configuration in effect, where its policy came from (``base``, ``checkout`` or
    ``head-trusted``) and the lines that say what was ignored."""

    config: CiConfig
    policy_from: str
    messages: tuple[str, ...] = ()


def load_trusted(
    root: Path,
    config_path: Path | None,
    cli: Mapping[str, Any],
    env: Mapping[str, str],
    trust_pr_config: bool = False,
) -> TrustedConfig:
    """The configuration to run with: ``config_path`` (else the root's .skill-evals.yml),
    its policy keys replaced by the base commit's on a pull request, then the options ``cli``."""
    path = config_path if config_path is not None else find_config(root)
    head_raw = read_config_file(path) if path is not None else {}
    sha = pr_base_sha(env)
    rel = _relative(path, root) if path is not None else None
    if sha is None or (path is not None and rel is None):
        # No pull request, or a config file the command line named outside the repository.
        return TrustedConfig(build_config(head_raw, path).with_cli(cli), "checkout")
    if trust_pr_config:
        return TrustedConfig(build_config(head_raw, path).with_cli(cli), "head-trusted")
    base_raw, messages = _base_raw(root, sha, rel)
    if base_raw is None:  # no readable base commit: the event names nothing to trust instead
        config = build_config(head_raw, path).with_cli(cli)
        return TrustedConfig(config, "checkout", tuple(messages))
    merged, changed = trusted_raw(head_raw, base_raw)
    shown = rel or CONFIG_NAMES[0]
    _validate(merged, f"{shown} (the base commit's policy with the pull request's data)")
    messages += [changed_message(key, shown) for key in changed]
    return TrustedConfig(build_config(merged, path).with_cli(cli), "base", tuple(messages))


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _base_raw(root: Path, sha: str, rel: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """The base commit's config mapping ({} when it has none; None when the commit cannot be
    read) and what to say about it. An invalid config at the base gives the defaults — never
    the head's."""
    unread = "the checked-out config decides the policy"
    if not in_git_repo(root):
        return None, [f"{root.name} is not a git repository: {unread}"]
    try:
        resolved, _ = resolve_commit(root, sha)
        if resolved is None:
            return None, [f"the pull request's base {sha[:12]} is not available: {unread}"]
        tree = GitTree(root, resolved)
    except (GitError, InvalidInput) as exc:
        return None, [f"cannot read the pull request's base {sha[:12]} ({exc}): {unread}"]
    for candidate in [rel] if rel else list(CONFIG_NAMES):
        data = tree.read(candidate)
        if data is None:
            continue
        try:
            return read_raw(data, f"{sha[:12]}:{candidate}"), []
        except InvalidInput as exc:
            defaults = "the policy is the defaults and the options given"
            return {}, [f"the base commit's config is invalid ({exc}): {defaults}"]
    return {}, []
