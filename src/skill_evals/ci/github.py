"""GitHub: the sticky PR comment (REST API through the bounded client of ``http``) and the
event payload of the workflow run (``$GITHUB_EVENT_PATH``).

The comment is only ever edited when it carries the marker AND was written by our own identity.
Identity: ``GET /user`` with the token. The Actions ``GITHUB_TOKEN`` is an installation token that
cannot call ``/user`` (403 "Resource not accessible by integration"); its comments are authored by
the ``github-actions[bot]`` user, so that login is our identity when /user is refused and we run
under GitHub Actions. Every failure here is a warning: the comment never changes the exit code.
The token is sent only in the Authorization header and is scrubbed from every message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .http import ApiError, GitHubClient, Limits
from .summary import MARKER
from .untrusted import UntrustedFileError, load_json_file

DEFAULT_API = "https://api.github.com"
ACTIONS_BOT = "github-actions[bot]"
MAX_PAGES = 50
# GitHub caps webhook payloads at 25 MB; an event file is never larger.
MAX_EVENT_BYTES = 25_000_000
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class CommentResult:
    """What happened: ``action`` is created | updated | skipped | failed."""

    action: str
    message: str
    comment_id: int | None = None


def read_event(env: Mapping[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    """The workflow run's event payload from ``$GITHUB_EVENT_PATH``: (event or None, why it
    could not be used or None). Read bounded and strictly: a FIFO, a device, a huge or deeply
    nested file is a problem to report, never a hang or a crash."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None, None
    try:
        event = load_json_file(Path(path), "the GITHUB_EVENT_PATH event file", MAX_EVENT_BYTES)
    except UntrustedFileError as exc:
        return None, str(exc)
    if not isinstance(event, dict):
        return None, f"{path}: the GITHUB_EVENT_PATH event file is not a JSON object"
    return event, None


def pr_number_of(event: Mapping[str, Any] | None) -> int | None:
    """The pull request number of an event (pull_request, pull_request_target, issue_comment
    on a PR), else None."""
    if event is None:
        return None
    pull = event.get("pull_request")
    if isinstance(pull, dict) and _positive_int(pull.get("number")):
        return int(pull["number"])
    issue = event.get("issue")
    if isinstance(issue, dict) and "pull_request" in issue and _positive_int(issue.get("number")):
        return int(issue["number"])
    return None


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def own_login(client: GitHubClient, env: Mapping[str, str]) -> str:
    """Our identity: /user's login, else github-actions[bot] for the Actions token (which
    /user refuses with 403). Raises ApiError when neither applies."""
    try:
        user = client.request("GET", "/user")
    except ApiError as exc:
        if exc.status == 403 and env.get("GITHUB_ACTIONS") == "true":
            return ACTIONS_BOT
        raise ApiError(f"cannot tell which user the token belongs to ({exc})") from None
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str):
        raise ApiError("cannot tell which user the token belongs to (GET /user: no login)")
    return login


def post_comment(
    body: str,
    env: Mapping[str, str],
    number: int | None = None,
    head_sha: str | None = None,
    limits: Limits | None = None,
) -> CommentResult:
    """Create or update the sticky comment on the pull request. Never raises, never hangs
    (``limits`` bounds every request and the whole operation).

    ``number`` defaults to the PR of the event. With ``head_sha`` the PR's head commit must equal
    it (the fork-safe workflow_run poster uses this to refuse a PR number it cannot trust)."""
    token = env.get("GITHUB_TOKEN", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    if not token:
        return CommentResult("skipped", "no GITHUB_TOKEN: the PR comment was not posted")
    if not _REPO.match(repo):
        return CommentResult(
            "skipped", "GITHUB_REPOSITORY is not set: the PR comment was not posted"
        )
    if number is None:
        event, problem = read_event(env)
        if problem is not None:
            return CommentResult("skipped", f"PR comment not posted: {problem}")
        number = pr_number_of(event)
    if number is None:
        return CommentResult("skipped", "not a pull request event: no PR comment")
    if not body.startswith(MARKER):
        body = MARKER + "\n" + body
    return call_api(
        env, token, limits, "PR comment", lambda c: _post(c, env, repo, number, body, head_sha)
    )


def call_api(
    env: Mapping[str, str],
    token: str,
    limits: Limits | None,
    what: str,
    post: Callable[[GitHubClient], CommentResult],
) -> CommentResult:
    """``post`` with a client of the event's API; never raises: a client that cannot be made
    is ``skipped``, an API error or any other is ``failed`` (``what`` not posted, the token
    scrubbed from the message)."""
    try:
        client = GitHubClient(env.get("GITHUB_API_URL") or DEFAULT_API, token, limits)
    except ApiError as exc:
        return CommentResult("skipped", f"{what} not posted: {exc}")
    try:
        return post(client)
    except ApiError as exc:
        return CommentResult("failed", client.scrub(f"{what} not posted: {exc}"))
    except Exception as exc:  # a comment must never break the gate
        return CommentResult("failed", client.scrub(f"{what} not posted: {type(exc).__name__}"))


def head_of(client: GitHubClient, repo: str, number: int) -> str | None:
    """The pull request's head commit, None when the answer names none."""
    pull = client.request("GET", f"/repos/{repo}/pulls/{number}")
    head = pull.get("head") if isinstance(pull, dict) else None
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha if isinstance(sha, str) else None


def pages(client: GitHubClient, path: str) -> Iterator[dict[str, Any]]:
    """The objects of a paginated list at ``path`` (no query): 100 a page, at most MAX_PAGES
    pages, until a short page or an answer that is not a list."""
    for page in range(1, MAX_PAGES + 1):
        items = client.request("GET", f"{path}?per_page=100&page={page}")
        if not isinstance(items, list):
            return
        yield from (item for item in items if isinstance(item, dict))
        if len(items) < 100:
            return


def _post(
    client: GitHubClient,
    env: Mapping[str, str],
    repo: str,
    number: int,
    body: str,
    head_sha: str | None,
) -> CommentResult:
    if head_sha is not None:
        actual = head_of(client, repo, number)
        if actual is None or actual.lower() != head_sha.lower():
            return CommentResult(
                "skipped",
                f"PR #{number} head is not {head_sha[:12]}: refusing to comment on it",
            )
    login = own_login(client, env)
    existing = _find_own(client, repo, number, login)
    if existing is not None:
        client.request("PATCH", f"/repos/{repo}/issues/comments/{existing}", {"body": body})
        return CommentResult("updated", f"updated PR #{number} comment {existing}", existing)
    created = client.request("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
    new_id = created.get("id") if isinstance(created, dict) else None
    return CommentResult("created", f"created a comment on PR #{number}", new_id)


def _find_own(client: GitHubClient, repo: str, number: int, login: str) -> int | None:
    """The first comment on the PR with the marker written by ``login``."""
    for comment in pages(client, f"/repos/{repo}/issues/{number}/comments"):
        user = comment.get("user")
        author = user.get("login") if isinstance(user, dict) else None
        text = comment.get("body") or ""
        if author == login and isinstance(text, str) and text.startswith(MARKER):
            comment_id = comment.get("id")
            if isinstance(comment_id, int) and _positive_int(comment_id):
                return comment_id
    return None
