"""The pull request an event names (docs/ci.md#what-a-pull-request-may-change): its base
commit, whose configuration holds the policy, and whether it comes from a fork (which runs
without the job's secrets)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .git import HEX_SHA
from .github import read_event

PR_EVENTS = ("pull_request", "pull_request_target")


def pull_request(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``pull_request`` object of a pull_request / pull_request_target event, else None."""
    if env.get("GITHUB_EVENT_NAME", "") not in PR_EVENTS:
        return None
    event, _ = read_event(env)
    pull = event.get("pull_request") if event is not None else None
    return pull if isinstance(pull, dict) else None


def pr_base_sha(env: Mapping[str, str]) -> str | None:
    """The base commit of the pull request that triggered the workflow, else None."""
    pull = pull_request(env)
    base = pull.get("base") if pull is not None else None
    sha = base.get("sha") if isinstance(base, dict) else None
    return sha if isinstance(sha, str) and HEX_SHA.match(sha) else None


def from_fork(env: Mapping[str, str]) -> bool:
    """True when the event is a pull request whose head repository is not the base repository
    (a fork: the job gets no secrets). A payload that does not say is not a fork."""
    pull = pull_request(env)
    if pull is None:
        return False
    names = []
    for side in ("head", "base"):
        part = pull.get(side)
        repo = part.get("repo") if isinstance(part, dict) else None
        names.append(repo.get("full_name") if isinstance(repo, dict) else None)
    head, base = names
    if head is None and base is not None:
        return True  # a deleted fork: its head repository is null
    return isinstance(head, str) and isinstance(base, str) and head.lower() != base.lower()
