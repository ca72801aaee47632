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
from .pr_event import PR_EVENTS, pr_base_sha
from .settings import CiConfig

# Set by the action's entrypoint when it passes --sandbox: "input" (its sandbox input) or
# "default" (required, its default on Linux), so the report names the input, not a flag.
ACTION_ORIGIN_VAR = "SKILL_EVALS_SANDBOX_FROM_ACTION"
_UNREAD = "the policy is the defaults and the options given"


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
    on_pr = sha is not None or env.get("GITHUB_EVENT_NAME", "") in PR_EVENTS
    rel = _relative(path, root) if path is not None else None
    shown = rel or (path.name if path is not None else CONFIG_NAMES[0])
    if not on_pr or (path is not None and rel is None):
        # No pull request, or a config file the command line named outside the repository.
        return _trusted(head_raw, path, cli, env, "checkout", shown)
    if trust_pr_config:
        where = f"the pull request's {shown} (--trust-pr-config)"
        return _trusted(head_raw, path, cli, env, "head-trusted", where)
    # A base that cannot be read leaves the policy at the defaults and the options given:
    # the pull request's own file stays data (it must never decide how it is contained).
    # The base's file is looked up by the base's own rules: a pull request that renames
    # .skill-evals.yml to .skill-evals.yaml must not leave the base's policy unread.
    base_raw: dict[str, Any] = {}
    if sha is None:  # a pull request event whose file names no base commit
        messages = [f"the pull request event names no base commit: {_UNREAD}"]
    else:
        base_raw, messages = _base_raw(root, sha, rel if config_path is not None else None)
    merged, changed = trusted_raw(head_raw, base_raw)
    _validate(merged, f"{shown} (the base commit's policy with the pull request's data)")
    messages += [changed_message(key, shown) for key in changed]
    where = f"{shown} at the base commit"
    return _trusted(merged, path, cli, env, "base", where, messages)


def _trusted(
    raw: Mapping[str, Any],
    path: Path | None,
    cli: Mapping[str, Any],
    env: Mapping[str, str],
    policy_from: str,
    sandbox_where: str,
    messages: list[str] | None = None,
) -> TrustedConfig:
    """The TrustedConfig of ``raw`` with the options ``cli``; the report names where the
    sandbox setting came from (the config, or the action's input that passed --sandbox)."""
    origins = {"sandbox-where": sandbox_where}
    if cli.get("sandbox-option") is not None and env.get(ACTION_ORIGIN_VAR) == "input":
        origins["sandbox-option-where"] = "the action's sandbox input"
    elif cli.get("sandbox-option") is not None and env.get(ACTION_ORIGIN_VAR) == "default":
        origins["sandbox-option-where"] = "the action's default on Linux (input sandbox unset)"
    config = build_config(raw, path).with_cli({**origins, **cli})
    return TrustedConfig(config, policy_from, tuple(messages or ()))


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _base_raw(root: Path, sha: str, rel: str | None) -> tuple[dict[str, Any], list[str]]:
    """The base commit's config mapping ({} when it has none, when it is invalid or when the
    commit cannot be read: the defaults — never the head's) and what to say about it."""
    unread = _UNREAD
    if not in_git_repo(root):
        return {}, [f"{root.name} is not a git repository: {unread}"]
    try:
        resolved, _ = resolve_commit(root, sha)
        if resolved is None:
            return {}, [f"the pull request's base {sha[:12]} is not available: {unread}"]
        tree = GitTree(root, resolved)
    except (GitError, InvalidInput) as exc:
        return {}, [f"cannot read the pull request's base {sha[:12]} ({exc}): {unread}"]
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
