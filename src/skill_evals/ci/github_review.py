"""The suggested description as a review comment on the pull request's diff (``improve:
suggest`` with ``--comment``): posted only when the pull request changes the lines of the
description entry, through the bounded client of ``http``. Every failure is a warning."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .github import _REPO, CommentResult, call_api, head_of, pages, pr_number_of, read_event
from .http import GitHubClient, Limits

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def changed_lines(patch: str) -> set[int]:
    """The new-side line numbers a unified-diff ``patch`` adds or changes."""
    changed: set[int] = set()
    line = 0
    for row in patch.splitlines():
        hunk = _HUNK.match(row)
        if hunk:
            line = int(hunk.group(1))
        elif row.startswith("+"):
            changed.add(line)
            line += 1
        elif not row.startswith("-") and not row.startswith("\\"):
            line += 1
    return changed


def _patch_of(client: GitHubClient, repo: str, number: int, path: str) -> str | None:
    for item in pages(client, f"/repos/{repo}/pulls/{number}/files"):
        if item.get("filename") == path:
            patch = item.get("patch")
            return patch if isinstance(patch, str) else None
    return None


def _post(client: GitHubClient, repo: str, number: int, review: Mapping[str, Any]) -> CommentResult:
    sha = head_of(client, repo, number)
    if sha is None:
        return CommentResult("skipped", f"PR #{number}: no head commit; no review comment")
    patch = _patch_of(client, repo, number, str(review["path"]))
    first = int(review.get("start_line") or review["line"])
    span = set(range(first, int(review["line"]) + 1))
    if patch is None or not changed_lines(patch) & span:
        return CommentResult(
            "skipped", f"PR #{number} does not change the description: no review comment"
        )
    body: dict[str, Any] = {
        "body": review["body"], "commit_id": sha, "path": review["path"],
        "line": review["line"], "side": "RIGHT",
    }  # fmt: skip
    if "start_line" in review:
        body |= {"start_line": review["start_line"], "start_side": "RIGHT"}
    created = client.request("POST", f"/repos/{repo}/pulls/{number}/comments", body)
    new_id = created.get("id") if isinstance(created, dict) else None
    return CommentResult("created", f"suggested the description on PR #{number}", new_id)


def post_review(
    review: Mapping[str, Any], env: Mapping[str, str], limits: Limits | None = None
) -> CommentResult:
    """Post ``review`` (a ``suggestions/<skill>.review.json``) on the event's pull request when
    its diff touches the lines; never raises, never hangs."""
    token, repo = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
    if not token or not _REPO.match(repo):
        return CommentResult("skipped", "no GITHUB_TOKEN or GITHUB_REPOSITORY: no review comment")
    event, problem = read_event(env)
    number = pr_number_of(event) if problem is None else None
    if number is None:
        return CommentResult("skipped", "not a pull request event: no review comment")
    return call_api(env, token, limits, "review comment", lambda c: _post(c, repo, number, review))
