"""GitHub Actions integration: the sticky PR comment (REST API, stdlib urllib), step outputs,
the job summary, workflow commands (annotations, groups).

The comment is only ever edited when it carries the marker AND was written by our own identity.
Identity: ``GET /user`` with the token. The Actions ``GITHUB_TOKEN`` is an installation token that
cannot call ``/user`` (403 "Resource not accessible by integration"); its comments are authored by
the ``github-actions[bot]`` user, so that login is our identity when /user is refused and we run
under GitHub Actions. Every failure here is a warning: the comment never changes the exit code.
The token is sent only in the Authorization header and is scrubbed from every message.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .summary import MARKER

DEFAULT_API = "https://api.github.com"
ACTIONS_BOT = "github-actions[bot]"
TIMEOUT_S = 20
MAX_PAGES = 50
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class CommentResult:
    """What happened: ``action`` is created | updated | skipped | failed."""

    action: str
    message: str
    comment_id: int | None = None


class _ApiError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubClient:
    """A tiny REST client: JSON in, JSON out, token in the header only."""

    def __init__(self, api_url: str, token: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """Call the API; raises _ApiError with a token-free message."""
        url = path if path.startswith("http") else self.api_url + path
        data = json.dumps(body).encode("utf-8") if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self._token}")
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "skill-evals")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise _ApiError(f"{method} {path}: HTTP {exc.code}", exc.code) from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _ApiError(f"{method} {path}: {self.scrub(str(reason))}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise _ApiError(f"{method} {path}: the response is not JSON") from None

    def scrub(self, text: str) -> str:
        """Remove the token from a message."""
        return text.replace(self._token, "***") if self._token else text


def pr_number(env: Mapping[str, str]) -> int | None:
    """The pull request number from ``$GITHUB_EVENT_PATH`` (pull_request, pull_request_target,
    issue_comment on a PR), else None."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(event, dict):
        return None
    pull = event.get("pull_request")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    issue = event.get("issue")
    if isinstance(issue, dict) and "pull_request" in issue and isinstance(issue.get("number"), int):
        return int(issue["number"])
    return None


def own_login(client: GitHubClient, env: Mapping[str, str]) -> str:
    """Our identity: /user's login, else github-actions[bot] for the Actions token (which
    /user refuses with 403). Raises _ApiError when neither applies."""
    try:
        user = client.request("GET", "/user")
    except _ApiError as exc:
        if exc.status == 403 and env.get("GITHUB_ACTIONS") == "true":
            return ACTIONS_BOT
        raise _ApiError(f"cannot tell which user the token belongs to ({exc})") from None
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str):
        raise _ApiError("cannot tell which user the token belongs to (GET /user: no login)")
    return login


def post_comment(
    body: str,
    env: Mapping[str, str],
    number: int | None = None,
    head_sha: str | None = None,
) -> CommentResult:
    """Create or update the sticky comment on the pull request. Never raises.

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
    number = number if number is not None else pr_number(env)
    if number is None:
        return CommentResult("skipped", "not a pull request event: no PR comment")
    if not body.startswith(MARKER):
        body = MARKER + "\n" + body
    client = GitHubClient(env.get("GITHUB_API_URL") or DEFAULT_API, token)
    try:
        return _post(client, env, repo, number, body, head_sha)
    except _ApiError as exc:
        return CommentResult("failed", client.scrub(f"PR comment not posted: {exc}"))
    except Exception as exc:  # a comment must never break the gate
        return CommentResult("failed", client.scrub(f"PR comment not posted: {type(exc).__name__}"))


def _post(
    client: GitHubClient,
    env: Mapping[str, str],
    repo: str,
    number: int,
    body: str,
    head_sha: str | None,
) -> CommentResult:
    if head_sha is not None:
        pull = client.request("GET", f"/repos/{repo}/pulls/{number}")
        actual = ((pull or {}).get("head") or {}).get("sha") if isinstance(pull, dict) else None
        if actual != head_sha:
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
    for page in range(1, MAX_PAGES + 1):
        comments = client.request(
            "GET", f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}"
        )
        if not isinstance(comments, list) or not comments:
            return None
        for comment in comments:
            if not isinstance(comment, dict):
                continue
            author = (comment.get("user") or {}).get("login")
            text = comment.get("body") or ""
            if author == login and isinstance(text, str) and text.startswith(MARKER):
                comment_id = comment.get("id")
                if isinstance(comment_id, int):
                    return comment_id
        if len(comments) < 100:
            return None
    return None


# ------------------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    """Escape a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (file=, line=, title=)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str,
    message: str,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    """``::error file=F,line=N,title=T::message`` (one line)."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if line:
        props.append(f"line={int(line)}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{escape_data(message)}"


def write_outputs(env: Mapping[str, str], values: Mapping[str, str]) -> None:
    """Append ``key=value`` lines to ``$GITHUB_OUTPUT`` (values on one line; multi-line values
    use the heredoc form with a random delimiter)."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    import secrets

    lines = []
    for key, value in values.items():
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
            lines.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{key}={value}\n")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))


def append_step_summary(env: Mapping[str, str], text: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when set."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def run_url(env: Mapping[str, str]) -> str | None:
    """The URL of this workflow run, when the environment names one."""
    server = env.get("GITHUB_SERVER_URL", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    if not (server and _REPO.match(repo) and run_id.isdigit()):
        return None
    parsed = urllib.parse.urlparse(server)
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.netloc
        or "(" in server
        or ")" in server
    ):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
